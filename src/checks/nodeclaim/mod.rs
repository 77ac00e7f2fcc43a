//! KD6xxx: the NodeClaim lifecycle (launched, registered, initialized), read from the
//! NodeClaims' conditions and their events, and tied to the checks that own each cause.

pub mod launch_failed;
pub mod not_initialized;
pub mod not_registered;
