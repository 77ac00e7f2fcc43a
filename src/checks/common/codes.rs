//! The codes of checks that other checks name: an owner in a cause table ("see KD3005"), the
//! check that reports what another one skips. A check never imports another check, so it
//! names one through these constants, each called like the check's `CheckInfo` static; the
//! registry tests hold every constant to the check of that name.

/// Declares one constant per named check, and [`ALL`] pairing each constant's name with its
/// code for the registry tests.
macro_rules! codes {
    ($($name:ident = $code:literal,)*) => {
        $(
            #[doc = concat!("`", $code, "`.")]
            pub const $name: &str = $code;
        )*

        /// Every constant above, `(name, code)`: the name is the check's slug in capitals.
        pub const ALL: &[(&str, &str)] = &[$((stringify!($name), $code)),*];
    };
}

codes! {
    CONTROLLER_NOT_RUNNING = "KD1001",
    CONTROLLER_SETTINGS_MISMATCH = "KD1004",
    CONTROLLER_UNSCHEDULABLE = "KD1005",
    AUTOMODE_KARPENTER_COEXISTENCE = "KD1201",
    CONTROLLER_CREDENTIALS_MISSING = "KD2001",
    CONTROLLER_PODS_PREDATE_IDENTITY = "KD2006",
    IRSA_TRUST_POLICY_MISMATCH = "KD2003",
    IRSA_ROLE_INVALID = "KD2004",
    CONTROLLER_ACTION_BLOCKED_BY_SCP = "KD2101",
    CONTROLLER_PERMISSION_MISSING = "KD2102",
    CONTROLLER_PERMISSION_BOUNDARY_BLOCKS = "KD2103",
    INSTALL_ACTION_BLOCKED_BY_SCP = "KD2201",
    NODECLASS_SUBNETS_UNRESOLVED = "KD3001",
    NODECLASS_SECURITY_GROUPS_UNRESOLVED = "KD3002",
    NODECLASS_AMI_UNRESOLVABLE = "KD3003",
    NODECLASS_AMI_MISMATCH = "KD3004",
    NODECLASS_NODE_ROLE_INVALID = "KD3005",
    NODECLASS_INSTANCE_PROFILE_INVALID = "KD3006",
    NODECLASS_PASSROLE_DENIED = "KD3007",
    NODECLASS_NOT_READY = "KD3008",
    NODECLASS_SUBNET_IPS_LOW = "KD3009",
    NODECLASS_EBS_KMS_UNUSABLE = "KD3010",
    AUTOMODE_NODECLASS_NOT_READY = "KD3101",
    NODEPOOL_NODECLASSREF_INVALID = "KD4001",
    NODEPOOL_LIMITS_REACHED = "KD4002",
    NODEPOOL_REQUIREMENTS_UNSATISFIABLE = "KD4003",
    SPOT_SERVICE_LINKED_ROLE_MISSING = "KD4004",
    NODEPOOL_NOT_READY = "KD4005",
    DISRUPTION_BLOCKED = "KD4101",
    NODES_STUCK_TERMINATING = "KD4102",
    DISRUPTION_SETTINGS_INEFFECTIVE = "KD4104",
    AUTOMODE_NODEPOOL_UNSERVED = "KD4201",
    NODE_ROLE_NOT_MAPPED = "KD5001",
    AWS_AUTH_MALFORMED = "KD5002",
    ACCESS_ENTRY_WRONG_TYPE = "KD5003",
    NODE_ENDPOINT_UNREACHABLE = "KD5004",
    NODE_AWS_ENDPOINTS_UNREACHABLE = "KD5005",
    NODE_SECURITY_GROUPS_BLOCK_CLUSTER = "KD5006",
    NODECLASS_USERDATA_INVALID = "KD5007",
    VPC_CNI_NOT_READY = "KD5008",
    AUTOMODE_NODE_ACCESS_MISSING = "KD5101",
    NODECLAIM_LAUNCH_FAILED = "KD6001",
    NODECLAIM_NOT_REGISTERED = "KD6002",
    NODECLAIM_NOT_INITIALIZED = "KD6003",
    NODE_STARTUP_TAINT_STUCK = "KD6004",
    NODE_EXTENDED_RESOURCE_MISSING = "KD6005",
    PENDING_PODS_UNSERVED = "KD8001",
    PENDING_PODS_TOO_LARGE = "KD8002",
    PENDING_PODS_ZONE_UNREACHABLE = "KD8003",
}
