//! EKS Auto Mode: which NodePools it serves and what it launches for them (docs/auto-mode.md).
//! Pure judgement over the model and the facts; the checks under `checks/automode` are thin.

pub mod access;
pub mod nodeclass;
pub mod pools;
pub mod role;
