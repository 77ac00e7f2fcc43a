//! KD1005: controller pods that no node accepts. The controller cannot run on capacity it
//! manages, so it needs a managed node group or a Fargate profile; the classic failures are a
//! Fargate profile for another namespace and the chart's anti-affinity and zonal spread asking
//! for more non-Karpenter nodes than exist.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::codes::AUTOMODE_KARPENTER_COEXISTENCE;
use crate::checks::common::controller::{controller, describe_pod, pod_ready};
use crate::facts::{FargateProfile, FargateSelector};
use crate::model::object_ref;

declare_check! {
    pub static CONTROLLER_UNSCHEDULABLE = {
        code: "KD1005",
        slug: "controller-unschedulable",
        title: "the controller's pods can be scheduled",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, Pods, EksCluster, EksFargateProfiles],
        self_managed: true,
        run: controller_unschedulable,
    }
}

async fn controller_unschedulable(cx: &CheckCx) -> CheckResult {
    let c = controller(cx).await?;
    let pending: Vec<&Pod> = c.pods.iter().filter(|p| unscheduled(p).is_some()).collect();
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    // No ready replica: nothing provisions now (error). With one ready, the Pending one is
    // the lost redundancy: the next crash, eviction or drain of the ready one stops
    // provisioning (warning), as KD1001 judges a degraded replica.
    let severity = if c.pods.iter().any(pod_ready) {
        Severity::Warning
    } else {
        Severity::Error
    };
    let ns = c.deployment().namespace().to_string();
    // Fargate is judged only when the cluster can be named; without it the scheduler's own
    // message is still the finding.
    // The profiles explain the Pending pods; the scheduler's verdict stands without them.
    let profiles = cx
        .enrich(async {
            let cl = cluster(cx).await?;
            cx.fargate_profiles(&cl.name).await
        })
        .await;
    let (profiles, fargate_error) = match profiles {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(format!("could not be read: {e}"))),
    };
    // Profiles that could host the controller; the cluster uses Fargate when it has any.
    let active: Vec<&FargateProfile> = profiles
        .as_deref()
        .into_iter()
        .flatten()
        .filter(|p| p.status.is_empty() || p.status == "ACTIVE")
        .collect();
    // Beside EKS Auto Mode, every Auto Mode node carries the label the chart's default
    // affinity excludes: KD1201 finds when that leaves no node at all.
    let auto_mode = cx
        .enrich(cluster(cx))
        .await
        .is_ok_and(|c| c.auto_mode());
    let mut findings = Vec::new();
    for pod in pending {
        let (reason, message) = unscheduled(pod).unwrap_or_default();
        let labels: BTreeMap<String, String> = pod.metadata.labels.clone().unwrap_or_default();
        let fargate_gap = (!active.is_empty()
            && !active
                .iter()
                .any(|p| p.selectors.iter().any(|s| selects(s, &ns, &labels))))
        .then_some(&active);
        let said = if message.is_empty() {
            "no node accepted it".to_string()
        } else {
            message.clone()
        };
        let mut f = Finding::new(
            object_ref("Pod", &pod.metadata),
            match fargate_gap {
                // The scheduler's words stay first: the controller may be meant for a node
                // group, and then the missing profile is only one way out.
                Some(_) => format!("is Pending ({said}); the cluster runs pods on Fargate but no Fargate profile selects namespace {ns} with these labels"),
                None => format!("is Pending: {said}"),
            },
        )
        .evidence("reason", reason)
        .evidence("schedulerMessage", message.clone());
        if let Some(e) = &fargate_error {
            f = f.evidence("fargateProfiles", e.clone());
        }
        if let Some(profiles) = fargate_gap {
            let shown: Vec<String> = profiles.iter().map(|p| describe_profile(p)).collect();
            let role = profiles
                .iter()
                .map(|p| p.pod_execution_role_arn.as_str())
                .find(|r| !r.is_empty())
                .unwrap_or("${FARGATE_POD_EXECUTION_ROLE_ARN}");
            let subnets = profiles
                .iter()
                .find(|p| !p.subnets.is_empty())
                .map(|p| p.subnets.join(" "))
                .unwrap_or_else(|| "${PRIVATE_SUBNET_IDS}".to_string());
            f = f
                .evidence("fargateProfiles", shown)
                .evidence("podLabels", labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>())
                .hint(format!("add a Fargate profile for namespace {ns} (or run the controller in a namespace an existing profile selects)"))
                .fix(format!(
                    "aws eks create-fargate-profile --cluster-name ${{CLUSTER_NAME}} --fargate-profile-name karpenter --pod-execution-role-arn {role} --subnets {subnets} --selectors namespace={ns}"
                ));
        } else {
            f = f.hint(hint_for(&message)).fix(describe_pod(pod));
        }
        if auto_mode && message.contains("node affinity") {
            f = f.owned_by([AUTOMODE_KARPENTER_COEXISTENCE]);
        }
        findings.push(f.severity(severity));
    }
    Ok(findings)
}

/// `(reason, message)` of a pod the scheduler could not place.
fn unscheduled(pod: &Pod) -> Option<(String, String)> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") {
        return None;
    }
    let c = status
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    Some((
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

/// What to try, from the scheduler's wording.
fn hint_for(message: &str) -> String {
    let m = message.to_ascii_lowercase();
    if m.contains("fargate") {
        "the only nodes are Fargate nodes for other namespaces: add a Fargate profile for the controller's namespace or a managed node group".to_string()
    } else if m.contains("topology spread") || m.contains("anti-affinity") {
        "the chart spreads replicas over zones and hosts: give it non-Karpenter nodes in two zones, or set replicas=1".to_string()
    } else if m.contains("taint") {
        "every node has a taint the controller does not tolerate: add a toleration (tolerations in the chart values) or untainted capacity".to_string()
    } else if m.contains("insufficient") {
        "no non-Karpenter node has room for the controller's requests: add capacity or lower controller.resources".to_string()
    } else if m.contains("node affinity") || m.contains("node selector") {
        "the controller may not run on Karpenter's own nodes (by design): add a managed node group or a Fargate profile".to_string()
    } else {
        "describe the pod: the scheduler's events say which constraint no node meets".to_string()
    }
}

/// Whether a Fargate selector selects a pod: same namespace (`*` and `?` wildcards allowed)
/// and every selector label on the pod.
pub fn selects(s: &FargateSelector, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
    crate::iam::policy::wildcard(&s.namespace, namespace, false)
        && s.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn describe_profile(p: &FargateProfile) -> String {
    let selectors: Vec<String> = p
        .selectors
        .iter()
        .map(|s| {
            if s.labels.is_empty() {
                format!("namespace={}", s.namespace)
            } else {
                let l: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("namespace={} labels={}", s.namespace, l.join(","))
            }
        })
        .collect();
    format!("{} ({})", p.name, selectors.join("; "))
}
