//! The values of AWS facts: karpdoctor's own serde types, holding only what checks read
//! (Kubernetes facts keep the API server's objects, typed with k8s-openapi or `crate::model`).

use serde::{Deserialize, Serialize};

/// `sts:GetCallerIdentity`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallerIdentity {
    pub account: String,
    pub arn: String,
}

/// The parts of `eks:DescribeCluster` karpdoctor reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EksCluster {
    pub name: String,
    pub arn: String,
    pub version: String,
    pub endpoint: String,
    pub status: String,
    pub oidc_issuer: Option<String>,
    pub authentication_mode: Option<String>,
    pub vpc_id: Option<String>,
    pub cluster_security_group_id: Option<String>,
    /// `resourcesVpcConfig.endpointPublicAccess`; `None` in bundles recorded before it was kept.
    pub endpoint_public_access: Option<bool>,
    /// `resourcesVpcConfig.endpointPrivateAccess`; `None` when not recorded.
    pub endpoint_private_access: Option<bool>,
    /// `resourcesVpcConfig.publicAccessCidrs`; `None` when not recorded.
    pub public_access_cidrs: Option<Vec<String>>,
    /// `resourcesVpcConfig.securityGroupIds`: the extra control-plane groups given at creation
    /// (terraform-aws-eks puts its own cluster group here).
    pub security_group_ids: Vec<String>,
    /// `resourcesVpcConfig.subnetIds`: where the control plane's ENIs live.
    pub subnet_ids: Vec<String>,
    /// `kubernetesNetworkConfig.serviceIpv4Cidr`.
    pub service_ipv4_cidr: Option<String>,
    /// `kubernetesNetworkConfig.ipFamily`: `ipv4` or `ipv6`.
    pub ip_family: Option<String>,
    /// `roleArn`: the cluster IAM role, which EKS Auto Mode acts as; `None` in bundles recorded
    /// before it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// `computeConfig`: EKS Auto Mode's compute (docs/auto-mode.md §1.1); `None` when the
    /// response has none (a cluster that never enabled it, or a bundle recorded before it was
    /// kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_config: Option<ComputeConfig>,
    /// `storageConfig.blockStorage.enabled`: Auto Mode's block storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_storage: Option<bool>,
    /// `kubernetesNetworkConfig.elasticLoadBalancing.enabled`: Auto Mode's load balancing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elastic_load_balancing: Option<bool>,
}

/// `computeConfig` of `eks:DescribeCluster`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ComputeConfig {
    pub enabled: bool,
    /// The built-in NodePools EKS runs: `general-purpose`, `system`.
    pub node_pools: Vec<String>,
    /// The node role of the built-in pools (and of the `default` NodeClass).
    pub node_role_arn: Option<String>,
}

impl EksCluster {
    /// Auto Mode runs the cluster's compute.
    pub fn auto_mode(&self) -> bool {
        self.compute_config.as_ref().is_some_and(|c| c.enabled)
    }
}

/// The parts of `iam:GetRole` karpdoctor reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IamRole {
    pub name: String,
    pub arn: String,
    pub path: String,
    /// As IAM returns it (URL-encoded); read with `iam::policy::PolicyDocument::parse`.
    pub trust_policy: String,
    pub permissions_boundary_arn: Option<String>,
}

/// The parts of `eks:DescribeNodegroup` karpdoctor reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EksNodegroup {
    pub name: String,
    pub node_role: String,
    pub status: String,
}

/// The parts of `eks:DescribeAddon` karpdoctor reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EksAddon {
    pub name: String,
    pub status: String,
    pub version: String,
}

/// One IAM OIDC identity provider.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OidcProvider {
    pub arn: String,
    /// As IAM returns it: without `https://`.
    pub url: String,
    pub client_ids: Vec<String>,
}

/// One EKS Pod Identity association.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodIdentityAssociation {
    pub association_id: String,
    pub namespace: String,
    pub service_account: String,
    pub role_arn: String,
}

/// One subnet (`ec2:DescribeSubnets`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Subnet {
    pub subnet_id: String,
    pub vpc_id: String,
    pub availability_zone: String,
    pub availability_zone_id: String,
    pub cidr_block: String,
    pub available_ip_address_count: i64,
    pub tags: std::collections::BTreeMap<String, String>,
    /// `MapPublicIpOnLaunch`; `None` in bundles recorded before it was kept (unknown, not false).
    pub map_public_ip_on_launch: Option<bool>,
}

/// One security group (`ec2:DescribeSecurityGroups`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityGroup {
    pub group_id: String,
    pub group_name: String,
    pub vpc_id: String,
    pub tags: std::collections::BTreeMap<String, String>,
    /// Inbound rules (`IpPermissions`); `None` in bundles recorded before rules were kept,
    /// which is "not recorded", never "no rules".
    pub ip_permissions: Option<Vec<SgPermission>>,
    /// Outbound rules (`IpPermissionsEgress`); `None` when not recorded.
    pub ip_permissions_egress: Option<Vec<SgPermission>>,
}

/// One permission of a security group, as `DescribeSecurityGroups` returns it: a protocol and
/// port range, and every source or destination it admits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SgPermission {
    /// `tcp`, `udp`, `icmp`, a protocol number, or `-1` for all.
    pub ip_protocol: String,
    /// Absent for `-1`; `-1` for ICMP's "all types".
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub ip_ranges: Vec<String>,
    pub ipv6_ranges: Vec<String>,
    pub prefix_list_ids: Vec<String>,
    pub groups: Vec<SgGroupRef>,
}

/// A security group named by a rule (`UserIdGroupPairs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SgGroupRef {
    pub group_id: String,
    pub user_id: Option<String>,
    /// Set when the group is in a peered VPC.
    pub vpc_peering_connection_id: Option<String>,
}

/// One AMI (`ec2:DescribeImages`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Image {
    pub image_id: String,
    pub name: String,
    /// `x86_64` or `arm64`, as EC2 spells it.
    pub architecture: String,
    pub state: String,
    pub owner_id: String,
    pub creation_date: Option<String>,
    pub deprecation_time: Option<String>,
    pub tags: std::collections::BTreeMap<String, String>,
    /// The image's EBS volumes (`BlockDeviceMappings[].Ebs`).
    pub block_devices: Vec<ImageBlockDevice>,
}

/// One EBS volume of an image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageBlockDevice {
    pub device_name: Option<String>,
    pub snapshot_id: Option<String>,
    pub encrypted: Option<bool>,
}

/// One EBS snapshot (`ec2:DescribeSnapshots`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Snapshot {
    pub snapshot_id: String,
    pub encrypted: bool,
    /// The KMS key's ARN, for an encrypted snapshot.
    pub kms_key_id: Option<String>,
    pub owner_id: String,
}

/// `iam:GetInstanceProfile`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceProfile {
    pub name: String,
    pub arn: String,
    pub path: String,
    /// Role ARNs (an instance profile holds at most one).
    pub roles: Vec<String>,
}

/// One managed policy attached to a role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AttachedPolicy {
    pub policy_name: String,
    pub policy_arn: String,
}

/// One EKS access entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AccessEntry {
    pub principal_arn: String,
    /// `STANDARD`, `EC2_LINUX`, `EC2_WINDOWS`, `FARGATE_LINUX`, `HYBRID_LINUX`, `EC2`.
    #[serde(rename = "type")]
    pub kind: String,
    pub username: String,
    pub kubernetes_groups: Vec<String>,
}

/// One access policy associated with an access entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AssociatedAccessPolicy {
    /// `arn:aws:eks::aws:cluster-access-policy/<Name>`.
    pub policy_arn: String,
    /// `cluster` or `namespace`.
    pub scope: String,
    /// The namespaces of a `namespace` scope.
    pub namespaces: Vec<String>,
}

/// The account's EBS encryption defaults in the region.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EbsDefaults {
    pub encrypted_by_default: bool,
    /// A key id, ARN or alias; `alias/aws/ebs` is the AWS managed key.
    pub default_kms_key_id: String,
}

/// A KMS key and its default key policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KmsKey {
    pub key_id: String,
    pub arn: String,
    /// `AWS` or `CUSTOMER`.
    pub key_manager: String,
    /// `Enabled`, `Disabled`, `PendingDeletion`, …
    pub key_state: String,
    pub policy: String,
}

/// One EC2 instance as `ec2:DescribeInstances` tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Ec2Instance {
    pub instance_id: String,
    /// `pending`, `running`, `shutting-down`, `terminated`, …
    pub state: String,
    /// `StateReason.Code` (`Server.InternalError`, `Client.UserInitiatedShutdown`, …).
    pub state_reason_code: Option<String>,
    /// `StateReason.Message` (`Client.InternalError: Client error on launch`).
    pub state_reason_message: Option<String>,
    pub launch_time: Option<String>,
}

/// One grant on a KMS key (`kms:ListGrants`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KmsGrant {
    pub grant_id: String,
    pub grantee_principal: String,
    /// `Decrypt`, `CreateGrant`, …
    pub operations: Vec<String>,
    /// Whether the grant holds only under an encryption context (`Constraints`).
    pub constrained: bool,
}

/// One EKS Fargate profile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FargateProfile {
    pub name: String,
    pub status: String,
    pub pod_execution_role_arn: String,
    pub subnets: Vec<String>,
    pub selectors: Vec<FargateSelector>,
}

/// A Fargate profile selector: a namespace and, optionally, labels that must all match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FargateSelector {
    pub namespace: String,
    pub labels: std::collections::BTreeMap<String, String>,
}

/// One instance type (`ec2:DescribeInstanceTypes`), as much as requirements need.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceType {
    pub instance_type: String,
    /// As EC2 spells them: `x86_64`, `arm64`, `i386`, `x86_64_mac`.
    pub architectures: Vec<String>,
    pub vcpus: i64,
    pub memory_mib: i64,
    /// Every GPU of every manufacturer. Only bundles recorded before `accelerators` was kept
    /// need it: Karpenter advertises each manufacturer as its own resource.
    pub gpus: i64,
    /// The accelerators by the resource Karpenter advertises for them. `None` in bundles
    /// recorded before it was kept: `gpus` then stands for `nvidia.com/gpu`, as it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accelerators: Option<Accelerators>,
    /// `on-demand`, `spot`, `capacity-block`.
    pub usage_classes: Vec<String>,
    pub hypervisor: String,
    pub bare_metal: bool,
    /// Network interfaces on the default network card, and IPv4 addresses per interface:
    /// what the VPC CNI's pods per node follow. `None` in bundles recorded before they were
    /// kept (pods per node is then not judged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_enis: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_per_eni: Option<i64>,
}

/// An instance type's accelerators as Karpenter (1.1 and later) counts them from
/// `DescribeInstanceTypes`: GPUs summed per manufacturer, Neuron devices and cores from
/// `NeuronInfo` (docs/node-capacity.md §3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Accelerators {
    pub nvidia_gpus: i64,
    pub amd_gpus: i64,
    pub habana_gaudis: i64,
    pub neuron_devices: i64,
    pub neuron_cores: i64,
    /// How many entries `GpuInfo.Gpus` has: Karpenter sets the `instance-gpu-*` labels only
    /// when there is exactly one.
    pub gpu_entries: i64,
}

impl InstanceType {
    /// The extended resources a node of this type offers, by name, as Karpenter models them
    /// (zero counts left out).
    pub fn extended_resources(&self) -> Vec<(&'static str, i64)> {
        let all = match &self.accelerators {
            Some(a) => vec![
                ("nvidia.com/gpu", a.nvidia_gpus),
                ("amd.com/gpu", a.amd_gpus),
                ("habana.ai/gaudi", a.habana_gaudis),
                ("aws.amazon.com/neuron", a.neuron_devices),
                ("aws.amazon.com/neuroncore", a.neuron_cores),
            ],
            None => vec![("nvidia.com/gpu", self.gpus)],
        };
        all.into_iter().filter(|(_, n)| *n > 0).collect()
    }

    /// The `karpenter.k8s.aws/instance-gpu-count` label: set only for a single kind of GPU.
    pub fn gpu_count_label(&self) -> Option<i64> {
        match &self.accelerators {
            Some(a) if a.gpu_entries == 1 => Some(self.gpus),
            Some(_) => None,
            None => Some(self.gpus).filter(|n| *n > 0),
        }
    }
}

#[cfg(test)]
impl InstanceType {
    /// A Nitro type with 4 GiB per vCPU, offered on demand and spot, 3 ENIs of 10 addresses,
    /// for tests.
    pub fn nitro(name: &str, arch: &str, vcpus: i64) -> Self {
        InstanceType {
            instance_type: name.into(),
            architectures: vec![arch.into()],
            vcpus,
            memory_mib: vcpus * 4096,
            gpus: 0,
            accelerators: None,
            usage_classes: vec!["on-demand".into(), "spot".into()],
            hypervisor: "nitro".into(),
            bare_metal: false,
            max_enis: Some(3),
            ipv4_per_eni: Some(10),
        }
    }
}

/// One instance type offered in one availability zone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InstanceTypeOffering {
    pub instance_type: String,
    pub zone: String,
}

/// One SQS queue and its attributes (all of them, as strings, as SQS returns them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SqsQueue {
    pub name: String,
    pub url: String,
    pub arn: String,
    pub attributes: std::collections::BTreeMap<String, String>,
}

/// One EventBridge rule and its targets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EventRule {
    pub name: String,
    pub arn: String,
    /// `ENABLED`, `DISABLED`, `ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS`.
    pub state: String,
    /// The pattern as EventBridge stores it (a JSON document in a string).
    pub event_pattern: String,
    pub targets: Vec<EventTarget>,
}

/// One target of an EventBridge rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EventTarget {
    pub id: String,
    pub arn: String,
}

/// The answer of a SelfSubjectAccessReview.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AccessReview {
    pub allowed: bool,
    pub reason: String,
}

/// `GET /version`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KubeVersion {
    pub major: String,
    pub minor: String,
    pub git_version: String,
}

/// `iam:SimulatePrincipalPolicy`: the fields of one `EvaluationResult` (or `ResourceSpecificResult`) karpdoctor reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RawResult {
    pub action: String,
    pub resource: String,
    pub decision: String,
    pub allowed_by_organizations: Option<bool>,
    pub allowed_by_boundary: Option<bool>,
    pub matched_statements: Vec<String>,
    pub missing_context_values: Vec<String>,
    /// Present in the current shape; empty in the older one.
    pub resource_specific: Vec<RawResult>,
}

/// The DNS attributes of a VPC (`ec2:DescribeVpcAttribute`, one call per attribute).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VpcAttributes {
    pub enable_dns_support: bool,
    pub enable_dns_hostnames: bool,
}

/// One route table of a VPC (`ec2:DescribeRouteTables`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouteTable {
    pub route_table_id: String,
    pub associations: Vec<RouteTableAssociation>,
    pub routes: Vec<Route>,
}

/// A route table's association: with a subnet, or the VPC's main table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouteTableAssociation {
    pub subnet_id: Option<String>,
    pub main: bool,
    /// `associated`, `associating`, `disassociating`, `disassociated`, `failed`.
    pub state: Option<String>,
}

/// One route: a destination and its target (exactly one target field is set).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Route {
    pub destination_cidr_block: Option<String>,
    pub destination_ipv6_cidr_block: Option<String>,
    pub destination_prefix_list_id: Option<String>,
    /// `active` or `blackhole`.
    pub state: Option<String>,
    /// `local`, `igw-…`, a virtual private gateway `vgw-…`, or a Gateway endpoint `vpce-…`.
    pub gateway_id: Option<String>,
    pub nat_gateway_id: Option<String>,
    pub transit_gateway_id: Option<String>,
    pub vpc_peering_connection_id: Option<String>,
    pub network_interface_id: Option<String>,
    pub instance_id: Option<String>,
    pub egress_only_internet_gateway_id: Option<String>,
    /// Any other target (carrier, local or core network gateway), named for evidence.
    pub other_target: Option<String>,
}

/// One NAT gateway (`ec2:DescribeNatGateways`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NatGateway {
    pub nat_gateway_id: String,
    /// `pending`, `available`, `deleting`, `deleted`, `failed`.
    pub state: String,
    /// `public` or `private`.
    pub connectivity_type: String,
    pub subnet_id: String,
    /// Its Elastic IPs: the addresses the cluster's public endpoint sees.
    pub public_ips: Vec<String>,
}

/// One internet gateway (`ec2:DescribeInternetGateways`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InternetGateway {
    pub internet_gateway_id: String,
    /// `(vpc id, state)`; `available` when attached.
    pub attachments: Vec<GatewayAttachment>,
}

/// An internet gateway's attachment to a VPC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GatewayAttachment {
    pub vpc_id: String,
    pub state: String,
}

/// One VPC endpoint (`ec2:DescribeVpcEndpoints`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VpcEndpoint {
    pub vpc_endpoint_id: String,
    /// `com.amazonaws.REGION.ec2` and the like.
    pub service_name: String,
    /// `Interface`, `Gateway`, `GatewayLoadBalancer`, …
    pub vpc_endpoint_type: String,
    /// `available`, `pending`, `rejected`, …
    pub state: String,
    pub private_dns_enabled: bool,
    pub route_table_ids: Vec<String>,
    pub subnet_ids: Vec<String>,
    pub group_ids: Vec<String>,
}

/// One network ACL (`ec2:DescribeNetworkAcls`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkAcl {
    pub network_acl_id: String,
    pub is_default: bool,
    /// The subnets associated with it (every subnet has exactly one ACL).
    pub subnet_ids: Vec<String>,
    pub entries: Vec<NetworkAclEntry>,
}

/// One entry of a network ACL; entries are evaluated by rule number, the first match decides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkAclEntry {
    pub rule_number: i32,
    pub egress: bool,
    /// `allow` or `deny`.
    pub rule_action: String,
    /// A protocol number (`6` is TCP) or `-1` for all.
    pub protocol: String,
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub cidr_block: Option<String>,
    pub ipv6_cidr_block: Option<String>,
}
