//! Reference statements as policy JSON: the one statement a finding asks to add, and the
//! whole reference policy of a release (`karpdoctor reference-policy`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::data::{Statement, data};
use super::probes::StatementRef;
use super::substitute;
use super::version::{Version, in_effect};

/// The reference statement as it should appear in the controller's policy for `version`,
/// placeholders filled in (`{nodeRoleArn}` and the like from `vars`).
pub fn statement_document(
    statement: &StatementRef,
    version: Version,
    vars: &BTreeMap<String, String>,
) -> Option<Value> {
    let s = data()?.statements.get(statement.index)?;
    render_statement(s, version, vars)
}

fn render_statement(s: &Statement, v: Version, vars: &BTreeMap<String, String>) -> Option<Value> {
    let actions: Vec<Value> = s
        .actions
        .iter()
        .filter(|a| in_effect(v, a.since.as_deref(), a.until.as_deref()))
        .map(|a| Value::String(a.action.clone()))
        .collect();
    let resources: Vec<Value> = s
        .resources
        .iter()
        .filter(|r| in_effect(v, r.since.as_deref(), r.until.as_deref()))
        .filter_map(|r| substitute(&r.arn, vars).map(Value::String))
        .collect();
    if actions.is_empty() || resources.is_empty() {
        return None;
    }
    let mut doc = Map::new();
    if let Some(sid) = &s.sid {
        doc.insert("Sid".into(), json!(sid));
    }
    doc.insert("Effect".into(), json!("Allow"));
    doc.insert("Action".into(), one_or_many(actions));
    doc.insert("Resource".into(), one_or_many(resources));
    if let Some(c) = s
        .conditions
        .iter()
        .find(|c| in_effect(v, c.since.as_deref(), c.until.as_deref()))
    {
        doc.insert("Condition".into(), substitute_json(&c.condition, vars));
    }
    Some(Value::Object(doc))
}

fn one_or_many(mut items: Vec<Value>) -> Value {
    if items.len() == 1 {
        items.remove(0)
    } else {
        Value::Array(items)
    }
}

/// Substitutes placeholders in every key and string of a JSON value; an unknown placeholder
/// is left as written so the statement still shows what to fill in.
pub(super) fn substitute_json(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    let s = |t: &str| substitute(t, vars).unwrap_or_else(|| t.to_string());
    match value {
        Value::String(t) => Value::String(s(t)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| substitute_json(i, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (s(k), substitute_json(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The whole reference policy document of a release, for the placeholders given (statements
/// whose resources cannot be filled in are left out).
pub fn policy_document(version: Version, vars: &BTreeMap<String, String>) -> Value {
    let statements: Vec<Value> = data()
        .map(|d| {
            d.statements
                .iter()
                .filter(|s| in_effect(version, Some(&s.since), s.until.as_deref()))
                .filter_map(|s| render_statement(s, version, vars))
                .collect()
        })
        .unwrap_or_default();
    json!({"Version": "2012-10-17", "Statement": statements})
}
