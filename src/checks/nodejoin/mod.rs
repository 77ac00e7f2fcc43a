//! KD5xxx: whether nodes Karpenter launches can join the cluster: their role must be mapped
//! to the node identity in the mechanism the cluster's authentication mode honours, the
//! `aws-auth` ConfigMap or EKS access entries.

pub mod access_entry_wrong_type;
pub mod aws_auth_malformed;
pub mod node_role_not_mapped;
