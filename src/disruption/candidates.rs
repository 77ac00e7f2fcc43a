//! Why a node Karpenter wants to disrupt is still there (KD4101; docs/disruption.md §1–§4, §9).
//! A NodeClaim becomes a candidate when it is `Drifted`, or `Consolidatable` under a policy that
//! lets its pool consolidate it; every pass Karpenter then checks the node (its own
//! `karpenter.sh/do-not-disrupt`), the node's pods (do-not-disrupt, PodDisruptionBudgets; skipped
//! for drift when the claim has `terminationGracePeriod`) and the pool's budget for the reason,
//! in that order. This finds the first of those that holds, from the objects' state.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::budgets::{Allowance, allowance};
use super::pods::{
    PdbBlock, Protection, active, owned_by, pdb_blocks, pod_id, protected, protection,
    tolerates_disrupted,
};
use super::terminating::stuck;
use crate::events::{Event, Events};
use crate::iam::reference::Version;
use crate::model::{ListedNode, NodeClaim, NodePool};

/// Minutes a candidate may wait before it counts as blocked: Karpenter passes every 10 s, and
/// a rolling replacement under a budget takes a while, but not an hour per node.
pub const BLOCKED_MINUTES: i64 = 60;

/// Why Karpenter wants the node gone, as budgets name the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Drifted,
    Empty,
    Underutilized,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Drifted => "Drifted",
            Reason::Empty => "Empty",
            Reason::Underutilized => "Underutilized",
        }
    }
}

/// Pods that would have to move: active, and neither a DaemonSet's nor a static pod.
pub fn reschedulable(p: &Pod) -> bool {
    active(p) && !owned_by(p, "DaemonSet") && !owned_by(p, "Node")
}

/// The reason Karpenter has wanted to disrupt the claim for over [`BLOCKED_MINUTES`], with the
/// condition's time. Drift first: it is the reason that must happen eventually. Consolidation
/// counts only where the pool's policy lets it act on this node: any node when empty, a node
/// with pods only under `WhenEmptyOrUnderutilized` (v1beta1 `WhenUnderutilized`).
pub fn wanted(
    claim: &NodeClaim,
    pool: &NodePool,
    empty: bool,
    now: jiff::Timestamp,
) -> Option<(Reason, String)> {
    if claim.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let initialized = claim
        .status
        .condition("Initialized")
        .is_some_and(|c| c.status == "True");
    if !initialized || disrupting(claim) {
        return None;
    }
    let held = |t: &str| {
        claim
            .status
            .condition(t)
            .filter(|c| c.status == "True" && c.held_longer_than(now, BLOCKED_MINUTES))
            .map(|c| {
                c.last_transition_time
                    .as_deref()
                    .unwrap_or_default()
                    .to_string()
            })
    };
    if let Some(since) = held("Drifted") {
        return Some((Reason::Drifted, since));
    }
    let since = held("Consolidatable")?;
    if empty {
        return Some((Reason::Empty, since));
    }
    let d = pool.spec.disruption.as_ref();
    let policy = d.and_then(|d| d.consolidation_policy.as_deref());
    let underutilized = match policy {
        Some(p) => p == "WhenEmptyOrUnderutilized" || p == "WhenUnderutilized",
        // The API's default: v1 `WhenEmptyOrUnderutilized`, v1beta1 `WhenUnderutilized`.
        None => true,
    };
    underutilized.then_some((Reason::Underutilized, since))
}

/// Whether Karpenter is disrupting the claim now: a command has started (`DisruptionReason=True`,
/// 1.2+, with the `karpenter.sh/disrupted` taint) and waits for its replacement; it is cleared if
/// the command fails. Such a node is no longer waiting, and it uses its pool's budget.
pub fn disrupting(claim: &NodeClaim) -> bool {
    claim
        .status
        .condition("DisruptionReason")
        .is_some_and(|c| c.status == "True")
}

/// What holds a candidate, in the order Karpenter checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// The Node itself carries `karpenter.sh/do-not-disrupt: "true"`.
    NodeAnnotation,
    /// Pods whose `karpenter.sh/do-not-disrupt` protects them now; `jobs` when every one lets
    /// go by itself: a Job's pod finishes, a duration (1.12+) lapses, at `until` for the last
    /// of them (intent, not a finding).
    DoNotDisrupt {
        pods: Vec<String>,
        jobs: bool,
        until: Option<String>,
    },
    /// The pod's one PodDisruptionBudget allows no disruption now.
    Pdb {
        pdb: String,
        limit: String,
        never: bool,
        pods: Vec<String>,
    },
    /// A pod covered by several PodDisruptionBudgets (1.7+ refuses it as a candidate).
    SeveralPdbs { pod: String, pdbs: Vec<String> },
    /// A budget for the reason allows no disruption now; it opens at `opens`, or never.
    Budget {
        zero: Vec<String>,
        opens: Option<jiff::Timestamp>,
    },
    /// The budget allows some, but nodes already being disrupted or not Ready use it up.
    BudgetUsed {
        limit: u32,
        /// Claims deleting for longer than a deletion takes (KD4102).
        stuck: Vec<String>,
        /// Nodes whose `Ready` is not `True`.
        not_ready: Vec<String>,
        /// Deletions in progress: the rollout is moving.
        progressing: Vec<String>,
    },
    /// Karpenter 1.5.0–1.5.3 and 1.6.0–1.6.2 skip an empty drifted node that consolidation
    /// cannot remove (kubernetes-sigs/karpenter#2423).
    EmptyDriftDefect { version: Version },
    /// Nothing in the snapshot explains it.
    Unexplained,
}

/// The pool's nodes as its budget counts them (docs/disruption.md §2): initialized NodeClaims
/// that are not terminating their instance; of those, the ones already using the budget.
#[derive(Clone, Debug, Default)]
pub struct PoolUse {
    pub count: u32,
    pub stuck: Vec<String>,
    pub not_ready: Vec<String>,
    pub progressing: Vec<String>,
}

impl PoolUse {
    fn used(&self) -> u32 {
        (self.stuck.len() + self.not_ready.len() + self.progressing.len()) as u32
    }
}

/// Each NodePool's nodes as its budget counts them (docs/disruption.md §2), by pool name:
/// `nodes` by name.
pub fn pool_use(
    claims: &[NodeClaim],
    nodes: &BTreeMap<&str, &ListedNode>,
    now: jiff::Timestamp,
) -> BTreeMap<String, PoolUse> {
    let mut out: BTreeMap<String, PoolUse> = BTreeMap::new();
    for claim in claims {
        let holds = |t: &str| {
            claim
                .status
                .condition(t)
                .is_some_and(|c| c.status == "True")
        };
        if !holds("Initialized") || holds("InstanceTerminating") {
            continue;
        }
        let node_name = claim.status.node_name.as_deref().filter(|n| !n.is_empty());
        let node = node_name.and_then(|n| nodes.get(n));
        let name = node_name
            .or(claim.metadata.name.as_deref())
            .unwrap_or("")
            .to_string();
        let u = out.entry(claim.pool().to_string()).or_default();
        u.count += 1;
        let deleting =
            claim.metadata.deletion_timestamp.is_some() || node.is_some_and(|n| n.is_deleting());
        if disrupting(claim) && !deleting {
            u.progressing.push(name);
        } else if deleting {
            if stuck(claim, now) {
                u.stuck.push(name);
            } else {
                u.progressing.push(name);
            }
        } else if node.is_some_and(|n| !n.ready) {
            u.not_ready.push(name);
        }
    }
    out
}

/// The node a candidate is judged on.
pub struct Candidate<'a> {
    pub claim: &'a NodeClaim,
    pub reason: Reason,
    /// The Node carries `karpenter.sh/do-not-disrupt: "true"`.
    pub node_annotated: bool,
    /// Pods bound to the node.
    pub pods: &'a [Pod],
    pub pdbs: &'a [PodDisruptionBudget],
    pub pool: &'a NodePool,
    pub pool_use: &'a PoolUse,
    /// The controller's release, when known.
    pub version: Option<Version>,
}

fn in_defect_range(v: Version) -> bool {
    (Version(1, 5, 0)..=Version(1, 5, 3)).contains(&v)
        || (Version(1, 6, 0)..=Version(1, 6, 2)).contains(&v)
}

/// Everything that holds the candidate, the gate Karpenter stops at first. Empty when the
/// budget cannot be read.
pub fn blockers(c: &Candidate, now: jiff::Timestamp) -> Vec<Blocker> {
    let mut out = Vec::new();
    if c.node_annotated {
        out.push(Blocker::NodeAnnotation);
    }
    // Drift is eventual: with terminationGracePeriod, pods that block eviction do not keep the
    // node from being a candidate (core: `NewCandidate`); the drain's deadline ends them.
    let pods_gate =
        !(c.reason == Reason::Drifted && c.claim.spec.termination_grace_period.is_some());
    if pods_gate {
        let live: Vec<&Pod> = c.pods.iter().filter(|p| active(p)).collect();
        let pinned: Vec<&Pod> = live
            .iter()
            .copied()
            .filter(|p| protected(p, c.version, now))
            .collect();
        if !pinned.is_empty() {
            let lapses = |p: &Pod| match protection(p, c.version) {
                Protection::Until(t) => Some(t),
                _ => None,
            };
            out.push(Blocker::DoNotDisrupt {
                pods: pinned.iter().map(|p| pod_id(p)).collect(),
                jobs: pinned
                    .iter()
                    .all(|p| owned_by(p, "Job") || lapses(p).is_some()),
                until: pinned
                    .iter()
                    .filter_map(|p| lapses(p))
                    .max()
                    .map(|t| t.to_string()),
            });
        }
        let evictable = live.into_iter().filter(|p| {
            !protected(p, c.version, now) && !owned_by(p, "Node") && !tolerates_disrupted(p)
        });
        // Before 1.7 a pod under several PDBs blocks only when one of them is at zero.
        let several_block = c.version.is_none_or(|v| v >= Version(1, 7, 0));
        for b in pdb_blocks(evictable, c.pdbs) {
            match b {
                PdbBlock::Several { pod, pdbs } if several_block => {
                    out.push(Blocker::SeveralPdbs { pod, pdbs })
                }
                PdbBlock::Several { .. } => {}
                PdbBlock::AtZero {
                    pdb,
                    limit,
                    never,
                    pods,
                } => out.push(Blocker::Pdb {
                    pdb,
                    limit,
                    never,
                    pods,
                }),
            }
        }
    }
    let Some(Allowance { limit, zero, opens }) =
        allowance(c.pool, c.reason.as_str(), c.pool_use.count, now)
    else {
        return out;
    };
    match limit {
        Some(0) => out.push(Blocker::Budget { zero, opens }),
        Some(l) if c.pool_use.used() >= l => out.push(Blocker::BudgetUsed {
            limit: l,
            stuck: c.pool_use.stuck.clone(),
            not_ready: c.pool_use.not_ready.clone(),
            progressing: c.pool_use.progressing.clone(),
        }),
        _ => {}
    }
    if out.is_empty() && c.reason == Reason::Drifted {
        let empty = !c.pods.iter().any(reschedulable);
        match c.version.filter(|v| empty && in_defect_range(*v)) {
            Some(version) => out.push(Blocker::EmptyDriftDefect { version }),
            None => out.push(Blocker::Unexplained),
        }
    }
    out
}

/// Whether Karpenter's `DisruptionBlocked` text is the nomination gate (§1.3): a node
/// nominated for a pending pod in the last 2 × `BATCH_MAX_DURATION` is not disrupted.
/// `Node is nominated for a pending pod` from 1.2, `state node is nominated for a pending pod`
/// before.
pub fn says_nominated(text: &str) -> bool {
    text.to_ascii_lowercase()
        .contains("nominated for a pending pod")
}

/// The pods whose newest `Nominated` event names `node`
/// (`Pod should schedule on: nodeclaim/<claim>, node/<node>`): what keeps nominating it.
pub fn nominated_to<'a>(events: &'a Events, node: &str) -> Vec<&'a Event> {
    let wanted = format!("node/{node}");
    events
        .0
        .iter()
        .filter(|e| e.kind == "Pod" && e.reason == "Nominated")
        .filter(|e| {
            e.message
                .split_whitespace()
                .any(|w| w.trim_end_matches(',') == wanted)
        })
        .collect()
}

/// Whether the first blocker is the user's intent or progress rather than a problem: a Job's
/// do-not-disrupt pods (they finish), a scheduled freeze (it opens), a budget used only by
/// deletions in progress (the rollout moves). Said under `-v`, not reported.
pub fn expected(b: &Blocker) -> bool {
    match b {
        Blocker::DoNotDisrupt { jobs, .. } => *jobs,
        Blocker::Budget { opens, .. } => opens.is_some(),
        Blocker::BudgetUsed {
            stuck, not_ready, ..
        } => stuck.is_empty() && not_ready.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        "2026-11-27T10:00:00Z".parse().unwrap()
    }

    fn claim(conditions: serde_json::Value, tgp: Option<&str>) -> NodeClaim {
        let mut c = json!({"metadata":{"name":"default-a1b2c"},"spec":{},"status":{"nodeName":"n1","conditions":conditions}});
        if let Some(t) = tgp {
            c["spec"]["terminationGracePeriod"] = json!(t);
        }
        serde_json::from_value(c).unwrap()
    }

    fn cond(t: &str, since: &str) -> serde_json::Value {
        json!({"type":t,"status":"True","reason":t,"message":"","lastTransitionTime":since})
    }

    fn pool(disruption: serde_json::Value) -> NodePool {
        serde_json::from_value(
            json!({"metadata":{"name":"default"},"spec":{"disruption":disruption}}),
        )
        .unwrap()
    }

    fn pod(name: &str, owner: &str, annotations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata":{"name":name,"namespace":"shop","labels":{"app":"web"},"annotations":annotations,
            "ownerReferences":[{"apiVersion":"apps/v1","kind":owner,"name":"o","uid":"u"}]},
            "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}))
        .unwrap()
    }

    fn pdb(allowed: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({"metadata":{"name":"web","namespace":"shop"},
            "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}},
            "status":{"disruptionsAllowed":allowed,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}))
        .unwrap()
    }

    #[test]
    fn a_candidate_is_drifted_or_consolidatable_for_over_an_hour_under_its_policy() {
        let p = pool(json!({"consolidationPolicy":"WhenEmpty"}));
        let drifted = claim(
            json!([
                cond("Initialized", "2026-11-01T00:00:00Z"),
                cond("Drifted", "2026-11-27T08:00:00Z")
            ]),
            None,
        );
        assert_eq!(
            wanted(&drifted, &p, false, now()).map(|w| w.0),
            Some(Reason::Drifted)
        );
        let fresh = claim(
            json!([
                cond("Initialized", "2026-11-01T00:00:00Z"),
                cond("Drifted", "2026-11-27T09:30:00Z")
            ]),
            None,
        );
        assert_eq!(wanted(&fresh, &p, false, now()), None);
        // Being replaced now (a command started): no longer waiting.
        let moving = claim(
            json!([
                cond("Initialized", "2026-11-01T00:00:00Z"),
                cond("Drifted", "2026-11-27T08:00:00Z"),
                cond("DisruptionReason", "2026-11-27T09:55:00Z")
            ]),
            None,
        );
        assert_eq!(wanted(&moving, &p, false, now()), None);
        // WhenEmpty: a consolidatable node with pods is not a candidate; an empty one is.
        let cons = claim(
            json!([
                cond("Initialized", "2026-11-01T00:00:00Z"),
                cond("Consolidatable", "2026-11-27T08:00:00Z")
            ]),
            None,
        );
        assert_eq!(wanted(&cons, &p, false, now()), None);
        assert_eq!(
            wanted(&cons, &p, true, now()).map(|w| w.0),
            Some(Reason::Empty)
        );
        let p = pool(json!({"consolidationPolicy":"WhenEmptyOrUnderutilized"}));
        assert_eq!(
            wanted(&cons, &p, false, now()).map(|w| w.0),
            Some(Reason::Underutilized)
        );
    }

    #[test]
    fn the_gates_in_karpenters_order_and_drifts_exception_for_termination_grace() {
        let p = pool(json!({"consolidationPolicy":"WhenEmptyOrUnderutilized"}));
        let pods = [pod("web-1", "ReplicaSet", json!({}))];
        let pdbs = [pdb(0)];
        let use_ = PoolUse {
            count: 4,
            ..PoolUse::default()
        };
        let c = claim(json!([]), None);
        let cand = Candidate {
            claim: &c,
            reason: Reason::Underutilized,
            node_annotated: false,
            pods: &pods,
            pdbs: &pdbs,
            pool: &p,
            pool_use: &use_,
            version: None,
        };
        assert!(matches!(
            &blockers(&cand, now())[..],
            [Blocker::Pdb { never: true, .. }]
        ));
        // Drift with terminationGracePeriod: the PDB does not hold the candidate.
        let c = claim(json!([]), Some("1h"));
        let cand = Candidate {
            claim: &c,
            reason: Reason::Drifted,
            ..cand
        };
        assert_eq!(blockers(&cand, now()), [Blocker::Unexplained]);
        // A Job's do-not-disrupt pod is expected; a Deployment's is not.
        let jobs = [pod(
            "report-1",
            "Job",
            json!({"karpenter.sh/do-not-disrupt":"true"}),
        )];
        let cand = Candidate {
            pods: &jobs,
            reason: Reason::Underutilized,
            ..cand
        };
        let b = blockers(&cand, now());
        assert!(expected(&b[0]), "{b:?}");
    }

    #[test]
    fn budgets_zero_used_up_or_a_known_defect() {
        let c = claim(json!([]), None);
        let p = pool(json!({"budgets":[{"nodes":"0","reasons":["Drifted"]}]}));
        let use_ = PoolUse {
            count: 4,
            ..PoolUse::default()
        };
        let cand = Candidate {
            claim: &c,
            reason: Reason::Drifted,
            node_annotated: false,
            pods: &[],
            pdbs: &[],
            pool: &p,
            pool_use: &use_,
            version: None,
        };
        assert!(matches!(
            &blockers(&cand, now())[..],
            [Blocker::Budget { opens: None, .. }]
        ));
        // 10% of 4 rounds up to 1, used by a deletion in progress: expected.
        let p = pool(json!({}));
        let use_ = PoolUse {
            count: 4,
            progressing: vec!["default-x".into()],
            ..PoolUse::default()
        };
        let cand = Candidate {
            pool: &p,
            pool_use: &use_,
            ..cand
        };
        let b = blockers(&cand, now());
        assert!(matches!(&b[..], [Blocker::BudgetUsed { limit: 1, .. }]) && expected(&b[0]));
        // An empty drifted node on 1.6.1, nothing else holding it.
        let idle = PoolUse {
            count: 4,
            ..PoolUse::default()
        };
        let cand = Candidate {
            pool_use: &idle,
            version: Some(Version(1, 6, 1)),
            ..cand
        };
        assert_eq!(
            blockers(&cand, now()),
            [Blocker::EmptyDriftDefect {
                version: Version(1, 6, 1)
            }]
        );
    }

    #[test]
    fn the_nomination_gate_and_the_pods_that_keep_a_node_nominated() {
        assert!(says_nominated("Node is nominated for a pending pod"));
        assert!(says_nominated("state node is nominated for a pending pod"));
        assert!(!says_nominated("Not all pods would schedule"));
        let event = |name: &str, message: &str| Event {
            kind: "Pod".into(),
            name: name.into(),
            namespace: "payments".into(),
            reason: "Nominated".into(),
            message: message.into(),
            count: 3,
            ..Event::default()
        };
        let events = Events(vec![
            event(
                "ledger-0",
                "Pod should schedule on: nodeclaim/default-a, node/ip-1",
            ),
            event(
                "ledger-1",
                "Pod should schedule on: nodeclaim/default-b, node/ip-10",
            ),
            event("web-1", "Pod should schedule on: nodeclaim/default-c"),
        ]);
        let names: Vec<&str> = nominated_to(&events, "ip-1")
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["ledger-0"]);
    }
}
