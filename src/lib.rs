//! karpdoctor: diagnoses broken Karpenter installs on AWS EKS.
//!
//! Data flows one way: CLI → settings → [`context::Context`] (facts, fetched once, from a
//! live or recorded [`backend`]) → [`engine`] (checks, concurrently) → [`report`] →
//! renderers and the exit code. Checks ([`checks`]) are pure judgement over facts, seen
//! through [`context::Facts`], which holds no client; every API request goes through the
//! read-only [`guard`]. Modules use only modules of lower layers: `tests/layers.rs` holds the
//! ranks and `docs/architecture.md` explains them.

pub mod app;
pub mod arn;
pub mod automode;
pub mod awsauth;
pub mod backend;
pub mod bundle;
pub mod check;
pub mod checks;
pub mod cli;
pub mod console;
pub mod context;
pub mod disruption;
pub mod docs;
pub mod ec2;
pub mod engine;
pub mod error;
pub mod events;
pub mod facts;
pub mod finding;
pub mod guard;
pub mod history;
pub mod history_store;
pub mod iam;
pub mod logs;
pub mod model;
pub mod network;
pub mod nodecap;
pub mod permissions;
pub mod pushgateway;
pub mod quantity;
pub mod redact;
pub mod registry;
pub mod report;
pub mod requirements;
pub mod sanitize;
pub mod scheduling;
pub mod target;
pub mod upgrade;
pub mod userdata;

/// This karpdoctor's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where the sources and docs live; doc URLs are pinned to [`VERSION`] under it.
pub const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");
