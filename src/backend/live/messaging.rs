//! Interruption-handling facts: SQS queues and the EventBridge rules that feed them.

use serde_json::{Value, json};

use super::FAN_OUT;
use super::errors::{absent_as_none, aws_error};
use crate::facts::FactError;

/// One queue by name with all its attributes; `null` when it does not exist.
pub(super) async fn sqs_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> Result<Value, FactError> {
    let res = sqs.get_queue_url().queue_name(name).send().await;
    let Some(out) = absent_as_none("sqs:GetQueueUrl", res, |e| e.is_queue_does_not_exist())? else {
        return Ok(Value::Null);
    };
    let url = out.queue_url().unwrap_or_default().to_string();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .map_err(|e| aws_error("sqs:GetQueueAttributes", e))?;
    let attributes: std::collections::BTreeMap<String, String> = attrs
        .attributes()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "name": name,
        "url": url,
        "arn": attributes.get("QueueArn").cloned().unwrap_or_default(),
        "attributes": attributes,
    }))
}

/// The names of the region's queues.
pub(super) async fn sqs_queues(sqs: &aws_sdk_sqs::Client) -> Result<Value, FactError> {
    let mut pages = sqs.list_queues().into_paginator().send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("sqs:ListQueues", e))?;
        out.extend(
            page.queue_urls()
                .iter()
                .filter_map(|u| u.rsplit('/').next().map(str::to_string)),
        );
    }
    Ok(json!(out))
}

/// The EventBridge rules that target one ARN, each with its pattern and targets.
pub(super) async fn event_rules(
    events: &aws_sdk_eventbridge::Client,
    target_arn: &str,
) -> Result<Value, FactError> {
    let names = rule_names_by_target(events, target_arn).await?;
    let mut out = Vec::new();
    for batch in names.chunks(FAN_OUT) {
        // A rule's description and its targets are independent reads: asked together, a
        // rule costs one round, not two.
        let described = futures::future::join_all(batch.iter().map(|n| async move {
            futures::future::join(
                events.describe_rule().name(n).send(),
                events.list_targets_by_rule().rule(n).send(),
            )
            .await
        }))
        .await;
        for (rule, targets) in described {
            let rule = rule.map_err(|e| aws_error("events:DescribeRule", e))?;
            let targets = targets.map_err(|e| aws_error("events:ListTargetsByRule", e))?;
            let targets: Vec<Value> = targets
                .targets()
                .iter()
                .map(|t| json!({"id": t.id(), "arn": t.arn()}))
                .collect();
            out.push(json!({
                "name": rule.name().unwrap_or_default(),
                "arn": rule.arn().unwrap_or_default(),
                "state": rule.state().map(|s| s.as_str().to_string()).unwrap_or_default(),
                "eventPattern": rule.event_pattern().unwrap_or_default(),
                "targets": targets,
            }));
        }
    }
    Ok(Value::Array(out))
}

/// Every page of `events:ListRuleNamesByTarget` (the SDK has no paginator for it).
async fn rule_names_by_target(
    events: &aws_sdk_eventbridge::Client,
    target_arn: &str,
) -> Result<Vec<String>, FactError> {
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = events
            .list_rule_names_by_target()
            .target_arn(target_arn)
            .set_next_token(token.clone())
            .send()
            .await
            .map_err(|e| aws_error("events:ListRuleNamesByTarget", e))?;
        names.extend(page.rule_names().iter().cloned());
        token = page
            .next_token()
            .map(str::to_string)
            .filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(names);
        }
    }
}
