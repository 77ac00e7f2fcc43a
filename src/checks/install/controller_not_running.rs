//! KD1001: without a running controller nothing else Karpenter does can happen, so this is
//! the first link of every triage.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::codes::CONTROLLER_UNSCHEDULABLE;
use crate::checks::common::controller::pod_ready;
use crate::model::{ControllerDeployment, object_ref};

declare_check! {
    pub static CONTROLLER_NOT_RUNNING = {
        code: "KD1001",
        slug: "controller-not-running",
        title: "the Karpenter controller is deployed and its pods are ready",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, Pods, PodLogs],
        // The previous container's log explains a crash loop; the loop is reported without it.
        evidence: [PodLogs],
        self_managed: true,
        run: controller_not_running,
    }
}

async fn controller_not_running(cx: &CheckCx) -> CheckResult {
    let Some((deployments, index)) = cx.controller().await? else {
        let place = match &cx.hints().namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "in any namespace".to_string(),
        };
        let ns = cx
            .hints()
            .namespace
            .clone()
            .unwrap_or_else(|| "kube-system".to_string());
        return Ok(vec![
            Finding::new(
                "Deployment/karpenter",
                format!("no Karpenter controller Deployment was found {place}"),
            )
            .evidence("searched", place)
            .hint("install Karpenter with its Helm chart, or pass --namespace where it runs")
            .fix(format!(
                "helm upgrade --install karpenter oci://public.ecr.aws/karpenter/karpenter --version ${{KARPENTER_VERSION}} --namespace {ns} --create-namespace --set settings.clusterName=${{CLUSTER_NAME}} --wait"
            )),
        ]);
    };
    let controller = ControllerDeployment::new(&deployments[index]);
    let ns = controller.namespace();
    let name = controller.name();
    let logs = format!("kubectl -n {ns} logs deploy/{name} -c controller --previous");

    if controller.desired_replicas() == 0 {
        return Ok(vec![
            Finding::new(
                controller.object(),
                "the controller Deployment is scaled to zero replicas",
            )
            .evidence("replicas", 0)
            .hint("scale it back up; nothing provisions nodes while it is at zero")
            .fix(format!("kubectl -n {ns} scale deploy/{name} --replicas=2")),
        ]);
    }

    let pods = match controller.pod_selector() {
        Some(selector) => cx.pods(ns, &selector).await?.to_vec(),
        None => Vec::new(),
    };
    let ready = if pods.is_empty() {
        controller.ready_replicas()
    } else {
        pods.iter().filter(|p| pod_ready(p)).count() as i32
    };
    let desired = controller.desired_replicas();
    // With no ready pod the controller is down (error); with some ready, a crash-looping
    // sibling is a degraded replica (warning).
    let severity = if ready == 0 {
        Severity::Error
    } else {
        Severity::Warning
    };

    let mut findings = Vec::new();
    for pod in &pods {
        let Some(mut f) = pod_problem(pod, &logs) else {
            continue;
        };
        if let Some(cs) = crash_looping_container(pod) {
            f = explain_crash(cx, pod, &cs.name, f).await;
        }
        findings.push(f.severity(severity));
    }
    if ready == 0 && findings.is_empty() {
        findings.push(
            Finding::new(
                controller.object(),
                format!("no controller pod is ready (0 of {desired})"),
            )
            .evidence("desiredReplicas", desired)
            .evidence("readyReplicas", 0)
            .evidence("podsFound", pods.len())
            .hint("describe the Deployment and its pods to see why none became ready")
            .fix(format!("kubectl -n {ns} describe deploy/{name}"))
            .fix(logs.clone()),
        );
    }
    Ok(findings)
}

fn crash_looping_container(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_deref()?
        .iter()
        .find(|cs| crash_looping(cs))
}

/// Reads the previous container's log and names the cause its last error lines show, with
/// the check that owns it. Without the log (no permission, no previous container) the crash
/// loop is still reported, and the evidence says why the log is missing.
async fn explain_crash(cx: &CheckCx, pod: &Pod, container: &str, f: Finding) -> Finding {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let log = match cx.enrich(cx.pod_logs(ns, name, container, true)).await {
        Ok(log) => log,
        Err(e) => return f.evidence("previousLog", format!("could not be read: {e}")),
    };
    let Some(text) = log.as_ref() else {
        return f.evidence(
            "previousLog",
            "none kept (the container has not restarted since the pod started)",
        );
    };
    let groups = crate::logs::group_errors([text.as_str()]);
    let Some(first) = groups
        .iter()
        .find(|g| g.pattern.is_some_and(|p| !p.benign))
        // Else the most frequent unknown error; benign noise explains no crash.
        .or_else(|| groups.iter().find(|g| g.pattern.is_none()))
    else {
        return f.evidence(
            "previousLog",
            "no error lines in the last lines of the previous container",
        );
    };
    let f = f.evidence("lastError", first.example.clone());
    match first.pattern {
        Some(p) => f
            .evidence("cause", p.summary)
            .evidence("ownedBy", p.owners.join(", "))
            .hint(format!("{}: see {}", p.summary, p.owners.join(", ")))
            .owned_by_checks(p.owners),
        None => f,
    }
}

/// What is wrong with one controller pod, if anything: crash loops (with the last
/// termination), containers that cannot start, or a pod that was never scheduled.
fn pod_problem(pod: &Pod, logs: &str) -> Option<Finding> {
    let object = object_ref("Pod", &pod.metadata);
    let status = pod.status.as_ref()?;
    let statuses = status.container_statuses.as_deref().unwrap_or(&[]);
    if let Some(cs) = statuses.iter().find(|cs| crash_looping(cs)) {
        let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        let reason = last
            .and_then(|t| t.reason.clone())
            .unwrap_or_else(|| "unknown".to_string());
        let exit_code = last.map(|t| t.exit_code);
        let mut f = Finding::new(
            object,
            format!(
                "container {} is crash-looping: last exit {} ({reason}), {} restarts",
                cs.name,
                exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".to_string()),
                cs.restart_count
            ),
        )
        .evidence("container", cs.name.clone())
        .evidence("restartCount", cs.restart_count)
        .evidence("lastTerminationReason", reason.clone());
        if let Some(code) = exit_code {
            f = f.evidence("lastExitCode", code);
        }
        if let Some(msg) = last.and_then(|t| t.message.clone()) {
            f = f.evidence("lastTerminationMessage", msg);
        }
        if let Some(at) = last.and_then(|t| t.finished_at.as_ref()) {
            f = f.evidence("lastFinishedAt", at.0.to_string());
        }
        let hint = if reason == "OOMKilled" {
            "the controller ran out of memory: raise its memory limit (controller.resources in the chart)"
        } else {
            "read the previous container's log: the last lines name the cause (credentials, region, cluster endpoint, interruption queue)"
        };
        return Some(f.hint(hint).fix(logs.to_string()));
    }
    if let Some((cs, reason, message)) = statuses.iter().find_map(|cs| {
        let w = cs.state.as_ref()?.waiting.as_ref()?;
        let reason = w.reason.clone()?;
        matches!(
            reason.as_str(),
            "ImagePullBackOff"
                | "ErrImagePull"
                | "CreateContainerConfigError"
                | "InvalidImageName"
                | "CreateContainerError"
        )
        .then(|| (cs, reason, w.message.clone().unwrap_or_default()))
    }) {
        return Some(
            Finding::new(
                object,
                format!("container {} cannot start: {reason}", cs.name),
            )
            .evidence("waitingReason", reason)
            .evidence("message", message)
            .hint("check the image reference and the registry access of the node")
            .fix(format!(
                "kubectl -n {} describe pod {}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default()
            )),
        );
    }
    if status.phase.as_deref() == Some("Pending") {
        let unscheduled = status
            .conditions
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False");
        if let Some(c) = unscheduled {
            return Some(
                Finding::new(object, "the pod is Pending: no node accepted it")
                    .evidence("reason", c.reason.clone().unwrap_or_default())
                    .evidence("message", c.message.clone().unwrap_or_default())
                    .hint(format!("the controller needs capacity Karpenter does not manage: a managed node group or a Fargate profile for its namespace ({CONTROLLER_UNSCHEDULABLE} explains why it is not scheduled)"))
                    // Why no node accepts it is KD1005's to say: a symptom of its cause.
                    .owned_by([CONTROLLER_UNSCHEDULABLE])
                    .fix(format!(
                        "kubectl -n {} describe pod {}",
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.name.as_deref().unwrap_or_default()
                    )),
            );
        }
    }
    None
}

fn crash_looping(cs: &ContainerStatus) -> bool {
    let waiting_backoff = cs
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.as_deref())
        == Some("CrashLoopBackOff");
    let terminated_before = cs
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some();
    waiting_backoff || (!cs.ready && cs.restart_count > 0 && terminated_before)
}
