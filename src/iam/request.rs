//! The request context a simulation must carry to answer for the real request.
//!
//! `iam:SimulatePrincipalPolicy` evaluates only the context keys it is given, and a Deny whose
//! negated operator (`StringNotEquals`, `ArnNotLike`, …) names an absent key applies. Every
//! real signed request carries `aws:RequestedRegion` and `aws:PrincipalArn`, so a simulation
//! without them turns the most common SCP there is (a region allow-list exempting admin roles)
//! into a false denial. This module is the one place that adds them: [`requests`] splits a
//! simulation by the region its actions would be sent to and adds both keys unless the caller
//! gave them. Sources and the per-service regions are in docs/iam-simulation.md.

use crate::facts::ContextEntry;

pub const REQUESTED_REGION: &str = "aws:RequestedRegion";
pub const PRINCIPAL_ARN: &str = "aws:PrincipalArn";

/// The partition a region belongs to.
pub fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else if region.starts_with("us-iso-") {
        "aws-iso"
    } else if region.starts_with("us-isob-") {
        "aws-iso-b"
    } else {
        "aws"
    }
}

/// The region Karpenter's pricing client is built for: the Price List Query API has endpoints
/// in us-east-1, eu-central-1 and ap-south-1 only, and Karpenter picks one by the cluster
/// region's prefix (`cn-northwest-1` for China).
pub fn pricing_region(cluster_region: &str) -> &'static str {
    match cluster_region.split('-').next() {
        Some("eu") => "eu-central-1",
        Some("ap") => "ap-south-1",
        Some("cn") => "cn-northwest-1",
        _ => "us-east-1",
    }
}

/// The region of a global service's single endpoint in the partition (IAM's, for example):
/// what `aws:RequestedRegion` is for its requests, whatever region the caller runs in.
fn global_region(cluster_region: &str) -> &'static str {
    match partition(cluster_region) {
        "aws-cn" => "cn-north-1",
        "aws-us-gov" => "us-gov-west-1",
        "aws-iso" => "us-iso-east-1",
        "aws-iso-b" => "us-isob-east-1",
        _ => "us-east-1",
    }
}

/// Services whose API has one endpoint per partition. Karpenter and karpdoctor call only IAM
/// among them; the others are listed so a simulation of them is not sent to the cluster's
/// region by mistake.
const GLOBAL_SERVICES: &[&str] = &[
    "iam",
    "organizations",
    "route53",
    "cloudfront",
    "globalaccelerator",
    "waf",
    "shield",
];

/// The `aws:RequestedRegion` a real request for `action` carries when the cluster is in
/// `cluster_region`. `iam:PassRole` is judged as IAM (it is an IAM permission, checked when
/// the role is handed over); no source states otherwise, and region allow-list SCPs exempt
/// `iam:*`, so the choice cannot turn an allowed launch into a denial.
pub fn requested_region(action: &str, cluster_region: &str) -> String {
    let service = action
        .split_once(':')
        .map_or(action, |(s, _)| s)
        .to_ascii_lowercase();
    if service == "pricing" {
        return pricing_region(cluster_region).to_string();
    }
    if GLOBAL_SERVICES.contains(&service.as_str()) {
        return global_region(cluster_region).to_string();
    }
    cluster_region.to_string()
}

/// One simulation as real requests would be made: the actions grouped by the region they
/// are sent to (first appearance first, order kept inside a group), each group with
/// `aws:RequestedRegion` and `aws:PrincipalArn` added unless `context` already has them.
/// Without a known cluster region the region cannot be added; the principal still is.
/// Entries are sorted by key so the same request is always the same fact.
pub fn requests(
    principal: &str,
    actions: &[String],
    context: &[ContextEntry],
    cluster_region: Option<&str>,
) -> Vec<(Vec<String>, Vec<ContextEntry>)> {
    let has = |key: &str| context.iter().any(|e| e.key.eq_ignore_ascii_case(key));
    let mut base = context.to_vec();
    if !has(PRINCIPAL_ARN) && is_principal_arn(principal) {
        base.push(string(PRINCIPAL_ARN, principal));
    }
    let region_of = |action: &str| match cluster_region.filter(|r| !r.is_empty()) {
        Some(region) if !has(REQUESTED_REGION) => Some(requested_region(action, region)),
        _ => None,
    };
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for action in actions {
        let region = region_of(action);
        match groups.iter_mut().find(|(r, _)| *r == region) {
            Some((_, group)) => group.push(action.clone()),
            None => groups.push((region, vec![action.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(region, actions)| {
            let mut context = base.clone();
            if let Some(region) = region {
                context.push(string(REQUESTED_REGION, &region));
            }
            context.sort();
            (actions, context)
        })
        .collect()
}

/// An IAM role or user ARN: what `aws:PrincipalArn` holds for its requests (for a role
/// session, the role's ARN, path included).
fn is_principal_arn(principal: &str) -> bool {
    crate::arn::Arn::parse(principal).is_some_and(|arn| {
        arn.service == "iam"
            && (arn.resource.starts_with("role/") || arn.resource.starts_with("user/"))
    })
}

fn string(key: &str, value: &str) -> ContextEntry {
    ContextEntry {
        key: key.to_string(),
        kind: "string".to_string(),
        values: vec![value.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: &str = "arn:aws:iam::111122223333:role/KarpenterController-demo";

    fn actions(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    fn value<'a>(context: &'a [ContextEntry], key: &str) -> Option<&'a str> {
        context
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.values[0].as_str())
    }

    #[test]
    fn regions_follow_the_endpoint_each_action_is_sent_to() {
        assert_eq!(
            requested_region("ec2:RunInstances", "eu-west-1"),
            "eu-west-1"
        );
        assert_eq!(requested_region("iam:PassRole", "eu-west-1"), "us-east-1");
        assert_eq!(requested_region("IAM:GetRole", "cn-north-1"), "cn-north-1");
        assert_eq!(
            requested_region("iam:GetRole", "cn-northwest-1"),
            "cn-north-1"
        );
        assert_eq!(
            requested_region("iam:GetRole", "us-gov-east-1"),
            "us-gov-west-1"
        );
        assert_eq!(
            requested_region("pricing:GetProducts", "eu-west-3"),
            "eu-central-1"
        );
        assert_eq!(
            requested_region("pricing:GetProducts", "ap-southeast-2"),
            "ap-south-1"
        );
        assert_eq!(
            requested_region("pricing:GetProducts", "sa-east-1"),
            "us-east-1"
        );
        assert_eq!(
            requested_region("sqs:ReceiveMessage", "sa-east-1"),
            "sa-east-1"
        );
        assert_eq!(
            requested_region("eks-auth:AssumeRoleForPodIdentity", "ap-south-2"),
            "ap-south-2"
        );
    }

    #[test]
    fn a_mixed_simulation_splits_by_region_and_keeps_order() {
        let got = requests(
            ROLE,
            &actions(&[
                "ec2:RunInstances",
                "iam:PassRole",
                "ec2:CreateFleet",
                "pricing:GetProducts",
            ]),
            &[],
            Some("eu-west-1"),
        );
        let shape: Vec<(Vec<String>, Option<&str>)> = got
            .iter()
            .map(|(a, c)| (a.clone(), value(c, REQUESTED_REGION)))
            .collect();
        assert_eq!(
            shape,
            [
                (
                    actions(&["ec2:RunInstances", "ec2:CreateFleet"]),
                    Some("eu-west-1")
                ),
                (actions(&["iam:PassRole"]), Some("us-east-1")),
                (actions(&["pricing:GetProducts"]), Some("eu-central-1")),
            ]
        );
        for (_, context) in &got {
            assert_eq!(value(context, PRINCIPAL_ARN), Some(ROLE));
            assert!(context.is_sorted(), "one request, one fact key");
        }
    }

    #[test]
    fn what_the_caller_gave_is_kept() {
        let given = [ContextEntry {
            key: "AWS:RequestedRegion".to_string(),
            kind: "string".to_string(),
            values: vec!["us-east-1".to_string()],
        }];
        let got = requests(
            ROLE,
            &actions(&["sqs:CreateQueue", "iam:GetRole"]),
            &given,
            Some("eu-west-1"),
        );
        assert_eq!(got.len(), 1, "one region given: one simulation");
        assert_eq!(
            got[0]
                .1
                .iter()
                .filter(|e| e.key.eq_ignore_ascii_case(REQUESTED_REGION))
                .count(),
            1
        );
        assert_eq!(value(&got[0].1, "AWS:RequestedRegion"), Some("us-east-1"));
    }

    #[test]
    fn without_a_region_only_the_principal_is_added() {
        let got = requests(ROLE, &actions(&["ec2:RunInstances"]), &[], None);
        assert_eq!(got.len(), 1);
        assert_eq!(value(&got[0].1, REQUESTED_REGION), None);
        assert_eq!(value(&got[0].1, PRINCIPAL_ARN), Some(ROLE));
        let got = requests("not-an-arn", &actions(&["ec2:RunInstances"]), &[], Some(""));
        assert!(got[0].1.is_empty());
    }
}
