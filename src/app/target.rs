//! What a run is about: the cluster, region, account and versions it resolves, and what
//! karpdoctor's own identity may not do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::needed_kinds;
use crate::backend::live::Live;
use crate::check::CheckInfo;
use crate::context::Context;
use crate::engine::{self};
use crate::error::Error;
use crate::facts::{ApiService, FactError, FactKind};
use crate::model::ControllerDeployment;
use crate::target::{AUTO_MODE_MIXED, AUTO_MODE_ONLY, Hints, Target};
/// Asks the API server, with one SelfSubjectAccessReview per Kubernetes operation the selected
/// checks need, what karpdoctor's own identity may not do. A review that cannot be answered
/// (an older bundle, an API server without the API) denies nothing: the checks then find out
/// for themselves.
pub(super) async fn self_check(
    ctx: &Context,
    checks: &[&'static CheckInfo],
    karpenter_namespace: Option<&str>,
) -> std::collections::BTreeMap<FactKind, String> {
    let mut reviews = Vec::new();
    for kind in needed_kinds(checks) {
        let namespace = match kind {
            FactKind::Pods | FactKind::PodLogs => match karpenter_namespace {
                Some(ns) => Some(ns.to_string()),
                // No controller found: nothing will list its pods.
                None => continue,
            },
            FactKind::ControllerDeployments => ctx.hints().namespace.clone(),
            FactKind::AwsAuth => Some("kube-system".to_string()),
            _ => None,
        };
        for op in kind.operations() {
            if let crate::facts::ApiOp::Kube {
                verb,
                group,
                resource,
                name,
            } = op
            {
                reviews.push((
                    kind,
                    *op,
                    *verb,
                    *group,
                    *resource,
                    namespace.clone(),
                    *name,
                ));
            }
        }
    }
    let answers = futures::future::join_all(reviews.iter().map(
        |(_, _, verb, group, resource, ns, name)| {
            ctx.access_review(verb, group, resource, ns.as_deref(), *name)
        },
    ))
    .await;
    let mut denied = std::collections::BTreeMap::new();
    for ((kind, op, ..), answer) in reviews.into_iter().zip(answers) {
        if let Ok(a) = answer
            && !a.allowed
        {
            denied.entry(kind).or_insert_with(|| op.to_string());
        }
    }
    denied
}

/// Where the controller runs: `--namespace`, or the controller Deployment's namespace.
pub(super) async fn karpenter_namespace(ctx: &Context) -> Option<String> {
    if let Some(ns) = &ctx.hints().namespace {
        return Some(ns.clone());
    }
    let (deployments, i) = ctx.controller().await.ok().flatten()?;
    Some(
        ControllerDeployment::new(&deployments[i])
            .namespace()
            .to_string(),
    )
}

/// The target of a run that needs no Kubernetes API (`pre-install`): the cluster and region
/// come from the flags (or the bundle), the account from the caller identity.
pub(super) async fn resolve_aws_target(
    ctx: &Context,
    live: Option<&Live>,
    hints: &Hints,
    mut notes: Vec<String>,
) -> Result<(Target, Vec<String>), Error> {
    let region = hints.region.clone();
    if region.is_none() {
        return Err(Error::Usage {
            message:
                "cannot tell which AWS region the cluster is in: pass --region or set AWS_REGION"
                    .to_string(),
        });
    }
    if let (Some(live), Some(region)) = (live, &region) {
        live.connect_aws(region).await;
    }
    let mut target = Target {
        cluster: hints.cluster.clone(),
        region,
        karpenter_version: hints.karpenter_version.clone(),
        ..Target::default()
    };
    match ctx.caller_identity().await {
        Ok(id) => {
            target.account = Some(id.account.clone());
            target.aws_identity = Some(id.arn.clone());
        }
        Err(FactError::NoCredentials { message }) => {
            return Err(Error::NoAwsCredentials { reason: message });
        }
        Err(e) => notes.push(format!("AWS identity: {e}")),
    }
    Ok((target, notes))
}

/// What the run knows about the checks of a self-managed install where EKS Auto Mode runs
/// compute (docs/auto-mode.md §9), and the facts that knowledge rests on.
pub(super) struct SelfManaged {
    /// `Some(true)`: Auto Mode is the only Karpenter, they do not apply; `Some(false)`: a
    /// self-managed controller runs beside it, they run; `None`: the controller Deployments could
    /// not be read, so whether they apply is unknown.
    pub alone: Option<bool>,
    pub why_unknown: Option<String>,
    /// The permission karpdoctor lacks to read the controller Deployments, when that is why.
    pub missing_permission: Option<String>,
    pub facts: Vec<crate::facts::FactKey>,
}

/// From the facts target resolution read (never fetching one): `None` where Auto Mode does not
/// run compute, or nothing says it does.
pub(super) async fn self_managed(ctx: &Context, target: &Target) -> Option<SelfManaged> {
    use crate::facts::FactKey;
    let cluster_key = target.cluster.clone().map(FactKey::eks_cluster);
    let described = target
        .cluster
        .clone()
        .and_then(|c| ctx.peek(FactKey::eks_cluster(c)));
    let (on, mut facts) = match described {
        Some(found) => (
            found.as_ref().as_ref().is_some_and(|c| c.auto_mode()),
            cluster_key.map(|k| vec![k.into_key()]).unwrap_or_default(),
        ),
        None => {
            let pools = ctx.peek(FactKey::nodepools())?;
            let mut facts = vec![FactKey::nodepools().into_key()];
            facts.extend(cluster_key.map(|k| k.into_key()));
            (pools.iter().any(|p| p.is_auto_mode()), facts)
        }
    };
    if !on {
        return None;
    }
    let controller_key = FactKey::controller_deployments(ctx.hints().namespace.clone()).into_key();
    let (alone, why_unknown, missing_permission) = match ctx.controller().await {
        Ok(Some(_)) => {
            // Beside a controller they run whatever Auto Mode does: only its presence counts.
            facts.clear();
            (Some(false), None, None)
        }
        Ok(None) => (Some(true), None, None),
        Err(e) => (
            None,
            Some(e.to_string()),
            e.missing_permission().map(str::to_string),
        ),
    };
    facts.push(controller_key);
    Some(SelfManaged {
        alone,
        why_unknown,
        missing_permission,
        facts,
    })
}

/// `target.autoMode` (docs/auto-mode.md §1.3): whether Auto Mode runs compute (`None`: could not
/// tell), beside a controller or alone. "Alone" needs the controller Deployments read and
/// found empty: a list karpdoctor could not read is not an absent controller, and the checks of
/// a self-managed install then run (and say what they could not read) rather than skip.
fn auto_mode(on: Option<bool>, controller: bool, controller_read: bool) -> Option<String> {
    match (on?, controller, controller_read) {
        (false, _, _) => None,
        (true, true, _) => Some(AUTO_MODE_MIXED.to_string()),
        (true, false, true) => Some(AUTO_MODE_ONLY.to_string()),
        (true, false, false) => None,
    }
}

/// Flags win over what a bundle recorded.
pub(super) fn merge(flags: Hints, recorded: Hints) -> Hints {
    Hints {
        cluster: flags.cluster.or(recorded.cluster),
        region: flags.region.or(recorded.region),
        namespace: flags.namespace.or(recorded.namespace),
        kube_context: recorded.kube_context,
        kube_context_cluster: recorded.kube_context_cluster,
        karpenter_version: flags.karpenter_version.or(recorded.karpenter_version),
        pre_install: flags.pre_install || recorded.pre_install,
        upgrade_to: flags.upgrade_to.or(recorded.upgrade_to),
        upgrade_kubernetes: flags.upgrade_kubernetes.or(recorded.upgrade_kubernetes),
        upgrade: flags.upgrade || recorded.upgrade,
        history: recorded.history,
    }
}

pub(super) async fn within<T>(
    deadline: Instant,
    timeout: Duration,
    during: &str,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, Error> {
    tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), fut)
        .await
        .map_err(|_| Error::Timeout {
            seconds: timeout.as_secs(),
            during: during.to_string(),
        })
}

/// Finds out what the run is about. Fails (exit 2) only when karpdoctor cannot work at all:
/// the API server is unreachable, or AWS is needed and unusable. Everything else is a note
/// and leaves the checks that depend on it `unknown`.
pub(super) async fn resolve_target(
    ctx: &Arc<Context>,
    live: Option<&Live>,
    checks: &[&'static CheckInfo],
    needs_aws: bool,
    needs_kube: bool,
) -> Result<(Target, Vec<String>), Error> {
    let mut notes = Vec::new();
    let hints = ctx.hints().clone();
    if !needs_kube {
        let resolved = resolve_aws_target(ctx, live, &hints, notes).await;
        engine::prefetch(ctx, checks, |svc| svc != ApiService::Kubernetes);
        return resolved;
    }
    let kube_version = match ctx.kube_version().await {
        Ok(v) => Some(v),
        Err(
            e @ (FactError::Unreachable { .. }
            | FactError::Timeout { .. }
            | FactError::NoCredentials { .. }),
        ) => {
            let server = live.and_then(|l| l.kube_target.server.clone());
            return Err(Error::KubeUnreachable {
                server,
                reason: e.to_string(),
            });
        }
        Err(e) => {
            notes.push(format!("Kubernetes version: {e}"));
            None
        }
    };
    // Whether the controller Deployments could be read: "no controller" is known only then.
    let mut controller_read = true;
    let controller = match ctx.controller().await {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("controller Deployment: {e}"));
            controller_read = false;
            None
        }
    };
    let controller = controller
        .as_ref()
        .map(|(deps, i)| ControllerDeployment::new(&deps[*i]));
    let cluster = hints.resolve_cluster(controller.as_ref());
    let region = hints.resolve_region(controller.as_ref());
    if let (Some(live), Some(region)) = (live, &region) {
        live.connect_aws(region).await;
    }
    let mut target = Target {
        cluster: cluster.clone(),
        region: region.clone(),
        account: None,
        kube_context: hints.kube_context.clone(),
        karpenter_namespace: hints
            .namespace
            .clone()
            .or_else(|| controller.as_ref().map(|c| c.namespace().to_string())),
        karpenter_version: controller.as_ref().and_then(|c| c.version()),
        kubernetes_version: kube_version.map(|v| {
            if v.git_version.is_empty() {
                format!("{}.{}", v.major, v.minor)
            } else {
                v.git_version.clone()
            }
        }),
        aws_identity: None,
        auto_mode: None,
        upgrade_to: hints.upgrade_to.clone().filter(|_| hints.upgrade),
        upgrade_kubernetes: hints.upgrade_kubernetes.clone().filter(|_| hints.upgrade),
    };

    // Recorded runs have what they have; live runs without a region cannot ask AWS at all.
    if region.is_none() && live.is_some() {
        if needs_aws {
            return Err(Error::Usage {
                message: "cannot tell which AWS region the cluster is in: pass --region or set AWS_REGION".to_string(),
            });
        }
        return Ok((target, notes));
    }
    // The region is known: AWS facts that need no parameter can start.
    engine::prefetch(ctx, checks, |svc| svc != ApiService::Kubernetes);
    // Who karpdoctor is and whether the cluster exists do not depend on each other.
    let cluster_of_run = match (&cluster, &region) {
        (Some(c), Some(_)) if needs_aws => Some(c.clone()),
        _ => None,
    };
    let (identity, found) = tokio::join!(ctx.caller_identity(), async {
        match &cluster_of_run {
            Some(c) => Some(ctx.eks_cluster(c).await),
            None => None,
        }
    });
    match identity {
        Ok(id) => {
            target.account = Some(id.account.clone());
            target.aws_identity = Some(id.arn.clone());
        }
        Err(FactError::NoCredentials { message }) if needs_aws => {
            return Err(Error::NoAwsCredentials { reason: message });
        }
        // An unreachable AWS endpoint is a note, not the end of the run: the checks that need
        // AWS find out for themselves (bounded by --check-timeout) and say so; the others judge.
        Err(e) => notes.push(format!("AWS identity: {e}")),
    }
    if let (Some(found), Some(cluster), Some(region)) = (found, &cluster, &region) {
        match found {
            Ok(found) if found.is_none() => {
                return Err(Error::ClusterNotFound {
                    cluster: cluster.clone(),
                    region: region.clone(),
                });
            }
            Ok(found) => {
                let on = found.as_ref().as_ref().is_some_and(|c| c.auto_mode());
                target.auto_mode = auto_mode(Some(on), controller.is_some(), controller_read);
            }
            Err(e) => {
                notes.push(format!("EKS cluster {cluster}: {e}"));
                // Without DescribeCluster, Auto Mode's NodePools say it (docs/auto-mode.md §1.2).
                let pools = ctx.nodepools().await.ok();
                let on = pools.map(|ps| ps.iter().any(|p| p.is_auto_mode()));
                target.auto_mode = auto_mode(on, controller.is_some(), controller_read);
            }
        }
    }
    Ok((target, notes))
}
