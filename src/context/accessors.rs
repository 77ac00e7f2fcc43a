//! The typed accessors checks read facts through, one per fact (the table in
//! `crate::facts` fixes each one's value type).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use super::Facts;
use crate::facts::{
    AccessEntry, AccessReview, AssociatedAccessPolicy, AttachedPolicy, CallerIdentity,
    ContextEntry, EbsDefaults, Ec2Filter, Ec2Instance, EksAddon, EksCluster, EksNodegroup,
    EventRule, FactError, FactKey, FargateProfile, IamRole, Image, InstanceProfile, InstanceType,
    InstanceTypeOffering, InternetGateway, KmsGrant, KmsKey, KubeVersion, NatGateway, NetworkAcl,
    OidcProvider, PodIdentityAssociation, RouteTable, SecurityGroup, Snapshot, SqsQueue, Subnet,
    VpcAttributes, VpcEndpoint,
};
use crate::iam::simulation::Row;
use crate::model::{
    AutoNodeClass, ControllerDeployment, Ec2NodeClass, NodeClaim, NodePool, PendingPods,
};

impl Facts {
    pub async fn kube_version(&self) -> Result<Arc<KubeVersion>, FactError> {
        self.get(FactKey::kube_version()).await
    }

    /// Controller Deployments where the run looks for them: the namespace given with
    /// `--namespace`, or every namespace.
    pub async fn controller_deployments(&self) -> Result<Arc<Vec<Deployment>>, FactError> {
        self.get(FactKey::controller_deployments(
            self.hints.namespace.clone(),
        ))
        .await
    }

    /// The controller Deployment this run diagnoses: in the resolved namespace, preferring one
    /// with ready replicas when several exist. `None` when Karpenter is not installed.
    pub async fn controller(&self) -> Result<Option<(Arc<Vec<Deployment>>, usize)>, FactError> {
        let deployments = self.controller_deployments().await?;
        let index = pick_controller(&deployments);
        Ok(index.map(|i| (deployments, i)))
    }

    pub async fn pods(
        &self,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Arc<Vec<Pod>>, FactError> {
        self.get(FactKey::pods(
            namespace.to_string(),
            label_selector.to_string(),
        ))
        .await
    }

    pub async fn pending_pods(&self) -> Result<Arc<PendingPods>, FactError> {
        self.get(FactKey::pending_pods()).await
    }

    /// Bound, unfinished pods of `namespace` that `label_selector` selects.
    pub async fn scheduled_pods(
        &self,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Arc<Vec<Pod>>, FactError> {
        self.get(FactKey::scheduled_pods(
            namespace.to_string(),
            label_selector.to_string(),
        ))
        .await
    }

    /// Pods bound to `node` (any phase), cut down to identity, owner and readiness.
    pub async fn node_pods(&self, node: &str) -> Result<Arc<Vec<Pod>>, FactError> {
        self.get(FactKey::node_pods(node.to_string())).await
    }

    pub async fn nodes(
        &self,
        label_selector: &str,
    ) -> Result<Arc<Vec<crate::model::ListedNode>>, FactError> {
        self.get(FactKey::nodes(label_selector.to_string())).await
    }

    pub async fn daemonsets(&self) -> Result<Arc<Vec<DaemonSet>>, FactError> {
        self.get(FactKey::daemonsets()).await
    }

    pub async fn persistent_volume_claims(
        &self,
    ) -> Result<Arc<Vec<PersistentVolumeClaim>>, FactError> {
        self.get(FactKey::persistent_volume_claims()).await
    }

    pub async fn persistent_volumes(&self) -> Result<Arc<Vec<PersistentVolume>>, FactError> {
        self.get(FactKey::persistent_volumes()).await
    }

    pub async fn csi_nodes(
        &self,
    ) -> Result<Arc<Vec<k8s_openapi::api::storage::v1::CSINode>>, FactError> {
        self.get(FactKey::csi_nodes()).await
    }

    pub async fn volume_attachments(
        &self,
    ) -> Result<Arc<Vec<k8s_openapi::api::storage::v1::VolumeAttachment>>, FactError> {
        self.get(FactKey::volume_attachments()).await
    }

    pub async fn pod_disruption_budgets(
        &self,
    ) -> Result<Arc<Vec<k8s_openapi::api::policy::v1::PodDisruptionBudget>>, FactError> {
        self.get(FactKey::pod_disruption_budgets()).await
    }

    pub async fn pinned_workloads(
        &self,
    ) -> Result<Arc<Vec<crate::model::PinnedWorkload>>, FactError> {
        self.get(FactKey::pinned_workloads()).await
    }

    pub async fn storage_classes(&self) -> Result<Arc<Vec<StorageClass>>, FactError> {
        self.get(FactKey::storage_classes()).await
    }

    pub async fn crd(
        &self,
        name: &str,
    ) -> Result<Arc<Option<CustomResourceDefinition>>, FactError> {
        self.get(FactKey::crd(name.to_string())).await
    }

    pub async fn nodepools(&self) -> Result<Arc<Vec<NodePool>>, FactError> {
        self.get(FactKey::nodepools()).await
    }

    pub async fn ec2_nodeclasses(&self) -> Result<Arc<Vec<Ec2NodeClass>>, FactError> {
        self.get(FactKey::ec2_nodeclasses()).await
    }

    /// EKS Auto Mode's NodeClasses; none where the cluster does not serve the kind.
    pub async fn auto_nodeclasses(&self) -> Result<Arc<Vec<AutoNodeClass>>, FactError> {
        match self.get(FactKey::auto_nodeclasses()).await {
            Err(FactError::NotInstalled { .. }) => Ok(Arc::new(Vec::new())),
            other => other,
        }
    }

    pub async fn nodeclaims(&self) -> Result<Arc<Vec<NodeClaim>>, FactError> {
        self.get(FactKey::nodeclaims()).await
    }

    pub async fn caller_identity(&self) -> Result<Arc<CallerIdentity>, FactError> {
        self.get(FactKey::caller_identity()).await
    }

    /// May karpdoctor's own identity do this? (SelfSubjectAccessReview)
    pub async fn access_review(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Arc<AccessReview>, FactError> {
        self.get(FactKey::access_review(
            verb.to_string(),
            group.to_string(),
            resource.to_string(),
            namespace.map(str::to_string),
            name.map(str::to_string),
        ))
        .await
    }

    pub async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::ServiceAccount>>, FactError> {
        self.get(FactKey::service_account(
            namespace.to_string(),
            name.to_string(),
        ))
        .await
    }

    pub async fn node(
        &self,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::Node>>, FactError> {
        self.get(FactKey::node(name.to_string())).await
    }

    pub async fn eks_addon(
        &self,
        cluster: &str,
        name: &str,
    ) -> Result<Arc<Option<EksAddon>>, FactError> {
        self.get(FactKey::eks_addon(cluster.to_string(), name.to_string()))
            .await
    }

    pub async fn eks_nodegroup(
        &self,
        cluster: &str,
        name: &str,
    ) -> Result<Arc<Option<EksNodegroup>>, FactError> {
        self.get(FactKey::eks_nodegroup(
            cluster.to_string(),
            name.to_string(),
        ))
        .await
    }

    /// `iam:SimulatePrincipalPolicy` of `principal`, as rows (one per action and resource).
    /// The request context real requests carry (`aws:RequestedRegion` per action,
    /// `aws:PrincipalArn`) is added here, for every simulation of every check: actions sent to
    /// different regions become separate simulations (see `iam::request`).
    pub async fn simulate(
        &self,
        principal: &str,
        actions: &[String],
        resources: &[String],
        context: &[ContextEntry],
    ) -> Result<Vec<Row>, FactError> {
        let region = self.target().region;
        let requests =
            crate::iam::request::requests(principal, actions, context, region.as_deref());
        let answers = futures::future::join_all(requests.into_iter().map(|(actions, context)| {
            self.get(FactKey::simulation(
                principal.to_string(),
                actions,
                resources.to_vec(),
                context,
            ))
        }))
        .await;
        let mut rows = Vec::new();
        for raw in answers {
            rows.extend(crate::iam::simulation::normalise(&raw?));
        }
        Ok(rows)
    }

    pub async fn oidc_providers(&self) -> Result<Arc<Vec<OidcProvider>>, FactError> {
        self.get(FactKey::oidc_providers()).await
    }

    pub async fn iam_role(&self, name: &str) -> Result<Arc<Option<IamRole>>, FactError> {
        self.get(FactKey::iam_role(name.to_string())).await
    }

    pub async fn pod_identity_associations(
        &self,
        cluster: &str,
        namespace: &str,
        service_account: &str,
    ) -> Result<Arc<Vec<PodIdentityAssociation>>, FactError> {
        self.get(FactKey::pod_identity_associations(
            cluster.to_string(),
            namespace.to_string(),
            service_account.to_string(),
        ))
        .await
    }

    pub async fn subnets(&self) -> Result<Arc<Vec<Subnet>>, FactError> {
        self.get(FactKey::ec2_subnets()).await
    }

    pub async fn security_groups(&self) -> Result<Arc<Vec<SecurityGroup>>, FactError> {
        self.get(FactKey::ec2_security_groups()).await
    }

    pub async fn vpc_attributes(
        &self,
        vpc_id: &str,
    ) -> Result<Arc<Option<VpcAttributes>>, FactError> {
        self.get(FactKey::ec2_vpc_attributes(vpc_id.to_string()))
            .await
    }

    pub async fn route_tables(&self, vpc_id: &str) -> Result<Arc<Vec<RouteTable>>, FactError> {
        self.get(FactKey::ec2_route_tables(vpc_id.to_string()))
            .await
    }

    pub async fn nat_gateways(&self, vpc_id: &str) -> Result<Arc<Vec<NatGateway>>, FactError> {
        self.get(FactKey::ec2_nat_gateways(vpc_id.to_string()))
            .await
    }

    pub async fn internet_gateways(
        &self,
        vpc_id: &str,
    ) -> Result<Arc<Vec<InternetGateway>>, FactError> {
        self.get(FactKey::ec2_internet_gateways(vpc_id.to_string()))
            .await
    }

    pub async fn vpc_endpoints(&self, vpc_id: &str) -> Result<Arc<Vec<VpcEndpoint>>, FactError> {
        self.get(FactKey::ec2_vpc_endpoints(vpc_id.to_string()))
            .await
    }

    pub async fn network_acls(&self, vpc_id: &str) -> Result<Arc<Vec<NetworkAcl>>, FactError> {
        self.get(FactKey::ec2_network_acls(vpc_id.to_string()))
            .await
    }

    /// The images one AMI selector term matches (see `ec2::selectors::image_query`).
    pub async fn images(
        &self,
        filters: Vec<Ec2Filter>,
        owners: Vec<String>,
    ) -> Result<Arc<Vec<Image>>, FactError> {
        self.get(FactKey::ec2_images(filters, owners)).await
    }

    /// SSM parameter values by name; `None` for a parameter that does not exist. Callers
    /// pass the names sorted and deduplicated so one set of names is one fact.
    pub async fn ssm_parameters(
        &self,
        names: &[String],
    ) -> Result<Arc<BTreeMap<String, Option<String>>>, FactError> {
        self.get(FactKey::ssm_parameters(names.to_vec())).await
    }

    pub async fn instance_profile(
        &self,
        name: &str,
    ) -> Result<Arc<Option<InstanceProfile>>, FactError> {
        self.get(FactKey::iam_instance_profile(name.to_string()))
            .await
    }

    pub async fn attached_role_policies(
        &self,
        role: &str,
    ) -> Result<Arc<Vec<AttachedPolicy>>, FactError> {
        self.get(FactKey::iam_attached_role_policies(role.to_string()))
            .await
    }

    /// The names of a role's inline policies.
    pub async fn role_policy_names(&self, role: &str) -> Result<Arc<Vec<String>>, FactError> {
        self.get(FactKey::iam_role_policy_names(role.to_string()))
            .await
    }

    pub async fn access_entries(&self, cluster: &str) -> Result<Arc<Vec<AccessEntry>>, FactError> {
        self.get(FactKey::eks_access_entries(cluster.to_string()))
            .await
    }

    /// The access policies of one access entry.
    pub async fn access_policies(
        &self,
        cluster: &str,
        principal: &str,
    ) -> Result<Arc<Vec<AssociatedAccessPolicy>>, FactError> {
        self.get(FactKey::eks_access_policies(
            cluster.to_string(),
            principal.to_string(),
        ))
        .await
    }

    /// The churn record of the runs before this one (`--history`), oldest first; `None` when
    /// the run keeps no history.
    pub async fn churn_history(
        &self,
    ) -> Option<Result<Arc<Vec<crate::model::ChurnSample>>, FactError>> {
        let configmap = self.hints.history.clone()?;
        Some(self.get(FactKey::churn_history(configmap)).await)
    }

    pub async fn aws_auth(
        &self,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::ConfigMap>>, FactError> {
        self.get(FactKey::aws_auth()).await
    }

    pub async fn ebs_defaults(&self) -> Result<Arc<EbsDefaults>, FactError> {
        self.get(FactKey::ebs_defaults()).await
    }

    pub async fn kms_key(&self, key_id: &str) -> Result<Arc<Option<KmsKey>>, FactError> {
        self.get(FactKey::kms_key(key_id.to_string())).await
    }

    pub async fn ec2_snapshots(&self, ids: &[String]) -> Result<Arc<Vec<Snapshot>>, FactError> {
        self.get(FactKey::ec2_snapshots(ids.to_vec())).await
    }

    pub async fn ec2_instances(&self, ids: &[String]) -> Result<Arc<Vec<Ec2Instance>>, FactError> {
        self.get(FactKey::ec2_instances(ids.to_vec())).await
    }

    pub async fn console_output(
        &self,
        instance_id: &str,
    ) -> Result<Arc<Option<String>>, FactError> {
        self.get(FactKey::ec2_console_output(instance_id.to_string()))
            .await
    }

    pub async fn kms_grants(
        &self,
        key_id: &str,
        grantee: &str,
    ) -> Result<Arc<Vec<KmsGrant>>, FactError> {
        self.get(FactKey::kms_grants(key_id.to_string(), grantee.to_string()))
            .await
    }

    /// The last lines of one container's log; `None` when that log does not exist.
    pub async fn pod_logs(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Result<Arc<Option<String>>, FactError> {
        self.get(FactKey::pod_logs(
            namespace.to_string(),
            pod.to_string(),
            container.to_string(),
            previous,
        ))
        .await
    }

    /// Events about objects of `kind`, newest first, deduplicated across the two events APIs.
    /// Events of `reason` about objects of `kind`, the newest per object.
    pub async fn events_by_reason(
        &self,
        kind: &str,
        reason: &str,
    ) -> Result<Arc<crate::events::Latest>, FactError> {
        self.get(FactKey::events_by_reason(
            kind.to_string(),
            reason.to_string(),
        ))
        .await
    }

    pub async fn events(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Arc<crate::events::Events>, FactError> {
        self.get(FactKey::events(
            kind.to_string(),
            namespace.map(str::to_string),
        ))
        .await
    }

    pub async fn webhook_configurations(&self) -> Result<Arc<Vec<Value>>, FactError> {
        self.get(FactKey::webhook_configurations()).await
    }

    pub async fn service(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::Service>>, FactError> {
        self.get(FactKey::service(namespace.to_string(), name.to_string()))
            .await
    }

    pub async fn fargate_profiles(
        &self,
        cluster: &str,
    ) -> Result<Arc<Vec<FargateProfile>>, FactError> {
        self.get(FactKey::eks_fargate_profiles(cluster.to_string()))
            .await
    }

    pub async fn instance_types(&self) -> Result<Arc<Vec<InstanceType>>, FactError> {
        self.get(FactKey::ec2_instance_types()).await
    }

    pub async fn instance_type_offerings(
        &self,
    ) -> Result<Arc<Vec<InstanceTypeOffering>>, FactError> {
        self.get(FactKey::ec2_instance_type_offerings()).await
    }

    pub async fn sqs_queue(&self, name: &str) -> Result<Arc<Option<SqsQueue>>, FactError> {
        self.get(FactKey::sqs_queue(name.to_string())).await
    }

    pub async fn sqs_queues(&self) -> Result<Arc<Vec<String>>, FactError> {
        self.get(FactKey::sqs_queues()).await
    }

    pub async fn event_rules(&self, target_arn: &str) -> Result<Arc<Vec<EventRule>>, FactError> {
        self.get(FactKey::event_rules(target_arn.to_string())).await
    }

    pub async fn eks_cluster(&self, name: &str) -> Result<Arc<Option<EksCluster>>, FactError> {
        self.get(FactKey::eks_cluster(name.to_string())).await
    }
}

/// Chooses the controller among candidate Deployments: ready ones first, then by namespace
/// and name so the choice is deterministic.
fn pick_controller(deployments: &[Deployment]) -> Option<usize> {
    (0..deployments.len()).min_by_key(|&i| {
        let c = ControllerDeployment::new(&deployments[i]);
        (c.ready_replicas() == 0, c.namespace(), c.name())
    })
}
