//! Nodes held back from their pods, grouped: one finding per NodePool, subject (a taint, a
//! resource) and cause, listing the nodes and NodeClaims, so that forty nodes held by one
//! missing DaemonSet are one problem with forty nodes.

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::{object, pool_of};
use crate::model::NodeClaim;
use crate::nodecap::{PodState, ds_id};

/// Why nodes are held, with what to do about it.
pub struct NodeCause {
    pub what: String,
    pub hint: String,
    /// The command to run; `kubectl describe node` of the first node when `None`.
    pub fix: Option<String>,
    pub severity: Severity,
    pub evidence: Vec<(&'static str, String)>,
}

impl NodeCause {
    /// Says which workloads' pod templates annotate these do-not-disrupt `pods` (or that the
    /// workloads could not be read); true when one does, so that the setting (KD4104's
    /// finding) owns the held nodes.
    pub fn pinned_by(
        &mut self,
        pods: &[k8s_openapi::api::core::v1::Pod],
        workloads: Result<&[crate::model::PinnedWorkload], &crate::facts::FactError>,
    ) -> bool {
        match workloads {
            Ok(ws) => {
                let by: std::collections::BTreeSet<String> = pods
                    .iter()
                    .filter_map(|p| crate::disruption::pinned::pinning(p, ws))
                    .map(|w| w.id())
                    .collect();
                if by.is_empty() {
                    return false;
                }
                self.evidence.push((
                    "podTemplateOf",
                    by.into_iter().collect::<Vec<_>>().join(", "),
                ));
                true
            }
            Err(e) => {
                self.evidence
                    .push(("podTemplateOf", format!("could not be read ({e})")));
                false
            }
        }
    }
}

/// The nodes one cause holds.
pub struct Held {
    pub cause: NodeCause,
    pub nodes: Vec<String>,
    pub claims: Vec<String>,
    /// Checks whose failure explains the cause (linked as `causedBy` when they fail).
    pub owners: Vec<&'static str>,
}

#[derive(Default)]
pub struct HeldNodes {
    groups: BTreeMap<(String, String, Severity, String), Held>,
}

impl HeldNodes {
    pub fn add(&mut self, claim: &NodeClaim, node: &str, subject: String, cause: NodeCause) {
        self.add_owned(claim, node, subject, cause, &[]);
    }

    /// As [`add`](Self::add), for a cause another check owns when it fails too.
    pub fn add_owned(
        &mut self,
        claim: &NodeClaim,
        node: &str,
        subject: String,
        cause: NodeCause,
        owners: &[&'static str],
    ) {
        let key = (
            pool_of(claim).to_string(),
            subject,
            cause.severity,
            cause.what.clone(),
        );
        let held = self.groups.entry(key).or_insert_with(|| Held {
            cause,
            nodes: Vec::new(),
            claims: Vec::new(),
            owners: Vec::new(),
        });
        for o in owners {
            if !held.owners.contains(o) {
                held.owners.push(o);
            }
        }
        held.nodes.push(node.to_string());
        held.claims.push(object(claim));
    }

    /// One finding per group, on its NodePool; `message` words it from the subject.
    pub fn findings(
        self,
        subject_name: &'static str,
        message: impl Fn(&str, &Held) -> String,
    ) -> Vec<Finding> {
        self.groups
            .into_iter()
            .map(|((pool, subject, _, _), held)| {
                let first = held.nodes.first().cloned().unwrap_or_default();
                let mut f = Finding::new(format!("NodePool/{pool}"), message(&subject, &held))
                    .severity(held.cause.severity)
                    .evidence(subject_name, subject)
                    .evidence("nodes", held.nodes)
                    .evidence("nodeClaims", held.claims)
                    .hint(held.cause.hint)
                    .owned_by(held.owners);
                for (name, value) in held.cause.evidence {
                    f = f.evidence(name, value);
                }
                f.fix(
                    held.cause
                        .fix
                        .unwrap_or_else(|| format!("kubectl describe node {first}")),
                )
            })
            .collect()
    }
}

/// The component's DaemonSet should run on the node but its pod is missing or not ready:
/// `who` is the component, `then` what follows once its pod is ready. `None` for a ready pod,
/// which each check judges itself.
pub fn pod_not_ready(
    who: &str,
    ds: &k8s_openapi::api::apps::v1::DaemonSet,
    state: &PodState,
    then: &str,
) -> Option<NodeCause> {
    let id = ds_id(ds);
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    match state {
        PodState::Missing => Some(NodeCause {
            what: format!("{who} has no pod on the node (DaemonSet {id})"),
            hint: format!(
                "DaemonSet {id} should run on the node but has not placed a pod there: its events say why (a rollout in progress, a pod that does not fit)"
            ),
            fix: Some(format!(
                "kubectl -n {ns} describe daemonset {}",
                ds.metadata.name.as_deref().unwrap_or("")
            )),
            severity: Severity::Error,
            evidence: vec![("daemonSet", id)],
        }),
        PodState::NotReady { pod, reason } => Some(NodeCause {
            what: format!(
                "{who} is not ready on the node ({pod}{})",
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            hint: format!("{then} once {pod} is ready: its logs say why it is not"),
            fix: Some(format!(
                "kubectl -n {ns} logs {}",
                pod.rsplit('/').next().unwrap_or(pod)
            )),
            severity: Severity::Error,
            evidence: vec![("daemonSet", id), ("pod", pod.clone())],
        }),
        PodState::Ready { .. } => None,
    }
}
