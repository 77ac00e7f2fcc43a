//! Nodes replaced far more often than their NodePool intends (KD4103; docs/disruption.md §6),
//! as far as one snapshot shows it: a replacement that drifts again minutes after launch
//! because something outside Karpenter changes its instance's security groups, and
//! consolidation that removes nodes it launched minutes before because `consolidateAfter` is
//! shorter than the pods take to start. Rates over days need the history of several runs.

use crate::model::{NodeClaim, NodePool};

/// Minutes after launch within which drift means the launch itself drifts: Karpenter checks
/// drift every few minutes, so a replacement that drifts this soon will drift again.
pub const DRIFT_SOON_MINUTES: i64 = 30;
/// Minutes after launch within which consolidating a node means it was judged before its pods
/// settled.
pub const CONSOLIDATED_SOON_MINUTES: i64 = 10;

fn minutes_between(from: jiff::Timestamp, to: &str) -> Option<i64> {
    let to: jiff::Timestamp = to.parse().ok()?;
    Some(to.duration_since(from).as_secs() / 60)
}

/// How many minutes after its launch the claim drifted for `SecurityGroupDrift`, when that is
/// within [`DRIFT_SOON_MINUTES`].
pub fn security_groups_drifted_soon(claim: &NodeClaim) -> Option<i64> {
    let created = claim.metadata.creation_timestamp.as_ref()?.0;
    let drifted = claim
        .status
        .condition("Drifted")
        .filter(|c| c.status == "True" && c.reason == "SecurityGroupDrift")?;
    let after = minutes_between(created, drifted.last_transition_time.as_deref()?)?;
    (0..=DRIFT_SOON_MINUTES).contains(&after).then_some(after)
}

/// Seconds in a `consolidateAfter` as the CRD admits it (`^(([0-9]+(s|m|h))+|Never)$`); `None`
/// for `Never` or anything else.
pub fn seconds(d: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    for ch in d.chars() {
        match ch {
            '0'..='9' => digits.push(ch),
            's' | 'm' | 'h' => {
                let n: u64 = digits.parse().ok()?;
                digits.clear();
                let unit = match ch {
                    's' => 1,
                    'm' => 60,
                    _ => 3600,
                };
                total = total.checked_add(n.checked_mul(unit)?)?;
            }
            _ => return None,
        }
    }
    digits.is_empty().then_some(total)
}

/// The pool's `consolidateAfter` in seconds when consolidation of nodes with pods is on
/// (`WhenEmptyOrUnderutilized`; the API's default policy and its default `0s` when unset).
pub fn consolidate_after_underutilized(pool: &NodePool) -> Option<u64> {
    let d = pool.spec.disruption.as_ref();
    let policy = d.and_then(|d| d.consolidation_policy.as_deref());
    if !matches!(
        policy,
        None | Some("WhenEmptyOrUnderutilized" | "WhenUnderutilized")
    ) {
        return None;
    }
    seconds(
        d.and_then(|d| d.consolidate_after.as_deref())
            .unwrap_or("0s"),
    )
}

/// How many minutes after its launch Karpenter began consolidating the claim (its
/// `DisruptionReason` condition, 1.2+, `Underutilized` or `Empty`), when within
/// [`CONSOLIDATED_SOON_MINUTES`].
pub fn consolidated_soon(claim: &NodeClaim) -> Option<i64> {
    let created = claim.metadata.creation_timestamp.as_ref()?.0;
    let c = claim
        .status
        .condition("DisruptionReason")
        .filter(|c| c.status == "True" && matches!(c.reason.as_str(), "Underutilized" | "Empty"))?;
    let after = minutes_between(created, c.last_transition_time.as_deref()?)?;
    (0..=CONSOLIDATED_SOON_MINUTES)
        .contains(&after)
        .then_some(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(created: &str, cond: serde_json::Value) -> NodeClaim {
        serde_json::from_value(json!({"metadata":{"name":"c","creationTimestamp":created},"status":{"conditions":[cond]}})).unwrap()
    }

    #[test]
    fn a_launch_that_drifts_for_its_security_groups_within_minutes() {
        let c = claim(
            "2026-11-23T09:00:00Z",
            json!({"type":"Drifted","status":"True","reason":"SecurityGroupDrift","message":"","lastTransitionTime":"2026-11-23T09:06:00Z"}),
        );
        assert_eq!(security_groups_drifted_soon(&c), Some(6));
        let late = claim(
            "2026-11-20T09:00:00Z",
            json!({"type":"Drifted","status":"True","reason":"SecurityGroupDrift","message":"","lastTransitionTime":"2026-11-23T09:06:00Z"}),
        );
        assert_eq!(security_groups_drifted_soon(&late), None);
        let ami = claim(
            "2026-11-23T09:00:00Z",
            json!({"type":"Drifted","status":"True","reason":"AMIDrift","message":"","lastTransitionTime":"2026-11-23T09:06:00Z"}),
        );
        assert_eq!(security_groups_drifted_soon(&ami), None);
    }

    #[test]
    fn consolidate_after_as_the_crd_writes_it() {
        assert_eq!(seconds("0s"), Some(0));
        assert_eq!(seconds("1m30s"), Some(90));
        assert_eq!(seconds("1h"), Some(3600));
        assert_eq!(seconds("Never"), None);
        assert_eq!(seconds("5"), None);
        let c = claim(
            "2026-11-23T09:00:00Z",
            json!({"type":"DisruptionReason","status":"True","reason":"Underutilized","message":"","lastTransitionTime":"2026-11-23T09:02:00Z"}),
        );
        assert_eq!(consolidated_soon(&c), Some(2));
    }
}
