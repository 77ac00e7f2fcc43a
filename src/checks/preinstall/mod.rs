//! KD22xx: `karpdoctor pre-install`, before Karpenter exists. About the installer's own
//! identity and the account's SCPs, not about a running install.

pub mod install_action_blocked_by_scp;
pub mod install_prerequisites_missing;
