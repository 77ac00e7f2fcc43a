//! KD7001: the controller resolves `INTERRUPTION_QUEUE` by name in its own account and region.
//! A queue that was never created (the CAS-migration guide renders the setting but creates no
//! queue) crashes releases before 1.4 and leaves later ones retrying forever, with spot
//! interruptions unhandled.

use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::checks::common::controller::{configured_queue, set_queue_command};
use crate::checks::common::grants;
use crate::checks::common::codes::{
    CONTROLLER_ACTION_BLOCKED_BY_SCP, CONTROLLER_PERMISSION_BOUNDARY_BLOCKS, CONTROLLER_PERMISSION_MISSING,
};
use crate::iam::simulation::{Attribution, attribute};

declare_check! {
    pub static INTERRUPTION_QUEUE_MISSING = {
        code: "KD7001",
        slug: "interruption-queue-missing",
        title: "the configured interruption queue exists and the controller may read it",
        category: Interruption,
        severity: Error,
        needs: [ControllerDeployments, Pods, EksCluster, SqsQueue, SqsQueues, IamRole, ServiceAccount, PodIdentityAssociations, Simulation],
        self_managed: true,
        run: queue_missing,
    }
}

pub const QUEUE_ACTIONS: &[&str] = &["sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage"];

async fn queue_missing(cx: &CheckCx) -> CheckResult {
    let Some(queue) = configured_queue(cx).await? else {
        return Ok(Vec::new());
    };
    let object = format!("SQS queue {queue}");

    if queue.contains("://") || queue.starts_with("arn:") {
        let name = queue
            .rsplit(['/', ':'])
            .next()
            .unwrap_or_default()
            .to_string();
        return Ok(vec![
            Finding::new(object, format!("INTERRUPTION_QUEUE is {queue:?}, a URL or ARN: the controller looks the queue up by name, so it never finds it"))
                .evidence("INTERRUPTION_QUEUE", queue.clone())
                .hint("set settings.interruptionQueue to the queue's name only")
                .fix(set_queue_command(cx, &name).await?),
        ]);
    }
    let cluster = cluster(cx).await?;
    let arn = cluster_arn(&cluster)?;
    let Some(found) = cx.sqs_queue(&queue).await?.as_ref().clone() else {
        let wanted = cluster.name.to_ascii_lowercase();
        let candidates: Vec<String> = cx
            .sqs_queues()
            .await?
            .iter()
            .filter(|q| {
                let q = q.to_ascii_lowercase();
                q.contains(&wanted) || q.contains("karpenter")
            })
            .cloned()
            .collect();
        let mut f = Finding::new(
            object,
            format!(
                "INTERRUPTION_QUEUE names {queue}, but no such queue exists in account {} ({}): the controller logs NonExistentQueue and handles no interruptions{}",
                arn.account,
                arn.region,
                if candidates.is_empty() { String::new() } else { format!("; similar queues: {}", candidates.join(", ")) }
            ),
        )
        .evidence("INTERRUPTION_QUEUE", queue.clone())
        .evidence("similarQueues", candidates.clone());
        f = match candidates.first() {
            Some(c) => f
                .hint(format!("point the setting at the existing queue {c}, or create {queue} with its EventBridge rules"))
                .fix(set_queue_command(cx, c).await?),
            None => f
                .hint("create the queue and its EventBridge rules (the getting-started CloudFormation template does both), or clear the setting")
                .fix(format!("aws sqs create-queue --queue-name {queue} --attributes MessageRetentionPeriod=300,SqsManagedSseEnabled=true")),
        };
        return Ok(vec![f]);
    };
    // The queue exists: may the controller use it?
    let Some(role) = grants::optional_controller_role(cx).await? else {
        return Ok(Vec::new());
    };
    let actions: Vec<String> = QUEUE_ACTIONS.iter().map(|a| a.to_string()).collect();
    let rows = cx
        .simulate(&role.arn, &actions, std::slice::from_ref(&found.arn), &[])
        .await?;
    let denied: Vec<(String, Attribution)> = rows
        .iter()
        .map(|r| (r.action.clone(), attribute(r)))
        .filter(|(_, a)| *a != Attribution::Allowed)
        .collect();
    if denied.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = denied.iter().map(|(a, _)| a.clone()).collect();
    let only = |what: Attribution| denied.iter().all(|(_, a)| *a == what);
    let finding = |why: &str| {
        Finding::new(
            object.clone(),
            format!(
                "the controller role {} may not {} on the queue{why}: interruption messages are never read",
                role.name,
                names.join(", "),
            ),
        )
        .evidence("queueArn", found.arn.clone())
        .evidence("denied", names.clone())
    };
    // A guardrail is not fixed by granting more: an SCP or a boundary denial goes to its
    // owner check (KD2101, KD2103 report the same statement with the workaround), and only a
    // missing grant gets the policy to attach.
    let f = if only(Attribution::Scp) {
        finding(" (an organization SCP denies it)")
            .hint(format!("the SCP owners must allow these actions on the queue, or run without an interruption queue: see {CONTROLLER_ACTION_BLOCKED_BY_SCP}"))
            .owned_by([CONTROLLER_ACTION_BLOCKED_BY_SCP])
    } else if only(Attribution::Boundary) {
        finding(" (the role's permissions boundary denies it)")
            .hint(format!("allow these actions on the queue in the permissions boundary: see {CONTROLLER_PERMISSION_BOUNDARY_BLOCKS}"))
            .owned_by([CONTROLLER_PERMISSION_BOUNDARY_BLOCKS])
    } else {
        let scp = denied.iter().any(|(_, a)| *a == Attribution::Scp);
        finding(if scp { " (an organization SCP denies some of it)" } else { "" })
            .hint("attach the reference Interruption policy (sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:DeleteMessage on the queue ARN) to the controller role")
            .fix(format!(
                "aws iam put-role-policy --role-name {} --policy-name KarpenterInterruption --policy-document '{{\"Version\":\"2012-10-17\",\"Statement\":[{{\"Effect\":\"Allow\",\"Action\":[\"sqs:DeleteMessage\",\"sqs:GetQueueUrl\",\"sqs:ReceiveMessage\"],\"Resource\":\"{}\"}}]}}'",
                role.name, found.arn
            ))
            .owned_by([CONTROLLER_PERMISSION_MISSING])
    };
    Ok(vec![f])
}
