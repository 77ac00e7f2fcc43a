//! Kubernetes facts: lists and gets of the resources karpdoctor reads, the API server's
//! version, container logs, events, admission webhooks and access reviews.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::errors::{kube_error, to_value};
use crate::facts::{FactError, Stored};
use crate::model::is_controller_image;

/// Items per page of a Kubernetes list: large enough for few round trips, small enough to
/// keep API server memory and response size bounded on big clusters.
const PAGE_SIZE: u32 = 500;

/// How much of a container log is read: the recent past is what explains a failure, and a
/// bounded read keeps a chatty controller from filling memory or a bundle.
const LOG_LINES: i64 = 500;
const LOG_BYTES: i64 = 1 << 20;

/// Events read per API and kind: the newest matter; a cluster with thousands of old events
/// about NodeClaims must not make the run slow.
const MAX_EVENTS: usize = 1000;

/// `GET /version`.
pub(super) async fn version(kube: &Client) -> Result<Value, FactError> {
    let info = kube
        .apiserver_version()
        .await
        .map_err(|e| kube_error("get /version", e))?;
    Ok(json!({
        "major": info.major,
        "minor": info.minor,
        "gitVersion": info.git_version,
    }))
}

/// The Deployments that look like the Karpenter controller, in one namespace or all.
pub(super) async fn controller_deployments(
    kube: &Client,
    namespace: Option<&str>,
) -> Result<Stored, FactError> {
    let listed = list(kube, &DEPLOYMENTS, namespace, None, |d| {
        looks_like_controller(&d).then_some(d)
    });
    listed.await?.finish()
}

/// Pods of one namespace matching a label selector.
pub(super) async fn pods(
    kube: &Client,
    namespace: &str,
    label_selector: &str,
) -> Result<Stored, FactError> {
    list(kube, &PODS, Some(namespace), Some(label_selector), Some)
        .await?
        .finish()
}

/// Pods in phase Pending, cluster-wide, each cut down to what scheduling reads ([`slim_pod`]):
/// thousands of them must stay small, and their environment must never reach a bundle.
pub(super) async fn pending_pods(kube: &Client) -> Result<Stored, FactError> {
    let pending = Selection {
        field: Some("status.phase=Pending"),
        ..Selection::default()
    };
    list_text(kube, &PODS, pending, |p| Some(slim_pod(p)))
        .await?
        .finish()
}

/// Bound, unfinished pods of one namespace matching a label selector, each cut down to what a
/// topology spread counts: its identity and labels, its node and its phase.
pub(super) async fn scheduled_pods(
    kube: &Client,
    namespace: &str,
    label_selector: &str,
) -> Result<Stored, FactError> {
    let bound = Selection {
        namespace: Some(namespace),
        labels: Some(label_selector).filter(|s| !s.is_empty()),
        field: Some("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"),
        ..Selection::default()
    };
    let listed = list_text(kube, &PODS, bound, |p| {
        let mut out = keep(&p, &["apiVersion", "kind"]);
        out["metadata"] = slim_metadata(&p["metadata"]);
        keep_do_not_disrupt(&p, &mut out);
        out["spec"] = keep(&p["spec"], &["nodeName"]);
        out["status"] = keep(&p["status"], &["phase"]);
        Some(out)
    });
    listed.await?.finish()
}

/// Pods bound to one node, each cut down to its identity and owner, its phase and conditions,
/// and each container's readiness and waiting reason: no spec, environment or image.
pub(super) async fn node_pods(kube: &Client, node: &str) -> Result<Stored, FactError> {
    let field = format!("spec.nodeName={node}");
    let on_node = Selection {
        field: Some(&field),
        ..Selection::default()
    };
    let listed = list_text(kube, &PODS, on_node, |p| {
        let mut out = keep(&p, &["apiVersion", "kind"]);
        out["metadata"] = slim_metadata(&p["metadata"]);
        keep_do_not_disrupt(&p, &mut out);
        out["spec"] = keep(&p["spec"], &["nodeName"]);
        // Karpenter never evicts a pod that tolerates its disrupted taint, so no PDB of such a
        // pod holds the node (docs/disruption.md §4); only those tolerations are kept.
        let tolerations: Vec<Value> = p["spec"]["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                let key = t["key"].as_str().unwrap_or("");
                key.is_empty() || key == "karpenter.sh/disrupted"
            })
            .cloned()
            .collect();
        if !tolerations.is_empty() {
            out["spec"]["tolerations"] = Value::Array(tolerations);
        }
        let mut status = keep(&p["status"], &["phase", "conditions", "startTime"]);
        let containers: Vec<Value> = p["status"]["containerStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let mut out = keep(c, &["name", "ready", "restartCount"]);
                if let Some(w) = c.pointer("/state/waiting") {
                    out["state"] = serde_json::json!({"waiting": keep(w, &["reason"])});
                }
                out
            })
            .collect();
        if !containers.is_empty() {
            status["containerStatuses"] = Value::Array(containers);
        }
        out["status"] = status;
        Some(out)
    });
    listed.await?.finish()
}

/// Nodes matching a label selector, each cut down to its name, labels, taints, capacity and
/// allocatable, whether it is Ready and deleting, its finalizers and provider ID, and
/// Karpenter's do-not-disrupt annotation.
pub(super) async fn nodes(kube: &Client, label_selector: &str) -> Result<Stored, FactError> {
    let labels = Some(label_selector).filter(|s| !s.is_empty());
    let listed = list(kube, &NODES, None, labels, |n| {
        let mut out = keep(&n, &["apiVersion", "kind"]);
        out["metadata"] = keep(
            &n["metadata"],
            &[
                "name",
                "uid",
                "labels",
                "creationTimestamp",
                "deletionTimestamp",
                // A deleting node held by Karpenter's finalizer with no NodeClaim left to
                // finish it (KD4102).
                "finalizers",
            ],
        );
        // A node annotated do-not-disrupt is never a candidate (docs/disruption.md §1.3).
        keep_do_not_disrupt(&n, &mut out);
        out["spec"] = keep(&n["spec"], &["taints", "unschedulable", "providerID"]);
        // What the node offers, against Karpenter's estimate (KD6006); and whether it is Ready:
        // a node that is not uses up its pool's disruption budget (docs/disruption.md §2).
        let mut status = keep(&n["status"], &["capacity", "allocatable"]);
        let ready: Vec<Value> = n["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["type"] == "Ready")
            .map(|c| keep(c, &["type", "status"]))
            .collect();
        if !ready.is_empty() {
            status["conditions"] = Value::Array(ready);
        }
        if status.as_object().is_some_and(|o| !o.is_empty()) {
            out["status"] = status;
        }
        Some(out)
    });
    listed.await?.finish()
}

/// DaemonSets, cluster-wide, cut down to their pod template's scheduling fields.
pub(super) async fn daemonsets(kube: &Client) -> Result<Stored, FactError> {
    let listed = list(kube, &DAEMONSETS, None, None, |mut ds| {
        let mut spec = ds
            .pointer("/spec/template/spec")
            .map(slim_pod_spec)
            .unwrap_or(Value::Null);
        // A DaemonSet's images say what it is (a device plugin, a CSI node) whatever the
        // release is called; pods' images are not kept.
        let images = ds.pointer("/spec/template/spec/containers").cloned();
        if let (Some(Value::Array(kept)), Some(Value::Array(full))) =
            (spec.get_mut("containers"), images)
        {
            for (c, full) in kept.iter_mut().zip(full) {
                if let Some(image) = full.get("image") {
                    c["image"] = image.clone();
                }
                // The VPC CNI's settings (docs/node-capacity.md §5); only literal values of
                // those names, never a secret reference or any other variable.
                let env: Vec<Value> = full
                    .get("env")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|e| {
                        e.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| crate::nodecap::podips::CNI_ENV.contains(&n))
                            && e.get("value").is_some_and(Value::is_string)
                    })
                    .map(|e| keep(e, &["name", "value"]))
                    .collect();
                if !env.is_empty() {
                    c["env"] = Value::Array(env);
                }
            }
        }
        ds["metadata"] = slim_metadata(&ds["metadata"]);
        ds["spec"] = serde_json::json!({"template": {"spec": spec}});
        if let Some(o) = ds.as_object_mut() {
            o.remove("status");
        }
        Some(ds)
    });
    listed.await?.finish()
}

/// Deployments and StatefulSets whose pod template carries `karpenter.sh/do-not-disrupt`, each
/// cut down to its kind, name, replicas, selector and that one annotation: a cluster's other
/// workloads, and the rest of every template, are not kept.
pub(super) async fn pinned_workloads(kube: &Client) -> Result<Stored, FactError> {
    let shape = |w: Value| {
        let value = w
            .pointer("/spec/template/metadata/annotations")?
            .get(crate::model::DO_NOT_DISRUPT)?
            .clone();
        let mut out = keep(&w, &["apiVersion", "kind"]);
        out["metadata"] = keep(&w["metadata"], &["name", "namespace", "uid"]);
        out["spec"] = keep(&w["spec"], &["replicas", "selector"]);
        out["spec"]["template"] = serde_json::json!({"metadata": {"annotations": {
            crate::model::DO_NOT_DISRUPT: value
        }}});
        Some(out)
    };
    let (mut deployments, statefulsets) = futures::try_join!(
        list(kube, &DEPLOYMENTS, None, None, shape),
        list(kube, &STATEFULSETS, None, None, shape)
    )?;
    deployments.append(statefulsets);
    deployments.finish()
}

/// CSINodes, each cut down to its drivers' names, node ids and attach limits.
pub(super) async fn csi_nodes(kube: &Client) -> Result<Stored, FactError> {
    let listed = list(kube, &CSINODES, None, None, |n| {
        let mut out = keep(&n, &["apiVersion", "kind"]);
        out["metadata"] = keep(&n["metadata"], &["name", "uid"]);
        let drivers: Vec<Value> = n
            .pointer("/spec/drivers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|d| keep(d, &["name", "nodeID", "allocatable"]))
            .collect();
        out["spec"] = serde_json::json!({ "drivers": drivers });
        Some(out)
    });
    listed.await?.finish()
}

/// PodDisruptionBudgets, each cut down to its selector, limit, eviction policy for unhealthy
/// pods, and the disruptions it allows now.
pub(super) async fn pod_disruption_budgets(kube: &Client) -> Result<Stored, FactError> {
    let listed = list(kube, &PDBS, None, None, |p| {
        let mut out = keep(&p, &["apiVersion", "kind"]);
        out["metadata"] = keep(&p["metadata"], &["name", "namespace", "uid"]);
        out["spec"] = keep(
            &p["spec"],
            &[
                "selector",
                "minAvailable",
                "maxUnavailable",
                "unhealthyPodEvictionPolicy",
            ],
        );
        out["status"] = keep(
            &p["status"],
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
        );
        Some(out)
    });
    listed.await?.finish()
}

/// VolumeAttachments, each cut down to its driver, node, volume, state and attach error.
pub(super) async fn volume_attachments(kube: &Client) -> Result<Stored, FactError> {
    let listed = list(kube, &VOLUMEATTACHMENTS, None, None, |v| {
        let mut out = keep(&v, &["apiVersion", "kind"]);
        out["metadata"] = keep(&v["metadata"], &["name", "uid"]);
        out["spec"] = keep(&v["spec"], &["attacher", "nodeName", "source"]);
        let mut status = keep(&v["status"], &["attached"]);
        if let Some(e) = v.pointer("/status/attachError") {
            status["attachError"] = keep(e, &["message", "time"]);
        }
        out["status"] = status;
        Some(out)
    });
    listed.await?.finish()
}

/// Every object of a cluster-wide resource.
pub(super) async fn list_all(kube: &Client, resource: &KubeResource) -> Result<Stored, FactError> {
    list(kube, resource, None, None, Some).await?.finish()
}

fn keep(from: &Value, fields: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    for f in fields {
        if let Some(v) = from.get(*f).filter(|v| !v.is_null()) {
            out.insert((*f).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// Karpenter's `karpenter.sh/do-not-disrupt` annotation, the only one kept of a pod or node
/// (docs/disruption.md §3).
fn keep_do_not_disrupt(object: &Value, out: &mut Value) {
    if let Some(v) = object.pointer("/metadata/annotations/karpenter.sh~1do-not-disrupt") {
        out["metadata"]["annotations"] = serde_json::json!({ "karpenter.sh/do-not-disrupt": v });
    }
}

fn slim_metadata(meta: &Value) -> Value {
    keep(
        meta,
        &[
            "name",
            "namespace",
            "uid",
            "labels",
            "ownerReferences",
            "creationTimestamp",
            "deletionTimestamp",
        ],
    )
}

fn slim_pod_spec(spec: &Value) -> Value {
    let containers = |name: &str| -> Value {
        Value::Array(
            spec.get(name)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| keep(c, &["name", "resources", "restartPolicy"]))
                .collect(),
        )
    };
    let mut out = keep(
        spec,
        &[
            "nodeName",
            "nodeSelector",
            "affinity",
            "tolerations",
            "topologySpreadConstraints",
            "schedulerName",
            "overhead",
            "priorityClassName",
        ],
    );
    out["containers"] = containers("containers");
    if spec.get("initContainers").is_some() {
        out["initContainers"] = containers("initContainers");
    }
    let claims: Vec<Value> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("persistentVolumeClaim").is_some())
        .map(|v| keep(v, &["name", "persistentVolumeClaim"]))
        .collect();
    if !claims.is_empty() {
        out["volumes"] = Value::Array(claims);
    }
    out
}

/// A pod with only what scheduling reads: identity and owners, the scheduling fields of its
/// spec, container names and resources, claim volumes, and its phase and conditions.
pub fn slim_pod(pod: Value) -> Value {
    let mut out = keep(&pod, &["apiVersion", "kind"]);
    out["metadata"] = slim_metadata(&pod["metadata"]);
    out["spec"] = pod.get("spec").map(slim_pod_spec).unwrap_or(Value::Null);
    out["status"] = pod
        .get("status")
        .map(|s| keep(s, &["phase", "conditions", "nominatedNodeName"]))
        .unwrap_or(Value::Null);
    out
}

/// Every object of a Karpenter resource at the first of `versions` the cluster serves: v1,
/// else v1beta1 (Karpenter 0.37, or a 1.x controller whose CRDs were not upgraded yet). The
/// fields the checks read are the same in both; a check that cannot judge a v1beta1 object
/// says so itself. `NotInstalled` names the newest version when none is served.
pub(super) async fn list_served(
    kube: &Client,
    versions: &[KubeResource],
) -> Result<Stored, FactError> {
    let mut first_missing = None;
    for resource in versions {
        match list(kube, resource, None, None, Some).await {
            Err(e @ FactError::NotInstalled { .. }) => {
                first_missing.get_or_insert(e);
            }
            other => return other?.finish(),
        }
    }
    Err(first_missing.unwrap_or_else(|| FactError::NotInstalled {
        what: "the resource".to_string(),
    }))
}

/// A SelfSubjectAccessReview: may karpdoctor's own identity do `verb` on `resource`?
pub(super) async fn access_review(
    kube: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Result<Value, FactError> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                group: Some(group.to_string()),
                // `pods/log` is the resource `pods` with the subresource `log`.
                resource: Some(resource.split('/').next().unwrap_or_default().to_string()),
                subresource: resource.split_once('/').map(|(_, s)| s.to_string()),
                namespace: namespace.map(str::to_string),
                name: name.map(str::to_string),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(kube.clone());
    let answer = api
        .create(&kube::api::PostParams::default(), &review)
        .await
        .map_err(|e| kube_error("create selfsubjectaccessreviews.authorization.k8s.io", e))?;
    let status = answer.status.unwrap_or_default();
    Ok(json!({
        "allowed": status.allowed,
        "reason": status.reason.unwrap_or_default(),
    }))
}

/// The last lines of one container's log; `null` when that log does not exist.
pub(super) async fn pod_logs(
    kube: &Client,
    namespace: &str,
    pod: &str,
    container: &str,
    previous: bool,
) -> Result<Value, FactError> {
    use k8s_openapi::api::core::v1::Pod;
    let api: Api<Pod> = Api::namespaced(kube.clone(), namespace);
    let params = kube::api::LogParams {
        container: Some(container.to_string()),
        previous,
        tail_lines: Some(LOG_LINES),
        limit_bytes: Some(LOG_BYTES),
        ..kube::api::LogParams::default()
    };
    match api.logs(pod, &params).await {
        Ok(text) => Ok(Value::String(text)),
        // 400: no previous container (it never restarted); 404: the pod is gone.
        Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => Ok(Value::Null),
        Err(e) => Err(kube_error("get pods/log", e)),
    }
}

/// Events about objects of one kind, from both event APIs.
pub(super) async fn events(
    kube: &Client,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Stored, FactError> {
    // Both APIs at once: the newer one repeats the same events for reporters that use it
    // (series, notes); duplicates are folded by uid when the fact is read.
    let core_selector = format!("involvedObject.kind={kind}");
    let newer_selector = format!("regarding.kind={kind}");
    let of = |field| Selection {
        namespace,
        field: Some(field),
        max: MAX_EVENTS,
        ..Selection::default()
    };
    let (core, newer) = tokio::join!(
        list_text(kube, &EVENTS, of(&core_selector), Some),
        list_text(kube, &EVENTS_V1, of(&newer_selector), Some)
    );
    let mut core = core?;
    match newer {
        Ok(items) => core.append(items),
        Err(FactError::NotInstalled { .. }) => {}
        Err(e) => return Err(e),
    }
    core.finish()
}

/// Events of one reason about objects of one kind, cluster-wide, from the core API (every
/// event, whichever API wrote it, is listed there).
pub(super) async fn events_by_reason(
    kube: &Client,
    kind: &str,
    reason: &str,
) -> Result<Stored, FactError> {
    let selector = format!("involvedObject.kind={kind},reason={reason}");
    let of_reason = Selection {
        field: Some(&selector),
        ..Selection::default()
    };
    list_text(kube, &EVENTS, of_reason, Some).await?.finish()
}

/// Validating and mutating admission webhook configurations, in that order.
pub(super) async fn webhook_configurations(kube: &Client) -> Result<Stored, FactError> {
    let (validating, mutating) = futures::future::join(
        list(kube, &VALIDATING_WEBHOOKS, None, None, Some),
        list(kube, &MUTATING_WEBHOOKS, None, None, Some),
    )
    .await;
    let mut both = validating?;
    both.append(mutating?);
    both.finish()
}

/// The `kube-system/aws-auth` ConfigMap; `null` when absent.
pub(super) async fn aws_auth(kube: &Client) -> Result<Value, FactError> {
    get_object(kube, &CONFIGMAPS, Some("kube-system"), "aws-auth").await
}

/// Gets one object; `null` when it does not exist. Scrubbed like listed objects.
pub(super) async fn get_object(
    kube: &Client,
    resource: &KubeResource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, FactError> {
    let ar = resource.api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(kube.clone(), ns, &ar),
        None => Api::all_with(kube.clone(), &ar),
    };
    match api.get_opt(name).await {
        Ok(Some(obj)) => standalone(resource, obj),
        Ok(None) => Ok(Value::Null),
        Err(e) => Err(kube_error(resource.op("get"), e)),
    }
}

/// An object as a JSON tree that stands alone in a bundle: with its type meta (list items
/// carry none) and scrubbed.
fn standalone(resource: &KubeResource, mut obj: DynamicObject) -> Result<Value, FactError> {
    obj.types = Some(kube::api::TypeMeta {
        api_version: resource.api_version(),
        kind: resource.kind.to_string(),
    });
    let mut value = to_value(obj)?;
    crate::model::scrub(&mut value);
    Ok(value)
}

/// Lists a resource with server-side pagination and label selection, each object cut down by
/// `shape` (or left out when it returns `None`). A resource the API server does not serve
/// (its CRD is missing) is `NotInstalled`.
async fn list(
    kube: &Client,
    resource: &KubeResource,
    namespace: Option<&str>,
    labels: Option<&str>,
    shape: impl FnMut(Value) -> Option<Value>,
) -> Result<ListText, FactError> {
    let all = Selection {
        namespace,
        labels,
        ..Selection::default()
    };
    list_text(kube, resource, all, shape).await
}

/// Which objects of a resource a list reads.
struct Selection<'a> {
    namespace: Option<&'a str>,
    labels: Option<&'a str>,
    field: Option<&'a str>,
    /// Stop after about this many objects (whole pages).
    max: usize,
}

impl Default for Selection<'_> {
    fn default() -> Self {
        Selection {
            namespace: None,
            labels: None,
            field: None,
            max: usize::MAX,
        }
    }
}

/// A list written as JSON text while its pages arrive, so only one page and one object are
/// ever held as trees: 20,000 NodeClaims as trees take about ten times their text. The fact
/// is then decoded from the text as a replay decodes it.
struct ListText {
    text: Vec<u8>,
    len: usize,
}

impl ListText {
    fn new() -> Self {
        ListText {
            text: b"[".to_vec(),
            len: 0,
        }
    }

    fn push(&mut self, item: &Value) -> Result<(), FactError> {
        if self.len > 0 {
            self.text.push(b',');
        }
        serde_json::to_writer(&mut self.text, item).map_err(|e| FactError::Malformed {
            message: format!("re-serializing a listed object: {e}"),
        })?;
        self.len += 1;
        Ok(())
    }

    /// Another list's items after this one's.
    fn append(&mut self, other: ListText) {
        if other.len == 0 {
            return;
        }
        if self.len > 0 {
            self.text.push(b',');
        }
        self.text.extend_from_slice(&other.text[1..]);
        self.len += other.len;
    }

    fn finish(mut self) -> Result<Stored, FactError> {
        self.text.push(b']');
        let bad = |e: String| FactError::Malformed {
            message: format!("a listed object: {e}"),
        };
        let text = String::from_utf8(self.text).map_err(|e| bad(e.to_string()))?;
        RawValue::from_string(text)
            .map(Stored::Text)
            .map_err(|e| bad(e.to_string()))
    }
}

async fn list_text(
    kube: &Client,
    resource: &KubeResource,
    selection: Selection<'_>,
    mut shape: impl FnMut(Value) -> Option<Value>,
) -> Result<ListText, FactError> {
    let ar = resource.api_resource();
    let api: Api<DynamicObject> = match selection.namespace {
        Some(ns) => Api::namespaced_with(kube.clone(), ns, &ar),
        None => Api::all_with(kube.clone(), &ar),
    };
    let mut params = ListParams::default().limit(PAGE_SIZE);
    if let Some(sel) = selection.labels {
        params = params.labels(sel);
    }
    if let Some(sel) = selection.field {
        params = params.fields(sel);
    }
    let mut out = ListText::new();
    let mut seen = 0;
    loop {
        let page = match api.list(&params).await {
            Ok(page) => page,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return Err(FactError::NotInstalled {
                    what: format!(
                        "the {} API ({}/{})",
                        resource.kind,
                        resource.group_or_core(),
                        resource.version
                    ),
                });
            }
            Err(e) => return Err(kube_error(resource.op("list"), e)),
        };
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        for obj in page.items {
            seen += 1;
            if let Some(item) = shape(standalone(resource, obj)?) {
                out.push(&item)?;
            }
        }
        match next {
            Some(token) if seen < selection.max => params = params.continue_token(&token),
            _ => break,
        }
    }
    Ok(out)
}

/// Keeps only Deployments running the controller image or labelled as the Karpenter chart,
/// so a bundle never carries the cluster's other workloads.
fn looks_like_controller(deployment: &Value) -> bool {
    let images = deployment
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("image").and_then(Value::as_str));
    let by_image = images.into_iter().any(is_controller_image);
    let by_label = deployment
        .pointer("/metadata/labels/app.kubernetes.io~1name")
        .and_then(Value::as_str)
        == Some("karpenter");
    by_image || by_label
}

/// A Kubernetes resource karpdoctor lists or gets.
pub struct KubeResource {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl KubeResource {
    fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        )
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn group_or_core(&self) -> &'static str {
        if self.group.is_empty() {
            "core"
        } else {
            self.group
        }
    }

    /// The RBAC form of a verb on this resource, as used in `Forbidden` reasons.
    fn op(&self, verb: &str) -> String {
        if self.group.is_empty() {
            format!("{verb} {}", self.plural)
        } else {
            format!("{verb} {}.{}", self.plural, self.group)
        }
    }
}

/// A resource of the core (`v1`) API.
const fn core(kind: &'static str, plural: &'static str) -> KubeResource {
    KubeResource {
        group: "",
        version: "v1",
        kind,
        plural,
    }
}

/// A resource of a `v1` API group.
const fn v1(group: &'static str, kind: &'static str, plural: &'static str) -> KubeResource {
    KubeResource {
        group,
        version: "v1",
        kind,
        plural,
    }
}

pub const DEPLOYMENTS: KubeResource = v1("apps", "Deployment", "deployments");
pub const PODS: KubeResource = core("Pod", "pods");
pub const DAEMONSETS: KubeResource = v1("apps", "DaemonSet", "daemonsets");
pub const STATEFULSETS: KubeResource = v1("apps", "StatefulSet", "statefulsets");
pub const PVCS: KubeResource = core("PersistentVolumeClaim", "persistentvolumeclaims");
pub const PVS: KubeResource = core("PersistentVolume", "persistentvolumes");
pub const STORAGECLASSES: KubeResource = v1("storage.k8s.io", "StorageClass", "storageclasses");
pub const CSINODES: KubeResource = v1("storage.k8s.io", "CSINode", "csinodes");
pub const VOLUMEATTACHMENTS: KubeResource =
    v1("storage.k8s.io", "VolumeAttachment", "volumeattachments");
pub const PDBS: KubeResource = v1("policy", "PodDisruptionBudget", "poddisruptionbudgets");
pub const CRDS: KubeResource = v1(
    "apiextensions.k8s.io",
    "CustomResourceDefinition",
    "customresourcedefinitions",
);
pub const SERVICEACCOUNTS: KubeResource = core("ServiceAccount", "serviceaccounts");
pub const CONFIGMAPS: KubeResource = core("ConfigMap", "configmaps");
pub const NODES: KubeResource = core("Node", "nodes");
pub const SERVICES: KubeResource = core("Service", "services");
pub const EVENTS: KubeResource = core("Event", "events");
pub const EVENTS_V1: KubeResource = v1("events.k8s.io", "Event", "events");
pub const VALIDATING_WEBHOOKS: KubeResource = v1(
    "admissionregistration.k8s.io",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
);
pub const MUTATING_WEBHOOKS: KubeResource = v1(
    "admissionregistration.k8s.io",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
);
pub const NODEPOOLS: KubeResource = v1("karpenter.sh", "NodePool", "nodepools");
pub const NODECLAIMS: KubeResource = v1("karpenter.sh", "NodeClaim", "nodeclaims");
pub const EC2NODECLASSES: KubeResource = v1("karpenter.k8s.aws", "EC2NodeClass", "ec2nodeclasses");
pub const AUTO_NODECLASSES: KubeResource = v1("eks.amazonaws.com", "NodeClass", "nodeclasses");

const fn v1beta1(resource: KubeResource) -> KubeResource {
    KubeResource {
        version: "v1beta1",
        ..resource
    }
}

/// The Karpenter resources in the order they are tried: what a mid-upgrade cluster serves.
pub const NODEPOOLS_SERVED: [KubeResource; 2] = [NODEPOOLS, v1beta1(NODEPOOLS)];
pub const NODECLAIMS_SERVED: [KubeResource; 2] = [NODECLAIMS, v1beta1(NODECLAIMS)];
pub const EC2NODECLASSES_SERVED: [KubeResource; 2] = [EC2NODECLASSES, v1beta1(EC2NODECLASSES)];
