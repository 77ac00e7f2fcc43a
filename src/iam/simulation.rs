//! `iam:SimulatePrincipalPolicy` results: one normalised row per action and resource, and who
//! denied it.
//!
//! IAM answers in two shapes. The older one returns one `EvaluationResult` per action ×
//! resource. The current one returns one per action, with aggregate fields and the
//! per-resource decisions in `ResourceSpecificResults`. Both are read into the same rows here;
//! the live backend only copies the SDK's fields into [`RawResult`], so this logic is tested
//! without a network. Organization (SCP) decisions are reported per action, boundary decisions
//! per action and per resource.

use serde::{Deserialize, Serialize};

/// The raw results are the value of the simulation fact, declared with the facts.
pub use crate::facts::RawResult;

/// `EvalDecision` as IAM spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    Allowed,
    ExplicitDeny,
    ImplicitDeny,
}

impl Decision {
    pub fn parse(s: &str) -> Decision {
        match s {
            "allowed" => Decision::Allowed,
            "explicitDeny" => Decision::ExplicitDeny,
            // Anything else (including values a newer API may add) is not an allow.
            _ => Decision::ImplicitDeny,
        }
    }
}

/// One action on one resource, as decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub action: String,
    pub resource: String,
    pub decision: Decision,
    pub allowed_by_organizations: Option<bool>,
    pub allowed_by_boundary: Option<bool>,
    pub matched_statements: Vec<String>,
    pub missing_context_values: Vec<String>,
}

/// Who stopped an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Attribution {
    Allowed,
    /// An organization SCP (its statement is not visible to the simulator).
    Scp,
    /// The role's permissions boundary.
    Boundary,
    /// An explicit Deny in the role's own policies.
    IdentityDeny,
    /// Nothing in the role's policies allows it (implicit deny).
    NotGranted,
}

/// Flattens both result shapes into rows, one per action and resource.
pub fn normalise(results: &[RawResult]) -> Vec<Row> {
    let mut rows = Vec::new();
    for r in results {
        if r.resource_specific.is_empty() {
            rows.push(row(r, r, r.allowed_by_organizations));
        } else {
            for specific in &r.resource_specific {
                // SCP decisions are reported on the action, for all its resources at once; a
                // resource the action is allowed on was not what the SCP denied (a guardrail on
                // instance/* leaves the fleet/* and launch-template/* of the same call alone).
                let org = if Decision::parse(&specific.decision) == Decision::Allowed {
                    r.allowed_by_organizations.map(|_| true)
                } else {
                    r.allowed_by_organizations
                };
                rows.push(row(r, specific, org));
            }
        }
    }
    rows.sort_by(|a, b| (&a.action, &a.resource).cmp(&(&b.action, &b.resource)));
    rows.dedup();
    rows
}

fn row(action: &RawResult, specific: &RawResult, org: Option<bool>) -> Row {
    Row {
        action: action.action.clone(),
        resource: if specific.resource.is_empty() {
            action.resource.clone()
        } else {
            specific.resource.clone()
        },
        decision: Decision::parse(&specific.decision),
        allowed_by_organizations: org,
        allowed_by_boundary: specific.allowed_by_boundary.or(action.allowed_by_boundary),
        matched_statements: specific.matched_statements.clone(),
        missing_context_values: if specific.missing_context_values.is_empty() {
            action.missing_context_values.clone()
        } else {
            specific.missing_context_values.clone()
        },
    }
}

/// Who denied a row. An SCP denial wins over everything else (no identity allow overrides it),
/// then the boundary, then the role's own policies.
pub fn attribute(row: &Row) -> Attribution {
    if row.allowed_by_organizations == Some(false) {
        return Attribution::Scp;
    }
    if row.decision == Decision::Allowed {
        return Attribution::Allowed;
    }
    if row.allowed_by_boundary == Some(false) {
        return Attribution::Boundary;
    }
    match row.decision {
        Decision::ExplicitDeny => Attribution::IdentityDeny,
        Decision::ImplicitDeny | Decision::Allowed => Attribution::NotGranted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_resource<'a>(rows: &'a [Row], suffix: &str) -> &'a Row {
        rows.iter().find(|r| r.resource.ends_with(suffix)).unwrap()
    }

    fn raw(action: &str, resource: &str, decision: &str) -> RawResult {
        RawResult {
            action: action.into(),
            resource: resource.into(),
            decision: decision.into(),
            ..RawResult::default()
        }
    }

    #[test]
    fn older_shape_one_result_per_action_and_resource() {
        let rows = normalise(&[
            raw(
                "ec2:RunInstances",
                "arn:aws:ec2:us-west-2::image/ami-1",
                "allowed",
            ),
            raw(
                "ec2:RunInstances",
                "arn:aws:ec2:us-west-2:1:subnet/subnet-1",
                "implicitDeny",
            ),
        ]);
        assert_eq!(rows.len(), 2);
        let subnet = by_resource(&rows, "subnet/subnet-1");
        assert_eq!(subnet.decision, Decision::ImplicitDeny);
        assert_eq!(attribute(subnet), Attribution::NotGranted);
        assert_eq!(
            attribute(by_resource(&rows, "image/ami-1")),
            Attribution::Allowed
        );
    }

    #[test]
    fn current_shape_per_action_with_resource_specific_results() {
        let mut r = raw("ec2:RunInstances", "*", "implicitDeny");
        r.allowed_by_organizations = Some(true);
        r.resource_specific = vec![
            raw("", "arn:aws:ec2:us-west-2::image/ami-1", "allowed"),
            RawResult {
                allowed_by_boundary: Some(false),
                ..raw(
                    "",
                    "arn:aws:ec2:us-west-2:1:subnet/subnet-1",
                    "implicitDeny",
                )
            },
        ];
        let rows = normalise(&[r]);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.action == "ec2:RunInstances"));
        assert_eq!(
            attribute(by_resource(&rows, "image/ami-1")),
            Attribution::Allowed
        );
        assert_eq!(
            attribute(by_resource(&rows, "subnet/subnet-1")),
            Attribution::Boundary
        );
    }

    #[test]
    fn scp_wins_over_an_identity_allow() {
        let mut r = raw(
            "ssm:GetParameter",
            "arn:aws:ssm:us-west-2::parameter/aws/service/eks/x",
            "explicitDeny",
        );
        r.allowed_by_organizations = Some(false);
        r.matched_statements = vec!["KarpenterControllerPolicy".into()];
        assert_eq!(attribute(&normalise(&[r])[0]), Attribution::Scp);
    }

    #[test]
    fn explicit_deny_in_identity_and_missing_context() {
        let d = raw("ec2:TerminateInstances", "*", "explicitDeny");
        assert_eq!(attribute(&normalise(&[d])[0]), Attribution::IdentityDeny);
        let mut m = raw("ec2:DescribeSubnets", "*", "implicitDeny");
        m.missing_context_values = vec!["aws:RequestedRegion".into()];
        let rows = normalise(&[m]);
        assert_eq!(rows[0].missing_context_values, ["aws:RequestedRegion"]);
        assert_eq!(attribute(&rows[0]), Attribution::NotGranted);
    }

    #[test]
    fn unknown_decisions_are_not_allows() {
        assert_eq!(Decision::parse("somethingNew"), Decision::ImplicitDeny);
    }
}
