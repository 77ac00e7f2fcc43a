//! Which pending pods Karpenter tries to place, and what each one asks of a node
//! (kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go`, `provisioner.go`,
//! `scheduling/volumetopology.go`; docs/scheduling.md §1, §2.4).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PersistentVolume, PersistentVolumeClaim, PodSpec};
use k8s_openapi::api::storage::v1::StorageClass;

use super::PodNeeds;
use super::allocatable::Resources;
use super::sets::{Requirements, ValueSet};
use crate::model::{PendingPod, Requirement};
use crate::quantity::Quantity;

/// Why a pending pod is not judged; shown under `-v`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// `spec.nodeName` is set: the pod is bound.
    Bound,
    /// A DaemonSet's or a static (mirror) pod: Karpenter never provisions for it.
    DaemonOrMirror,
    /// No `PodScheduled=False/Unschedulable` condition: no scheduler has given up on it yet
    /// (another scheduler's pod, or a Fargate pod).
    NotUnschedulable,
    /// Unschedulable for less than the grace period.
    TooRecent,
    /// `status.nominatedNodeName`: preemption is placing it.
    Preempting,
    /// It requires `karpenter.sh/nodepool DoesNotExist` (Karpenter's own replicas).
    AvoidsKarpenter,
}

impl Skip {
    pub fn describe(&self) -> &'static str {
        match self {
            Skip::Bound => "bound to a node (spec.nodeName)",
            Skip::DaemonOrMirror => {
                "a DaemonSet or static pod, which Karpenter does not provision for"
            }
            Skip::NotUnschedulable => "no scheduler has marked it Unschedulable",
            Skip::TooRecent => "Unschedulable for 2 minutes or less",
            Skip::Preempting => "nominated to a node by preemption",
            Skip::AvoidsKarpenter => "it requires karpenter.sh/nodepool DoesNotExist",
        }
    }
}

/// How long a pod must have been Unschedulable before it counts (issue 20).
pub const GRACE_MINUTES: i64 = 2;

/// Whether Karpenter would try to place `pod` now; `Err` says why it is left out.
pub fn candidate(pod: &PendingPod, now: jiff::Timestamp) -> Result<(), Skip> {
    let spec = pod.spec.as_deref();
    if spec
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return Err(Skip::Bound);
    }
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    if owners
        .iter()
        .any(|o| o.kind == "DaemonSet" || o.kind == "Node")
    {
        return Err(Skip::DaemonOrMirror);
    }
    let status = pod.status.as_ref();
    let condition = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled");
    let Some(condition) =
        condition.filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    else {
        return Err(Skip::NotUnschedulable);
    };
    if status
        .and_then(|s| s.nominated_node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return Err(Skip::Preempting);
    }
    let since = condition
        .last_transition_time
        .as_ref()
        .map(|t| t.0.as_second())
        .and_then(|s| jiff::Timestamp::from_second(s).ok());
    if since.is_none_or(|t| now.duration_since(t).as_secs() <= GRACE_MINUTES * 60) {
        return Err(Skip::TooRecent);
    }
    if avoids_karpenter(spec) {
        return Err(Skip::AvoidsKarpenter);
    }
    Ok(())
}

fn avoids_karpenter(spec: Option<&PodSpec>) -> bool {
    let affinity = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref());
    let required = affinity
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or_default();
    required.iter().any(|t| {
        t.match_expressions
            .iter()
            .flatten()
            .any(|e| e.key == "karpenter.sh/nodepool" && e.operator == "DoesNotExist")
    })
}

/// When the pod was marked Unschedulable (RFC 3339), for findings.
pub fn unschedulable_since(pod: &PendingPod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0.to_string())
}

/// The workload a pod belongs to, as findings group pods: `Deployment/shop/web` for a
/// ReplicaSet's pod (its `pod-template-hash` stripped), the owner otherwise, the pod itself
/// when it has none.
pub fn owner(pod: &PendingPod) -> String {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let controller = pod
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| pod.metadata.owner_references.as_deref()?.first());
    match controller {
        Some(o) if o.kind == "ReplicaSet" => {
            let hash = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("pod-template-hash"));
            match hash.and_then(|h| o.name.strip_suffix(&format!("-{h}"))) {
                Some(deployment) => format!("Deployment/{ns}/{deployment}"),
                None => format!("ReplicaSet/{ns}/{}", o.name),
            }
        }
        Some(o) => format!("{}/{ns}/{}", o.kind, o.name),
        None => format!(
            "Pod/{ns}/{}",
            pod.metadata.name.as_deref().unwrap_or("<unnamed>")
        ),
    }
}

/// Requests as the scheduler sums them: the larger of the containers (with sidecar init
/// containers) and the largest init container, plus the pod overhead, plus one pod.
pub fn requests(spec: &PodSpec) -> Resources {
    let of = |c: &Container| -> Resources {
        let r = c.resources.as_ref();
        // A limit without a request defaults the request to the limit.
        let mut out: Resources = r
            .and_then(|r| r.limits.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(&v.0)?)))
            .collect();
        for (k, v) in r.and_then(|r| r.requests.as_ref()).into_iter().flatten() {
            if let Some(q) = Quantity::parse(&v.0) {
                out.insert(k.clone(), q);
            }
        }
        out
    };
    let add = |into: &mut Resources, r: &Resources| {
        for (k, v) in r {
            let total = into.get(k).and_then(|x| x.checked_add(*v)).unwrap_or(*v);
            into.insert(k.clone(), total);
        }
    };
    let mut running = Resources::new();
    for c in &spec.containers {
        add(&mut running, &of(c));
    }
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for c in inits {
        let r = of(c);
        if c.restart_policy.as_deref() == Some("Always") {
            add(&mut sidecars, &r);
        } else {
            // A regular init container runs beside the sidecars started before it.
            let mut at = sidecars.clone();
            add(&mut at, &r);
            for (k, v) in at {
                let peak = init_peak.entry(k).or_insert(v);
                *peak = (*peak).max(v);
            }
        }
    }
    add(&mut running, &sidecars);
    for (k, v) in init_peak {
        let have = running.entry(k).or_insert(v);
        *have = (*have).max(v);
    }
    let overhead: Resources = spec
        .overhead
        .iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(&v.0)?)))
        .collect();
    add(&mut running, &overhead);
    add(
        &mut running,
        &[("pods".to_string(), Quantity::units(1))].into(),
    );
    running
}

/// A pod's node requirements: its `nodeSelector`, narrowed by each required node-affinity
/// term in turn (the terms are alternatives). `Err` is the term Karpenter cannot read (it
/// ignores such a pod).
pub fn alternatives(spec: &PodSpec) -> Result<Vec<Requirements>, String> {
    let mut base = Requirements::default();
    for (k, v) in spec.node_selector.iter().flatten() {
        base.add(k, ValueSet::only([v.clone()]));
    }
    let terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or_default();
    if terms.is_empty() {
        return Ok(vec![base]);
    }
    let mut out = Vec::new();
    for term in terms {
        if term.match_fields.as_ref().is_some_and(|f| !f.is_empty()) {
            return Err("a required node-affinity term uses matchFields".to_string());
        }
        let reqs: Vec<Requirement> = term
            .match_expressions
            .iter()
            .flatten()
            .map(|e| Requirement {
                key: e.key.clone(),
                operator: e.operator.clone(),
                values: e.values.clone().unwrap_or_default(),
                min_values: None,
            })
            .collect();
        let term = Requirements::from_list(&reqs)
            .map_err(|r| format!("a required node-affinity term Karpenter cannot read: {r}"))?;
        out.push(base.intersect(&term));
    }
    Ok(out)
}

/// The volumes' facts a pod's zones depend on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Volumes<'a> {
    pub claims: &'a [PersistentVolumeClaim],
    pub volumes: &'a [PersistentVolume],
    pub classes: &'a [StorageClass],
}

const ZONE_KEYS: &[&str] = &[
    "topology.kubernetes.io/zone",
    "topology.ebs.csi.aws.com/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// The zones a pod's claims allow (`Ok(None)`: unconstrained). `Err` is why Karpenter
/// ignores the pod (a claim missing, an unbound claim it cannot place).
pub fn volume_zones(pod: &PendingPod, v: Volumes<'_>) -> Result<Option<BTreeSet<String>>, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut zones: Option<BTreeSet<String>> = None;
    let claims = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|vol| {
            vol.persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.clone())
        });
    for name in claims {
        let claim = v
            .claims
            .iter()
            .find(|c| {
                c.metadata.namespace.as_deref() == Some(ns)
                    && c.metadata.name.as_deref() == Some(name.as_str())
            })
            .ok_or_else(|| format!("its PersistentVolumeClaim {ns}/{name} does not exist"))?;
        let allowed = claim_zones(claim, &name, v)?;
        if let Some(allowed) = allowed {
            zones = Some(match zones {
                Some(z) => z.intersection(&allowed).cloned().collect(),
                None => allowed,
            });
        }
    }
    Ok(zones)
}

fn claim_zones(
    claim: &PersistentVolumeClaim,
    name: &str,
    v: Volumes<'_>,
) -> Result<Option<BTreeSet<String>>, String> {
    let spec = claim.spec.as_ref();
    if let Some(volume) = spec
        .and_then(|s| s.volume_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        let Some(pv) = v
            .volumes
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(volume))
        else {
            return Err(format!(
                "its PersistentVolumeClaim {name} is bound to PersistentVolume {volume}, which does not exist"
            ));
        };
        let terms = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
            .map(|r| r.node_selector_terms.as_slice())
            .unwrap_or_default();
        let mut zones = BTreeSet::new();
        for term in terms {
            let mut in_term: Option<BTreeSet<String>> = None;
            for e in term.match_expressions.iter().flatten() {
                if ZONE_KEYS.contains(&e.key.as_str()) && e.operator == "In" {
                    in_term = Some(e.values.iter().flatten().cloned().collect());
                }
            }
            match in_term {
                Some(z) => zones.extend(z),
                // A term without a zone lets the volume attach anywhere.
                None => return Ok(None),
            }
        }
        return Ok((!terms.is_empty()).then_some(zones));
    }
    let class_name = spec.and_then(|s| s.storage_class_name.as_deref());
    let Some(class_name) = class_name.filter(|n| !n.is_empty()) else {
        return Err(format!(
            "its PersistentVolumeClaim {name} is unbound and names no StorageClass"
        ));
    };
    let Some(class) = v
        .classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(class_name))
    else {
        return Err(format!(
            "its PersistentVolumeClaim {name} names StorageClass {class_name}, which does not exist"
        ));
    };
    if class.volume_binding_mode.as_deref() != Some("WaitForFirstConsumer") {
        return Err(format!(
            "its PersistentVolumeClaim {name} is unbound and StorageClass {class_name} binds Immediately (\"pvc with immediate volume binding mode must be bound\")"
        ));
    }
    let mut zones = BTreeSet::new();
    for term in class.allowed_topologies.iter().flatten() {
        for e in term.match_label_expressions.iter().flatten() {
            if ZONE_KEYS.contains(&e.key.as_str()) {
                zones.extend(e.values.iter().cloned());
            }
        }
    }
    Ok((!zones.is_empty()).then_some(zones))
}

/// Everything the scheduler weighs for one pod; `Err` is why Karpenter ignores it.
pub fn needs(pod: &PendingPod, v: Volumes<'_>) -> Result<PodNeeds, String> {
    let Some(spec) = pod.spec.as_ref() else {
        return Err("it has no spec".to_string());
    };
    let alternatives = alternatives(spec)?;
    let volume_zones = volume_zones(pod, v)?;
    Ok(PodNeeds {
        alternatives,
        tolerations: spec.tolerations.clone().unwrap_or_default(),
        requests: requests(spec),
        volume_zones,
        // Filled by the caller, which holds the counts.
        spread: Vec::new(),
    })
}

/// Pods grouped by their workload, in name order.
pub fn by_owner<'p>(
    pods: impl Iterator<Item = &'p PendingPod>,
) -> BTreeMap<String, Vec<&'p PendingPod>> {
    let mut out: BTreeMap<String, Vec<&PendingPod>> = BTreeMap::new();
    for p in pods {
        out.entry(owner(p)).or_default().push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> PendingPod {
        serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(json)
            .unwrap()
            .into()
    }

    #[test]
    fn candidates_follow_karpenter() {
        let now: jiff::Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        let unschedulable = |at: &str| serde_json::json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": at}], "phase": "Pending"});
        let p = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": unschedulable("2026-11-23T09:50:00Z")}),
        );
        assert_eq!(candidate(&p, now), Ok(()));
        let recent = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": unschedulable("2026-11-23T09:59:30Z")}),
        );
        assert_eq!(candidate(&recent, now), Err(Skip::TooRecent));
        let ds = pod(
            serde_json::json!({"metadata": {"name": "a", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "1"}]}, "spec": {"containers": []}, "status": unschedulable("2026-11-23T09:50:00Z")}),
        );
        assert_eq!(candidate(&ds, now), Err(Skip::DaemonOrMirror));
        let fresh = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
        );
        assert_eq!(candidate(&fresh, now), Err(Skip::NotUnschedulable));
    }

    #[test]
    fn requests_sum_like_the_scheduler() {
        let p = pod(serde_json::json!({"metadata": {"name": "a"}, "spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}, {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}, {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}]
        }}));
        let r = requests(p.spec.as_ref().unwrap());
        assert_eq!(
            r["cpu"].to_string(),
            "2",
            "the init container's 2 CPUs outweigh 1.6"
        );
        assert_eq!(r["memory"].show("memory"), "1Gi");
        assert_eq!(r["pods"].to_string(), "1");
    }

    #[test]
    fn owners_group_replica_sets_under_their_deployment() {
        let p = pod(
            serde_json::json!({"metadata": {"name": "web-7d9f-abc", "namespace": "shop", "labels": {"pod-template-hash": "7d9f"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f", "uid": "1", "controller": true}]}}),
        );
        assert_eq!(owner(&p), "Deployment/shop/web");
    }

    #[test]
    fn terms_are_alternatives_narrowed_by_the_node_selector() {
        let p = pod(
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"containers": [],
            "nodeSelector": {"team": "a"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
            ]}}}}}),
        );
        let alts = alternatives(p.spec.as_ref().unwrap()).unwrap();
        assert_eq!(alts.len(), 2);
        assert!(alts.iter().all(|a| a.get("team").is_some()));
    }
}
