//! KD1xxx: the controller Deployment and pods, CRDs and versions, webhooks, settings.

pub mod controller_log_errors;
pub mod controller_not_running;
pub mod controller_on_karpenter_nodes;
pub mod controller_settings_mismatch;
pub mod controller_unschedulable;
pub mod crd_stored_versions_stale;
pub mod crds_missing_or_outdated;
pub mod karpenter_version_unsupported;
pub mod stale_webhook_configurations;
