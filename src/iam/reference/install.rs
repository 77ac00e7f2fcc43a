//! What `karpdoctor pre-install` simulates: the actions an install needs, for the installer or
//! for roles of the account, with what each blocked action disables and its workaround.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::json;

use super::ami::al2023_parameter_arns;
use super::data::{DATA, InstallAction, data};
use super::probes::contexts;
use super::statements::substitute_json;
use super::substitute;
use super::version::{Version, in_effect};
use crate::facts::ContextEntry;

/// One action an installer (or a role of the account) must be allowed during an install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallStep {
    pub action: String,
    /// `installer`, `controllerHostNodeRole` or `anyInAccount`: only for `installer` does the
    /// caller's own identity policy matter; for the others only the SCP decision does.
    pub principal: String,
    pub purpose: String,
    pub disables: String,
    pub workaround: String,
    pub resources: Vec<String>,
    pub context: Vec<ContextEntry>,
}

/// What `karpdoctor pre-install` simulates, placeholders filled in.
pub fn install_steps(version: Version, vars: &BTreeMap<String, String>) -> Vec<InstallStep> {
    let Some(d) = data() else {
        return Vec::new();
    };
    // "As sqs:CreateQueue." in the data points at another action's workaround.
    let workaround_of = |a: &InstallAction| -> String {
        let text = a.workaround.text.trim();
        text.strip_prefix("As ")
            .and_then(|rest| rest.strip_suffix('.'))
            .and_then(|other| d.install_actions.iter().find(|o| o.action == other))
            .map_or_else(|| text.to_string(), |o| o.workaround.text.clone())
    };
    d.install_actions
        .iter()
        .filter_map(|a| {
            let resources: BTreeSet<String> = a
                .simulation
                .resource_arns
                .iter()
                .filter(|r| in_effect(version, r.since.as_deref(), r.until.as_deref()))
                .flat_map(|r| {
                    if r.arn == "{ssmParameterArns}" {
                        // The alias paths the getting-started guide's default (al2023) reads.
                        vars.get("k8sVersion")
                            .map(|k| al2023_parameter_arns(vars, k))
                            .unwrap_or_default()
                    } else if r.arn.contains("{controllerPolicyName}") {
                        controller_policy_names(version, vars)
                            .iter()
                            .filter_map(|name| {
                                let mut vars = vars.clone();
                                vars.insert("controllerPolicyName".into(), name.clone());
                                substitute(&r.arn, &vars)
                            })
                            .collect()
                    } else {
                        substitute(&r.arn, vars).into_iter().collect()
                    }
                })
                .collect();
            if resources.is_empty() {
                return None;
            }
            let context = contexts(&a.simulation.context_entries, version, vars, None)?
                .into_iter()
                .next()
                .unwrap_or_default();
            Some(InstallStep {
                action: a.action.clone(),
                principal: a.principal.clone(),
                purpose: substitute_json(&json!(a.purpose), vars)
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                disables: a.disables_when_blocked.clone(),
                workaround: substitute_json(&json!(workaround_of(a)), vars)
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                resources: resources.into_iter().collect(),
                context,
            })
        })
        .collect()
}

/// Names of the controller's managed policies in the getting-started CloudFormation stack of a
/// release (one before 1.9, five from 1.9, six from 1.12).
pub fn controller_policy_names(v: Version, vars: &BTreeMap<String, String>) -> Vec<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Named {
        controller_managed_policies: Vec<Policy>,
    }
    #[derive(Deserialize)]
    struct Policy {
        name: String,
        since: Option<String>,
        until: Option<String>,
    }
    let Ok(named) = serde_json::from_str::<Named>(DATA) else {
        return Vec::new();
    };
    named
        .controller_managed_policies
        .iter()
        .filter(|p| in_effect(v, p.since.as_deref(), p.until.as_deref()))
        .filter_map(|p| substitute(&p.name, vars))
        .collect()
}
