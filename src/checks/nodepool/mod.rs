//! KD4xxx: NodePools and capacity.

pub mod nodeclassref_invalid;
