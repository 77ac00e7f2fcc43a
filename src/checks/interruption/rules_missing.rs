//! KD7002: a queue nobody writes to handles nothing, silently. EventBridge must route the
//! spot, rebalance, state-change and health events to it, the queue policy must let
//! EventBridge send, and a queue key EventBridge cannot use drops every message.

use serde_json::Value;

use crate::check::prelude::*;
use crate::checks::common::controller::configured_queue;
use crate::facts::{EventRule, SqsQueue};
use crate::iam::policy::PolicyDocument;

declare_check! {
    pub static INTERRUPTION_RULES_MISSING = {
        code: "KD7002",
        slug: "interruption-rules-missing",
        title: "interruption events reach the queue through enabled EventBridge rules",
        category: Interruption,
        severity: Error,
        needs: [ControllerDeployments, Pods, SqsQueue, EventRules, KmsKey],
        self_managed: true,
        run: rules_missing,
    }
}

/// The events Karpenter handles: (source, detail-type).
pub const REQUIRED: &[(&str, &str)] = &[
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
];

const EVENTS: &str = "events.amazonaws.com";

async fn rules_missing(cx: &CheckCx) -> CheckResult {
    let Some(name) = configured_queue(cx).await? else {
        return Ok(Vec::new());
    };
    let Some(queue) = cx.sqs_queue(&name).await?.as_ref().clone() else {
        // KD7001 reports the missing queue; there is nothing to deliver to.
        return Err(FactError::NotInstalled {
            what: format!("the SQS queue {name}"),
        });
    };
    let rules = cx.event_rules(&queue.arn).await?;
    let object = format!("SQS queue {name}");
    let mut findings = Vec::new();
    let uncovered: Vec<String> = REQUIRED
        .iter()
        .filter(|(source, detail)| {
            !rules
                .iter()
                .any(|r| r.state.starts_with("ENABLED") && covers(r, source, detail))
        })
        .map(|(s, d)| format!("{s}: {d}"))
        .collect();
    if !uncovered.is_empty() {
        let disabled: Vec<String> = rules
            .iter()
            .filter(|r| !r.state.starts_with("ENABLED"))
            .map(|r| r.name.clone())
            .collect();
        findings.push(
            Finding::new(
                object.clone(),
                format!(
                    "no enabled EventBridge rule sends {} to the queue: those interruptions reach nodes without warning",
                    uncovered.join("; ")
                ),
            )
            .evidence("missing", uncovered.clone())
            .evidence("rulesTargetingQueue", rules.iter().map(|r| format!("{} ({})", r.name, r.state)).collect::<Vec<_>>())
            .evidence("disabledRules", disabled)
            .hint("create the rules of the getting-started CloudFormation template (one per event type) with the queue as target")
            .fix(create_rule_commands(&uncovered, &queue)),
        );
    }
    if !queue_policy_allows_events(&queue) {
        findings.push(
            Finding::new(object.clone(), "the queue policy does not let events.amazonaws.com send messages: EventBridge deliveries are refused")
                .evidence("queuePolicy", queue.attributes.get("Policy").cloned().unwrap_or_default())
                .hint("add a statement allowing events.amazonaws.com and sqs.amazonaws.com sqs:SendMessage on the queue")
                .fix(format!(
                    "aws sqs set-queue-attributes --queue-url {} --attributes '{{\"Policy\":\"{{\\\"Version\\\":\\\"2012-10-17\\\",\\\"Statement\\\":[{{\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":{{\\\"Service\\\":[\\\"events.amazonaws.com\\\",\\\"sqs.amazonaws.com\\\"]}},\\\"Action\\\":\\\"sqs:SendMessage\\\",\\\"Resource\\\":\\\"{}\\\"}}]}}\"}}'",
                    queue.url, queue.arn
                )),
        );
    }
    if let Some(f) = encryption(cx, &queue, &object).await? {
        findings.push(f);
    }
    Ok(findings)
}

/// Whether a rule's pattern matches events of this source and detail type (a pattern without
/// `detail-type` matches every type of its sources).
fn covers(rule: &EventRule, source: &str, detail: &str) -> bool {
    let Ok(pattern) = serde_json::from_str::<Value>(&rule.event_pattern) else {
        return false;
    };
    let has = |key: &str, want: &str| match pattern.get(key) {
        None => true,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(want)),
        Some(Value::String(s)) => s == want,
        Some(_) => false,
    };
    pattern.get("source").is_some() && has("source", source) && has("detail-type", detail)
}

fn queue_policy_allows_events(queue: &SqsQueue) -> bool {
    let Some(raw) = queue.attributes.get("Policy") else {
        return false;
    };
    let Ok(doc) = PolicyDocument::parse(raw) else {
        return false;
    };
    doc.statements.iter().any(|s| {
        s.allow && s.covers_action("sqs:SendMessage") && s.has_principal("Service", EVENTS)
    })
}

/// SSE-KMS on the queue: the AWS managed `alias/aws/sqs` key cannot be granted to
/// EventBridge, and a customer key must let it generate data keys.
async fn encryption(
    cx: &CheckCx,
    queue: &SqsQueue,
    object: &str,
) -> Result<Option<Finding>, FactError> {
    let Some(key) = queue
        .attributes
        .get("KmsMasterKeyId")
        .filter(|k| !k.is_empty())
    else {
        return Ok(None);
    };
    let fix = format!(
        "aws sqs set-queue-attributes --queue-url {} --attributes KmsMasterKeyId=,SqsManagedSseEnabled=true",
        queue.url
    );
    let problem = if key == "alias/aws/sqs" {
        Some("the queue is encrypted with the AWS managed key alias/aws/sqs, whose policy cannot let EventBridge use it: every event is dropped".to_string())
    } else {
        match cx.kms_key(key).await?.as_ref() {
            None => Some(format!(
                "the queue's KMS key {key} does not exist: nothing can be written to the queue"
            )),
            Some(k) if k.key_manager == "AWS" => Some(format!(
                "the queue is encrypted with an AWS managed key ({key}), which EventBridge may not use: every event is dropped"
            )),
            Some(k) => {
                let allowed = PolicyDocument::parse(&k.policy).is_ok_and(|doc| {
                    doc.statements.iter().any(|s| {
                        s.allow
                            && s.has_principal("Service", EVENTS)
                            && s.covers_action("kms:GenerateDataKey")
                            && s.covers_action("kms:Decrypt")
                    })
                });
                (!allowed).then(|| format!("the queue's customer managed key {key} does not let events.amazonaws.com use it (kms:GenerateDataKey, kms:Decrypt): every event is dropped"))
            }
        }
    };
    Ok(problem.map(|message| {
        Finding::new(object.to_string(), message)
            .evidence("kmsMasterKeyId", key.clone())
            .hint("use SQS-managed encryption (SqsManagedSseEnabled), as the reference template does, or add an EventBridge statement to the key policy")
            .fix(fix)
    }))
}

fn create_rule_commands(missing: &[String], queue: &SqsQueue) -> String {
    let mut out = Vec::new();
    for (i, m) in missing.iter().enumerate() {
        let (source, detail) = m.split_once(": ").unwrap_or((m, ""));
        let rule = format!("${{CLUSTER_NAME}}-karpenter-{}", i + 1);
        out.push(format!(
            "aws events put-rule --name {rule} --event-pattern '{{\"source\":[\"{source}\"],\"detail-type\":[\"{detail}\"]}}' && aws events put-targets --rule {rule} --targets Id=KarpenterInterruptionQueueTarget,Arn={}",
            queue.arn
        ));
    }
    out.join(" && ")
}
