//! Why a NodeClaim Karpenter is deleting is still there (KD4102; docs/disruption.md §5).
//! Deletion runs in steps, each behind the one before: the NodeClaim deletes its Node; the
//! Node's finalizer drains its pods, waits for its volumes to detach and terminates the
//! instance; the NodeClaim's finalizer waits for the instance to be gone. Without
//! `terminationGracePeriod` no step has a time limit, so the first step that cannot finish holds
//! the node forever. This finds that step from the objects' state.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::VolumeAttachment;

use super::pods::{PdbBlock, do_not_disrupt, owned_by, pdb_blocks, pod_id};
use crate::model::{ListedNode, NodeClaim};

/// Karpenter's own finalizer on NodeClaims and Nodes.
pub const FINALIZER: &str = "karpenter.sh/termination";
/// Written on a deleting NodeClaim with `terminationGracePeriod`: when pods will be deleted
/// whatever blocks them.
pub const TERMINATION_TIMESTAMP: &str = "karpenter.sh/nodeclaim-termination-timestamp";

/// Minutes a deletion may take before it counts as stuck: a drain of a busy node takes
/// minutes, an instance's termination one or two.
pub const STUCK_MINUTES: i64 = 15;

/// What holds a deleting NodeClaim, in the order deletion meets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// The NodeClaim is deleting but its Node is not: Karpenter deletes the Node first, so
    /// the controller is not reconciling the claim.
    NodeNotDeleted,
    /// Pods Karpenter never evicts: they carry `karpenter.sh/do-not-disrupt: "true"`.
    DoNotDisrupt { pods: Vec<String> },
    /// A PodDisruptionBudget that allows no disruption now covers pods on the node.
    Pdb {
        pdb: String,
        pods: Vec<String>,
        limit: String,
        /// The PDB can never allow a disruption (KD4104's finding), not just none now.
        never: bool,
    },
    /// A pod covered by more than one PodDisruptionBudget: the eviction API refuses it.
    SeveralPdbs { pod: String, pdbs: Vec<String> },
    /// VolumeAttachments of the node that are not detached.
    Volumes { attachments: Vec<String> },
    /// Karpenter asked EC2 to terminate the instance and it is still not gone.
    InstanceTerminating { since: String },
    /// Finalizers of other controllers, which Karpenter waits for.
    Finalizers {
        object: String,
        finalizers: Vec<String>,
    },
    /// Nothing in the snapshot explains it.
    Unexplained,
}

/// The state a deleting claim is judged from.
pub struct Deleting<'a> {
    pub claim: &'a NodeClaim,
    /// Its Node, when it still exists.
    pub node: Option<&'a Node>,
    /// Pods bound to the node.
    pub pods: &'a [Pod],
    pub pdbs: &'a [PodDisruptionBudget],
    pub attachments: &'a [VolumeAttachment],
}

fn age_minutes(t: &str, now: jiff::Timestamp) -> Option<i64> {
    let t: jiff::Timestamp = t.parse().ok()?;
    Some(now.duration_since(t).as_secs() / 60)
}

/// Whether the claim has been deleting longer than a deletion takes. With
/// `terminationGracePeriod` Karpenter forces the deletion at the annotated time, so only a
/// claim past that time (by the same margin) is stuck.
pub fn stuck(claim: &NodeClaim, now: jiff::Timestamp) -> bool {
    let Some(deleted) = claim.metadata.deletion_timestamp.as_ref() else {
        return false;
    };
    let deleted_for = now.duration_since(deleted.0).as_secs() / 60;
    if deleted_for <= STUCK_MINUTES {
        return false;
    }
    let forced_at = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TERMINATION_TIMESTAMP));
    match forced_at {
        Some(at) => age_minutes(at, now).is_some_and(|m| m > STUCK_MINUTES),
        None => true,
    }
}

/// A Node Karpenter's finalizer holds while no NodeClaim is left to finish its deletion.
#[derive(Clone, Debug, PartialEq)]
pub struct Orphan<'a> {
    pub node: &'a ListedNode,
    /// Minutes since the Node's deletion.
    pub minutes: i64,
}

/// Nodes deleting for over [`STUCK_MINUTES`] that carry [`FINALIZER`] and have no NodeClaim
/// (none names the Node in `status.nodeName` or has its provider ID). Karpenter's node
/// termination looks the NodeClaim up by provider ID and, when there is none, logs "failed to
/// terminate node" and stops (core: `node/termination` controller, `IsNodeClaimNotFoundError`):
/// its finalizer never comes off. The NodeClaim is gone because someone removed its finalizer
/// or deleted it while the controller was down.
pub fn orphaned_nodes<'a>(
    nodes: &'a [ListedNode],
    claims: &[NodeClaim],
    now: jiff::Timestamp,
) -> Vec<Orphan<'a>> {
    let claimed = |n: &ListedNode| {
        claims.iter().any(|c| {
            c.status.node_name.as_deref() == Some(n.name())
                || (n.provider_id.is_some()
                    && c.status.provider_id.as_deref() == n.provider_id.as_deref())
        })
    };
    nodes
        .iter()
        .filter(|n| n.finalizers.iter().any(|f| &**f == FINALIZER))
        .filter_map(|n| {
            let deleted = n.deletion_timestamp.as_ref()?;
            let minutes = now.duration_since(deleted.0).as_secs() / 60;
            (minutes > STUCK_MINUTES && !claimed(n)).then_some(Orphan { node: n, minutes })
        })
        .collect()
}

/// The pods the drain waits for: not finished, not a DaemonSet's (they tolerate the
/// disrupted taint in the usual install and are evicted last), not a static pod, and not
/// already stuck terminating for over a minute (the drain stops waiting for those).
fn drained(p: &Pod, now: jiff::Timestamp) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    if owned_by(p, "DaemonSet") || owned_by(p, "Node") {
        return false;
    }
    p.metadata
        .deletion_timestamp
        .as_ref()
        .is_none_or(|d| now.duration_since(d.0).as_secs() <= 60)
}

fn foreign<S: AsRef<str>>(finalizers: Option<&Vec<S>>) -> Vec<String> {
    finalizers
        .into_iter()
        .flatten()
        .map(AsRef::as_ref)
        .filter(|f| *f != FINALIZER)
        .map(str::to_string)
        .collect()
}

/// Everything that holds the claim, the step deletion is at first. Empty only for a claim
/// that is not deleting.
pub fn blockers(d: &Deleting, now: jiff::Timestamp) -> Vec<Blocker> {
    let mut out = Vec::new();
    let claim = d.claim;
    if claim.metadata.deletion_timestamp.is_none() {
        return out;
    }
    if let Some(node) = d.node {
        let node_name = node.metadata.name.as_deref().unwrap_or("");
        if node.metadata.deletion_timestamp.is_none() {
            out.push(Blocker::NodeNotDeleted);
            return out;
        }
        // The drain: pods that will never leave.
        let waiting: Vec<&Pod> = d.pods.iter().filter(|p| drained(p, now)).collect();
        let pinned: Vec<String> = waiting
            .iter()
            .filter(|p| do_not_disrupt(p))
            .map(|p| pod_id(p))
            .collect();
        if !pinned.is_empty() {
            out.push(Blocker::DoNotDisrupt { pods: pinned });
        }
        let mut at_zero = Vec::new();
        for b in pdb_blocks(waiting.iter().copied(), d.pdbs) {
            match b {
                PdbBlock::Several { pod, pdbs } => out.push(Blocker::SeveralPdbs { pod, pdbs }),
                PdbBlock::AtZero {
                    pdb,
                    limit,
                    never,
                    pods,
                } => at_zero.push(Blocker::Pdb {
                    pdb,
                    pods,
                    limit,
                    never,
                }),
            }
        }
        at_zero.sort_by_key(|b| match b {
            Blocker::Pdb { pdb, .. } => pdb.clone(),
            _ => String::new(),
        });
        out.extend(at_zero);
        // The volumes, once the pods are gone.
        let attachments: Vec<String> = d
            .attachments
            .iter()
            .filter(|a| a.spec.node_name == node_name)
            .map(|a| {
                let pv = a
                    .spec
                    .source
                    .persistent_volume_name
                    .as_deref()
                    .unwrap_or("?");
                format!(
                    "{} (PV {pv}, {})",
                    a.metadata.name.as_deref().unwrap_or(""),
                    a.spec.attacher
                )
            })
            .collect();
        if !attachments.is_empty() && out.is_empty() {
            out.push(Blocker::Volumes { attachments });
        }
        let theirs = foreign(node.metadata.finalizers.as_ref());
        if !theirs.is_empty() {
            out.push(Blocker::Finalizers {
                object: format!("Node/{node_name}"),
                finalizers: theirs,
            });
        }
    }
    if let Some(t) = claim.status.condition("InstanceTerminating")
        && t.status == "True"
        && t.held_longer_than(now, STUCK_MINUTES)
        && out.is_empty()
    {
        out.push(Blocker::InstanceTerminating {
            since: t
                .last_transition_time
                .as_deref()
                .unwrap_or_default()
                .to_string(),
        });
    }
    let theirs = foreign(claim.metadata.finalizers.as_ref());
    if !theirs.is_empty() {
        out.push(Blocker::Finalizers {
            object: format!("NodeClaim/{}", claim.metadata.name.as_deref().unwrap_or("")),
            finalizers: theirs,
        });
    }
    if out.is_empty() {
        out.push(Blocker::Unexplained);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::pods::DO_NOT_DISRUPT;
    use super::*;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        "2026-11-23T10:00:00Z".parse().unwrap()
    }

    fn claim(extra: serde_json::Value) -> NodeClaim {
        let mut c = json!({"apiVersion":"karpenter.sh/v1","kind":"NodeClaim",
            "metadata":{"name":"default-x","deletionTimestamp":"2026-11-21T10:00:00Z","finalizers":[FINALIZER]},
            "status":{"nodeName":"n1","conditions":[]}});
        merge(&mut c, extra);
        serde_json::from_value(c).unwrap()
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn node(deleting: bool) -> Node {
        let mut n = json!({"metadata":{"name":"n1","finalizers":[FINALIZER]}});
        if deleting {
            n["metadata"]["deletionTimestamp"] = json!("2026-11-21T10:00:00Z");
        }
        serde_json::from_value(n).unwrap()
    }

    fn pod(name: &str, labels: serde_json::Value, annotations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata":{"name":name,"namespace":"shop","labels":labels,"annotations":annotations},
            "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}))
        .unwrap()
    }

    fn pdb(name: &str, allowed: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({"metadata":{"name":name,"namespace":"shop"},
            "spec":{"minAvailable":3,"selector":{"matchLabels":{"app":"web"}}},
            "status":{"disruptionsAllowed":allowed,"currentHealthy":3,"desiredHealthy":3,"expectedPods":3}}))
        .unwrap()
    }

    #[test]
    fn only_a_claim_deleting_past_the_margin_is_stuck() {
        assert!(stuck(&claim(json!({})), now()));
        let fresh = claim(json!({"metadata":{"deletionTimestamp":"2026-11-23T09:50:00Z"}}));
        assert!(!stuck(&fresh, now()));
        // terminationGracePeriod: forced at 10:30, not stuck before 10:45.
        let forced = claim(
            json!({"metadata":{"annotations":{TERMINATION_TIMESTAMP:"2026-11-23T10:30:00Z"}}}),
        );
        assert!(!stuck(&forced, now()));
    }

    #[test]
    fn the_drain_names_do_not_disrupt_pods_and_pdbs_at_zero() {
        let pods = [
            pod("web-1", json!({"app":"web"}), json!({})),
            pod(
                "batch-1",
                json!({"app":"batch"}),
                json!({DO_NOT_DISRUPT:"true"}),
            ),
        ];
        let pdbs = [pdb("web", 0)];
        let n = node(true);
        let c = claim(json!({}));
        let d = Deleting {
            claim: &c,
            node: Some(&n),
            pods: &pods,
            pdbs: &pdbs,
            attachments: &[],
        };
        let b = blockers(&d, now());
        assert_eq!(b.len(), 2, "{b:?}");
        assert!(matches!(&b[0], Blocker::DoNotDisrupt { pods } if pods == &["shop/batch-1"]));
        assert!(matches!(&b[1], Blocker::Pdb { pdb, .. } if pdb == "shop/web"));
        // A PDB that allows a disruption holds nothing (aws#7586's negative control).
        let pdbs = [pdb("web", 1)];
        let d = Deleting {
            claim: &c,
            node: Some(&n),
            pods: &pods[..1],
            pdbs: &pdbs,
            attachments: &[],
        };
        assert_eq!(blockers(&d, now()), [Blocker::Unexplained]);
    }

    #[test]
    fn a_pod_under_two_pdbs_is_refused_whatever_they_allow() {
        let pods = [pod("web-1", json!({"app":"web"}), json!({}))];
        let pdbs = [pdb("a", 2), pdb("b", 2)];
        let (n, c) = (node(true), claim(json!({})));
        let d = Deleting {
            claim: &c,
            node: Some(&n),
            pods: &pods,
            pdbs: &pdbs,
            attachments: &[],
        };
        assert!(
            matches!(&blockers(&d, now())[0], Blocker::SeveralPdbs { pdbs, .. } if pdbs.len() == 2)
        );
    }

    #[test]
    fn a_node_not_deleted_is_the_controller_and_a_gone_node_waits_on_the_instance() {
        let (n, c) = (node(false), claim(json!({})));
        let d = Deleting {
            claim: &c,
            node: Some(&n),
            pods: &[],
            pdbs: &[],
            attachments: &[],
        };
        assert_eq!(blockers(&d, now()), [Blocker::NodeNotDeleted]);
        let c = claim(
            json!({"status":{"conditions":[{"type":"InstanceTerminating","status":"True","reason":"InstanceTerminating","message":"","lastTransitionTime":"2026-11-22T10:00:00Z"}]}}),
        );
        let d = Deleting {
            claim: &c,
            node: None,
            pods: &[],
            pdbs: &[],
            attachments: &[],
        };
        assert!(matches!(
            &blockers(&d, now())[0],
            Blocker::InstanceTerminating { .. }
        ));
    }

    #[test]
    fn a_deleting_node_with_karpenters_finalizer_and_no_nodeclaim_is_orphaned() {
        let nodes: Vec<ListedNode> = serde_json::from_value(json!([
            {"metadata":{"name":"gone","deletionTimestamp":"2026-11-23T07:00:00Z","finalizers":[FINALIZER]},
             "spec":{"providerID":"aws:///us-west-2a/i-1"}},
            {"metadata":{"name":"n1","deletionTimestamp":"2026-11-23T07:00:00Z","finalizers":[FINALIZER]},
             "spec":{"providerID":"aws:///us-west-2a/i-2"}},
            {"metadata":{"name":"renamed","deletionTimestamp":"2026-11-23T07:00:00Z","finalizers":[FINALIZER]},
             "spec":{"providerID":"aws:///us-west-2a/i-3"}},
            {"metadata":{"name":"recent","deletionTimestamp":"2026-11-23T09:50:00Z","finalizers":[FINALIZER]}},
            {"metadata":{"name":"other","deletionTimestamp":"2026-11-23T07:00:00Z","finalizers":["example.com/x"]}}
        ]))
        .unwrap();
        // n1 has its claim by node name; "renamed" by provider ID only.
        let claims = [
            claim(json!({})),
            claim(json!({"metadata":{"name":"default-y"},
                         "status":{"nodeName":"","providerID":"aws:///us-west-2a/i-3"}})),
        ];
        let found: Vec<(&str, i64)> = orphaned_nodes(&nodes, &claims, now())
            .iter()
            .map(|o| (o.node.name(), o.minutes))
            .collect();
        assert_eq!(found, [("gone", 180)]);
    }
}
