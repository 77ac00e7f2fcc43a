//! A Deployment or StatefulSet whose pod template carries `karpenter.sh/do-not-disrupt`: every
//! pod it runs keeps its node from voluntary disruption (KD4104; docs/disruption.md §3). The
//! list keeps only such workloads, cut down to what says which pods they are.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use super::node::DO_NOT_DISRUPT;

/// One workload of the list.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PinnedWorkload {
    /// `Deployment` or `StatefulSet`.
    pub kind: String,
    pub metadata: WorkloadMeta,
    pub spec: WorkloadSpec,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct WorkloadMeta {
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The API's default is 1.
    pub replicas: Option<i32>,
    pub selector: Option<LabelSelector>,
    #[serde(default)]
    pub template: WorkloadTemplate,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct WorkloadTemplate {
    #[serde(default)]
    pub metadata: TemplateMeta,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct TemplateMeta {
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl PinnedWorkload {
    /// The template's `karpenter.sh/do-not-disrupt` value as written.
    pub fn do_not_disrupt(&self) -> Option<&str> {
        self.spec
            .template
            .metadata
            .annotations
            .get(DO_NOT_DISRUPT)
            .map(String::as_str)
    }

    /// `kind/namespace/name`, as findings name objects.
    pub fn id(&self) -> String {
        format!(
            "{}/{}/{}",
            self.kind, self.metadata.namespace, self.metadata.name
        )
    }

    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
}
