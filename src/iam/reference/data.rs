//! The reference data file, `data/controller-policy.json`, as serde reads it. Only this
//! module's siblings see its shape; callers get probes, statements and install steps.

use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;

pub(super) const DATA: &str = include_str!("../../../data/controller-policy.json");

/// The parsed data file. It is compiled in and covered by tests, so a parse failure is a
/// build defect; it still degrades to "no data" rather than a panic.
static REFERENCE: LazyLock<Option<Data>> = LazyLock::new(|| serde_json::from_str(DATA).ok());

pub(super) fn data() -> Option<&'static Data> {
    REFERENCE.as_ref()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Data {
    pub(super) versions: Versions,
    pub(super) statements: Vec<Statement>,
    pub(super) install_actions: Vec<InstallAction>,
    #[serde(default)]
    pub(super) supplemental_simulations: Vec<Supplemental>,
}

/// A simulation outside the reference policy (what a configuration choice, such as a
/// customer managed EBS key, asks of the controller role).
#[derive(Deserialize)]
pub(super) struct Supplemental {
    pub(super) id: String,
    pub(super) actions: Vec<String>,
    pub(super) simulation: Simulation,
}

#[derive(Deserialize)]
pub(super) struct Versions {
    pub(super) minimum: String,
    pub(super) newest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Statement {
    pub(super) sid: Option<String>,
    pub(super) feature: String,
    pub(super) since: String,
    pub(super) until: Option<String>,
    pub(super) when: Option<String>,
    pub(super) actions: Vec<ActionItem>,
    pub(super) resources: Vec<ResourceItem>,
    pub(super) conditions: Vec<ConditionVariant>,
    pub(super) simulation: Simulation,
}

#[derive(Deserialize)]
pub(super) struct ActionItem {
    pub(super) action: String,
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ResourceItem {
    pub(super) arn: String,
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ConditionVariant {
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
    pub(super) condition: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Simulation {
    pub(super) resource_arns: Vec<SimArn>,
    pub(super) context_entries: Vec<SimContext>,
}

#[derive(Deserialize)]
pub(super) struct SimArn {
    pub(super) arn: String,
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
    pub(super) when: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SimContext {
    pub(super) key: String,
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) value: Option<Value>,
    pub(super) simulate_each: Option<Vec<String>>,
    pub(super) for_each: Option<String>,
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InstallAction {
    pub(super) action: String,
    pub(super) principal: String,
    pub(super) purpose: String,
    pub(super) disables_when_blocked: String,
    pub(super) workaround: Workaround,
    pub(super) simulation: Simulation,
}

#[derive(Deserialize)]
pub(super) struct Workaround {
    pub(super) text: String,
}
