//! `DoNotSchedule` topology spread on zones, counted as Karpenter counts it
//! (kubernetes-sigs/karpenter `provisioning/scheduling/topology.go`, `topologygroup.go`,
//! `topologynodefilter.go`, `topologydomaingroup.go`; docs/scheduling.md §2.6):
//!
//! - the zones that count (the domains) are every zone a ready NodePool can launch in (its
//!   instance types' zones within its requirements), every value of a NodePool's `In` zone
//!   requirement or zone template label, whether or not a subnet is there, and the zone of
//!   every node the pod's node filter accepts;
//! - a zone's count is the number of pods the constraint selects, in the pod's namespace,
//!   bound to a node there that the filter accepts, neither terminating nor finished;
//! - the filter honours the pod's node selection unless `nodeAffinityPolicy: Ignore`, and
//!   the nodes' taints only under `nodeTaintsPolicy: Honor` (which also drops the zones of
//!   NodePools whose taints the pod does not tolerate);
//! - the pod may go to a zone when its count, plus one if the pod matches its own selector,
//!   minus the smallest count among the zones the pod allows, is at most `maxSkew`; with
//!   fewer such zones than `minDomains`, the smallest count is 0.
//!
//! A zone a NodePool names without a subnet there (aws/karpenter-provider-aws#3239,
//! kubernetes-sigs/karpenter#3272) or a zone of a node Karpenter did not launch can hold the
//! smallest count; when every zone the spread allows is one no NodePool reaches, the pod
//! waits for ever.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::sets::{Requirements, ValueSet};
use super::{Pool, untolerated};
use crate::model::{Labels, ListedNode, PendingPod};

pub const ZONE: &str = "topology.kubernetes.io/zone";

/// The label selector of the node list: only nodes with a zone can hold a zone's pods.
pub const NODES_WITH_ZONE: &str = ZONE;

/// One label selector requirement, matched locally as the API server matches it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Term {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Term {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Term::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Term::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
            Term::Exists(k) => labels.contains_key(k),
            Term::DoesNotExist(k) => !labels.contains_key(k),
        }
    }

    /// The term in the API's selector syntax.
    fn show(&self) -> String {
        let set = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
        match self {
            Term::In(k, s) if s.len() == 1 => format!("{k}={}", set(s)),
            Term::In(k, s) => format!("{k} in ({})", set(s)),
            Term::NotIn(k, s) => format!("{k} notin ({})", set(s)),
            Term::Exists(k) => k.clone(),
            Term::DoesNotExist(k) => format!("!{k}"),
        }
    }
}

/// One `DoNotSchedule` constraint of a pod on `topology.kubernetes.io/zone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConstraint {
    pub max_skew: i32,
    pub min_domains: Option<i32>,
    terms: Vec<Term>,
    honor_affinity: bool,
    honor_taints: bool,
}

impl ZoneConstraint {
    /// The selector the matching pods are listed by, server-side (`matchLabelKeys` already
    /// folded in, as Karpenter folds them). Empty selects every pod of the namespace.
    pub fn selector(&self) -> String {
        self.terms
            .iter()
            .map(Term::show)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.terms.iter().all(|t| t.matches(labels))
    }
}

/// The pod's `DoNotSchedule` zone constraints. A constraint without a selector, or with one
/// the API would not parse, selects no pod (Karpenter reads it as `labels.Nothing()`), so
/// it never narrows the zones and is left out.
pub fn zone_constraints(pod: &PendingPod) -> Vec<ZoneConstraint> {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.topology_spread_constraints.iter().flatten())
        .filter(|c| c.when_unsatisfiable == "DoNotSchedule" && c.topology_key == ZONE)
        .filter_map(|c| constraint(c, &labels))
        .collect()
}

fn constraint(
    c: &TopologySpreadConstraint,
    labels: &BTreeMap<String, String>,
) -> Option<ZoneConstraint> {
    let mut terms = selector_terms(c.label_selector.as_ref()?)?;
    for key in c.match_label_keys.iter().flatten() {
        if let Some(v) = labels.get(key) {
            terms.push(Term::In(key.clone(), [v.clone()].into()));
        }
    }
    Some(ZoneConstraint {
        max_skew: c.max_skew,
        min_domains: c.min_domains,
        terms,
        honor_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
        honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
    })
}

/// A label selector in the API's string syntax (for a server-side list); `None` for one the
/// API would reject. Empty selects everything.
pub fn selector_string(sel: &LabelSelector) -> Option<String> {
    Some(
        selector_terms(sel)?
            .iter()
            .map(Term::show)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// Whether a label selector selects these labels, as the API server matches it; `None` for a
/// selector the API would reject. An empty selector selects everything (policy/v1's reading).
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> Option<bool> {
    Some(selector_terms(sel)?.iter().all(|t| t.matches(labels)))
}

fn selector_terms(sel: &LabelSelector) -> Option<Vec<Term>> {
    let mut out: Vec<Term> = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| Term::In(k.clone(), [v.clone()].into()))
        .collect();
    for e in sel.match_expressions.iter().flatten() {
        let values: BTreeSet<String> = e.values.iter().flatten().cloned().collect();
        out.push(match e.operator.as_str() {
            "In" if !values.is_empty() => Term::In(e.key.clone(), values),
            "NotIn" if !values.is_empty() => Term::NotIn(e.key.clone(), values),
            "Exists" if values.is_empty() => Term::Exists(e.key.clone()),
            "DoesNotExist" if values.is_empty() => Term::DoesNotExist(e.key.clone()),
            _ => return None,
        });
    }
    Some(out)
}

/// Where one NodePool puts zones into the count.
#[derive(Clone, Debug, Default)]
pub struct PoolZones {
    pub pool: String,
    pub taints: Vec<Taint>,
    /// Zones its instance types are offered in, in its subnets, within its requirements.
    pub launchable: BTreeSet<String>,
    /// Values of its `In` zone requirement or zone template label.
    pub named: BTreeSet<String>,
}

/// Where a NodePool puts zones into the count: only a pool Karpenter would try (ready, with
/// instance types) does.
pub fn pool_zones(pool: &Pool<'_>) -> Option<PoolZones> {
    if pool.not_ready.is_some() || pool.types.is_empty() {
        return None;
    }
    let within = pool.requirements.get(ZONE);
    Some(PoolZones {
        pool: pool.name.clone(),
        taints: pool.taints.clone(),
        launchable: pool
            .types
            .iter()
            .flat_map(|c| c.zones.iter())
            .filter(|z| within.is_none_or(|s| s.has(z)))
            .cloned()
            .collect(),
        named: within
            .filter(|s| !s.complement)
            .map(|s| s.values.clone())
            .unwrap_or_default(),
    })
}

/// Where one constraint lets the pod go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneSpread {
    pub max_skew: i32,
    pub selector: String,
    /// Every zone that counts, with its count.
    pub counts: BTreeMap<String, i32>,
    /// The zones the pod may go to.
    pub allowed: BTreeSet<String>,
    /// Why each zone counts: `NodePool default's requirement`, `node ip-10-0-1-1`, ….
    pub origins: BTreeMap<String, Vec<String>>,
}

impl ZoneSpread {
    /// `topology spread maxSkew 1 over app=web (us-east-1b: 1, us-east-1e: 0) allows only
    /// us-east-1e`.
    pub fn describe(&self) -> String {
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(z, n)| format!("{z}: {n}"))
            .collect();
        let allowed: Vec<&str> = self.allowed.iter().map(String::as_str).collect();
        format!(
            "topology spread maxSkew {} over {} ({}) allows {}",
            self.max_skew,
            if self.selector.is_empty() {
                "every pod of the namespace"
            } else {
                &self.selector
            },
            counts.join(", "),
            if allowed.is_empty() {
                "no zone".to_string()
            } else {
                format!("only {}", allowed.join(", "))
            }
        )
    }
}

/// A node as the count sees it.
pub struct CountedNode<'a> {
    pub name: &'a str,
    pub zone: &'a str,
    labels: &'a Labels,
    taints: &'a [Taint],
}

impl CountedNode<'_> {
    /// Whether the node meets one alternative of the pod's node selection, as kube matches a
    /// node's labels: a missing label meets only `NotIn` and `DoesNotExist` (no well-known
    /// label is assumed, unlike a NodePool's, which its instance types fill in).
    fn meets(&self, alternative: &Requirements) -> bool {
        alternative
            .0
            .iter()
            .all(|(key, set)| match self.labels.get(key) {
                Some(v) => set.has(v),
                None => set.is_negative(),
            })
    }
}

/// The nodes that have a zone, by name.
pub fn counted_nodes(nodes: &[ListedNode]) -> BTreeMap<&str, CountedNode<'_>> {
    nodes
        .iter()
        .filter_map(|n| {
            let name = n.name();
            let zone = n.label(ZONE)?;
            Some((
                name,
                CountedNode {
                    name,
                    zone,
                    labels: &n.labels,
                    taints: &n.taints,
                },
            ))
        })
        .collect()
}

/// Where `c` lets `pod` go. `None` when Karpenter's count cannot be followed: the pod's
/// node-affinity terms pin different zones (the smallest count depends on the term tried),
/// or no zone counts at all (no NodePool can launch; an earlier step says why).
pub fn spread(
    pod: &PendingPod,
    alternatives: &[Requirements],
    c: &ZoneConstraint,
    selected: &[Pod],
    nodes: &BTreeMap<&str, CountedNode<'_>>,
    pools: &[PoolZones],
) -> Option<ZoneSpread> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    let accepts = |n: &CountedNode<'_>| {
        (!c.honor_affinity || alternatives.iter().any(|a| n.meets(a)))
            && (!c.honor_taints || untolerated(n.taints, &tolerations).is_none())
    };
    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
    let mut origins: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pools {
        if c.honor_taints && untolerated(&p.taints, &tolerations).is_some() {
            continue;
        }
        for z in &p.launchable {
            counts.entry(z.clone()).or_insert(0);
            origins
                .entry(z.clone())
                .or_default()
                .push(format!("NodePool {} launches there", p.pool));
        }
        for z in p.named.difference(&p.launchable) {
            counts.entry(z.clone()).or_insert(0);
            origins
                .entry(z.clone())
                .or_default()
                .push(format!("NodePool {}'s zone requirement names it", p.pool));
        }
    }
    for n in nodes.values().filter(|n| accepts(n)) {
        counts.entry(n.zone.to_string()).or_insert(0);
        let why = origins.entry(n.zone.to_string()).or_default();
        // A few node names say enough; a zone of a hundred nodes needs no list.
        if why.iter().filter(|w| w.starts_with("node ")).count() < 3 {
            why.push(format!("node {} is there", n.name));
        }
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    for other in selected {
        if other.metadata.namespace.as_deref().unwrap_or("default") != namespace
            || other.metadata.deletion_timestamp.is_some()
            || other
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|p| p == "Succeeded" || p == "Failed")
            || !c.selects(&other.metadata.labels.clone().unwrap_or_default())
        {
            continue;
        }
        let Some(node) = other
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .and_then(|n| nodes.get(n))
        else {
            // Unbound, or its node is gone (a leaked pod): it counts nowhere.
            continue;
        };
        if accepts(node) {
            *counts.entry(node.zone.to_string()).or_insert(0) += 1;
        }
    }
    if counts.is_empty() {
        return None;
    }
    let zone_sets: Vec<Option<&ValueSet>> = alternatives.iter().map(|a| a.get(ZONE)).collect();
    if zone_sets.windows(2).any(|w| w[0] != w[1]) {
        return None;
    }
    let pod_zones = zone_sets.first().copied().flatten();
    let supported: Vec<i32> = counts
        .iter()
        .filter(|(z, _)| pod_zones.is_none_or(|s| s.has(z)))
        .map(|(_, n)| *n)
        .collect();
    let mut min = supported.iter().copied().min().unwrap_or(0);
    if c.min_domains
        .is_some_and(|m| (supported.len() as i64) < i64::from(m))
    {
        min = 0;
    }
    let own = i32::from(c.selects(&pod.metadata.labels.clone().unwrap_or_default()));
    let allowed = counts
        .iter()
        .filter(|(_, n)| i64::from(**n) + i64::from(own) - i64::from(min) <= i64::from(c.max_skew))
        .map(|(z, _)| z.clone())
        .collect();
    Some(ZoneSpread {
        max_skew: c.max_skew,
        selector: c.selector(),
        counts,
        allowed,
        origins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn web(extra: serde_json::Value) -> Pod {
        let mut c = json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        pod(
            json!({"metadata": {"name": "web-x", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": [c]}}),
        )
    }

    fn running(name: &str, node: &str) -> Pod {
        pod(
            json!({"metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [], "nodeName": node}, "status": {"phase": "Running"}}),
        )
    }

    fn node(name: &str, zone: &str, extra: serde_json::Value) -> ListedNode {
        let mut labels = json!({ZONE: zone, "kubernetes.io/hostname": name});
        if let (Some(l), Some(e)) = (labels.as_object_mut(), extra.as_object()) {
            l.extend(e.clone());
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    fn pool(name: &str, launchable: &[&str], named: &[&str]) -> PoolZones {
        PoolZones {
            pool: name.into(),
            taints: Vec::new(),
            launchable: launchable.iter().map(|z| z.to_string()).collect(),
            named: named.iter().map(|z| z.to_string()).collect(),
        }
    }

    fn pending(p: &Pod) -> PendingPod {
        p.clone().into()
    }

    fn judge(p: &Pod, selected: &[Pod], nodes: &[ListedNode], pools: &[PoolZones]) -> ZoneSpread {
        let p = &pending(p);
        let c = &zone_constraints(p)[0];
        let alts = crate::scheduling::pods::alternatives(p.spec.as_ref().unwrap()).unwrap();
        spread(p, &alts, c, selected, &counted_nodes(nodes), pools).unwrap()
    }

    #[test]
    fn a_named_zone_without_a_subnet_holds_the_smallest_count() {
        // aws/karpenter-provider-aws#3239: the pool names us-east-1e, no subnet is there.
        let p = web(json!({}));
        let nodes = [
            node("n-b", "us-east-1b", json!({})),
            node("n-d", "us-east-1d", json!({})),
        ];
        let pools = [pool(
            "default",
            &["us-east-1b", "us-east-1d"],
            &["us-east-1b", "us-east-1d", "us-east-1e"],
        )];
        let s = judge(
            &p,
            &[running("w1", "n-b"), running("w2", "n-d")],
            &nodes,
            &pools,
        );
        assert_eq!(s.allowed, BTreeSet::from(["us-east-1e".to_string()]));
        assert_eq!(
            s.describe(),
            "topology spread maxSkew 1 over app=web (us-east-1b: 1, us-east-1d: 1, us-east-1e: 0) allows only us-east-1e"
        );
        assert_eq!(
            s.origins["us-east-1e"],
            vec!["NodePool default's zone requirement names it"]
        );
    }

    #[test]
    fn balanced_counts_allow_every_zone_and_min_domains_forces_zero() {
        let p = web(json!({}));
        let nodes = [
            node("n-a", "us-west-2a", json!({})),
            node("n-b", "us-west-2b", json!({})),
        ];
        let pools = [pool("default", &["us-west-2a", "us-west-2b"], &[])];
        let pods = [running("w1", "n-a"), running("w2", "n-b")];
        let s = judge(&p, &pods, &nodes, &pools);
        assert_eq!(s.allowed.len(), 2, "{s:?}");
        // minDomains 3 with two zones: the smallest count is 0, so 1 + 1 - 0 > 1 everywhere.
        let strict = web(json!({"minDomains": 3}));
        assert!(judge(&strict, &pods, &nodes, &pools).allowed.is_empty());
        // A pod the selector does not select does not add itself.
        let mut other = web(json!({}));
        other.metadata.labels = Some([("app".to_string(), "api".to_string())].into());
        assert_eq!(judge(&other, &pods, &nodes, &pools).allowed.len(), 2);
    }

    #[test]
    fn the_node_filter_follows_the_pods_node_selection_and_taint_policy() {
        // A managed node group's node in us-west-2c: it counts only when the pod could run
        // there (nodeAffinityPolicy Honor, the default).
        let mut p = web(json!({}));
        p.spec.as_mut().unwrap().node_selector =
            Some([("workload".to_string(), "apps".to_string())].into());
        let nodes = [
            node("n-a", "us-west-2a", json!({"workload": "apps"})),
            node("n-b", "us-west-2b", json!({"workload": "apps"})),
            node("mng-c", "us-west-2c", json!({})),
        ];
        let pools = [pool("default", &["us-west-2a", "us-west-2b"], &[])];
        let pods = [running("w1", "n-a"), running("w2", "n-b")];
        let s = judge(&p, &pods, &nodes, &pools);
        assert!(!s.counts.contains_key("us-west-2c"), "{s:?}");
        assert_eq!(s.allowed.len(), 2);
        // With nodeAffinityPolicy Ignore the node's zone counts, and holds the minimum.
        let mut ignore = web(json!({"nodeAffinityPolicy": "Ignore"}));
        ignore.spec.as_mut().unwrap().node_selector =
            p.spec.as_ref().unwrap().node_selector.clone();
        let s = judge(&ignore, &pods, &nodes, &pools);
        assert_eq!(s.allowed, BTreeSet::from(["us-west-2c".to_string()]));
        assert_eq!(s.origins["us-west-2c"], vec!["node mng-c is there"]);
        // A well-known label a node lacks is not assumed, as it is for a NodePool.
        let mut karpenter_only = web(json!({}));
        karpenter_only.spec.as_mut().unwrap().node_selector =
            Some([("karpenter.sh/nodepool".to_string(), "default".to_string())].into());
        let nodes = [
            node(
                "n-a",
                "us-west-2a",
                json!({"karpenter.sh/nodepool": "default"}),
            ),
            node(
                "n-b",
                "us-west-2b",
                json!({"karpenter.sh/nodepool": "default"}),
            ),
            node("mng-c", "us-west-2c", json!({})),
        ];
        let s = judge(&karpenter_only, &pods, &nodes, &pools);
        assert!(!s.counts.contains_key("us-west-2c"), "{s:?}");
    }

    #[test]
    fn terminating_finished_and_foreign_pods_do_not_count() {
        let p = web(json!({}));
        let nodes = [
            node("n-a", "us-west-2a", json!({})),
            node("n-b", "us-west-2b", json!({})),
        ];
        let pools = [pool("default", &["us-west-2a", "us-west-2b"], &[])];
        let mut gone = running("w2", "n-b");
        gone.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-11-27T10:00:00Z".parse().unwrap(),
            ));
        let mut done = running("w3", "n-b");
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let mut elsewhere = running("w4", "n-b");
        elsewhere.metadata.namespace = Some("other".into());
        let s = judge(
            &p,
            &[
                running("w1", "n-a"),
                gone,
                done,
                elsewhere,
                running("w5", "gone-node"),
            ],
            &nodes,
            &pools,
        );
        assert_eq!(s.counts["us-west-2a"], 1);
        assert_eq!(s.counts["us-west-2b"], 0);
        assert_eq!(s.allowed, BTreeSet::from(["us-west-2b".to_string()]));
    }

    #[test]
    fn selectors_fold_match_label_keys_and_skip_what_selects_nothing() {
        let mut p = web(json!({"matchLabelKeys": ["pod-template-hash"]}));
        p.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("pod-template-hash".into(), "5d8f".into());
        assert_eq!(
            zone_constraints(&pending(&p))[0].selector(),
            "app=web,pod-template-hash=5d8f"
        );
        let none = pod(json!({"metadata": {"name": "x"}, "spec": {"containers": [],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}}));
        assert!(zone_constraints(&pending(&none)).is_empty());
        let soft = web(json!({"whenUnsatisfiable": "ScheduleAnyway"}));
        assert!(zone_constraints(&pending(&soft)).is_empty());
        let exprs = pod(json!({"metadata": {"name": "x"}, "spec": {"containers": [],
            "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}]}}]}}));
        assert_eq!(
            zone_constraints(&pending(&exprs))[0].selector(),
            "tier in (a,b),!canary"
        );
    }
}
