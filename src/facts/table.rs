//! The facts table: every fact karpdoctor can read, declared once.
//!
//! One entry names the key (with its parameters), the constructor that types it, the type its
//! value decodes to, the API operations that produce it, the shape its JSON must have and how
//! messages name it. [`FactKey`], [`FactKind`] and their tables are generated from it, so a new
//! fact is this entry, its fetcher in the live backend's service module (a compile error until
//! it exists) and, for checks, an accessor on the context.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{
    ConfigMap, Node, PersistentVolume, PersistentVolumeClaim, Pod, ServiceAccount,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shape::FieldType::{Bool, Str};
use super::shape::Shape::{self, *};
use super::*;
use crate::model::{AutoNodeClass, Ec2NodeClass, NodeClaim, NodePool};

/// `Some(key)` for a fact without parameters (it can be prefetched), `None` otherwise.
macro_rules! parameterless {
    ($name:ident) => {
        Some(FactKey::$name)
    };
    ($name:ident { $($field:ident)* }) => {
        None
    };
}

macro_rules! facts {
    ($(
        $(#[$doc:meta])*
        $name:ident $({ $( $(#[$fattr:meta])* $field:ident : $fty:ty ),* $(,)? })?
            => fn $ctor:ident -> $value:ty;
            ops [$($op:expr),* $(,)?];
            shape $shape:expr;
            display |$f:ident| $display:expr;
    )*) => {
        /// What to read. Serialized as an externally tagged object, e.g.
        /// `{"pods": {"namespace": "karpenter", "labelSelector": "app=karpenter"}}`, which is
        /// how bundles and fixtures name their facts.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
        pub enum FactKey {
            $( $(#[$doc])* $name $({ $( $(#[$fattr])* $field: $fty ),* })?, )*
        }

        /// A fact key without its parameters: what a check declares it needs.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub enum FactKind {
            $( $name, )*
        }

        impl FactKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [FactKind] = &[$(FactKind::$name),*];

            /// The API operations the live backend issues to produce a fact of this kind.
            /// The read-only guard allows exactly the union of these, and nothing else.
            pub fn operations(self) -> &'static [ApiOp] {
                match self {
                    $( FactKind::$name => ops![$($op),*], )*
                }
            }

            /// What the fact's JSON must look like before it is decoded.
            pub fn shape(self) -> Shape {
                match self {
                    $( FactKind::$name => $shape, )*
                }
            }

            /// The key of this kind when it takes no parameters (such facts can be
            /// prefetched).
            pub fn parameterless_key(self) -> Option<FactKey> {
                match self {
                    $( FactKind::$name => parameterless!($name $({ $($field)* })?), )*
                }
            }

            /// Decodes a value of this kind into the type the table declares for it.
            pub fn decode(self, key: &FactKey, stored: Stored) -> Result<Shared, FactError> {
                match self {
                    $( FactKind::$name => decode::<$value>(key, stored), )*
                }
            }
        }

        impl FactKey {
            pub fn kind(&self) -> FactKind {
                match self {
                    $( FactKey::$name $({ $($field: _),* })? => FactKind::$name, )*
                }
            }

            $(
                #[doc = concat!("The `", stringify!($name), "` fact, typed.")]
                pub fn $ctor($($($field: $fty),*)?) -> Typed<$value> {
                    Typed::new(FactKey::$name $({ $($field),* })?)
                }
            )*
        }

        impl fmt::Display for FactKey {
            // A name need not use every parameter (an IAM simulation is named by its
            // principal and action count).
            #[allow(unused_variables)]
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( FactKey::$name $({ $($field),* })? => {
                        let $f = &mut *formatter;
                        $display
                    } )*
                }
            }
        }
    };
}

facts! {
    /// `GET /version` of the API server.
    KubeVersion => fn kube_version -> KubeVersion;
        // /version needs no RBAC beyond the default discovery role.
        ops [];
        shape Field { field: "major", ty: Str, nullable: false, what: "a version object" };
        display |f| f.write_str("Kubernetes version");

    /// Deployments that run the Karpenter controller image, in one namespace or in all.
    ControllerDeployments { namespace: Option<String> }
        => fn controller_deployments -> Vec<Deployment>;
        ops [kube("list", "apps", "deployments")];
        shape Objects;
        display |f| match namespace {
            None => f.write_str("controller Deployments (all namespaces)"),
            Some(ns) => write!(f, "controller Deployments in {ns}"),
        };

    /// Pods of one namespace matching a label selector (server-side).
    Pods { namespace: String, label_selector: String } => fn pods -> Vec<Pod>;
        ops [kube("list", "", "pods")];
        shape Objects;
        display |f| write!(f, "Pods in {namespace} ({label_selector})");

    /// Pods in phase Pending, cluster-wide (`fieldSelector=status.phase=Pending`), cut down to
    /// what scheduling reads: no environment, commands or images reach a bundle.
    PendingPods => fn pending_pods -> crate::model::PendingPods;
        ops [kube("list", "", "pods")];
        shape Objects;
        display |f| write!(f, "pending pods");

    /// Pods of one namespace that a topology spread selects (label selector, server-side) and
    /// that are bound and not finished (`fieldSelector=spec.nodeName!=,status.phase!=Succeeded,
    /// status.phase!=Failed`), cut down to their name, labels and node: the spread's counts.
    ScheduledPods { namespace: String, label_selector: String }
        => fn scheduled_pods -> Vec<Pod>;
        ops [kube("list", "", "pods")];
        shape Objects;
        display |f| write!(f, "bound pods in {namespace} ({label_selector})");

    /// Pods bound to one node (`fieldSelector=spec.nodeName=<node>`), cut down to their
    /// identity, owner and readiness: whether a node's taint remover or device plugin runs
    /// there. Read only for nodes that are stuck.
    NodePods { node: String } => fn node_pods -> Vec<Pod>;
        ops [kube("list", "", "pods")];
        shape Objects;
        display |f| write!(f, "pods on node {node}");

    /// Nodes matching a label selector (server-side), cut down to their names, labels and
    /// taints: the zones a topology spread counts.
    Nodes { label_selector: String } => fn nodes -> Vec<crate::model::ListedNode>;
        ops [kube("list", "", "nodes")];
        shape Objects;
        display |f| write!(f, "Nodes ({label_selector})");

    /// DaemonSets, cluster-wide, cut down to their pod template's scheduling fields: the
    /// overhead each node carries.
    DaemonSets => fn daemonsets -> Vec<DaemonSet>;
        ops [kube("list", "apps", "daemonsets")];
        shape Objects;
        display |f| write!(f, "DaemonSets");

    /// PersistentVolumeClaims, cluster-wide (the zones of pending pods' volumes).
    PersistentVolumeClaims => fn persistent_volume_claims -> Vec<PersistentVolumeClaim>;
        ops [kube("list", "", "persistentvolumeclaims")];
        shape Objects;
        display |f| write!(f, "PersistentVolumeClaims");

    /// PersistentVolumes (a bound volume's node affinity pins its zone).
    PersistentVolumes => fn persistent_volumes -> Vec<PersistentVolume>;
        ops [kube("list", "", "persistentvolumes")];
        shape Objects;
        display |f| write!(f, "PersistentVolumes");

    /// StorageClasses (binding mode and allowed topologies of unbound claims).
    StorageClasses => fn storage_classes -> Vec<StorageClass>;
        ops [kube("list", "storage.k8s.io", "storageclasses")];
        shape Objects;
        display |f| write!(f, "StorageClasses");

    /// One CustomResourceDefinition by name; absent is `null`, not an error.
    Crd { name: String } => fn crd -> Option<CustomResourceDefinition>;
        ops [kube("get", "apiextensions.k8s.io", "customresourcedefinitions")];
        shape NamedOrNull;
        display |f| write!(f, "CRD {name}");

    /// CSINodes, cut down to each driver's name, node id and attach limit
    /// (`allocatable.count`): how many volumes of that driver the node may hold.
    CsiNodes => fn csi_nodes -> Vec<k8s_openapi::api::storage::v1::CSINode>;
        ops [kube("list", "storage.k8s.io", "csinodes")];
        shape Objects;
        display |f| f.write_str("CSINodes");

    /// VolumeAttachments, cut down to the driver, node and volume, whether attached, and the
    /// attach error's message.
    VolumeAttachments => fn volume_attachments -> Vec<k8s_openapi::api::storage::v1::VolumeAttachment>;
        ops [kube("list", "storage.k8s.io", "volumeattachments")];
        shape Objects;
        display |f| f.write_str("VolumeAttachments");

    /// PodDisruptionBudgets, cluster-wide, cut down to their selector, their limit and how
    /// many disruptions they allow now: what an eviction of a draining node's pods meets.
    PodDisruptionBudgets => fn pod_disruption_budgets -> Vec<k8s_openapi::api::policy::v1::PodDisruptionBudget>;
        ops [kube("list", "policy", "poddisruptionbudgets")];
        shape Objects;
        display |f| f.write_str("PodDisruptionBudgets");

    /// Deployments and StatefulSets, cluster-wide, whose pod template carries
    /// `karpenter.sh/do-not-disrupt` (any value), cut down to their kind, name, replicas,
    /// selector and that annotation: the workloads every pod of which pins its node.
    PinnedWorkloads => fn pinned_workloads -> Vec<crate::model::PinnedWorkload>;
        ops [kube("list", "apps", "deployments"), kube("list", "apps", "statefulsets")];
        shape Objects;
        display |f| f.write_str("workloads annotated do-not-disrupt");

    /// `karpenter.sh/v1` NodePools.
    NodePools => fn nodepools -> Vec<NodePool>;
        ops [kube("list", "karpenter.sh", "nodepools")];
        shape Objects;
        display |f| f.write_str("NodePools");

    /// `karpenter.k8s.aws/v1` EC2NodeClasses.
    Ec2NodeClasses => fn ec2_nodeclasses -> Vec<Ec2NodeClass>;
        ops [kube("list", "karpenter.k8s.aws", "ec2nodeclasses")];
        shape Objects;
        display |f| f.write_str("EC2NodeClasses");

    /// EKS Auto Mode's `eks.amazonaws.com/v1` NodeClasses; not installed without Auto Mode.
    AutoNodeClasses => fn auto_nodeclasses -> Vec<AutoNodeClass>;
        ops [kube("list", "eks.amazonaws.com", "nodeclasses")];
        shape Objects;
        display |f| f.write_str("Auto Mode NodeClasses");

    /// `karpenter.sh/v1` NodeClaims.
    NodeClaims => fn nodeclaims -> Vec<NodeClaim>;
        ops [kube("list", "karpenter.sh", "nodeclaims")];
        shape Objects;
        display |f| f.write_str("NodeClaims");

    /// The churn record of the `--history` ConfigMap `configmap` (`namespace/name`): one sample
    /// per earlier run, oldest first. The run reads that ConfigMap once, through the history
    /// store, and hands the record to the backend; a replay takes it from the bundle.
    ChurnHistory { configmap: String } => fn churn_history -> Vec<crate::model::ChurnSample>;
        // Granted by the history Role (deploy/rbac.yaml, `resourceNames`), not the ClusterRole.
        ops [];
        shape Items;
        display |f| write!(f, "the churn record in ConfigMap {configmap}");

    /// `sts:GetCallerIdentity` of karpdoctor's own credentials.
    CallerIdentity => fn caller_identity -> CallerIdentity;
        ops [aws("sts", "GetCallerIdentity")];
        // Decoding rejects missing fields (no serde defaults).
        shape Decoded;
        display |f| f.write_str("AWS caller identity");

    /// `eks:DescribeCluster`; absent is `null`.
    EksCluster { name: String } => fn eks_cluster -> Option<EksCluster>;
        ops [aws("eks", "DescribeCluster")];
        shape Field { field: "name", ty: Str, nullable: true, what: "a cluster with a name" };
        display |f| write!(f, "EKS cluster {name}");

    /// One ServiceAccount; absent is `null`.
    ServiceAccount { namespace: String, name: String }
        => fn service_account -> Option<ServiceAccount>;
        ops [kube("get", "", "serviceaccounts")];
        shape NamedOrNull;
        display |f| write!(f, "ServiceAccount {namespace}/{name}");

    /// `iam:GetRole`; absent is `null`.
    IamRole { name: String } => fn iam_role -> Option<IamRole>;
        ops [aws("iam", "GetRole")];
        shape Field { field: "arn", ty: Str, nullable: true, what: "a role with an ARN" };
        display |f| write!(f, "IAM role {name}");

    /// One Node; absent is `null`.
    Node { name: String } => fn node -> Option<Node>;
        ops [kube("get", "", "nodes")];
        shape NamedOrNull;
        display |f| write!(f, "Node {name}");

    /// `eks:DescribeAddon`; absent is `null`.
    EksAddon { cluster: String, name: String } => fn eks_addon -> Option<EksAddon>;
        ops [aws("eks", "DescribeAddon")];
        shape Field { field: "name", ty: Str, nullable: true, what: "an add-on with a name" };
        display |f| write!(f, "EKS add-on {name} of {cluster}");

    /// The account's IAM OIDC identity providers (list, then get each for its URL and
    /// audiences).
    OidcProviders => fn oidc_providers -> Vec<OidcProvider>;
        ops [
            aws("iam", "ListOpenIDConnectProviders"),
            aws("iam", "GetOpenIDConnectProvider"),
        ];
        shape ListOf { field: "arn", what: "providers with ARNs" };
        display |f| f.write_str("IAM OIDC providers");

    /// EKS Pod Identity associations of one ServiceAccount (list, then describe each for its
    /// role).
    PodIdentityAssociations { cluster: String, namespace: String, service_account: String }
        => fn pod_identity_associations -> Vec<PodIdentityAssociation>;
        ops [
            aws("eks", "ListPodIdentityAssociations"),
            aws("eks", "DescribePodIdentityAssociation"),
        ];
        shape ListOf { field: "roleArn", what: "associations with role ARNs" };
        display |f| write!(
            f,
            "Pod Identity associations of {namespace}/{service_account} in {cluster}"
        );

    /// `eks:DescribeNodegroup`; absent is `null`.
    EksNodegroup { cluster: String, name: String } => fn eks_nodegroup -> Option<EksNodegroup>;
        ops [aws("eks", "DescribeNodegroup")];
        shape Field {
            field: "nodeRole",
            ty: Str,
            nullable: true,
            what: "a node group with a node role",
        };
        display |f| write!(f, "EKS node group {name} of {cluster}");

    /// `iam:SimulatePrincipalPolicy`: may `principal` do `actions` on `resources` given
    /// `context`? One batched request, paged with `Marker`; the value is the raw results
    /// ([`RawResult`]), read with `iam::simulation::normalise`.
    Simulation {
        principal: String,
        actions: Vec<String>,
        resources: Vec<String>,
        context: Vec<ContextEntry>,
    } => fn simulation -> Vec<RawResult>;
        ops [aws("iam", "SimulatePrincipalPolicy")];
        shape ListOf { field: "action", what: "evaluation results with actions" };
        display |f| write!(
            f,
            "IAM simulation of {} action(s) for {principal}",
            actions.len()
        );

    /// Every subnet of the region (`ec2:DescribeSubnets`, paged): EC2NodeClass selectors are
    /// re-run locally over the whole list, which also finds near misses.
    Ec2Subnets => fn ec2_subnets -> Vec<Subnet>;
        ops [aws("ec2", "DescribeSubnets")];
        shape ListOf { field: "subnetId", what: "subnets with ids" };
        display |f| f.write_str("EC2 subnets");

    /// Every security group of the region (`ec2:DescribeSecurityGroups`, paged).
    Ec2SecurityGroups => fn ec2_security_groups -> Vec<SecurityGroup>;
        ops [aws("ec2", "DescribeSecurityGroups")];
        shape ListOf { field: "groupId", what: "security groups with ids" };
        display |f| f.write_str("EC2 security groups");

    /// The DNS attributes of one VPC (`ec2:DescribeVpcAttribute` for `enableDnsSupport` and
    /// `enableDnsHostnames`, sent together); `null` when the VPC does not exist.
    Ec2VpcAttributes { vpc_id: String } => fn ec2_vpc_attributes -> Option<VpcAttributes>;
        ops [aws("ec2", "DescribeVpcAttribute")];
        shape Field { field: "enableDnsSupport", ty: Bool, nullable: true, what: "VPC DNS attributes" };
        display |f| write!(f, "DNS attributes of VPC {vpc_id}");

    /// The route tables of one VPC (`ec2:DescribeRouteTables`, filter `vpc-id`, paged).
    Ec2RouteTables { vpc_id: String } => fn ec2_route_tables -> Vec<RouteTable>;
        ops [aws("ec2", "DescribeRouteTables")];
        shape ListOf { field: "routeTableId", what: "route tables with ids" };
        display |f| write!(f, "route tables of VPC {vpc_id}");

    /// The NAT gateways of one VPC (`ec2:DescribeNatGateways`, filter `vpc-id`, paged).
    Ec2NatGateways { vpc_id: String } => fn ec2_nat_gateways -> Vec<NatGateway>;
        ops [aws("ec2", "DescribeNatGateways")];
        shape ListOf { field: "natGatewayId", what: "NAT gateways with ids" };
        display |f| write!(f, "NAT gateways of VPC {vpc_id}");

    /// The internet gateways attached to one VPC (`ec2:DescribeInternetGateways`, filter
    /// `attachment.vpc-id`, paged).
    Ec2InternetGateways { vpc_id: String } => fn ec2_internet_gateways -> Vec<InternetGateway>;
        ops [aws("ec2", "DescribeInternetGateways")];
        shape ListOf { field: "internetGatewayId", what: "internet gateways with ids" };
        display |f| write!(f, "internet gateways of VPC {vpc_id}");

    /// The endpoints of one VPC (`ec2:DescribeVpcEndpoints`, filter `vpc-id`, paged).
    Ec2VpcEndpoints { vpc_id: String } => fn ec2_vpc_endpoints -> Vec<VpcEndpoint>;
        ops [aws("ec2", "DescribeVpcEndpoints")];
        shape ListOf { field: "vpcEndpointId", what: "VPC endpoints with ids" };
        display |f| write!(f, "endpoints of VPC {vpc_id}");

    /// The network ACLs of one VPC (`ec2:DescribeNetworkAcls`, filter `vpc-id`, paged).
    Ec2NetworkAcls { vpc_id: String } => fn ec2_network_acls -> Vec<NetworkAcl>;
        ops [aws("ec2", "DescribeNetworkAcls")];
        shape ListOf { field: "networkAclId", what: "network ACLs with ids" };
        display |f| write!(f, "network ACLs of VPC {vpc_id}");

    /// `ec2:DescribeImages` with filters and owners, as Karpenter queries one AMI selector
    /// term (deprecated images included). Unknown ids match nothing; they are not an error.
    Ec2Images { filters: Vec<Ec2Filter>, owners: Vec<String> } => fn ec2_images -> Vec<Image>;
        ops [aws("ec2", "DescribeImages")];
        shape ListOf { field: "imageId", what: "images with ids" };
        display |f| {
            let filters: Vec<String> = filters
                .iter()
                .map(|x| format!("{}={}", x.name, x.values.join("|")))
                .collect();
            write!(f, "EC2 images ({})", filters.join(", "))?;
            if !owners.is_empty() {
                write!(f, " owned by {}", owners.join(", "))?;
            }
            Ok(())
        };

    /// `ssm:GetParameters` (in batches of ten): name → value, `null` for a parameter that
    /// does not exist.
    SsmParameters { names: Vec<String> }
        => fn ssm_parameters -> BTreeMap<String, Option<String>>;
        ops [aws("ssm", "GetParameters")];
        shape StringMap { what: "parameter values by name" };
        display |f| match names.as_slice() {
            [one] => write!(f, "SSM parameter {one}"),
            many => write!(f, "{} SSM parameters", many.len()),
        };

    /// `iam:GetInstanceProfile`; absent is `null`.
    IamInstanceProfile { name: String } => fn iam_instance_profile -> Option<InstanceProfile>;
        ops [aws("iam", "GetInstanceProfile")];
        shape Field {
            field: "arn",
            ty: Str,
            nullable: true,
            what: "an instance profile with an ARN",
        };
        display |f| write!(f, "IAM instance profile {name}");

    /// `iam:ListAttachedRolePolicies` of one role (paged).
    IamAttachedRolePolicies { role: String }
        => fn iam_attached_role_policies -> Vec<AttachedPolicy>;
        ops [aws("iam", "ListAttachedRolePolicies")];
        shape ListOf { field: "policyArn", what: "policies with ARNs" };
        display |f| write!(f, "managed policies attached to IAM role {role}");

    /// `iam:ListRolePolicies` of one role (paged): the names of its inline policies.
    IamRolePolicyNames { role: String } => fn iam_role_policy_names -> Vec<String>;
        ops [aws("iam", "ListRolePolicies")];
        shape Strings { what: "a list of inline policy names" };
        display |f| write!(f, "inline policies of IAM role {role}");

    /// EKS access entries of a cluster (list, then describe each for its type and username).
    EksAccessEntries { cluster: String } => fn eks_access_entries -> Vec<AccessEntry>;
        ops [aws("eks", "ListAccessEntries"), aws("eks", "DescribeAccessEntry")];
        shape ListOf { field: "principalArn", what: "entries with principals" };
        display |f| write!(f, "EKS access entries of {cluster}");

    /// `eks:ListAssociatedAccessPolicies` of one access entry (paged): the cluster access policies
    /// it carries. Read only for entries whose type takes them (`STANDARD`, `EC2`).
    EksAccessPolicies { cluster: String, principal: String }
        => fn eks_access_policies -> Vec<AssociatedAccessPolicy>;
        ops [aws("eks", "ListAssociatedAccessPolicies")];
        shape ListOf { field: "policyArn", what: "associations with policy ARNs" };
        display |f| write!(f, "access policies of {principal} in {cluster}");

    /// The `kube-system/aws-auth` ConfigMap; absent is `null`.
    AwsAuth => fn aws_auth -> Option<ConfigMap>;
        // Only the one ConfigMap: the ClusterRole names it (`resourceNames`).
        ops [kube_named("get", "", "configmaps", "aws-auth")];
        shape NamedOrNull;
        display |f| f.write_str("ConfigMap kube-system/aws-auth");

    /// The account's EBS defaults in the region: encryption by default and the default KMS
    /// key (`ec2:GetEbsEncryptionByDefault`, `ec2:GetEbsDefaultKmsKeyId`).
    EbsDefaults => fn ebs_defaults -> EbsDefaults;
        ops [aws("ec2", "GetEbsEncryptionByDefault"), aws("ec2", "GetEbsDefaultKmsKeyId")];
        shape Field {
            field: "encryptedByDefault",
            ty: Bool,
            nullable: false,
            what: "EBS encryption defaults",
        };
        display |f| f.write_str("EBS encryption defaults");

    /// EBS snapshots by id (`ec2:DescribeSnapshots`, filtered by `snapshot-id`, so one the
    /// account may not see is absent rather than an error): whether each is encrypted, with
    /// which KMS key, and whose it is.
    Ec2Snapshots { ids: Vec<String> } => fn ec2_snapshots -> Vec<Snapshot>;
        ops [aws("ec2", "DescribeSnapshots")];
        shape ListOf { field: "snapshotId", what: "snapshots with ids" };
        display |f| write!(f, "EBS snapshots {}", ids.join(", "));

    /// Instances by id (`ec2:DescribeInstances`, filtered by `instance-id`, so an instance that
    /// no longer exists is absent rather than an error): their state and why EC2 ended them.
    Ec2Instances { ids: Vec<String> } => fn ec2_instances -> Vec<Ec2Instance>;
        ops [aws("ec2", "DescribeInstances")];
        shape ListOf { field: "instanceId", what: "instances with ids" };
        display |f| write!(f, "EC2 instances {}", ids.join(", "));

    /// The last output of an instance's serial console (`ec2:GetConsoleOutput`, latest), its
    /// tail scrubbed of secrets (`crate::console::scrub`); `null` when the instance is gone or
    /// has printed nothing yet.
    Ec2ConsoleOutput { instance_id: String } => fn ec2_console_output -> Option<String>;
        ops [aws("ec2", "GetConsoleOutput")];
        shape TextOrNull;
        display |f| write!(f, "console output of {instance_id}");

    /// `kms:DescribeKey` and the key's default policy (`kms:GetKeyPolicy`); absent is `null`.
    KmsKey { key_id: String } => fn kms_key -> Option<KmsKey>;
        ops [aws("kms", "DescribeKey"), aws("kms", "GetKeyPolicy")];
        shape Field { field: "arn", ty: Str, nullable: true, what: "a KMS key with an ARN" };
        display |f| write!(f, "KMS key {key_id}");

    /// The grants on a KMS key to one grantee (`kms:ListGrants` with `GranteePrincipal`): how
    /// a key is shared with the Spot service-linked role besides its key policy.
    KmsGrants { key_id: String, grantee: String } => fn kms_grants -> Vec<KmsGrant>;
        ops [aws("kms", "ListGrants")];
        shape ListOf { field: "grantId", what: "grants with ids" };
        display |f| write!(f, "KMS grants on {key_id} to {grantee}");

    /// The log of one container (`pods/log`): the last lines, as text; `null` when that log
    /// does not exist (no previous container).
    PodLogs { namespace: String, pod: String, container: String, previous: bool }
        => fn pod_logs -> Option<String>;
        ops [kube("get", "", "pods/log")];
        shape TextOrNull;
        display |f| write!(
            f,
            "{}log of {namespace}/{pod} ({container})",
            if *previous { "previous " } else { "" }
        );

    /// Events about objects of one kind, from both `v1` and `events.k8s.io/v1` (the raw
    /// objects; read through `crate::events`).
    Events { kind: String, namespace: Option<String> } => fn events -> crate::events::Events;
        ops [kube("list", "", "events"), kube("list", "events.k8s.io", "events")];
        shape Items;
        display |f| match namespace {
            None => write!(f, "events about {kind}s"),
            Some(ns) => write!(f, "events about {kind}s in {ns}"),
        };

    /// Events of one reason about objects of one kind, cluster-wide, from `v1`
    /// (`fieldSelector=involvedObject.kind=<kind>,reason=<reason>`; `events.k8s.io` lists the
    /// same objects): the newest per object, uncapped.
    EventsByReason { kind: String, reason: String } => fn events_by_reason -> crate::events::Latest;
        ops [kube("list", "", "events")];
        shape Items;
        display |f| write!(f, "{reason} events about {kind}s");

    /// Validating and mutating admission webhook configurations (the raw objects).
    WebhookConfigurations => fn webhook_configurations -> Vec<Value>;
        ops [
            kube("list", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            kube("list", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ];
        shape Items;
        display |f| f.write_str("admission webhook configurations");

    /// One Service; absent is `null`.
    Service { namespace: String, name: String }
        => fn service -> Option<k8s_openapi::api::core::v1::Service>;
        ops [kube("get", "", "services")];
        shape NamedOrNull;
        display |f| write!(f, "Service {namespace}/{name}");

    /// EKS Fargate profiles of a cluster (list, then describe each for its selectors).
    EksFargateProfiles { cluster: String } => fn eks_fargate_profiles -> Vec<FargateProfile>;
        ops [aws("eks", "ListFargateProfiles"), aws("eks", "DescribeFargateProfile")];
        shape ListOf { field: "name", what: "profiles with names" };
        display |f| write!(f, "EKS Fargate profiles of {cluster}");

    /// Every instance type of the region (`ec2:DescribeInstanceTypes`, paged).
    Ec2InstanceTypes => fn ec2_instance_types -> Vec<InstanceType>;
        ops [aws("ec2", "DescribeInstanceTypes")];
        shape ListOf { field: "instanceType", what: "instance types with names" };
        display |f| f.write_str("EC2 instance types");

    /// Which instance types are offered in which availability zone of the region.
    Ec2InstanceTypeOfferings => fn ec2_instance_type_offerings -> Vec<InstanceTypeOffering>;
        ops [aws("ec2", "DescribeInstanceTypeOfferings")];
        shape ListOf { field: "instanceType", what: "offerings with instance types" };
        display |f| f.write_str("EC2 instance type offerings");

    /// One SQS queue by name (`sqs:GetQueueUrl`, `sqs:GetQueueAttributes`); absent is `null`.
    SqsQueue { name: String } => fn sqs_queue -> Option<SqsQueue>;
        ops [aws("sqs", "GetQueueUrl"), aws("sqs", "GetQueueAttributes")];
        shape Field { field: "arn", ty: Str, nullable: true, what: "a queue with an ARN" };
        display |f| write!(f, "SQS queue {name}");

    /// The names of the region's SQS queues (`sqs:ListQueues`, paged).
    SqsQueues => fn sqs_queues -> Vec<String>;
        ops [aws("sqs", "ListQueues")];
        shape Strings { what: "a list of queue names" };
        display |f| f.write_str("SQS queues");

    /// The EventBridge rules that target one ARN, with their patterns and targets.
    EventRules { target_arn: String } => fn event_rules -> Vec<EventRule>;
        ops [
            aws("events", "ListRuleNamesByTarget"),
            aws("events", "DescribeRule"),
            aws("events", "ListTargetsByRule"),
        ];
        shape ListOf { field: "name", what: "rules with names" };
        display |f| write!(f, "EventBridge rules targeting {target_arn}");

    /// A SelfSubjectAccessReview: may karpdoctor's own identity do `verb` on `resource`?
    AccessReview {
        verb: String,
        group: String,
        resource: String,
        namespace: Option<String>,
        /// For operations limited to one object (`resourceNames` in RBAC).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    } => fn access_review -> AccessReview;
        // Every authenticated identity may ask this (system:basic-user); no RBAC to grant.
        ops [kube("create", "authorization.k8s.io", "selfsubjectaccessreviews")];
        shape Field {
            field: "allowed",
            ty: Bool,
            nullable: false,
            what: "an access review answer",
        };
        display |f| {
            let mut what = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            if let Some(name) = name {
                what = format!("{what}/{name}");
            }
            match namespace {
                Some(ns) => write!(f, "access review: {verb} {what} in {ns}"),
                None => write!(f, "access review: {verb} {what}"),
            }
        };
}
