//! How Karpenter disrupts and terminates nodes, judged from one snapshot (rules and sources:
//! docs/disruption.md). Pure: the checks hand in the objects.

pub mod budgets;
pub mod candidates;
pub mod churn;
pub mod godur;
pub mod pdbs;
pub mod pinned;
pub mod pods;
pub mod rates;
pub mod spot;
pub mod terminating;
