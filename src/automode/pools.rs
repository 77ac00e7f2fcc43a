//! Whether anything serves a NodePool on a cluster where EKS Auto Mode runs compute
//! (docs/auto-mode.md §7.4). Auto Mode's controller serves the pools of the `eks.amazonaws.com`
//! NodeClass, the self-managed controller those of `karpenter.k8s.aws`; each ignores the other's
//! (kubernetes-sigs/karpenter#1818), so a pool of a group nothing runs stays empty and quiet.

use std::collections::BTreeSet;

use crate::facts::{InstanceType, InstanceTypeOffering};
use crate::model::{AutoNodeClass, NodePool, Requirement, managed_by_eks};
use crate::requirements::{Narrowing, Step, auto_mode_as_provider_key, meets, narrow};

/// The self-managed provider's label domain: Auto Mode rejects it on its pools ("label is
/// restricted", `NodePoolValidationFailed`; docs/auto-mode.md §2.4) and names the same labels
/// `eks.amazonaws.com/*`.
pub const SELF_MANAGED_DOMAIN: &str = "karpenter.k8s.aws";

/// Why nothing launches for a pool.
#[derive(Clone, Debug, PartialEq)]
pub enum Unserved {
    /// The pool names Auto Mode's NodeClass, and the cluster's Auto Mode compute is off.
    ComputeOff,
    /// The pool names an EC2NodeClass, and no self-managed Karpenter runs beside Auto Mode.
    NoController,
    /// Requirement keys or template labels in Karpenter's own AWS domain on an Auto Mode pool.
    RestrictedKeys(Vec<String>),
    /// The `eks.amazonaws.com` NodeClass the pool names does not exist; `builtin_off` when it is
    /// `default` and no built-in pool is enabled, the only way EKS creates it.
    NodeClassMissing { name: String, builtin_off: bool },
}

/// The keys of `pool` (requirements and template labels) in [`SELF_MANAGED_DOMAIN`].
pub fn restricted_keys(pool: &NodePool) -> Vec<String> {
    let template = &pool.spec.template;
    let keys = template
        .spec
        .requirements
        .iter()
        .map(|r| r.key.as_str())
        .chain(template.metadata.labels.keys().map(String::as_str));
    let mut out: Vec<String> = keys
        .filter(|k| {
            let domain = k.split_once('/').map_or("", |(d, _)| d);
            domain == SELF_MANAGED_DOMAIN || domain.ends_with(".karpenter.k8s.aws")
        })
        .map(str::to_string)
        .collect();
    out.dedup();
    out
}

/// Auto Mode launches only types of more than one vCPU, none of the nano, micro or small sizes
/// (an AWS maintainer on aws/containers-roadmap#2516), and only Linux.
pub fn auto_mode_launches(it: &InstanceType) -> bool {
    let size = it.instance_type.split_once('.').map_or("", |(_, s)| s);
    it.vcpus > 1 && !matches!(size, "nano" | "micro" | "small")
}

/// What the rule of [`auto_mode_launches`] reads as a narrowing step.
pub const AUTO_MODE_RULE: &str =
    "launched by Auto Mode (more than 1 vCPU; no nano, micro or small size)";

/// Narrows the region's instance types by the pool's requirements, then by what Auto Mode
/// launches. Zones are every zone of the offerings: the NodeClass's subnets are not resolved
/// here, so a zone requirement empties the set only when the region has no such zone.
pub fn narrow_auto_mode(
    pool: &NodePool,
    types: &[InstanceType],
    offerings: &[InstanceTypeOffering],
) -> Narrowing {
    let requirements = &pool.spec.template.spec.requirements;
    // Auto Mode runs only Linux: a pool that excludes it launches nothing, whatever the types.
    let linux = vec!["linux".to_string()];
    if let Some(os) = requirements
        .iter()
        .find(|r| r.key == "kubernetes.io/os" && !meets(&linux, r))
    {
        return Narrowing {
            steps: vec![Step {
                what: format!(
                    "{} (Auto Mode runs Linux only)",
                    crate::requirements::describe(os)
                ),
                left: 0,
            }],
            survivors: Vec::new(),
            launchable: Vec::new(),
            min_values_short: Vec::new(),
        };
    }
    let translated: Vec<Requirement> = requirements
        .iter()
        .filter(|r| r.key != "kubernetes.io/os")
        .map(|r| Requirement {
            key: auto_mode_as_provider_key(&r.key).unwrap_or_else(|| r.key.clone()),
            ..r.clone()
        })
        .collect();
    let zones: BTreeSet<String> = offerings.iter().map(|o| o.zone.clone()).collect();
    let mut n = narrow(types, offerings, &zones, &translated, &BTreeSet::new());
    // Steps read in the pool's own terms.
    let provider = format!("{SELF_MANAGED_DOMAIN}/instance-");
    for step in &mut n.steps {
        step.what = step.what.replace(&provider, "eks.amazonaws.com/instance-");
    }
    if let Some(first) = n.steps.first_mut() {
        let zones: Vec<&str> = zones.iter().map(String::as_str).collect();
        first.what = format!("offered in the region ({})", zones.join(", "));
    }
    if n.emptied_by().is_none() {
        n.launchable.retain(|name| {
            types
                .iter()
                .find(|t| &t.instance_type == name)
                .is_some_and(auto_mode_launches)
        });
        n.survivors = n.launchable.iter().take(5).cloned().collect();
        n.steps.push(Step {
            what: AUTO_MODE_RULE.to_string(),
            left: n.launchable.len(),
        });
        if n.launchable.is_empty() {
            n.min_values_short.clear();
        }
    }
    n
}

/// How an EKS built-in pool differs from what the user guide documents EKS creates
/// ("Enable or Disable Built-in NodePools": both on the `default` NodeClass, on-demand only,
/// instance categories C, M and R of generation 5 or newer, Linux; `system` amd64 and arm64
/// with the `CriticalAddonsOnly` taint, `general-purpose` amd64 without taints). EKS owns these
/// objects and overwrites edits to them (terraform-aws-eks#3241: "Your config will appear to
/// work until it is overwritten by AWS"), so a difference is an edit that will be lost. Only
/// the documented properties are compared; fields the guide says nothing of (limits,
/// disruption) are not. Empty for a pool that is not EKS's built-in one.
pub fn builtin_edits(pool: &NodePool) -> Vec<String> {
    let name = pool.name();
    if !matches!(name, "general-purpose" | "system") || !managed_by_eks(&pool.metadata) {
        return Vec::new();
    }
    let spec = &pool.spec.template.spec;
    let mut out = Vec::new();
    if pool.class_name() != Some("default") {
        out.push(format!(
            "nodeClassRef names {} instead of default",
            pool.class_name().unwrap_or("nothing")
        ));
    }
    let values = |key: &str| -> Option<BTreeSet<String>> {
        spec.requirements
            .iter()
            .find(|r| r.key == key && r.operator == "In")
            .map(|r| r.values.iter().cloned().collect())
    };
    let set = |v: &[&str]| -> BTreeSet<String> { v.iter().map(|s| s.to_string()).collect() };
    let arch: &[&str] = if name == "system" {
        &["amd64", "arm64"]
    } else {
        &["amd64"]
    };
    for (key, want) in [
        ("karpenter.sh/capacity-type", &["on-demand"][..]),
        ("eks.amazonaws.com/instance-category", &["c", "m", "r"][..]),
        ("kubernetes.io/arch", arch),
    ] {
        match values(key) {
            Some(have) if have == set(want) => {}
            Some(have) => out.push(format!(
                "{key} is {} instead of {}",
                have.into_iter().collect::<Vec<_>>().join(", "),
                want.join(", ")
            )),
            None => out.push(format!("{key} In [{}] is gone", want.join(", "))),
        }
    }
    let generation = spec
        .requirements
        .iter()
        .find(|r| r.key == "eks.amazonaws.com/instance-generation");
    if !generation.is_some_and(|r| r.operator == "Gt" && r.values == ["4"]) {
        out.push("eks.amazonaws.com/instance-generation is no longer Gt 4".to_string());
    }
    let critical = spec
        .taints
        .iter()
        .any(|t| t.key == "CriticalAddonsOnly" && t.effect == "NoSchedule");
    let others = spec.taints.iter().any(|t| t.key != "CriticalAddonsOnly");
    if name == "system" && !critical {
        out.push("the CriticalAddonsOnly:NoSchedule taint is gone".to_string());
    }
    if (name == "general-purpose" && !spec.taints.is_empty()) || (name == "system" && others) {
        out.push("it has taints EKS does not set".to_string());
    }
    out
}

/// The facts a pool's judgement needs, read by the check.
pub struct Cluster<'a> {
    /// Auto Mode compute is on (`computeConfig.enabled`).
    pub compute: bool,
    /// `computeConfig.nodePools`: the built-in pools enabled.
    pub builtin_pools: &'a [String],
    /// A self-managed Karpenter controller runs.
    pub controller: bool,
    pub nodeclasses: &'a [AutoNodeClass],
}

/// What keeps `pool` from being served, apart from its requirements ([`narrow_auto_mode`]);
/// `None` when something serves it.
pub fn unserved(pool: &NodePool, cluster: &Cluster<'_>) -> Option<Unserved> {
    if pool.is_v1beta1() {
        return None;
    }
    let group = pool.class_group();
    if !pool.is_auto_mode() {
        // A pool of Karpenter's EC2NodeClass is the self-managed controller's; without one it is
        // KD1001's unless Auto Mode runs, where nothing else is expected to.
        let theirs = group == Some(SELF_MANAGED_DOMAIN);
        return (theirs && cluster.compute && !cluster.controller)
            .then_some(Unserved::NoController);
    }
    if !cluster.compute {
        return Some(Unserved::ComputeOff);
    }
    let restricted = restricted_keys(pool);
    if !restricted.is_empty() {
        return Some(Unserved::RestrictedKeys(restricted));
    }
    let name = pool.class_name().unwrap_or_default().to_string();
    if !cluster.nodeclasses.iter().any(|c| c.name() == name) {
        return Some(Unserved::NodeClassMissing {
            builtin_off: name == "default" && cluster.builtin_pools.is_empty(),
            name,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeClassRef;

    fn pool(group: &str, name: &str, reqs: Vec<Requirement>) -> NodePool {
        let mut p = NodePool {
            api_version: "karpenter.sh/v1".into(),
            ..Default::default()
        };
        p.metadata.name = Some("apps".into());
        p.spec.template.spec.node_class_ref = Some(NodeClassRef {
            group: Some(group.into()),
            kind: Some("NodeClass".into()),
            name: Some(name.into()),
            api_version: None,
        });
        p.spec.template.spec.requirements = reqs;
        p
    }

    fn class(name: &str) -> AutoNodeClass {
        let mut c = AutoNodeClass::default();
        c.metadata.name = Some(name.into());
        c
    }

    fn it(name: &str, vcpus: i64) -> InstanceType {
        InstanceType {
            instance_type: name.into(),
            architectures: vec!["x86_64".into()],
            vcpus,
            usage_classes: vec!["on-demand".into(), "spot".into()],
            ..Default::default()
        }
    }

    fn offered(names: &[&str]) -> Vec<InstanceTypeOffering> {
        names
            .iter()
            .map(|n| InstanceTypeOffering {
                instance_type: n.to_string(),
                zone: "us-west-2a".into(),
            })
            .collect()
    }

    #[test]
    fn small_sizes_and_one_vcpu_are_never_launched() {
        let types = vec![it("t3.small", 2), it("t3.medium", 2), it("t2.medium", 1)];
        let offers = offered(&["t3.small", "t3.medium", "t2.medium"]);
        let only_small = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of(
                "node.kubernetes.io/instance-type",
                "In",
                &["t3.small"],
            )],
        );
        let n = narrow_auto_mode(&only_small, &types, &offers);
        assert_eq!(
            n.emptied_by().map(|s| s.what.as_str()),
            Some(AUTO_MODE_RULE)
        );
        let medium = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of(
                "eks.amazonaws.com/instance-size",
                "In",
                &["medium"],
            )],
        );
        let n = narrow_auto_mode(&medium, &types, &offers);
        assert_eq!(n.launchable, vec!["t3.medium".to_string()]);
    }

    #[test]
    fn auto_mode_keys_filter_as_the_provider_keys_do_and_windows_excludes_everything() {
        let types = vec![it("c5.large", 2), it("m5.large", 2)];
        let offers = offered(&["c5.large", "m5.large"]);
        let p = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of(
                "eks.amazonaws.com/instance-category",
                "In",
                &["r"],
            )],
        );
        let n = narrow_auto_mode(&p, &types, &offers);
        assert_eq!(
            n.emptied_by().map(|s| s.what.as_str()),
            Some("eks.amazonaws.com/instance-category In [r]")
        );
        let w = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of("kubernetes.io/os", "In", &["windows"])],
        );
        assert!(narrow_auto_mode(&w, &types, &offers).emptied_by().is_some());
        let l = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of("kubernetes.io/os", "In", &["linux"])],
        );
        assert_eq!(narrow_auto_mode(&l, &types, &offers).launchable.len(), 2);
    }

    #[test]
    fn each_pool_is_served_by_the_controller_of_its_group() {
        let classes = [class("default")];
        let on = Cluster {
            compute: true,
            builtin_pools: &[],
            controller: false,
            nodeclasses: &classes,
        };
        let auto = pool("eks.amazonaws.com", "default", vec![]);
        assert_eq!(unserved(&auto, &on), None);
        let ec2 = pool("karpenter.k8s.aws", "default", vec![]);
        assert_eq!(unserved(&ec2, &on), Some(Unserved::NoController));
        let beside = Cluster {
            controller: true,
            ..on
        };
        assert_eq!(unserved(&ec2, &beside), None);
        let off = Cluster {
            compute: false,
            ..on
        };
        assert_eq!(unserved(&auto, &off), Some(Unserved::ComputeOff));
        // Without Auto Mode a missing controller is not this judgement's.
        assert_eq!(unserved(&ec2, &off), None);
        let missing = pool("eks.amazonaws.com", "default1", vec![]);
        assert_eq!(
            unserved(&missing, &on),
            Some(Unserved::NodeClassMissing {
                name: "default1".into(),
                builtin_off: false
            })
        );
        let none = Cluster {
            nodeclasses: &[],
            ..on
        };
        assert_eq!(
            unserved(&auto, &none),
            Some(Unserved::NodeClassMissing {
                name: "default".into(),
                builtin_off: true
            })
        );
        let restricted = pool(
            "eks.amazonaws.com",
            "default",
            vec![Requirement::of(
                "karpenter.k8s.aws/instance-category",
                "In",
                &["c"],
            )],
        );
        assert_eq!(
            unserved(&restricted, &on),
            Some(Unserved::RestrictedKeys(vec![
                "karpenter.k8s.aws/instance-category".into()
            ]))
        );
    }

    #[test]
    fn an_edited_builtin_pool_is_told_apart_from_one_as_eks_makes_it() {
        let mut gp = pool(
            "eks.amazonaws.com",
            "default",
            vec![
                Requirement::of("karpenter.sh/capacity-type", "In", &["on-demand"]),
                Requirement::of(
                    "eks.amazonaws.com/instance-category",
                    "In",
                    &["c", "m", "r"],
                ),
                Requirement::of("eks.amazonaws.com/instance-generation", "Gt", &["4"]),
                Requirement::of("kubernetes.io/arch", "In", &["amd64"]),
                Requirement::of("kubernetes.io/os", "In", &["linux"]),
            ],
        );
        gp.metadata.name = Some("general-purpose".into());
        // Not labelled as EKS's: a pool of one's own that happens to share the name.
        assert!(builtin_edits(&gp).is_empty());
        gp.metadata.labels = Some(
            [(
                "app.kubernetes.io/managed-by".to_string(),
                "eks".to_string(),
            )]
            .into_iter()
            .collect(),
        );
        assert!(builtin_edits(&gp).is_empty(), "{:?}", builtin_edits(&gp));
        gp.spec.template.spec.requirements[0].values = vec!["spot".into(), "on-demand".into()];
        assert_eq!(
            builtin_edits(&gp),
            ["karpenter.sh/capacity-type is on-demand, spot instead of on-demand"]
        );
    }
}
