//! Node requirements as sets of label values, intersected the way Karpenter's scheduler does
//! (kubernetes-sigs/karpenter `pkg/scheduling/requirement.go`, `requirements.go`): `In` is a
//! set, `NotIn` its complement, `Exists` the complement of nothing, `DoesNotExist` nothing,
//! and `Gt`/`Lt` bound an `Exists`. Requirements on one key intersect.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::Requirement;

/// The values one key may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueSet {
    /// `true`: every value except `values`; `false`: exactly `values`.
    pub complement: bool,
    pub values: BTreeSet<String>,
    /// Exclusive integer bounds (`Gt`, `Lt`); a value that is not an integer is outside them.
    pub greater_than: Option<i64>,
    pub less_than: Option<i64>,
}

impl ValueSet {
    pub fn any() -> Self {
        ValueSet {
            complement: true,
            values: BTreeSet::new(),
            greater_than: None,
            less_than: None,
        }
    }

    pub fn none() -> Self {
        ValueSet {
            complement: false,
            ..ValueSet::any()
        }
    }

    pub fn only(values: impl IntoIterator<Item = String>) -> Self {
        ValueSet {
            complement: false,
            values: values.into_iter().collect(),
            greater_than: None,
            less_than: None,
        }
    }

    /// One requirement's values; `None` for an operator or value the API server would have
    /// rejected (Karpenter ignores such a pod; the caller says so).
    pub fn from_requirement(req: &Requirement) -> Option<Self> {
        let values = || req.values.iter().cloned().collect::<BTreeSet<String>>();
        let bound = || match req.values.as_slice() {
            [one] => one.parse::<i64>().ok(),
            _ => None,
        };
        Some(match req.operator.as_str() {
            "In" if !req.values.is_empty() => ValueSet::only(values()),
            "NotIn" => ValueSet {
                values: values(),
                ..ValueSet::any()
            },
            "Exists" => ValueSet::any(),
            "DoesNotExist" => ValueSet::none(),
            "Gt" => ValueSet {
                greater_than: Some(bound()?),
                ..ValueSet::any()
            },
            "Lt" => ValueSet {
                less_than: Some(bound()?),
                ..ValueSet::any()
            },
            "Gte" => ValueSet {
                greater_than: Some(bound()?.checked_sub(1)?),
                ..ValueSet::any()
            },
            "Lte" => ValueSet {
                less_than: Some(bound()?.checked_add(1)?),
                ..ValueSet::any()
            },
            _ => return None,
        })
    }

    fn within_bounds(&self, value: &str) -> bool {
        if self.greater_than.is_none() && self.less_than.is_none() {
            return true;
        }
        let Ok(n) = value.parse::<i64>() else {
            return false;
        };
        self.greater_than.is_none_or(|g| n > g) && self.less_than.is_none_or(|l| n < l)
    }

    /// Whether a node with this label value satisfies the set.
    pub fn has(&self, value: &str) -> bool {
        self.within_bounds(value) && (self.values.contains(value) != self.complement)
    }

    /// No value at all satisfies the set.
    pub fn is_empty(&self) -> bool {
        !self.complement && self.values.is_empty()
    }

    /// The operator Karpenter prints for the set: a negative one (`NotIn`, `DoesNotExist`)
    /// tolerates nodes without the label.
    pub fn is_negative(&self) -> bool {
        if self.complement {
            !self.values.is_empty() && self.greater_than.is_none() && self.less_than.is_none()
        } else {
            self.values.is_empty()
        }
    }

    pub fn intersect(&self, other: &ValueSet) -> ValueSet {
        let greater_than = match (self.greater_than, other.greater_than) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let less_than = match (self.less_than, other.less_than) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let (Some(g), Some(l)) = (greater_than, less_than)
            && g >= l
        {
            return ValueSet::none();
        }
        let complement = self.complement && other.complement;
        let values: BTreeSet<String> = match (self.complement, other.complement) {
            (true, true) => self.values.union(&other.values).cloned().collect(),
            (true, false) => other.values.difference(&self.values).cloned().collect(),
            (false, true) => self.values.difference(&other.values).cloned().collect(),
            (false, false) => self.values.intersection(&other.values).cloned().collect(),
        };
        let bounds = ValueSet {
            complement: true,
            values: BTreeSet::new(),
            greater_than,
            less_than,
        };
        let values = values
            .into_iter()
            .filter(|v| complement || bounds.within_bounds(v))
            .collect();
        if complement {
            ValueSet {
                complement,
                values,
                greater_than,
                less_than,
            }
        } else {
            ValueSet::only(values)
        }
    }

    /// How Karpenter prints a requirement: `In [a b]`, `NotIn [a]`, `Exists >5`.
    pub fn describe(&self) -> String {
        let list = |v: &BTreeSet<String>| {
            let mut shown: Vec<&str> = v.iter().map(String::as_str).take(5).collect();
            let more = v.len().saturating_sub(5);
            let tail = if more > 0 {
                format!(" and {more} others")
            } else {
                String::new()
            };
            shown.sort_unstable();
            format!("[{}]{tail}", shown.join(" "))
        };
        let mut out = match (self.complement, self.values.is_empty()) {
            (false, true) => "DoesNotExist".to_string(),
            (false, false) => format!("In {}", list(&self.values)),
            (true, true) => "Exists".to_string(),
            (true, false) => format!("NotIn {}", list(&self.values)),
        };
        if let Some(g) = self.greater_than {
            out.push_str(&format!(" >{g}"));
        }
        if let Some(l) = self.less_than {
            out.push_str(&format!(" <{l}"));
        }
        out
    }
}

/// Requirements by key, each the intersection of every requirement given on that key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirements(pub BTreeMap<String, ValueSet>);

impl Requirements {
    /// Narrows `key` by `set`.
    pub fn add(&mut self, key: &str, set: ValueSet) {
        let key = normalise_key(key);
        let next = match self.0.get(key) {
            Some(have) => have.intersect(&set),
            None => set,
        };
        self.0.insert(key.to_string(), next);
    }

    /// From a list of requirements; `Err` names the first the API would have rejected.
    pub fn from_list(reqs: &[Requirement]) -> Result<Self, String> {
        let mut out = Requirements::default();
        for r in reqs {
            let set = ValueSet::from_requirement(r)
                .ok_or_else(|| format!("{} {} {:?}", r.key, r.operator, r.values))?;
            out.add(&r.key, set);
        }
        Ok(out)
    }

    pub fn get(&self, key: &str) -> Option<&ValueSet> {
        self.0.get(key)
    }

    /// Both sets of requirements at once.
    pub fn intersect(&self, other: &Requirements) -> Requirements {
        let mut out = self.clone();
        for (k, v) in &other.0 {
            out.add(k, v.clone());
        }
        out
    }

    /// Whether a pod with requirements `pod` may land on nodes with requirements `self` (a
    /// NodePool's), as Karpenter's `Compatible` judges: a pod key Karpenter does not know
    /// well must be defined by the pool (unless the pod only excludes values), and keys both
    /// define must share a value (two negative requirements always do). `Err` is the first
    /// reason, in Karpenter's words.
    pub fn compatible(&self, pod: &Requirements) -> Result<(), String> {
        self.compatible_on(pod, false)
    }

    /// [`compatible`](Self::compatible) for a pool of EKS Auto Mode (`auto_mode`), whose nodes
    /// know `eks.amazonaws.com/instance-*` rather than the self-managed provider's labels.
    pub fn compatible_on(&self, pod: &Requirements, auto_mode: bool) -> Result<(), String> {
        for (key, want) in &pod.0 {
            if !is_well_known_on(key, auto_mode) && !self.0.contains_key(key) && !want.is_negative()
            {
                return Err(format!(
                    "label \"{key}\" does not have known values{}",
                    typo_hint(key, self)
                ));
            }
        }
        for (key, want) in &pod.0 {
            if let Some(have) = self.0.get(key)
                && have.intersect(want).is_empty()
                && !(want.is_negative() && have.is_negative())
            {
                return Err(format!(
                    "key {key}, {key} {} not in {key} {}",
                    want.describe(),
                    have.describe()
                ));
            }
        }
        Ok(())
    }
}

/// Beta and CSI spellings of well-known labels, as Karpenter rewrites them.
pub fn normalise_key(key: &str) -> &str {
    match key {
        "failure-domain.beta.kubernetes.io/zone" | "topology.ebs.csi.aws.com/zone" => {
            "topology.kubernetes.io/zone"
        }
        "failure-domain.beta.kubernetes.io/region" => "topology.kubernetes.io/region",
        "beta.kubernetes.io/arch" => "kubernetes.io/arch",
        "beta.kubernetes.io/os" => "kubernetes.io/os",
        "beta.kubernetes.io/instance-type" => "node.kubernetes.io/instance-type",
        other => other,
    }
}

/// Labels Karpenter derives from the instance type or the launch (kubernetes-sigs/karpenter
/// and aws/karpenter-provider-aws `pkg/apis/v1/labels.go`). A pod may require one that a
/// NodePool does not mention; every other key must be defined by the pool.
pub fn is_well_known(key: &str) -> bool {
    const CORE: &[&str] = &[
        "karpenter.sh/nodepool",
        "karpenter.sh/capacity-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    ];
    CORE.contains(&key)
        || key.strip_prefix("karpenter.k8s.aws/").is_some_and(|rest| {
            rest.starts_with("instance-")
                || rest.starts_with("capacity-reservation-")
                || rest.starts_with("placement-group-")
        })
}

/// [`is_well_known`] on the nodes of EKS Auto Mode (`auto_mode`): the same core labels, and
/// `eks.amazonaws.com/instance-*` in place of `karpenter.k8s.aws/*` (docs/auto-mode.md §2.4).
pub fn is_well_known_on(key: &str, auto_mode: bool) -> bool {
    if !auto_mode {
        return is_well_known(key);
    }
    key.starts_with("eks.amazonaws.com/instance-")
        || (is_well_known(key) && !key.starts_with("karpenter.k8s.aws/"))
}

/// Karpenter's ` (typo of "<key>"?)` hint: a known or pool key that contains the pod's key,
/// or ends with its name part.
fn typo_hint(key: &str, pool: &Requirements) -> String {
    let name = key.rsplit('/').next().unwrap_or(key);
    pool.0
        .keys()
        .map(String::as_str)
        .find(|k| *k != key && (k.contains(key) || k.ends_with(&format!("/{name}"))))
        .map(|k| format!(" (typo of \"{k}\"?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(op: &str, values: &[&str]) -> ValueSet {
        ValueSet::from_requirement(&Requirement::of("k", op, values)).unwrap()
    }

    #[test]
    fn operators_as_sets() {
        assert!(set("In", &["a"]).has("a") && !set("In", &["a"]).has("b"));
        assert!(!set("NotIn", &["a"]).has("a") && set("NotIn", &["a"]).has("b"));
        assert!(set("Exists", &[]).has("x") && set("DoesNotExist", &[]).is_empty());
        assert!(set("Gt", &["4"]).has("5") && !set("Gt", &["4"]).has("4"));
        assert!(
            !set("Gt", &["4"]).has("large"),
            "a non-number is outside bounds"
        );
        assert!(ValueSet::from_requirement(&Requirement::of("k", "In", &[])).is_none());
        assert!(ValueSet::from_requirement(&Requirement::of("k", "Gt", &["a"])).is_none());
        assert!(ValueSet::from_requirement(&Requirement::of("k", "Gt", &["1", "2"])).is_none());
    }

    #[test]
    fn intersections_follow_karpenter() {
        let i = set("In", &["a", "b"]).intersect(&set("NotIn", &["a"]));
        assert_eq!(i, ValueSet::only(["b".to_string()]));
        let n = set("NotIn", &["a"]).intersect(&set("NotIn", &["b"]));
        assert!(n.complement && n.values.len() == 2 && n.is_negative());
        let b = set("Gt", &["4"]).intersect(&set("Lt", &["3"]));
        assert!(b.is_empty());
        let kept = set("In", &["2", "8", "x"]).intersect(&set("Gt", &["4"]));
        assert_eq!(kept, ValueSet::only(["8".to_string()]));
        assert!(!set("Gt", &["4"]).is_negative(), "Gt prints as Exists");
    }

    #[test]
    fn custom_keys_must_be_defined_by_the_pool() {
        let pool = Requirements::from_list(&[Requirement::of("team", "In", &["a"])]).unwrap();
        let pod =
            Requirements::from_list(&[Requirement::of("workload", "In", &["batch"])]).unwrap();
        assert_eq!(
            pool.compatible(&pod).unwrap_err(),
            "label \"workload\" does not have known values"
        );
        let excluded =
            Requirements::from_list(&[Requirement::of("workload", "NotIn", &["x"])]).unwrap();
        assert!(pool.compatible(&excluded).is_ok());
        let zone = Requirements::from_list(&[Requirement::of(
            "failure-domain.beta.kubernetes.io/zone",
            "In",
            &["us-west-2a"],
        )])
        .unwrap();
        assert!(pool.compatible(&zone).is_ok(), "a well-known key passes");
        let typo = Requirements::from_list(&[Requirement::of("nodegroup", "In", &["a"])]).unwrap();
        let pool =
            Requirements::from_list(&[Requirement::of("example.com/nodegroup", "In", &["a"])])
                .unwrap();
        assert!(
            pool.compatible(&typo)
                .unwrap_err()
                .ends_with("(typo of \"example.com/nodegroup\"?)")
        );
    }

    #[test]
    fn shared_keys_need_a_common_value() {
        let pool =
            Requirements::from_list(&[Requirement::of("kubernetes.io/arch", "In", &["amd64"])])
                .unwrap();
        let pod =
            Requirements::from_list(&[Requirement::of("kubernetes.io/arch", "In", &["arm64"])])
                .unwrap();
        assert_eq!(
            pool.compatible(&pod).unwrap_err(),
            "key kubernetes.io/arch, kubernetes.io/arch In [arm64] not in kubernetes.io/arch In [amd64]"
        );
        let pool = Requirements::from_list(&[Requirement::of("gpu", "DoesNotExist", &[])]).unwrap();
        let pod = Requirements::from_list(&[Requirement::of("gpu", "NotIn", &["true"])]).unwrap();
        assert!(pool.compatible(&pod).is_ok(), "two negatives pass");
    }
}
