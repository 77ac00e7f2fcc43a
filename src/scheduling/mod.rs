//! Why a pod stays Pending, judged as Karpenter's scheduler judges it (design and sources:
//! docs/scheduling.md). Pure: the checks hand in pods, NodePools and what their nodes would
//! offer; this module says, per NodePool, the first step at which the pod cannot be served.

pub mod allocatable;
pub mod pods;
pub mod sets;
pub mod spread;

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::facts::InstanceType;
use crate::requirements::label_values_on;
use allocatable::Resources;
use sets::Requirements;

/// What one pod asks of a node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodNeeds {
    /// One alternative per required node-affinity term (each already narrowed by the
    /// `nodeSelector`); a pod without terms has one, its `nodeSelector`.
    pub alternatives: Vec<Requirements>,
    pub tolerations: Vec<Toleration>,
    /// Requests as the scheduler sums them, including one `pods`.
    pub requests: Resources,
    /// Zones its volumes allow (`None`: its volumes do not constrain the zone).
    pub volume_zones: Option<BTreeSet<String>>,
    /// Where each of its `DoNotSchedule` zone spreads lets it go now.
    pub spread: Vec<spread::ZoneSpread>,
}

/// One instance type as a NodePool would launch it.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    pub it: &'a InstanceType,
    /// Zones it is offered in where the NodePool's EC2NodeClass has a subnet.
    pub zones: BTreeSet<String>,
    pub allocatable: Resources,
    pub capacity: Resources,
}

/// A NodePool as the scheduler sees it.
#[derive(Clone, Debug)]
pub struct Pool<'a> {
    pub name: String,
    pub weight: i64,
    /// Why Karpenter skips the pool, with the checks that own that cause.
    pub not_ready: Option<(String, Vec<&'static str>)>,
    /// The pool's requirements with its template labels, `karpenter.sh/nodepool` and
    /// `karpenter.k8s.aws/ec2nodeclass`.
    pub requirements: Requirements,
    pub taints: Vec<Taint>,
    /// What is left under each limit (`nodes` included); absent for unlimited resources.
    pub headroom: Resources,
    /// Every instance type offered in a zone of the class's subnets (before requirements).
    pub types: Vec<Candidate<'a>>,
    /// Architectures the class's AMIs serve (`kubernetes.io/arch` values; empty: unknown).
    pub ami_arches: BTreeSet<String>,
    /// The DaemonSet pods that would run on each node of the pool, summed.
    pub daemon_overhead: Resources,
    /// EKS Auto Mode's pool: its nodes carry Auto Mode's labels, not the provider's.
    pub auto_mode: bool,
}

/// The first step at which a NodePool cannot serve a pod, in the order Karpenter tries them.
#[derive(Clone, Debug, PartialEq)]
pub enum Blocked {
    NotReady {
        reason: String,
        owners: Vec<&'static str>,
    },
    Limits {
        reason: String,
    },
    Taint {
        taint: String,
    },
    Requirements {
        reason: String,
    },
    NoInstanceType {
        reason: String,
        /// Set when instance types met the pod's requirements and were all removed because
        /// the EC2NodeClass resolves AMIs only for these other architectures (Karpenter's
        /// "no instance types satisfy requirements of amis"): the AMIs are the cause.
        ami_arches: Vec<String>,
    },
    Zones {
        wanted: Vec<String>,
        offered: Vec<String>,
        /// The topology spreads that narrowed `wanted`.
        spread: Vec<spread::ZoneSpread>,
    },
    TooLarge {
        needs: String,
        largest: String,
    },
}

impl Blocked {
    /// How far the pod got with the pool: the furthest pool decides which check reports it.
    pub fn progress(&self) -> u8 {
        match self {
            Blocked::NotReady { .. } => 0,
            Blocked::Taint { .. } => 1,
            Blocked::Requirements { .. } => 2,
            Blocked::NoInstanceType { .. } => 3,
            Blocked::Limits { .. } => 4,
            Blocked::Zones { .. } => 5,
            Blocked::TooLarge { .. } => 6,
        }
    }

    /// In Karpenter's words where it has some.
    pub fn describe(&self) -> String {
        match self {
            Blocked::NotReady { reason, .. } => format!("not ready: {reason}"),
            Blocked::Limits { reason } => reason.clone(),
            Blocked::Taint { taint } => format!("did not tolerate taint ({taint})"),
            Blocked::Requirements { reason } => format!("incompatible requirements, {reason}"),
            Blocked::NoInstanceType { ami_arches, .. } if !ami_arches.is_empty() => format!(
                "no instance type met the scheduling requirements: the types that meet them were removed because the EC2NodeClass's AMIs are only for {} (\"no instance types satisfy requirements of amis\")",
                ami_arches.join(", ")
            ),
            Blocked::NoInstanceType { reason, .. } => {
                format!("no instance type met the scheduling requirements ({reason})")
            }
            Blocked::Zones {
                wanted,
                offered,
                spread,
            } => {
                let because = if spread.is_empty() {
                    String::new()
                } else {
                    let each: Vec<String> = spread.iter().map(|s| s.describe()).collect();
                    format!(" ({})", each.join("; "))
                };
                format!(
                    "the pod may run only in {}{because}, and the pool's instance types are offered only in {} (its EC2NodeClass's subnets)",
                    show_zones(wanted),
                    show_zones(offered)
                )
            }
            Blocked::TooLarge { needs, largest } => format!(
                "no instance type has enough resources: with the DaemonSets the pod needs {needs}; the largest allowed type offers {largest}"
            ),
        }
    }
}

fn show_zones(z: &[String]) -> String {
    if z.is_empty() {
        "no zone".to_string()
    } else {
        z.join(", ")
    }
}

/// The verdict of one pod against every NodePool.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Some pool can serve the pod (Karpenter should launch, or is launching).
    Served { pool: String },
    /// No pool can: each pool's first reason, pools by descending weight.
    Unserved(Vec<(String, Blocked)>),
}

impl Verdict {
    /// The step that decides which check reports an unserved pod: the furthest any pool got.
    pub fn furthest(&self) -> Option<&Blocked> {
        match self {
            Verdict::Served { .. } => None,
            Verdict::Unserved(pools) => pools.iter().map(|(_, b)| b).max_by_key(|b| b.progress()),
        }
    }
}

/// Whether a toleration matches a taint (k8s.io/api core/v1 `ToleratesTaint`).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let key = t.key.as_deref().unwrap_or("");
    let exists = t.operator.as_deref() == Some("Exists");
    if key.is_empty() {
        return exists && effect_ok;
    }
    if key != taint.key || !effect_ok {
        return false;
    }
    if exists {
        return true;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Gt" | "Lt" => {
            let (Some(want), Some(have)) = (
                t.value.as_deref().and_then(|v| v.parse::<i64>().ok()),
                taint.value.as_deref().and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if t.operator.as_deref() == Some("Gt") {
                have > want
            } else {
                have < want
            }
        }
        _ => false,
    }
}

/// `key=value:Effect`, as Karpenter prints a taint.
pub fn show_taint(taint: &Taint) -> String {
    match taint.value.as_deref() {
        Some(v) if !v.is_empty() => format!("taint={}={}:{}", taint.key, v, taint.effect),
        _ => format!("taint={}:{}", taint.key, taint.effect),
    }
}

/// The first taint of the pool that blocks scheduling and no toleration matches.
/// `PreferNoSchedule` never blocks; startup taints are not passed in.
pub fn untolerated<'t>(taints: &'t [Taint], tolerations: &[Toleration]) -> Option<&'t Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// The instance types a pool admits before any pod is considered: offered in a zone its
/// requirements allow, their labels meeting its requirements.
pub fn admitted<'p, 'a>(pool: &'p Pool<'a>) -> impl Iterator<Item = &'p Candidate<'a>> {
    let zones = pool.requirements.get(spread::ZONE);
    pool.types.iter().filter(move |c| {
        c.zones.iter().any(|z| zones.is_none_or(|s| s.has(z)))
            && type_meets(c, &pool.requirements, pool.auto_mode).is_ok()
    })
}

/// Whether an instance type's labels meet a set of requirements (zones are judged apart).
fn type_meets(c: &Candidate<'_>, reqs: &Requirements, auto_mode: bool) -> Result<(), String> {
    for (key, set) in &reqs.0 {
        if key == "topology.kubernetes.io/zone" {
            continue;
        }
        let Some(have) = label_values_on(c.it, &c.zones, key, auto_mode) else {
            continue;
        };
        let ok = if have.is_empty() {
            set.is_negative()
        } else {
            have.iter().any(|v| set.has(v))
        };
        if !ok {
            return Err(format!("{key} {}", set.describe()));
        }
    }
    Ok(())
}

/// Whether `requests` fit `allocatable` after `overhead`; `Err` names the first resource
/// short. A resource the estimate does not model (ephemeral storage, most extended
/// resources) is not judged.
fn fits(requests: &Resources, overhead: &Resources, allocatable: &Resources) -> bool {
    requests.iter().all(|(name, want)| {
        let Some(have) = allocatable.get(name) else {
            return !(name == "nvidia.com/gpu" && want.is_positive());
        };
        let need = overhead
            .get(name)
            .and_then(|o| o.checked_add(*want))
            .unwrap_or(*want);
        need <= *have
    })
}

fn show_resources(r: &Resources) -> String {
    r.iter()
        .filter(|(k, _)| matches!(k.as_str(), "cpu" | "memory" | "pods" | "nvidia.com/gpu"))
        .map(|(k, v)| format!("{k} {}", v.show(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sum(a: &Resources, b: &Resources) -> Resources {
    let mut out = a.clone();
    for (k, v) in b {
        let total = out.get(k).and_then(|x| x.checked_add(*v)).unwrap_or(*v);
        out.insert(k.clone(), total);
    }
    out
}

/// One pool's verdict on one pod.
pub fn judge_pool(pod: &PodNeeds, pool: &Pool<'_>) -> Result<(), Blocked> {
    if let Some((reason, owners)) = &pool.not_ready {
        return Err(Blocked::NotReady {
            reason: reason.clone(),
            owners: owners.clone(),
        });
    }
    if let Some(taint) = untolerated(&pool.taints, &pod.tolerations) {
        return Err(Blocked::Taint {
            taint: show_taint(taint).trim_start_matches("taint=").to_string(),
        });
    }
    // Each alternative (required node-affinity term) is tried; the pool serves the pod if
    // any does. The reason kept is the furthest one.
    let mut best: Option<Blocked> = None;
    for alt in &pod.alternatives {
        match judge_alternative(pod, alt, pool) {
            Ok(()) => return Ok(()),
            Err(b) => {
                if best
                    .as_ref()
                    .is_none_or(|have| b.progress() > have.progress())
                {
                    best = Some(b);
                }
            }
        }
    }
    Err(best.unwrap_or(Blocked::Requirements {
        reason: "the pod has no usable node-affinity term".to_string(),
    }))
}

fn judge_alternative(pod: &PodNeeds, alt: &Requirements, pool: &Pool<'_>) -> Result<(), Blocked> {
    pool.requirements
        .compatible_on(alt, pool.auto_mode)
        .map_err(|reason| Blocked::Requirements { reason })?;
    let both = pool.requirements.intersect(alt);
    let mut first_miss = None;
    // Types that met the requirements but have no AMI for their architecture.
    let mut removed_by_ami = 0usize;
    let matching: Vec<&Candidate<'_>> = pool
        .types
        .iter()
        .filter(|c| {
            let arch_ok = pool.ami_arches.is_empty()
                || c.it
                    .architectures
                    .iter()
                    .filter_map(|a| crate::requirements::k8s_arch(a))
                    .any(|a| pool.ami_arches.contains(a));
            match type_meets(c, &both, pool.auto_mode) {
                Ok(()) if arch_ok => true,
                Ok(()) => {
                    removed_by_ami += 1;
                    first_miss.get_or_insert_with(|| "no AMI for its architecture".to_string());
                    false
                }
                Err(e) => {
                    first_miss.get_or_insert(e);
                    false
                }
            }
        })
        .collect();
    if matching.is_empty() {
        let ami_arches = if removed_by_ami > 0 {
            pool.ami_arches.iter().cloned().collect()
        } else {
            Vec::new()
        };
        return Err(Blocked::NoInstanceType {
            reason: first_miss.unwrap_or_else(|| "the pool offers no instance type".to_string()),
            ami_arches,
        });
    }
    // The pool's limits: nothing launches when no matching type fits what is left.
    if let Some(reason) = limit_blocks(pool, &matching) {
        return Err(Blocked::Limits { reason });
    }
    let zone_set = both.get("topology.kubernetes.io/zone");
    let zone_ok = |z: &String| {
        zone_set.is_none_or(|s| s.has(z))
            && pod.volume_zones.as_ref().is_none_or(|v| v.contains(z))
            && pod.spread.iter().all(|s| s.allowed.contains(z))
    };
    let zoned: Vec<&Candidate<'_>> = matching
        .iter()
        .copied()
        .filter(|c| c.zones.iter().any(zone_ok))
        .collect();
    if zoned.is_empty() {
        let offered: BTreeSet<String> = matching.iter().flat_map(|c| c.zones.clone()).collect();
        // The zones the volumes and spreads leave, when either pins them.
        let mut pinned = pod.volume_zones.clone();
        for s in &pod.spread {
            pinned = Some(match pinned {
                None => s.allowed.clone(),
                Some(p) => p.intersection(&s.allowed).cloned().collect(),
            });
        }
        let mut wanted: Vec<String> = match (zone_set, &pinned) {
            (_, Some(v)) => v
                .iter()
                .filter(|z| zone_set.is_none_or(|s| s.has(z)))
                .cloned()
                .collect(),
            (Some(s), None) if !s.complement => s.values.iter().cloned().collect(),
            (Some(s), None) => vec![format!(
                "zones other than {}",
                s.values.iter().cloned().collect::<Vec<_>>().join(", ")
            )],
            (None, None) => Vec::new(),
        };
        wanted.sort();
        // Only the spreads that exclude some offered zone explain the verdict.
        let spread = pod
            .spread
            .iter()
            .filter(|s| offered.iter().any(|z| !s.allowed.contains(z)))
            .cloned()
            .collect();
        return Err(Blocked::Zones {
            wanted,
            offered: offered.into_iter().collect(),
            spread,
        });
    }
    if zoned
        .iter()
        .any(|c| fits(&pod.requests, &pool.daemon_overhead, &c.allocatable))
    {
        return Ok(());
    }
    let largest = zoned
        .iter()
        .max_by_key(|c| {
            (
                c.allocatable.get("memory").copied().unwrap_or_default(),
                c.allocatable.get("cpu").copied().unwrap_or_default(),
            )
        })
        .map(|c| {
            format!(
                "{} ({})",
                c.it.instance_type,
                show_resources(&c.allocatable)
            )
        })
        .unwrap_or_default();
    let mut needs = sum(&pod.requests, &pool.daemon_overhead);
    // Every pod takes one slot; the count is noise unless it is what does not fit.
    needs.remove("pods");
    Err(Blocked::TooLarge {
        needs: show_resources(&needs),
        largest,
    })
}

/// Karpenter's limit errors, when no matching type fits under what is left of a limit.
fn limit_blocks(pool: &Pool<'_>, matching: &[&Candidate<'_>]) -> Option<String> {
    if pool
        .headroom
        .get("nodes")
        .is_some_and(|left| !left.is_positive())
    {
        return Some(format!(
            "node limits have been exhausted for nodepool (NodePool={})",
            pool.name
        ));
    }
    let all_exceed = matching.iter().all(|c| {
        pool.headroom
            .iter()
            .filter(|(k, _)| k.as_str() != "nodes")
            .any(|(k, left)| c.capacity.get(k).is_some_and(|have| have > left))
    });
    all_exceed.then(|| {
        let left: Vec<String> = pool
            .headroom
            .iter()
            .filter(|(k, _)| k.as_str() != "nodes")
            .map(|(k, v)| format!("{k} {}", v.show(k)))
            .collect();
        format!(
            "all available instance types exceed limits for nodepool (NodePool={}; left under its limits: {})",
            pool.name,
            left.join(", ")
        )
    })
}

/// Every pool's verdict on a pod, pools by descending weight (then name).
pub fn judge(pod: &PodNeeds, pools: &[Pool<'_>]) -> Verdict {
    let mut order: Vec<&Pool<'_>> = pools.iter().collect();
    order.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.name.cmp(&b.name)));
    let mut blocked = Vec::new();
    for pool in order {
        match judge_pool(pod, pool) {
            Ok(()) => {
                return Verdict::Served {
                    pool: pool.name.clone(),
                };
            }
            Err(b) => blocked.push((pool.name.clone(), b)),
        }
    }
    Verdict::Unserved(blocked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Requirement;
    use crate::quantity::Quantity;
    use allocatable::{NodeSettings, allocatable, capacity};

    fn pool<'a>(types: &'a [InstanceType], reqs: &[Requirement]) -> Pool<'a> {
        let s = NodeSettings::default();
        Pool {
            name: "default".into(),
            weight: 0,
            not_ready: None,
            requirements: Requirements::from_list(reqs).unwrap(),
            taints: Vec::new(),
            headroom: Resources::new(),
            types: types
                .iter()
                .map(|t| Candidate {
                    it: t,
                    zones: ["us-west-2a".to_string(), "us-west-2b".to_string()].into(),
                    allocatable: allocatable(t, &s),
                    capacity: capacity(t, &s),
                })
                .collect(),
            ami_arches: BTreeSet::new(),
            daemon_overhead: Resources::new(),
            auto_mode: false,
        }
    }

    fn pod(reqs: &[Requirement], cpu: &str) -> PodNeeds {
        PodNeeds {
            alternatives: vec![Requirements::from_list(reqs).unwrap()],
            tolerations: Vec::new(),
            requests: [
                ("cpu".to_string(), Quantity::parse(cpu).unwrap()),
                ("pods".to_string(), Quantity::units(1)),
            ]
            .into(),
            volume_zones: None,
            spread: Vec::new(),
        }
    }

    #[test]
    fn a_fitting_pod_is_served_and_a_large_one_is_too_large() {
        let types = [InstanceType::nitro("m5.large", "x86_64", 2)];
        let p = pool(&types, &[]);
        assert!(
            judge_pool(&pod(&[], "1930m"), &p).is_ok(),
            "exactly allocatable fits"
        );
        let err = judge_pool(&pod(&[], "1931m"), &p).unwrap_err();
        assert!(matches!(err, Blocked::TooLarge { .. }), "{err:?}");
    }

    #[test]
    fn each_kind_of_pool_knows_its_own_instance_labels() {
        let types = [
            InstanceType::nitro("m5.large", "x86_64", 2),
            InstanceType::nitro("c5.large", "x86_64", 2),
        ];
        let mut auto = pool(&types, &[]);
        auto.auto_mode = true;
        let selfm = pool(&types, &[]);
        let eks_c = pod(
            &[Requirement::of(
                "eks.amazonaws.com/instance-category",
                "In",
                &["c"],
            )],
            "1",
        );
        let provider_c = pod(
            &[Requirement::of(
                "karpenter.k8s.aws/instance-category",
                "In",
                &["c"],
            )],
            "1",
        );
        // Auto Mode's nodes carry eks.amazonaws.com/instance-*, derived from the type.
        assert!(judge_pool(&eks_c, &auto).is_ok());
        let eks_x = pod(
            &[Requirement::of(
                "eks.amazonaws.com/instance-category",
                "In",
                &["x"],
            )],
            "1",
        );
        assert!(matches!(
            judge_pool(&eks_x, &auto).unwrap_err(),
            Blocked::NoInstanceType { .. }
        ));
        // ...and never the provider's labels, nor does a self-managed node carry Auto Mode's.
        let err = judge_pool(&provider_c, &auto).unwrap_err().describe();
        assert!(err.contains("does not have known values"), "{err}");
        assert!(judge_pool(&provider_c, &selfm).is_ok());
        let err = judge_pool(&eks_c, &selfm).unwrap_err().describe();
        assert!(err.contains("does not have known values"), "{err}");
        // Auto Mode runs Linux only.
        let windows = pod(
            &[Requirement::of("kubernetes.io/os", "In", &["windows"])],
            "1",
        );
        assert!(judge_pool(&windows, &auto).is_err());
        assert!(judge_pool(&windows, &selfm).is_ok());
    }

    #[test]
    fn taints_block_unless_tolerated() {
        let types = [InstanceType::nitro("m5.large", "x86_64", 2)];
        let mut p = pool(&types, &[]);
        p.taints = vec![Taint {
            key: "spark".into(),
            value: Some("yes".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }];
        let mut needs = pod(&[], "1");
        assert_eq!(
            judge_pool(&needs, &p).unwrap_err().describe(),
            "did not tolerate taint (spark=yes:NoSchedule)"
        );
        needs.tolerations = vec![Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        }];
        assert!(
            judge_pool(&needs, &p).is_ok(),
            "an empty-key Exists tolerates all"
        );
        p.taints[0].effect = "PreferNoSchedule".into();
        assert!(judge_pool(&pod(&[], "1"), &p).is_ok());
    }

    #[test]
    fn zones_and_limits() {
        let types = [InstanceType::nitro("m5.large", "x86_64", 2)];
        let p = pool(&types, &[]);
        let zoned = pod(
            &[Requirement::of(
                "topology.kubernetes.io/zone",
                "In",
                &["us-west-2c"],
            )],
            "1",
        );
        assert!(matches!(judge_pool(&zoned, &p), Err(Blocked::Zones { .. })));
        let mut limited = pool(&types, &[]);
        limited.headroom.insert("cpu".into(), Quantity::units(1));
        assert!(matches!(
            judge_pool(&pod(&[], "1"), &limited),
            Err(Blocked::Limits { .. })
        ));
        let arm = pod(
            &[Requirement::of("kubernetes.io/arch", "In", &["arm64"])],
            "1",
        );
        assert!(matches!(
            judge_pool(&arm, &limited),
            Err(Blocked::NoInstanceType { ref ami_arches, .. }) if ami_arches.is_empty()
        ));
    }

    #[test]
    fn types_removed_by_the_amis_architecture_name_the_amis() {
        // A Graviton type meets the pod; the class resolves only amd64 AMIs, so Karpenter drops
        // it ("no instance types satisfy requirements of amis"): the AMIs are the cause.
        let types = [InstanceType::nitro("m7g.large", "arm64", 2)];
        let mut p = pool(&types, &[]);
        p.ami_arches = ["amd64".to_string()].into();
        match judge_pool(&pod(&[], "1"), &p) {
            Err(b @ Blocked::NoInstanceType { .. }) => {
                assert!(
                    matches!(&b, Blocked::NoInstanceType { ami_arches, .. } if ami_arches == &["amd64"])
                );
                assert!(
                    b.describe()
                        .contains("no instance types satisfy requirements of amis")
                );
            }
            other => panic!("expected NoInstanceType, got {other:?}"),
        }
        // With an arm64 AMI too, the type is served.
        p.ami_arches = ["amd64".to_string(), "arm64".to_string()].into();
        assert!(judge_pool(&pod(&[], "1"), &p).is_ok());
    }

    #[test]
    fn a_spread_narrows_the_zones_and_is_named() {
        let types = [InstanceType::nitro("m5.large", "x86_64", 2)];
        let p = pool(&types, &[]);
        let mut needs = pod(&[], "1");
        needs.spread = vec![spread::ZoneSpread {
            max_skew: 1,
            selector: "app=web".into(),
            counts: [
                ("us-west-2a".into(), 1),
                ("us-west-2b".into(), 1),
                ("us-west-2c".into(), 0),
            ]
            .into(),
            allowed: ["us-west-2c".to_string()].into(),
            origins: Default::default(),
        }];
        let Err(Blocked::Zones { wanted, spread, .. }) = judge_pool(&needs, &p) else {
            panic!("the spread allows only a zone the pool cannot reach");
        };
        assert_eq!(wanted, vec!["us-west-2c".to_string()]);
        assert_eq!(spread.len(), 1);
        needs.spread[0].allowed.insert("us-west-2b".into());
        assert!(
            judge_pool(&needs, &p).is_ok(),
            "one reachable zone is enough"
        );
    }

    #[test]
    fn the_furthest_pool_decides() {
        let types = [InstanceType::nitro("m5.large", "x86_64", 2)];
        let mut tainted = pool(&types, &[]);
        tainted.name = "gpu".into();
        tainted.taints = vec![Taint {
            key: "nvidia.com/gpu".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }];
        let small = pool(&types, &[]);
        let v = judge(&pod(&[], "4"), &[tainted, small]);
        assert!(
            matches!(v.furthest(), Some(Blocked::TooLarge { .. })),
            "{v:?}"
        );
    }
}
