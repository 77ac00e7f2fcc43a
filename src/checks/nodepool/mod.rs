//! KD4xxx: NodePools and capacity.

pub mod nodeclassref_invalid;
pub mod spot_service_linked_role_missing;
