//! Karpenter's estimate of a node against the node it became (KD6006; rules and sources:
//! docs/node-capacity.md §4). Karpenter writes a NodeClaim's `status.capacity` and
//! `status.allocatable` once, at launch, from the instance type; it nominates pods to the claim
//! by that estimate until the Node registers, and by the Node's own figures after. An estimate
//! above the node sends pods to a node they then do not fit on, and Karpenter launches again.

use std::collections::BTreeMap;

use crate::quantity::Quantity;

/// Resources by name, as quantities.
pub type Resources = BTreeMap<String, Quantity>;

/// The resources judged: what pods request and Karpenter packs by. Ephemeral storage depends on
/// the root volume and the instance-store policy, and is left out as noise.
pub const JUDGED: [&str; 3] = ["cpu", "memory", "pods"];

/// Where a gap comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The instance reports less than Karpenter assumed (memory: the VM's overhead).
    Capacity,
    /// The node keeps back more than Karpenter assumed (kube-reserved, system-reserved,
    /// eviction, or fewer pods).
    Reserved,
}

/// One resource whose estimate is above the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub resource: &'static str,
    /// Karpenter's allocatable, and the node's.
    pub planned: Quantity,
    pub actual: Quantity,
    /// How much less capacity the node has than Karpenter assumed, and how much more it keeps
    /// back; zero when a side's capacity is unknown.
    pub capacity_short: Quantity,
    pub reserved_more: Quantity,
    pub part: Part,
}

/// Below these a gap is rounding, not a node pods miss: Karpenter and nodeadm round the CPU
/// ladder's fractions of a millicore differently, and memory is reported in Ki by the kubelet and
/// Mi by Karpenter. Memory counts from 1% of the estimate (core#1185's node is 2.3% short).
const CPU_SLACK: Quantity = Quantity::milli(5);
const MEMORY_PERCENT: i128 = 1;

/// The resources whose estimate is above the node, in [`JUDGED`] order. A resource either side
/// does not state is not judged.
pub fn gaps(
    claim_capacity: &Resources,
    claim_allocatable: &Resources,
    node_capacity: &Resources,
    node_allocatable: &Resources,
) -> Vec<Gap> {
    let mut out = Vec::new();
    for resource in JUDGED {
        let (Some(&planned), Some(&actual)) = (
            claim_allocatable.get(resource),
            node_allocatable.get(resource),
        ) else {
            continue;
        };
        let gap = planned.saturating_sub(actual);
        let counts = match resource {
            "cpu" => gap > CPU_SLACK,
            "memory" => gap.percent_of(planned).is_some_and(|p| p >= MEMORY_PERCENT),
            _ => gap.is_positive(),
        };
        if !counts {
            continue;
        }
        let (capacity_short, reserved_more) =
            match (claim_capacity.get(resource), node_capacity.get(resource)) {
                (Some(&cc), Some(&nc)) => (
                    cc.saturating_sub(nc),
                    nc.saturating_sub(actual)
                        .saturating_sub(cc.saturating_sub(planned)),
                ),
                _ => (Quantity::ZERO, Quantity::ZERO),
            };
        let part = if capacity_short.is_positive() && capacity_short >= reserved_more {
            Part::Capacity
        } else {
            Part::Reserved
        };
        out.push(Gap {
            resource,
            planned,
            actual,
            capacity_short,
            reserved_more,
            part,
        });
    }
    out
}

/// The kubelet settings a user data script sets that Karpenter cannot see, by the names they
/// take in kubelet flags, nodeadm's `NodeConfig` and Bottlerocket's TOML. A node whose
/// reservations come from there differs from the estimate; `spec.kubelet` is where Karpenter
/// reads them.
pub fn user_data_reservations(user_data: &str) -> Vec<&'static str> {
    const SETTINGS: &[(&str, &[&str])] = &[
        ("kube-reserved", &["kube-reserved", "kubeReserved"]),
        ("system-reserved", &["system-reserved", "systemReserved"]),
        ("eviction-hard", &["eviction-hard", "evictionHard"]),
        ("max-pods", &["max-pods", "maxPods"]),
    ];
    SETTINGS
        .iter()
        .filter(|(_, spellings)| spellings.iter().any(|s| user_data.contains(s)))
        .map(|(name, _)| *name)
        .collect()
}

/// The `spec.kubelet` field a user-data setting belongs in.
pub fn kubelet_field(setting: &str) -> &'static str {
    match setting {
        "kube-reserved" => "kubeReserved",
        "system-reserved" => "systemReserved",
        "eviction-hard" => "evictionHard",
        _ => "maxPods",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(pairs: &[(&str, &str)]) -> Resources {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn an_estimate_at_or_below_the_node_is_no_gap() {
        // aws#6611: i4i.32xlarge, Karpenter's memory far below the node's.
        let claim = res(&[("cpu", "127610m"), ("memory", "961470Mi"), ("pods", "737")]);
        let node = res(&[("cpu", "127610m"), ("memory", "1007423Mi"), ("pods", "737")]);
        assert!(gaps(&claim, &claim, &node, &node).is_empty());
    }

    #[test]
    fn memory_short_of_the_estimate_by_the_vm_overhead_is_capacity() {
        // core#1185 / aws#4163 shape: c5.large, estimate 3104Mi allocatable, node 3034Mi.
        let cc = res(&[("cpu", "2"), ("memory", "3518Mi"), ("pods", "29")]);
        let ca = res(&[("cpu", "1930m"), ("memory", "3104Mi"), ("pods", "29")]);
        let nc = res(&[("cpu", "2"), ("memory", "3448Mi"), ("pods", "29")]);
        let na = res(&[("cpu", "1930m"), ("memory", "3034Mi"), ("pods", "29")]);
        let g = gaps(&cc, &ca, &nc, &na);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].resource, "memory");
        assert_eq!(g[0].part, Part::Capacity);
        assert_eq!(g[0].capacity_short, Quantity::mebibytes(70));
        assert_eq!(g[0].reserved_more, Quantity::ZERO);
    }

    #[test]
    fn a_node_that_keeps_back_more_is_reserved() {
        // aws#5104 shape: eviction-hard 5% in user data, capacity as assumed.
        let cc = res(&[("memory", "7577Mi")]);
        let ca = res(&[("memory", "6903Mi")]);
        let nc = res(&[("memory", "7748Mi")]);
        let na = res(&[("memory", "6700Mi")]);
        let g = gaps(&cc, &ca, &nc, &na);
        assert_eq!(g[0].part, Part::Reserved);
        assert_eq!(g[0].reserved_more, Quantity::mebibytes(374));
    }

    #[test]
    fn rounding_is_not_a_gap_but_one_pod_is() {
        let claim = res(&[("cpu", "1930m"), ("memory", "6903Mi"), ("pods", "29")]);
        let node = res(&[("cpu", "1927m"), ("memory", "6900Mi"), ("pods", "28")]);
        let g = gaps(&claim, &claim, &node, &node);
        assert_eq!(g.iter().map(|g| g.resource).collect::<Vec<_>>(), ["pods"]);
    }

    #[test]
    fn user_data_settings_are_named_in_any_spelling() {
        let toml = "[settings.kubernetes.eviction-hard]\n\"memory.available\" = \"5%\"\n";
        assert_eq!(user_data_reservations(toml), ["eviction-hard"]);
        let nodeadm = "kubelet:\n  config:\n    maxPods: 110\n    kubeReserved:\n      cpu: 100m\n";
        assert_eq!(
            user_data_reservations(nodeadm),
            ["kube-reserved", "max-pods"]
        );
        assert!(user_data_reservations("#!/bin/bash\necho hi\n").is_empty());
    }
}
