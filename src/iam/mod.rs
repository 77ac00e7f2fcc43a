//! IAM reasoning shared by the identity and node checks: reading policy and trust documents,
//! normalising simulator results and attributing denials, and the action → feature table.
//! Pure logic; the facts that feed it are fetched by the context like every other fact.

pub mod features;
pub mod policy;
pub mod reference;
pub mod request;
pub mod simulation;
pub mod trust;
