//! Nodes held back from their pods, grouped: one finding per NodePool, subject (a taint, a
//! resource) and cause, listing the nodes and NodeClaims, so that forty nodes held by one
//! missing DaemonSet are one problem with forty nodes.

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::{object, pool_of};
use crate::model::NodeClaim;

/// Why nodes are held, with what to do about it.
pub struct NodeCause {
    pub what: String,
    pub hint: String,
    /// The command to run; `kubectl describe node` of the first node when `None`.
    pub fix: Option<String>,
    pub severity: Severity,
    pub evidence: Vec<(&'static str, String)>,
}

/// The nodes one cause holds.
pub struct Held {
    pub cause: NodeCause,
    pub nodes: Vec<String>,
    pub claims: Vec<String>,
}

#[derive(Default)]
pub struct HeldNodes {
    groups: BTreeMap<(String, String, Severity, String), Held>,
}

impl HeldNodes {
    pub fn add(&mut self, claim: &NodeClaim, node: &str, subject: String, cause: NodeCause) {
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
        });
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
                    .hint(held.cause.hint);
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
