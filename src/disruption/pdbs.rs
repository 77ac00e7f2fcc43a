//! PodDisruptionBudgets that can never allow a disruption (KD4104; docs/disruption.md §4).
//! Karpenter evicts through the eviction API, which a PDB at zero refuses: a node holding such
//! a pod is never consolidated, and its drift or expiry never ends without
//! `terminationGracePeriod`.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why the PDB can never allow a disruption, whatever its pods' health: `maxUnavailable` 0 or
/// `0%`, `minAvailable` `100%` (Karpenter's "fully blocking" forms, core#2033), or an integer
/// `minAvailable` at or above the pods it covers. `None` for a PDB that can allow one.
pub fn never_allows(pdb: &PodDisruptionBudget) -> Option<String> {
    let spec = pdb.spec.as_ref()?;
    let zero = |v: &IntOrString| match v {
        IntOrString::Int(i) => *i == 0,
        IntOrString::String(s) => s.trim_end_matches('%').trim() == "0",
    };
    if let Some(m) = spec.max_unavailable.as_ref().filter(|m| zero(m)) {
        return Some(format!("maxUnavailable {}", show(m)));
    }
    match spec.min_available.as_ref()? {
        IntOrString::String(s) if s.trim() == "100%" => Some("minAvailable 100%".to_string()),
        IntOrString::Int(n) => {
            let expected = pdb.status.as_ref()?.expected_pods;
            (expected > 0 && *n >= expected)
                .then(|| format!("minAvailable {n} with {expected} pod(s)"))
        }
        _ => None,
    }
}

fn show(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pdb(spec: serde_json::Value, expected: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({"metadata":{"name":"web","namespace":"shop"},"spec":spec,
            "status":{"disruptionsAllowed":0,"currentHealthy":expected,"desiredHealthy":expected,"expectedPods":expected}}))
        .unwrap()
    }

    #[test]
    fn the_forms_that_never_allow() {
        assert!(never_allows(&pdb(json!({"maxUnavailable":0}), 3)).is_some());
        assert!(never_allows(&pdb(json!({"maxUnavailable":"0%"}), 3)).is_some());
        assert!(never_allows(&pdb(json!({"minAvailable":"100%"}), 3)).is_some());
        assert_eq!(
            never_allows(&pdb(json!({"minAvailable":3}), 3)).as_deref(),
            Some("minAvailable 3 with 3 pod(s)")
        );
    }

    #[test]
    fn budgets_that_leave_room_are_quiet() {
        assert!(never_allows(&pdb(json!({"minAvailable":2}), 3)).is_none());
        assert!(never_allows(&pdb(json!({"maxUnavailable":1}), 3)).is_none());
        assert!(never_allows(&pdb(json!({"minAvailable":"50%"}), 3)).is_none());
        // No pods yet: nothing to judge.
        assert!(never_allows(&pdb(json!({"minAvailable":1}), 0)).is_none());
    }
}
