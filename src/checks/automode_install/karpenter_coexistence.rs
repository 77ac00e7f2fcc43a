//! KD1201: a self-managed Karpenter beside EKS Auto Mode's compute that will act on Auto Mode's
//! NodePools, NodeClaims or instances (docs/auto-mode.md §4). Before 1.1 Karpenter reconciles
//! every NodePool and NodeClaim, Auto Mode's included (kubernetes-sigs/karpenter#1818); with an
//! interruption queue, its handler deletes any NodeClaim whose instance an event names, Auto
//! Mode's too (aws/karpenter-provider-aws#9557, not in a release up to 1.14.1).

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::controller::helm_upgrade;
use crate::iam::reference::{Version, newest};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::NodeSelectorTerm;

use crate::model::ControllerDeployment;
use crate::scheduling::spread::NODES_WITH_ZONE;

/// The label Karpenter (and Auto Mode) puts on every node it launches.
const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

declare_check! {
    pub static AUTOMODE_KARPENTER_COEXISTENCE = {
        code: "KD1201",
        slug: "automode-karpenter-coexistence",
        title: "a self-managed Karpenter beside EKS Auto Mode leaves Auto Mode's pools, claims and instances alone",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, EksCluster, Nodes],
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
    if let Some(f) = unschedulable(cx, &deployments[i]).await? {
        findings.push(f);
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
            .fix(helm_upgrade(&d, "--set settings.interruptionQueue=''")),
        );
    }
    Ok(findings)
}

/// The chart's default required affinity, `karpenter.sh/nodepool DoesNotExist`, keeps the
/// controller off nodes Karpenter launched; every Auto Mode node carries that label too, so on a
/// cluster whose every node is Auto Mode's (or Karpenter's) no replica can be placed
/// (aws-samples/appmod-blueprints PR #787; docs/auto-mode.md §4.2).
async fn unschedulable(cx: &CheckCx, deployment: &Deployment) -> Result<Option<Finding>, FactError> {
    let d = ControllerDeployment::new(deployment);
    if d.ready_replicas() >= d.desired_replicas() {
        return Ok(None);
    }
    let terms = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or_default();
    // Every term must exclude Karpenter's nodes for the affinity to leave only other nodes.
    let excludes_karpenter = |t: &NodeSelectorTerm| {
        t.match_expressions.iter().flatten().any(|e| {
            e.key == NODEPOOL_LABEL && e.operator == "DoesNotExist"
        })
    };
    if terms.is_empty() || !terms.iter().all(excludes_karpenter) {
        return Ok(None);
    }
    let nodes = cx.nodes(NODES_WITH_ZONE).await?;
    if nodes.is_empty() || nodes.iter().any(|n| n.label(NODEPOOL_LABEL).is_none()) {
        // A node without the label (a node group's, Fargate's) can take it: KD1005 judges it.
        return Ok(None);
    }
    let auto = nodes
        .iter()
        .filter(|n| n.label("eks.amazonaws.com/compute-type") == Some("auto"))
        .count();
    Ok(Some(
        Finding::new(
            d.object(),
            format!(
                "cannot place its pods: its required node affinity {NODEPOOL_LABEL} DoesNotExist (the chart's default) matches none of the cluster's {} nodes, which all carry {NODEPOOL_LABEL} ({auto} of them EKS Auto Mode's)",
                nodes.len()
            ),
        )
        .evidence("readyReplicas", format!("{} of {}", d.ready_replicas(), d.desired_replicas()))
        .evidence("affinity", format!("{NODEPOOL_LABEL} DoesNotExist"))
        .hint("run the controller on a node group or Fargate, or pin it to Auto Mode's tainted system pool: replace the affinity with karpenter.sh/nodepool In [system] (the chart's CriticalAddonsOnly toleration lets it land there)")
        .fix(helm_upgrade(
            &d,
            r#"--set-json 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms=[{"matchExpressions":[{"key":"karpenter.sh/nodepool","operator":"In","values":["system"]}]}]'"#,
        )),
    ))
}
