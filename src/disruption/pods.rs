//! Pods as Karpenter's disruption and drain judge them (docs/disruption.md §3, §4): which carry
//! `karpenter.sh/do-not-disrupt`, which PodDisruptionBudgets cover a pod, and which of those
//! refuse its eviction now. Shared by the candidate gate (KD4101) and the drain (KD4102).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::iam::reference::Version;
use crate::model::pod_ready;
use crate::scheduling::spread::selector_matches;

/// The pod and node annotation Karpenter never disrupts or evicts past.
pub use crate::model::DO_NOT_DISRUPT;

/// The command that shows a PodDisruptionBudget named `namespace/name`.
pub fn pdb_command(pdb: &str) -> Option<String> {
    pdb.split_once('/')
        .map(|(ns, name)| format!("kubectl -n {ns} get pdb {name}"))
}

/// `namespace/name`, as Karpenter's events and kubectl name a pod.
pub fn pod_id(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

pub fn pdb_id(p: &PodDisruptionBudget) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

/// Whether the pod carries `karpenter.sh/do-not-disrupt: "true"`. Only that value counts: a
/// duration (`"30m"`, 1.12+) protects a pod for minutes after it starts, and every earlier
/// release ignores it (docs/disruption.md §3).
pub fn do_not_disrupt(p: &Pod) -> bool {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DO_NOT_DISRUPT))
        .is_some_and(|v| v == "true")
}

/// What a pod's `karpenter.sh/do-not-disrupt` asks of the controller's release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    None,
    /// `"true"`: for as long as the pod runs.
    Always,
    /// A Go duration (1.12+), counted from the pod's `status.startTime`.
    Until(jiff::Timestamp),
}

/// The pod's protection as the release reads it (docs/disruption.md §3): `"true"` always; from
/// 1.12 (and when the release is unknown, the newest behaviour) also a positive Go duration,
/// which protects until `startTime` plus it, and for good while the pod has not started.
/// Anything else, and a duration before 1.12, protects nothing.
pub fn protection(p: &Pod, version: Option<Version>) -> Protection {
    let Some(value) = p
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DO_NOT_DISRUPT))
    else {
        return Protection::None;
    };
    if value == "true" {
        return Protection::Always;
    }
    if version.is_some_and(|v| v < Version(1, 12, 0)) {
        return Protection::None;
    }
    let Some(nanos) = super::godur::parse(value).filter(|n| *n > 0) else {
        return Protection::None;
    };
    let started = p.status.as_ref().and_then(|s| s.start_time.as_ref());
    match started {
        None => Protection::Always,
        Some(t) => {
            t.0.checked_add(jiff::SignedDuration::from_nanos(nanos))
                .map_or(Protection::Always, Protection::Until)
        }
    }
}

/// Whether the pod's annotation protects it at `now`.
pub fn protected(p: &Pod, version: Option<Version>, now: jiff::Timestamp) -> bool {
    match protection(p, version) {
        Protection::None => false,
        Protection::Always => true,
        Protection::Until(t) => t > now,
    }
}

pub fn owned_by(p: &Pod, kind: &str) -> bool {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == kind)
}

/// Not finished and not being deleted: the pods Karpenter's `IsActive` counts.
pub fn active(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && p.metadata.deletion_timestamp.is_none()
}

/// Whether the pod tolerates Karpenter's `karpenter.sh/disrupted:NoSchedule` taint: Karpenter
/// never evicts such a pod (core: `pod.ToleratesDisruptedNoScheduleTaint`), so no PDB of its
/// holds a node.
pub fn tolerates_disrupted(p: &Pod) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .into_iter()
        .flatten()
        .any(|t| {
            let key = t.key.as_deref().unwrap_or("");
            let exists = t.operator.as_deref() == Some("Exists");
            let effect_ok = t
                .effect
                .as_deref()
                .is_none_or(|e| e.is_empty() || e == "NoSchedule");
            effect_ok
                && ((key.is_empty() && exists)
                    || (key == "karpenter.sh/disrupted"
                        && (exists || t.value.as_deref().unwrap_or("").is_empty())))
        })
}

/// Whether the PDB selects the pod: same namespace, and its selector matches.
pub fn covers(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if pdb.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    // A PDB without a selector selects nothing (policy/v1).
    pdb.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|sel| selector_matches(sel, &labels))
        .unwrap_or(false)
}

/// Whether the PDB refuses evicting this pod now: it allows no disruption, unless the pod is
/// not ready and the PDB lets unhealthy pods go (`AlwaysAllow`).
pub fn refuses(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    let allowed = pdb.status.as_ref().map(|s| s.disruptions_allowed);
    if allowed != Some(0) {
        return false;
    }
    let always = pdb
        .spec
        .as_ref()
        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
        == Some("AlwaysAllow");
    !always || pod_ready(pod)
}

fn show(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// The PDB's rule and why it allows nothing now, as evidence.
pub fn limit_of(pdb: &PodDisruptionBudget) -> String {
    let spec = pdb.spec.as_ref();
    let rule = match (
        spec.and_then(|s| s.min_available.as_ref()),
        spec.and_then(|s| s.max_unavailable.as_ref()),
    ) {
        (Some(m), _) => format!("minAvailable {}", show(m)),
        (None, Some(m)) => format!("maxUnavailable {}", show(m)),
        (None, None) => "no limit".to_string(),
    };
    match pdb.status.as_ref() {
        Some(s) => format!(
            "{rule}; {} of {} pods healthy, {} needed, 0 disruptions allowed",
            s.current_healthy, s.expected_pods, s.desired_healthy
        ),
        None => rule,
    }
}

/// What the pods' PodDisruptionBudgets do to an eviction of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PdbBlock {
    /// The pod's one PDB allows no disruption now; `never` when it never can (KD4104).
    AtZero {
        pdb: String,
        limit: String,
        never: bool,
        pods: Vec<String>,
    },
    /// The pod is covered by several PDBs, which the eviction API refuses whatever they allow.
    Several { pod: String, pdbs: Vec<String> },
}

/// The PDB blocks among `pods`, each PDB at zero once with all its pods, in the pods' order.
pub fn pdb_blocks<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    pdbs: &[PodDisruptionBudget],
) -> Vec<PdbBlock> {
    let mut out: Vec<PdbBlock> = Vec::new();
    for pod in pods {
        let covering: Vec<&PodDisruptionBudget> = pdbs.iter().filter(|b| covers(b, pod)).collect();
        if covering.len() > 1 {
            out.push(PdbBlock::Several {
                pod: pod_id(pod),
                pdbs: covering.iter().map(|b| pdb_id(b)).collect(),
            });
        } else if let Some(b) = covering.first().filter(|b| refuses(b, pod)) {
            let id = pdb_id(b);
            let known = out.iter_mut().find_map(|x| match x {
                PdbBlock::AtZero { pdb, pods, .. } if *pdb == id => Some(pods),
                _ => None,
            });
            match known {
                Some(pods) => pods.push(pod_id(pod)),
                None => out.push(PdbBlock::AtZero {
                    limit: limit_of(b),
                    never: super::pdbs::never_allows(b).is_some(),
                    pdb: id,
                    pods: vec![pod_id(pod)],
                }),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: &str, started: Option<&str>) -> Pod {
        let mut p = json!({"metadata": {"name": "p", "annotations": {DO_NOT_DISRUPT: value}}});
        if let Some(t) = started {
            p["status"] = json!({"startTime": t});
        }
        serde_json::from_value(p).unwrap()
    }

    fn at(t: &str) -> jiff::Timestamp {
        t.parse().unwrap()
    }

    #[test]
    fn a_duration_protects_from_the_pods_start_from_1_12_only() {
        let v = |minor| Some(Version(1, minor, 0));
        let p = pod("2h", Some("2026-11-23T09:30:00Z"));
        assert_eq!(
            protection(&p, v(12)),
            Protection::Until(at("2026-11-23T11:30:00Z"))
        );
        assert!(protected(&p, v(12), at("2026-11-23T10:00:00Z")));
        assert!(!protected(&p, v(12), at("2026-11-23T11:30:00Z")));
        // Before 1.12 only "true" counts; an unknown release reads it as the newest does.
        assert_eq!(protection(&p, v(11)), Protection::None);
        assert!(protected(&p, None, at("2026-11-23T10:00:00Z")));
        // Not started yet: protected. Not a positive duration, or not exactly "true": nothing.
        assert_eq!(protection(&pod("30m", None), v(12)), Protection::Always);
        for value in ["0s", "-5m", "True", "yes", "30"] {
            assert_eq!(
                protection(&pod(value, None), v(12)),
                Protection::None,
                "{value}"
            );
        }
        assert_eq!(protection(&pod("true", None), v(8)), Protection::Always);
    }
}
