//! `karpdoctor node NAME` (a Node or a NodeClaim): why Karpenter keeps a node, or cannot remove
//! it. Its NodeClaim's launch, registration and initialization; its NodePool's budgets now;
//! whether Karpenter wants it gone (drift, consolidation) and, if so, every blocker in the order
//! Karpenter meets them; if it is deleting, the step the deletion is held at; Karpenter's own
//! event; and the check that owns the step where it stops. The checks run as in a normal run, so
//! the owner's status is this run's. Rules: docs/disruption.md.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::bundle::Bundle;
use crate::check::CheckCx;
use crate::checks::common::codes;
use crate::checks::common::nodeclaim::pool_of;
use crate::checks::disruption::disruption_blocked::{self, DISRUPTION_BLOCKED};
use crate::checks::disruption::nodes_stuck_terminating;
use crate::cli::{NodeArgs, Output};
use crate::disruption::budgets::{allowance, reasons_in_use};
use crate::disruption::candidates::{
    BLOCKED_MINUTES, Candidate, PoolUse, blockers, expected, pool_use, reschedulable, wanted,
};
use crate::disruption::terminating::{Deleting, stuck};
use crate::error::Error;
use crate::facts::FactError;
use crate::iam::reference::Version;
use crate::model::{ControllerDeployment, ListedNode, NodeClaim, NodePool};
use crate::report::chain::{self, NodeChain, NodeChainReport, Owner, Step, StepState};
use crate::report::{EXIT_FINDINGS, EXIT_OK, Report};
use crate::scheduling::spread::NODES_WITH_ZONE;

use super::pod::{claim_steps, owner};
use super::{Source, execute};

pub async fn node(args: NodeArgs) -> Result<u8, Error> {
    if !matches!(
        args.report.output,
        Output::Text | Output::Json | Output::Markdown
    ) {
        return Err(Error::Usage {
            message: "karpdoctor node prints text, json or markdown (-o)".to_string(),
        });
    }
    if args.node.trim().is_empty() || args.node.contains('/') {
        return Err(Error::Usage {
            message: format!("{:?} is not a Node or NodeClaim name", args.node),
        });
    }
    let source = match &args.target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => Source::Live(None),
    };
    let checks = super::selected_checks(&args.report)?;
    let out = execute(source, &args.target, &args.report, &checks).await?;
    let cx = CheckCx::new(Arc::clone(&out.context), &DISRUPTION_BLOCKED);
    let claims = cx.nodeclaims().await.map_err(|e| Error::Usage {
        message: format!("cannot read the NodeClaims: {e}"),
    })?;
    let name = args.node.trim();
    let Some(claim) = claims.iter().find(|c| {
        c.status.node_name.as_deref() == Some(name) || c.metadata.name.as_deref() == Some(name)
    }) else {
        return Err(Error::Usage {
            message: format!("{name} is neither a Node nor a NodeClaim that Karpenter manages"),
        });
    };
    let mut errors = out.report.errors.clone();
    let mut nodes = Vec::new();
    match chain_of(&cx, claim, &claims, &out.report).await {
        Ok(c) => nodes.push(c),
        Err(e) => errors.push(format!("{name}: {e}")),
    }
    if let Some(path) = &args.target.record {
        out.context.bundle(out.report.target.clone()).write(path)?;
    }
    let code = if nodes.iter().any(NodeChain::failed) && !args.report.exit_zero {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    };
    let report = NodeChainReport {
        schema_version: crate::report::SCHEMA_VERSION,
        kind: "NodeChains".to_string(),
        karpdoctor_version: crate::VERSION.to_string(),
        mode: out.report.mode.clone(),
        target: out.report.target.clone(),
        nodes,
        errors,
    };
    let text = match args.report.output {
        Output::Json => chain::json(&report),
        Output::Markdown => chain::node_markdown(&report),
        _ => chain::node_text(&report),
    };
    super::print(&text)?;
    Ok(code)
}

fn finish(claim: &NodeClaim, steps: Vec<Step>, owner: Option<Owner>) -> NodeChain {
    NodeChain {
        node: claim.status.node_name.clone().unwrap_or_default(),
        node_claim: claim.metadata.name.clone().unwrap_or_default(),
        node_pool: pool_of(claim).to_string(),
        steps,
        owner,
    }
}

/// The pool's budgets now, per reason it can be disrupted for, with the nodes using them.
fn budgets_detail(pool: &NodePool, used: &PoolUse, now: jiff::Timestamp) -> String {
    let in_use = used.stuck.len() + used.not_ready.len() + used.progressing.len();
    let per_reason: Vec<String> = reasons_in_use(pool)
        .into_iter()
        .map(|r| match allowance(pool, r, used.count, now) {
            None => format!("{r}: a budget karpdoctor cannot read"),
            Some(a) => match (a.limit, a.opens) {
                (None, _) => format!("{r}: unlimited now"),
                (Some(0), Some(t)) => format!("{r}: 0 until {t}"),
                (Some(0), None) => format!("{r}: 0, at any time"),
                (Some(l), _) => format!("{r}: {l} at a time"),
            },
        })
        .collect();
    format!(
        "{} ({} of its {} node(s) already use the budget: {} being replaced, {} stuck terminating, {} not Ready)",
        per_reason.join("; "),
        in_use,
        used.count,
        used.progressing.len(),
        used.stuck.len(),
        used.not_ready.len()
    )
}

/// Why a claim Karpenter does not want gone is kept: the conditions it has, or has not held
/// long enough.
fn not_wanted(
    claim: &NodeClaim,
    pool: &NodePool,
    empty: bool,
    now: jiff::Timestamp,
) -> (StepState, String) {
    let held = |t: &str| claim.status.condition(t).filter(|c| c.status == "True");
    if let Some(c) = held("DisruptionReason") {
        return (
            StepState::Waiting,
            format!(
                "Karpenter is disrupting it now ({}): the node is tainted karpenter.sh/disrupted and waits for its replacement to initialize",
                c.reason
            ),
        );
    }
    if let Some(c) = held("Drifted") {
        return (
            StepState::Waiting,
            format!(
                "Drifted ({}) less than {BLOCKED_MINUTES} minutes ago: Karpenter replaces it on a coming pass",
                c.reason
            ),
        );
    }
    if let Some(c) = held("Consolidatable") {
        if c.held_longer_than(now, BLOCKED_MINUTES) && !empty {
            return (
                StepState::Done,
                format!(
                    "Consolidatable, but NodePool {} consolidates only empty nodes (WhenEmpty) and this one runs pods",
                    pool.name()
                ),
            );
        }
        return (
            StepState::Waiting,
            "Consolidatable less than an hour ago: Karpenter consolidates it if a cheaper placement exists".to_string(),
        );
    }
    (
        StepState::Done,
        "Karpenter does not want it gone: not Drifted, and not Consolidatable (its pods changed within consolidateAfter, or consolidation is off)".to_string(),
    )
}

/// The node's chain from the facts of the run.
async fn chain_of(
    cx: &CheckCx,
    claim: &NodeClaim,
    claims: &[NodeClaim],
    report: &Report,
) -> Result<NodeChain, FactError> {
    let now = cx.now();
    let pool_name = pool_of(claim);
    let mut steps = vec![Step {
        step: "nodeclaim".into(),
        state: StepState::Done,
        at: claim
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        detail: format!(
            "NodeClaim {} of NodePool {pool_name}",
            claim.metadata.name.as_deref().unwrap_or("")
        ),
    }];
    if let Some(i) = claim_steps(claim, now, &mut steps) {
        let code = [
            codes::NODECLAIM_LAUNCH_FAILED,
            codes::NODECLAIM_NOT_REGISTERED,
            codes::NODECLAIM_NOT_INITIALIZED,
        ][i];
        return Ok(finish(claim, steps, owner(report, code)));
    }
    // Launching, registering or initializing: nothing to disrupt yet.
    let initialized = claim
        .status
        .condition("Initialized")
        .is_some_and(|c| c.status == "True");
    if !initialized && claim.metadata.deletion_timestamp.is_none() {
        return Ok(finish(claim, steps, None));
    }
    let node_name = claim.status.node_name.as_deref().filter(|n| !n.is_empty());
    let node = match node_name {
        Some(n) => cx.node(n).await?,
        None => Arc::new(None),
    };
    let pods = match (node.as_ref(), node_name) {
        (Some(_), Some(n)) => cx.node_pods(n).await?,
        _ => Arc::new(Vec::new()),
    };
    let pdbs = cx.pod_disruption_budgets().await?;
    let events = cx.events_by_reason("Node", "DisruptionBlocked").await?;
    let said = node_name
        .and_then(|n| events.0.about("Node", n).next())
        .map(|e| Step {
            step: "karpenter says".into(),
            state: StepState::Done,
            at: e.last_seen.map(|t| t.to_string()),
            detail: format!(
                "DisruptionBlocked (x{}): {}",
                e.count,
                e.message
                    .trim_start_matches("(combined from similar events): ")
                    .trim()
            ),
        });

    if let Some(deleted) = claim.metadata.deletion_timestamp.as_ref() {
        let attachments = cx.volume_attachments().await?;
        let held = stuck(claim, now);
        let minutes = now.duration_since(deleted.0).as_secs() / 60;
        let bound = match &claim.spec.termination_grace_period {
            Some(t) => format!(
                "terminationGracePeriod {t}: Karpenter deletes what is left at its deadline"
            ),
            None => "no terminationGracePeriod: the deletion has no time limit".to_string(),
        };
        let bound = format!(
            "deleting for {}h{:02}m; {bound}",
            minutes / 60,
            minutes % 60
        );
        steps.push(Step {
            step: "deleting".into(),
            state: if held {
                StepState::Failed
            } else {
                StepState::Waiting
            },
            at: Some(deleted.0.to_string()),
            detail: bound,
        });
        let found = crate::disruption::terminating::blockers(
            &Deleting {
                claim,
                node: node.as_ref().as_ref(),
                pods: &pods,
                pdbs: &pdbs,
                attachments: &attachments,
            },
            now,
        );
        for (i, b) in found.iter().enumerate() {
            steps.push(Step {
                step: if i == 0 { "held by" } else { "then" }.into(),
                state: if held && i == 0 {
                    StepState::Failed
                } else {
                    StepState::Waiting
                },
                at: None,
                detail: nodes_stuck_terminating::describe(b, claim).1.what,
            });
        }
        steps.extend(said);
        let owner = held
            .then(|| owner(report, codes::NODES_STUCK_TERMINATING))
            .flatten();
        return Ok(finish(claim, steps, owner));
    }

    let pools = cx.nodepools().await?;
    let Some(pool) = pools.iter().find(|p| p.name() == pool_name) else {
        steps.push(Step {
            step: "nodepool".into(),
            state: StepState::Done,
            at: None,
            detail: format!("NodePool {pool_name} does not exist: Karpenter does not disrupt the node for drift or consolidation"),
        });
        return Ok(finish(claim, steps, None));
    };
    let listed = cx.nodes(NODES_WITH_ZONE).await?;
    let by_name: BTreeMap<&str, &ListedNode> = listed.iter().map(|n| (n.name(), n)).collect();
    let uses = pool_use(claims, &by_name, now);
    let used = uses.get(pool_name).cloned().unwrap_or_default();
    steps.push(Step {
        step: "budgets".into(),
        state: StepState::Done,
        at: None,
        detail: budgets_detail(pool, &used, now),
    });
    let empty = !pods.iter().any(reschedulable);
    let Some((reason, since)) = wanted(claim, pool, empty, now) else {
        let (state, detail) = not_wanted(claim, pool, empty, now);
        steps.push(Step {
            step: "candidate".into(),
            state,
            at: None,
            detail,
        });
        steps.extend(said);
        return Ok(finish(claim, steps, None));
    };
    steps.push(Step {
        step: "candidate".into(),
        state: StepState::Done,
        at: Some(since),
        detail: format!("Karpenter wants it gone: {}", reason.as_str()),
    });
    let version = cx.controller().await?.and_then(|(d, i)| {
        ControllerDeployment::new(&d[i])
            .version()
            .as_deref()
            .and_then(Version::parse)
    });
    let annotated = node
        .as_ref()
        .as_ref()
        .is_some_and(|n| ListedNode::from(n).do_not_disrupt);
    let found = blockers(
        &Candidate {
            claim,
            reason,
            node_annotated: annotated,
            pods: &pods,
            pdbs: &pdbs,
            pool,
            pool_use: &used,
            version,
        },
        now,
    );
    let mut owner_code = None;
    for (i, b) in found.iter().enumerate() {
        let intended = expected(b);
        let state = match (i, intended) {
            (0, false) => {
                owner_code = Some(codes::DISRUPTION_BLOCKED);
                StepState::Failed
            }
            _ => StepState::Waiting,
        };
        let what = disruption_blocked::describe(b, reason, pool).1.what;
        steps.push(Step {
            step: if i == 0 { "held by" } else { "then" }.into(),
            state,
            at: None,
            detail: if intended {
                format!("{what} (as intended: it passes by itself)")
            } else {
                what
            },
        });
    }
    if found.is_empty() {
        steps.push(Step {
            step: "next pass".into(),
            state: StepState::Waiting,
            at: None,
            detail: "nothing holds it: Karpenter consolidates it when its pods fit elsewhere more cheaply".to_string(),
        });
    }
    steps.extend(said);
    let owner = owner_code.and_then(|c| owner(report, c));
    Ok(finish(claim, steps, owner))
}
