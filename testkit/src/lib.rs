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

mod aws_stub;
mod cluster;
pub mod proxy;
pub mod scale;

pub use aws_stub::{AwsStub, stalled_endpoint};
pub use cluster::{Cluster, ResourceKey, plural_of};
use cluster::{default_version, kind_of, resource_of};

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};

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

pub(crate) fn query_map(q: &str) -> BTreeMap<String, String> {
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
