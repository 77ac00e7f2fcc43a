//! KD1102: before an upgrade, the CRDs and their stored objects must be able to move to the
//! target release. A CRD whose `status.storedVersions` lists a version the target does not serve
//! cannot be replaced ("must appear in spec.versions", kubernetes-sigs/karpenter#2157), and an
//! upgrade from before 1.0.6 to 1.1 or later skips the controllers that migrate the objects to
//! `v1` (docs/upgrade.md §3.2 rules a, b, d; the release data's `crds` and `hops`). The objects
//! must suit the target too: 1.1 manages only NodePools and NodeClaims whose `nodeClassRef`
//! has a group and kind, 1.1–1.5 exit at start on the kubelet compatibility annotation, and
//! 1.0 has no Ubuntu family (rules e, f, g, l).

use crate::check::prelude::*;
use crate::checks::common::crds::REQUIRED_CRDS;
use crate::checks::common::evidence::capped;
use crate::checks::common::upgrade::targets;
use crate::iam::reference::Version;
use crate::model::AUTO_MODE_GROUP;
use crate::upgrade::releases;

declare_check! {
    pub static UPGRADE_CRDS_BLOCKED = {
        code: "KD1102",
        slug: "upgrade-crds-blocked",
        title: "the CRDs and their stored objects can move to the target release",
        category: Upgrade,
        severity: Error,
        needs: [ControllerDeployments, KubeVersion, Crd, NodePools, NodeClaims, Ec2NodeClasses],
        self_managed: true,
        run: upgrade_crds_blocked,
    }
}

async fn upgrade_crds_blocked(cx: &CheckCx) -> CheckResult {
    let t = targets(cx).await?;
    let Some(from) = t.from else {
        // Without an installed release there is nothing to move from.
        return Ok(Vec::new());
    };
    if t.to <= from {
        return Ok(Vec::new());
    }
    // The stored versions the target does not serve, per CRD.
    let mut stale: Vec<(String, Vec<String>)> = Vec::new();
    for name in REQUIRED_CRDS {
        let crd = cx.crd(name).await?;
        let Some(crd) = crd.as_ref() else { continue };
        let Some(served) = releases::served(name, t.to) else {
            continue;
        };
        let stored: Vec<String> = crd
            .status
            .as_ref()
            .and_then(|s| s.stored_versions.clone())
            .unwrap_or_default();
        let gone: Vec<String> = stored.into_iter().filter(|v| !served.contains(v)).collect();
        if !gone.is_empty() {
            stale.push((name.to_string(), gone));
        }
    }
    let mut findings = Vec::new();
    // The nearest hop first: the plan takes them in that order.
    let mut hops = releases::hops(from, t.to);
    hops.sort_by_key(|h| releases::via_target(h));
    let migration = hops
        .iter()
        .find(|h| h.required && h.reason == "stored-versions");
    for hop in &hops {
        let via = releases::via_target(hop)
            .map(|v| v.to_string())
            .unwrap_or_default();
        let mut f = Finding::new(
            format!("Karpenter {from}"),
            format!(
                "cannot go straight to {}: {} first ({})",
                t.to,
                if hop.required {
                    format!("upgrade to {via} and let it finish")
                } else {
                    format!("the guide upgrades to {via}")
                },
                hop.why
            ),
        )
        .evidence("from", from.to_string())
        .evidence("to", t.to.to_string())
        .evidence("via", via.clone());
        if hop.reason == "stored-versions" && !stale.is_empty() {
            f = f.evidence(
                "storedVersions",
                stale
                    .iter()
                    .map(|(c, v)| format!("{c}: {}", v.join(", ")))
                    .collect::<Vec<_>>(),
            );
        }
        if !hop.required {
            f = f.severity(Severity::Warning);
        }
        findings.push(
            f.hint(format!(
                "run karpdoctor upgrade --to {via} first, and --to {} once it is done",
                t.to
            ))
            .fix(format!("karpdoctor upgrade --to {via}"))
            .in_step(PlanStep::Path),
        );
    }
    // Stale stored versions on a release that has the migration controllers: only the wait
    // (or a manual migration) is missing. Behind a required hop they are that hop's evidence.
    if migration.is_none() && !stale.is_empty() {
        let listed: Vec<String> = stale
            .iter()
            .map(|(c, v)| format!("{c}: {}", v.join(", ")))
            .collect();
        let names: Vec<&str> = stale.iter().map(|(c, _)| c.as_str()).collect();
        findings.push(
            Finding::new(
                format!("Karpenter {from}"),
                format!(
                    "its CRDs still list versions Karpenter {} does not serve in status.storedVersions ({}): installing {}'s CRDs is refused (\"status.storedVersions[0]: Invalid value: … must appear in spec.versions\")",
                    t.to,
                    listed.join("; "),
                    t.to
                ),
            )
            .evidence("storedVersions", listed.clone())
            .evidence("to", t.to.to_string())
            .hint(format!(
                "let Karpenter {from} finish migrating the objects (1.0.6 and later rewrite them and drop v1beta1), or rewrite them yourself, until every CRD's storedVersions is [v1]; then upgrade"
            ))
            .fix(format!(
                "kubectl get crd {} -o custom-columns=NAME:.metadata.name,STORED:.status.storedVersions",
                names.join(" ")
            ))
            .in_step(PlanStep::StoredVersions),
        );
    }
    findings.extend(objects(cx, from, t.to).await?);
    Ok(findings)
}

/// The annotation 1.0.x's conversion writes on a NodePool that carried kubelet settings in
/// v1beta1; 1.1.0–1.5.x refuse to start while any NodePool has it, 1.6.0 and later ignore it.
const KUBELET_ANNOTATION: &str = "compatibility.karpenter.sh/v1beta1-kubelet-conversion";

/// The annotation the v1 conversion (0.37.1 to 1.0.x) writes on an EC2NodeClass that was on
/// the Ubuntu family; `incompatible` among its values when the class had no AMI terms.
const UBUNTU_ANNOTATION: &str = "compatibility.karpenter.k8s.aws/v1beta1-ubuntu";

/// Objects the target refuses, or that stop its controller (docs/upgrade.md §3.2 rules e, f,
/// g and l): `nodeClassRef.group`/`kind` left empty (required from 1.1), the kubelet
/// compatibility annotation, and Ubuntu classes without AMI selector terms (gone at 1.0).
async fn objects(cx: &CheckCx, from: Version, to: Version) -> Result<Vec<Finding>, FactError> {
    let v1_0 = Version(1, 0, 0);
    let v1_1 = Version(1, 1, 0);
    let v1_6 = Version(1, 6, 0);
    let mut findings = Vec::new();
    // Only v1 objects carry group and kind (a v1beta1 install goes through 1.0.x first, whose
    // conversion writes them), and only 1.0.x's conversion writes the annotation.
    let into_1_1 = from < v1_1 && to >= v1_1 && from >= v1_0;
    if into_1_1 || (from < v1_6 && to >= v1_1 && from >= v1_0) {
        let pools = cx.nodepools().await?;
        let mut without_group: Vec<String> = Vec::new();
        for p in pools.iter().filter(|p| !p.is_v1beta1() && !p.is_auto_mode()) {
            let r = p.spec.template.spec.node_class_ref.as_ref();
            if into_1_1 && r.is_none_or(|r| empty(&r.group) || empty(&r.kind)) {
                without_group.push(p.object());
            }
            let Some(kubelet) = p
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(KUBELET_ANNOTATION))
            else {
                continue;
            };
            if to < v1_6 {
                findings.push(
                    Finding::new(
                        p.object(),
                        format!(
                            "carries {KUBELET_ANNOTATION}: Karpenter {to} exits at start while any NodePool has it (\"The kubelet compatibility annotation … is not supported on Karpenter v1.1+\")"
                        ),
                    )
                    .evidence("annotation", kubelet.clone())
                    .hint("move the kubelet settings to the EC2NodeClass's spec.kubelet (the v1 migration guide's kubelet step), then remove the annotation: until then it overrides the class's settings")
                    .fix(format!(
                        "kubectl edit ec2nodeclass {}",
                        p.class_name().unwrap_or("<class>")
                    ))
                    .fix(format!("kubectl annotate nodepool {} {KUBELET_ANNOTATION}-", p.name()))
                    .in_step(PlanStep::Objects),
                );
                continue;
            }
            // From 1.6 the annotation is read by nothing: what matters is whether the class
            // already holds the same settings.
            let classes = cx.ec2_nodeclasses().await?;
            let class = p
                .class_name()
                .and_then(|n| classes.iter().find(|c| c.name() == n));
            // A setting counts as moved when the class sets the same key: the annotation holds
            // Go's rendering (`1m0s`), the class the user's (`1m`), so values are not compared.
            let wanted: Option<serde_json::Value> = serde_json::from_str(kubelet).ok();
            let held = class.and_then(|c| c.spec.get("kubelet"));
            let lost: Vec<String> = match wanted.as_ref().and_then(|w| w.as_object()) {
                Some(w) => w
                    .keys()
                    .filter(|k| held.and_then(|h| h.get(k.as_str())).is_none())
                    .cloned()
                    .collect(),
                None => vec!["(the annotation is not JSON)".to_string()],
            };
            if lost.is_empty() {
                continue;
            }
            findings.push(
                Finding::new(
                    p.object(),
                    format!(
                        "carries {KUBELET_ANNOTATION}, which Karpenter {to} ignores, and its EC2NodeClass{} does not set {}: nodes launched after the upgrade lose {}",
                        p.class_name().map(|n| format!(" {n}")).unwrap_or_default(),
                        lost.join(", "),
                        if lost.len() == 1 { "it" } else { "them" }
                    ),
                )
                .severity(Severity::Warning)
                .evidence("annotation", kubelet.clone())
                .evidence(
                    "classKubelet",
                    held.cloned().unwrap_or(serde_json::Value::Null),
                )
                .hint("copy the settings to the EC2NodeClass's spec.kubelet before upgrading, then remove the annotation")
                .fix(format!(
                    "kubectl edit ec2nodeclass {}",
                    p.class_name().unwrap_or("<class>")
                ))
                .in_step(PlanStep::Objects),
            );
        }
        if into_1_1 {
            let claims = cx.nodeclaims().await?;
            for c in claims.iter() {
                let r = c.spec.node_class_ref.as_ref();
                let auto = r.is_some_and(|r| r.group.as_deref() == Some(AUTO_MODE_GROUP));
                if !c.api_version.ends_with("/v1beta1")
                    && !auto
                    && r.is_none_or(|r| empty(&r.group) || empty(&r.kind))
                {
                    without_group.push(format!(
                        "NodeClaim/{}",
                        c.metadata.name.as_deref().unwrap_or("")
                    ));
                }
            }
        }
        if !without_group.is_empty() {
            let mut f = Finding::new(
                without_group[0].clone(),
                format!(
                    "{} object{} with an empty nodeClassRef.group or kind: Karpenter {to} requires both (\"group may not be empty\") and manages only NodePools and NodeClaims whose group and kind name its EC2NodeClass, so after the upgrade it ignores {}",
                    without_group.len(),
                    if without_group.len() == 1 { "" } else { "s" },
                    if without_group.len() == 1 { "it" } else { "them" }
                ),
            )
            .evidence("objects", capped(without_group.iter().cloned(), 10))
            .hint("set nodeClassRef.group: karpenter.k8s.aws and kind: EC2NodeClass on every NodePool, and replace the NodeClaims that lack them (their spec cannot be edited), before upgrading (the 1.1 upgrade notes)")
            .in_step(PlanStep::Objects);
            for pool in without_group
                .iter()
                .filter_map(|o| o.strip_prefix("NodePool/"))
                .take(5)
            {
                f = f.fix(format!("kubectl edit nodepool {pool}"));
            }
            findings.push(f);
        }
    }
    // 1.0 removed the Ubuntu family. 0.37.1 and later serve the class at v1 through their
    // conversion, which turns an Ubuntu class without AMI terms into AL2 with a placeholder AMI
    // and marks it `incompatible`; 1.0 ignores such a class for launches. 0.37.0 serves only
    // v1beta1, where the family shows as it is.
    if from < v1_0 && to >= v1_0 {
        let classes = cx.ec2_nodeclasses().await?;
        for nc in classes.iter() {
            let marked = nc
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(UBUNTU_ANNOTATION))
                .is_some_and(|v| v.split(',').any(|s| s.trim() == "incompatible"));
            let family = nc.spec.get("amiFamily").and_then(serde_json::Value::as_str);
            let terms = nc
                .spec
                .get("amiSelectorTerms")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|t| !t.is_empty());
            if marked || (nc.is_v1beta1() && family == Some("Ubuntu") && !terms) {
                findings.push(
                    Finding::new(
                        format!("EC2NodeClass/{}", nc.name()),
                        format!("is on amiFamily Ubuntu without amiSelectorTerms: Karpenter {to} no longer selects Ubuntu AMIs itself, and ignores the class for launches (its conversion marks it {UBUNTU_ANNOTATION}: incompatible)"),
                    )
                    .hint("name the Ubuntu AMIs in amiSelectorTerms before upgrading (1.0's conversion then keeps the class working, the v1 migration guide's Ubuntu step), or move the class to AL2023 or Bottlerocket")
                    .fix(format!("kubectl edit ec2nodeclass {}", nc.name()))
                    .in_step(PlanStep::Objects),
                );
            }
        }
    }
    Ok(findings)
}

fn empty(v: &Option<String>) -> bool {
    v.as_deref().is_none_or(str::is_empty)
}
