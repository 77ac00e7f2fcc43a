//! What a node of one instance type offers pods, as Karpenter estimates it before launch
//! (aws/karpenter-provider-aws `pkg/providers/instancetype/types.go`; the worked numbers in
//! docs/scheduling.md §3): capacity less the VM's memory overhead, then less kube-reserved,
//! system-reserved and the hard eviction threshold. m5.large: 1930m CPU, 6903Mi, 29 pods.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::facts::InstanceType;
use crate::quantity::Quantity;

/// Resources by name (`cpu`, `memory`, `pods`, extended resources), as quantities.
pub type Resources = BTreeMap<String, Quantity>;

/// The settings that change the estimate: the EC2NodeClass's `spec.kubelet` and
/// `spec.amiFamily` (from its alias), and the controller's environment.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSettings {
    /// `AL2`, `AL2023`, `Bottlerocket`, `Windows2019`, `Custom`, … (empty: AL2023, v1's default).
    pub ami_family: String,
    pub max_pods: Option<i64>,
    pub pods_per_core: Option<i64>,
    pub kube_reserved: BTreeMap<String, Quantity>,
    pub system_reserved: BTreeMap<String, Quantity>,
    /// `evictionHard["memory.available"]`: a quantity, or a percentage of memory capacity.
    pub eviction_memory: Option<String>,
    /// `VM_MEMORY_OVERHEAD_PERCENT` (default 0.075).
    pub vm_memory_overhead: f64,
    /// `RESERVED_ENIS` (default 0).
    pub reserved_enis: i64,
}

impl Default for NodeSettings {
    fn default() -> Self {
        NodeSettings {
            ami_family: String::new(),
            max_pods: None,
            pods_per_core: None,
            kube_reserved: BTreeMap::new(),
            system_reserved: BTreeMap::new(),
            eviction_memory: None,
            vm_memory_overhead: 0.075,
            reserved_enis: 0,
        }
    }
}

impl NodeSettings {
    /// From an EC2NodeClass spec and the controller's environment values.
    pub fn from_class(
        spec: &BTreeMap<String, Value>,
        vm_memory_overhead: Option<&str>,
        reserved_enis: Option<&str>,
    ) -> Self {
        let kubelet = spec.get("kubelet");
        let int = |name: &str| kubelet.and_then(|k| k.get(name)).and_then(Value::as_i64);
        let quantities = |name: &str| -> BTreeMap<String, Quantity> {
            kubelet
                .and_then(|k| k.get(name))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?)?)))
                .collect()
        };
        let alias_family = spec
            .get("amiSelectorTerms")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|t| t.get("alias").and_then(Value::as_str))
            .map(|a| a.split('@').next().unwrap_or(a).to_ascii_lowercase());
        let ami_family = match (spec.get("amiFamily").and_then(Value::as_str), alias_family) {
            (Some(f), _) => f.to_string(),
            (None, Some(a)) => match a.as_str() {
                "al2" => "AL2",
                "al2023" => "AL2023",
                "bottlerocket" => "Bottlerocket",
                "windows2019" => "Windows2019",
                "windows2022" => "Windows2022",
                "windows2025" => "Windows2025",
                _ => "",
            }
            .to_string(),
            (None, None) => String::new(),
        };
        NodeSettings {
            ami_family,
            max_pods: int("maxPods"),
            pods_per_core: int("podsPerCore"),
            kube_reserved: quantities("kubeReserved"),
            system_reserved: quantities("systemReserved"),
            eviction_memory: kubelet
                .and_then(|k| k.pointer("/evictionHard/memory.available"))
                .and_then(Value::as_str)
                .map(str::to_string),
            vm_memory_overhead: vm_memory_overhead
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| (0.0..1.0).contains(v))
                .unwrap_or(0.075),
            reserved_enis: reserved_enis
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|v| *v >= 0)
                .unwrap_or(0),
        }
    }

    fn is_windows(&self) -> bool {
        self.ami_family.starts_with("Windows")
    }

    fn is_bottlerocket(&self) -> bool {
        self.ami_family == "Bottlerocket"
    }
}

/// Pods per node from the VPC CNI's addresses: ENIs × (IPv4 per ENI − 1) + 2.
fn eni_pods(it: &InstanceType, reserved_enis: i64) -> Option<i64> {
    let enis = it.max_enis?.checked_sub(reserved_enis)?;
    let per = it.ipv4_per_eni?;
    (enis > 0 && per > 0).then(|| enis * (per - 1) + 2)
}

/// Karpenter's default kube-reserved CPU, in millicores: 6% of the first core, 1% of the
/// second, 0.5% of the next two, 0.25% of each one after.
fn reserved_cpu_milli(vcpus: i64) -> i64 {
    let tenths = |cores: i64, per_core_tenths: i64| cores.max(0) * per_core_tenths;
    // In tenths of a millicore, to keep 2.5m exact.
    let total = tenths(vcpus.min(1), 600)
        + tenths((vcpus - 1).clamp(0, 1), 100)
        + tenths((vcpus - 2).clamp(0, 2), 50)
        + tenths(vcpus - 4, 25);
    (total + 9) / 10
}

/// The capacity Karpenter expects of a node (before reservations): what limits count, and
/// the base of the allocatable estimate. `pods` is absent when the type's ENI counts are
/// unknown and no `maxPods` is set.
pub fn capacity(it: &InstanceType, settings: &NodeSettings) -> Resources {
    let mut out = Resources::new();
    out.insert("cpu".into(), Quantity::units(it.vcpus));
    let arm = it.architectures.iter().any(|a| a == "arm64");
    let base = it.memory_mib - if arm { 64 } else { 0 };
    let overhead = (base as f64 * settings.vm_memory_overhead).ceil() as i64;
    out.insert("memory".into(), Quantity::mebibytes(base - overhead));
    let pods = if let Some(max) = settings.max_pods {
        Some(max)
    } else if settings.is_windows() {
        Some(110)
    } else {
        eni_pods(it, settings.reserved_enis)
    };
    let pods = match (pods, settings.pods_per_core) {
        (Some(p), Some(per_core)) if per_core > 0 && !settings.is_bottlerocket() => {
            Some(p.min(per_core * it.vcpus))
        }
        (p, _) => p,
    };
    if let Some(p) = pods {
        out.insert("pods".into(), Quantity::units(p));
    }
    for (resource, count) in it.extended_resources() {
        out.insert(resource.into(), Quantity::units(count));
    }
    out
}

/// What pods may request on a node of this type: capacity less kube-reserved,
/// system-reserved and the hard memory eviction threshold.
pub fn allocatable(it: &InstanceType, settings: &NodeSettings) -> Resources {
    let mut out = capacity(it, settings);
    // kube-reserved memory follows the ENI pod count (with no ENIs reserved) on AL2, AL2023
    // and Custom even when maxPods is set; Bottlerocket and Windows use the final pod count.
    let reserve_pods = if settings.is_bottlerocket() || settings.is_windows() {
        out.get("pods").map(|p| p.as_units())
    } else {
        eni_pods(it, 0)
    };
    let mut reserved = Resources::new();
    reserved.insert("cpu".into(), Quantity::milli(reserved_cpu_milli(it.vcpus)));
    if let Some(p) = reserve_pods {
        reserved.insert("memory".into(), Quantity::mebibytes(11 * p + 255));
    }
    for (k, v) in &settings.kube_reserved {
        reserved.insert(k.clone(), *v);
    }
    for (k, v) in &settings.system_reserved {
        let sum = reserved
            .get(k)
            .and_then(|r| r.checked_add(*v))
            .unwrap_or(*v);
        reserved.insert(k.clone(), sum);
    }
    let memory = out.get("memory").copied().unwrap_or_default();
    let eviction =
        match settings.eviction_memory.as_deref() {
            Some(p) if p.ends_with('%') => p.trim_end_matches('%').parse::<f64>().ok().map(|pct| {
                Quantity::mebibytes((memory.as_mebibytes() as f64 * pct / 100.0) as i64)
            }),
            Some(q) => Quantity::parse(q),
            None => Some(Quantity::mebibytes(100)),
        }
        .unwrap_or(Quantity::mebibytes(100));
    let memory_reserved = reserved
        .get("memory")
        .and_then(|r| r.checked_add(eviction))
        .unwrap_or(eviction);
    reserved.insert("memory".into(), memory_reserved);
    for (k, v) in reserved {
        if let Some(have) = out.get_mut(&k) {
            *have = have.saturating_sub(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(name: &str, arch: &str, vcpus: i64, mib: i64, enis: i64, ips: i64) -> InstanceType {
        InstanceType {
            instance_type: name.into(),
            architectures: vec![arch.into()],
            vcpus,
            memory_mib: mib,
            gpus: 0,
            accelerators: None,
            usage_classes: vec!["on-demand".into()],
            hypervisor: "nitro".into(),
            bare_metal: false,
            max_enis: Some(enis),
            ipv4_per_eni: Some(ips),
        }
    }

    fn get(r: &Resources, k: &str) -> String {
        match r.get(k) {
            Some(q) if k == "memory" => format!("{}Mi", q.as_mebibytes()),
            Some(q) => q.to_string(),
            None => String::new(),
        }
    }

    #[test]
    fn karpenter_documents_these_numbers() {
        // aws/karpenter-provider-aws v1.14.1, website reference/instance-types.md.
        let s = NodeSettings::default();
        let m5 = allocatable(&it("m5.large", "x86_64", 2, 8192, 3, 10), &s);
        assert_eq!(
            (get(&m5, "cpu"), get(&m5, "memory"), get(&m5, "pods")),
            ("1930m".into(), "6903Mi".into(), "29".into())
        );
        let m5x = allocatable(&it("m5.xlarge", "x86_64", 4, 16384, 4, 15), &s);
        assert_eq!(
            (get(&m5x, "cpu"), get(&m5x, "memory"), get(&m5x, "pods")),
            ("3920m".into(), "14162Mi".into(), "58".into())
        );
        let m6g = allocatable(&it("m6g.large", "arm64", 2, 8192, 3, 10), &s);
        assert_eq!(get(&m6g, "memory"), "6844Mi");
    }

    #[test]
    fn reserved_cpu_by_cores() {
        assert_eq!(
            [2, 4, 8, 16].map(reserved_cpu_milli),
            [70, 80, 90, 110],
            "docs/scheduling.md §3"
        );
    }

    #[test]
    fn kubelet_settings_change_the_estimate() {
        let spec: BTreeMap<String, Value> = serde_json::from_value(serde_json::json!({
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "kubelet": {"maxPods": 110, "podsPerCore": 10, "systemReserved": {"memory": "1Gi"}}
        }))
        .unwrap();
        let s = NodeSettings::from_class(&spec, None, None);
        assert_eq!(s.ami_family, "Bottlerocket");
        let a = allocatable(&it("m5.large", "x86_64", 2, 8192, 3, 10), &s);
        // podsPerCore is not applied on Bottlerocket; kube-reserved follows 110 pods there.
        assert_eq!(get(&a, "pods"), "110");
        assert_eq!(
            get(&a, "memory"),
            format!("{}Mi", 7577 - (11 * 110 + 255) - 1024 - 100)
        );
        let mut unknown = it("x.large", "x86_64", 2, 8192, 3, 10);
        unknown.max_enis = None;
        assert!(!allocatable(&unknown, &NodeSettings::default()).contains_key("pods"));
    }

    #[test]
    fn accelerators_are_advertised_per_manufacturer() {
        use crate::facts::Accelerators;
        // g4ad: AMD GPUs are amd.com/gpu, never nvidia.com/gpu (aws/karpenter-provider-aws#7754:
        // a pod requesting nvidia.com/gpu fits no g4ad type).
        let mut g4ad = it("g4ad.2xlarge", "x86_64", 8, 32768, 2, 8);
        g4ad.gpus = 1;
        g4ad.accelerators = Some(Accelerators {
            amd_gpus: 1,
            gpu_entries: 1,
            ..Accelerators::default()
        });
        let c = capacity(&g4ad, &NodeSettings::default());
        assert_eq!(get(&c, "amd.com/gpu"), "1");
        assert_eq!(get(&c, "nvidia.com/gpu"), "");
        // inf2.xlarge: one Neuron device of two cores.
        let mut inf2 = it("inf2.xlarge", "x86_64", 4, 16384, 4, 15);
        inf2.accelerators = Some(Accelerators {
            neuron_devices: 1,
            neuron_cores: 2,
            ..Accelerators::default()
        });
        let c = capacity(&inf2, &NodeSettings::default());
        assert_eq!(get(&c, "aws.amazon.com/neuron"), "1");
        assert_eq!(get(&c, "aws.amazon.com/neuroncore"), "2");
        assert_eq!(inf2.gpu_count_label(), None);
        // A bundle recorded before accelerators were kept reads its GPUs as NVIDIA's.
        let mut old = it("g5.xlarge", "x86_64", 4, 16384, 4, 15);
        old.gpus = 1;
        assert_eq!(
            get(&capacity(&old, &NodeSettings::default()), "nvidia.com/gpu"),
            "1"
        );
        assert_eq!(old.gpu_count_label(), Some(1));
        // Two kinds of GPU: no instance-gpu-count label.
        let mut mixed = g4ad.clone();
        mixed.accelerators = Some(Accelerators {
            nvidia_gpus: 1,
            amd_gpus: 1,
            gpu_entries: 2,
            ..Accelerators::default()
        });
        assert_eq!(mixed.gpu_count_label(), None);
    }
}
