//! What each IAM action is for in a Karpenter install, what breaks when it is blocked, and the
//! documented configuration that works around a block (failure-modes §4.2). One table, used
//! to group denied actions in findings and in the pre-install table.

use crate::finding::Severity;

/// A Karpenter feature that needs some IAM actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Feature {
    /// Stable id, e.g. `ssm-ami-alias`.
    pub id: &'static str,
    /// What stops working when it is blocked.
    pub breaks: &'static str,
    /// The documented configuration that works around a block.
    pub workaround: &'static str,
}

macro_rules! feature {
    ($name:ident, $id:literal, $breaks:literal, $workaround:literal) => {
        pub const $name: Feature = Feature {
            id: $id,
            breaks: $breaks,
            workaround: $workaround,
        };
    };
}

feature!(
    LAUNCH,
    "launch",
    "Karpenter cannot launch nodes (CreateFleet, RunInstances, launch templates, tags on create)",
    "satisfy the guardrail from the EC2NodeClass: required keys in spec.tags, metadataOptions.httpTokens: required, encrypted volumes, NodePool requirements limited to allowed instance types"
);
feature!(
    DELETION,
    "deletion",
    "Karpenter cannot terminate nodes or delete launch templates (consolidation, expiry and drift stall)",
    "allow ec2:TerminateInstances and ec2:DeleteLaunchTemplate on resources tagged for this cluster"
);
feature!(
    DISCOVERY,
    "discovery",
    "subnets, security groups, AMIs and instance types are never discovered (EC2NodeClass conditions stay Unknown)",
    "allow the ec2:Describe* read actions with aws:RequestedRegion set to the cluster's region"
);
feature!(
    SSM_AMI_ALIAS,
    "ssm-ami-alias",
    "amiSelectorTerms aliases (al2023@…, bottlerocket@…) never resolve: AMIsReady stays Unknown",
    "pin AMIs by id, name or tags in amiSelectorTerms instead of an alias (these use ec2:DescribeImages only)"
);
feature!(
    PASS_NODE_ROLE,
    "pass-node-role",
    "instances cannot be launched with the node role",
    "allow iam:PassRole on the node role ARN (with its path) with iam:PassedToService ec2.amazonaws.com"
);
feature!(
    INSTANCE_PROFILE,
    "instance-profile",
    "Karpenter cannot create or manage instance profiles for spec.role (InstanceProfileReady stays Unknown)",
    "pre-create an instance profile holding the node role and set spec.instanceProfile instead of spec.role"
);
feature!(
    SPOT_SLR,
    "spot-slr",
    "the first Spot launch fails: the Spot service-linked role cannot be created (AuthFailure.ServiceLinkedRoleCreationNotPermitted)",
    "have a privileged identity run `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once, or restrict NodePools to on-demand"
);
feature!(
    KMS,
    "kms",
    "encrypted volumes with a customer managed key cannot be used: instances terminate at launch (Client.InternalError)",
    "use the AWS-managed aws/ebs key (or an approved key) in blockDeviceMappings, or set encrypted: false where policy allows"
);
feature!(
    INTERRUPTION_QUEUE,
    "interruption-queue",
    "Spot interruptions, rebalance and health events are not handled ahead of time",
    "run without an interruption queue (leave settings.interruptionQueue empty), or have the platform team create the queue and rules"
);
feature!(
    EKS_ENDPOINT,
    "eks-endpoint",
    "the controller cannot discover the cluster endpoint (CrashLoopBackOff: failed detecting cluster endpoint)",
    "allow eks:DescribeCluster on the cluster ARN, or set settings.clusterEndpoint"
);
feature!(
    POD_IDENTITY,
    "pod-identity",
    "EKS Pod Identity cannot hand credentials to the controller",
    "use IRSA for the controller (annotate its ServiceAccount with eks.amazonaws.com/role-arn)"
);
feature!(
    PRICING,
    "pricing",
    "on-demand prices are not refreshed",
    "none needed: Karpenter falls back to the prices built into the binary"
);
feature!(
    ZONAL_SHIFT,
    "zonal-shift",
    "zonal shift status cannot be read (start-up fails when enableZonalShift is on)",
    "allow arc-zonal-shift:GetManagedResource, or leave settings.enableZonalShift off"
);
feature!(
    ACCESS_ENTRIES,
    "access-entries",
    "nodes cannot be authorized through an EKS access entry",
    "map the node role in the aws-auth ConfigMap (authentication mode CONFIG_MAP or API_AND_CONFIG_MAP)"
);
feature!(
    IAM_ROLES,
    "iam-roles",
    "the installer cannot create the controller and node roles",
    "have the platform team create the roles (and the controller policy) for you"
);
feature!(
    OTHER,
    "other",
    "a permission Karpenter uses is blocked",
    "grant the action, or ask the owner of the policy that blocks it"
);

/// What losing `action` costs now, as a finding's severity. Most actions are what Karpenter
/// does on every launch, termination or discovery: an error. A few serve only a background job
/// or an option: `iam:ListInstanceProfiles` garbage-collects leaked instance profiles (1.7+;
/// provisioning is unaffected, kubernetes/kops#17854, until the account's profile quota is
/// reached), `ec2:DescribeInstanceStatus` replaces impaired instances (1.12+), and
/// `ec2:DescribeCapacityReservations` / `ec2:DescribePlacementGroups` resolve an EC2NodeClass's
/// `capacityReservationSelectorTerms` / `placementGroup`, so they break only once a class sets
/// one (`in_use(field)` tells). Karpenter falls back to its built-in prices without
/// `pricing:GetProducts`.
pub fn severity(action: &str, in_use: &dyn Fn(&str) -> bool) -> Severity {
    match action.to_ascii_lowercase().as_str() {
        "pricing:getproducts" => Severity::Info,
        "iam:listinstanceprofiles" | "ec2:describeinstancestatus" => Severity::Warning,
        "ec2:describecapacityreservations" if !in_use("capacityReservationSelectorTerms") => {
            Severity::Warning
        }
        "ec2:describeplacementgroups" if !in_use("placementGroup") => Severity::Warning,
        _ => Severity::Error,
    }
}

/// The feature an action belongs to.
pub fn of(action: &str) -> Feature {
    let a = action.to_ascii_lowercase();
    let (service, op) = a.split_once(':').unwrap_or(("", a.as_str()));
    match (service, op) {
        ("ssm", _) => SSM_AMI_ALIAS,
        ("iam", "passrole") => PASS_NODE_ROLE,
        ("iam", "createservicelinkedrole") => SPOT_SLR,
        ("iam", op) if op.contains("instanceprofile") => INSTANCE_PROFILE,
        (
            "iam",
            "createrole" | "createpolicy" | "attachrolepolicy" | "createopenidconnectprovider",
        ) => IAM_ROLES,
        ("kms", _) => KMS,
        ("sqs" | "events", _) => INTERRUPTION_QUEUE,
        ("pricing", _) => PRICING,
        ("eks", "describecluster") => EKS_ENDPOINT,
        ("eks", "createpodidentityassociation") | ("eks-auth", _) => POD_IDENTITY,
        ("eks", "createaccessentry") => ACCESS_ENTRIES,
        ("arc-zonal-shift", _) => ZONAL_SHIFT,
        ("ec2", op) if op.starts_with("describe") || op.starts_with("get") => DISCOVERY,
        ("ec2", "terminateinstances" | "deletelaunchtemplate") => DELETION,
        ("ec2", _) => LAUNCH,
        _ => OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_actions_are_warnings_until_a_class_uses_them() {
        let none = |_: &str| false;
        let placement = |f: &str| f == "placementGroup";
        type InUse<'a> = &'a dyn Fn(&str) -> bool;
        let cases: [(&str, InUse, Severity); 7] = [
            ("ec2:RunInstances", &none, Severity::Error),
            ("pricing:GetProducts", &none, Severity::Info),
            ("iam:ListInstanceProfiles", &none, Severity::Warning),
            ("ec2:DescribeInstanceStatus", &none, Severity::Warning),
            ("ec2:DescribePlacementGroups", &none, Severity::Warning),
            ("ec2:DescribePlacementGroups", &placement, Severity::Error),
            (
                "ec2:DescribeCapacityReservations",
                &placement,
                Severity::Warning,
            ),
        ];
        for (action, in_use, want) in cases {
            assert_eq!(severity(action, in_use), want, "{action}");
        }
    }

    #[test]
    fn actions_map_to_the_feature_they_break() {
        assert_eq!(of("ssm:GetParameter"), SSM_AMI_ALIAS);
        assert_eq!(of("iam:CreateServiceLinkedRole"), SPOT_SLR);
        assert_eq!(of("iam:AddRoleToInstanceProfile"), INSTANCE_PROFILE);
        assert_eq!(of("iam:ListInstanceProfiles"), INSTANCE_PROFILE);
        assert_eq!(of("kms:CreateGrant"), KMS);
        assert_eq!(of("sqs:CreateQueue"), INTERRUPTION_QUEUE);
        assert_eq!(of("events:PutRule"), INTERRUPTION_QUEUE);
        assert_eq!(of("pricing:GetProducts"), PRICING);
        assert_eq!(of("eks-auth:AssumeRoleForPodIdentity"), POD_IDENTITY);
        assert_eq!(of("ec2:CreateFleet"), LAUNCH);
        assert_eq!(of("ec2:DescribeSubnets"), DISCOVERY);
        assert_eq!(of("ec2:TerminateInstances"), DELETION);
        assert_eq!(of("iam:PassRole"), PASS_NODE_ROLE);
        assert_eq!(of("s3:GetObject"), OTHER);
    }

    #[test]
    fn pricing_is_benign() {
        assert!(
            of("pricing:GetProducts")
                .workaround
                .starts_with("none needed")
        );
    }
}
