//! The churn record `--history` keeps between scheduled runs: per run, how many NodeClaims each
//! NodePool had, how many of them were created since the run before, and why the ones marked
//! for disruption were marked. One snapshot shows only the NodeClaims alive now; a few of these
//! samples over a day or more show how often a pool's nodes are replaced (KD4103;
//! docs/disruption.md §6.3).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One run's sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChurnSample {
    /// When the run read the NodeClaims (RFC 3339).
    pub at: String,
    /// By NodePool name. A pool without NodeClaims is absent (its size is 0).
    #[serde(default)]
    pub pools: BTreeMap<String, PoolSample>,
}

/// One NodePool in one sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolSample {
    /// NodeClaims of the pool that exist, deleting ones included.
    pub size: u32,
    /// Of those, the ones created after the previous sample; `None` in the first sample,
    /// which has nothing to count from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<u32>,
    /// NodeClaims marked for disruption, by why: `Drifted/AMIDrift`, `Underutilized`,
    /// `Empty`, `Expired`, … (the condition and its reason as Karpenter sets them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub marked: BTreeMap<String, u32>,
}
