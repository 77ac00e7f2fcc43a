//! How many pod IPs the Amazon VPC CNI can give a node, against how many pods the node admits
//! (KD6007; rules and sources: docs/node-capacity.md §5). Karpenter never models prefix
//! delegation; the CNI's settings live in the `aws-node` DaemonSet's environment.

use k8s_openapi::api::apps::v1::DaemonSet;

use crate::facts::InstanceType;

/// The CNI plugin's message when ipamd has no address for a pod (cni:
/// `cmd/routed-eni-cni-plugin/cni.go`), inside the kubelet's `FailedCreatePodSandBox` event.
pub const IP_ERROR: &str = "failed to assign an IP address";

/// The `aws-node` settings that change how many addresses a node gets. Only literal values are
/// kept in facts; any other environment variable of any DaemonSet is dropped.
pub const CNI_ENV: &[&str] = &[
    "ENABLE_PREFIX_DELEGATION",
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG",
    "ENABLE_POD_ENI",
    "MAX_ENI",
    "ENABLE_IPv6",
    "WARM_ENI_TARGET",
    "WARM_IP_TARGET",
    "MINIMUM_IP_TARGET",
    "WARM_PREFIX_TARGET",
];

/// What the VPC CNI is set to do on every node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cni {
    pub prefix_delegation: bool,
    pub custom_networking: bool,
    pub pod_eni: bool,
    pub max_eni: Option<i64>,
    pub ipv6: bool,
}

/// As ipamd reads a boolean (Go's `strconv.ParseBool`); anything else is its default, false.
fn go_bool(v: Option<&str>) -> bool {
    matches!(v, Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
}

impl Cni {
    /// From `kube-system/aws-node`'s `aws-node` container; `None` when the cluster does not run
    /// the VPC CNI (another CNI assigns pod IPs by rules of its own).
    pub fn of(daemonsets: &[DaemonSet]) -> Option<Cni> {
        let ds = daemonsets.iter().find(|d| {
            d.metadata.namespace.as_deref() == Some("kube-system")
                && d.metadata.name.as_deref() == Some("aws-node")
        })?;
        let spec = ds.spec.as_ref()?.template.spec.as_ref()?;
        let container = spec
            .containers
            .iter()
            .find(|c| c.name == "aws-node")
            .or(spec.containers.first())?;
        let env = |name: &str| -> Option<&str> {
            container
                .env
                .iter()
                .flatten()
                .find(|e| e.name == name)?
                .value
                .as_deref()
        };
        Some(Cni {
            prefix_delegation: go_bool(env("ENABLE_PREFIX_DELEGATION")),
            custom_networking: go_bool(env("AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG")),
            pod_eni: go_bool(env("ENABLE_POD_ENI")),
            max_eni: env("MAX_ENI")
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0),
            ipv6: go_bool(env("ENABLE_IPv6")),
        })
    }
}

/// The addresses the CNI can give pods on one instance type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodIps {
    /// IPv4 addresses for pods that are not on the host network.
    pub ips: i64,
    /// Whether prefixes are used: delegation is on and the instance is Nitro or bare metal.
    pub prefixes: bool,
    /// Delegation is on, but the instance is neither Nitro nor bare metal, so ipamd falls back
    /// to secondary addresses.
    pub prefix_fallback: bool,
    /// ENIs left to pods (custom networking and the trunk ENI of pod ENIs take one).
    pub enis: i64,
}

/// What the CNI can supply on `it`: ENIs (less one for custom networking or pod ENIs, capped by
/// `MAX_ENI`) × (IPv4 per ENI − 1), × 16 with prefixes. `None` when the type's counts are not
/// known.
pub fn pod_ips(it: &InstanceType, cni: &Cni) -> Option<PodIps> {
    let per = it.ipv4_per_eni?;
    let mut enis = it.max_enis?;
    if cni.custom_networking || cni.pod_eni {
        enis -= 1;
    }
    if let Some(max) = cni.max_eni {
        enis = enis.min(max);
    }
    let nitro = it.hypervisor == "nitro" || it.bare_metal;
    let prefixes = cni.prefix_delegation && nitro;
    let ips = enis.max(0) * (per - 1).max(0) * if prefixes { 16 } else { 1 };
    Some(PodIps {
        ips,
        prefixes,
        prefix_fallback: cni.prefix_delegation && !nitro,
        enis,
    })
}

/// The pods per node the EKS max-pods calculator recommends with prefix delegation on:
/// ENIs × ((IPv4 per ENI − 1) × 16) + 2, capped at 110 below 30 vCPUs and 250 from there
/// (amazon-eks-ami `max-pods-calculator.sh`).
pub fn prefix_max_pods(it: &InstanceType) -> Option<i64> {
    let raw = it.max_enis? * ((it.ipv4_per_eni? - 1) * 16) + 2;
    Some(raw.min(if it.vcpus < 30 { 110 } else { 250 }))
}

/// The secondary-address figure, Karpenter's default pods per node: ENIs × (IPv4 per ENI − 1) + 2.
pub fn secondary_max_pods(it: &InstanceType) -> Option<i64> {
    Some(it.max_enis? * (it.ipv4_per_eni? - 1) + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(name: &str, vcpus: i64, enis: i64, per: i64, hypervisor: &str) -> InstanceType {
        InstanceType {
            instance_type: name.into(),
            vcpus,
            hypervisor: hypervisor.into(),
            max_enis: Some(enis),
            ipv4_per_eni: Some(per),
            ..InstanceType::default()
        }
    }

    #[test]
    fn secondary_addresses_follow_the_enis() {
        // aws#3903: t3.medium, 3 ENIs × 6 addresses: 15 pod IPs, 17 pods per node.
        let t3 = it("t3.medium", 2, 3, 6, "nitro");
        let ips = pod_ips(&t3, &Cni::default()).unwrap();
        assert_eq!((ips.ips, ips.prefixes), (15, false));
        assert_eq!(secondary_max_pods(&t3), Some(17));
    }

    #[test]
    fn prefixes_multiply_by_sixteen_on_nitro_only() {
        let pd = Cni {
            prefix_delegation: true,
            ..Cni::default()
        };
        let m5 = it("m5.large", 2, 3, 10, "nitro");
        assert_eq!(pod_ips(&m5, &pd).unwrap().ips, 432);
        assert_eq!(prefix_max_pods(&m5), Some(110));
        // aws#6102: c7g.medium, 2 ENIs × 4 addresses: the calculator's 98.
        assert_eq!(
            prefix_max_pods(&it("c7g.medium", 1, 2, 4, "nitro")),
            Some(98)
        );
        let xen = it("m4.large", 2, 2, 10, "xen");
        let ips = pod_ips(&xen, &pd).unwrap();
        assert_eq!(
            (ips.ips, ips.prefixes, ips.prefix_fallback),
            (18, false, true)
        );
    }

    #[test]
    fn custom_networking_and_max_eni_take_enis_away() {
        let cni = Cni {
            custom_networking: true,
            max_eni: Some(1),
            ..Cni::default()
        };
        let m5 = it("m5.large", 2, 3, 10, "nitro");
        assert_eq!(pod_ips(&m5, &cni).unwrap().ips, 9);
    }

    #[test]
    fn every_cni_setting_survives_the_scrub() {
        // Listed objects are scrubbed before they are cut down: a name missing from KEPT_ENV
        // would reach the checks without its value.
        for name in CNI_ENV {
            assert!(crate::model::KEPT_ENV.binary_search(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn booleans_read_as_go_reads_them() {
        assert!(go_bool(Some("True")) && go_bool(Some("1")));
        assert!(!go_bool(Some("yes")) && !go_bool(None));
    }
}
