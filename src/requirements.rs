//! NodePool requirements against EC2 instance types: which types a NodePool could launch, and
//! which requirement leaves none. Mirrors the labels Karpenter gives each instance type
//! (well-known Kubernetes labels and `karpenter.k8s.aws/instance-*`); requirements on other
//! keys are the user's own node labels and never exclude an instance type.

use std::collections::{BTreeMap, BTreeSet};

use crate::facts::{InstanceType, InstanceTypeOffering};
use crate::model::Requirement;

/// The values an instance type has for a label key; `None` when the key is not one Karpenter
/// derives from the instance type (so the requirement does not filter).
pub fn label_values(it: &InstanceType, zones: &BTreeSet<String>, key: &str) -> Option<Vec<String>> {
    let name = it.instance_type.as_str();
    let (family, size) = name.split_once('.').unwrap_or((name, ""));
    let category: String = family
        .chars()
        .take_while(|c| c.is_ascii_lowercase())
        .collect();
    let generation: String = family[category.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let one = |v: String| Some(vec![v]);
    match key {
        "kubernetes.io/arch" => Some(
            it.architectures
                .iter()
                .filter_map(|a| k8s_arch(a))
                .map(str::to_string)
                .collect(),
        ),
        "kubernetes.io/os" => Some(vec!["linux".to_string(), "windows".to_string()]),
        "node.kubernetes.io/instance-type" => one(name.to_string()),
        "topology.kubernetes.io/zone" => Some(zones.iter().cloned().collect()),
        // `reserved` depends on the account's capacity reservations, which are not read:
        // any type may have one, so a requirement for it never empties the set.
        "karpenter.sh/capacity-type" => Some(
            it.usage_classes
                .iter()
                .filter(|u| matches!(u.as_str(), "on-demand" | "spot"))
                .cloned()
                .chain(std::iter::once("reserved".to_string()))
                .collect(),
        ),
        "karpenter.k8s.aws/instance-family" => one(family.to_string()),
        "karpenter.k8s.aws/instance-category" => one(category),
        "karpenter.k8s.aws/instance-generation" if generation.is_empty() => Some(Vec::new()),
        "karpenter.k8s.aws/instance-generation" => one(generation),
        "karpenter.k8s.aws/instance-size" => one(size.to_string()),
        "karpenter.k8s.aws/instance-cpu" => one(it.vcpus.to_string()),
        "karpenter.k8s.aws/instance-memory" => one(it.memory_mib.to_string()),
        "karpenter.k8s.aws/instance-gpu-count" => match it.gpu_count_label() {
            Some(n) => one(n.to_string()),
            None => Some(Vec::new()),
        },
        "karpenter.k8s.aws/instance-hypervisor" => one(it.hypervisor.clone()),
        _ => None,
    }
}

/// The `eks.amazonaws.com/instance-*` labels EKS Auto Mode derives from the instance type, as
/// the self-managed provider's names for the same values (docs/auto-mode.md §2.4). Auto Mode's
/// other labels (CPU manufacturer, bandwidths, GPU name) are not derived here and never filter.
pub fn auto_mode_as_provider_key(key: &str) -> Option<String> {
    let rest = key.strip_prefix("eks.amazonaws.com/instance-")?;
    matches!(
        rest,
        "category"
            | "generation"
            | "family"
            | "size"
            | "cpu"
            | "memory"
            | "gpu-count"
            | "hypervisor"
    )
    .then(|| format!("karpenter.k8s.aws/instance-{rest}"))
}

/// [`label_values`] on the nodes of `auto_mode` (EKS Auto Mode) or self-managed Karpenter. Auto
/// Mode's nodes carry `eks.amazonaws.com/instance-*` instead of `karpenter.k8s.aws/instance-*`,
/// and run Linux only; each kind lacks the other's labels.
pub fn label_values_on(
    it: &InstanceType,
    zones: &BTreeSet<String>,
    key: &str,
    auto_mode: bool,
) -> Option<Vec<String>> {
    if !auto_mode {
        return label_values(it, zones, key);
    }
    if key == "kubernetes.io/os" {
        return Some(vec!["linux".to_string()]);
    }
    if key.starts_with("karpenter.k8s.aws/") {
        return None;
    }
    match auto_mode_as_provider_key(key) {
        Some(provider) => label_values(it, zones, &provider),
        None => label_values(it, zones, key),
    }
}

/// EC2's architecture name as the `kubernetes.io/arch` label value.
pub fn k8s_arch(ec2: &str) -> Option<&'static str> {
    match ec2 {
        "x86_64" => Some("amd64"),
        "arm64" => Some("arm64"),
        _ => None,
    }
}

/// Whether a label with `have` values (empty: the label is absent) meets one requirement.
/// A multi-valued label (zones, capacity types) meets `In` when any value is allowed, because
/// Karpenter picks one of them at launch.
pub fn meets(have: &[String], req: &Requirement) -> bool {
    let number = |v: &str| v.parse::<i64>().ok();
    let bound = || req.values.first().and_then(|v| number(v));
    match req.operator.as_str() {
        "In" => have.iter().any(|h| req.values.contains(h)),
        "NotIn" => have.is_empty() || have.iter().any(|h| !req.values.contains(h)),
        "Exists" => !have.is_empty(),
        "DoesNotExist" => have.is_empty(),
        "Gt" => bound().is_some_and(|b| have.iter().filter_map(|h| number(h)).any(|h| h > b)),
        "Lt" => bound().is_some_and(|b| have.iter().filter_map(|h| number(h)).any(|h| h < b)),
        // An operator the API would have rejected: do not guess.
        _ => true,
    }
}

/// One step of narrowing the instance types down, and how many were left after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub what: String,
    pub left: usize,
}

/// The result of filtering a NodePool's instance types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Narrowing {
    pub steps: Vec<Step>,
    /// Up to a few instance types that survive every step.
    pub survivors: Vec<String>,
    /// Every instance type that survives, in the order they were given.
    pub launchable: Vec<String>,
    /// Requirements whose `minValues` the surviving types cannot meet.
    pub min_values_short: Vec<MinValuesShort>,
}

/// A key whose requirements ask for at least `min` distinct values among the instance types
/// a NodePool can launch, and the values those types actually have (each allowed by every
/// requirement on the key, as Karpenter counts them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinValuesShort {
    pub key: String,
    pub min: i64,
    pub values: Vec<String>,
}

impl Narrowing {
    /// The first step that left nothing, if any.
    pub fn emptied_by(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.left == 0)
    }
}

/// How a requirement reads in a finding: `kubernetes.io/arch In [arm64]`.
pub fn describe(req: &Requirement) -> String {
    if req.values.is_empty() {
        format!("{} {}", req.key, req.operator)
    } else {
        format!("{} {} [{}]", req.key, req.operator, req.values.join(", "))
    }
}

/// Filters `types` the way Karpenter would for one NodePool: offered in at least one of
/// `subnet_zones`, then each requirement in order, then launchable with one of `ami_arches`
/// (`kubernetes.io/arch` values; empty means the AMIs are unknown and do not filter).
pub fn narrow(
    types: &[InstanceType],
    offerings: &[InstanceTypeOffering],
    subnet_zones: &BTreeSet<String>,
    requirements: &[Requirement],
    ami_arches: &BTreeSet<String>,
) -> Narrowing {
    let mut offered: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for o in offerings {
        if subnet_zones.contains(&o.zone) {
            offered
                .entry(o.instance_type.as_str())
                .or_default()
                .insert(o.zone.clone());
        }
    }
    let mut left: Vec<(&InstanceType, &BTreeSet<String>)> = types
        .iter()
        .filter_map(|t| offered.get(t.instance_type.as_str()).map(|z| (t, z)))
        .collect();
    let zones: Vec<&str> = subnet_zones.iter().map(String::as_str).collect();
    let mut steps = vec![Step {
        what: format!("offered in the subnets' zones ({})", zones.join(", ")),
        left: left.len(),
    }];
    for req in requirements {
        left.retain(|(t, z)| match label_values(t, z, &req.key) {
            Some(have) => meets(&have, req),
            None => true,
        });
        steps.push(Step {
            what: describe(req),
            left: left.len(),
        });
    }
    if !ami_arches.is_empty() {
        left.retain(|(t, _)| {
            t.architectures
                .iter()
                .filter_map(|a| k8s_arch(a))
                .any(|a| ami_arches.contains(a))
        });
        let arches: Vec<&str> = ami_arches.iter().map(String::as_str).collect();
        steps.push(Step {
            what: format!("an AMI exists for the architecture ({})", arches.join(", ")),
            left: left.len(),
        });
    }
    let min_values_short = if left.is_empty() {
        // An empty set is its own finding; minValues cannot add to it.
        Vec::new()
    } else {
        min_values_short(&left, requirements)
    };
    let launchable: Vec<String> = left.iter().map(|(t, _)| t.instance_type.clone()).collect();
    Narrowing {
        steps,
        survivors: launchable.iter().take(5).cloned().collect(),
        launchable,
        min_values_short,
    }
}

/// The keys whose `minValues` the surviving types fall short of. Several requirements on one
/// key with `minValues` ask for the largest; a key karpdoctor does not model is not judged.
fn min_values_short(
    left: &[(&InstanceType, &BTreeSet<String>)],
    requirements: &[Requirement],
) -> Vec<MinValuesShort> {
    let mut wanted: BTreeMap<&str, i64> = BTreeMap::new();
    for r in requirements {
        if let Some(n) = r.min_values {
            let min = wanted.entry(r.key.as_str()).or_insert(n);
            *min = (*min).max(n);
        }
    }
    let mut short = Vec::new();
    for (key, min) in wanted {
        let on_key: Vec<&Requirement> = requirements.iter().filter(|r| r.key == key).collect();
        let mut values = BTreeSet::new();
        let mut modelled = true;
        for (t, zones) in left {
            let Some(have) = label_values(t, zones, key) else {
                modelled = false;
                break;
            };
            values.extend(
                have.into_iter()
                    .filter(|v| on_key.iter().all(|r| meets(std::slice::from_ref(v), r))),
            );
        }
        if modelled && (values.len() as i64) < min {
            short.push(MinValuesShort {
                key: key.to_string(),
                min,
                values: values.into_iter().collect(),
            });
        }
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(types: &[InstanceType], zones: &[&str]) -> Vec<InstanceTypeOffering> {
        types
            .iter()
            .flat_map(|t| {
                zones.iter().map(|z| InstanceTypeOffering {
                    instance_type: t.instance_type.clone(),
                    zone: z.to_string(),
                })
            })
            .collect()
    }

    #[test]
    fn arm64_with_t3_names_the_family_requirement() {
        let types = [
            InstanceType::nitro("t3.large", "x86_64", 2),
            InstanceType::nitro("t4g.large", "arm64", 2),
            InstanceType::nitro("m5.large", "x86_64", 2),
        ];
        let zones: BTreeSet<String> = ["us-west-2a".to_string()].into();
        let n = narrow(
            &types,
            &offered(&types, &["us-west-2a"]),
            &zones,
            &[
                Requirement::of("kubernetes.io/arch", "In", &["arm64"]),
                Requirement::of("karpenter.k8s.aws/instance-family", "In", &["t3"]),
            ],
            &BTreeSet::new(),
        );
        let lefts: Vec<usize> = n.steps.iter().map(|s| s.left).collect();
        assert_eq!(lefts, [3, 1, 0]);
        assert_eq!(
            n.emptied_by().map(|s| s.what.as_str()),
            Some("karpenter.k8s.aws/instance-family In [t3]")
        );
    }

    #[test]
    fn min_values_counts_distinct_allowed_values_of_the_survivors() {
        let types = [
            InstanceType::nitro("m5.large", "x86_64", 2),
            InstanceType::nitro("m5.xlarge", "x86_64", 4),
            InstanceType::nitro("c5.large", "x86_64", 2),
            InstanceType::nitro("r5.large", "x86_64", 2),
        ];
        let zones: BTreeSet<String> = ["us-west-2a".to_string(), "us-west-2b".to_string()].into();
        let with_min = |key: &str, op: &str, values: &[&str], n: i64| Requirement {
            min_values: Some(n),
            ..Requirement::of(key, op, values)
        };
        let run = |reqs: &[Requirement]| {
            narrow(
                &types,
                &offered(&types, &["us-west-2a", "us-west-2b"]),
                &zones,
                reqs,
                &BTreeSet::new(),
            )
        };
        // Three families survive: minValues 3 holds, 4 does not.
        let family = "karpenter.k8s.aws/instance-family";
        assert!(
            run(&[with_min(family, "Exists", &[], 3)])
                .min_values_short
                .is_empty()
        );
        let n = run(&[with_min(family, "Exists", &[], 4)]);
        assert_eq!(
            n.min_values_short,
            [MinValuesShort {
                key: family.into(),
                min: 4,
                values: vec!["c5".into(), "m5".into(), "r5".into()],
            }]
        );
        // Values a requirement on the key excludes do not count (zones are multi-valued).
        let zone = "topology.kubernetes.io/zone";
        let n = run(&[with_min(zone, "In", &["us-west-2a", "us-west-2c"], 2)]);
        assert_eq!(n.min_values_short[0].values, ["us-west-2a"]);
        // The largest minValues on a key applies; a key karpdoctor does not model is not judged.
        let n = run(&[
            with_min(family, "Exists", &[], 2),
            with_min(family, "NotIn", &["x1"], 5),
            with_min("example.com/team", "Exists", &[], 9),
        ]);
        assert_eq!(n.min_values_short.len(), 1);
        assert_eq!(n.min_values_short[0].min, 5);
    }

    #[test]
    fn labels_derived_from_the_name() {
        let z = BTreeSet::new();
        let t = InstanceType::nitro("c6gn.2xlarge", "arm64", 8);
        assert_eq!(
            label_values(&t, &z, "karpenter.k8s.aws/instance-category"),
            Some(vec!["c".into()])
        );
        assert_eq!(
            label_values(&t, &z, "karpenter.k8s.aws/instance-generation"),
            Some(vec!["6".into()])
        );
        assert_eq!(
            label_values(&t, &z, "karpenter.k8s.aws/instance-size"),
            Some(vec!["2xlarge".into()])
        );
        assert_eq!(label_values(&t, &z, "example.com/team"), None);
    }

    #[test]
    fn operators() {
        let have = vec!["6".to_string()];
        assert!(meets(&have, &Requirement::of("k", "Gt", &["5"])));
        assert!(!meets(&have, &Requirement::of("k", "Gt", &["6"])));
        assert!(meets(&have, &Requirement::of("k", "Lt", &["7"])));
        assert!(!meets(
            &have,
            &Requirement::of("k", "Gt", &["not-a-number"])
        ));
        assert!(meets(&have, &Requirement::of("k", "NotIn", &["5"])));
        assert!(!meets(&have, &Requirement::of("k", "DoesNotExist", &[])));
        assert!(meets(&[], &Requirement::of("k", "DoesNotExist", &[])));
        assert!(meets(
            &["a".into(), "b".into()],
            &Requirement::of("zone", "In", &["b"])
        ));
    }

    #[test]
    fn zones_without_offerings_and_ami_arches_filter() {
        let types = [
            InstanceType::nitro("m5.large", "x86_64", 2),
            InstanceType::nitro("m6g.large", "arm64", 2),
        ];
        let zones: BTreeSet<String> = ["us-west-2a".to_string()].into();
        let n = narrow(
            &types,
            &offered(&types, &["us-west-2b"]),
            &zones,
            &[],
            &BTreeSet::new(),
        );
        assert_eq!(n.steps[0].left, 0);
        let arches: BTreeSet<String> = ["arm64".to_string()].into();
        let n = narrow(
            &types,
            &offered(&types, &["us-west-2a"]),
            &zones,
            &[],
            &arches,
        );
        assert_eq!(n.survivors, ["m6g.large"]);
    }
}
