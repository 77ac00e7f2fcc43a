//! KD8003: pods pinned to zones (a bound volume, a zonal nodeSelector or affinity, a
//! `DoNotSchedule` zone spread) where no compatible NodePool's EC2NodeClass has a subnet.

use std::collections::BTreeSet;

use crate::check::prelude::*;
use crate::checks::common::scheduling::{Code, Outcome, finding, unserved};
use crate::scheduling::Blocked;
use crate::scheduling::spread::ZoneSpread;

declare_check! {
    pub static PENDING_PODS_ZONE_UNREACHABLE = {
        code: "KD8003",
        slug: "pending-pods-zone-unreachable",
        title: "every pending pod's zones have a subnet its NodePools can launch in",
        category: Scheduling,
        severity: Error,
        needs: [PendingPods, Events, EventsByReason, NodeClaims, Pods, PodLogs, PersistentVolumeClaims, PersistentVolumes, StorageClasses, ScheduledPods, Nodes, NodePools, Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings, ControllerDeployments, EksCluster, AutoNodeClasses],
        // The controller's log: its `could not schedule pod` lines, quoted when found.
        evidence: [Pods, PodLogs],
        run: pending_pods_zone_unreachable,
    }
}

/// One NodePool that stopped at the zone step: its name, the zones the pod may run in, the
/// zones it launches in, and the spreads that narrowed them.
struct Zoned<'a> {
    pool: &'a String,
    wanted: &'a Vec<String>,
    offered: &'a Vec<String>,
    spread: &'a Vec<ZoneSpread>,
}

async fn pending_pods_zone_unreachable(cx: &CheckCx) -> CheckResult {
    let groups = unserved(cx).await?.groups;
    let mut findings = Vec::new();
    for group in groups
        .iter()
        .filter(|g| g.code() == Some(Code::ZoneUnreachable))
    {
        let Outcome::Unserved(pools) = &group.outcome else {
            continue;
        };
        let zoned: Vec<Zoned<'_>> = pools
            .iter()
            .filter_map(|(pool, b)| match b {
                Blocked::Zones {
                    wanted,
                    offered,
                    spread,
                } => Some(Zoned {
                    pool,
                    wanted,
                    offered,
                    spread,
                }),
                _ => None,
            })
            .collect();
        let Some(Zoned { wanted, .. }) = zoned.first() else {
            continue;
        };
        let wanted_text = if wanted.is_empty() {
            "no zone at all (their volumes or spreads leave none)".to_string()
        } else {
            wanted.join(", ")
        };
        let pools_text: Vec<String> = zoned
            .iter()
            .map(|z| {
                format!(
                    "NodePool {} launches only in {}",
                    z.pool,
                    z.offered.join(", ")
                )
            })
            .collect();
        // A spread that narrowed some pool's zones explains the pin better than anything.
        let spread = zoned.iter().find_map(|z| z.spread.first());
        let f = match spread {
            None => finding(
                group,
                format!(
                    "{}: {} may run only in {wanted_text}, and no compatible NodePool has a subnet there ({})",
                    group.waiting(),
                    if group.pods.len() == 1 { "it" } else { "they" },
                    pools_text.join("; ")
                ),
            )
            .hint("tag a subnet in that zone for the EC2NodeClass's subnetSelectorTerms (and check the NodePool's topology.kubernetes.io/zone requirement), or move the pods' volume or zone pin to a zone the EC2NodeClass reaches; a volume bound in one zone keeps its pod there"),
            Some(s) => {
                let reachable: BTreeSet<&String> =
                    zoned.iter().flat_map(|z| z.offered.iter()).collect();
                // Why the zones the spread allows count at all, when no pool reaches them.
                let origins: Vec<String> = s
                    .allowed
                    .iter()
                    .filter(|z| !reachable.contains(z))
                    .map(|z| {
                        let why = s.origins.get(z).cloned().unwrap_or_default();
                        format!("{z} counts because {}", why.join(" and "))
                    })
                    .collect();
                finding(
                    group,
                    format!(
                        "{}: {} {}, where no compatible NodePool has a subnet ({}){}",
                        group.waiting(),
                        if group.pods.len() == 1 { "its" } else { "their" },
                        s.describe(),
                        pools_text.join("; "),
                        if origins.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", origins.join("; "))
                        }
                    ),
                )
                .evidence("topologySpread", serde_json::json!({
                    "maxSkew": s.max_skew,
                    "selector": s.selector,
                    "counts": s.counts,
                    "allowed": s.allowed,
                }))
                .hint("Karpenter counts every zone a NodePool's requirement names and every zone a matching node is in, subnet or not, and the emptiest zone sets the pace: tag a subnet in that zone for the EC2NodeClass, or remove the zone from the NodePool's topology.kubernetes.io/zone requirement; for nodes Karpenter does not manage, let a NodePool reach their zone or narrow which nodes count (nodeAffinityPolicy, or a nodeSelector the spread honours); whenUnsatisfiable: ScheduleAnyway makes the spread a preference")
            }
        };
        findings.push(f);
    }
    Ok(findings)
}
