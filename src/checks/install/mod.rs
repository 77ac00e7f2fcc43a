//! KD1xxx: the controller Deployment and pods, CRDs and versions, webhooks, settings.

pub mod controller_not_running;
pub mod crds_missing_or_outdated;
