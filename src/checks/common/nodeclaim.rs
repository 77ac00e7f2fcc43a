//! What a NodeClaim says about itself: its name in findings, its NodePool, and a lifecycle
//! step that takes too long.

use crate::model::{Condition, NodeClaim, object_ref};

/// How long a lifecycle step may take before it counts as failed: launches take seconds,
/// registration a minute or two; Karpenter itself gives up after 5 and 15 minutes.
pub const STUCK_MINUTES: i64 = 5;

/// A NodeClaim condition that is not True and has been so for longer than a launch or a
/// registration takes; `AwaitingReconciliation` right after creation does not count.
pub fn stuck<'a>(claim: &'a NodeClaim, type_: &str, now: jiff::Timestamp) -> Option<&'a Condition> {
    let c = claim.status.condition(type_)?;
    (c.status != "True" && c.held_longer_than(now, STUCK_MINUTES)).then_some(c)
}

pub fn object(claim: &NodeClaim) -> String {
    object_ref("NodeClaim", &claim.metadata)
}

/// The NodePool a NodeClaim belongs to (its label).
pub fn pool_of(claim: &NodeClaim) -> &str {
    claim
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("karpenter.sh/nodepool"))
        .map(String::as_str)
        .unwrap_or("")
}
