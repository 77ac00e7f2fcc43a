//! Why a node that is up still cannot take pods: the taints nothing removes and the extended
//! resources nothing registers (rules and sources: docs/node-capacity.md §1–§3). Pure: the
//! checks hand in the node, its NodeClaim, the DaemonSets and the pods bound to the node.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Pod, PodSpec, Taint};

pub mod estimate;
pub mod podips;

use crate::scheduling::pods::alternatives;
use crate::scheduling::sets::Requirements;
use crate::scheduling::{show_taint, tolerates, untolerated};

/// How long after registration a node may still carry its startup taints: a CNI agent or a
/// CSI node plugin is ready within a minute or two, so ten minutes is a node that waits for
/// something that will not come.
pub const SETTLE_MINUTES: i64 = 10;

/// A component that removes a startup taint once it runs on the node, and how to know its
/// DaemonSet whatever its release is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component {
    pub name: &'static str,
    /// DaemonSet names it is usually installed as.
    names: &'static [&'static str],
    /// Parts of its image's repository.
    images: &'static [&'static str],
    /// Minutes its pod tries before it gives up on a taint (the taint then stays until the
    /// pod restarts).
    pub window_minutes: i64,
}

const CILIUM: Component = Component {
    name: "the Cilium agent",
    names: &["cilium"],
    images: &["cilium/cilium"],
    window_minutes: 5,
};
const EBS_CSI: Component = Component {
    name: "the EBS CSI node plugin",
    names: &["ebs-csi-node"],
    images: &["aws-ebs-csi-driver"],
    // v1.47 and later watch the node for 10 minutes; earlier releases try once.
    window_minutes: 10,
};
const EFS_CSI: Component = Component {
    name: "the EFS CSI node plugin",
    names: &["efs-csi-node"],
    images: &["aws-efs-csi-driver"],
    window_minutes: 5,
};
const FSX_CSI: Component = Component {
    name: "the FSx CSI node plugin",
    names: &["fsx-csi-node"],
    images: &["aws-fsx-csi-driver"],
    window_minutes: 5,
};

/// The component that removes a startup taint, by the taint's key.
pub fn remover(key: &str) -> Option<Component> {
    match key {
        "node.cilium.io/agent-not-ready" => Some(CILIUM),
        "ebs.csi.aws.com/agent-not-ready" => Some(EBS_CSI),
        "efs.csi.aws.com/agent-not-ready" => Some(EFS_CSI),
        "fsx.csi.aws.com/agent-not-ready" => Some(FSX_CSI),
        _ => None,
    }
}

/// The device plugin that registers an extended resource.
pub fn device_plugin(resource: &str) -> Option<Component> {
    let plugin = |name, names, images| Component {
        name,
        names,
        images,
        window_minutes: 5,
    };
    match resource {
        "nvidia.com/gpu" => Some(plugin(
            "the NVIDIA device plugin",
            &["nvidia-device-plugin", "nvidia-device-plugin-daemonset"],
            &["nvidia/k8s-device-plugin", "nvidia-device-plugin"],
        )),
        "aws.amazon.com/neuron" | "aws.amazon.com/neuroncore" => Some(plugin(
            "the Neuron device plugin",
            &["neuron-device-plugin", "neuron-device-plugin-daemonset"],
            &["neuron-device-plugin"],
        )),
        "amd.com/gpu" => Some(plugin(
            "the AMD GPU device plugin",
            &["amdgpu-device-plugin-daemonset", "amd-gpu-device-plugin"],
            &["rocm/k8s-device-plugin"],
        )),
        "habana.ai/gaudi" => Some(plugin(
            "the Habana device plugin",
            &["habanalabs-device-plugin-daemonset"],
            &["habanalabs/devices-plugin", "habana-device-plugin"],
        )),
        _ => None,
    }
}

/// Whether an EC2NodeClass picks images that carry no driver for a resource: it selects AMIs
/// without an alias (an alias resolves the nvidia or neuron variant for accelerated types; ids,
/// names and tags are used as they are: `amifamily` `Variant.Requirements` in
/// karpenter-provider-aws), and none of the images it resolved is named for that driver.
/// `None` when the class cannot say (an alias, or no resolved images recorded).
pub fn images_lack_driver(aliased: bool, image_names: &[&str], resource: &str) -> Option<bool> {
    if aliased || image_names.is_empty() {
        return None;
    }
    let marks: &[&str] = match resource {
        "nvidia.com/gpu" => &["nvidia", "gpu"],
        "aws.amazon.com/neuron" | "aws.amazon.com/neuroncore" => &["neuron"],
        _ => return None,
    };
    let lower: Vec<String> = image_names.iter().map(|n| n.to_lowercase()).collect();
    Some(!lower.iter().any(|n| marks.iter().any(|m| n.contains(m))))
}

/// The EBS CSI driver's name, as CSINodes and VolumeAttachments carry it.
pub const EBS_DRIVER: &str = "ebs.csi.aws.com";

/// Whether a VolumeAttachment's error is EC2 refusing an attachment over the instance's limit:
/// `AttachmentLimitExceeded` as the driver passed it on before v1.45, `Attachment limit
/// exceeded` as it words it since.
pub fn attach_limit_error(message: &str) -> bool {
    message.contains("AttachmentLimitExceeded") || message.contains("Attachment limit exceeded")
}

/// The extended resources Karpenter waits for when a pod requests them.
pub fn is_accelerator(resource: &str) -> bool {
    device_plugin(resource).is_some()
}

/// Node Feature Discovery's worker, which sets the `feature.node.kubernetes.io/*` labels that
/// device plugins select nodes by. Known by name only: NFD's topology updater runs the same
/// image.
const NFD_WORKER: Component = Component {
    name: "the Node Feature Discovery worker",
    names: &["nfd-worker", "node-feature-discovery-worker"],
    images: &[],
    window_minutes: 5,
};

/// The component that sets a node label a DaemonSet selects on, when one is known.
pub fn labeler(key: &str) -> Option<Component> {
    key.starts_with("feature.node.kubernetes.io/")
        .then_some(NFD_WORKER)
}

/// The DaemonSets that are this component: by name (a Helm release prefixes it:
/// `nvdp-nvidia-device-plugin`), or by image.
pub fn daemonsets_of<'d>(c: &Component, all: &'d [DaemonSet]) -> Vec<&'d DaemonSet> {
    all.iter()
        .filter(|ds| {
            let name = ds.metadata.name.as_deref().unwrap_or("");
            let named = c
                .names
                .iter()
                .any(|n| name == *n || name.strip_suffix(n).is_some_and(|p| p.ends_with('-')));
            let images = spec(ds)
                .map(|s| s.containers.iter().filter_map(|c| c.image.as_deref()))
                .into_iter()
                .flatten();
            named
                || images
                    .into_iter()
                    .any(|i| c.images.iter().any(|p| i.contains(p)))
        })
        .collect()
}

/// `namespace/name`, as findings name a DaemonSet.
pub fn ds_id(ds: &DaemonSet) -> String {
    format!(
        "{}/{}",
        ds.metadata.namespace.as_deref().unwrap_or(""),
        ds.metadata.name.as_deref().unwrap_or("")
    )
}

fn spec(ds: &DaemonSet) -> Option<&PodSpec> {
    ds.spec.as_ref()?.template.spec.as_ref()
}

/// Why a DaemonSet places no pod on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Excluded {
    /// A `NoSchedule`/`NoExecute` taint of the node its pods do not tolerate.
    Untolerated(String),
    /// Its node selector or required affinity does not select the node's labels: why, and the
    /// label key of the first requirement that fails.
    NotSelected { why: String, key: String },
}

impl Excluded {
    pub fn describe(&self) -> String {
        match self {
            Excluded::Untolerated(t) => format!("does not tolerate the node's {t}"),
            Excluded::NotSelected { why, .. } => format!("does not select the node: {why}"),
        }
    }
}

/// Whether the DaemonSet's pods go to a node with these labels and taints. The DaemonSet
/// controller schedules its pods like kube-scheduler does, so its pods must tolerate every
/// `NoSchedule`/`NoExecute` taint on the node, startup taints included; the caller leaves out
/// the `node.kubernetes.io/*` taints, which the controller tolerates for every DaemonSet.
pub fn runs_on(
    ds: &DaemonSet,
    labels: &BTreeMap<String, String>,
    taints: &[Taint],
) -> Result<(), Excluded> {
    let Some(spec) = spec(ds) else {
        return Ok(());
    };
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    if let Some(t) = untolerated(taints, &tolerations) {
        return Err(Excluded::Untolerated(show_taint(t)));
    }
    // A selector Karpenter could not read is one the DaemonSet controller reads: judge nothing.
    let Ok(alternatives) = alternatives(spec) else {
        return Ok(());
    };
    let mut first = None;
    for reqs in &alternatives {
        match selects(reqs, labels) {
            Ok(()) => return Ok(()),
            Err(why) => {
                first.get_or_insert(why);
            }
        }
    }
    let (key, why) = first.unwrap_or_default();
    Err(Excluded::NotSelected { why, key })
}

/// Whether a node with these labels meets the requirements (a missing label meets only
/// `NotIn` and `DoesNotExist`).
fn selects(reqs: &Requirements, labels: &BTreeMap<String, String>) -> Result<(), (String, String)> {
    for (key, set) in &reqs.0 {
        let ok = match labels.get(key) {
            Some(v) => set.has(v),
            None => set.is_negative(),
        };
        if !ok {
            let why = match labels.get(key) {
                Some(v) => format!("it requires {key} {}, the node has {v}", set.describe()),
                None => format!(
                    "it requires {key} {}, the node has no such label",
                    set.describe()
                ),
            };
            return Err((key.clone(), why));
        }
    }
    Ok(())
}

/// Whether a DaemonSet tolerates a taint by its key (not through a catch-all toleration):
/// the sign that it is the taint's remover when no known component is.
pub fn names_taint(ds: &DaemonSet, taint: &Taint) -> bool {
    spec(ds)
        .and_then(|s| s.tolerations.as_ref())
        .into_iter()
        .flatten()
        .any(|t| t.key.as_deref().is_some_and(|k| !k.is_empty()) && tolerates(t, taint))
}

/// The state of the pod a DaemonSet runs on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodState {
    /// No pod of the DaemonSet is bound to the node.
    Missing,
    /// Bound and not Ready: the waiting reason of its first waiting container, if any.
    NotReady { pod: String, reason: Option<String> },
    /// Ready since this time (RFC 3339), as its Ready condition says.
    Ready { pod: String, since: Option<String> },
}

/// The DaemonSet's pod among the pods bound to a node (its owner reference names it).
pub fn pod_state(ds: &DaemonSet, pods: &[Pod]) -> PodState {
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let pod = pods.iter().find(|p| {
        p.metadata.namespace.as_deref().unwrap_or("") == ns
            && p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "DaemonSet" && o.name == name)
    });
    let Some(pod) = pod else {
        return PodState::Missing;
    };
    let id = format!("{ns}/{}", pod.metadata.name.as_deref().unwrap_or(""));
    let status = pod.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready");
    match ready {
        Some(c) if c.status == "True" => PodState::Ready {
            pod: id,
            since: c.last_transition_time.as_ref().map(|t| t.0.to_string()),
        },
        _ => PodState::NotReady {
            pod: id,
            reason: status
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten()
                .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone()),
        },
    }
}

/// Taints that say something else is wrong or in progress, and that KD6004 leaves to the
/// checks that own them: the kubelet's condition taints (`node.kubernetes.io/*`: the node is
/// not ready, which KD6003 and the CNI's check judge), Karpenter's own (`karpenter.sh/*`:
/// registration and disruption), the Node Readiness Controller's (`readiness.k8s.io/*`,
/// ephemeral to Karpenter from 1.13) and the cluster autoscaler's.
pub fn owned_elsewhere(taint: &Taint) -> bool {
    let key = taint.key.as_str();
    key.starts_with("node.kubernetes.io/")
        || key.starts_with("karpenter.sh/")
        || key.starts_with("readiness.k8s.io/")
        || key == "ToBeDeletedByClusterAutoscaler"
        || key == "DeletionCandidateOfClusterAutoscaler"
}

/// The cloud provider's taint: the kubelet adds it with `--cloud-provider=external` and the
/// cloud node controller, which EKS runs in the control plane, removes it.
pub const UNINITIALIZED: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// Whether a taint is in a list, as Karpenter matches taints (key and effect; not the value).
pub fn listed(list: &[Taint], taint: &Taint) -> bool {
    list.iter()
        .any(|t| t.key == taint.key && t.effect == taint.effect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds(v: serde_json::Value) -> DaemonSet {
        serde_json::from_value(v).unwrap()
    }

    fn taint(key: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            effect: effect.into(),
            ..Taint::default()
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_nvidia_chart_defaults_exclude_a_karpenter_node_without_nfd_labels() {
        let plugin = ds(json!({
            "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": "nvidia"},
            "spec": {"selector": {}, "template": {"spec": {
                "containers": [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}],
                "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}]},
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}}
            }}}
        }));
        let gpu = device_plugin("nvidia.com/gpu").unwrap();
        assert_eq!(daemonsets_of(&gpu, std::slice::from_ref(&plugin)).len(), 1);
        let node = labels(&[("karpenter.sh/nodepool", "gpu")]);
        let gpu_taint = [taint("nvidia.com/gpu", "NoSchedule")];
        assert!(matches!(
            runs_on(&plugin, &node, &gpu_taint),
            Err(Excluded::NotSelected { .. })
        ));
        let nfd = labels(&[("feature.node.kubernetes.io/pci-10de.present", "true")]);
        assert_eq!(runs_on(&plugin, &nfd, &gpu_taint), Ok(()));
        let other = [taint("dedicated", "NoSchedule")];
        assert_eq!(
            runs_on(&plugin, &nfd, &other),
            Err(Excluded::Untolerated("taint=dedicated:NoSchedule".into()))
        );
    }

    #[test]
    fn a_remover_tolerating_everything_runs_anywhere_and_its_pod_state_is_read() {
        let cilium = ds(json!({
            "metadata": {"name": "cilium", "namespace": "kube-system"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "cilium-agent"}],
                "tolerations": [{"operator": "Exists"}]}}}
        }));
        assert_eq!(
            daemonsets_of(
                &remover("node.cilium.io/agent-not-ready").unwrap(),
                std::slice::from_ref(&cilium)
            )
            .len(),
            1
        );
        assert_eq!(
            runs_on(&cilium, &labels(&[]), &[taint("team", "NoExecute")]),
            Ok(())
        );
        let pod = |ready: &str| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": "cilium-x", "namespace": "kube-system",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "cilium", "uid": "u"}]},
                "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": "2026-11-20T10:00:00Z"}],
                    "containerStatuses": [{"name": "cilium-agent", "ready": false, "restartCount": 4, "image": "", "imageID": "",
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
            }))
            .unwrap()
        };
        assert_eq!(pod_state(&cilium, &[]), PodState::Missing);
        assert_eq!(
            pod_state(&cilium, &[pod("False")]),
            PodState::NotReady {
                pod: "kube-system/cilium-x".into(),
                reason: Some("CrashLoopBackOff".into())
            }
        );
        assert!(matches!(
            pod_state(&cilium, &[pod("True")]),
            PodState::Ready { .. }
        ));
    }

    #[test]
    fn only_images_chosen_without_an_alias_and_named_without_the_driver_lack_it() {
        let standard = ["amazon-eks-node-al2023-x86_64-standard-1.33-v20261101"];
        let nvidia = ["amazon-eks-node-al2023-x86_64-nvidia-1.31-v20250403"];
        assert_eq!(
            images_lack_driver(false, &standard, "nvidia.com/gpu"),
            Some(true)
        );
        assert_eq!(
            images_lack_driver(false, &nvidia, "nvidia.com/gpu"),
            Some(false)
        );
        assert_eq!(images_lack_driver(true, &standard, "nvidia.com/gpu"), None);
        assert_eq!(images_lack_driver(false, &[], "nvidia.com/gpu"), None);
    }

    #[test]
    fn taints_match_on_key_and_effect_and_catch_alls_do_not_name_a_taint() {
        let t = Taint {
            value: Some("true".into()),
            ..taint("wait-for-node-ready", "NoSchedule")
        };
        assert!(listed(&[taint("wait-for-node-ready", "NoSchedule")], &t));
        assert!(!listed(&[taint("wait-for-node-ready", "NoExecute")], &t));
        let all = ds(
            json!({"metadata": {"name": "x"}, "spec": {"selector": {}, "template": {"spec": {
            "containers": [], "tolerations": [{"operator": "Exists"}]}}}}),
        );
        assert!(!names_taint(&all, &t));
        let named = ds(
            json!({"metadata": {"name": "x"}, "spec": {"selector": {}, "template": {"spec": {
            "containers": [], "tolerations": [{"key": "wait-for-node-ready", "operator": "Exists"}]}}}}),
        );
        assert!(names_taint(&named, &t));
        assert!(owned_elsewhere(&taint(
            "node.kubernetes.io/not-ready",
            "NoSchedule"
        )));
        assert!(!owned_elsewhere(&taint(UNINITIALIZED, "NoSchedule")));
    }
}
