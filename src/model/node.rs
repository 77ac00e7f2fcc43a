//! A Node as the node list keeps it.
//!
//! Every check that reads the list (zone spreads, KD4101's candidates, KD6006, KD6007,
//! `karpdoctor node`) reads a node's name, labels, taints, capacity, allocatable, whether it is
//! Ready and deleting, and Karpenter's do-not-disrupt annotation, nothing else. k8s-openapi's
//! `Node` is about 1.5 KB before its maps, and a cluster of 20,000 nodes lists 20,000 of them
//! (docs/performance.md, "Memory"). Here a node is its fields, with its labels and
//! quantities as [`Labels`] of shared strings.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;
use serde::de::Deserializer;

use super::shared::{Labels, Shared};

/// Karpenter's annotation that keeps a node or pod from voluntary disruption.
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";

/// One Node of a list, cut down to what checks read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListedNode {
    name: Shared,
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// `status.capacity`, quantities as written.
    pub capacity: Labels,
    /// `status.allocatable`, quantities as written.
    pub allocatable: Labels,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    pub deletion_timestamp: Option<Time>,
    /// `karpenter.sh/do-not-disrupt: "true"` on the Node (node annotations take no durations).
    pub do_not_disrupt: bool,
    /// `metadata.finalizers`: Karpenter's `karpenter.sh/termination` on the nodes it manages.
    pub finalizers: Vec<Shared>,
    /// `spec.providerID`, how Karpenter finds a Node's NodeClaim.
    pub provider_id: Option<Shared>,
}

impl ListedNode {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    fn from_wire(w: Wire) -> ListedNode {
        let meta = w.metadata.unwrap_or_default();
        let spec = w.spec.unwrap_or_default();
        let status = w.status.unwrap_or_default();
        ListedNode {
            name: Shared::new(meta.name.as_deref().unwrap_or_default()),
            labels: meta.labels.unwrap_or_default(),
            taints: spec.taints.unwrap_or_default(),
            unschedulable: spec.unschedulable.unwrap_or(false),
            capacity: status.capacity.unwrap_or_default(),
            allocatable: status.allocatable.unwrap_or_default(),
            ready: status
                .conditions
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            deletion_timestamp: meta.deletion_timestamp,
            do_not_disrupt: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(DO_NOT_DISRUPT))
                .is_some_and(|v| v == "true"),
            finalizers: meta
                .finalizers
                .unwrap_or_default()
                .iter()
                .map(|f| Shared::new(f))
                .collect(),
            provider_id: spec
                .provider_id
                .as_deref()
                .filter(|p| !p.is_empty())
                .map(Shared::new),
        }
    }
}

impl From<&k8s_openapi::api::core::v1::Node> for ListedNode {
    /// A Node read on its own, judged as the list's nodes are.
    fn from(node: &k8s_openapi::api::core::v1::Node) -> Self {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let quantities = |m: Option<&BTreeMap<String, Quantity>>| -> Option<Labels> {
            m.map(|m| m.iter().map(|(k, q)| (k.as_str(), q.0.as_str())).collect())
        };
        let strings = |m: Option<&BTreeMap<String, String>>| -> Option<Labels> {
            m.map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        };
        let status = node.status.as_ref();
        let wire = Wire {
            api_version: None,
            kind: None,
            metadata: Some(WireMeta {
                name: node.metadata.name.clone(),
                labels: strings(node.metadata.labels.as_ref()),
                annotations: strings(node.metadata.annotations.as_ref()),
                deletion_timestamp: node.metadata.deletion_timestamp.clone(),
                finalizers: node.metadata.finalizers.clone(),
            }),
            spec: node.spec.as_ref().map(|s| WireSpec {
                taints: s.taints.clone(),
                unschedulable: s.unschedulable,
                provider_id: s.provider_id.clone(),
            }),
            status: Some(WireStatus {
                capacity: quantities(status.and_then(|s| s.capacity.as_ref())),
                allocatable: quantities(status.and_then(|s| s.allocatable.as_ref())),
                conditions: status.and_then(|s| s.conditions.as_ref()).map(|cs| {
                    cs.iter()
                        .map(|c| WireCondition {
                            type_: c.type_.clone(),
                            status: c.status.clone(),
                        })
                        .collect()
                }),
            }),
        };
        ListedNode::from_wire(wire)
    }
}

impl<'de> Deserialize<'de> for ListedNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(d)?;
        wire.check::<D::Error>()?;
        Ok(ListedNode::from_wire(wire))
    }
}

/// A listed Node as it arrives: only the kept fields are decoded, the rest skipped.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<WireMeta>,
    #[serde(default)]
    spec: Option<WireSpec>,
    #[serde(default)]
    status: Option<WireStatus>,
}

impl Wire {
    /// `apiVersion` and `kind`, when present, must be a core Node's, as k8s-openapi requires.
    fn check<E: serde::de::Error>(&self) -> Result<(), E> {
        if self.api_version.as_deref().is_some_and(|v| v != "v1")
            || self.kind.as_deref().is_some_and(|k| k != "Node")
        {
            return Err(E::custom("a listed object is not a v1 Node"));
        }
        Ok(())
    }
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    labels: Option<Labels>,
    #[serde(default)]
    annotations: Option<Labels>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
struct WireSpec {
    #[serde(default)]
    taints: Option<Vec<Taint>>,
    #[serde(default)]
    unschedulable: Option<bool>,
    #[serde(default, rename = "providerID")]
    provider_id: Option<String>,
}

#[derive(Default, Deserialize)]
struct WireStatus {
    #[serde(default)]
    capacity: Option<Labels>,
    #[serde(default)]
    allocatable: Option<Labels>,
    #[serde(default)]
    conditions: Option<Vec<WireCondition>>,
}

#[derive(Deserialize)]
struct WireCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn listed(v: serde_json::Value) -> Vec<ListedNode> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn keeps_what_checks_read_and_shares_equal_strings() {
        let node = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "us-west-2a", "kubernetes.io/hostname": name},
                    "annotations": {"karpenter.sh/do-not-disrupt": "true", "other": "x"},
                    "deletionTimestamp": "2026-11-23T09:00:00Z"},
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "providerID": "aws:///x"},
                "status": {"capacity": {"pods": "110"}, "allocatable": {"pods": "110", "cpu": "1930m"},
                    "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}})
        };
        let nodes = listed(json!([node("a"), node("b")]));
        let a = &nodes[0];
        assert_eq!(a.name(), "a");
        assert_eq!(a.label("kubernetes.io/hostname"), Some("a"));
        assert_eq!(a.label("topology.kubernetes.io/zone"), Some("us-west-2a"));
        assert_eq!(a.label("missing"), None);
        assert_eq!(a.allocatable.get("cpu"), Some("1930m"));
        assert_eq!(a.capacity.get("pods"), Some("110"));
        assert!(a.ready && a.do_not_disrupt && a.is_deleting());
        assert_eq!(a.taints.len(), 1);
        // The zone is one string for both nodes, and the node's name is its hostname label's.
        let zone = |n: &ListedNode| n.label("topology.kubernetes.io/zone").map(str::as_ptr);
        assert_eq!(zone(&nodes[0]), zone(&nodes[1]));
        assert_eq!(
            Some(a.name().as_ptr()),
            a.label("kubernetes.io/hostname").map(str::as_ptr)
        );
    }

    #[test]
    fn a_bare_node_and_nulls_decode_and_only_true_counts() {
        let nodes = listed(json!([
            {"metadata": {"name": "n", "labels": null, "annotations": {"karpenter.sh/do-not-disrupt": "1h"}},
             "spec": null, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
        ]));
        assert!(!nodes[0].ready && !nodes[0].do_not_disrupt && !nodes[0].is_deleting());
        assert!(nodes[0].labels.is_empty());
    }

    #[test]
    fn another_kind_in_the_list_is_refused() {
        let r: Result<Vec<ListedNode>, _> = serde_json::from_value(
            json!([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]),
        );
        assert!(r.is_err());
    }

    #[test]
    fn a_node_read_alone_converts_to_the_same() {
        let v = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "a", "labels": {"z": "1"}},
            "status": {"allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]}});
        let full: k8s_openapi::api::core::v1::Node = serde_json::from_value(v.clone()).unwrap();
        let alone: ListedNode = serde_json::from_value(v).unwrap();
        assert_eq!(ListedNode::from(&full), alone);
    }
}
