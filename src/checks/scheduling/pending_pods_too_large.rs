//! KD8002: pods whose requests, with the DaemonSets' share of each node, exceed what every
//! instance type a compatible NodePool may launch offers ("no instance type has enough
//! resources").

use crate::check::prelude::*;
use crate::checks::common::scheduling::{Code, Outcome, finding, unserved};
use crate::scheduling::Blocked;

declare_check! {
    pub static PENDING_PODS_TOO_LARGE = {
        code: "KD8002",
        slug: "pending-pods-too-large",
        title: "every pending pod fits an instance type its NodePools may launch",
        category: Scheduling,
        severity: Error,
        needs: [PendingPods, Events, EventsByReason, NodeClaims, Pods, PodLogs, PersistentVolumeClaims, PersistentVolumes, StorageClasses, ScheduledPods, Nodes, NodePools, Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings, ControllerDeployments, EksCluster, AutoNodeClasses],
        // The controller's log: its `could not schedule pod` lines, quoted when found.
        evidence: [Pods, PodLogs],
        run: pending_pods_too_large,
    }
}

async fn pending_pods_too_large(cx: &CheckCx) -> CheckResult {
    let groups = unserved(cx).await?.groups;
    let mut findings = Vec::new();
    for group in groups.iter().filter(|g| g.code() == Some(Code::TooLarge)) {
        let Outcome::Unserved(pools) = &group.outcome else {
            continue;
        };
        let sizes: Vec<String> = pools
            .iter()
            .filter_map(|(name, b)| match b {
                Blocked::TooLarge { needs, largest } => Some(format!(
                    "NodePool {name}: with its DaemonSets {needs} is needed, and its largest allowed type is {largest}"
                )),
                _ => None,
            })
            .collect();
        findings.push(
            finding(
                group,
                format!(
                    "{}: too large for every instance type a compatible NodePool may launch ({})",
                    group.waiting(),
                    sizes.join("; ")
                ),
            )
            .hint("allow larger instance types in the NodePool (its karpenter.k8s.aws/instance-size, -cpu or -family requirements), or lower the pods' requests; the figures are what Karpenter computes before launch (capacity less the VM's overhead, kube-reserved and the eviction threshold)"),
        );
    }
    Ok(findings)
}
