//! The controller Deployment this run diagnoses: its pods, its release, its logs and the
//! settings other checks read (the interruption queue).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

use crate::check::CheckCx;
use crate::facts::FactError;
use crate::iam::reference::Version;
use crate::model::ControllerDeployment;

/// The controller Deployment this run diagnoses and its pods.
pub struct Controller {
    deployments: Arc<Vec<Deployment>>,
    index: usize,
    pub pods: Arc<Vec<Pod>>,
}

impl Controller {
    pub fn deployment(&self) -> ControllerDeployment<'_> {
        ControllerDeployment::new(&self.deployments[self.index])
    }

    /// The controller's release, when its image tag or chart label says.
    pub fn version(&self) -> Option<Version> {
        self.deployment()
            .version()
            .as_deref()
            .and_then(Version::parse)
    }

    /// `helm upgrade` of the installed release with one setting changed, pinned to the
    /// running version: without `--version` Helm would also upgrade Karpenter.
    pub fn helm_upgrade(&self, set: &str) -> String {
        helm_upgrade(&self.deployment(), set)
    }

    /// The name of the controller container in its pods.
    pub fn container(&self) -> String {
        self.deployment()
            .controller_container()
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "controller".to_string())
    }
}

/// The release of the controller this run diagnoses, for a check that reads the Deployment
/// alone; `None` without a controller or a release in its image tag or chart label.
pub async fn installed_release(cx: &CheckCx) -> Result<Option<Version>, FactError> {
    Ok(cx.controller().await?.and_then(|(d, i)| {
        ControllerDeployment::new(&d[i])
            .version()
            .as_deref()
            .and_then(Version::parse)
    }))
}

/// [`Controller::helm_upgrade`] for a check that reads the Deployment alone (not its pods).
pub fn helm_upgrade(d: &ControllerDeployment, set: &str) -> String {
    let version = d
        .version()
        .as_deref()
        .and_then(Version::parse)
        .map(|v| v.to_string())
        .unwrap_or_else(|| "${KARPENTER_VERSION}".to_string());
    format!(
        "helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter --version {version} --namespace {} --reuse-values {set}",
        d.namespace()
    )
}

/// The controller and its pods; a skip when Karpenter is not installed (KD1001 says so).
pub async fn controller(cx: &CheckCx) -> Result<Controller, FactError> {
    let Some((deployments, index)) = cx.controller().await? else {
        return Err(FactError::NotInstalled {
            what: "the Karpenter controller".to_string(),
        });
    };
    let selector = ControllerDeployment::new(&deployments[index]).pod_selector();
    let ns = ControllerDeployment::new(&deployments[index])
        .namespace()
        .to_string();
    let pods = match selector {
        Some(sel) => cx.pods(&ns, &sel).await?,
        None => Arc::new(Vec::new()),
    };
    Ok(Controller {
        deployments,
        index,
        pods,
    })
}

pub use crate::model::pod_ready;

/// `kubectl describe` of a pod, the first command of most controller findings.
pub fn describe_pod(pod: &Pod) -> String {
    format!(
        "kubectl -n {} describe pod {}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The current logs of the controller's running pods (KD1009, KD9001 and the scheduling
/// checks read the same ones, so they are fetched once). `NotInstalled` when no controller
/// pod runs; a pod without a log yet is left out.
pub async fn current_logs(cx: &CheckCx) -> Result<Vec<String>, FactError> {
    let c = controller(cx).await?;
    let container = c.container();
    let ns = c.deployment().namespace().to_string();
    let names: Vec<String> = c
        .pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    if names.is_empty() {
        return Err(FactError::NotInstalled {
            what: "a running controller pod".to_string(),
        });
    }
    let logs = futures::future::join_all(
        names
            .iter()
            .map(|name| cx.pod_logs(&ns, name, &container, false)),
    )
    .await;
    let mut texts = Vec::new();
    for log in logs {
        if let Some(text) = log?.as_ref() {
            texts.push(text.clone());
        }
    }
    Ok(texts)
}

/// Recent error lines of the controller's running containers, grouped by cause.
pub async fn log_groups(cx: &CheckCx) -> Result<Vec<crate::logs::Group>, FactError> {
    let texts = current_logs(cx).await?;
    Ok(crate::logs::group_errors(texts.iter().map(String::as_str)))
}

/// The queue name the controller is configured with (`INTERRUPTION_QUEUE`); `None` when
/// interruption handling is off.
pub async fn configured_queue(cx: &CheckCx) -> Result<Option<String>, FactError> {
    let c = controller(cx).await?;
    Ok(c.deployment()
        .env("INTERRUPTION_QUEUE")
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string))
}

/// The `helm upgrade` that sets the interruption queue, pinned to the running release.
pub async fn set_queue_command(cx: &CheckCx, queue: &str) -> Result<String, FactError> {
    Ok(controller(cx)
        .await?
        .helm_upgrade(&format!("--set settings.interruptionQueue={queue}")))
}
