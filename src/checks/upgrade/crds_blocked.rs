//! KD1102: before an upgrade, the CRDs and their stored objects must be able to move to the
//! target release. A CRD whose `status.storedVersions` lists a version the target does not serve
//! cannot be replaced ("must appear in spec.versions", kubernetes-sigs/karpenter#2157), and an
//! upgrade from before 1.0.6 to 1.1 or later skips the controllers that migrate the objects to
//! `v1` (docs/upgrade.md §3.2 rules a, b, d; the release data's `crds` and `hops`).

use crate::check::prelude::*;
use crate::checks::common::crds::REQUIRED_CRDS;
use crate::checks::common::upgrade::targets;
use crate::upgrade::releases;

declare_check! {
    pub static UPGRADE_CRDS_BLOCKED = {
        code: "KD1102",
        slug: "upgrade-crds-blocked",
        title: "the CRDs and their stored objects can move to the target release",
        category: Upgrade,
        severity: Error,
        needs: [ControllerDeployments, KubeVersion, Crd],
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
    let hops = releases::hops(from, t.to);
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
    Ok(findings)
}
