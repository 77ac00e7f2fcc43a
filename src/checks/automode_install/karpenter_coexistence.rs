//! KD1201: a self-managed Karpenter beside EKS Auto Mode's compute that will act on Auto Mode's
//! NodePools, NodeClaims or instances (docs/automode.md §4). Before 1.1 Karpenter reconciles
//! every NodePool and NodeClaim, Auto Mode's included (kubernetes-sigs/karpenter#1818); with an
//! interruption queue, its handler deletes any NodeClaim whose instance an event names, Auto
//! Mode's too (aws/karpenter-provider-aws#9557, not in a release up to 1.14.1).

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::iam::reference::{Version, newest};
use crate::model::ControllerDeployment;

declare_check! {
    pub static AUTOMODE_KARPENTER_COEXISTENCE = {
        code: "KD1201",
        slug: "automode-karpenter-coexistence",
        title: "a self-managed Karpenter beside EKS Auto Mode leaves Auto Mode's pools, claims and instances alone",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, EksCluster],
        run: karpenter_coexistence,
    }
}

/// The first release that operates only on its own NodeClass group's objects.
const SCOPED: Version = Version(1, 1, 0);

async fn karpenter_coexistence(cx: &CheckCx) -> CheckResult {
    let Some((deployments, i)) = cx.controller().await? else {
        // No self-managed controller: nothing to coexist with.
        return Ok(Vec::new());
    };
    let described = cluster(cx).await?;
    if !described.auto_mode() {
        return Ok(Vec::new());
    }
    let d = ControllerDeployment::new(&deployments[i]);
    let object = d.object();
    let version_text = d.version();
    let version = version_text.as_deref().and_then(Version::parse);
    let mut findings = Vec::new();
    match version {
        Some(v) if v < SCOPED => findings.push(
            Finding::new(
                object.clone(),
                format!(
                    "runs Karpenter {v} beside EKS Auto Mode's compute: releases before 1.1 reconcile every NodePool and NodeClaim, Auto Mode's included, so this controller provisions for Auto Mode's pools and expires, consolidates and garbage-collects Auto Mode's nodes"
                ),
            )
            .evidence("karpenterVersion", v.to_string())
            .evidence("computeConfig.enabled", true)
            .hint("upgrade Karpenter to 1.1 or later (AWS's migration to Auto Mode requires it) before Auto Mode's pools and claims exist beside it, or turn Auto Mode's compute off until then")
            .fix(format!(
                "helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter --version <1.1 or later> --namespace {} --reuse-values",
                d.namespace()
            )),
        ),
        Some(_) => {}
        None => cx.note(
            "the controller's release is unreadable (no image tag or chart label): whether it is older than 1.1 is not judged",
        ),
    }
    let queue = d
        .env("INTERRUPTION_QUEUE")
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    let known = match (version, newest()) {
        (Some(v), Some(n)) => v <= n,
        // Without the release it is one of the releases this data covers or older.
        (None, _) => true,
        (Some(_), None) => false,
    };
    if let Some(queue) = queue.filter(|_| known) {
        findings.push(
            Finding::new(
                object,
                format!(
                    "reads the interruption queue {queue} beside EKS Auto Mode: Karpenter's interruption handler finds NodeClaims by instance id without asking whose they are, so a spot interruption, rebalance, scheduled change or state change of an Auto Mode instance makes it cordon, drain and delete Auto Mode's NodeClaim"
                ),
            )
            // Nothing is deleted until EC2 sends such an event for one of Auto Mode's instances.
            .severity(Severity::Warning)
            .evidence("interruptionQueue", queue)
            .evidence(
                "karpenterVersion",
                version_text.unwrap_or_else(|| "unknown".to_string()),
            )
            .hint("no release up to 1.14.1 scopes interruption handling to its own NodeClaims (aws/karpenter-provider-aws#9557): during the move to Auto Mode, run without the queue (Auto Mode handles its own instances' interruptions), or keep spot and Auto Mode's instances apart until a release has the fix")
            .fix(format!(
                "helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter --version <installed release> --namespace {} --reuse-values --set settings.interruptionQueue=''",
                d.namespace()
            )),
        );
    }
    Ok(findings)
}
