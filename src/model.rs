//! The shape of the Kubernetes objects karpdoctor reads.
//!
//! Core objects use `k8s-openapi` types. Karpenter's own objects are partial structs with
//! `#[serde(default)]` everywhere: only the fields checks read, tolerant of fields added by
//! newer releases and of fields missing in broken or older installs (a NodePool without
//! `nodeClassRef` must parse, so that a check can say so).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

mod churn;
mod node;
mod shared;
mod workload;
pub use churn::{ChurnSample, PoolSample};
pub use node::{DO_NOT_DISRUPT, ListedNode};
pub use shared::{Labels, Shared};
pub use workload::PinnedWorkload;

/// Karpenter's API group for NodePools and NodeClaims.
pub const KARPENTER_GROUP: &str = "karpenter.sh";
/// The AWS provider's API group for EC2NodeClasses.
pub const AWS_GROUP: &str = "karpenter.k8s.aws";

/// `kind/namespace/name` or `kind/name`, the way findings name objects.
pub fn object_ref(kind: &str, meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or("<unnamed>");
    match meta.namespace.as_deref() {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Whether a container image is Karpenter's controller, wherever it is mirrored
/// (`public.ecr.aws/karpenter/controller:1.8.1`, `<acct>.dkr.ecr.<r>.amazonaws.com/karpenter/controller@sha256:…`).
pub fn is_controller_image(image: &str) -> bool {
    let repo = image.split(['@']).next().unwrap_or(image);
    let repo = match repo.rsplit_once(':') {
        // A colon after the last slash separates the tag; one before it is a registry port.
        Some((r, tag)) if !tag.contains('/') => r,
        _ => repo,
    };
    repo.ends_with("karpenter/controller")
}

/// Whether a pod's Ready condition is True.
pub fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The version in an image reference's tag: `…/controller:v1.8.1@sha256:…` → `1.8.1`.
pub fn image_version(image: &str) -> Option<String> {
    let without_digest = image.split('@').next()?;
    let (_, tag) = without_digest.rsplit_once(':')?;
    if tag.contains('/') || tag.is_empty() {
        return None;
    }
    Some(tag.trim_start_matches('v').to_string())
}

/// Environment variables whose values karpdoctor keeps: Karpenter's documented settings and
/// the credential wiring the identity checks read (paths and role ARNs, never secrets), and the
/// VPC CNI's address settings (`nodecap::podips::CNI_ENV`).
/// Keep sorted.
pub const KEPT_ENV: &[&str] = &[
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ROLE_ARN",
    "AWS_STS_REGIONAL_ENDPOINTS",
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "BATCH_IDLE_DURATION",
    "BATCH_MAX_DURATION",
    "CLUSTER_CA_BUNDLE",
    "CLUSTER_ENDPOINT",
    "CLUSTER_NAME",
    "DISABLE_DRY_RUN",
    "DISABLE_WEBHOOK",
    "EKS_CONTROL_PLANE",
    "ENABLE_IPv6",
    "ENABLE_POD_ENI",
    "ENABLE_PREFIX_DELEGATION",
    "ENABLE_ZONAL_SHIFT",
    "FEATURE_GATES",
    "HEALTH_PROBE_PORT",
    "INTERRUPTION_QUEUE",
    "ISOLATED_VPC",
    "KARPENTER_SERVICE",
    "KUBERNETES_MIN_VERSION",
    "LOG_LEVEL",
    "MAX_ENI",
    "MEMORY_LIMIT",
    "METRICS_PORT",
    "MINIMUM_IP_TARGET",
    "RESERVED_ENIS",
    "VM_MEMORY_OVERHEAD_PERCENT",
    "WARM_ENI_TARGET",
    "WARM_IP_TARGET",
    "WARM_PREFIX_TARGET",
    "WEBHOOK_PORT",
];

/// Removes from a Deployment or Pod what karpdoctor must not keep: the values of environment
/// variables other than [`KEPT_ENV`] (a value may be a password), the last-applied annotation
/// (it repeats the whole spec, env included) and managed fields (noise).
pub fn scrub(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            ann.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    for pod_spec in ["/spec/template/spec", "/spec"] {
        let Some(spec) = object.pointer_mut(pod_spec) else {
            continue;
        };
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
                continue;
            };
            for env in containers
                .iter_mut()
                .filter_map(|c| c.get_mut("env").and_then(Value::as_array_mut))
            {
                for var in env.iter_mut().filter_map(Value::as_object_mut) {
                    let keep = var
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| KEPT_ENV.binary_search(&n).is_ok());
                    if !keep {
                        var.remove("value");
                    }
                }
            }
        }
    }
}

/// A Deployment recognised as a Karpenter controller.
#[derive(Clone, Debug)]
pub struct ControllerDeployment<'a> {
    pub deployment: &'a Deployment,
}

impl<'a> ControllerDeployment<'a> {
    pub fn new(deployment: &'a Deployment) -> Self {
        ControllerDeployment { deployment }
    }

    pub fn namespace(&self) -> &'a str {
        self.deployment
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default")
    }

    pub fn name(&self) -> &'a str {
        self.deployment.metadata.name.as_deref().unwrap_or("")
    }

    pub fn object(&self) -> String {
        object_ref("Deployment", &self.deployment.metadata)
    }

    fn containers(&self) -> &'a [Container] {
        self.deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|p| p.containers.as_slice())
            .unwrap_or(&[])
    }

    /// The controller container: the one running the controller image, else one named
    /// `controller` (the chart's name), else the first.
    pub fn controller_container(&self) -> Option<&'a Container> {
        let containers = self.containers();
        containers
            .iter()
            .find(|c| c.image.as_deref().is_some_and(is_controller_image))
            .or_else(|| containers.iter().find(|c| c.name == "controller"))
            .or_else(|| containers.first())
    }

    /// A literal environment variable of the controller container (values from
    /// ConfigMaps or Secrets are not resolved: karpdoctor never reads Secrets).
    pub fn env(&self, name: &str) -> Option<&'a str> {
        self.controller_container()?
            .env
            .as_ref()?
            .iter()
            .find(|e| e.name == name)?
            .value
            .as_deref()
    }

    /// Karpenter's version from the image tag, else the chart's `app.kubernetes.io/version`.
    pub fn version(&self) -> Option<String> {
        self.controller_container()
            .and_then(|c| c.image.as_deref())
            .and_then(image_version)
            .or_else(|| {
                self.deployment
                    .metadata
                    .labels
                    .as_ref()?
                    .get("app.kubernetes.io/version")
                    .map(|v| v.trim_start_matches('v').to_string())
            })
    }

    /// `spec.selector.matchLabels` as a label selector string (sorted, deterministic).
    pub fn pod_selector(&self) -> Option<String> {
        let labels = self
            .deployment
            .spec
            .as_ref()?
            .selector
            .match_labels
            .as_ref()?;
        if labels.is_empty() {
            return None;
        }
        Some(
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }

    pub fn desired_replicas(&self) -> i32 {
        self.deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1)
    }

    pub fn ready_replicas(&self) -> i32 {
        self.deployment
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
    }
}

/// A condition as Karpenter writes it (`status.conditions[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: Shared,
    pub status: Shared,
    pub reason: Shared,
    pub message: String,
    pub last_transition_time: Option<Shared>,
}

impl Condition {
    /// Whether the condition has held its status for more than `minutes` at `now` (false when
    /// the transition time is missing or unreadable: too young to judge).
    pub fn held_longer_than(&self, now: jiff::Timestamp, minutes: i64) -> bool {
        self.last_transition_time
            .as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| now.duration_since(t).as_secs() > minutes * 60)
    }

    /// `Type=Status Reason: message`, as findings quote it.
    pub fn describe(&self) -> String {
        let mut out = format!("{}={}", self.type_, self.status);
        if !self.reason.is_empty() {
            out.push(' ');
            out.push_str(&self.reason);
        }
        if !self.message.is_empty() {
            out.push_str(": ");
            out.push_str(&self.message);
        }
        out
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub conditions: Vec<Condition>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

impl Status {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// `spec.template.spec.nodeClassRef` of a NodePool (all parts optional: v1beta1 leftovers
/// lack `group` and `kind`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClassRef {
    /// v1beta1's form of the group (`karpenter.k8s.aws/v1beta1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
}

/// One scheduling requirement (`key`, `operator`, `values`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
    pub min_values: Option<i64>,
}

#[cfg(test)]
impl Requirement {
    /// A requirement without `minValues`, for tests.
    pub fn of(key: &str, operator: &str, values: &[&str]) -> Self {
        Requirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            min_values: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimTemplateSpec {
    pub node_class_ref: Option<NodeClassRef>,
    pub requirements: Vec<Requirement>,
    /// Taints every node of the pool carries; pods must tolerate them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// Taints a node starts with that another component removes; pods need not tolerate them,
    /// and Karpenter does not call the node initialized while one is present.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub startup_taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// How long a node of the pool lives before Karpenter replaces it: a Go duration or
    /// `Never` (v1; the API defaults it to `720h`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<String>,
}

/// `spec.template.metadata`: labels every node of the pool carries (each acts as a
/// requirement `key In [value]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimTemplateMeta {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimTemplate {
    pub metadata: NodeClaimTemplateMeta,
    pub spec: NodeClaimTemplateSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePoolSpec {
    pub template: NodeClaimTemplate,
    pub limits: BTreeMap<String, Value>,
    /// Pools are tried by descending weight.
    pub weight: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption: Option<PoolDisruption>,
}

/// `spec.disruption`: when Karpenter may consolidate the pool's nodes, and how many at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PoolDisruption {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidation_policy: Option<String>,
    /// A Go duration or `Never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidate_after: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<Budget>,
}

/// One disruption budget. `reasons` absent applies to every reason; an empty list to none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Budget {
    pub nodes: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
}

/// `karpenter.sh/v1` NodePool (partial), or v1beta1 where the cluster serves only that.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodePool {
    pub api_version: String,
    pub metadata: ObjectMeta,
    pub spec: NodePoolSpec,
    pub status: Status,
}

impl NodePool {
    /// Read from the v1beta1 API (Karpenter before 1.0, or CRDs not yet upgraded): some
    /// fields differ, and its status has no conditions.
    pub fn is_v1beta1(&self) -> bool {
        self.api_version.ends_with("/v1beta1")
    }
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
    pub fn object(&self) -> String {
        object_ref("NodePool", &self.metadata)
    }
    /// `nodeClassRef.name`: the NodeClass the pool launches with.
    pub fn class_name(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .node_class_ref
            .as_ref()?
            .name
            .as_deref()
    }
    /// `nodeClassRef.group` (v1): whose NodeClass it is.
    pub fn class_group(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .node_class_ref
            .as_ref()?
            .group
            .as_deref()
    }
    /// The pool is EKS Auto Mode's: its `nodeClassRef` names the `eks.amazonaws.com` NodeClass
    /// (docs/auto-mode.md §1.2), which the self-managed controller never serves.
    pub fn is_auto_mode(&self) -> bool {
        !self.is_v1beta1()
            && self
                .spec
                .template
                .spec
                .node_class_ref
                .as_ref()
                .and_then(|r| r.group.as_deref())
                == Some(AUTO_MODE_GROUP)
    }
}

/// The API group of EKS Auto Mode's `NodeClass`.
pub const AUTO_MODE_GROUP: &str = "eks.amazonaws.com";

/// `karpenter.k8s.aws/v1` EC2NodeClass (partial; the spec grows with the checks that read it),
/// or v1beta1 where the cluster serves only that.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Ec2NodeClass {
    pub api_version: String,
    pub metadata: ObjectMeta,
    pub spec: BTreeMap<String, Value>,
    pub status: Status,
}

impl Ec2NodeClass {
    /// Read from the v1beta1 API: `amiSelectorTerms` may be empty (the family's default
    /// AMIs), and the status has at most a `Ready` condition (none before 0.37).
    pub fn is_v1beta1(&self) -> bool {
        self.api_version.ends_with("/v1beta1")
    }
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
}

/// EKS Auto Mode's `eks.amazonaws.com/v1` `NodeClass` (docs/auto-mode.md §2.1, §2.2). AWS
/// publishes neither its CRD nor its status schema, so the spec stays a map and the status is
/// read only as conditions, each quoted as the cluster gives it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AutoNodeClass {
    pub api_version: String,
    pub metadata: ObjectMeta,
    pub spec: BTreeMap<String, Value>,
    pub status: Status,
}

impl AutoNodeClass {
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
    pub fn object(&self) -> String {
        object_ref("NodeClass", &self.metadata)
    }
    /// `spec.role`: the node role's name (a path may precede it).
    pub fn role(&self) -> Option<&str> {
        self.spec
            .get("role")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
    /// `spec.instanceProfile`: a pre-made instance profile's name, instead of `role`.
    pub fn instance_profile(&self) -> Option<&str> {
        self.spec
            .get("instanceProfile")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
    /// EKS made it (the `default` NodeClass of the built-in pools).
    pub fn eks_managed(&self) -> bool {
        managed_by_eks(&self.metadata)
    }
}

/// `app.kubernetes.io/managed-by: eks`: the built-in NodePools and the `default` NodeClass.
pub fn managed_by_eks(meta: &ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get("app.kubernetes.io/managed-by"))
        .is_some_and(|v| v == "eks")
}

/// `karpenter.sh/v1` NodeClaim (partial), or v1beta1: the fields checks read, typed. A large
/// cluster has tens of thousands of claims, and two general maps per claim cost more than
/// everything else karpdoctor holds about it; a field no check reads is not kept, and reading
/// one that is not kept is a compile error rather than a silent `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaim {
    pub api_version: String,
    pub metadata: ClaimMeta,
    pub spec: NodeClaimSpec,
    pub status: NodeClaimStatus,
}

/// A NodeClaim's `metadata`: what checks read of it. Labels and annotations are shared
/// strings: Karpenter writes the same twenty-odd labels and six annotations on every claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClaimMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Labels>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<Shared>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_class_ref: Option<NodeClassRef>,
    /// The pool's taints and startup taints, copied when the claim was created (a pool edited
    /// later does not change them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub startup_taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// What the pods that caused the claim request, with the DaemonSets' overhead: Karpenter
    /// waits for each of these resources to be non-zero on the node before it initializes it.
    #[serde(skip_serializing_if = "NodeClaimResources::is_empty")]
    pub resources: NodeClaimResources,
    /// How long a deleting node may drain before Karpenter deletes its pods regardless of
    /// PDBs and do-not-disrupt (a Go duration); without it draining has no end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<String>,
    /// How long after its creation Karpenter deletes the claim, whatever budgets and
    /// do-not-disrupt say (a Go duration, or `Never`; v1 copies the pool's, default 720h).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<Shared>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimResources {
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub requests: Labels,
}

impl NodeClaim {
    /// The NodePool the claim belongs to (its `karpenter.sh/nodepool` label); empty without it.
    pub fn pool(&self) -> &str {
        self.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("karpenter.sh/nodepool"))
            .unwrap_or("")
    }
}

impl NodeClaimResources {
    fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeClaimStatus {
    pub conditions: Vec<Condition>,
    /// The Node the claim registered as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// `aws:///<zone>/<instance id>` once the instance is launched.
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// What the launched instance offers, as quantities by resource name.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub capacity: Labels,
    /// Karpenter's estimate of what pods may request, set once at launch and never updated
    /// from the Node (kubernetes-sigs/karpenter `nodeclaim/lifecycle/launch.go`).
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub allocatable: Labels,
}

impl NodeClaimStatus {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// A pending pod as scheduling reads it: its own metadata and status, and a spec shared with
/// every pending pod of the same spec. The pods of one ReplicaSet or Job have the same spec once
/// cut down to what scheduling reads, and 20,000 pending pods of a few workloads then cost a few
/// specs, not 20,000.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingPod {
    pub metadata: ObjectMeta,
    pub spec: Option<Arc<PodSpec>>,
    pub status: Option<PodStatus>,
}

impl From<Pod> for PendingPod {
    fn from(pod: Pod) -> Self {
        PendingPod {
            metadata: pod.metadata,
            spec: pod.spec.map(Arc::new),
            status: pod.status,
        }
    }
}

/// The pending pods fact: the list, with equal specs decoded once and shared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingPods(pub Vec<PendingPod>);

impl std::ops::Deref for PendingPods {
    type Target = [PendingPod];
    fn deref(&self) -> &[PendingPod] {
        &self.0
    }
}

/// One listed pod as it is read: the spec as text, so that equal specs are recognised before
/// one is decoded. `apiVersion` and `kind`, when present, must be a core Pod's, as k8s-openapi
/// requires of a `Pod`.
#[derive(Deserialize)]
struct ListedPod {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<Box<RawValue>>,
    #[serde(default)]
    status: Option<PodStatus>,
}

impl<'de> Deserialize<'de> for PendingPods {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = PendingPods;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of pods")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PendingPods, A::Error> {
                use serde::de::Error;
                let mut specs: HashMap<Box<str>, Arc<PodSpec>> = HashMap::new();
                let mut pods = Vec::new();
                while let Some(listed) = seq.next_element::<ListedPod>()? {
                    if listed.api_version.as_deref().is_some_and(|v| v != "v1")
                        || listed.kind.as_deref().is_some_and(|k| k != "Pod")
                    {
                        return Err(A::Error::custom("a listed object is not a v1 Pod"));
                    }
                    let spec = match listed.spec {
                        None => None,
                        Some(text) => Some(match specs.get(text.get()) {
                            Some(shared) => Arc::clone(shared),
                            None => {
                                let spec: Option<PodSpec> =
                                    serde_json::from_str(text.get()).map_err(A::Error::custom)?;
                                let Some(spec) = spec else {
                                    pods.push(PendingPod {
                                        metadata: listed.metadata,
                                        spec: None,
                                        status: listed.status,
                                    });
                                    continue;
                                };
                                let spec = Arc::new(spec);
                                specs.insert(text.get().into(), Arc::clone(&spec));
                                spec
                            }
                        }),
                    };
                    pods.push(PendingPod {
                        metadata: listed.metadata,
                        spec,
                        status: listed.status,
                    });
                }
                Ok(PendingPods(pods))
            }
        }
        d.deserialize_seq(List)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_controller_images() {
        assert!(is_controller_image(
            "public.ecr.aws/karpenter/controller:1.8.1@sha256:abc"
        ));
        assert!(is_controller_image(
            "111122223333.dkr.ecr.us-west-2.amazonaws.com/karpenter/controller:v1.0.7"
        ));
        assert!(is_controller_image("registry:5000/karpenter/controller"));
        assert!(!is_controller_image("public.ecr.aws/karpenter/webhook:1.0"));
        assert!(!is_controller_image("nginx:1.27"));
    }

    #[test]
    fn reads_versions_from_tags() {
        assert_eq!(
            image_version("public.ecr.aws/karpenter/controller:1.8.1@sha256:abc").as_deref(),
            Some("1.8.1")
        );
        assert_eq!(
            image_version("r/karpenter/controller:v1.0.7").as_deref(),
            Some("1.0.7")
        );
        assert_eq!(image_version("registry:5000/karpenter/controller"), None);
        assert_eq!(
            image_version("public.ecr.aws/karpenter/controller@sha256:abc"),
            None
        );
    }

    #[test]
    fn kept_env_is_sorted() {
        assert!(KEPT_ENV.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn scrub_drops_secret_values_and_keeps_settings() {
        let mut d = serde_json::json!({
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{…}"}, "managedFields": []},
            "spec": {"template": {"spec": {"containers": [{"name": "controller", "env": [
                {"name": "CLUSTER_NAME", "value": "prod"},
                {"name": "AWS_SECRET_ACCESS_KEY", "value": "wJalrXUtnFEMI"},
                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}
            ]}]}}}
        });
        scrub(&mut d);
        let text = d.to_string();
        assert!(!text.contains("wJalrXUtnFEMI") && !text.contains("last-applied"));
        assert!(text.contains("\"prod\"") && text.contains("secretKeyRef"));
    }

    #[test]
    fn nodepool_without_nodeclassref_parses() {
        let np: NodePool = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"requirements": []}}},
            "unknownTopLevel": 1
        }))
        .unwrap();
        assert_eq!(np.spec.template.spec.node_class_ref, None);
        assert_eq!(np.object(), "NodePool/default");
    }

    #[test]
    fn pending_pods_share_equal_specs_and_read_as_pods_do() {
        let pod = |name: &str, cpu: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "shop"},
                "spec": {"containers": [{"name": "web", "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": "Pending"}})
        };
        let list = serde_json::json!([pod("a", "1"), pod("b", "1"), pod("c", "2"),
            {"metadata": {"name": "d"}, "spec": null}]);
        for pods in [
            serde_json::from_str::<PendingPods>(&list.to_string()).unwrap(),
            serde_json::from_value::<PendingPods>(list.clone()).unwrap(),
        ] {
            assert_eq!(pods.len(), 4);
            let spec = |i: usize| pods[i].spec.clone().unwrap();
            assert!(Arc::ptr_eq(&spec(0), &spec(1)));
            assert!(!Arc::ptr_eq(&spec(0), &spec(2)));
            assert!(pods[3].spec.is_none());
            let typed: Vec<Pod> = serde_json::from_value(list.clone()).unwrap();
            let as_pods: Vec<PendingPod> = typed.into_iter().map(PendingPod::from).collect();
            assert_eq!(pods.0, as_pods);
        }
        let node =
            serde_json::json!([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]);
        assert!(serde_json::from_value::<PendingPods>(node).is_err());
    }
}
