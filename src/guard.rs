//! The read-only guard: the one place every API request passes through before it is sent.
//!
//! karpdoctor must never change the cluster or the account. Rather than trusting every fetch to
//! call only read APIs, both transports are wrapped: the AWS SDK clients carry an interceptor
//! and the `kube::Client` a tower filter. Each request is classified into an [`ApiOp`] and
//! refused unless it is (a) of a read-only form and (b) declared by some fact kind in
//! [`FactKind::operations`]. Refused requests never reach the network. The one exception, the
//! `--history` ConfigMap, is a [`WritableObject`] given to the guard of the one client that may
//! update it, when that client is built; every other client writes nothing. Every allowed request
//! is counted in the [`ApiLog`] for `-v` statistics and for the test that lists the
//! operations the scenario suite issued.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use crate::error::Error;
use crate::facts::{ApiOp, FactKind};

/// Counts of the requests issued in one run, per operation.
#[derive(Clone, Debug, Default)]
pub struct ApiLog {
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl ApiLog {
    fn record(&self, op: &str) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        *calls.entry(op.to_string()).or_default() += 1;
    }

    /// Requests per operation (`sts:GetCallerIdentity`, `list nodepools.karpenter.sh`, …).
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Requests per service (`kubernetes`, `sts`, `iam`, …).
    pub fn calls_per_service(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (op, n) in self.calls() {
            let service = match op.split_once(':') {
                Some((svc, _)) if !op.contains(' ') => svc.to_string(),
                _ => "kubernetes".to_string(),
            };
            *out.entry(service).or_default() += n;
        }
        out
    }
}

/// The requests one fact fetch issued: how many, and in how many rounds (a round starts when
/// a request is sent while none of the fetch's other requests is in flight). A paginated list
/// is one round per page; a batch of concurrent describes is one round. Rounds, not requests,
/// are what latency multiplies, so they measure the fetch's share of the critical path.
#[derive(Debug, Default)]
pub struct FetchCalls {
    state: Mutex<CallState>,
}

#[derive(Clone, Copy, Debug, Default)]
struct CallState {
    calls: u32,
    rounds: u32,
    in_flight: u32,
}

impl FetchCalls {
    fn begin(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.in_flight == 0 {
            s.rounds += 1;
        }
        s.calls += 1;
        s.in_flight += 1;
    }

    fn end(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.in_flight = s.in_flight.saturating_sub(1);
    }

    /// The fetch's answer came with a request another fetch sent for both: one round waited
    /// for, no request of its own (the request counts once, for the fetch that sent it).
    fn shared(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.in_flight == 0 {
            s.rounds += 1;
        }
    }

    /// `(requests, rounds)` so far.
    pub fn counts(&self) -> (u32, u32) {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        (s.calls, s.rounds)
    }
}

tokio::task_local! {
    /// The fact fetch the current task is running, so the guard can attribute requests to it.
    /// Both SDKs run the guard in the task that awaits the request.
    pub static FETCH: Arc<FetchCalls>;
}

fn request_started() {
    let _ = FETCH.try_with(|f| f.begin());
}

fn request_finished() {
    let _ = FETCH.try_with(|f| f.end());
}

/// The current fetch was answered by a request another fetch sent (IAM simulations sharing a
/// request): it waited a round for it.
pub fn shared_request() {
    let _ = FETCH.try_with(|f| f.shared());
}

/// The one object a client may write besides reading: the `--history` ConfigMap. Given to the
/// guard when the client is built; the backend's clients get none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritableObject {
    pub namespace: String,
    pub name: String,
}

impl WritableObject {
    /// Whether a request is a `get` or `update` of exactly this ConfigMap.
    fn allows(&self, verb: &str, path: &str) -> bool {
        matches!(verb, "get" | "update")
            && path
                == format!(
                    "/api/v1/namespaces/{}/configmaps/{}",
                    self.namespace, self.name
                )
    }
}

/// Why a request was refused before it was sent.
#[derive(Debug, thiserror::Error)]
#[error("karpdoctor refused to send {op}: {why} (karpdoctor is read-only; this is a bug)")]
pub struct Refused {
    pub op: String,
    pub why: &'static str,
}

/// Read-only verbs of AWS APIs, plus the two IAM simulation calls (which evaluate policies
/// and change nothing).
pub fn is_read_only_aws_action(action: &str) -> bool {
    const READ_PREFIXES: &[&str] = &["Describe", "Get", "List"];
    const EXTRA: &[&str] = &["SimulatePrincipalPolicy", "SimulateCustomPolicy"];
    READ_PREFIXES.iter().any(|p| action.starts_with(p)) || EXTRA.contains(&action)
}

/// Read-only Kubernetes verbs; `create` is allowed only for access reviews, which ask the
/// API server a question and store nothing.
pub fn is_read_only_kube(verb: &str, resource: &str) -> bool {
    matches!(verb, "get" | "list" | "watch")
        || (verb == "create"
            && matches!(
                resource,
                "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
            ))
}

/// Whether some fact kind declares this operation (the declared set is the allowlist).
fn declared(op: &ApiOp) -> bool {
    FactKind::ALL
        .iter()
        .any(|k| k.operations().iter().any(|d| d == op))
}

/// Classifies an AWS SDK operation and decides. `service` is the SDK's service name
/// (`STS`, `EKS`, `EventBridge`, …).
pub fn check_aws(service: &str, operation: &str) -> Result<String, Refused> {
    let prefix = iam_prefix(service);
    let shown = format!("{prefix}:{operation}");
    if !is_read_only_aws_action(operation) {
        return Err(Refused {
            op: shown,
            why: "not a read-only operation",
        });
    }
    let allowed = FactKind::ALL.iter().any(|k| {
        k.operations().iter().any(|d| {
            matches!(d, ApiOp::Aws { service, action } if *service == prefix && *action == operation)
        })
    });
    if !allowed {
        return Err(Refused {
            op: shown,
            why: "not declared by any fact",
        });
    }
    Ok(shown)
}

/// The IAM action prefix for an SDK service name.
fn iam_prefix(service: &str) -> String {
    match service {
        "EventBridge" => "events".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

/// Classifies a Kubernetes request by method and path and decides. Discovery and `/version`
/// are always allowed (read-only, no RBAC needed); so is `writable`, the one object the
/// client was built to write, if any.
pub fn check_kube(
    method: &http::Method,
    path: &str,
    query: Option<&str>,
    writable: Option<&WritableObject>,
) -> Result<String, Refused> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest): (&str, &[&str]) = match segments.as_slice() {
        ["version"] | ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _] => {
            return if *method == http::Method::GET {
                Ok(format!("get {path}"))
            } else {
                Err(Refused {
                    op: format!("{method} {path}"),
                    why: "not a read-only request",
                })
            };
        }
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (group, rest),
        _ => {
            return Err(Refused {
                op: format!("{method} {path}"),
                why: "not a Kubernetes API path",
            });
        }
    };
    // [namespaces, ns, resource, name?, subresource?] or [resource, name?, subresource?]
    let rest = match rest {
        ["namespaces", _ns, more @ ..] if !more.is_empty() => more,
        other => other,
    };
    let (resource, object) = match rest {
        [resource] => (resource.to_string(), None),
        [resource, name] => (resource.to_string(), Some(*name)),
        [resource, name, sub] => (format!("{resource}/{sub}"), Some(*name)),
        _ => {
            return Err(Refused {
                op: format!("{method} {path}"),
                why: "not a Kubernetes resource path",
            });
        }
    };
    let watching =
        query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let has_name = object.is_some();
    let verb = match *method {
        http::Method::GET if watching => "watch",
        http::Method::GET if has_name => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if has_name => "delete",
        http::Method::DELETE => "deletecollection",
        _ => "unknown",
    };
    let shown = if group.is_empty() {
        format!("{verb} {resource}")
    } else {
        format!("{verb} {resource}.{group}")
    };
    if writable.is_some_and(|w| w.allows(verb, path)) {
        return Ok(shown);
    }
    if !is_read_only_kube(verb, &resource) {
        return Err(Refused {
            op: shown,
            why: "not a read-only request",
        });
    }
    let declared_op = FactKind::ALL.iter().any(|k| {
        k.operations().iter().any(|d| {
            // A declared `list` also covers `watch`, which kube may use for the same data.
            // An operation declared for one object allows that object only.
            matches!(d, ApiOp::Kube { verb: v, group: g, resource: r, name: n }
                if *g == group && *r == resource && (*v == verb || (*v == "list" && verb == "watch"))
                    && (n.is_none() || *n == object))
        })
    });
    if !declared_op {
        return Err(Refused {
            op: shown,
            why: "not declared by any fact",
        });
    }
    Ok(shown)
}

/// The AWS half of the guard, installed on every SDK client.
#[derive(Debug, Clone)]
pub struct AwsGuard {
    pub log: ApiLog,
}

impl Intercept for AwsGuard {
    fn name(&self) -> &'static str {
        "karpdoctor-read-only-guard"
    }

    // Not `read_before_execution`: client-level interceptors run that hook before the
    // operation's own configuration (which names the operation) is in the bag.
    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(meta) = cfg.load::<Metadata>() else {
            return Err(Box::new(Refused {
                op: "an unnamed AWS operation".to_string(),
                why: "the operation could not be identified",
            }));
        };
        let op = check_aws(meta.service(), meta.name())?;
        self.log.record(&op);
        request_started();
        Ok(())
    }

    // Runs once per operation, after the last retry, whether it succeeded or not.
    fn read_after_execution(
        &self,
        _context: &aws_smithy_runtime_api::client::interceptors::context::FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        request_finished();
        Ok(())
    }
}

/// Marks a Kubernetes request in flight from when it is sent until its response (or error)
/// arrives, for [`FetchCalls`]. Created when the request passes the guard, in the caller's task.
pub struct InFlight(Option<Arc<FetchCalls>>);

impl InFlight {
    pub fn start() -> Self {
        let fetch = FETCH.try_with(Arc::clone).ok();
        if let Some(f) = &fetch {
            f.begin();
        }
        InFlight(fetch)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            f.end();
        }
    }
}

/// The Kubernetes half of the guard, as a tower filter predicate for the kube client stack.
fn kube_filter(
    log: ApiLog,
    writable: Option<WritableObject>,
) -> impl Fn(http::Request<kube::client::Body>) -> Result<http::Request<kube::client::Body>, BoxError>
+ Clone {
    move |req| {
        let op = check_kube(
            req.method(),
            req.uri().path(),
            req.uri().query(),
            writable.as_ref(),
        )?;
        log.record(&op);
        Ok(req)
    }
}

/// A `kube::Client` whose every request passes the read-only guard first. `writable` is the
/// one object it may also update (the history ConfigMap); `None` for a client that only reads.
pub fn kube_client(
    mut config: kube::Config,
    log: ApiLog,
    writable: Option<WritableObject>,
) -> Result<kube::Client, Error> {
    // kube applies `read_timeout` to the socket, idle or not: a pooled connection that waited
    // longer than it (while a round of AWS reads timed out, say) failed the next request sent
    // on it with "connection error: timed out", and Kubernetes checks turned unknown at
    // random. The same bound is applied here to each request instead, from sending it to the
    // start of its answer; a body that stalls after that is bounded by the check's budget.
    let per_request = config.read_timeout.take();
    config.write_timeout = None;
    let timeout = tower::util::option_layer(per_request.map(tower::timeout::TimeoutLayer::new));
    let filter = tower::filter::FilterLayer::new(kube_filter(log, writable));
    // Inside the guard, so only requests that pass it are counted for their fact. kube's
    // client buffers requests: this layer is called in the buffer's worker task, but the
    // response future it returns is awaited by the task that made the request. The fact being
    // fetched is a task-local of that task, so the request is marked when that future is
    // first polled, not when the layer is called.
    let in_flight = tower::util::MapFutureLayer::new(|response| async move {
        let mark = InFlight::start();
        let out = response.await;
        drop(mark);
        out
    });
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::Kubeconfig {
            reason: e.to_string(),
        })?
        .with_layer(&timeout)
        .with_layer(&in_flight)
        .with_layer(&filter)
        .build())
}

/// Every operation a fact declares, for the permissions listing and the read-only test.
pub fn declared_operations() -> Vec<ApiOp> {
    let mut ops: Vec<ApiOp> = FactKind::ALL
        .iter()
        .flat_map(|k| k.operations().iter().copied())
        .collect();
    ops.sort();
    ops.dedup();
    debug_assert!(ops.iter().all(declared));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn aws_reads_declared_by_facts_pass() {
        assert_eq!(
            check_aws("STS", "GetCallerIdentity").unwrap(),
            "sts:GetCallerIdentity"
        );
        assert_eq!(
            check_aws("EKS", "DescribeCluster").unwrap(),
            "eks:DescribeCluster"
        );
    }

    #[test]
    fn aws_writes_are_refused_before_sending() {
        let err = check_aws("EC2", "RunInstances").unwrap_err();
        assert_eq!(err.why, "not a read-only operation");
        assert!(check_aws("IAM", "CreateRole").is_err());
        assert!(check_aws("IAM", "PassRole").is_err());
        assert!(check_aws("SQS", "DeleteQueue").is_err());
    }

    #[test]
    fn undeclared_reads_are_refused() {
        let err = check_aws("EC2", "DescribeVolumes").unwrap_err();
        assert_eq!(err.why, "not declared by any fact");
    }

    /// A request through a client built read-only (no writable object).
    fn read_only(method: &Method, path: &str, query: Option<&str>) -> Result<String, Refused> {
        check_kube(method, path, query, None)
    }

    #[test]
    fn kube_reads_are_classified() {
        assert_eq!(
            read_only(
                &Method::GET,
                "/apis/karpenter.sh/v1/nodepools",
                Some("limit=500")
            )
            .unwrap(),
            "list nodepools.karpenter.sh"
        );
        assert_eq!(
            read_only(&Method::GET, "/api/v1/namespaces/karpenter/pods", None).unwrap(),
            "list pods"
        );
        assert_eq!(
            read_only(
                &Method::GET,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh",
                None
            )
            .unwrap(),
            "get customresourcedefinitions.apiextensions.k8s.io"
        );
        assert!(read_only(&Method::GET, "/version", None).is_ok());
    }

    #[test]
    fn kube_writes_are_refused() {
        for (method, path) in [
            (
                Method::DELETE,
                "/api/v1/namespaces/karpenter/pods/karpenter-1",
            ),
            (Method::POST, "/apis/karpenter.sh/v1/nodepools"),
            (Method::PATCH, "/apis/karpenter.sh/v1/nodepools/default"),
            (
                Method::PUT,
                "/api/v1/namespaces/kube-system/configmaps/aws-auth",
            ),
            (Method::DELETE, "/api/v1/namespaces/karpenter/pods"),
            (Method::POST, "/version"),
        ] {
            let err = read_only(&method, path, None).unwrap_err();
            assert!(err.why.contains("read-only"), "{method} {path}: {err}");
        }
    }

    #[test]
    fn only_the_history_configmap_may_be_updated() {
        let history = WritableObject {
            namespace: "karpdoctor".to_string(),
            name: "karpdoctor-history".to_string(),
        };
        let writable = |method: &Method, path: &str| check_kube(method, path, None, Some(&history));
        let ok = "/api/v1/namespaces/karpdoctor/configmaps/karpdoctor-history";
        assert!(writable(&Method::PUT, ok).is_ok());
        assert!(writable(&Method::GET, ok).is_ok());
        assert!(writable(&Method::DELETE, ok).is_err());
        assert!(writable(&Method::PATCH, ok).is_err());
        for refused in [
            (
                Method::PUT,
                "/api/v1/namespaces/karpdoctor/configmaps/other",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/kube-system/configmaps/karpdoctor-history",
            ),
            (Method::POST, "/api/v1/namespaces/karpdoctor/configmaps"),
            (
                Method::DELETE,
                "/api/v1/namespaces/karpenter/pods/karpenter-1",
            ),
        ] {
            assert!(writable(&refused.0, refused.1).is_err(), "{refused:?}");
        }
        // A client built without the writable object (the backend's) may not touch it.
        assert!(read_only(&Method::PUT, ok, None).is_err());
        assert!(read_only(&Method::GET, ok, None).is_err());
    }

    #[test]
    fn kube_reads_of_undeclared_resources_are_refused() {
        let err =
            read_only(&Method::GET, "/api/v1/namespaces/kube-system/secrets", None).unwrap_err();
        assert_eq!(err.why, "not declared by any fact");
    }

    #[test]
    fn every_declared_operation_is_read_only() {
        for op in declared_operations() {
            match op {
                ApiOp::Aws { action, .. } => assert!(is_read_only_aws_action(action), "{op}"),
                ApiOp::Kube { verb, resource, .. } => {
                    assert!(is_read_only_kube(verb, resource), "{op}")
                }
            }
        }
    }
}
