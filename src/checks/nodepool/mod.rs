//! KD4xxx: NodePools and capacity.

pub mod limits_reached;
pub mod nodeclassref_invalid;
pub mod not_ready;
pub mod requirements_unsatisfiable;
pub mod spot_service_linked_role_missing;
