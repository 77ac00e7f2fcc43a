//! KD6004: a node that registered ten minutes ago or more still carries a taint that keeps
//! Karpenter from calling it initialized, and the component that should remove it is missing,
//! kept off the node, not ready, or gave up (rules: docs/node-capacity.md §2).

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::check::prelude::*;
use crate::checks::common::held::{HeldNodes, NodeCause, pod_not_ready};
use crate::checks::common::nodeclaim::{Declared, Settled, name_of, pool_of, settled_claims};
use crate::model::NodeClaim;
use crate::nodecap::{
    Component, PodState, UNINITIALIZED, daemonsets_of, ds_id, listed, names_taint, owned_elsewhere,
    pod_state, remover, runs_on,
};
use crate::scheduling::show_taint;

declare_check! {
    pub static NODE_STARTUP_TAINT_STUCK = {
        code: "KD6004",
        slug: "node-startup-taint-stuck",
        title: "startup taints are removed from new nodes",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Node, DaemonSets, NodePods, NodePools],
        self_managed: true,
        run: startup_taint_stuck,
    }
}

async fn startup_taint_stuck(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let settled = settled_claims(cx, &claims, |c| {
        c.status
            .condition("Initialized")
            .is_none_or(|i| i.status != "True")
    })
    .await?;
    if settled.is_empty() {
        return Ok(Vec::new());
    }
    let daemonsets = cx.daemonsets().await?;
    let pools = cx.nodepools().await?;
    let mut held = HeldNodes::default();
    for Settled { claim, node } in &settled {
        let declared = Declared::of(claim, &pools);
        let taints = node_taints(node);
        let scheduling_taints: Vec<Taint> = taints
            .iter()
            .filter(|t| !t.key.starts_with("node.kubernetes.io/"))
            .cloned()
            .collect();
        for taint in taints
            .iter()
            .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
            .filter(|t| !owned_elsewhere(t) && !listed(&declared.taints, t))
        {
            let cause =
                judge(cx, claim, &declared, node, taint, &scheduling_taints, &daemonsets).await?;
            if let Some(cause) = cause {
                held.add(claim, name_of(node), show_taint(taint), cause);
            }
        }
    }
    Ok(held.findings("taint", |taint, h| {
        format!("{} node(s) keep {taint}: {}", h.nodes.len(), h.cause.what)
    }))
}

fn node_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
}

async fn judge(
    cx: &CheckCx,
    claim: &NodeClaim,
    declared: &Declared,
    node: &Node,
    taint: &Taint,
    scheduling_taints: &[Taint],
    daemonsets: &[k8s_openapi::api::apps::v1::DaemonSet],
) -> Result<Option<NodeCause>, FactError> {
    let key = taint.key.as_str();
    if key == UNINITIALIZED {
        return Ok(Some(NodeCause {
            what: "the cloud provider never initialized the node".into(),
            hint: "the cloud node controller, which EKS runs in the control plane, removes this taint; Karpenter does not, and nothing in the cluster can. Check that the instance belongs to this cluster's account and region, replace the node (delete its NodeClaim), and open an AWS support case if new nodes keep it".into(),
            fix: None,
            severity: Severity::Error,
            evidence: vec![("remover", "the EKS cloud-controller-manager (control plane)".into())],
        }));
    }
    if !listed(&declared.startup, taint) {
        return Ok(Some(NodeCause {
            what: "a taint the NodePool does not declare".into(),
            hint: format!(
                "Karpenter did not put {key} on the node and does not know it: pods that do not tolerate it stay off the node, and while the node is new Karpenter plans for pods it cannot take and launches more nodes. If a component removes it (user data's --register-with-taints, a CNI agent), add it to the NodePool's spec.template.spec.startupTaints; if it should stay, add it to spec.template.spec.taints"
            ),
            fix: None,
            severity: Severity::Warning,
            evidence: Vec::new(),
        }));
    }
    let component = remover(key);
    let removers: Vec<_> = match &component {
        Some(c) => daemonsets_of(c, daemonsets),
        // Nothing known removes it: a DaemonSet that tolerates it by name is its likeliest
        // remover (it was written to run before the taint goes).
        None => daemonsets.iter().filter(|d| names_taint(d, taint)).collect(),
    };
    let who = component.map(|c| c.name).unwrap_or("its remover");
    if removers.is_empty() {
        let hint = match &component {
            Some(c) => format!(
                "the NodePool lists {key} in startupTaints and {} removes it, but no DaemonSet of it is installed: install it, or take the taint out of startupTaints",
                c.name
            ),
            None => format!(
                "the NodePool lists {key} in startupTaints, and no known component removes it and no DaemonSet tolerates it by name: install what should remove it, or take it out of spec.template.spec.startupTaints"
            ),
        };
        return Ok(Some(NodeCause {
            what: match &component {
                Some(c) => format!("{} is not installed", c.name),
                None => "nothing removes it".into(),
            },
            hint,
            fix: Some(format!(
                "kubectl get nodepool {} -o jsonpath='{{.spec.template.spec.startupTaints}}'",
                pool_of(claim)
            )),
            severity: Severity::Error,
            evidence: Vec::new(),
        }));
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    // The remover must tolerate its own taint; other startup taints it may wait out.
    let must_tolerate: Vec<Taint> = scheduling_taints
        .iter()
        .filter(|t| *t == taint || !listed(&declared.startup, t))
        .cloned()
        .collect();
    let mut excluded = None;
    for ds in &removers {
        match runs_on(ds, &labels, &must_tolerate) {
            Err(why) => {
                excluded.get_or_insert((*ds, why));
            }
            Ok(()) => {
                let pods = cx.node_pods(name_of(node)).await?;
                return Ok(on_node(component, ds, pod_state(ds, &pods), cx.now()));
            }
        }
    }
    let Some((ds, why)) = excluded else {
        return Ok(None);
    };
    let id = ds_id(ds);
    Ok(Some(NodeCause {
        what: format!("{who} is kept off the node: DaemonSet {id} {}", why.describe()),
        hint: format!(
            "DaemonSet {id} never places its pod on the node, so the taint stays: add the missing toleration (or `operator: Exists`) or widen its node selector"
        ),
        fix: Some(format!(
            "kubectl -n {} get daemonset {} -o yaml",
            ds.metadata.namespace.as_deref().unwrap_or(""),
            ds.metadata.name.as_deref().unwrap_or("")
        )),
        severity: Severity::Error,
        evidence: vec![("daemonSet", id)],
    }))
}

/// The remover's DaemonSet places a pod on the node: judge that pod.
fn on_node(
    component: Option<Component>,
    ds: &k8s_openapi::api::apps::v1::DaemonSet,
    state: PodState,
    now: jiff::Timestamp,
) -> Option<NodeCause> {
    let id = ds_id(ds);
    let who = component.map(|c| c.name).unwrap_or("its remover");
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    if let Some(cause) = pod_not_ready(who, ds, &state, "the taint goes") {
        return Some(cause);
    }
    match state {
        PodState::Ready { pod, since } => {
            let window = component.map(|c| c.window_minutes).unwrap_or(5);
            let gave_up = since
                .as_deref()
                .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                .is_some_and(|t| now.duration_since(t).as_secs() > window * 60);
            gave_up.then(|| NodeCause {
                what: format!("{who} is ready on the node but the taint stayed ({pod})"),
                hint: format!(
                    "{pod} has been ready longer than it tries to remove the taint ({window} minutes): it gave up, usually after its patch raced another change to the node's taints. Deleting the pod makes its replacement try again"
                ),
                fix: Some(format!(
                    "kubectl -n {ns} delete pod {}",
                    pod.rsplit('/').next().unwrap_or(&pod)
                )),
                severity: Severity::Error,
                evidence: vec![
                    ("daemonSet", id),
                    ("pod", pod),
                    ("readySince", since.unwrap_or_default()),
                ],
            })
        }
        PodState::Missing | PodState::NotReady { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remover_ready_within_its_window_is_left_to_finish() {
        let ds: k8s_openapi::api::apps::v1::DaemonSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "ebs-csi-node", "namespace": "kube-system"}
        }))
        .unwrap();
        let now: jiff::Timestamp = "2026-11-20T10:20:00Z".parse().unwrap();
        let ready = |since: &str| PodState::Ready {
            pod: "kube-system/ebs-csi-node-x".into(),
            since: Some(since.into()),
        };
        let ebs = crate::nodecap::remover("ebs.csi.aws.com/agent-not-ready");
        assert!(on_node(ebs, &ds, ready("2026-11-20T10:15:00Z"), now).is_none());
        let stuck = on_node(ebs, &ds, ready("2026-11-20T10:00:00Z"), now).unwrap();
        assert!(stuck.fix.unwrap().ends_with("delete pod ebs-csi-node-x"));
    }
}
