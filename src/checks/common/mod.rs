//! Judgement more than one check shares, by topic. Every check file imports what it shares
//! from here, never from another check file or category, and nothing here imports a check:
//! the checks stand side by side on this floor. All of it is computed from memoized facts, so
//! checks that share a step share its API calls.

pub mod access;
pub mod amis;
pub mod caller;
pub mod cluster;
pub mod codes;
pub mod controller;
pub mod crds;
pub mod evidence;
pub mod grants;
pub mod held;
pub mod kms;
pub mod launch;
pub mod launch_values;
pub mod nodeclaim;
pub mod nodeclass;
pub mod pools;
pub mod scheduling;
pub mod selection;
pub mod spot;
pub mod statements;
pub mod upgrade;
pub mod wiring;
