//! EKS Auto Mode's cluster IAM role (docs/auto-mode.md §3.1, §3.2, §7.2): EKS acts as it to launch,
//! tag and delete Auto Mode's instances, volumes, load balancers and network interfaces.

use serde_json::Value;

use crate::arn::Arn;
use crate::facts::{AttachedPolicy, ContextEntry};
use crate::model::AutoNodeClass;

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

/// One simulation of what EKS asks AWS for, as the cluster role, when it launches from a
/// NodeClass (docs/auto-mode.md §3.4): the request an SCP would judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// What the step is, for the finding.
    pub step: &'static str,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
    pub context: Vec<ContextEntry>,
}

/// Where a launch happens: the cluster's partition, region, account and name.
pub struct Place<'a> {
    pub partition: &'a str,
    pub region: &'a str,
    pub account: &'a str,
    pub cluster: &'a str,
}

fn entry(key: &str, kind: &str, values: Vec<String>) -> ContextEntry {
    ContextEntry {
        key: key.to_string(),
        kind: kind.to_string(),
        values,
    }
}

/// `spec.advancedNetworking.associatePublicIPAddress` when the NodeClass sets it. Unset, EKS
/// follows the subnet's `MapPublicIpOnLaunch` and the request is judged without the key, as
/// the SCP of aws/containers-roadmap#2583 (`BoolIfExists`) judged it: denied.
pub fn associate_public_ip(class: &AutoNodeClass) -> Option<bool> {
    class
        .spec
        .get("advancedNetworking")?
        .get("associatePublicIPAddress")?
        .as_bool()
}

/// The tags a NodeClass asks EKS to put on what it launches (`spec.tags`).
pub fn class_tags(class: &AutoNodeClass) -> Vec<(String, String)> {
    class
        .spec
        .get("tags")
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The requests EKS makes as the cluster role to launch for `pool` from `class`:
/// - with `spec.role`, it adds the node role to an instance profile it made (its service-linked
///   role creates the profile, and SCPs never apply to service-linked roles) and passes the
///   role to EC2 (aws/containers-roadmap#2624; `spec.instanceProfile` skips both);
/// - it launches with `ec2:CreateFleet`/`ec2:RunInstances`, tagged with the cluster, NodeClass
///   and NodePool names and the NodeClass's tags (AmazonEKSComputePolicy's conditions), with a
///   public address as the NodeClass says (aws/containers-roadmap#2583).
///
/// The instance profile's name is EKS's own; the ARN asked about carries the `eks` prefix the
/// managed policy grants (`instance-profile/eks*`).
pub fn launch_requests(class: &AutoNodeClass, pool: &str, at: &Place) -> Vec<Launch> {
    let Place {
        partition,
        region,
        account,
        cluster,
    } = *at;
    let mut out = Vec::new();
    if let (Some(role), None) = (class.role(), class.instance_profile()) {
        out.push(Launch {
            step: "adding the node role to the NodeClass's instance profile",
            actions: vec!["iam:AddRoleToInstanceProfile".to_string()],
            resources: vec![format!(
                "arn:{partition}:iam::{account}:instance-profile/eks-{cluster}-{}",
                class.name()
            )],
            context: Vec::new(),
        });
        let role = role.trim_start_matches('/');
        out.push(Launch {
            step: "passing the node role to EC2",
            actions: vec!["iam:PassRole".to_string()],
            resources: vec![format!("arn:{partition}:iam::{account}:role/{role}")],
            context: vec![entry(
                "iam:PassedToService",
                "string",
                vec!["ec2.amazonaws.com".to_string()],
            )],
        });
    }
    let mut tags = vec![
        ("eks:eks-cluster-name".to_string(), cluster.to_string()),
        (
            "eks:kubernetes-node-class-name".to_string(),
            class.name().to_string(),
        ),
        (
            "eks:kubernetes-node-pool-name".to_string(),
            pool.to_string(),
        ),
    ];
    for (k, v) in class_tags(class) {
        if !tags.iter().any(|(t, _)| *t == k) {
            tags.push((k, v));
        }
    }
    let mut context: Vec<ContextEntry> = tags
        .iter()
        .map(|(k, v)| entry(&format!("aws:RequestTag/{k}"), "string", vec![v.clone()]))
        .collect();
    context.push(entry(
        "aws:TagKeys",
        "stringList",
        tags.iter().map(|(k, _)| k.clone()).collect(),
    ));
    if let Some(public) = associate_public_ip(class) {
        context.push(entry(
            "ec2:AssociatePublicIpAddress",
            "boolean",
            vec![public.to_string()],
        ));
    }
    out.push(Launch {
        step: "launching its instances",
        actions: vec![
            "ec2:CreateFleet".to_string(),
            "ec2:RunInstances".to_string(),
        ],
        resources: ["instance", "network-interface", "volume"]
            .iter()
            .map(|r| format!("arn:{partition}:ec2:{region}:{account}:{r}/*"))
            .collect(),
        context,
    });
    out
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

    fn class(spec: serde_json::Value) -> AutoNodeClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "private"},
            "spec": spec,
        }))
        .unwrap()
    }

    const AT: Place = Place {
        partition: "aws",
        region: "eu-west-1",
        account: "111122223333",
        cluster: "prod",
    };

    #[test]
    fn a_role_class_asks_for_the_profile_and_passrole_and_the_launch_carries_its_tags() {
        let c = class(serde_json::json!({
            "role": "AutoNodes",
            "tags": {"Team": "platform"},
            "advancedNetworking": {"associatePublicIPAddress": false},
        }));
        let asked = launch_requests(&c, "apps", &AT);
        assert_eq!(asked.len(), 3);
        assert_eq!(asked[0].actions, ["iam:AddRoleToInstanceProfile"]);
        assert_eq!(
            asked[0].resources,
            ["arn:aws:iam::111122223333:instance-profile/eks-prod-private"]
        );
        assert_eq!(
            asked[1].resources,
            ["arn:aws:iam::111122223333:role/AutoNodes"]
        );
        let launch = &asked[2];
        assert!(
            launch
                .resources
                .contains(&"arn:aws:ec2:eu-west-1:111122223333:network-interface/*".to_string())
        );
        let keys: Vec<&str> = launch.context.iter().map(|e| e.key.as_str()).collect();
        assert!(keys.contains(&"aws:RequestTag/Team"));
        assert!(keys.contains(&"aws:RequestTag/eks:kubernetes-node-pool-name"));
        let public = launch
            .context
            .iter()
            .find(|e| e.key == "ec2:AssociatePublicIpAddress")
            .unwrap();
        assert_eq!(public.values, ["false"]);
        let tag_keys = launch
            .context
            .iter()
            .find(|e| e.key == "aws:TagKeys")
            .unwrap();
        assert_eq!(tag_keys.values.len(), 4);
    }

    #[test]
    fn a_premade_instance_profile_skips_the_iam_steps_and_an_unset_public_ip_is_absent() {
        let c = class(serde_json::json!({"instanceProfile": "eks-nodes"}));
        let asked = launch_requests(&c, "apps", &AT);
        assert_eq!(asked.len(), 1);
        assert!(
            !asked[0]
                .context
                .iter()
                .any(|e| e.key == "ec2:AssociatePublicIpAddress")
        );
    }
}
