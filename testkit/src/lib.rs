//! A Kubernetes test API server for karpdoctor's live-path tests.
//!
//! No kube-apiserver can be installed on the machines karpdoctor is built on, so the tests
//! serve a scenario's objects at the real REST paths over real HTTP, and `kube::Client`
//! reaches them through a kubeconfig exactly as it reaches a cluster. It implements what a
//! read-only client sees: discovery documents, `/version`, get and list of namespaced and
//! cluster-scoped resources (core and groups), `limit`/`continue` paging, label and field
//! selectors, `pods/{name}/log`, `metav1.Status` errors, and forced 403s. It knows only what
//! it is told: no defaulting, admission, watch or resourceVersion semantics. Writes get 405,
//! which a test of a read-only client should never see.

pub mod proxy;
pub mod scale;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::Response;
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
    ("EC2NodeClass", "ec2nodeclasses"),
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

fn kind_of(plural: &str) -> Option<&'static str> {
    KINDS.iter().find(|(_, p)| *p == plural).map(|(k, _)| *k)
}

/// `apps/v1` → `("apps", "v1")`; `v1` → `("", "v1")`.
fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

fn resource_of(obj: &Value) -> Option<ResourceKey> {
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
fn default_version() -> Value {
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

/// One request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
}

struct Shared {
    cluster: Mutex<Cluster>,
    delay: Duration,
    seen: Mutex<Vec<Seen>>,
}

/// A running server; dropping it stops it.
pub struct TestServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Serves `cluster` on `127.0.0.1:port` (0 picks a free port), answering each request after
    /// `delay` (for latency benchmarks).
    pub async fn start(
        cluster: Cluster,
        port: u16,
        delay: Duration,
    ) -> std::io::Result<TestServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            cluster: Mutex::new(cluster),
            delay,
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(TestServer { addr, shared, task })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig whose current context `test` points at this server with a token user.
    pub fn kubeconfig(&self) -> String {
        let name = self
            .shared
            .cluster
            .lock()
            .ok()
            .and_then(|c| c.context_cluster.clone());
        match name {
            Some(name) => kubeconfig_for(&self.url())
                .replace(
                    "clusters:\n- name: test\n",
                    &format!("clusters:\n- name: {name}\n"),
                )
                .replace("    cluster: test\n", &format!("    cluster: {name}\n")),
            None => kubeconfig_for(&self.url()),
        }
    }

    /// Replaces the scenario between runs; objects of writable resources (written by the
    /// client under test) are kept.
    pub fn replace_cluster(&self, mut next: Cluster) {
        if let Ok(mut current) = self.shared.cluster.lock() {
            let kept: Vec<Value> = current
                .objects
                .iter()
                .filter(|o| resource_of(o).is_some_and(|r| current.writable.contains(&r)))
                .cloned()
                .collect();
            next.objects
                .retain(|o| !resource_of(o).is_some_and(|r| current.writable.contains(&r)));
            next.objects.extend(kept);
            next.writable.extend(current.writable.iter().cloned());
            *current = next;
        }
    }

    /// One object as the server holds it now.
    pub fn object(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let cluster = self.shared.cluster.lock().ok()?;
        cluster
            .objects
            .iter()
            .find(|o| {
                o.get("kind").and_then(Value::as_str) == Some(kind)
                    && o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
                    && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            })
            .cloned()
    }

    /// Every request served so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }
}

pub fn kubeconfig_for(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {url}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\ncurrent-context: test\nusers:\n- name: test\n  user:\n    token: test-token\n"
    )
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    body: String,
) -> Response {
    if let Ok(mut seen) = shared.seen.lock() {
        seen.push(Seen {
            method: method.to_string(),
            path: uri.path().to_string(),
            query: uri.query().unwrap_or_default().to_string(),
        });
    }
    if !shared.delay.is_zero() {
        tokio::time::sleep(shared.delay).await;
    }
    let Ok(mut cluster) = shared.cluster.lock() else {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "poisoned",
        );
    };
    if method == Method::PUT {
        return update(&mut cluster, uri.path(), &body);
    }
    if method == Method::POST
        && uri.path() == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    {
        return access_review(&cluster, &body);
    }
    route(
        &cluster,
        &method,
        uri.path(),
        &query_map(uri.query().unwrap_or_default()),
    )
}

fn query_map(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-decoding of query values (`+` is a space in query strings).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() && s.is_char_boundary(i + 3) => {
                match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn route(c: &Cluster, method: &Method, path: &str, query: &BTreeMap<String, String>) -> Response {
    if method != Method::GET {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the test API server is read-only",
        );
    }
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] if c.version.is_null() => json_response(StatusCode::OK, &default_version()),
        ["version"] => json_response(StatusCode::OK, &c.version),
        ["api"] => json_response(
            StatusCode::OK,
            &json!({"kind": "APIVersions", "versions": ["v1"]}),
        ),
        ["apis"] => json_response(StatusCode::OK, &api_group_list(c)),
        ["api", version] => json_response(StatusCode::OK, &resource_list(c, "", version)),
        ["apis", group, version] => {
            json_response(StatusCode::OK, &resource_list(c, group, version))
        }
        ["api", version, rest @ ..] => resource(c, "", version, rest, query),
        ["apis", group, version, rest @ ..] => resource(c, group, version, rest, query),
        _ => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}

fn api_group_list(c: &Cluster) -> Value {
    let mut groups: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (g, v, _) in &c.served {
        if !g.is_empty() {
            groups.entry(g).or_default().insert(v);
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs.iter().map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v})).collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions.last().cloned().unwrap_or(Value::Null)})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(c: &Cluster, group: &str, version: &str) -> Value {
    let resources: Vec<Value> = c
        .served
        .iter()
        .filter(|(g, v, _)| g == group && v == version)
        .map(|(_, _, plural)| {
            let namespaced = c.objects.iter().any(|o| {
                resource_of(o).is_some_and(|(_, _, p)| &p == plural)
                    && o.pointer("/metadata/namespace").is_some()
            }) || matches!(
                plural.as_str(),
                "pods"
                    | "configmaps"
                    | "events"
                    | "services"
                    | "serviceaccounts"
                    | "deployments"
                    | "daemonsets"
                    | "persistentvolumeclaims"
            );
            json!({
                "name": plural,
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind_of(plural).unwrap_or_default(),
                "verbs": ["get", "list", "watch"],
            })
        })
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn resource(
    c: &Cluster,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
) -> Response {
    let (namespace, rest) = match rest {
        ["namespaces", ns, more @ ..] if !more.is_empty() => (Some(*ns), more),
        other => (None, other),
    };
    let (plural, name, sub) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            );
        }
    };
    let key: ResourceKey = (group.to_string(), version.to_string(), plural.to_string());
    let what = if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    };
    // A forbidden subresource (`pods/log`) is refused while its parent stays readable.
    let sub_key = sub.map(|s| {
        (
            group.to_string(),
            version.to_string(),
            format!("{plural}/{s}"),
        )
    });
    if c.forbidden.contains(&key) || sub_key.is_some_and(|k| c.forbidden.contains(&k)) {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!(
                "{what} is forbidden: User \"test\" cannot list resource \"{plural}\" in API group \"{group}\""
            ),
        );
    }
    if !c.served.contains(&key) {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        );
    }
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    // The kind first: it is a borrowed string, and most objects are of another resource
    // (at the scale benchmark's size, a quarter of a million of them per page request).
    let listed_kind = kind_of(plural);
    let matching = |o: &&Value| {
        (listed_kind.is_none() || o.get("kind").and_then(Value::as_str) == listed_kind)
            && resource_of(o).as_ref() == Some(&key)
            && namespace.is_none_or(|ns| {
                o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
            })
    };
    match (name, sub) {
        (Some(name), Some("log")) if plural == "pods" => {
            let container = query.get("container").cloned().unwrap_or_default();
            let previous = query.get("previous").is_some_and(|v| v == "true");
            let ns = namespace.unwrap_or("default").to_string();
            let exact = c
                .logs
                .get(&(ns.clone(), name.to_string(), container.clone(), previous));
            let any_container = c
                .logs
                .iter()
                .find(|((n, p, _, prev), _)| *n == ns && p == name && *prev == previous)
                .map(|(_, t)| t);
            match exact.or(if container.is_empty() {
                any_container
            } else {
                None
            }) {
                Some(text) => Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, "text/plain")
                    .body(Body::from(text.clone()))
                    .unwrap_or_default(),
                None => status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    &format!(
                        "previous terminated container \"{container}\" in pod \"{name}\" not found"
                    ),
                ),
            }
        }
        (Some(_), Some(sub)) => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("subresource {sub} is not served"),
        ),
        (Some(name), None) => match c
            .objects
            .iter()
            .filter(matching)
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        {
            Some(o) => json_response(StatusCode::OK, o),
            None => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("{what} \"{name}\" not found"),
            ),
        },
        (None, _) => {
            let labels = query
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default();
            let fields = query
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or_default();
            let selected: Vec<&Value> = c
                .objects
                .iter()
                .filter(matching)
                .filter(|o| labels_match(o, labels) && fields_match(o, fields))
                .collect();
            let offset: usize = query
                .get("continue")
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let limit: usize = query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .filter(|l| *l > 0)
                .unwrap_or(usize::MAX);
            let page: Vec<Value> = selected
                .iter()
                .skip(offset)
                .take(limit)
                .map(|o| strip_type_meta(o))
                .collect();
            let next = offset.saturating_add(page.len());
            let mut metadata = json!({"resourceVersion": "1"});
            if next < selected.len() {
                metadata["continue"] = json!(next.to_string());
                metadata["remainingItemCount"] = json!(selected.len() - next);
            }
            let kind = kind_of(plural)
                .map(|k| format!("{k}List"))
                .unwrap_or_else(|| "List".to_string());
            json_response(
                StatusCode::OK,
                &json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": page}),
            )
        }
    }
}

/// Answers a SelfSubjectAccessReview: denied exactly for the forced-403 resources.
fn access_review(c: &Cluster, body: &str) -> Response {
    let Ok(mut review) = serde_json::from_str::<Value>(body) else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "the body is not JSON",
        );
    };
    let attrs = &review["spec"]["resourceAttributes"];
    let group = attrs["group"].as_str().unwrap_or_default().to_string();
    let resource = attrs["resource"].as_str().unwrap_or_default().to_string();
    let denied = c
        .forbidden
        .iter()
        .any(|(g, _, p)| *g == group && *p == resource);
    review["status"] = if denied {
        json!({"allowed": false, "reason": "forbidden by the test API server"})
    } else {
        json!({"allowed": true, "reason": "allowed by the test API server"})
    };
    json_response(StatusCode::CREATED, &review)
}

/// PUT of an existing object of a writable resource: replaces it, as an update does.
fn update(c: &mut Cluster, path: &str, body: &str) -> Response {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, ns, plural, name) = match segs.as_slice() {
        ["api", v, "namespaces", ns, plural, name] => ("", *v, *ns, *plural, *name),
        ["apis", g, v, "namespaces", ns, plural, name] => (*g, *v, *ns, *plural, *name),
        _ => {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "the test API server is read-only",
            );
        }
    };
    if !c
        .writable
        .contains(&(group.to_string(), version.to_string(), plural.to_string()))
    {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the test API server is read-only",
        );
    }
    let Ok(mut new) = serde_json::from_str::<Value>(body) else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "the body is not JSON",
        );
    };
    let Some(slot) = c.objects.iter_mut().find(|o| {
        resource_of(o).is_some_and(|(_, _, p)| p == plural)
            && o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
            && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
    }) else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("{plural} \"{name}\" not found"),
        );
    };
    let current: u64 = slot
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    new["metadata"]["resourceVersion"] = json!((current + 1).to_string());
    *slot = new.clone();
    json_response(StatusCode::OK, &new)
}

/// List items carry no `apiVersion`/`kind` on a real API server.
fn strip_type_meta(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

/// Label selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`.
pub fn labels_match(obj: &Value, selector: &str) -> bool {
    let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    split_terms(selector).iter().all(|term| {
        let term = term.trim();
        if let Some((k, set)) = term.split_once(" notin ") {
            let set = parse_set(set);
            return get(k.trim()).is_none_or(|v| !set.contains(&v));
        }
        if let Some((k, set)) = term.split_once(" in ") {
            let set = parse_set(set);
            return get(k.trim()).is_some_and(|v| set.contains(&v));
        }
        if let Some((k, v)) = term.split_once("!=") {
            return get(k.trim()) != Some(v.trim());
        }
        if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            return get(k.trim()) == Some(v.trim());
        }
        if let Some(k) = term.strip_prefix('!') {
            return get(k.trim()).is_none();
        }
        term.is_empty() || get(term).is_some()
    })
}

fn parse_set(s: &str) -> Vec<&str> {
    s.trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .collect()
}

/// Splits on commas outside parentheses.
fn split_terms(selector: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for ch in selector.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Field selectors over dotted JSON paths: `involvedObject.kind=NodeClaim`, `==`, `!=`.
pub fn fields_match(obj: &Value, selector: &str) -> bool {
    split_terms(selector).iter().all(|term| {
        let (path, want, equal) = if let Some((p, v)) = term.split_once("!=") {
            (p, v, false)
        } else if let Some((p, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            (p, v, true)
        } else {
            return true;
        };
        let pointer = format!("/{}", path.trim().replace('.', "/"));
        let actual = match obj.pointer(&pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        (actual == want.trim()) == equal
    })
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

/// A `metav1.Status` error, as the API server sends them.
fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    json_response(
        code,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code.as_u16(),
        }),
    )
}

/// A scripted AWS endpoint for fault tests: answers each request whose form body names
/// `Action=<action>` with the next response of its script (the last one repeats). Use it as a
/// per-service endpoint (`AWS_ENDPOINT_URL_STS`) to fail one service while the others reach
/// the emulator.
pub struct AwsStub {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Drop for AwsStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Script = BTreeMap<String, Vec<(u16, String)>>;
/// The stub's shared state: its script and the actions it has been asked for.
type StubState = (Arc<Mutex<Script>>, Arc<Mutex<Vec<String>>>);

impl AwsStub {
    pub async fn start(script: Vec<(&str, Vec<(u16, String)>)>) -> std::io::Result<AwsStub> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let script: Arc<Mutex<Script>> = Arc::new(Mutex::new(
            script
                .into_iter()
                .map(|(a, r)| (a.to_string(), r))
                .collect(),
        ));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let state = (Arc::clone(&script), Arc::clone(&calls));
        let app = Router::new().fallback(aws_stub).with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(AwsStub { addr, task, calls })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The actions requested so far, in order (retries included).
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The query-protocol error document AWS sends (`Throttling`, `AccessDenied`, …).
    pub fn error_xml(code: &str, message: &str) -> String {
        format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>stub</RequestId></ErrorResponse>"
        )
    }

    /// A successful `sts:GetCallerIdentity` answer.
    pub fn caller_identity_xml(account: &str, arn: &str) -> String {
        format!(
            "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><GetCallerIdentityResult><Arn>{arn}</Arn><UserId>AIDASTUB</UserId><Account>{account}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></GetCallerIdentityResponse>"
        )
    }
}

async fn aws_stub(State((script, calls)): State<StubState>, body: String) -> Response {
    let action = query_map(&body).get("Action").cloned().unwrap_or_default();
    if let Ok(mut c) = calls.lock() {
        c.push(action.clone());
    }
    let next = script.lock().ok().and_then(|mut s| {
        let responses = s.get_mut(&action)?;
        if responses.len() > 1 {
            Some(responses.remove(0))
        } else {
            responses.first().cloned()
        }
    });
    let (code, body) = next.unwrap_or((400, AwsStub::error_xml("InvalidAction", "not scripted")));
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST))
        .header(header::CONTENT_TYPE, "text/xml")
        .body(Body::from(body))
        .unwrap_or_default()
}

/// A TCP endpoint that accepts connections and never answers: the stalled API server or AWS
/// endpoint every timeout must survive. Returns its `http://` URL; connections are held for
/// as long as the task lives.
pub async fn stalled_endpoint() -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    Ok((url, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "labels": labels}, "involvedObject": {"kind": "NodeClaim"}})
    }

    #[test]
    fn label_selectors() {
        let o = obj(json!({"app": "karpenter", "tier": "ctl"}));
        assert!(labels_match(&o, "app=karpenter,tier"));
        assert!(labels_match(&o, "app==karpenter,!missing"));
        assert!(labels_match(
            &o,
            "app in (karpenter,other),tier notin (web)"
        ));
        assert!(!labels_match(&o, "app!=karpenter"));
        assert!(!labels_match(&o, "missing"));
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        assert!(fields_match(
            &o,
            "involvedObject.kind=NodeClaim,metadata.name==a"
        ));
        assert!(!fields_match(&o, "involvedObject.kind!=NodeClaim"));
    }

    #[test]
    fn query_decoding() {
        let q = query_map("labelSelector=app.kubernetes.io%2Fname%3Dkarpenter&limit=500");
        assert_eq!(q["labelSelector"], "app.kubernetes.io/name=karpenter");
        assert_eq!(q["limit"], "500");
    }
}
