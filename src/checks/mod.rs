//! Check implementations, one file per check, grouped by category, and the one table that
//! declares and registers them. A check is its file (which declares it with
//! `declare_check!`), its doc `checks/<CODE>.md`, one line below and its fixture. What checks
//! share lives in [`common`].

pub mod common;

/// Declares each category's check modules and lists every check in [`CHECKS`], in the order
/// written (registry order: sorted by code, which a test enforces).
macro_rules! checks {
    ($(
        $(#[$doc:meta])*
        $category:ident { $( $file:ident :: $check:ident ),* $(,)? }
    )*) => {
        $(
            $(#[$doc])*
            pub mod $category {
                $( pub mod $file; )*
            }
        )*

        /// Every active check, sorted by code.
        pub static CHECKS: &[&crate::check::CheckInfo] = &[$($(&$category::$file::$check,)*)*];
    };
}

checks! {
    /// KD1xxx: the controller Deployment and pods, CRDs and versions, webhooks, settings.
    install {
        controller_not_running::CONTROLLER_NOT_RUNNING,
        crds_missing_or_outdated::CRDS_MISSING_OR_OUTDATED,
        crd_stored_versions_stale::CRD_STORED_VERSIONS_STALE,
        controller_settings_mismatch::CONTROLLER_SETTINGS_MISMATCH,
        controller_unschedulable::CONTROLLER_UNSCHEDULABLE,
        controller_on_karpenter_nodes::CONTROLLER_ON_KARPENTER_NODES,
        stale_webhook_configurations::STALE_WEBHOOK_CONFIGURATIONS,
        karpenter_version_unsupported::KARPENTER_VERSION_UNSUPPORTED,
        controller_log_errors::CONTROLLER_LOG_ERRORS,
    }
    /// KD11xx: `karpdoctor upgrade`, what a target release or Kubernetes minor would break
    /// (docs/upgrade.md). A normal run never runs them.
    upgrade {
        permissions_missing::UPGRADE_PERMISSIONS_MISSING,
        crds_blocked::UPGRADE_CRDS_BLOCKED,
        kubernetes_incompatible::UPGRADE_KUBERNETES_INCOMPATIBLE,
        settings_changed::UPGRADE_SETTINGS_CHANGED,
    }
    /// KD12xx: a self-managed Karpenter beside EKS Auto Mode (docs/auto-mode.md).
    automode_install {
        karpenter_coexistence::AUTOMODE_KARPENTER_COEXISTENCE,
    }
    /// KD2xxx: how the controller gets AWS credentials (IRSA or EKS Pod Identity) and whether that
    /// wiring is complete.
    identity {
        controller_credentials_missing::CONTROLLER_CREDENTIALS_MISSING,
        irsa_oidc_provider_missing::IRSA_OIDC_PROVIDER_MISSING,
        irsa_trust_policy_mismatch::IRSA_TRUST_POLICY_MISMATCH,
        irsa_role_invalid::IRSA_ROLE_INVALID,
        pod_identity_misconfigured::POD_IDENTITY_MISCONFIGURED,
        controller_pods_predate_identity::CONTROLLER_PODS_PREDATE_IDENTITY,
        pod_identity_blocked_by_scp::POD_IDENTITY_BLOCKED_BY_SCP,
        both_irsa_and_pod_identity::BOTH_IRSA_AND_POD_IDENTITY,
        controller_action_blocked_by_scp::CONTROLLER_ACTION_BLOCKED_BY_SCP,
        controller_permission_missing::CONTROLLER_PERMISSION_MISSING,
        controller_permission_boundary_blocks::CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
        controller_policy_overbroad::CONTROLLER_POLICY_OVERBROAD,
    }
    /// KD22xx: `karpdoctor pre-install`, before Karpenter exists. About the installer's own
    /// identity and the account's SCPs, not about a running install.
    preinstall {
        install_action_blocked_by_scp::INSTALL_ACTION_BLOCKED_BY_SCP,
        install_prerequisites_missing::INSTALL_PREREQUISITES_MISSING,
    }
    /// KD23xx: EKS Auto Mode's cluster IAM role, which EKS acts as to run Auto Mode's compute
    /// (docs/auto-mode.md).
    automode_identity {
        cluster_role_invalid::AUTOMODE_CLUSTER_ROLE_INVALID,
    }
    /// KD3xxx: whether each EC2NodeClass resolves to things EC2 can launch with: subnets,
    /// security groups, AMIs, a node role and instance profile the controller may pass.
    nodeclass {
        subnets_unresolved::NODECLASS_SUBNETS_UNRESOLVED,
        security_groups_unresolved::NODECLASS_SECURITY_GROUPS_UNRESOLVED,
        ami_unresolvable::NODECLASS_AMI_UNRESOLVABLE,
        ami_mismatch::NODECLASS_AMI_MISMATCH,
        node_role_invalid::NODECLASS_NODE_ROLE_INVALID,
        instance_profile_invalid::NODECLASS_INSTANCE_PROFILE_INVALID,
        passrole_denied::NODECLASS_PASSROLE_DENIED,
        not_ready::NODECLASS_NOT_READY,
        subnet_ips_low::NODECLASS_SUBNET_IPS_LOW,
        ebs_kms_unusable::NODECLASS_EBS_KMS_UNUSABLE,
    }
    /// KD31xx: EKS Auto Mode's NodeClasses: Ready, and pod addresses in every node zone
    /// (docs/auto-mode.md).
    automode_nodeclass {
        nodeclass_not_ready::AUTOMODE_NODECLASS_NOT_READY,
    }
    /// KD4xxx: NodePools and capacity.
    nodepool {
        nodeclassref_invalid::NODEPOOL_NODECLASSREF_INVALID,
        limits_reached::NODEPOOL_LIMITS_REACHED,
        requirements_unsatisfiable::NODEPOOL_REQUIREMENTS_UNSATISFIABLE,
        spot_service_linked_role_missing::SPOT_SERVICE_LINKED_ROLE_MISSING,
        not_ready::NODEPOOL_NOT_READY,
    }
    /// KD41xx: why nodes Karpenter wants to replace stay, and why it replaces so many
    /// (docs/disruption.md).
    disruption {
        disruption_blocked::DISRUPTION_BLOCKED,
        nodes_stuck_terminating::NODES_STUCK_TERMINATING,
        churn::DISRUPTION_CHURN,
        settings_ineffective::DISRUPTION_SETTINGS_INEFFECTIVE,
    }
    /// KD42xx: NodePools on a cluster where EKS Auto Mode runs compute: which controller serves
    /// each, and what Auto Mode launches for it (docs/auto-mode.md).
    automode_nodepool {
        nodepool_unserved::AUTOMODE_NODEPOOL_UNSERVED,
    }
    /// KD5xxx: whether nodes Karpenter launches can join the cluster: their role must be mapped
    /// to the node identity in the mechanism the cluster's authentication mode honours, the
    /// `aws-auth` ConfigMap or EKS access entries; their subnets must reach the cluster endpoint
    /// and AWS's APIs, their security groups admit the control plane, their user data boot.
    nodejoin {
        node_role_not_mapped::NODE_ROLE_NOT_MAPPED,
        aws_auth_malformed::AWS_AUTH_MALFORMED,
        access_entry_wrong_type::ACCESS_ENTRY_WRONG_TYPE,
        node_endpoint_unreachable::NODE_ENDPOINT_UNREACHABLE,
        node_aws_endpoints_unreachable::NODE_AWS_ENDPOINTS_UNREACHABLE,
        node_security_groups_block_cluster::NODE_SECURITY_GROUPS_BLOCK_CLUSTER,
        nodeclass_userdata_invalid::NODECLASS_USERDATA_INVALID,
        vpc_cni_not_ready::VPC_CNI_NOT_READY,
    }
    /// KD51xx: whether EKS Auto Mode's nodes may join: their node role's access entry
    /// (docs/auto-mode.md).
    automode_nodejoin {
        node_access_missing::AUTOMODE_NODE_ACCESS_MISSING,
    }
    /// KD6xxx: the NodeClaim lifecycle (launched, registered, initialized), read from the
    /// NodeClaims' conditions and their events, and tied to the checks that own each cause.
    nodeclaim {
        launch_failed::NODECLAIM_LAUNCH_FAILED,
        not_registered::NODECLAIM_NOT_REGISTERED,
        not_initialized::NODECLAIM_NOT_INITIALIZED,
        startup_taint_stuck::NODE_STARTUP_TAINT_STUCK,
        extended_resource_missing::NODE_EXTENDED_RESOURCE_MISSING,
        allocatable_below_estimate::NODE_ALLOCATABLE_BELOW_ESTIMATE,
        pod_ips_exhausted::NODE_POD_IPS_EXHAUSTED,
        volume_attach_limit::NODE_VOLUME_ATTACH_LIMIT,
    }
    /// KD7xxx: interruption handling: the SQS queue the controller reads, the EventBridge rules
    /// that feed it, and whether it is configured at all.
    interruption {
        queue_missing::INTERRUPTION_QUEUE_MISSING,
        rules_missing::INTERRUPTION_RULES_MISSING,
        handling_disabled::INTERRUPTION_HANDLING_DISABLED,
    }
    /// KD8xxx: why pods stay Pending: for each pod Karpenter should place, every NodePool's
    /// first reason it cannot, judged as Karpenter's scheduler judges it.
    scheduling {
        pending_pods_unserved::PENDING_PODS_UNSERVED,
        pending_pods_too_large::PENDING_PODS_TOO_LARGE,
        pending_pods_zone_unreachable::PENDING_PODS_ZONE_UNREACHABLE,
    }
    /// KD9xxx: informational findings: things that look wrong and need no action.
    info {
        pricing_access_denied_benign::PRICING_ACCESS_DENIED_BENIGN,
    }
}
