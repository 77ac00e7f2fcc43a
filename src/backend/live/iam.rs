//! Identity facts: karpdoctor's own caller identity (STS), IAM roles, instance profiles,
//! attached policies, OIDC providers and policy simulations.

use serde_json::{Value, json};

use super::errors::{absent_as_none, aws_error, to_value};
use crate::facts::{ContextEntry, FactError, RawResult};

/// `sts:GetCallerIdentity`.
pub(super) async fn caller_identity(sts: &aws_sdk_sts::Client) -> Result<Value, FactError> {
    let out = sts
        .get_caller_identity()
        .send()
        .await
        .map_err(|e| aws_error("sts:GetCallerIdentity", e))?;
    Ok(json!({
        "account": out.account().unwrap_or_default(),
        "arn": out.arn().unwrap_or_default(),
    }))
}

/// `iam:GetRole`; `null` when the role does not exist.
pub(super) async fn role(iam: &aws_sdk_iam::Client, name: &str) -> Result<Value, FactError> {
    let res = iam.get_role().role_name(name).send().await;
    let Some(out) = absent_as_none("iam:GetRole", res, |e| e.is_no_such_entity_exception())? else {
        return Ok(Value::Null);
    };
    let Some(role) = out.role() else {
        return Ok(Value::Null);
    };
    Ok(json!({
        "name": role.role_name(),
        "arn": role.arn(),
        "path": role.path(),
        "trustPolicy": role.assume_role_policy_document().unwrap_or_default(),
        "permissionsBoundaryArn": role.permissions_boundary().and_then(|b| b.permissions_boundary_arn()),
    }))
}

/// `iam:GetInstanceProfile`; `null` when the profile does not exist.
pub(super) async fn instance_profile(
    iam: &aws_sdk_iam::Client,
    name: &str,
) -> Result<Value, FactError> {
    let res = iam
        .get_instance_profile()
        .instance_profile_name(name)
        .send()
        .await;
    let Some(out) = absent_as_none("iam:GetInstanceProfile", res, |e| {
        e.is_no_such_entity_exception()
    })?
    else {
        return Ok(Value::Null);
    };
    Ok(match out.instance_profile() {
        Some(p) => json!({
            "name": p.instance_profile_name(),
            "arn": p.arn(),
            "path": p.path(),
            "roles": p.roles().iter().map(|r| r.arn()).collect::<Vec<_>>(),
        }),
        None => Value::Null,
    })
}

/// `iam:ListAttachedRolePolicies` of one role, every page.
pub(super) async fn attached_role_policies(
    iam: &aws_sdk_iam::Client,
    role: &str,
) -> Result<Value, FactError> {
    let mut pages = iam
        .list_attached_role_policies()
        .role_name(role)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("iam:ListAttachedRolePolicies", e))?;
        out.extend(page.attached_policies().iter().map(|p| {
            json!({
                "policyName": p.policy_name().unwrap_or_default(),
                "policyArn": p.policy_arn().unwrap_or_default(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// The names of a role's inline policies.
pub(super) async fn role_policy_names(
    iam: &aws_sdk_iam::Client,
    role: &str,
) -> Result<Value, FactError> {
    let mut pages = iam
        .list_role_policies()
        .role_name(role)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("iam:ListRolePolicies", e))?;
        out.extend(page.policy_names().iter().cloned());
    }
    Ok(json!(out))
}

/// The account's OIDC identity providers: listed, then each read for its URL and audiences.
pub(super) async fn oidc_providers(iam: &aws_sdk_iam::Client) -> Result<Value, FactError> {
    let listed = iam
        .list_open_id_connect_providers()
        .send()
        .await
        .map_err(|e| aws_error("iam:ListOpenIDConnectProviders", e))?;
    let arns: Vec<String> = listed
        .open_id_connect_provider_list()
        .iter()
        .filter_map(|p| p.arn().map(str::to_string))
        .collect();
    let details = futures::future::join_all(arns.iter().map(|arn| {
        iam.get_open_id_connect_provider()
            .open_id_connect_provider_arn(arn)
            .send()
    }))
    .await;
    let mut out = Vec::new();
    for (arn, d) in arns.iter().zip(details) {
        let d = d.map_err(|e| aws_error("iam:GetOpenIDConnectProvider", e))?;
        out.push(json!({
            "arn": arn,
            "url": d.url().unwrap_or_default().trim_start_matches("https://"),
            "clientIds": d.client_id_list(),
        }));
    }
    Ok(Value::Array(out))
}

/// `iam:SimulatePrincipalPolicy` for every action and resource at once; the raw results.
pub(super) async fn simulation(
    iam: &aws_sdk_iam::Client,
    principal: &str,
    actions: &[String],
    resources: &[String],
    context: &[ContextEntry],
) -> Result<Value, FactError> {
    to_value(simulation_results(iam, principal, actions, resources, context).await?)
}

/// [`simulation`]'s results before they become the fact's value.
pub(super) async fn simulation_results(
    iam: &aws_sdk_iam::Client,
    principal: &str,
    actions: &[String],
    resources: &[String],
    context: &[ContextEntry],
) -> Result<Vec<RawResult>, FactError> {
    use aws_sdk_iam::types::{ContextEntry as Entry, ContextKeyTypeEnum};
    let entries = context
        .iter()
        .map(|c| {
            Entry::builder()
                .context_key_name(&c.key)
                .context_key_type(ContextKeyTypeEnum::from(c.kind.as_str()))
                .set_context_key_values(Some(c.values.clone()))
                .build()
        })
        .collect();
    // One request for every action and resource: IAM pages the answer (Marker) rather than
    // karpdoctor sending one call per action.
    let mut pages = iam
        .simulate_principal_policy()
        .policy_source_arn(principal)
        .set_action_names(Some(actions.to_vec()))
        .set_resource_arns((!resources.is_empty()).then(|| resources.to_vec()))
        .set_context_entries(Some(entries))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("iam:SimulatePrincipalPolicy", e))?;
        out.extend(raw_simulation_results(page.evaluation_results()));
    }
    Ok(out)
}

/// Copies the fields karpdoctor reads from `iam:SimulatePrincipalPolicy` results, whichever of
/// the two result shapes IAM used; `crate::iam::simulation::normalise` makes rows of them.
pub fn raw_simulation_results(results: &[aws_sdk_iam::types::EvaluationResult]) -> Vec<RawResult> {
    let statements = |s: &[aws_sdk_iam::types::Statement]| -> Vec<String> {
        s.iter()
            .filter_map(|m| m.source_policy_id().map(str::to_string))
            .collect()
    };
    results
        .iter()
        .map(|r| RawResult {
            action: r.eval_action_name().to_string(),
            resource: r.eval_resource_name().unwrap_or("*").to_string(),
            decision: r.eval_decision().as_str().to_string(),
            allowed_by_organizations: r
                .organizations_decision_detail()
                .map(|d| d.allowed_by_organizations()),
            allowed_by_boundary: r
                .permissions_boundary_decision_detail()
                .map(|d| d.allowed_by_permissions_boundary()),
            matched_statements: statements(r.matched_statements()),
            missing_context_values: r.missing_context_values().to_vec(),
            resource_specific: r
                .resource_specific_results()
                .iter()
                .map(|s| RawResult {
                    action: r.eval_action_name().to_string(),
                    resource: s.eval_resource_name().to_string(),
                    decision: s.eval_resource_decision().as_str().to_string(),
                    allowed_by_organizations: None,
                    allowed_by_boundary: s
                        .permissions_boundary_decision_detail()
                        .map(|d| d.allowed_by_permissions_boundary()),
                    matched_statements: statements(s.matched_statements()),
                    missing_context_values: s.missing_context_values().to_vec(),
                    resource_specific: Vec::new(),
                })
                .collect(),
        })
        .collect()
}
