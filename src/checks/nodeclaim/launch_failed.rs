//! KD6001: NodeClaims that never launched, and the launch failures their events record (a
//! NodeClaim that hits insufficient capacity is deleted at once; its events stay). An EKS Auto
//! Mode NodeClaim's failure is owned by Auto Mode's checks, not the self-managed ones
//! (`Cause::on_auto_mode`).

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::launch::{Cause, launch_cause};
use crate::checks::common::nodeclaim::{object, pool_of, stuck};
use crate::model::{AUTO_MODE_GROUP, NodePool};

declare_check! {
    pub static NODECLAIM_LAUNCH_FAILED = {
        code: "KD6001",
        slug: "nodeclaim-launch-failed",
        title: "every NodeClaim launches its instance",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Events, NodePools],
        run: launch_failed,
    }
}

async fn launch_failed(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let now = cx.now();
    let mut findings = Vec::new();
    for claim in claims.iter() {
        // A classified reason is a failure at once; a bare wait counts once it is overdue.
        let failed = claim.status.condition("Launched").filter(|c| {
            c.status != "True" && !c.reason.is_empty() && c.reason != "AwaitingReconciliation"
        });
        let Some(c) = failed.or_else(|| stuck(claim, "Launched", now)) else {
            continue;
        };
        let mut cause = launch_cause(&c.reason, &c.message);
        let auto_mode = claim
            .spec
            .node_class_ref
            .as_ref()
            .and_then(|r| r.group.as_deref())
            == Some(AUTO_MODE_GROUP);
        if auto_mode {
            cause = cause.on_auto_mode();
        }
        findings.push(cause.link(
            Finding::new(
                object(claim),
                format!("has not launched ({}): {}", c.describe(), cause.summary),
            )
            .severity(cause.severity)
            .evidence("nodePool", pool_of(claim))
            .evidence("condition", c.describe())
            .evidence("cause", cause.summary)
            .evidence("ownedBy", cause.owners.join(", "))
            .hint(owner_hint(cause.owners))
            .fix(format!(
                "kubectl describe nodeclaim {}",
                claim.metadata.name.as_deref().unwrap_or_default()
            )),
        ));
    }
    // Launch failures recorded only as events (the NodeClaims are gone), grouped by cause.
    let events = cx.events("NodeClaim", None).await?;
    let mut by_cause: BTreeMap<&'static str, (Cause, u64, String, Vec<String>)> = BTreeMap::new();
    // The pools, read only when a gone NodeClaim's failure needs its pool's kind.
    let mut pools: Option<std::sync::Arc<Vec<NodePool>>> = None;
    for e in events.0.iter().filter(|e| e.is_warning()) {
        let launch = e.reason == "InsufficientCapacityError"
            || (e.reason.is_empty() && e.message.contains("Attempted to launch"))
            || e.reason == "FailedLaunch";
        if !launch
            || claims
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(e.name.as_str()))
        {
            continue;
        }
        let mut cause = launch_cause(&e.reason, &e.message);
        if pools.is_none() {
            pools = Some(cx.nodepools().await?);
        }
        if pools
            .as_deref()
            .and_then(|p| pool_of_name(p, &e.name))
            .is_some_and(NodePool::is_auto_mode)
        {
            cause = cause.on_auto_mode();
        }
        let entry = by_cause
            .entry(cause.summary)
            .or_insert_with(|| (cause, 0, e.message.clone(), Vec::new()));
        entry.1 = entry.1.saturating_add(e.count);
        if entry.3.len() < 5 {
            entry.3.push(e.name.clone());
        }
    }
    for (summary, (cause, count, latest, names)) in by_cause {
        findings.push(cause.link(
            Finding::new(
                "NodeClaims",
                format!("{count} recent launch failure(s): {summary}"),
            )
            .severity(cause.severity)
            .evidence("latest", latest)
            .evidence("nodeClaims", names)
            .evidence("ownedBy", cause.owners.join(", "))
            .hint(owner_hint(cause.owners))
            .fix("kubectl get events -A --field-selector involvedObject.kind=NodeClaim --sort-by=.lastTimestamp"),
        ));
    }
    Ok(findings)
}

/// The pool a NodeClaim was made for, from its name alone: Karpenter names a claim
/// `<pool>-<five characters>` (core's NodeClaim template sets `generateName: <pool>-`).
fn pool_of_name<'a>(pools: &'a [NodePool], claim: &str) -> Option<&'a NodePool> {
    let (prefix, suffix) = claim.rsplit_once('-')?;
    (suffix.len() == 5)
        .then(|| pools.iter().find(|p| p.metadata.name.as_deref() == Some(prefix)))
        .flatten()
}

fn owner_hint(owners: &[&str]) -> String {
    if owners.is_empty() {
        "read the condition message and the NodeClaim's events".to_string()
    } else {
        format!("see {} for the cause and its fix", owners.join(", "))
    }
}
