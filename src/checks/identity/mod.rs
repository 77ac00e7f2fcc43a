//! KD2xxx: how the controller gets AWS credentials (IRSA or EKS Pod Identity) and whether that
//! wiring is complete.

pub mod both_irsa_and_pod_identity;
pub mod controller_action_blocked_by_scp;
pub mod controller_credentials_missing;
pub mod controller_permission_boundary_blocks;
pub mod controller_permission_missing;
pub mod controller_pods_predate_identity;
pub mod controller_policy_overbroad;
pub mod irsa_oidc_provider_missing;
pub mod irsa_role_invalid;
pub mod irsa_trust_policy_mismatch;
pub mod pod_identity_blocked_by_scp;
pub mod pod_identity_misconfigured;
