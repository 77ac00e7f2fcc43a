//! KD8003: pods pinned to zones (a bound volume, a zonal nodeSelector or affinity) where no
//! compatible NodePool's EC2NodeClass has a subnet.

use crate::check::prelude::*;
use crate::checks::common::scheduling::{Code, Outcome, finding, unserved};
use crate::scheduling::Blocked;

declare_check! {
    pub static PENDING_PODS_ZONE_UNREACHABLE = {
        code: "KD8003",
        slug: "pending-pods-zone-unreachable",
        title: "every pending pod's zones have a subnet its NodePools can launch in",
        category: Scheduling,
        severity: Error,
        needs: [PendingPods, Events, NodeClaims, PersistentVolumeClaims, PersistentVolumes, StorageClasses, NodePools, Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings, ControllerDeployments],
        run: pending_pods_zone_unreachable,
    }
}

async fn pending_pods_zone_unreachable(cx: &CheckCx) -> CheckResult {
    let groups = unserved(cx).await?;
    let mut findings = Vec::new();
    for group in groups
        .iter()
        .filter(|g| g.code() == Some(Code::ZoneUnreachable))
    {
        let Outcome::Unserved(pools) = &group.outcome else {
            continue;
        };
        let zoned: Vec<(&String, &Vec<String>, &Vec<String>)> = pools
            .iter()
            .filter_map(|(name, b)| match b {
                Blocked::Zones { wanted, offered } => Some((name, wanted, offered)),
                _ => None,
            })
            .collect();
        let Some((_, wanted, _)) = zoned.first() else {
            continue;
        };
        let wanted = if wanted.is_empty() {
            "no zone at all (their volumes are in different zones)".to_string()
        } else {
            wanted.join(", ")
        };
        let pools_text: Vec<String> = zoned
            .iter()
            .map(|(name, _, offered)| {
                format!("NodePool {name} launches only in {}", offered.join(", "))
            })
            .collect();
        findings.push(
            finding(
                group,
                format!(
                    "{}: {} may run only in {wanted}, and no compatible NodePool has a subnet there ({})",
                    group.waiting(),
                    if group.pods.len() == 1 { "it" } else { "they" },
                    pools_text.join("; ")
                ),
            )
            .hint("tag a subnet in that zone for the EC2NodeClass's subnetSelectorTerms (and check the NodePool's topology.kubernetes.io/zone requirement), or move the pods' volume or zone pin to a zone the EC2NodeClass reaches; a volume bound in one zone keeps its pod there"),
        );
    }
    Ok(findings)
}
