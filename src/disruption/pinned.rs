//! Workloads whose every pod carries `karpenter.sh/do-not-disrupt: "true"` (the annotation in
//! the pod template), and what that does to the Karpenter nodes their pods run on
//! (docs/disruption.md §3, §5): no consolidation ever; no drift unless the NodeClaim has
//! `terminationGracePeriod`; and, without it, an expired node drains forever, because expiry
//! deletes the claim regardless (core: `nodeclaim/expiration`) while the drain never evicts such
//! a pod and only a grace period's deadline deletes it.

use k8s_openapi::api::core::v1::Pod;

use crate::model::{NodeClaim, PinnedWorkload};
use crate::scheduling::spread::selector_matches;

use super::churn::seconds;
use super::pods::do_not_disrupt;

/// The template pins every pod for good: `"true"`. A duration (`"30m"`, 1.12+) lapses as the
/// pod ages, and before 1.12 any other value was ignored; a workload scaled to zero runs none.
pub fn pins_for_good(w: &PinnedWorkload) -> bool {
    // Karpenter compares the value exactly (`== "true"`): " true" or "True" pins nothing.
    w.do_not_disrupt() == Some("true") && w.replicas() > 0
}

/// When Karpenter expires the claim: its creation plus its `expireAfter`. `None` for `Never`,
/// no value, or a value that does not read.
pub fn expires_at(claim: &NodeClaim) -> Option<jiff::Timestamp> {
    let after = seconds(claim.spec.expire_after.as_deref()?)?;
    let created = claim.metadata.creation_timestamp.as_ref()?.0;
    created
        .checked_add(jiff::SignedDuration::from_secs(i64::try_from(after).ok()?))
        .ok()
}

/// The claims a pinned workload holds without end: those with no `terminationGracePeriod`.
/// With one, drift and expiry go ahead after it, and only consolidation is given up, which is
/// what the annotation asks for.
pub fn held_for_good<'a>(claims: &[&'a NodeClaim]) -> Vec<&'a NodeClaim> {
    claims
        .iter()
        .copied()
        .filter(|c| c.spec.termination_grace_period.is_none())
        .collect()
}

/// The first of `claims` to expire, with when.
pub fn first_expiry<'a>(claims: &[&'a NodeClaim]) -> Option<(jiff::Timestamp, &'a NodeClaim)> {
    claims
        .iter()
        .filter_map(|c| Some((expires_at(c)?, *c)))
        .min_by_key(|(t, _)| *t)
}

/// The workload pinning its nodes for good whose selector takes this do-not-disrupt pod, in its
/// namespace: the setting behind a node held by the pod (KD4101's and KD4102's blockers link to
/// KD4104's finding for it). A pod annotated by hand matches no template and is its own.
pub fn pinning<'a>(pod: &Pod, workloads: &'a [PinnedWorkload]) -> Option<&'a PinnedWorkload> {
    if !do_not_disrupt(pod) {
        return None;
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let labels = pod.metadata.labels.as_ref()?;
    workloads.iter().find(|w| {
        pins_for_good(w)
            && w.metadata.namespace == ns
            && w.spec
                .selector
                .as_ref()
                .and_then(|s| selector_matches(s, labels))
                == Some(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workload(value: &str, replicas: i32) -> PinnedWorkload {
        serde_json::from_value(
            json!({"kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
            "spec":{"replicas":replicas,"selector":{"matchLabels":{"app":"web"}},
            "template":{"metadata":{"annotations":{"karpenter.sh/do-not-disrupt":value}}}}}),
        )
        .unwrap()
    }

    fn claim(created: &str, expire: Option<&str>, tgp: Option<&str>) -> NodeClaim {
        let mut c = json!({"metadata":{"name":"default-x","creationTimestamp":created},"spec":{}});
        if let Some(e) = expire {
            c["spec"]["expireAfter"] = json!(e);
        }
        if let Some(t) = tgp {
            c["spec"]["terminationGracePeriod"] = json!(t);
        }
        serde_json::from_value(c).unwrap()
    }

    #[test]
    fn only_true_pins_for_good() {
        assert!(pins_for_good(&workload("true", 3)));
        assert!(!pins_for_good(&workload("30m", 3)), "a duration lapses");
        assert!(!pins_for_good(&workload("false", 3)));
        assert!(!pins_for_good(&workload("True", 3)), "compared exactly");
        assert!(!pins_for_good(&workload("true", 0)), "no pods");
    }

    #[test]
    fn a_pod_is_pinned_by_the_workload_whose_selector_takes_it() {
        let pod = |ns: &str, annotated: bool| -> Pod {
            let mut p = json!({"metadata":{"name":"web-5964768b4c-fnrxp","namespace":ns,
                "labels":{"app":"web","pod-template-hash":"5964768b4c"}}});
            if annotated {
                p["metadata"]["annotations"] = json!({"karpenter.sh/do-not-disrupt":"true"});
            }
            serde_json::from_value(p).unwrap()
        };
        let ws = [workload("30m", 2), workload("true", 2)];
        assert_eq!(pinning(&pod("shop", true), &ws), Some(&ws[1]));
        assert_eq!(pinning(&pod("other", true), &ws), None, "another namespace");
        assert_eq!(pinning(&pod("shop", false), &ws), None, "not annotated");
    }

    #[test]
    fn expiry_is_creation_plus_expire_after() {
        let c = claim("2026-11-01T08:00:00Z", Some("720h"), None);
        assert_eq!(
            expires_at(&c),
            Some("2026-12-01T08:00:00Z".parse().unwrap())
        );
        assert_eq!(
            expires_at(&claim("2026-11-01T08:00:00Z", Some("Never"), None)),
            None
        );
        assert_eq!(expires_at(&claim("2026-11-01T08:00:00Z", None, None)), None);
        let late = claim("2026-11-10T08:00:00Z", Some("720h"), None);
        let bounded = claim("2026-11-02T08:00:00Z", Some("720h"), Some("48h"));
        let all = [&c, &late, &bounded];
        assert_eq!(held_for_good(&all).len(), 2);
        let (t, first) = first_expiry(&held_for_good(&all)).unwrap();
        assert_eq!(
            t,
            "2026-12-01T08:00:00Z".parse::<jiff::Timestamp>().unwrap()
        );
        assert!(std::ptr::eq(first, &c));
    }
}
