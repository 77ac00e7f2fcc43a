//! KD8001: pods Karpenter should place and no NodePool can serve: per NodePool the first
//! reason (not ready, a taint, a requirement, no instance type, its limits), or why Karpenter
//! ignores the pods. Pods that only lack room or a zone are KD8002 and KD8003.

use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::scheduling::{Code, Group, Outcome, finding, unserved};
use crate::scheduling::Blocked;

declare_check! {
    pub static PENDING_PODS_UNSERVED = {
        code: "KD8001",
        slug: "pending-pods-unserved",
        title: "every pod Karpenter should place has a NodePool that can serve it",
        category: Scheduling,
        severity: Error,
        needs: [PendingPods, Events, EventsByReason, NodeClaims, Pods, PodLogs, PersistentVolumeClaims, PersistentVolumes, StorageClasses, ScheduledPods, Nodes, NodePools, Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings, ControllerDeployments, EksCluster, AutoNodeClasses],
        // The controller's log: its `could not schedule pod` lines, quoted when found.
        evidence: [Pods, PodLogs],
        run: pending_pods_unserved,
    }
}

async fn pending_pods_unserved(cx: &CheckCx) -> CheckResult {
    let pending = unserved(cx).await?;
    // This check speaks for the pods the three scheduling checks leave out.
    for note in &pending.notes {
        cx.note(note.clone());
    }
    let groups = pending.groups;
    Ok(groups
        .iter()
        .filter(|g| g.code() == Some(Code::Unserved))
        .map(report)
        .collect())
}

fn report(group: &Group) -> Finding {
    let (waiting, them) = (group.waiting(), group.them());
    match &group.outcome {
        Outcome::Ignored(why) => finding(
            group,
            format!("{waiting}, and Karpenter ignores {them}: {why}"),
        )
        .hint("Karpenter does not provision for a pod it cannot read; fix the pod (or its volume) and it is considered again")
        .fix(format!("kubectl describe pod -n {}", group.pods[0].replacen('/', " ", 1))),
        Outcome::Unserved(pools) if pools.is_empty() => finding(
            group,
            format!("{waiting}, and no NodePool exists to serve {them} (\"no nodepools found\")"),
        )
        .hint("create a NodePool (and its EC2NodeClass); Karpenter launches nothing without one"),
        Outcome::Unserved(pools) => {
            let Some((pool, blocked)) = pools.iter().max_by_key(|(_, b)| b.progress()) else {
                return finding(group, waiting);
            };
            let reasons: Vec<String> = pools
                .iter()
                .map(|(name, b)| format!("NodePool {name}: {}", b.describe()))
                .collect();
            let mut f = finding(
                group,
                format!(
                    "{waiting}, and no NodePool can serve {them}: {}",
                    reasons.join("; ")
                ),
            );
            f = match blocked {
                Blocked::NotReady { owners, .. } => f
                    .owned_by(owners.iter().copied())
                    .hint(format!("Karpenter skips NodePool {pool} until it is Ready; fix the cause the linked check reports")),
                Blocked::Limits { .. } => f
                    .owned_by([codes::NODEPOOL_LIMITS_REACHED])
                    .hint(format!("NodePool {pool} is at its limits: raise spec.limits, or let another NodePool serve these pods"))
                    .fix(format!("kubectl edit nodepool {pool}")),
                Blocked::Taint { taint } => f.hint(toleration_hint(pool, taint)),
                Blocked::Requirements { reason } => f.hint(requirement_hint(pool, reason)),
                Blocked::NoInstanceType { ami_arches, .. } if !ami_arches.is_empty() => f
                    .owned_by([codes::NODECLASS_AMI_MISMATCH, codes::NODECLASS_AMI_UNRESOLVABLE])
                    .hint(format!("instance types meet these pods' constraints, but NodePool {pool}'s EC2NodeClass has AMIs only for {}: add AMIs for the other architecture to its amiSelectorTerms, or restrict the NodePool's kubernetes.io/arch to {}", ami_arches.join(", "), ami_arches.join(", "))),
                Blocked::NoInstanceType { .. } => f
                    .owned_by([codes::NODEPOOL_REQUIREMENTS_UNSATISFIABLE])
                    .hint(format!("with the pods' constraints, no instance type NodePool {pool} allows is left: widen the NodePool's requirements or relax the pods' nodeSelector/affinity")),
                Blocked::Zones { .. } | Blocked::TooLarge { .. } => f,
            };
            f
        }
    }
}

/// The toleration to add, as YAML for the pod template.
fn toleration_hint(pool: &str, taint: &str) -> String {
    let (kv, effect) = taint.rsplit_once(':').unwrap_or((taint, ""));
    let toleration = match kv.split_once('=') {
        Some((k, v)) => format!("{{key: {k}, operator: Equal, value: {v}, effect: {effect}}}"),
        None => format!("{{key: {kv}, operator: Exists, effect: {effect}}}"),
    };
    format!("NodePool {pool} taints its nodes {taint}: if these pods belong there, add to their pod template `tolerations: [{toleration}]`; otherwise serve them from a NodePool without the taint")
}

fn requirement_hint(pool: &str, reason: &str) -> String {
    match reason
        .strip_prefix("label \"")
        .and_then(|r| r.split_once('"'))
    {
        // Auto Mode's nodes carry eks.amazonaws.com/instance-* where self-managed Karpenter's
        // carry karpenter.k8s.aws/instance-*, which self-managed pools always know: only an
        // Auto Mode pool finds the old name unknown (docs/auto-mode.md §2.4).
        Some((key, _)) if key.starts_with("karpenter.k8s.aws/instance-") => format!(
            "the pods select on label {key}, the self-managed provider's, and NodePool {pool} is EKS Auto Mode's, whose nodes carry {} instead (AWS's migration guide renames it): select that in the pods' nodeSelector/affinity",
            key.replacen("karpenter.k8s.aws/", "eks.amazonaws.com/", 1)
        ),
        Some((key, _)) => format!(
            "the pods select on label {key}, which NodePool {pool} neither requires nor sets: declare it on the NodePool (spec.template.metadata.labels, or a requirement with operator In), or drop it from the pods' nodeSelector/affinity"
        ),
        None => format!(
            "the pods' nodeSelector/affinity and NodePool {pool}'s requirements share no value: widen one of them"
        ),
    }
}
