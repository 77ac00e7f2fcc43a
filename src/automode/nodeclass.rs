//! Whether an EKS Auto Mode NodeClass can launch (docs/auto-mode.md §2.2, §7.3). AWS publishes
//! neither the NodeClass's CRD nor its conditions: every condition that is not `True` is quoted
//! as the cluster gives it, and no list of types is assumed beyond `Ready`.

use std::collections::BTreeSet;

use crate::ec2::{Term, select_groups, select_subnets, spec_terms};
use crate::facts::{SecurityGroup, Subnet};
use crate::model::{AutoNodeClass, Condition};

/// A condition `Unknown` this long is stuck: Auto Mode reconciles a NodeClass within seconds.
pub const STUCK_MINUTES: i64 = 10;

/// Why a NodeClass is not Ready, in Auto Mode's words.
#[derive(Clone, Debug, PartialEq)]
pub enum NotReady {
    /// The conditions that are `False`, or `Unknown` for longer than [`STUCK_MINUTES`], with
    /// the root `Ready` last.
    Conditions(Vec<Condition>),
    /// No status at all this long after creation: Auto Mode never reconciled it.
    NeverReconciled,
}

/// `None` when the NodeClass is Ready, or too young (or too briefly Unknown) to judge.
pub fn not_ready(class: &AutoNodeClass, now: jiff::Timestamp) -> Option<NotReady> {
    let bad = |c: &&Condition| {
        c.status == "False" || (c.status == "Unknown" && c.held_longer_than(now, STUCK_MINUTES))
    };
    let Some(ready) = class.status.condition("Ready") else {
        let created = class
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second());
        let old = created.is_some_and(|s| now.as_second() - s > STUCK_MINUTES * 60);
        return old.then_some(NotReady::NeverReconciled);
    };
    if !bad(&ready) {
        return None;
    }
    let mut out: Vec<Condition> = class
        .status
        .conditions
        .iter()
        .filter(|c| c.type_ != "Ready")
        .filter(bad)
        .cloned()
        .collect();
    out.push(ready.clone());
    Some(NotReady::Conditions(out))
}

/// What the NodeClass's selectors pick among the region's subnets and security groups, run as
/// EC2NodeClass selectors run (terms OR'ed, fields AND'ed; docs/auto-mode.md §8.2: Auto Mode's
/// own semantics are not published). `Err` names a malformed field.
pub struct Selected<'a> {
    pub subnet_terms: Vec<Term>,
    pub subnets: Vec<&'a Subnet>,
    pub group_terms: Vec<Term>,
    pub groups: Vec<&'a SecurityGroup>,
    pub pod_subnet_terms: Vec<Term>,
    pub pod_subnets: Vec<&'a Subnet>,
}

pub fn select<'a>(
    class: &AutoNodeClass,
    subnets: &'a [Subnet],
    groups: &'a [SecurityGroup],
) -> Result<Selected<'a>, String> {
    let subnet_terms = spec_terms(&class.spec, "subnetSelectorTerms")?;
    let group_terms = spec_terms(&class.spec, "securityGroupSelectorTerms")?;
    let pod_subnet_terms = spec_terms(&class.spec, "podSubnetSelectorTerms")?;
    Ok(Selected {
        subnets: select_subnets(&subnet_terms, subnets),
        groups: select_groups(&group_terms, groups),
        pod_subnets: select_subnets(&pod_subnet_terms, subnets),
        subnet_terms,
        group_terms,
        pod_subnet_terms,
    })
}

/// The zones of the node subnets with no pod subnet: with `podSubnetSelectorTerms`, a node's
/// pods take addresses only from a pod subnet in its own zone, so pods on nodes there get none
/// (awsdocs/amazon-eks-user-guide#1088).
pub fn zones_without_pod_subnets(s: &Selected<'_>) -> BTreeSet<String> {
    if s.pod_subnet_terms.is_empty() {
        return BTreeSet::new();
    }
    let pods: BTreeSet<&str> = s
        .pod_subnets
        .iter()
        .map(|p| p.availability_zone.as_str())
        .collect();
    s.subnets
        .iter()
        .map(|n| n.availability_zone.as_str())
        .filter(|z| !pods.contains(z))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(spec: serde_json::Value, conditions: serde_json::Value) -> AutoNodeClass {
        serde_json::from_value(json!({
            "apiVersion": "eks.amazonaws.com/v1", "kind": "NodeClass",
            "metadata": {"name": "c", "creationTimestamp": "2026-11-23T09:00:00Z"},
            "spec": spec, "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn subnet(id: &str, zone: &str, role: &str) -> Subnet {
        Subnet {
            subnet_id: id.into(),
            availability_zone: zone.into(),
            tags: [("role".to_string(), role.to_string())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn false_and_stuck_conditions_are_quoted_with_ready_last() {
        let now: jiff::Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        let c = class(
            json!({}),
            json!([
                {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "lastTransitionTime": "2026-11-23T09:10:00Z"},
                {"type": "InstanceProfileReady", "status": "False", "reason": "UnauthorizedNodeRole", "lastTransitionTime": "2026-11-23T09:10:00Z"},
                {"type": "ValidationSucceeded", "status": "Unknown", "reason": "AwaitingReconciliation", "lastTransitionTime": "2026-11-23T09:55:00Z"},
                {"type": "SubnetsReady", "status": "True", "lastTransitionTime": "2026-11-23T09:10:00Z"}
            ]),
        );
        let Some(NotReady::Conditions(cs)) = not_ready(&c, now) else {
            panic!("not ready")
        };
        let types: Vec<&str> = cs.iter().map(|c| c.type_.as_str()).collect();
        // Unknown for five minutes is not stuck yet.
        assert_eq!(types, ["InstanceProfileReady", "Ready"]);
        let ready = class(
            json!({}),
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-23T09:10:00Z"}]),
        );
        assert_eq!(not_ready(&ready, now), None);
        let bare = class(json!({}), json!([]));
        assert_eq!(not_ready(&bare, now), Some(NotReady::NeverReconciled));
        let young: jiff::Timestamp = "2026-11-23T09:05:00Z".parse().unwrap();
        assert_eq!(not_ready(&bare, young), None);
    }

    #[test]
    fn node_zones_without_a_pod_subnet_are_named() {
        let subnets = [
            subnet("subnet-a", "us-west-2a", "nodes"),
            subnet("subnet-b", "us-west-2b", "nodes"),
            subnet("subnet-p", "us-west-2b", "pods"),
        ];
        let c = class(
            json!({"subnetSelectorTerms": [{"tags": {"role": "nodes"}}],
                   "podSubnetSelectorTerms": [{"tags": {"role": "pods"}}]}),
            json!([]),
        );
        let s = select(&c, &subnets, &[]).unwrap();
        assert_eq!(s.subnets.len(), 2);
        assert_eq!(
            zones_without_pod_subnets(&s),
            BTreeSet::from(["us-west-2a".to_string()])
        );
        let plain = class(
            json!({"subnetSelectorTerms": [{"id": "subnet-a"}]}),
            json!([]),
        );
        let s = select(&plain, &subnets, &[]).unwrap();
        assert!(zones_without_pod_subnets(&s).is_empty());
    }
}
