//! SSM parameters (the AMI aliases Karpenter resolves) and KMS keys (EBS encryption).

use serde_json::{Value, json};

use super::errors::{absent_as_none, aws_error};
use crate::facts::FactError;

/// `ssm:GetParameters` in batches of ten: name → value, `null` for a missing parameter.
pub(super) async fn parameters(
    ssm: &aws_sdk_ssm::Client,
    names: &[String],
) -> Result<Value, FactError> {
    // GetParameters takes at most ten names per request.
    let answers = futures::future::join_all(
        names
            .chunks(10)
            .map(|chunk| ssm.get_parameters().set_names(Some(chunk.to_vec())).send()),
    )
    .await;
    let mut out = serde_json::Map::new();
    for answer in answers {
        let answer = answer.map_err(|e| aws_error("ssm:GetParameters", e))?;
        for p in answer.parameters() {
            if let Some(name) = p.name() {
                out.insert(name.to_string(), json!(p.value()));
            }
        }
        for missing in answer.invalid_parameters() {
            out.insert(missing.clone(), Value::Null);
        }
    }
    Ok(Value::Object(out))
}

/// `kms:DescribeKey` and the key's policy; `null` when the key does not exist.
pub(super) async fn key(kms: &aws_sdk_kms::Client, key_id: &str) -> Result<Value, FactError> {
    let res = kms.describe_key().key_id(key_id).send().await;
    let Some(out) = absent_as_none("kms:DescribeKey", res, |e| e.is_not_found_exception())? else {
        return Ok(Value::Null);
    };
    let Some(meta) = out.key_metadata() else {
        return Ok(Value::Null);
    };
    // The policy is read by key id: GetKeyPolicy does not take aliases.
    let policy = kms
        .get_key_policy()
        .key_id(meta.key_id())
        .send()
        .await
        .map_err(|e| aws_error("kms:GetKeyPolicy", e))?;
    Ok(json!({
        "keyId": meta.key_id(),
        "arn": meta.arn(),
        "keyManager": meta.key_manager().map(|m| m.as_str().to_string()),
        "keyState": meta.key_state().map(|m| m.as_str().to_string()),
        "policy": policy.policy().unwrap_or_default(),
    }))
}

/// `kms:ListGrants` of a key for one grantee, every page. The grantee is matched again here:
/// the filter is the API's, the verdict must not depend on a server honouring it.
pub(super) async fn grants(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
    grantee: &str,
) -> Result<Value, FactError> {
    let mut out = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = kms
            .list_grants()
            .key_id(key_id)
            .grantee_principal(grantee)
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| aws_error("kms:ListGrants", e))?;
        for g in page.grants() {
            if g.grantee_principal() != Some(grantee) {
                continue;
            }
            out.push(json!({
                "grantId": g.grant_id(),
                "granteePrincipal": g.grantee_principal(),
                "operations": g.operations().iter().map(|o| o.as_str()).collect::<Vec<_>>(),
                "constrained": g.constraints().is_some_and(|c| {
                    !c.encryption_context_equals().is_none_or(|m| m.is_empty())
                        || !c.encryption_context_subset().is_none_or(|m| m.is_empty())
                }),
            }));
        }
        match page.next_marker() {
            Some(m) if page.truncated() => marker = Some(m.to_string()),
            _ => break,
        }
    }
    Ok(Value::Array(out))
}
