//! The fake cluster a test server serves: the objects a scenario's bundle describes, which
//! resources are served at which versions, forced 403s, and container logs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

/// A resource the server serves: `(group, version, plural)`.
pub type ResourceKey = (String, String, String);

/// The state of the fake cluster.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// Every object, with `apiVersion`, `kind` and `metadata`.
    pub objects: Vec<Value>,
    /// Resources that are served even when no object of theirs exists (an empty list is not a
    /// missing API).
    pub served: BTreeSet<ResourceKey>,
    /// Resources for which every request is answered 403 Forbidden.
    pub forbidden: BTreeSet<ResourceKey>,
    /// `GET /version`.
    pub version: Value,
    /// Container logs: `(namespace, pod, container, previous)` → text.
    pub logs: BTreeMap<(String, String, String, bool), String>,
    /// Resources whose existing objects may be replaced with PUT (update); everything else is
    /// read-only.
    pub writable: BTreeSet<ResourceKey>,
    /// The kubeconfig `cluster` entry name the recording was made with (an EKS cluster ARN,
    /// as `aws eks update-kubeconfig` writes it), so a live run resolves the same target.
    pub context_cluster: Option<String>,
}

/// Kinds karpdoctor reads, with their plural and whether they are namespaced. Objects of
/// other kinds get a lowercase-plus-s plural.
const KINDS: &[(&str, &str)] = &[
    ("ConfigMap", "configmaps"),
    ("CustomResourceDefinition", "customresourcedefinitions"),
    ("DaemonSet", "daemonsets"),
    ("Deployment", "deployments"),
    ("StatefulSet", "statefulsets"),
    ("EC2NodeClass", "ec2nodeclasses"),
    ("NodeClass", "nodeclasses"),
    ("Event", "events"),
    (
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
    ),
    ("Node", "nodes"),
    ("NodeClaim", "nodeclaims"),
    ("NodePool", "nodepools"),
    ("PersistentVolume", "persistentvolumes"),
    ("PersistentVolumeClaim", "persistentvolumeclaims"),
    ("Pod", "pods"),
    ("Service", "services"),
    ("ServiceAccount", "serviceaccounts"),
    ("StorageClass", "storageclasses"),
    ("CSINode", "csinodes"),
    ("VolumeAttachment", "volumeattachments"),
    ("PodDisruptionBudget", "poddisruptionbudgets"),
    (
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    ),
];

pub fn plural_of(kind: &str) -> String {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, p)| p.to_string())
        .unwrap_or_else(|| format!("{}s", kind.to_ascii_lowercase()))
}

pub(crate) fn kind_of(plural: &str) -> Option<&'static str> {
    KINDS.iter().find(|(_, p)| *p == plural).map(|(k, _)| *k)
}

/// `apps/v1` → `("apps", "v1")`; `v1` → `("", "v1")`.
fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

pub(crate) fn resource_of(obj: &Value) -> Option<ResourceKey> {
    let (group, version) = split_api_version(obj.get("apiVersion")?.as_str()?);
    Some((group, version, plural_of(obj.get("kind")?.as_str()?)))
}

impl Cluster {
    /// Builds the cluster a karpdoctor bundle describes: Kubernetes facts become objects,
    /// `forbidden` fact errors become forced 403s, `notInstalled` ones unserved resources.
    pub fn from_bundle(bundle: &Value) -> Cluster {
        let mut c = Cluster {
            version: default_version(),
            context_cluster: bundle
                .pointer("/hints/kubeContextCluster")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Cluster::default()
        };
        // Core resources are always served.
        for plural in [
            "pods",
            "configmaps",
            "events",
            "nodes",
            "services",
            "serviceaccounts",
            "persistentvolumeclaims",
            "persistentvolumes",
        ] {
            c.served.insert((String::new(), "v1".into(), plural.into()));
        }
        for (g, p) in [
            ("apps", "deployments"),
            ("apps", "daemonsets"),
            ("apps", "statefulsets"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "volumeattachments"),
            ("policy", "poddisruptionbudgets"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("events.k8s.io", "events"),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
            ),
        ] {
            c.served.insert((g.into(), "v1".into(), p.into()));
        }
        let facts = bundle
            .get("facts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for entry in facts {
            let Some(fact) = entry.get("fact") else {
                continue;
            };
            let (name, params) = match fact {
                Value::String(s) => (s.clone(), Value::Null),
                Value::Object(m) => match m.iter().next() {
                    Some((k, v)) => (k.clone(), v.clone()),
                    None => continue,
                },
                _ => continue,
            };
            // Container logs are served from their own table, keyed like the request.
            if name == "podLogs" {
                if let Some(text) = entry.get("value").and_then(Value::as_str) {
                    let p = |k: &str| {
                        params
                            .get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    let previous = params
                        .get("previous")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    c.logs.insert(
                        (p("namespace"), p("pod"), p("container"), previous),
                        text.to_string(),
                    );
                }
                continue;
            }
            // The churn record `--history` read: the history ConfigMap holding it, which the
            // live run reads, judges and updates.
            if name == "churnHistory" {
                if let (Some((namespace, cm)), Some(samples)) = (
                    params
                        .get("configmap")
                        .and_then(Value::as_str)
                        .and_then(|c| c.split_once('/')),
                    entry.get("value"),
                ) {
                    let doc = serde_json::json!({"version": 1, "runAt": "", "findings": [], "churn": samples});
                    c.objects.push(serde_json::json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": cm, "namespace": namespace, "resourceVersion": "1"},
                        "data": {"last-run.json": doc.to_string()}
                    }));
                    c.writable
                        .insert((String::new(), "v1".into(), "configmaps".into()));
                }
                continue;
            }
            let Some(resource) = fact_resource(&name, &params) else {
                continue;
            };
            if let Some(err) = entry.get("error") {
                match err.get("kind").and_then(Value::as_str) {
                    Some("forbidden") => {
                        c.forbidden.insert(resource);
                    }
                    Some("notInstalled") => {
                        c.served.remove(&resource);
                    }
                    _ => {}
                }
                continue;
            }
            let Some(value) = entry.get("value") else {
                continue;
            };
            if name == "kubeVersion" {
                c.version = value.clone();
                continue;
            }
            // A list is served at the version of its objects: a fact recorded from the
            // v1beta1 API (a cluster whose CRDs serve only v1beta1) serves only that version.
            let versions: BTreeSet<ResourceKey> = match value {
                Value::Array(items) => items.iter().filter_map(resource_of).collect(),
                _ => BTreeSet::new(),
            };
            if versions.is_empty() {
                c.served.insert(resource);
            } else {
                c.served.extend(versions);
            }
            match value {
                Value::Array(items) => c.objects.extend(items.iter().cloned()),
                Value::Object(_) => c.objects.push(value.clone()),
                _ => {}
            }
        }
        // A CRD serves its resource at each served version.
        let crds: Vec<Value> = c
            .objects
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
            .cloned()
            .collect();
        for crd in crds {
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let plural = crd
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for v in crd
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if v.get("served").and_then(Value::as_bool) == Some(true)
                    && let Some(name) = v.get("name").and_then(Value::as_str)
                {
                    c.served.insert((group.into(), name.into(), plural.into()));
                }
            }
        }
        c.objects.sort_by_key(|o| {
            (
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        });
        c.objects.dedup();
        // A pod can be in two facts: whole (the controller's pods) and cut down to its
        // scheduling fields (the pending pods). The server holds one object per name: the
        // whole one, which the cut-down one is a part of.
        let key = |o: &Value| {
            (
                o.get("kind").and_then(Value::as_str).map(str::to_string),
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )
        };
        let mut kept: Vec<Value> = Vec::with_capacity(c.objects.len());
        let mut at: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
        for o in std::mem::take(&mut c.objects) {
            match at.get(&key(&o)) {
                Some(&i) if o.to_string().len() > kept[i].to_string().len() => kept[i] = o,
                Some(_) => {}
                None => {
                    at.insert(key(&o), kept.len());
                    kept.push(o);
                }
            }
        }
        c.objects = kept;
        c
    }

    /// Reads `DIR/bundle.json` or a bundle file.
    pub fn from_path(path: &Path) -> Result<Cluster, String> {
        let file = if path.is_dir() {
            path.join("bundle.json")
        } else {
            path.to_path_buf()
        };
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let bundle: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(Cluster::from_bundle(&bundle))
    }
}

/// `/version` of a scenario that does not say otherwise.
pub(crate) fn default_version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})
}

/// The resource a karpdoctor Kubernetes fact lists or gets, by the fact's name in a bundle.
fn fact_resource(name: &str, params: &Value) -> Option<ResourceKey> {
    let r = |g: &str, v: &str, p: &str| Some((g.to_string(), v.to_string(), p.to_string()));
    match name {
        "kubeVersion" => r("", "", "version"),
        "controllerDeployments" => r("apps", "v1", "deployments"),
        "pods" | "pendingPods" | "scheduledPods" | "nodePods" => r("", "v1", "pods"),
        "daemonSets" => r("apps", "v1", "daemonsets"),
        // Deployments and StatefulSets: a denied read is the StatefulSets' (the Deployments
        // are the controller's too).
        "pinnedWorkloads" => r("apps", "v1", "statefulsets"),
        "persistentVolumeClaims" => r("", "v1", "persistentvolumeclaims"),
        "persistentVolumes" => r("", "v1", "persistentvolumes"),
        "storageClasses" => r("storage.k8s.io", "v1", "storageclasses"),
        "csiNodes" => r("storage.k8s.io", "v1", "csinodes"),
        "volumeAttachments" => r("storage.k8s.io", "v1", "volumeattachments"),
        "podDisruptionBudgets" => r("policy", "v1", "poddisruptionbudgets"),
        "serviceAccount" => r("", "v1", "serviceaccounts"),
        "node" | "nodes" => r("", "v1", "nodes"),
        "crd" => r("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        "nodePools" => r("karpenter.sh", "v1", "nodepools"),
        "nodeClaims" => r("karpenter.sh", "v1", "nodeclaims"),
        "ec2NodeClasses" => r("karpenter.k8s.aws", "v1", "ec2nodeclasses"),
        "autoNodeClasses" => r("eks.amazonaws.com", "v1", "nodeclasses"),
        "awsAuth" => r("", "v1", "configmaps"),
        "service" => r("", "v1", "services"),
        "events" | "eventsByReason" => r("", "v1", "events"),
        "webhookConfigurations" => r(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
        ),
        _ => {
            let _ = params;
            None
        }
    }
}
