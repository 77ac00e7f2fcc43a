//! Spot capacity: which NodePools may launch spot, and the service-linked role EC2 launches
//! spot instances through (KD4004, KD3010, KD7003, KD2202).

use crate::arn::Arn;
use crate::model::NodePool;

/// The Spot service-linked role's name (created by `iam:CreateServiceLinkedRole` for
/// `spot.amazonaws.com`).
pub const SPOT_ROLE: &str = "AWSServiceRoleForEC2Spot";

/// The Spot service-linked role's ARN in the cluster's account.
pub fn spot_role_arn(cluster: &Arn) -> String {
    format!(
        "arn:{}:iam::{}:role/aws-service-role/spot.amazonaws.com/{SPOT_ROLE}",
        cluster.partition, cluster.account
    )
}

/// Whether a NodePool may launch spot. Without a capacity-type requirement Karpenter launches
/// on-demand only.
pub fn allows_spot(pool: &NodePool) -> bool {
    allows_capacity(pool, "spot")
}

/// Whether a NodePool may launch capacity of this type (`spot`, `on-demand`, `reserved`): the
/// last `karpenter.sh/capacity-type` requirement decides; without one, on-demand only.
pub fn allows_capacity(pool: &NodePool, kind: &str) -> bool {
    let mut allowed = kind == "on-demand";
    for r in &pool.spec.template.spec.requirements {
        if r.key != "karpenter.sh/capacity-type" {
            continue;
        }
        allowed = match r.operator.as_str() {
            "In" => r.values.iter().any(|v| v == kind),
            "NotIn" => !r.values.iter().any(|v| v == kind),
            "Exists" => true,
            _ => false,
        };
    }
    allowed
}
