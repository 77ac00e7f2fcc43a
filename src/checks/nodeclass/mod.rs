//! KD3xxx: whether each EC2NodeClass resolves to things EC2 can launch with: subnets,
//! security groups, AMIs, a node role and instance profile the controller may pass.

pub mod ami_mismatch;
pub mod ami_unresolvable;
pub mod ebs_kms_unusable;
pub mod instance_profile_invalid;
pub mod node_role_invalid;
pub mod not_ready;
pub mod passrole_denied;
pub mod security_groups_unresolved;
pub mod subnet_ips_low;
pub mod subnets_unresolved;
