//! What an upgrade of Karpenter (`karpdoctor upgrade --to`) or of the cluster's Kubernetes minor
//! (`--kubernetes`) changes, from each release's own sources (docs/upgrade.md): pure judgement
//! over the release data and the install's facts.

pub mod plan;
pub mod releases;
