//! KD1103: before an upgrade, the Karpenter release and the Kubernetes minor must accept each
//! other (the release's own `MinK8sVersion`/`MaxK8sVersion`, not the docs matrix: 1.6.0–1.6.5 and
//! 1.7.0–1.7.3 stop at 1.33 although the matrix lists 1.34), EKS moves one minor at a time, and
//! the AMIs the EC2NodeClasses ask for must exist for the target minor (AL2 ends with 1.32, and an
//! alias pinned to an AMI release has none for a minor released after it; docs/upgrade.md §3.3).

use serde_json::Value;

use crate::check::prelude::*;
use crate::checks::common::amis::pool_arches;
use crate::checks::common::evidence::capped;
use crate::checks::common::upgrade::{Targets, targets};
use crate::ec2::{self, AmiTerm};
use crate::iam::reference::{Version, alias_parameter_paths};
use crate::model::Ec2NodeClass;
use crate::upgrade::releases::{self, KubeSupport, Minor};

declare_check! {
    pub static UPGRADE_KUBERNETES_INCOMPATIBLE = {
        code: "KD1103",
        slug: "upgrade-kubernetes-incompatible",
        title: "the target Karpenter release and Kubernetes minor accept each other, and the AMIs exist for the minor",
        category: Upgrade,
        severity: Error,
        needs: [ControllerDeployments, KubeVersion, Ec2NodeClasses, NodePools, SsmParameters, Ec2Images],
        self_managed: true,
        run: upgrade_kubernetes_incompatible,
    }
}

/// The first minor for which no EKS-optimized AL2 AMI is published.
const AL2_LAST: Minor = Minor(32);

async fn upgrade_kubernetes_incompatible(cx: &CheckCx) -> CheckResult {
    let t = targets(cx).await?;
    let mut findings = Vec::new();
    if t.minor_to < t.minor_now {
        findings.push(
            Finding::new(
                "Cluster",
                format!(
                    "--kubernetes {} is older than the cluster's {}: EKS does not downgrade a control plane",
                    t.minor_to, t.minor_now
                ),
            )
            .hint("give a minor at or above the cluster's")
            .in_step(PlanStep::ControlPlane),
        );
        return Ok(findings);
    }
    if t.minor_to.0 > t.minor_now.0 + 1 {
        let steps: Vec<String> = (t.minor_now.0 + 1..=t.minor_to.0)
            .map(|m| Minor(m).to_string())
            .collect();
        findings.push(
            Finding::new(
                "Cluster",
                format!(
                    "the cluster is on {} and --kubernetes asks for {}: EKS upgrades the control plane one minor at a time ({})",
                    t.minor_now,
                    t.minor_to,
                    steps.join(", then ")
                ),
            )
            .evidence("steps", steps)
            .hint("upgrade one minor at a time, running these checks before each step")
            .in_step(PlanStep::ControlPlane),
        );
    }
    // The release must run on the cluster now (after `--to`) and on the target minor.
    // One release refusing both minors is one cause: the minor it refuses now is reported.
    let refused_now = t.to_given
        && match release_rejects(&t, t.to, t.minor_now, "now") {
            Some(f) => {
                findings.push(f);
                true
            }
            None => false,
        };
    if t.minor_to != t.minor_now
        && !refused_now
        && let Some(f) = release_rejects(&t, t.to, t.minor_to, "after the control-plane upgrade")
    {
        findings.push(f);
    }
    if t.minor_to > AL2_LAST {
        let classes = cx.ec2_nodeclasses().await?;
        for nc in classes.iter() {
            if let Some(f) = al2_without_images(nc, &t) {
                findings.push(f);
            }
        }
    }
    if t.minor_to > t.minor_now {
        findings.extend(pins_unpublished(cx, &t).await?);
        findings.extend(images_behind(cx, &t).await?);
    }
    Ok(findings)
}

/// AMIs chosen by id, name or tag stay what they are when the control plane moves: their
/// nodes keep the kubelet they were built with, and Karpenter does not replace them (nothing
/// drifted). Past the version skew policy's limit (kubelet up to three minors older than the
/// API server, two before 1.25) that is unsupported; short of it, the AMIs still need moving
/// (docs/upgrade.md §3.3 rule f). The minor is read from the image's name, as KD3004 reads it.
async fn images_behind(cx: &CheckCx, t: &Targets) -> Result<Vec<Finding>, FactError> {
    let classes = cx.ec2_nodeclasses().await?;
    let mut findings = Vec::new();
    for nc in classes.iter() {
        // Rule d already says an AL2 class has no AMI at all on the target minor.
        if t.minor_to > AL2_LAST && al2_without_images(nc, t).is_some() {
            continue;
        }
        let mut newest: Option<(Minor, String)> = None;
        for term in ec2::ami_terms(nc) {
            if matches!(term, AmiTerm::Alias(_) | AmiTerm::SsmParameter(_)) {
                continue;
            }
            let Some((filters, owners)) = ec2::image_query(&term) else {
                continue;
            };
            let images = cx.images(filters, owners).await?;
            for image in ec2::usable(&images) {
                let Some(m) = ec2::ami_name_minor(&image.name).and_then(|m| Minor::parse(&m))
                else {
                    continue;
                };
                if newest.as_ref().is_none_or(|(n, _)| m > *n) {
                    newest = Some((m, image.name.clone()));
                }
            }
        }
        // Karpenter launches the newest image the terms match; judge that one.
        let Some((built, name)) = newest else { continue };
        if built >= t.minor_to {
            continue;
        }
        let allowed = if built.0 >= 25 { 3 } else { 2 };
        let behind = t.minor_to.0 - built.0;
        let f = Finding::new(
            format!("EC2NodeClass/{}", nc.name()),
            if behind > allowed {
                format!(
                    "selects AMIs built for Kubernetes {built} ({name}): on {} their kubelet would be {behind} minors behind the control plane, beyond the {allowed} the version skew policy allows",
                    t.minor_to
                )
            } else {
                format!(
                    "selects AMIs built for Kubernetes {built} ({name}): after the control plane moves to {} its nodes keep kubelet {built}, and Karpenter does not replace them, since the AMIs do not change",
                    t.minor_to
                )
            },
        )
        .evidence("ami", name.clone())
        .evidence("builtFor", built.to_string())
        .evidence("minor", t.minor_to.to_string())
        .fix(format!("kubectl edit ec2nodeclass {}", nc.name()));
        // No EKS-optimized AL2 image exists past 1.32: such a class must change family.
        let al2_gone = ec2::ami_name_family(&name) == Some("AL2") && t.minor_to > AL2_LAST;
        let then = if al2_gone {
            format!(
                "no EKS-optimized AL2 AMI exists for {}: move the class to AL2023 or Bottlerocket",
                t.minor_to
            )
        } else {
            "point amiSelectorTerms at AMIs built for each minor as the control plane reaches it (Karpenter then replaces the nodes as drifted), or select them by alias".to_string()
        };
        // A kubelet may not be newer than the API server: AMIs for the target minor come after
        // the control plane. Beyond the skew, the nodes must first catch up with today's minor.
        findings.push(if behind > allowed {
            f.hint(format!(
                "before upgrading, move the class to AMIs built for {} (the cluster's minor); after the control plane moves, {then}",
                t.minor_now
            ))
            .in_step(PlanStep::Nodes)
        } else {
            f.severity(Severity::Warning)
                .hint(format!("after the control plane moves, {then}"))
                .in_step(PlanStep::ControlPlane)
        });
    }
    Ok(findings)
}

/// Aliases pinned to an AMI release (`al2023@v20250116`, `bottlerocket@1.30.0`) resolve through
/// SSM parameters named for the Kubernetes minor: a release built before the target minor
/// existed has none for it, and after the control plane moves the class resolves no AMI
/// (docs/upgrade.md §3.3 rule e; aws/karpenter-provider-aws#8564). AL2 aliases are rule d's.
async fn pins_unpublished(cx: &CheckCx, t: &Targets) -> Result<Vec<Finding>, FactError> {
    let classes = cx.ec2_nodeclasses().await?;
    let minor = t.minor_to.to_string();
    let arches = ["amd64", "arm64"];
    // Per class, its pinned aliases and each alias's parameters per architecture.
    let mut pinned: Vec<(&Ec2NodeClass, String)> = Vec::new();
    for nc in classes.iter() {
        for alias in nc
            .spec
            .get("amiSelectorTerms")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|term| term.get("alias").and_then(Value::as_str))
        {
            let Some((family, version)) = alias.split_once('@') else {
                continue;
            };
            if family != "al2" && version.trim() != "latest" {
                pinned.push((nc, alias.to_string()));
            }
        }
    }
    let mut paths: Vec<String> = pinned
        .iter()
        .flat_map(|(_, a)| alias_parameter_paths(a, &minor, &arches).unwrap_or_default())
        .collect();
    paths.sort();
    paths.dedup();
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let values = cx.ssm_parameters(&paths).await?;
    let pools = cx.nodepools().await?;
    let mut findings = Vec::new();
    for (nc, alias) in pinned {
        // The architectures the class's pools allow; all of them when no pool says.
        let mut wanted: Vec<&str> = Vec::new();
        for (_, allowed) in pool_arches(nc, &pools) {
            for a in arches {
                if allowed.contains(ec2::ec2_arch(a)) && !wanted.contains(&a) {
                    wanted.push(a);
                }
            }
        }
        if wanted.is_empty() {
            wanted = arches.to_vec();
        }
        let asked = alias_parameter_paths(&alias, &minor, &wanted).unwrap_or_default();
        if asked.is_empty() || asked.iter().any(|p| values.get(p).is_some_and(Option::is_some)) {
            continue;
        }
        // The standard variant names the release best; GPU variants are listed as evidence.
        let example = asked
            .iter()
            .find(|p| p.contains("/standard/"))
            .unwrap_or(&asked[0]);
        findings.push(
            Finding::new(
                format!("EC2NodeClass/{}", nc.name()),
                format!(
                    "pins alias {alias}, which has no AMI for Kubernetes {minor} (no SSM parameter such as {example}): after the control plane moves to {minor} the class resolves no AMI and launches nothing"
                ),
            )
            .evidence("alias", alias.clone())
            .evidence("minor", minor.clone())
            .evidence("parameters", capped(asked.iter().cloned(), 4))
            .hint(format!(
                "before upgrading the control plane, pin a release published for {minor}, or use @latest (its nodes then drift to each new release)"
            ))
            .fix(format!("kubectl edit ec2nodeclass {}", nc.name()))
            .in_step(PlanStep::Nodes),
        );
    }
    Ok(findings)
}

/// Release `v` does not accept `minor`: what it does, and the first release that would.
fn release_rejects(t: &Targets, v: Version, minor: Minor, when: &str) -> Option<Finding> {
    let support = releases::kubernetes(v)?;
    if support.accepts(minor) {
        return None;
    }
    let first = releases::first_supporting(t.from.unwrap_or(v).min(v), minor);
    let mut f = Finding::new(
        format!("Karpenter {v}"),
        format!(
            "accepts Kubernetes {} to {}, not {minor} ({when}): {}",
            support.min,
            support.max,
            consequence(&support)
        ),
    )
    .evidence("release", v.to_string())
    .evidence("kubernetesMinor", minor.to_string())
    .evidence("accepts", format!("{}-{}", support.min, support.max));
    if let Some((lo, hi)) = support.docs {
        // The compatibility matrix and the code disagree for some patches; the code decides.
        f = f.evidence(
            "docsMatrix",
            format!("{lo}-{hi} (the release's code checks {}-{})", support.min, support.max),
        );
    }
    f = match first {
        Some(ok) if minor > support.max => f
            .hint(format!(
                "upgrade Karpenter to {ok} or later before the control plane moves to {minor} (Karpenter first, then the cluster)"
            ))
            .fix(format!("karpdoctor upgrade --to {ok} --kubernetes {minor}")),
        // The release is too new for the cluster: the control plane moves first.
        _ if minor < support.min => f
            .hint(format!(
                "upgrade the control plane to {} first (one minor at a time), then Karpenter to {v}",
                support.min
            ))
            .fix(format!("karpdoctor upgrade --kubernetes {}", Minor(minor.0 + 1))),
        Some(ok) => f.hint(format!("pick a release that accepts {minor}, such as {ok}")),
        None => f.hint(format!(
            "no release karpdoctor knows (up to {}) accepts {minor}",
            releases::newest().map(|v| v.to_string()).unwrap_or_default()
        )),
    };
    Some(f.in_step(PlanStep::Path))
}

/// What a release does on a minor outside its range, from its code.
fn consequence(s: &KubeSupport) -> &'static str {
    match s.out_of_range.as_str() {
        "panic-at-start" => "the controller panics at start (1.1.0 and 1.1.1 validate the version with lo.Must0)",
        "reconcile-error" => "the controller does not reconcile (its version check fails on every pass)",
        _ => "the controller logs that the version is not supported and its behaviour there is untested",
    }
}

/// An EC2NodeClass on Amazon Linux 2 while the target minor has no AL2 AMI: `al2@` aliases are
/// refused (`UnsupportedAlias`, 1.6+) and AL2's SSM parameters do not exist past 1.32.
fn al2_without_images(nc: &Ec2NodeClass, t: &Targets) -> Option<Finding> {
    let terms = nc.spec.get("amiSelectorTerms").and_then(Value::as_array);
    let alias = terms
        .into_iter()
        .flatten()
        .filter_map(|term| term.get("alias").and_then(Value::as_str))
        .find(|a| a.starts_with("al2@"));
    let family = nc.spec.get("amiFamily").and_then(Value::as_str);
    // AL2 classes with terms of their own (ids, names, tags) are judged by the images they
    // match (rule f): custom AL2 images can exist for any minor.
    let uses_al2 =
        alias.is_some() || (family == Some("AL2") && terms.is_none_or(|t| t.is_empty()));
    if !uses_al2 {
        return None;
    }
    Some(
        Finding::new(
            format!("EC2NodeClass/{}", nc.name()),
            format!(
                "uses Amazon Linux 2 ({}), for which no EKS-optimized AMI is published after Kubernetes {AL2_LAST}: on {} its nodes cannot launch",
                alias.map_or_else(|| "amiFamily: AL2".to_string(), |a| format!("alias {a}")),
                t.minor_to
            ),
        )
        .evidence("minor", t.minor_to.to_string())
        .hint(format!(
            "move the class to AL2023 (alias al2023@latest, and user data in nodeadm's format) or Bottlerocket while the cluster is still on {}, then upgrade",
            t.minor_now
        ))
        .fix(format!("kubectl edit ec2nodeclass {}", nc.name()))
        .in_step(PlanStep::Nodes),
    )
}
