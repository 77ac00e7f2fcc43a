//! KD1008: each Karpenter release supports a range of Kubernetes versions; below it the
//! controller refuses to reconcile ("karpenter is not compatible with kubernetes version")
//! or misses AMIs and APIs of the newer control plane.

use crate::check::prelude::*;
use crate::checks::common::controller::controller;
use crate::iam::reference::Version;

declare_check! {
    pub static KARPENTER_VERSION_UNSUPPORTED = {
        code: "KD1008",
        slug: "karpenter-version-unsupported",
        title: "the Karpenter release supports the cluster's Kubernetes version",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, Pods, KubeVersion],
        self_managed: true,
        run: karpenter_version_unsupported,
    }
}

/// The oldest Karpenter release that supports each Kubernetes minor (Karpenter's
/// compatibility matrix).
pub const MINIMUM: &[(u32, Version)] = &[
    (25, Version(0, 25, 0)),
    (26, Version(0, 28, 0)),
    (27, Version(0, 28, 0)),
    (28, Version(0, 31, 0)),
    (29, Version(0, 34, 0)),
    (30, Version(0, 37, 0)),
    (31, Version(1, 0, 5)),
    (32, Version(1, 2, 0)),
    (33, Version(1, 5, 0)),
    (34, Version(1, 6, 0)),
    (35, Version(1, 9, 0)),
    (36, Version(1, 13, 0)),
];

/// The oldest release for a Kubernetes 1.`minor`; `None` outside the table (older clusters
/// are out of every supported release's range, newer ones unknown to this karpdoctor).
pub fn minimum_for(minor: u32) -> Option<Version> {
    MINIMUM.iter().find(|(m, _)| *m == minor).map(|(_, v)| *v)
}

async fn karpenter_version_unsupported(cx: &CheckCx) -> CheckResult {
    let c = controller(cx).await?;
    let Some(version) = c.version() else {
        return Ok(Vec::new());
    };
    let kube = cx.kube_version().await?;
    // EKS reports minors like "33+".
    let Ok(minor) = kube.minor.trim_end_matches('+').parse::<u32>() else {
        return Ok(Vec::new());
    };
    let Some(minimum) = minimum_for(minor) else {
        return Ok(Vec::new());
    };
    if version >= minimum {
        return Ok(Vec::new());
    }
    let ns = c.deployment().namespace().to_string();
    // Charts before 0.35 were published with a `v` prefix.
    let chart = if minimum < Version(0, 35, 0) {
        format!("v{minimum}")
    } else {
        minimum.to_string()
    };
    Ok(vec![
        Finding::new(
            c.deployment().object(),
            format!("Karpenter {version} does not support Kubernetes 1.{minor}: the oldest release that does is {minimum}"),
        )
        .evidence("karpenterVersion", version.to_string())
        .evidence("kubernetesVersion", kube.git_version.clone())
        .evidence("minimumKarpenter", minimum.to_string())
        .hint("upgrade Karpenter (CRDs first) before or right after the control plane; follow the upgrade guide for each minor release in between")
        .fix(format!("helm upgrade --install karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd --version {chart} --namespace {ns}"))
        .fix(format!("helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter --version {chart} --namespace {ns} --reuse-values")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_ordered_and_covers_current_minors() {
        assert!(
            MINIMUM
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
        );
        assert_eq!(minimum_for(33), Some(Version(1, 5, 0)));
        assert_eq!(minimum_for(20), None);
    }
}
