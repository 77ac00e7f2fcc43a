//! KD4005: the NodePool's own conditions are Karpenter's verdict on it: a NodePool that is not
//! Ready is ignored by the provisioner ("ignoring nodepool, not ready"), and
//! NodeRegistrationHealthy (v1.4+) keeps the reason of the last failed launch or join.

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::codes::{
    ACCESS_ENTRY_WRONG_TYPE, AUTOMODE_NODE_ACCESS_MISSING, AUTOMODE_NODECLASS_NOT_READY,
    AUTOMODE_NODEPOOL_UNSERVED, AWS_AUTH_MALFORMED, NODE_ROLE_NOT_MAPPED, NODECLAIM_NOT_REGISTERED,
    NODECLASS_NOT_READY, NODEPOOL_NODECLASSREF_INVALID,
};
use crate::checks::common::launch::launch_cause;
use crate::model::{Condition, NodePool};

declare_check! {
    pub static NODEPOOL_NOT_READY = {
        code: "KD4005",
        slug: "nodepool-not-ready",
        title: "every NodePool is Ready and registers its nodes",
        category: Nodepool,
        severity: Error,
        needs: [NodePools],
        run: not_ready,
    }
}

/// Unknown for this long counts as stuck (status is computed within seconds).
const STUCK_MINUTES: i64 = 10;

async fn not_ready(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let now = cx.now();
    // v1beta1 NodePools have no status conditions: nothing to judge, which is not a pass.
    if !pools.is_empty() && pools.iter().all(|p| p.is_v1beta1()) {
        return Err(FactError::NotInstalled {
            what: "the karpenter.sh/v1 NodePool API, whose status conditions this check reads (the cluster serves v1beta1, which has none),".to_string(),
        });
    }
    let mut findings = Vec::new();
    for pool in pools.iter().filter(|p| !p.is_v1beta1()) {
        let bad = |c: &&Condition| {
            c.status == "False"
                // NodeRegistrationHealthy stays Unknown until the first launch: not a failure.
                || (c.status == "Unknown" && c.type_ != "NodeRegistrationHealthy" && c.held_longer_than(now, STUCK_MINUTES))
        };
        let conditions: Vec<&Condition> = [
            "ValidationSucceeded",
            "NodeClassReady",
            "NodeRegistrationHealthy",
        ]
        .iter()
        .filter_map(|t| pool.status.condition(t))
        .filter(bad)
        .collect();
        // Ready only rolls the others up; report it alone when nothing more specific is wrong.
        let ready = pool.status.condition("Ready").filter(bad);
        let shown: Vec<&Condition> = if conditions.is_empty() {
            ready.into_iter().collect()
        } else {
            conditions
        };
        for c in shown {
            let codes = owners(pool, c);
            let owners = codes.join(", ");
            // A launch reason is as grave here as KD6001 rates it: EC2 out of capacity or
            // throttling the controller is a warning (Karpenter retries), a missing role is not.
            let severity = match (c.type_.as_str(), c.reason.as_str()) {
                ("NodeRegistrationHealthy", r) if r != "RegistrationFailed" => {
                    launch_cause(r, &c.message).severity
                }
                _ => Severity::Error,
            };
            findings.push(
                Finding::new(pool.object(), format!("is not healthy: {}", c.describe()))
                    .severity(severity)
                    .owned_by_checks(codes)
                    .evidence("condition", c.describe())
                    .evidence("since", c.last_transition_time.clone().unwrap_or_default())
                    .evidence("ownedBy", owners.clone())
                    .hint(if owners.is_empty() {
                        "read the condition message".to_string()
                    } else {
                        format!("see {owners}")
                    })
                    .fix(format!("kubectl describe nodepool {}", pool.name())),
            );
        }
    }
    Ok(findings)
}

/// The checks that find the cause of a bad NodePool condition.
fn owners(pool: &NodePool, c: &Condition) -> &'static [&'static str] {
    // Auto Mode's pools: which NodeClass they name and whether Auto Mode accepts them is
    // KD4201's (docs/auto-mode.md §7.4).
    if pool.is_auto_mode() {
        match (c.type_.as_str(), c.reason.as_str()) {
            ("NodeClassReady", "NodeClassNotFound") | ("ValidationSucceeded", _) => {
                return &[AUTOMODE_NODEPOOL_UNSERVED];
            }
            // An Auto Mode NodeClass that is not Ready is KD3101's (which links its own cause);
            // nodes that do not join, their role's access entry's.
            ("NodeClassReady", _) => {
                return &[AUTOMODE_NODECLASS_NOT_READY, AUTOMODE_NODE_ACCESS_MISSING];
            }
            ("NodeRegistrationHealthy", "RegistrationFailed") => {
                return &[AUTOMODE_NODE_ACCESS_MISSING];
            }
            _ => {}
        }
    }
    let owners: &[&str] = match (c.type_.as_str(), c.reason.as_str()) {
        ("NodeClassReady", "NodeClassNotFound") => &[NODEPOOL_NODECLASSREF_INVALID],
        ("NodeClassReady", _) => &[NODECLASS_NOT_READY],
        ("NodeRegistrationHealthy", "RegistrationFailed") => &[
            NODECLAIM_NOT_REGISTERED,
            NODE_ROLE_NOT_MAPPED,
            AWS_AUTH_MALFORMED,
            ACCESS_ENTRY_WRONG_TYPE,
        ],
        ("NodeRegistrationHealthy", reason) => launch_cause(reason, &c.message).owners,
        ("ValidationSucceeded", _) => &[],
        _ => &[NODECLASS_NOT_READY, NODEPOOL_NODECLASSREF_INVALID],
    };
    owners
}
