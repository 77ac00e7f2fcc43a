//! Facts: the only things checks may know about the cluster and the account.
//!
//! A fact is identified by a [`FactKey`] (what to read, with its parameters) and belongs to a
//! [`FactKind`] (the key without parameters). Each kind names the API operations that produce
//! it ([`FactKind::operations`]); that table is the single source for the read-only guard and
//! for the permissions karpdoctor asks for. Values travel as JSON between the backend and the
//! context so that a live run and a replay of its recording go through the same decoding.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What to read. Serialized as an externally tagged object, e.g.
/// `{"pods": {"namespace": "karpenter", "labelSelector": "app=karpenter"}}`, which is how
/// bundles and fixtures name their facts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum FactKey {
    /// `GET /version` of the API server.
    KubeVersion,
    /// Deployments that run the Karpenter controller image, in one namespace or in all.
    ControllerDeployments { namespace: Option<String> },
    /// Pods of one namespace matching a label selector (server-side).
    Pods {
        namespace: String,
        label_selector: String,
    },
    /// One CustomResourceDefinition by name; absent is `null`, not an error.
    Crd { name: String },
    /// `karpenter.sh/v1` NodePools.
    NodePools,
    /// `karpenter.k8s.aws/v1` EC2NodeClasses.
    Ec2NodeClasses,
    /// `karpenter.sh/v1` NodeClaims.
    NodeClaims,
    /// `sts:GetCallerIdentity` of karpdoctor's own credentials.
    CallerIdentity,
    /// `eks:DescribeCluster`; absent is `null`.
    EksCluster { name: String },
    /// One ServiceAccount; absent is `null`.
    ServiceAccount { namespace: String, name: String },
    /// `iam:GetRole`; absent is `null`.
    IamRole { name: String },
    /// One Node; absent is `null`.
    Node { name: String },
    /// `eks:DescribeAddon`; absent is `null`.
    EksAddon { cluster: String, name: String },
    /// The account's IAM OIDC identity providers (list, then get each for its URL and audiences).
    OidcProviders,
    /// EKS Pod Identity associations of one ServiceAccount (list, then describe each for its role).
    PodIdentityAssociations {
        cluster: String,
        namespace: String,
        service_account: String,
    },
    /// `eks:DescribeNodegroup`; absent is `null`.
    EksNodegroup { cluster: String, name: String },
    /// `iam:SimulatePrincipalPolicy`: may `principal` do `actions` on `resources` given
    /// `context`? One batched request, paged with `Marker`; the value is the raw results
    /// (`iam::simulation::RawResult`), read with `iam::simulation::normalise`.
    Simulation {
        principal: String,
        actions: Vec<String>,
        resources: Vec<String>,
        context: Vec<ContextEntry>,
    },
    /// Every subnet of the region (`ec2:DescribeSubnets`, paged): EC2NodeClass selectors are
    /// re-run locally over the whole list, which also finds near misses.
    Ec2Subnets,
    /// Every security group of the region (`ec2:DescribeSecurityGroups`, paged).
    Ec2SecurityGroups,
    /// `ec2:DescribeImages` with filters and owners, as Karpenter queries one AMI selector
    /// term (deprecated images included). Unknown ids match nothing; they are not an error.
    Ec2Images {
        filters: Vec<Ec2Filter>,
        owners: Vec<String>,
    },
    /// `ssm:GetParameters` (in batches of ten): name → value, `null` for a parameter that does
    /// not exist.
    SsmParameters { names: Vec<String> },
    /// `iam:GetInstanceProfile`; absent is `null`.
    IamInstanceProfile { name: String },
    /// `iam:ListAttachedRolePolicies` of one role (paged).
    IamAttachedRolePolicies { role: String },
    /// EKS access entries of a cluster (list, then describe each for its type and username).
    EksAccessEntries { cluster: String },
    /// The `kube-system/aws-auth` ConfigMap; absent is `null`.
    AwsAuth,
    /// The account's EBS defaults in the region: encryption by default and the default KMS key
    /// (`ec2:GetEbsEncryptionByDefault`, `ec2:GetEbsDefaultKmsKeyId`).
    EbsDefaults,
    /// `kms:DescribeKey` and the key's default policy (`kms:GetKeyPolicy`); absent is `null`.
    KmsKey { key_id: String },
    /// The log of one container (`pods/log`): the last lines, as text; `null` when that log
    /// does not exist (no previous container).
    PodLogs {
        namespace: String,
        pod: String,
        container: String,
        previous: bool,
    },
    /// Events about objects of one kind, from both `v1` and `events.k8s.io/v1` (the raw
    /// objects; read through `crate::events`).
    Events {
        kind: String,
        namespace: Option<String>,
    },
    /// Validating and mutating admission webhook configurations (the raw objects).
    WebhookConfigurations,
    /// One Service; absent is `null`.
    Service { namespace: String, name: String },
    /// EKS Fargate profiles of a cluster (list, then describe each for its selectors).
    EksFargateProfiles { cluster: String },
    /// Every instance type of the region (`ec2:DescribeInstanceTypes`, paged).
    Ec2InstanceTypes,
    /// Which instance types are offered in which availability zone of the region.
    Ec2InstanceTypeOfferings,
    /// One SQS queue by name (`sqs:GetQueueUrl`, `sqs:GetQueueAttributes`); absent is `null`.
    SqsQueue { name: String },
    /// The names of the region's SQS queues (`sqs:ListQueues`, paged).
    SqsQueues,
    /// The EventBridge rules that target one ARN, with their patterns and targets.
    EventRules { target_arn: String },
    /// A SelfSubjectAccessReview: may karpdoctor's own identity do `verb` on `resource`?
    AccessReview {
        verb: String,
        group: String,
        resource: String,
        namespace: Option<String>,
        /// For operations limited to one object (`resourceNames` in RBAC).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

/// A fact key without its parameters: what a check declares it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FactKind {
    KubeVersion,
    ControllerDeployments,
    Pods,
    Crd,
    NodePools,
    Ec2NodeClasses,
    NodeClaims,
    CallerIdentity,
    EksCluster,
    AccessReview,
    ServiceAccount,
    IamRole,
    PodIdentityAssociations,
    OidcProviders,
    Node,
    EksAddon,
    EksNodegroup,
    Simulation,
    Ec2Subnets,
    Ec2SecurityGroups,
    Ec2Images,
    SsmParameters,
    IamInstanceProfile,
    IamAttachedRolePolicies,
    EksAccessEntries,
    AwsAuth,
    EbsDefaults,
    KmsKey,
    PodLogs,
    Events,
    WebhookConfigurations,
    Service,
    EksFargateProfiles,
    Ec2InstanceTypes,
    Ec2InstanceTypeOfferings,
    SqsQueue,
    SqsQueues,
    EventRules,
}

/// One `Filters` entry of an EC2 describe call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ec2Filter {
    pub name: String,
    pub values: Vec<String>,
}

/// One IAM simulation context entry (`ContextEntry`): a key, its type as IAM spells it
/// (`string`, `stringList`, `boolean`, …) and its values.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEntry {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub values: Vec<String>,
}

/// One API operation karpdoctor may issue. Kubernetes operations are a verb on a resource;
/// AWS operations are an IAM action (`service:Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiOp {
    Kube {
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        /// The one object the operation reads, when it is limited to one name (the
        /// ClusterRole then grants `resourceNames` instead of the whole resource).
        name: Option<&'static str>,
    },
    Aws {
        service: &'static str,
        action: &'static str,
    },
}

impl fmt::Display for ApiOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiOp::Kube {
                verb,
                group: "",
                resource,
                ..
            } => write!(f, "{verb} {resource}"),
            ApiOp::Kube {
                verb,
                group,
                resource,
                ..
            } => write!(f, "{verb} {resource}.{group}"),
            ApiOp::Aws { service, action } => write!(f, "{service}:{action}"),
        }
    }
}

const fn kube(verb: &'static str, group: &'static str, resource: &'static str) -> ApiOp {
    ApiOp::Kube {
        verb,
        group,
        resource,
        name: None,
    }
}

const fn aws(service: &'static str, action: &'static str) -> ApiOp {
    ApiOp::Aws { service, action }
}

/// A `'static` slice of operations; `const` so the calls are evaluated at compile time.
macro_rules! ops {
    ($($op:expr),* $(,)?) => {{
        const OPS: &[ApiOp] = &[$($op),*];
        OPS
    }};
}

impl FactKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [FactKind] = &[
        FactKind::KubeVersion,
        FactKind::ControllerDeployments,
        FactKind::Pods,
        FactKind::Crd,
        FactKind::NodePools,
        FactKind::Ec2NodeClasses,
        FactKind::NodeClaims,
        FactKind::CallerIdentity,
        FactKind::EksCluster,
        FactKind::AccessReview,
        FactKind::ServiceAccount,
        FactKind::IamRole,
        FactKind::PodIdentityAssociations,
        FactKind::OidcProviders,
        FactKind::Node,
        FactKind::EksAddon,
        FactKind::EksNodegroup,
        FactKind::Simulation,
        FactKind::Ec2Subnets,
        FactKind::Ec2SecurityGroups,
        FactKind::Ec2Images,
        FactKind::SsmParameters,
        FactKind::IamInstanceProfile,
        FactKind::IamAttachedRolePolicies,
        FactKind::EksAccessEntries,
        FactKind::AwsAuth,
        FactKind::EbsDefaults,
        FactKind::KmsKey,
        FactKind::PodLogs,
        FactKind::Events,
        FactKind::WebhookConfigurations,
        FactKind::Service,
        FactKind::EksFargateProfiles,
        FactKind::Ec2InstanceTypes,
        FactKind::Ec2InstanceTypeOfferings,
        FactKind::SqsQueue,
        FactKind::SqsQueues,
        FactKind::EventRules,
    ];

    /// The API operations the live backend issues to produce a fact of this kind.
    /// The read-only guard allows exactly the union of these, and nothing else.
    pub fn operations(self) -> &'static [ApiOp] {
        match self {
            // /version needs no RBAC beyond the default discovery role.
            FactKind::KubeVersion => &[],
            FactKind::ControllerDeployments => ops![kube("list", "apps", "deployments")],
            FactKind::Pods => ops![kube("list", "", "pods")],
            FactKind::Crd => ops![kube(
                "get",
                "apiextensions.k8s.io",
                "customresourcedefinitions"
            )],
            FactKind::NodePools => ops![kube("list", "karpenter.sh", "nodepools")],
            FactKind::Ec2NodeClasses => ops![kube("list", "karpenter.k8s.aws", "ec2nodeclasses")],
            FactKind::NodeClaims => ops![kube("list", "karpenter.sh", "nodeclaims")],
            FactKind::CallerIdentity => ops![aws("sts", "GetCallerIdentity")],
            FactKind::EksCluster => ops![aws("eks", "DescribeCluster")],
            // Every authenticated identity may ask this (system:basic-user); no RBAC to grant.
            FactKind::AccessReview => {
                ops![kube(
                    "create",
                    "authorization.k8s.io",
                    "selfsubjectaccessreviews"
                )]
            }
            FactKind::ServiceAccount => ops![kube("get", "", "serviceaccounts")],
            FactKind::IamRole => ops![aws("iam", "GetRole")],
            FactKind::PodIdentityAssociations => ops![
                aws("eks", "ListPodIdentityAssociations"),
                aws("eks", "DescribePodIdentityAssociation")
            ],
            FactKind::OidcProviders => ops![
                aws("iam", "ListOpenIDConnectProviders"),
                aws("iam", "GetOpenIDConnectProvider")
            ],
            FactKind::Node => ops![kube("get", "", "nodes")],
            FactKind::EksAddon => ops![aws("eks", "DescribeAddon")],
            FactKind::EksNodegroup => ops![aws("eks", "DescribeNodegroup")],
            FactKind::Simulation => ops![aws("iam", "SimulatePrincipalPolicy")],
            FactKind::Ec2Subnets => ops![aws("ec2", "DescribeSubnets")],
            FactKind::Ec2SecurityGroups => ops![aws("ec2", "DescribeSecurityGroups")],
            FactKind::Ec2Images => ops![aws("ec2", "DescribeImages")],
            FactKind::SsmParameters => ops![aws("ssm", "GetParameters")],
            FactKind::IamInstanceProfile => ops![aws("iam", "GetInstanceProfile")],
            FactKind::IamAttachedRolePolicies => ops![aws("iam", "ListAttachedRolePolicies")],
            FactKind::EksAccessEntries => ops![
                aws("eks", "ListAccessEntries"),
                aws("eks", "DescribeAccessEntry")
            ],
            FactKind::EbsDefaults => ops![
                aws("ec2", "GetEbsEncryptionByDefault"),
                aws("ec2", "GetEbsDefaultKmsKeyId")
            ],
            FactKind::KmsKey => ops![aws("kms", "DescribeKey"), aws("kms", "GetKeyPolicy")],
            FactKind::PodLogs => ops![kube("get", "", "pods/log")],
            FactKind::Events => ops![
                kube("list", "", "events"),
                kube("list", "events.k8s.io", "events")
            ],
            FactKind::WebhookConfigurations => ops![
                kube(
                    "list",
                    "admissionregistration.k8s.io",
                    "validatingwebhookconfigurations"
                ),
                kube(
                    "list",
                    "admissionregistration.k8s.io",
                    "mutatingwebhookconfigurations"
                )
            ],
            FactKind::Service => ops![kube("get", "", "services")],
            FactKind::EksFargateProfiles => ops![
                aws("eks", "ListFargateProfiles"),
                aws("eks", "DescribeFargateProfile")
            ],
            FactKind::Ec2InstanceTypes => ops![aws("ec2", "DescribeInstanceTypes")],
            FactKind::Ec2InstanceTypeOfferings => ops![aws("ec2", "DescribeInstanceTypeOfferings")],
            FactKind::SqsQueue => ops![aws("sqs", "GetQueueUrl"), aws("sqs", "GetQueueAttributes")],
            FactKind::SqsQueues => ops![aws("sqs", "ListQueues")],
            FactKind::EventRules => ops![
                aws("events", "ListRuleNamesByTarget"),
                aws("events", "DescribeRule"),
                aws("events", "ListTargetsByRule")
            ],
            // Only the one ConfigMap: the ClusterRole names it (`resourceNames`).
            FactKind::AwsAuth => ops![ApiOp::Kube {
                verb: "get",
                group: "",
                resource: "configmaps",
                name: Some("aws-auth"),
            }],
        }
    }

    /// The service this kind's requests go to: `kubernetes`, or the IAM prefix of the AWS
    /// service (`iam`, `ec2`, …) of its first operation.
    pub fn service(self) -> &'static str {
        match self.operations().first() {
            Some(ApiOp::Aws { service, .. }) => service,
            _ => "kubernetes",
        }
    }

    /// The key of this kind when it takes no parameters (such facts can be prefetched).
    pub fn parameterless_key(self) -> Option<FactKey> {
        match self {
            FactKind::KubeVersion => Some(FactKey::KubeVersion),
            FactKind::OidcProviders => Some(FactKey::OidcProviders),
            FactKind::NodePools => Some(FactKey::NodePools),
            FactKind::Ec2NodeClasses => Some(FactKey::Ec2NodeClasses),
            FactKind::NodeClaims => Some(FactKey::NodeClaims),
            FactKind::CallerIdentity => Some(FactKey::CallerIdentity),
            FactKind::Ec2Subnets => Some(FactKey::Ec2Subnets),
            FactKind::Ec2SecurityGroups => Some(FactKey::Ec2SecurityGroups),
            FactKind::AwsAuth => Some(FactKey::AwsAuth),
            FactKind::EbsDefaults => Some(FactKey::EbsDefaults),
            FactKind::WebhookConfigurations => Some(FactKey::WebhookConfigurations),
            FactKind::Ec2InstanceTypes => Some(FactKey::Ec2InstanceTypes),
            FactKind::Ec2InstanceTypeOfferings => Some(FactKey::Ec2InstanceTypeOfferings),
            FactKind::SqsQueues => Some(FactKey::SqsQueues),
            FactKind::KmsKey
            | FactKind::PodLogs
            | FactKind::Events
            | FactKind::Service
            | FactKind::EksFargateProfiles
            | FactKind::SqsQueue
            | FactKind::EventRules => None,
            FactKind::Ec2Images
            | FactKind::SsmParameters
            | FactKind::IamInstanceProfile
            | FactKind::IamAttachedRolePolicies
            | FactKind::EksAccessEntries
            | FactKind::ControllerDeployments
            | FactKind::Pods
            | FactKind::Crd
            | FactKind::EksCluster
            | FactKind::AccessReview
            | FactKind::ServiceAccount
            | FactKind::IamRole
            | FactKind::PodIdentityAssociations
            | FactKind::Node
            | FactKind::EksAddon
            | FactKind::EksNodegroup
            | FactKind::Simulation => None,
        }
    }
}

impl FactKey {
    pub fn kind(&self) -> FactKind {
        match self {
            FactKey::KubeVersion => FactKind::KubeVersion,
            FactKey::ControllerDeployments { .. } => FactKind::ControllerDeployments,
            FactKey::Pods { .. } => FactKind::Pods,
            FactKey::Crd { .. } => FactKind::Crd,
            FactKey::NodePools => FactKind::NodePools,
            FactKey::Ec2NodeClasses => FactKind::Ec2NodeClasses,
            FactKey::NodeClaims => FactKind::NodeClaims,
            FactKey::CallerIdentity => FactKind::CallerIdentity,
            FactKey::EksCluster { .. } => FactKind::EksCluster,
            FactKey::AccessReview { .. } => FactKind::AccessReview,
            FactKey::ServiceAccount { .. } => FactKind::ServiceAccount,
            FactKey::IamRole { .. } => FactKind::IamRole,
            FactKey::PodIdentityAssociations { .. } => FactKind::PodIdentityAssociations,
            FactKey::OidcProviders => FactKind::OidcProviders,
            FactKey::Node { .. } => FactKind::Node,
            FactKey::EksAddon { .. } => FactKind::EksAddon,
            FactKey::EksNodegroup { .. } => FactKind::EksNodegroup,
            FactKey::Simulation { .. } => FactKind::Simulation,
            FactKey::Ec2Subnets => FactKind::Ec2Subnets,
            FactKey::Ec2SecurityGroups => FactKind::Ec2SecurityGroups,
            FactKey::Ec2Images { .. } => FactKind::Ec2Images,
            FactKey::SsmParameters { .. } => FactKind::SsmParameters,
            FactKey::IamInstanceProfile { .. } => FactKind::IamInstanceProfile,
            FactKey::IamAttachedRolePolicies { .. } => FactKind::IamAttachedRolePolicies,
            FactKey::EksAccessEntries { .. } => FactKind::EksAccessEntries,
            FactKey::AwsAuth => FactKind::AwsAuth,
            FactKey::EbsDefaults => FactKind::EbsDefaults,
            FactKey::KmsKey { .. } => FactKind::KmsKey,
            FactKey::PodLogs { .. } => FactKind::PodLogs,
            FactKey::Events { .. } => FactKind::Events,
            FactKey::WebhookConfigurations => FactKind::WebhookConfigurations,
            FactKey::Service { .. } => FactKind::Service,
            FactKey::EksFargateProfiles { .. } => FactKind::EksFargateProfiles,
            FactKey::Ec2InstanceTypes => FactKind::Ec2InstanceTypes,
            FactKey::Ec2InstanceTypeOfferings => FactKind::Ec2InstanceTypeOfferings,
            FactKey::SqsQueue { .. } => FactKind::SqsQueue,
            FactKey::SqsQueues => FactKind::SqsQueues,
            FactKey::EventRules { .. } => FactKind::EventRules,
        }
    }
}

impl fmt::Display for FactKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactKey::KubeVersion => f.write_str("Kubernetes version"),
            FactKey::ControllerDeployments { namespace: None } => {
                f.write_str("controller Deployments (all namespaces)")
            }
            FactKey::ControllerDeployments {
                namespace: Some(ns),
            } => write!(f, "controller Deployments in {ns}"),
            FactKey::Pods {
                namespace,
                label_selector,
            } => write!(f, "Pods in {namespace} ({label_selector})"),
            FactKey::Crd { name } => write!(f, "CRD {name}"),
            FactKey::NodePools => f.write_str("NodePools"),
            FactKey::Ec2NodeClasses => f.write_str("EC2NodeClasses"),
            FactKey::NodeClaims => f.write_str("NodeClaims"),
            FactKey::CallerIdentity => f.write_str("AWS caller identity"),
            FactKey::EksCluster { name } => write!(f, "EKS cluster {name}"),
            FactKey::ServiceAccount { namespace, name } => {
                write!(f, "ServiceAccount {namespace}/{name}")
            }
            FactKey::IamRole { name } => write!(f, "IAM role {name}"),
            FactKey::OidcProviders => f.write_str("IAM OIDC providers"),
            FactKey::Node { name } => write!(f, "Node {name}"),
            FactKey::EksAddon { cluster, name } => write!(f, "EKS add-on {name} of {cluster}"),
            FactKey::EksNodegroup { cluster, name } => {
                write!(f, "EKS node group {name} of {cluster}")
            }
            FactKey::Simulation {
                principal, actions, ..
            } => write!(
                f,
                "IAM simulation of {} action(s) for {principal}",
                actions.len()
            ),
            FactKey::Ec2Subnets => f.write_str("EC2 subnets"),
            FactKey::Ec2SecurityGroups => f.write_str("EC2 security groups"),
            FactKey::Ec2Images { filters, owners } => {
                let filters: Vec<String> = filters
                    .iter()
                    .map(|x| format!("{}={}", x.name, x.values.join("|")))
                    .collect();
                write!(f, "EC2 images ({})", filters.join(", "))?;
                if !owners.is_empty() {
                    write!(f, " owned by {}", owners.join(", "))?;
                }
                Ok(())
            }
            FactKey::SsmParameters { names } => match names.as_slice() {
                [one] => write!(f, "SSM parameter {one}"),
                many => write!(f, "{} SSM parameters", many.len()),
            },
            FactKey::IamInstanceProfile { name } => write!(f, "IAM instance profile {name}"),
            FactKey::IamAttachedRolePolicies { role } => {
                write!(f, "managed policies attached to IAM role {role}")
            }
            FactKey::EksAccessEntries { cluster } => write!(f, "EKS access entries of {cluster}"),
            FactKey::AwsAuth => f.write_str("ConfigMap kube-system/aws-auth"),
            FactKey::EbsDefaults => f.write_str("EBS encryption defaults"),
            FactKey::KmsKey { key_id } => write!(f, "KMS key {key_id}"),
            FactKey::PodLogs {
                namespace,
                pod,
                container,
                previous,
            } => write!(
                f,
                "{}log of {namespace}/{pod} ({container})",
                if *previous { "previous " } else { "" }
            ),
            FactKey::Events {
                kind,
                namespace: None,
            } => write!(f, "events about {kind}s"),
            FactKey::Events {
                kind,
                namespace: Some(ns),
            } => write!(f, "events about {kind}s in {ns}"),
            FactKey::WebhookConfigurations => f.write_str("admission webhook configurations"),
            FactKey::Service { namespace, name } => write!(f, "Service {namespace}/{name}"),
            FactKey::EksFargateProfiles { cluster } => {
                write!(f, "EKS Fargate profiles of {cluster}")
            }
            FactKey::Ec2InstanceTypes => f.write_str("EC2 instance types"),
            FactKey::Ec2InstanceTypeOfferings => f.write_str("EC2 instance type offerings"),
            FactKey::SqsQueue { name } => write!(f, "SQS queue {name}"),
            FactKey::SqsQueues => f.write_str("SQS queues"),
            FactKey::EventRules { target_arn } => {
                write!(f, "EventBridge rules targeting {target_arn}")
            }
            FactKey::PodIdentityAssociations {
                cluster,
                namespace,
                service_account,
            } => write!(
                f,
                "Pod Identity associations of {namespace}/{service_account} in {cluster}"
            ),
            FactKey::AccessReview {
                verb,
                group,
                resource,
                namespace,
                name,
            } => {
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
            }
        }
    }
}

/// Why a fact could not be read. Cloneable because one failed fetch is shared by every check
/// that needed it. `Forbidden` always means karpdoctor's *own* identity lacks a permission,
/// never that the cluster is misconfigured: checks turn it into `unknown`, not a verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FactError {
    #[error("karpdoctor lacks permission {permission}: {message}")]
    Forbidden { permission: String, message: String },
    #[error("not found: {message}")]
    NotFound { message: String },
    #[error("{what} is not installed")]
    NotInstalled { what: String },
    #[error("throttled: {message}")]
    Throttled { message: String },
    #[error("timed out: {message}")]
    Timeout { message: String },
    #[error("unreachable: {message}")]
    Unreachable { message: String },
    #[error("no AWS credentials: {message}")]
    NoCredentials { message: String },
    #[error("API error: {message}")]
    Api { message: String },
    #[error("unexpected response: {message}")]
    Malformed { message: String },
    #[error("{fact} was not recorded in the bundle")]
    NotRecorded { fact: String },
}

impl FactError {
    /// The permission karpdoctor would need, when that is the cause.
    pub fn missing_permission(&self) -> Option<&str> {
        match self {
            FactError::Forbidden { permission, .. } => Some(permission),
            _ => None,
        }
    }

    /// A stable, short name for the error kind (used in JSON and tests).
    pub fn kind_name(&self) -> &'static str {
        match self {
            FactError::Forbidden { .. } => "forbidden",
            FactError::NotFound { .. } => "notFound",
            FactError::NotInstalled { .. } => "notInstalled",
            FactError::Throttled { .. } => "throttled",
            FactError::Timeout { .. } => "timeout",
            FactError::Unreachable { .. } => "unreachable",
            FactError::NoCredentials { .. } => "noCredentials",
            FactError::Api { .. } => "api",
            FactError::Malformed { .. } => "malformed",
            FactError::NotRecorded { .. } => "notRecorded",
        }
    }
}

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
}

/// One security group (`ec2:DescribeSecurityGroups`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityGroup {
    pub group_id: String,
    pub group_name: String,
    pub vpc_id: String,
    pub tags: std::collections::BTreeMap<String, String>,
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
    pub gpus: i64,
    /// `on-demand`, `spot`, `capacity-block`.
    pub usage_classes: Vec<String>,
    pub hypervisor: String,
    pub bare_metal: bool,
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

/// A fact's value in a replay: the JSON text as the file had it, parsed when a check first asks
/// (text takes several times less memory than the tree parsed from it), or a tree already in memory.
#[derive(Clone, Debug)]
pub enum Stored {
    Text(Box<RawValue>),
    Tree(Value),
}

impl Stored {
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Stored::Text(raw) => serde_json::from_str(raw.get()),
            Stored::Tree(v) => Ok(v),
        }
    }
}

impl<'de> Deserialize<'de> for Stored {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(Stored::Text)
    }
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Stored::Text(raw) => raw.serialize(s),
            Stored::Tree(v) => v.serialize(s),
        }
    }
}
