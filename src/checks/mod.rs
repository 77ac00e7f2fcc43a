//! Check implementations, one file per check, grouped by category. Each file declares its
//! check with `declare_check!`; `crate::registry::CHECKS` lists them. What checks share lives
//! in [`common`].

pub mod common;
pub mod identity;
pub mod info;
pub mod install;
pub mod interruption;
pub mod nodeclaim;
pub mod nodeclass;
pub mod nodejoin;
pub mod nodepool;
pub mod preinstall;
