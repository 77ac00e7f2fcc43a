//! EKS Auto Mode's cluster IAM role (docs/automode.md §3.1, §3.2, §7.2): EKS acts as it to launch,
//! tag and delete Auto Mode's instances, volumes, load balancers and network interfaces.

use crate::arn::Arn;
use crate::facts::AttachedPolicy;

/// The AWS managed policies Auto Mode's cluster role needs ("or custom policies with
/// equivalent permissions", the user guide's cluster role page).
pub const CLUSTER_POLICIES: [&str; 5] = [
    "AmazonEKSClusterPolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
];

/// The service that assumes the cluster role.
pub const EKS_SERVICE: &str = "eks.amazonaws.com";

/// An AWS managed policy's name, from its ARN (`arn:<partition>:iam::aws:policy/<name>`).
pub fn aws_managed(p: &AttachedPolicy) -> Option<&str> {
    let arn = Arn::parse(&p.policy_arn)?;
    let name = arn.resource.strip_prefix("policy/")?;
    (arn.service == "iam" && arn.account == "aws").then(|| name.rsplit('/').next().unwrap_or(name))
}

/// The policies of [`CLUSTER_POLICIES`] not attached to the role.
pub fn missing_policies(attached: &[AttachedPolicy]) -> Vec<&'static str> {
    CLUSTER_POLICIES
        .iter()
        .copied()
        .filter(|want| !attached.iter().any(|p| aws_managed(p) == Some(want)))
        .collect()
}

/// The role has permissions beside Auto Mode's five policies: an inline policy, a customer
/// managed one, or another AWS managed one (`AWSElasticBeanstalkEKSTagging` carries the tagging
/// statements). Their grants are not read here, so they may stand in for a missing managed
/// policy or grant tagging.
pub fn has_own_policies(attached: &[AttachedPolicy], inline: &[String]) -> bool {
    !inline.is_empty()
        || attached
            .iter()
            .any(|p| aws_managed(p).is_none_or(|n| !CLUSTER_POLICIES.contains(&n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attached(names: &[&str]) -> Vec<AttachedPolicy> {
        names
            .iter()
            .map(|n| AttachedPolicy {
                policy_name: n.to_string(),
                policy_arn: format!("arn:aws:iam::aws:policy/{n}"),
            })
            .collect()
    }

    #[test]
    fn the_five_policies_are_found_by_arn_and_own_policies_told_apart() {
        let all = attached(&CLUSTER_POLICIES);
        assert!(missing_policies(&all).is_empty());
        let three = attached(&[
            "AmazonEKSClusterPolicy",
            "AmazonEKSComputePolicy",
            "AmazonEKSNetworkingPolicy",
        ]);
        assert_eq!(
            missing_policies(&three),
            [
                "AmazonEKSBlockStoragePolicy",
                "AmazonEKSLoadBalancingPolicy"
            ]
        );
        assert!(!has_own_policies(&all, &[]));
        assert!(has_own_policies(&all, &["tags".to_string()]));
        let mut own = all.clone();
        own.push(AttachedPolicy {
            policy_name: "AutoModeTags".into(),
            policy_arn: "arn:aws:iam::111122223333:policy/AutoModeTags".into(),
        });
        assert!(has_own_policies(&own, &[]));
        // A customer policy named like AWS's is not AWS's.
        let fake = [AttachedPolicy {
            policy_name: "AmazonEKSComputePolicy".into(),
            policy_arn: "arn:aws:iam::111122223333:policy/AmazonEKSComputePolicy".into(),
        }];
        assert_eq!(missing_policies(&fake).len(), 5);
    }
}
