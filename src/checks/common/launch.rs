//! Why a launch failed, from the reason Karpenter gives, and the checks that judge each cause
//! (KD6001 and KD4005 read the same table).

use super::codes::*;
use crate::check::Severity;
use crate::finding::Finding;

/// A launch failure's cause, in words, with the checks that judge it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    pub summary: &'static str,
    pub owners: &'static [&'static str],
    pub severity: Severity,
}

const fn cause(
    summary: &'static str,
    owners: &'static [&'static str],
    severity: Severity,
) -> Cause {
    Cause {
        summary,
        owners,
        severity,
    }
}

/// What to say when Karpenter reports an authorization failure and every check that
/// simulates the controller's permissions passed: the simulation allows what AWS denied, so
/// the cause is one a simulation cannot see.
pub const DENIED_BUT_SIMULATION_ALLOWS: &str = "AWS denied it although the simulation of the controller's policy allows it: look at what a simulation cannot see (a condition on a key it does not carry, such as request tags or aws:ViaAWSService, which is false for the DryRun RunInstances of Karpenter's validation; a session policy; an SCP or resource policy outside the account; a policy changed since the run); decode the failure with `aws sts decode-authorization-message --encoded-message <message>` and compare the role's policy with `karpdoctor reference-policy`";

/// The checks that simulate the controller's permissions: an authorization failure is theirs.
pub const PERMISSION_OWNERS: &[&str] = &[
    CONTROLLER_ACTION_BLOCKED_BY_SCP,
    CONTROLLER_PERMISSION_MISSING,
    CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
    NODECLASS_PASSROLE_DENIED,
];

/// The checks that own the controller's own credentials: its identity wiring and, in a VPC
/// without a way out, the STS or EKS Auth endpoint its pods need (the same owners as the
/// controller log's `credentials` pattern).
pub const CREDENTIAL_OWNERS: &[&str] = crate::logs::CREDENTIAL_OWNERS;

impl Cause {
    /// Links a finding about this cause to the checks that own it.
    pub fn link(&self, finding: Finding) -> Finding {
        finding.owned_by_checks(self.owners)
    }

    /// The same failure of an EKS Auto Mode NodeClaim. EKS launches as the cluster role, from
    /// an `eks.amazonaws.com` NodeClass, with AMIs and credentials of its own, so the
    /// self-managed owners (the controller's role, its EC2NodeClass, its AMIs) do not apply:
    /// each maps to the Auto Mode check that judges the same thing, or to none, when
    /// karpdoctor judges nothing Auto Mode has in its place (docs/auto-mode.md §9).
    pub fn on_auto_mode(self) -> Cause {
        let summary = match self.summary {
            "the controller role's policy does not allow the launch" => {
                "the cluster role's policy does not allow the launch"
            }
            "the controller role's permissions boundary denies the launch" => {
                "the cluster role's permissions boundary denies the launch"
            }
            "the instance profile in the EC2NodeClass status does not exist" => {
                "the NodeClass's instance profile does not exist"
            }
            "the EC2NodeClass is not Ready" => "the NodeClass is not Ready",
            "the controller cannot get its own AWS credentials" => {
                "EKS could not get the cluster role's credentials"
            }
            s => s,
        };
        let has = |set: &[&str]| self.owners.iter().any(|o| set.contains(o));
        let owners: &'static [&'static str] = if has(PERMISSION_OWNERS) {
            &[AUTOMODE_CLUSTER_ROLE_INVALID]
        } else if has(&[NODECLASS_INSTANCE_PROFILE_INVALID]) {
            // EKS's service-linked role creates the profile; the cluster role adds the node
            // role to it (an SCP on that call: aws/containers-roadmap#2624).
            &[AUTOMODE_NODECLASS_NOT_READY, AUTOMODE_CLUSTER_ROLE_INVALID]
        } else if has(&[
            NODECLASS_NOT_READY,
            NODECLASS_SUBNETS_UNRESOLVED,
            NODECLASS_SECURITY_GROUPS_UNRESOLVED,
        ]) {
            &[AUTOMODE_NODECLASS_NOT_READY]
        } else if has(&[NODEPOOL_REQUIREMENTS_UNSATISFIABLE]) {
            &[AUTOMODE_NODEPOOL_UNSERVED]
        } else if self.owners.is_empty() && self.severity == Severity::Error {
            // A launch that failed without a reason karpdoctor knows (or never ended: Auto
            // Mode writes no controller log to read): what Auto Mode's checks find about the
            // role it launches as and the NodeClass it launches from explains it
            // (aws/containers-roadmap#2487: a NodeClaim that never launched, nothing logged).
            &[AUTOMODE_CLUSTER_ROLE_INVALID, AUTOMODE_NODECLASS_NOT_READY]
        } else {
            // AMIs, the Spot service-linked role, subnet addresses, credentials, capacity:
            // EKS's own, or not judged on Auto Mode, so the failure stands as its own cause.
            &[]
        };
        Cause {
            summary,
            owners,
            severity: self.severity,
        }
    }
}

/// Links a symptom finding to the checks that own its causes (see `Finding::owned_by`). When
/// those are the checks that simulate the controller's permissions, a run where they all
/// pass says that AWS denied what the simulation allows, instead of sending the user to them.
pub trait OwnedBy {
    fn owned_by_checks(self, owners: &[&str]) -> Self;
}

impl OwnedBy for Finding {
    fn owned_by_checks(self, owners: &[&str]) -> Finding {
        let finding = self.owned_by(owners.iter());
        // An authorization failure (owned by the simulating checks, and by the controller's
        // identity wiring, without which they have no role to simulate): when every owner
        // passed, the denial is one a simulation cannot see.
        let authorization = |o: &&str| {
            PERMISSION_OWNERS.contains(o)
                || [
                    CONTROLLER_CREDENTIALS_MISSING,
                    CONTROLLER_PODS_PREDATE_IDENTITY,
                ]
                .contains(o)
        };
        if owners.iter().any(|o| PERMISSION_OWNERS.contains(o)) && owners.iter().all(authorization)
        {
            finding.hint_if_owners_pass(DENIED_BUT_SIMULATION_ALLOWS)
        } else {
            finding
        }
    }
}

/// Classifies a launch failure from the reason Karpenter gave (the AWS provider's
/// `ToReasonMessage`, v1.2+) and, for the generic reasons, from the message.
pub fn launch_cause(reason: &str, message: &str) -> Cause {
    use Severity::{Error, Warning};
    let m = message.to_ascii_lowercase();
    let by_message = || {
        if m.contains("servicelinkedrolecreationnotpermitted") {
            Some("SpotSLRCreationFailed")
        } else if m.contains("insufficientfreeaddressesinsubnet") {
            Some("InsufficientFreeAddressesInSubnet")
        } else if m.contains("iaminstanceprofile.name is invalid")
            || m.contains("invalid iam instance profile")
        {
            Some("InstanceProfileNameInvalid")
        } else if m.contains("unauthorizedoperation")
            || m.contains("accessdenied")
            || m.contains("not authorized")
        {
            Some("Unauthorized")
        } else if m.contains("no instance types satisfy requirements of amis") {
            // Karpenter's launch removes the instance types no resolved AMI can boot (their
            // architecture or requirements): the AMIs are the cause, not the NodePool.
            Some("AMIRequirementsUnsatisfied")
        } else if crate::logs::classify(&m).is_some_and(|p| p.id == "credentials") {
            // The controller's own AWS credentials failed before the launch was even sent
            // ("get identity: get credentials: failed to refresh cached credentials").
            Some("ControllerCredentials")
        } else if m.contains("invalidamiid") {
            Some("AMINotFound")
        } else if m.contains("insufficientinstancecapacity")
            || m.contains("unavailable during launch")
            || m.contains("insufficient capacity")
        {
            Some("InsufficientCapacityError")
        } else if m.contains("belong to different networks") {
            Some("SecurityGroupSubnetVPCMismatch")
        } else if m.contains("instance profile hasn't resolved")
            || m.contains("resolving cluster cidr")
        {
            // Karpenter 0.37 marks the NodeClaim LaunchFailed while its EC2NodeClass is not
            // ready; 1.x deletes the NodeClaim instead.
            Some("NodeClassNotReady")
        } else {
            None
        }
    };
    let reason = match reason {
        "LaunchFailed" | "FailedLaunch" | "" => by_message().unwrap_or(reason),
        // Karpenter files some fleet errors as insufficient capacity (1.6+ routes
        // InsufficientFreeAddressesInSubnet there, aws/karpenter-provider-aws#8199; a spot
        // launch without the service-linked role reads the same): the code the message
        // carries is the cause, not a lack of capacity.
        "InsufficientCapacityError" => match by_message() {
            Some(r @ ("InsufficientFreeAddressesInSubnet" | "SpotSLRCreationFailed")) => r,
            _ => reason,
        },
        r => r,
    };
    match reason {
        "SpotSLRCreationFailed" => cause(
            "the Spot service-linked role does not exist and the controller may not create it",
            &[SPOT_SERVICE_LINKED_ROLE_MISSING],
            Error,
        ),
        "Unauthorized" if m.contains("service control policy") => cause(
            "an organization SCP denies the launch",
            &[CONTROLLER_ACTION_BLOCKED_BY_SCP],
            Error,
        ),
        "Unauthorized"
            if m.contains("permission boundary") || m.contains("permissions boundary") =>
        {
            cause(
                "the controller role's permissions boundary denies the launch",
                &[CONTROLLER_PERMISSION_BOUNDARY_BLOCKS],
                Error,
            )
        }
        "Unauthorized" => cause(
            "the controller role's policy does not allow the launch",
            &[CONTROLLER_PERMISSION_MISSING, NODECLASS_PASSROLE_DENIED],
            Error,
        ),
        "AMIRequirementsUnsatisfied" => cause(
            "no resolved AMI fits the instance types the NodePool allows (their architecture)",
            &[NODECLASS_AMI_MISMATCH, NODECLASS_AMI_UNRESOLVABLE],
            Error,
        ),
        "ControllerCredentials" => cause(
            "the controller cannot get its own AWS credentials",
            CREDENTIAL_OWNERS,
            Error,
        ),
        "AMIAuthorizationFailure" => cause(
            "the AMI is not shared with this account",
            &[NODECLASS_AMI_UNRESOLVABLE],
            Error,
        ),
        "InvalidAMIID" | "AMINotFound" => cause(
            "the AMI does not exist in this region or is not visible to the account",
            &[NODECLASS_AMI_UNRESOLVABLE],
            Error,
        ),
        "SecurityGroupSubnetVPCMismatch" => cause(
            "the security groups and subnets are in different VPCs",
            &[
                NODECLASS_SUBNETS_UNRESOLVED,
                NODECLASS_SECURITY_GROUPS_UNRESOLVED,
            ],
            Error,
        ),
        "InstanceProfileNameInvalid" => cause(
            "the instance profile in the EC2NodeClass status does not exist",
            &[NODECLASS_INSTANCE_PROFILE_INVALID],
            Error,
        ),
        "InsufficientFreeAddressesInSubnet" => cause(
            "the subnets have no free IP addresses",
            &[NODECLASS_SUBNET_IPS_LOW],
            Error,
        ),
        "NodeClassReadinessUnknown" | "NodeClassNotReady" => cause(
            "the EC2NodeClass is not Ready",
            &[NODECLASS_NOT_READY],
            Error,
        ),
        "InstanceTypeResolutionFailed" => cause(
            "no instance type could be resolved",
            &[NODEPOOL_REQUIREMENTS_UNSATISFIABLE],
            Error,
        ),
        "SubnetResolutionFailed" => cause(
            "no subnet could be resolved",
            &[NODECLASS_SUBNETS_UNRESOLVED],
            Error,
        ),
        // An InternalError answer to CreateFleet itself (Karpenter retries it). A KMS key the
        // launch may not use does not fail the launch: EC2 accepts it and terminates the
        // instance with Client.InternalError, which KD6002 and KD3010 own.
        "InternalError" => cause(
            "EC2 answered the launch with an internal error (usually transient; Karpenter retries)",
            &[],
            Warning,
        ),
        "InsufficientCapacityError" => cause(
            "EC2 had no capacity for the instance types requested",
            &[],
            Warning,
        ),
        "VCPULimitExceeded" | "SpotQuotaExceeded" | "FleetQuotaExceeded" => cause(
            "an EC2 service quota is exhausted (request an increase in Service Quotas)",
            &[],
            Error,
        ),
        "RequestLimitExceeded" => cause("EC2 throttled the controller's requests", &[], Warning),
        "UserDataSizeLimitExceeded" => cause(
            "the rendered user data exceeds EC2's 16 KB limit",
            &[],
            Error,
        ),
        "AccountPendingVerification" => cause(
            "the account is still being verified for this region",
            &[],
            Error,
        ),
        "FreeTierIneligible" => cause(
            "the account may only launch Free Tier instance types",
            &[NODEPOOL_REQUIREMENTS_UNSATISFIABLE],
            Error,
        ),
        "LaunchTemplateNotFound" => cause(
            "a launch template disappeared during launch (usually transient)",
            &[],
            Warning,
        ),
        _ => cause("the launch failed", &[], Error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthorized_is_told_apart_by_its_message() {
        let scp = launch_cause(
            "Unauthorized",
            "User is not authorized to perform this operation due to a service control policy",
        );
        assert_eq!(scp.owners, ["KD2101"]);
        let boundary = launch_cause(
            "Unauthorized",
            "User is not authorized to perform this operation due to a permission boundary",
        );
        assert_eq!(boundary.owners, ["KD2103"]);
        let policy = launch_cause(
            "Unauthorized",
            "User is not authorized to perform this operation because no identity-based policy allows it",
        );
        assert_eq!(policy.owners, ["KD2102", "KD3007"]);
    }

    #[test]
    fn launch_messages_that_name_their_cause_are_owned_by_it() {
        // aws/karpenter-provider-aws#7211: the launch error names the AMIs.
        let amis = launch_cause(
            "LaunchFailed",
            "launching nodeclaim, creating instance, getting launch template configs, getting launch templates, no instance types satisfy requirements of amis [ami-06d9bcac32f727ddb]",
        );
        assert_eq!(amis.owners, ["KD3004", "KD3003"]);
        let creds = launch_cause(
            "",
            "creating instance, getting launch template configs, operation error EC2: DescribeLaunchTemplates, get identity: get credentials: failed to refresh cached credentials, failed to retrieve credentials, operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 0, dial tcp: i/o timeout",
        );
        assert_eq!(creds.owners, CREDENTIAL_OWNERS);
        assert!(creds.owners.contains(&"KD5005"));
    }

    #[test]
    fn auto_mode_failures_belong_to_auto_mode_checks() {
        let denied = launch_cause(
            "LaunchFailed",
            "creating instance, UnauthorizedOperation: You are not authorized to perform this operation",
        )
        .on_auto_mode();
        assert_eq!(denied.owners, ["KD2301"]);
        assert_eq!(
            denied.summary,
            "the cluster role's policy does not allow the launch"
        );
        let scp = launch_cause(
            "Unauthorized",
            "not authorized to perform this operation due to a service control policy",
        )
        .on_auto_mode();
        assert_eq!(scp.owners, ["KD2301"]);
        let profile = launch_cause("InstanceProfileNameInvalid", "").on_auto_mode();
        assert_eq!(profile.owners, ["KD3101", "KD2301"]);
        assert_eq!(
            profile.summary,
            "the NodeClass's instance profile does not exist"
        );
        assert_eq!(
            launch_cause("NodeClassNotReady", "").on_auto_mode().summary,
            "the NodeClass is not Ready"
        );
        assert_eq!(
            launch_cause("InstanceTypeResolutionFailed", "")
                .on_auto_mode()
                .owners,
            ["KD4201"]
        );
        // EKS picks the AMIs and owns the Spot role: nothing of karpdoctor's judges them.
        assert!(
            launch_cause("AMINotFound", "")
                .on_auto_mode()
                .owners
                .is_empty()
        );
        // Capacity stays a warning with no owner; an unknown failure goes to the role and class.
        let ice = launch_cause("InsufficientCapacityError", "").on_auto_mode();
        assert!(ice.owners.is_empty());
        assert_eq!(
            launch_cause("", "").on_auto_mode().owners,
            ["KD2301", "KD3101"]
        );
    }

    #[test]
    fn generic_reasons_fall_back_to_the_message() {
        let c = launch_cause(
            "LaunchFailed",
            "creating instance, AuthFailure.ServiceLinkedRoleCreationNotPermitted: The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances",
        );
        assert_eq!(c.owners, ["KD4004"]);
        let ice = launch_cause(
            "",
            "NodeClaim default-x event: all requested instance types were unavailable during launch",
        );
        assert_eq!(ice.severity, Severity::Warning);
        assert_eq!(
            launch_cause("SomethingNew", "").summary,
            "the launch failed"
        );
    }
}
