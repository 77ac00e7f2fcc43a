//! KD1002: the controller cannot start its informers, and users cannot create NodePools,
//! without Karpenter's CRDs serving the `v1` API.

use crate::check::prelude::*;

declare_check! {
    pub static CRDS_MISSING_OR_OUTDATED = {
        code: "KD1002",
        slug: "crds-missing-or-outdated",
        title: "Karpenter's CRDs are installed and serve the v1 API",
        category: Install,
        severity: Error,
        needs: [Crd],
        run: crds_missing_or_outdated,
    }
}

/// The CRDs every v1 install needs (AWS provider).
pub const REQUIRED_CRDS: &[&str] = &[
    "ec2nodeclasses.karpenter.k8s.aws",
    "nodeclaims.karpenter.sh",
    "nodepools.karpenter.sh",
];

async fn crds_missing_or_outdated(cx: &CheckCx) -> CheckResult {
    let target = cx.target();
    let ns = target
        .karpenter_namespace
        .clone()
        .unwrap_or_else(|| "kube-system".to_string());
    let version = target
        .karpenter_version
        .clone()
        .unwrap_or_else(|| "${KARPENTER_VERSION}".to_string());
    let upgrade = format!(
        "helm upgrade --install karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd --version {version} --namespace {ns}"
    );
    let crds = futures::future::join_all(REQUIRED_CRDS.iter().map(|name| cx.crd(name))).await;
    let mut findings = Vec::new();
    for (name, crd) in REQUIRED_CRDS.iter().zip(crds) {
        let Some(crd) = crd?.as_ref().clone() else {
            findings.push(
                Finding::new(
                    format!("CustomResourceDefinition/{name}"),
                    "the CRD is not installed",
                )
                .hint("install the karpenter-crd chart with the same version as the controller")
                .fix(upgrade.clone()),
            );
            continue;
        };
        let served: Vec<&str> = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        if !served.contains(&"v1") {
            findings.push(
                Finding::new(
                    format!("CustomResourceDefinition/{name}"),
                    format!("the CRD does not serve v1 (serves {})", if served.is_empty() { "nothing".to_string() } else { served.join(", ") }),
                )
                .evidence("servedVersions", served.join(","))
                .hint("the CRDs predate Karpenter v1: upgrade them with the karpenter-crd chart (Helm never upgrades CRDs of the main chart)")
                .fix(upgrade.clone()),
            );
        }
    }
    Ok(findings)
}
