//! What the Karpenter controller role must be allowed to do, per release, read from
//! `data/controller-policy.json` (the one place that knows it), and the simulation requests
//! that ask IAM whether a role is allowed to.
//!
//! A release's requirements are statements; each statement has its actions, the resources
//! and condition of the reference policy, and how to simulate it: concrete resource ARNs
//! (subnets, AMIs, the node role with its path, …) and the context entries its conditions
//! test (request tags, region, `iam:PassedToService`). [`controller_probes`] turns them into
//! as few `iam:SimulatePrincipalPolicy` requests as the differing resources and contexts
//! allow; [`statement_document`] prints the statement to add.
//!
//! The data's shape is private to `data`; `version` reads releases and ranges, `probes`
//! builds the controller's simulations, `statements` renders reference statements,
//! `install` lists what `pre-install` simulates, and `ami` expands AMI aliases.

mod ami;
mod data;
mod install;
mod probes;
mod statements;
mod version;

use std::collections::BTreeMap;

pub use ami::{al2023_parameter_arns, alias_parameter_paths};
pub use install::{InstallStep, controller_policy_names, install_steps};
pub use probes::{
    InstallInput, NodeClassInput, Probe, StatementRef, controller_probes, supplemental_probe,
};
pub use statements::{policy_document, statement_document};
pub use version::{Coverage, Version, coverage, newest};

/// Replaces `{name}` placeholders; `None` if one has no value.
pub fn substitute(template: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}')? + start;
        out.push_str(vars.get(&rest[start + 1..end])?);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests;
