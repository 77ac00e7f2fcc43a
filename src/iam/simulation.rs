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

/// The resources a simulation asks about as a set: none given means `*`, as IAM reads it.
fn resource_set(resources: &[String]) -> std::collections::BTreeSet<&str> {
    if resources.is_empty() {
        std::iter::once("*").collect()
    } else {
        resources.iter().map(String::as_str).collect()
    }
}

/// One request standing for several simulations of the same principal and request context:
/// every action of each, on every resource of each. A simulation that gave no resource asks
/// about `*`, so `*` is named when it shares a request with one that gave some (IAM defaults
/// `ResourceArns` to `*`). The simulator answers the whole cross product; [`split`] keeps each
/// simulation's own pairs.
pub fn merge<'a>(
    asks: impl IntoIterator<Item = (&'a [String], &'a [String])>,
) -> (Vec<String>, Vec<String>) {
    let mut actions: Vec<String> = Vec::new();
    let mut resources = std::collections::BTreeSet::new();
    let mut any_resources = false;
    for (a, r) in asks {
        for action in a {
            if !actions.contains(action) {
                actions.push(action.clone());
            }
        }
        any_resources |= !r.is_empty();
        resources.extend(resource_set(r).into_iter().map(str::to_string));
    }
    let resources = if any_resources {
        resources.into_iter().collect()
    } else {
        Vec::new()
    };
    (actions, resources)
}

/// One simulation's answer out of a merged request's ([`merge`]): its actions, in its order, on
/// its resources, in the shape IAM gives a request of its own (so a recording does not depend
/// on whether the request was shared): no per-resource results for a simulation that named no
/// resource, and the action's summary fields taken over its own resources only. `None` when the
/// merged answer cannot stand for the simulation's own: IAM reports an SCP's decision per action,
/// over every resource of the request, so an SCP denial of an action the merged request asked
/// about on more resources than this simulation did might have been on one of the others. That
/// simulation is asked again on its own.
pub fn split(
    results: &[RawResult],
    actions: &[String],
    resources: &[String],
    merged_resources: &[String],
) -> Option<Vec<RawResult>> {
    let wanted = resource_set(resources);
    let exact = wanted == resource_set(merged_resources);
    let mut out = Vec::new();
    for action in actions {
        for r in results.iter().filter(|r| &r.action == action) {
            if r.resource_specific.is_empty() {
                // The older shape: one result per action and resource, each with its own
                // decision.
                if wanted.contains(r.resource.as_str()) {
                    out.push(r.clone());
                }
                continue;
            }
            if exact {
                out.push(r.clone());
                continue;
            }
            if r.allowed_by_organizations == Some(false) {
                return None;
            }
            let specific: Vec<RawResult> = r
                .resource_specific
                .iter()
                .filter(|s| wanted.contains(s.resource.as_str()))
                .cloned()
                .collect();
            if specific.is_empty() {
                continue;
            }
            out.push(summarise(r, specific, resources.is_empty()));
        }
    }
    Some(out)
}

/// An action's result over some of its resources, as a request for only those would have
/// summarised it: the worst decision, every statement matched and key missing.
fn summarise(action: &RawResult, specific: Vec<RawResult>, no_resources: bool) -> RawResult {
    let mut decision = "allowed";
    let (mut matched, mut missing): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for s in &specific {
        decision = match (Decision::parse(decision), Decision::parse(&s.decision)) {
            (Decision::ExplicitDeny, _) | (_, Decision::ExplicitDeny) => "explicitDeny",
            (Decision::ImplicitDeny, _) | (_, Decision::ImplicitDeny) => "implicitDeny",
            _ => "allowed",
        };
        for m in &s.matched_statements {
            if !matched.contains(m) {
                matched.push(m.clone());
            }
        }
        for k in &s.missing_context_values {
            if !missing.contains(k) {
                missing.push(k.clone());
            }
        }
    }
    let boundaries: Vec<bool> = specific
        .iter()
        .filter_map(|s| s.allowed_by_boundary)
        .collect();
    RawResult {
        action: action.action.clone(),
        resource: match specific.as_slice() {
            [one] => one.resource.clone(),
            _ => "*".to_string(),
        },
        decision: decision.to_string(),
        allowed_by_organizations: action.allowed_by_organizations,
        allowed_by_boundary: if boundaries.is_empty() {
            action.allowed_by_boundary
        } else {
            Some(boundaries.iter().all(|b| *b))
        },
        matched_statements: matched,
        missing_context_values: missing,
        // A request that names no resource gets no per-resource results.
        resource_specific: if no_resources { Vec::new() } else { specific },
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

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The current shape: one result per action, a resource-specific result per resource.
    fn per_action(action: &str, org: Option<bool>, specific: &[(&str, &str)]) -> RawResult {
        RawResult {
            action: action.into(),
            resource: "*".into(),
            decision: "allowed".into(),
            allowed_by_organizations: org,
            missing_context_values: vec!["aws:ResourceTag/team".into()],
            resource_specific: specific
                .iter()
                .map(|(resource, decision)| RawResult {
                    missing_context_values: if resource.contains("queue") {
                        vec!["aws:ResourceTag/team".into()]
                    } else {
                        Vec::new()
                    },
                    ..raw(action, resource, decision)
                })
                .collect(),
            ..RawResult::default()
        }
    }

    #[test]
    fn merged_requests_name_star_for_simulations_without_resources() {
        let a = (strings(&["iam:CreateUser"]), Vec::new());
        let b = (
            strings(&["sqs:ReceiveMessage", "iam:CreateUser"]),
            strings(&["arn:q"]),
        );
        let (actions, resources) = merge([(&a.0[..], &a.1[..]), (&b.0[..], &b.1[..])]);
        assert_eq!(actions, strings(&["iam:CreateUser", "sqs:ReceiveMessage"]));
        assert_eq!(resources, strings(&["*", "arn:q"]));
        let (_, none) = merge([(&a.0[..], &a.1[..]), (&a.0[..], &a.1[..])]);
        assert!(none.is_empty(), "no resource anywhere stays no resource");
    }

    #[test]
    fn split_keeps_each_simulation_its_own_pairs() {
        let merged = strings(&["*", "arn:queue"]);
        let results = [
            per_action(
                "iam:CreateUser",
                None,
                &[("*", "implicitDeny"), ("arn:queue", "implicitDeny")],
            ),
            per_action(
                "sqs:ReceiveMessage",
                None,
                &[("*", "allowed"), ("arn:queue", "allowed")],
            ),
        ];
        let own = split(&results, &strings(&["iam:CreateUser"]), &[], &merged).unwrap();
        let rows = normalise(&own);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].action.as_str(), rows[0].resource.as_str()),
            ("iam:CreateUser", "*")
        );
        // The action's missing keys were the queue's, which this simulation did not ask about.
        assert!(rows[0].missing_context_values.is_empty());
        let queue = split(
            &results,
            &strings(&["sqs:ReceiveMessage"]),
            &strings(&["arn:queue"]),
            &merged,
        )
        .unwrap();
        let rows = normalise(&queue);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].resource, "arn:queue");
        assert_eq!(
            rows[0].missing_context_values,
            strings(&["aws:ResourceTag/team"])
        );
    }

    #[test]
    fn an_scp_denial_over_more_resources_than_asked_is_asked_again() {
        let merged = strings(&["*", "arn:queue"]);
        let results = [per_action(
            "sqs:ReceiveMessage",
            Some(false),
            &[("*", "implicitDeny"), ("arn:queue", "allowed")],
        )];
        // Asked about the queue only: the SCP may have denied `*`, not the queue.
        assert!(
            split(
                &results,
                &strings(&["sqs:ReceiveMessage"]),
                &strings(&["arn:queue"]),
                &merged
            )
            .is_none()
        );
        // Asked about both: the answer is its own.
        let own = split(
            &results,
            &strings(&["sqs:ReceiveMessage"]),
            &merged,
            &merged,
        )
        .unwrap();
        assert_eq!(own, results.to_vec());
    }

    #[test]
    fn split_of_the_older_shape_filters_by_resource() {
        let results = [
            raw("ec2:RunInstances", "arn:a", "allowed"),
            RawResult {
                allowed_by_organizations: Some(false),
                ..raw("ec2:RunInstances", "arn:b", "implicitDeny")
            },
        ];
        let own = split(
            &results,
            &strings(&["ec2:RunInstances"]),
            &strings(&["arn:a"]),
            &strings(&["arn:a", "arn:b"]),
        )
        .unwrap();
        assert_eq!(own, vec![results[0].clone()]);
    }
}
