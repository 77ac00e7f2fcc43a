//! Whether an Auto Mode node role may join its nodes (docs/auto-mode.md §3.3, §7.5). EKS Auto
//! Mode authorizes a node through an access entry of type `EC2` carrying the cluster access policy
//! `AmazonEKSAutoNodePolicy` at cluster scope; EKS creates that entry itself only for the role of
//! the built-in pools. A principal has one access entry, and its type cannot be changed.

use crate::arn::pathless_role;
use crate::facts::{AccessEntry, AssociatedAccessPolicy};

/// The access policy Auto Mode's nodes need.
pub const AUTO_NODE_POLICY: &str = "AmazonEKSAutoNodePolicy";

/// The verdict on one node role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeAccess {
    /// An `EC2` entry with the node policy at cluster scope.
    Authorized,
    /// No access entry for the role.
    NoEntry,
    /// An entry of another type (`EC2_LINUX`, `STANDARD`, …), which cannot be changed.
    WrongType(String),
    /// An `EC2` entry without the node policy at cluster scope (`Some(scope)`: associated, but
    /// only for namespaces).
    NoPolicy { namespaced: bool },
}

/// The entry of `role_arn` among `entries`: by the ARN as IAM gives it, or without its path
/// (an entry may name a role either way; aws/containers-roadmap#2486).
pub fn entry_of<'e>(entries: &'e [AccessEntry], role_arn: &str) -> Option<&'e AccessEntry> {
    let pathless = pathless_role(role_arn);
    entries
        .iter()
        .find(|e| e.principal_arn == role_arn || pathless_role(&e.principal_arn) == pathless)
}

/// Judges one role's entry; `policies` are the entry's associations (read only for `EC2`).
pub fn judge(entry: Option<&AccessEntry>, policies: &[AssociatedAccessPolicy]) -> NodeAccess {
    let Some(entry) = entry else {
        return NodeAccess::NoEntry;
    };
    if entry.kind != "EC2" {
        return NodeAccess::WrongType(entry.kind.clone());
    }
    let node: Vec<&AssociatedAccessPolicy> = policies
        .iter()
        .filter(|p| p.policy_arn.ends_with(&format!("/{AUTO_NODE_POLICY}")))
        .collect();
    if node.iter().any(|p| p.scope == "cluster") {
        NodeAccess::Authorized
    } else {
        NodeAccess::NoPolicy {
            namespaced: !node.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(arn: &str, kind: &str) -> AccessEntry {
        AccessEntry {
            principal_arn: arn.into(),
            kind: kind.into(),
            ..Default::default()
        }
    }

    fn policy(name: &str, scope: &str) -> AssociatedAccessPolicy {
        AssociatedAccessPolicy {
            policy_arn: format!("arn:aws:eks::aws:cluster-access-policy/{name}"),
            scope: scope.into(),
            namespaces: Vec::new(),
        }
    }

    #[test]
    fn only_an_ec2_entry_with_the_node_policy_at_cluster_scope_authorizes() {
        let e = entry("arn:aws:iam::1:role/Node", "EC2");
        assert_eq!(
            judge(Some(&e), &[policy(AUTO_NODE_POLICY, "cluster")]),
            NodeAccess::Authorized
        );
        assert_eq!(judge(None, &[]), NodeAccess::NoEntry);
        assert_eq!(
            judge(Some(&entry("arn:aws:iam::1:role/Node", "EC2_LINUX")), &[]),
            NodeAccess::WrongType("EC2_LINUX".into())
        );
        assert_eq!(
            judge(Some(&e), &[policy("AmazonEKSViewPolicy", "cluster")]),
            NodeAccess::NoPolicy { namespaced: false }
        );
        assert_eq!(
            judge(Some(&e), &[policy(AUTO_NODE_POLICY, "namespace")]),
            NodeAccess::NoPolicy { namespaced: true }
        );
    }

    #[test]
    fn a_role_matches_its_entry_with_or_without_its_path() {
        let entries = [entry("arn:aws:iam::1:role/Node", "EC2")];
        assert!(entry_of(&entries, "arn:aws:iam::1:role/teams/a/Node").is_some());
        assert!(entry_of(&entries, "arn:aws:iam::1:role/Other").is_none());
        let with_path = [entry("arn:aws:iam::1:role/teams/Node", "EC2")];
        assert!(entry_of(&with_path, "arn:aws:iam::1:role/teams/Node").is_some());
    }
}
