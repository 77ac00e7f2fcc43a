//! KD6005: nodes of GPU or Neuron instance types, or launched for pods that request such a
//! resource, whose allocatable still lacks it ten minutes after registration: no device
//! plugin, one kept off the node, one not ready, or an image without the driver (rules:
//! docs/node-capacity.md §3).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Taint};

use crate::check::prelude::*;
use crate::checks::common::held::{HeldNodes, NodeCause, pod_not_ready};
use crate::checks::common::nodeclaim::{
    Declared, Settled, class_of, instance_type_of, name_of, settled_claims,
};
use crate::checks::common::nodeclass::resolved_amis;
use crate::ec2::{AmiTerm, ami_terms};
use crate::facts::InstanceType;
use crate::model::NodeClaim;
use crate::nodecap::{
    Component, Excluded, PodState, ds_id, labeler, daemonsets_of, device_plugin, images_lack_driver, is_accelerator, listed, pod_state,
    runs_on,
};
use crate::quantity::Quantity;

declare_check! {
    pub static NODE_EXTENDED_RESOURCE_MISSING = {
        code: "KD6005",
        slug: "node-extended-resource-missing",
        title: "accelerated nodes register their GPUs and Neuron devices",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Node, DaemonSets, NodePods, Ec2InstanceTypes, NodePools, Ec2NodeClasses],
        self_managed: true,
        run: extended_resource_missing,
    }
}

async fn extended_resource_missing(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    // Without the instance types a node that should have a GPU nobody asked for cannot be
    // told from one that has none: the check is unknown, with the permission to add.
    let types = cx.instance_types().await?;
    let by_name: BTreeMap<&str, &InstanceType> = types
        .iter()
        .map(|t| (t.instance_type.as_str(), t))
        .collect();
    let wanted = |claim: &NodeClaim| -> Vec<(String, bool)> {
        let mut out: Vec<(String, bool)> = claim
            .spec
            .resources
            .requests
            .iter()
            .filter(|(r, q)| is_accelerator(r) && nonzero(q))
            .map(|(r, _)| (r.to_string(), true))
            .collect();
        let offered = instance_type_of(claim)
            .and_then(|t| by_name.get(t))
            .map(|it| it.extended_resources())
            .unwrap_or_default();
        for (r, _) in offered {
            if !out.iter().any(|(have, _)| have == r) {
                out.push((r.to_string(), false));
            }
        }
        out
    };
    let settled = settled_claims(cx, &claims, |c| !wanted(c).is_empty()).await?;
    let mut daemonsets = None;
    let mut held = HeldNodes::default();
    for Settled { claim, node } in &settled {
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let missing = wanted(claim).into_iter().find(|(r, _)| {
            allocatable
                .and_then(|a| a.get(r))
                .is_none_or(|q| Quantity::parse(&q.0).is_none_or(|q| q == Quantity::ZERO))
        });
        let Some((resource, requested)) = missing else {
            continue;
        };
        let all = match &daemonsets {
            Some(d) => std::sync::Arc::clone(d),
            None => {
                let d = cx.daemonsets().await?;
                daemonsets = Some(std::sync::Arc::clone(&d));
                d
            }
        };
        let pools = cx.nodepools().await?;
        let declared = Declared::of(claim, &pools);
        let Some(mut cause) = judge(cx, node, &resource, &all, claim, &declared).await? else {
            continue;
        };
        if !requested {
            // Nothing waits for it yet: it breaks when a pod that requests it comes.
            cause.severity = Severity::Warning;
            cause.hint = format!(
                "{}. No pod asked for it yet, so Karpenter does not wait for it; pods that request it will not fit on these nodes. If the NodePool is not meant for accelerated work, keep these types out of it (a requirement karpenter.k8s.aws/instance-gpu-count DoesNotExist, or an instance-category without g and p)",
                cause.hint.trim_end_matches('.')
            );
        }
        held.add(claim, name_of(node), resource, cause);
    }
    Ok(held.findings("resource", |resource, h| {
        if h.cause.severity == Severity::Error {
            format!(
                "{} node(s) were launched for pods that request {resource}, and the nodes do not offer it: {}",
                h.nodes.len(),
                h.cause.what
            )
        } else {
            format!(
                "{} node(s) of types with {resource} do not offer it: {}",
                h.nodes.len(),
                h.cause.what
            )
        }
    }))
}

fn nonzero(q: &str) -> bool {
    Quantity::parse(q).is_some_and(|q| q > Quantity::ZERO)
}

async fn judge(
    cx: &CheckCx,
    node: &Node,
    resource: &str,
    daemonsets: &[DaemonSet],
    claim: &NodeClaim,
    declared: &Declared,
) -> Result<Option<NodeCause>, FactError> {
    let Some(plugin) = device_plugin(resource) else {
        return Ok(None);
    };
    let os = node
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.os_image.clone())
        .unwrap_or_default();
    let name = name_of(node);
    let describe = format!("kubectl describe node {name}");
    if let Some(cause) = image_without_driver(cx, claim, resource).await? {
        return Ok(Some(cause));
    }
    // Bottlerocket's NVIDIA variants register GPUs from the host, with no DaemonSet; its
    // osImage names the variant: `Bottlerocket OS 1.29.0 (aws-k8s-1.31-nvidia)`.
    let bottlerocket = os.contains("Bottlerocket");
    let nvidia_variant = bottlerocket && os.contains("nvidia");
    if resource == "nvidia.com/gpu" && bottlerocket && !nvidia_variant {
        return Ok(Some(NodeCause {
            what: format!("the node runs {os}, which registers no NVIDIA GPUs"),
            hint: "on Bottlerocket only the *-nvidia variants carry the driver and register nvidia.com/gpu themselves: select the nvidia variant in the EC2NodeClass (the bottlerocket alias picks it for GPU types; AMIs chosen by id, name or tag do not)".into(),
            fix: Some(describe),
            severity: Severity::Error,
            evidence: vec![("osImage", os)],
        }));
    }
    let plugins = daemonsets_of(&plugin, daemonsets);
    if resource == "nvidia.com/gpu" && nvidia_variant && plugins.is_empty() {
        return Ok(Some(NodeCause {
            what: format!("the node runs {os}, whose own device plugin registered nothing"),
            hint: "Bottlerocket's NVIDIA variants register nvidia.com/gpu from the host, with no DaemonSet; it has not happened, so the driver or the host's device plugin failed: the instance's console output shows it (aws ec2 get-console-output)".into(),
            fix: Some(describe),
            severity: Severity::Error,
            evidence: vec![("osImage", os)],
        }));
    }
    if plugins.is_empty() {
        return Ok(Some(NodeCause {
            what: format!("{} is not installed", plugin.name),
            hint: format!(
                "only a device plugin makes {resource} appear in a node's allocatable, and no DaemonSet of {} exists: install it so that it runs on the NodePool's nodes (tolerating its taints)",
                plugin.name
            ),
            fix: Some("kubectl get daemonsets -A".into()),
            severity: Severity::Error,
            evidence: Vec::new(),
        }));
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        // The plugin may wait for startup taints to go (their removers are KD6004's); the
        // kubelet's own taints are tolerated by every DaemonSet.
        .filter(|t| !t.key.starts_with("node.kubernetes.io/") && !listed(&declared.startup, t))
        .collect();
    let mut excluded = None;
    for ds in &plugins {
        let id = ds_id(ds);
        let ns = ds.metadata.namespace.as_deref().unwrap_or("");
        match runs_on(ds, &labels, &taints) {
            Err(why) => {
                excluded.get_or_insert((id, why));
            }
            Ok(()) => {
                let pods = cx.node_pods(name).await?;
                let state = pod_state(ds, &pods);
                let then = format!("{resource} appears");
                if let Some(cause) = pod_not_ready(plugin.name, ds, &state, &then) {
                    return Ok(Some(cause));
                }
                return Ok(Some(match state {
                    PodState::Ready { pod, .. } => NodeCause {
                        what: format!("{} runs on the node but registers nothing", plugin.name),
                        hint: format!(
                            "{pod} is ready and registers no device: the host has no working driver for it. Either the image lacks the driver (the al2023 or bottlerocket alias picks the nvidia or neuron variant for accelerated types; AMIs chosen by id, name or tag are used as they are) or the driver failed to load (the instance's console output shows it: aws ec2 get-console-output){}",
                            ami_note(claim)
                        ),
                        fix: Some(format!("kubectl -n {ns} logs {}", pod.rsplit('/').next().unwrap_or(&pod))),
                        severity: Severity::Error,
                        evidence: vec![("daemonSet", id), ("pod", pod), ("osImage", os.clone())],
                    },
                    PodState::Missing | PodState::NotReady { .. } => return Ok(None),
                }));
            }
        }
    }
    let Some((id, why)) = excluded else {
        return Ok(None);
    };
    if let Excluded::NotSelected { key, .. } = &why
        && let Some(cause) = labeler_kept_off(&plugin, &id, key, daemonsets, &labels, &taints)
    {
        return Ok(Some(cause));
    }
    Ok(Some(NodeCause {
        what: format!("{} is kept off the node: DaemonSet {id} {}", plugin.name, why.describe()),
        hint: format!(
            "DaemonSet {id} never places its pod on these nodes, so nothing registers {resource}: add the missing toleration, or make its node selector or affinity match the NodePool's nodes (the NVIDIA chart by default selects only nodes labelled by Node Feature Discovery or nvidia.com/gpu.present=true)"
        ),
        fix: Some(format!("kubectl -n {} get daemonset {} -o yaml", id.split('/').next().unwrap_or(""), id.rsplit('/').next().unwrap_or(""))),
        severity: Severity::Error,
        evidence: vec![("daemonSet", id)],
    }))
}

/// The claim's EC2NodeClass selects images by id, name or tag, none of them built with the
/// driver for `resource`.
async fn image_without_driver(
    cx: &CheckCx,
    claim: &NodeClaim,
    resource: &str,
) -> Result<Option<NodeCause>, FactError> {
    if claim.spec.node_class_ref.is_none() {
        return Ok(None);
    }
    let classes = cx.ec2_nodeclasses().await?;
    let Some(class) = class_of(claim, &classes) else {
        return Ok(None);
    };
    let class_name = class.name();
    let names: Vec<&str> = resolved_amis(class)
        .filter_map(|a| a.get("name").and_then(|n| n.as_str()))
        .collect();
    // A v1beta1 class without terms uses its family's alias, as `ami_terms` says.
    let aliased = ami_terms(class)
        .iter()
        .any(|t| matches!(t, AmiTerm::Alias(_)));
    if images_lack_driver(aliased, &names, resource) != Some(true) {
        return Ok(None);
    }
    Ok(Some(NodeCause {
        what: format!("EC2NodeClass {class_name} selects images without the driver"),
        hint: format!(
            "EC2NodeClass {class_name} chooses its AMIs by id, name or tag ({}), and Karpenter uses them as they are on accelerated types: no driver, so no device plugin can register {resource}. Select them with an alias (al2023@latest or bottlerocket@latest picks the nvidia or neuron variant for these types), or name the accelerated AMI",
            names.join(", ")
        ),
        fix: Some(format!("kubectl get ec2nodeclass {class_name} -o jsonpath='{{.spec.amiSelectorTerms}}'")),
        severity: Severity::Error,
        evidence: vec![("images", names.join(", "))],
    }))
}

/// The instance type, to say which images it needs.
fn ami_note(claim: &NodeClaim) -> String {
    instance_type_of(claim)
        .map(|t| format!(" ({t})"))
        .unwrap_or_default()
}

/// The plugin selects nodes by a label another DaemonSet sets (Node Feature Discovery's), and
/// that DaemonSet is missing or kept off the node: the label never comes, so that is the cause
/// to fix (NVIDIA/k8s-device-plugin#1934: the NFD worker tolerating `nvidia.com/gpu` only with
/// the value `present`).
fn labeler_kept_off(
    plugin: &Component,
    plugin_id: &str,
    key: &str,
    daemonsets: &[DaemonSet],
    labels: &BTreeMap<String, String>,
    taints: &[Taint],
) -> Option<NodeCause> {
    let labeler = labeler(key)?;
    let workers = daemonsets_of(&labeler, daemonsets);
    if workers.is_empty() {
        return Some(NodeCause {
            what: format!(
                "{} selects nodes by {key}, and {} that sets it is not installed",
                plugin.name, labeler.name
            ),
            hint: format!(
                "DaemonSet {plugin_id} requires the label {key}, which only {} sets: install it, or make the plugin's affinity select the NodePool's nodes another way (e.g. karpenter.k8s.aws/instance-gpu-manufacturer In [nvidia])",
                labeler.name
            ),
            fix: Some("kubectl get daemonsets -A".into()),
            severity: Severity::Error,
            evidence: vec![("daemonSet", plugin_id.to_string())],
        });
    }
    let (worker, why) = workers
        .iter()
        .find_map(|w| runs_on(w, labels, taints).err().map(|why| (*w, why)))?;
    let ns = worker.metadata.namespace.as_deref().unwrap_or("");
    let name = worker.metadata.name.as_deref().unwrap_or("");
    let wid = ds_id(worker);
    Some(NodeCause {
        what: format!(
            "{} waits for the label {key}, and {} that sets it is kept off the node: DaemonSet {wid} {}",
            plugin.name,
            labeler.name,
            why.describe()
        ),
        hint: format!(
            "DaemonSet {plugin_id} runs only on nodes labelled {key}, which {} sets, and DaemonSet {wid} never runs on these nodes: give it the toleration it lacks (with the NVIDIA chart, nfd.worker.tolerations; `operator: Exists` matches any value)",
            labeler.name
        ),
        fix: Some(format!(
            "kubectl -n {ns} get daemonset {name} -o jsonpath='{{.spec.template.spec.tolerations}}'"
        )),
        severity: Severity::Error,
        evidence: vec![("daemonSet", plugin_id.to_string()), ("labeler", wid)],
    })
}
