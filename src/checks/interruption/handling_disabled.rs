//! KD7003: without a queue, spot interruptions give the node two minutes' notice that nobody
//! reads: pods are killed instead of drained and replacements start late.

use crate::check::prelude::*;
use crate::checks::common::caller::principal_arn;
use crate::checks::common::controller::{configured_queue, set_queue_command};
use crate::checks::common::spot::allows_spot;
use crate::iam::simulation::{Attribution, attribute};

declare_check! {
    pub static INTERRUPTION_HANDLING_DISABLED = {
        code: "KD7003",
        slug: "interruption-handling-disabled",
        title: "interruption handling is on when NodePools allow spot",
        category: Interruption,
        severity: Warning,
        needs: [ControllerDeployments, Pods, NodePools, CallerIdentity, IamRole, Simulation],
        self_managed: true,
        run: handling_disabled,
    }
}

/// What setting up interruption handling creates.
const SETUP: &[&str] = &["sqs:CreateQueue", "events:PutRule", "events:PutTargets"];

async fn handling_disabled(cx: &CheckCx) -> CheckResult {
    if configured_queue(cx).await?.is_some() {
        return Ok(Vec::new());
    }
    let pools = cx.nodepools().await?;
    let spot: Vec<String> = pools
        .iter()
        .filter(|p| allows_spot(p))
        .map(|p| p.name().to_string())
        .collect();
    if spot.is_empty() {
        return Ok(Vec::new());
    }
    let mut f = Finding::new(
        "settings.interruptionQueue",
        format!(
            "no interruption queue is configured while NodePool(s) {} allow spot: two-minute spot notices, rebalance recommendations and health events are ignored, so pods are killed rather than drained",
            spot.join(", ")
        ),
    )
    .evidence("spotNodePools", spot)
    .hint("create the queue and rules (the getting-started CloudFormation template does) and set settings.interruptionQueue to the queue name")
    .fix(set_queue_command(cx, "${CLUSTER_NAME}").await?);
    // Say up front when the organization would not allow the setup (training and sandbox
    // accounts often deny sqs:CreateQueue): then on-demand is the honest advice. This is
    // extra evidence; the finding stands without it.
    match cx.enrich(blocked_by_scp(cx)).await {
        Ok(blocked) if !blocked.is_empty() => {
            f = f
                .evidence("blockedBySCP", blocked.clone())
                .hint(format!(
                    "an organization SCP denies {} for your identity: ask for an exception, or keep these NodePools on-demand",
                    blocked.join(", ")
                ));
        }
        Ok(_) => {}
        Err(e) => {
            f = f.evidence(
                "scpCheck",
                format!("could not simulate the setup actions: {e}"),
            )
        }
    }
    Ok(vec![f])
}

async fn blocked_by_scp(cx: &CheckCx) -> Result<Vec<String>, FactError> {
    let caller = cx.caller_identity().await?;
    let principal = principal_arn(cx, &caller.arn).await?;
    let actions: Vec<String> = SETUP.iter().map(|a| a.to_string()).collect();
    // The region each action is sent to is added where every simulation is built.
    let rows = cx.simulate(&principal, &actions, &[], &[]).await?;
    let mut blocked: Vec<String> = rows
        .iter()
        .filter(|r| attribute(r) == Attribution::Scp)
        .map(|r| r.action.clone())
        .collect();
    blocked.dedup();
    Ok(blocked)
}
