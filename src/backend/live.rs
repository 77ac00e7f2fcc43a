//! Facts from the live Kubernetes and AWS APIs.
//!
//! The standard chains do the work: kubeconfig (`KUBECONFIG`, contexts, exec plugins such as
//! `aws eks get-token`, in-cluster service accounts) through kube-rs, and the AWS default
//! chain (`AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL` and its per-service variants, SSO,
//! web identity) through aws-config. Both clients carry the read-only guard.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_sts::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::error::display::DisplayErrorContext;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::error::Error;
use crate::facts::{ApiService, FactError, FactKey};
use crate::guard::{ApiLog, AwsGuard};
use crate::model::is_controller_image;

/// How to reach the APIs, from the command line.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
    /// Bound for one API request (the per-check timeout).
    pub request_timeout: Duration,
    /// Run without a Kubernetes API when no kubeconfig can be read (`pre-install`): kube
    /// facts then fail as unreachable instead of the run failing to start.
    pub kube_optional: bool,
}

/// What the kube side learned while connecting: shown in the header and used as hints.
#[derive(Clone, Debug, Default)]
pub struct KubeTarget {
    pub context: Option<String>,
    pub context_cluster: Option<String>,
    pub server: Option<String>,
}

struct AwsClients {
    sts: aws_sdk_sts::Client,
    eks: aws_sdk_eks::Client,
    iam: aws_sdk_iam::Client,
    ec2: aws_sdk_ec2::Client,
    ssm: aws_sdk_ssm::Client,
    kms: aws_sdk_kms::Client,
    sqs: aws_sdk_sqs::Client,
    events: aws_sdk_eventbridge::Client,
}

/// Requests in flight at once for fan-out reads (one describe per listed item): enough to
/// hide latency, few enough to stay clear of the services' throttling.
const FAN_OUT: usize = 8;

/// Facts fetched at once per service. IAM throttles early (simulations are batched, one call
/// per fact, never one per action) so it gets fewer; the API server serves lists cheaply.
/// Fan-out inside one fact adds at most [`FAN_OUT`] more requests per permit.
fn service_limit(service: ApiService) -> usize {
    match service {
        ApiService::Kubernetes => 16,
        ApiService::Iam => 6,
        _ => 8,
    }
}

pub struct Live {
    kube: Option<kube::Client>,
    limits: Mutex<std::collections::HashMap<ApiService, std::sync::Arc<tokio::sync::Semaphore>>>,
    pub kube_target: KubeTarget,
    options: LiveOptions,
    region: Mutex<Option<String>>,
    aws: OnceCell<AwsClients>,
    log: ApiLog,
}

/// Items per page of a Kubernetes list: large enough for few round trips, small enough to
/// keep API server memory and response size bounded on big clusters.
const PAGE_SIZE: u32 = 500;

/// How much of a container log is read: the recent past is what explains a failure, and a
/// bounded read keeps a chatty controller from filling memory or a bundle.
const LOG_LINES: i64 = 500;
const LOG_BYTES: i64 = 1 << 20;

/// Events read per API and kind: the newest matter; a cluster with thousands of old events
/// about NodeClaims must not make the run slow.
const MAX_EVENTS: usize = 1000;

impl Live {
    /// Connects the kube side (reads the kubeconfig; no request is sent yet).
    pub async fn connect(options: LiveOptions, log: ApiLog) -> Result<Self, Error> {
        let (kube, kube_target) = match kube_config(&options).await {
            Ok((config, target)) => (Some(guarded_kube_client(config, log.clone())?), target),
            Err(_) if options.kube_optional => (None, KubeTarget::default()),
            Err(e) => return Err(e),
        };
        Ok(Live {
            kube,
            kube_target,
            region: Mutex::new(options.region.clone()),
            limits: Mutex::default(),
            options,
            aws: OnceCell::new(),
            log,
        })
    }

    /// The Kubernetes client; absent only in runs that need no Kubernetes API.
    fn kube(&self) -> Result<kube::Client, FactError> {
        self.kube.clone().ok_or_else(|| FactError::Unreachable {
            message: "no Kubernetes API configured (no kubeconfig could be read)".to_string(),
        })
    }

    pub fn api_log(&self) -> &ApiLog {
        &self.log
    }

    /// The region of AWS requests, settled before the first AWS fact is read.
    pub fn set_region(&self, region: Option<String>) {
        *self.region.lock().unwrap_or_else(|p| p.into_inner()) = region;
    }

    /// The region the AWS default chain resolves (`AWS_REGION`, the profile), if any.
    pub async fn chain_region(&self) -> Option<String> {
        if let Some(r) = &self.options.region {
            return Some(r.clone());
        }
        let mut chain = aws_config::default_provider::region::DefaultRegionChain::builder();
        if let Some(p) = &self.options.profile {
            chain = chain.profile_name(p);
        }
        chain.build().region().await.map(|r| r.to_string())
    }

    async fn aws(&self) -> Result<&AwsClients, FactError> {
        self.aws
            .get_or_try_init(|| async {
                let region = self
                    .region
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .ok_or_else(|| FactError::NoCredentials {
                        message: "no AWS region: pass --region or set AWS_REGION".to_string(),
                    })?;
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .region(aws_config::Region::new(region))
                    .timeout_config(
                        TimeoutConfig::builder()
                            .connect_timeout(
                                Duration::from_secs(5).min(self.options.request_timeout),
                            )
                            .operation_timeout(self.options.request_timeout)
                            .build(),
                    );
                if let Some(p) = &self.options.profile {
                    loader = loader.profile_name(p);
                }
                let sdk = loader.load().await;
                let guard = AwsGuard {
                    log: self.log.clone(),
                };
                Ok(AwsClients {
                    sts: aws_sdk_sts::Client::from_conf(
                        aws_sdk_sts::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    eks: aws_sdk_eks::Client::from_conf(
                        aws_sdk_eks::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    iam: aws_sdk_iam::Client::from_conf(
                        aws_sdk_iam::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    ec2: aws_sdk_ec2::Client::from_conf(
                        aws_sdk_ec2::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    ssm: aws_sdk_ssm::Client::from_conf(
                        aws_sdk_ssm::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    kms: aws_sdk_kms::Client::from_conf(
                        aws_sdk_kms::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    sqs: aws_sdk_sqs::Client::from_conf(
                        aws_sdk_sqs::config::Builder::from(&sdk)
                            .interceptor(guard.clone())
                            .build(),
                    ),
                    events: aws_sdk_eventbridge::Client::from_conf(
                        aws_sdk_eventbridge::config::Builder::from(&sdk)
                            .interceptor(guard)
                            .build(),
                    ),
                })
            })
            .await
    }

    /// Fetches one fact, within its service's concurrency limit.
    pub async fn fetch(&self, key: &FactKey) -> Result<Value, FactError> {
        let service = key.kind().service();
        let limit = {
            let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
            std::sync::Arc::clone(limits.entry(service).or_insert_with(|| {
                std::sync::Arc::new(tokio::sync::Semaphore::new(service_limit(service)))
            }))
        };
        // The semaphore is never closed, so acquiring cannot fail; fetch unbounded if it did.
        let _permit = limit.acquire_owned().await.ok();
        self.fetch_unbounded(key).await
    }

    async fn fetch_unbounded(&self, key: &FactKey) -> Result<Value, FactError> {
        match key {
            FactKey::KubeVersion => {
                let info = self
                    .kube()?
                    .apiserver_version()
                    .await
                    .map_err(|e| kube_error("get /version", e))?;
                Ok(json!({
                    "major": info.major,
                    "minor": info.minor,
                    "gitVersion": info.git_version,
                }))
            }
            FactKey::ControllerDeployments { namespace } => {
                let all = self.list(&DEPLOYMENTS, namespace.as_deref(), None).await?;
                Ok(Value::Array(
                    all.into_iter().filter(looks_like_controller).collect(),
                ))
            }
            FactKey::Pods {
                namespace,
                label_selector,
            } => Ok(Value::Array(
                self.list(&PODS, Some(namespace), Some(label_selector))
                    .await?,
            )),
            FactKey::Crd { name } => self.get_object(&CRDS, None, name).await,
            FactKey::NodePools => Ok(Value::Array(self.list(&NODEPOOLS, None, None).await?)),
            FactKey::Ec2NodeClasses => {
                Ok(Value::Array(self.list(&EC2NODECLASSES, None, None).await?))
            }
            FactKey::NodeClaims => Ok(Value::Array(self.list(&NODECLAIMS, None, None).await?)),
            FactKey::AccessReview {
                verb,
                group,
                resource,
                namespace,
                name,
            } => {
                use k8s_openapi::api::authorization::v1::{
                    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
                };
                let review = SelfSubjectAccessReview {
                    spec: SelfSubjectAccessReviewSpec {
                        resource_attributes: Some(ResourceAttributes {
                            verb: Some(verb.clone()),
                            group: Some(group.clone()),
                            // `pods/log` is the resource `pods` with the subresource `log`.
                            resource: Some(
                                resource.split('/').next().unwrap_or_default().to_string(),
                            ),
                            subresource: resource.split_once('/').map(|(_, s)| s.to_string()),
                            namespace: namespace.clone(),
                            name: name.clone(),
                            ..ResourceAttributes::default()
                        }),
                        ..SelfSubjectAccessReviewSpec::default()
                    },
                    ..SelfSubjectAccessReview::default()
                };
                let api: Api<SelfSubjectAccessReview> = Api::all(self.kube()?);
                let answer = api
                    .create(&kube::api::PostParams::default(), &review)
                    .await
                    .map_err(|e| {
                        kube_error("create selfsubjectaccessreviews.authorization.k8s.io", e)
                    })?;
                let status = answer.status.unwrap_or_default();
                Ok(json!({
                    "allowed": status.allowed,
                    "reason": status.reason.unwrap_or_default(),
                }))
            }
            FactKey::ServiceAccount { namespace, name } => {
                self.get_object(&SERVICEACCOUNTS, Some(namespace), name)
                    .await
            }
            FactKey::IamRole { name } => {
                let res = self
                    .aws()
                    .await?
                    .iam
                    .get_role()
                    .role_name(name)
                    .send()
                    .await;
                let Some(out) =
                    absent_as_none("iam:GetRole", res, |e| e.is_no_such_entity_exception())?
                else {
                    return Ok(Value::Null);
                };
                let Some(role) = out.role() else {
                    return Ok(Value::Null);
                };
                Ok(json!({
                    "name": role.role_name(),
                    "arn": role.arn(),
                    "path": role.path(),
                    "trustPolicy": role.assume_role_policy_document().unwrap_or_default(),
                    "permissionsBoundaryArn": role.permissions_boundary().and_then(|b| b.permissions_boundary_arn()),
                }))
            }
            FactKey::Node { name } => self.get_object(&NODES, None, name).await,
            FactKey::EksAddon { cluster, name } => {
                let res = self
                    .aws()
                    .await?
                    .eks
                    .describe_addon()
                    .cluster_name(cluster)
                    .addon_name(name)
                    .send()
                    .await;
                let Some(out) = absent_as_none("eks:DescribeAddon", res, |e| {
                    e.is_resource_not_found_exception()
                })?
                else {
                    return Ok(Value::Null);
                };
                Ok(match out.addon() {
                    Some(a) => json!({
                        "name": a.addon_name().unwrap_or_default(),
                        "status": a.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
                        "version": a.addon_version().unwrap_or_default(),
                    }),
                    None => Value::Null,
                })
            }
            FactKey::EksNodegroup { cluster, name } => {
                let res = self
                    .aws()
                    .await?
                    .eks
                    .describe_nodegroup()
                    .cluster_name(cluster)
                    .nodegroup_name(name)
                    .send()
                    .await;
                let Some(out) = absent_as_none("eks:DescribeNodegroup", res, |e| {
                    e.is_resource_not_found_exception()
                })?
                else {
                    return Ok(Value::Null);
                };
                Ok(match out.nodegroup() {
                    Some(n) => json!({
                        "name": n.nodegroup_name().unwrap_or_default(),
                        "nodeRole": n.node_role().unwrap_or_default(),
                        "status": n.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
                    }),
                    None => Value::Null,
                })
            }
            FactKey::Simulation {
                principal,
                actions,
                resources,
                context,
            } => {
                use aws_sdk_iam::types::{ContextEntry, ContextKeyTypeEnum};
                let entries = context
                    .iter()
                    .map(|c| {
                        ContextEntry::builder()
                            .context_key_name(&c.key)
                            .context_key_type(ContextKeyTypeEnum::from(c.kind.as_str()))
                            .set_context_key_values(Some(c.values.clone()))
                            .build()
                    })
                    .collect();
                // One request for every action and resource: IAM pages the answer (Marker)
                // rather than karpdoctor sending one call per action.
                let mut pages = self
                    .aws()
                    .await?
                    .iam
                    .simulate_principal_policy()
                    .policy_source_arn(principal)
                    .set_action_names(Some(actions.clone()))
                    .set_resource_arns((!resources.is_empty()).then(|| resources.clone()))
                    .set_context_entries(Some(entries))
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("iam:SimulatePrincipalPolicy", e))?;
                    out.extend(raw_simulation_results(page.evaluation_results()));
                }
                to_value(out)
            }
            FactKey::OidcProviders => {
                let iam = &self.aws().await?.iam;
                let listed = iam
                    .list_open_id_connect_providers()
                    .send()
                    .await
                    .map_err(|e| aws_error("iam:ListOpenIDConnectProviders", e))?;
                let arns: Vec<String> = listed
                    .open_id_connect_provider_list()
                    .iter()
                    .filter_map(|p| p.arn().map(str::to_string))
                    .collect();
                let details = futures::future::join_all(arns.iter().map(|arn| {
                    iam.get_open_id_connect_provider()
                        .open_id_connect_provider_arn(arn)
                        .send()
                }))
                .await;
                let mut out = Vec::new();
                for (arn, d) in arns.iter().zip(details) {
                    let d = d.map_err(|e| aws_error("iam:GetOpenIDConnectProvider", e))?;
                    out.push(json!({
                        "arn": arn,
                        "url": d.url().unwrap_or_default().trim_start_matches("https://"),
                        "clientIds": d.client_id_list(),
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::PodIdentityAssociations {
                cluster,
                namespace,
                service_account,
            } => {
                let eks = &self.aws().await?.eks;
                let mut ids = Vec::new();
                let mut pages = eks
                    .list_pod_identity_associations()
                    .cluster_name(cluster)
                    .namespace(namespace)
                    .service_account(service_account)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("eks:ListPodIdentityAssociations", e))?;
                    ids.extend(
                        page.associations()
                            .iter()
                            .filter_map(|a| a.association_id().map(str::to_string)),
                    );
                }
                let described = futures::future::join_all(ids.iter().map(|id| {
                    eks.describe_pod_identity_association()
                        .cluster_name(cluster)
                        .association_id(id)
                        .send()
                }))
                .await;
                let mut out = Vec::new();
                for d in described {
                    let d = d.map_err(|e| aws_error("eks:DescribePodIdentityAssociation", e))?;
                    if let Some(a) = d.association() {
                        out.push(json!({
                            "associationId": a.association_id().unwrap_or_default(),
                            "namespace": a.namespace().unwrap_or_default(),
                            "serviceAccount": a.service_account().unwrap_or_default(),
                            "roleArn": a.role_arn().unwrap_or_default(),
                        }));
                    }
                }
                Ok(Value::Array(out))
            }
            FactKey::Ec2Subnets => {
                let mut pages = self
                    .aws()
                    .await?
                    .ec2
                    .describe_subnets()
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("ec2:DescribeSubnets", e))?;
                    out.extend(page.subnets().iter().map(|s| {
                        json!({
                            "subnetId": s.subnet_id().unwrap_or_default(),
                            "vpcId": s.vpc_id().unwrap_or_default(),
                            "availabilityZone": s.availability_zone().unwrap_or_default(),
                            "availabilityZoneId": s.availability_zone_id().unwrap_or_default(),
                            "cidrBlock": s.cidr_block().unwrap_or_default(),
                            "availableIpAddressCount": s.available_ip_address_count().unwrap_or_default(),
                            "tags": ec2_tags(s.tags()),
                        })
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::Ec2SecurityGroups => {
                let mut pages = self
                    .aws()
                    .await?
                    .ec2
                    .describe_security_groups()
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("ec2:DescribeSecurityGroups", e))?;
                    out.extend(page.security_groups().iter().map(|g| {
                        json!({
                            "groupId": g.group_id().unwrap_or_default(),
                            "groupName": g.group_name().unwrap_or_default(),
                            "vpcId": g.vpc_id().unwrap_or_default(),
                            "tags": ec2_tags(g.tags()),
                        })
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::Ec2Images { filters, owners } => {
                use aws_sdk_ec2::types::Filter;
                let mut pages = self
                    .aws()
                    .await?
                    .ec2
                    .describe_images()
                    .set_filters(Some(
                        filters
                            .iter()
                            .map(|f| {
                                Filter::builder()
                                    .name(&f.name)
                                    .set_values(Some(f.values.clone()))
                                    .build()
                            })
                            .collect(),
                    ))
                    .set_owners((!owners.is_empty()).then(|| owners.clone()))
                    // Karpenter still uses a deprecated image when nothing newer matches.
                    .include_deprecated(true)
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("ec2:DescribeImages", e))?;
                    out.extend(page.images().iter().map(|i| {
                        json!({
                            "imageId": i.image_id().unwrap_or_default(),
                            "name": i.name().unwrap_or_default(),
                            "architecture": i.architecture().map(|a| a.as_str().to_string()).unwrap_or_default(),
                            "state": i.state().map(|a| a.as_str().to_string()).unwrap_or_default(),
                            "ownerId": i.owner_id().unwrap_or_default(),
                            "creationDate": i.creation_date(),
                            "deprecationTime": i.deprecation_time(),
                            "tags": ec2_tags(i.tags()),
                        })
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::SsmParameters { names } => {
                let ssm = &self.aws().await?.ssm;
                // GetParameters takes at most ten names per request.
                let answers = futures::future::join_all(
                    names
                        .chunks(10)
                        .map(|chunk| ssm.get_parameters().set_names(Some(chunk.to_vec())).send()),
                )
                .await;
                let mut out = serde_json::Map::new();
                for answer in answers {
                    let answer = answer.map_err(|e| aws_error("ssm:GetParameters", e))?;
                    for p in answer.parameters() {
                        if let Some(name) = p.name() {
                            out.insert(name.to_string(), json!(p.value()));
                        }
                    }
                    for missing in answer.invalid_parameters() {
                        out.insert(missing.clone(), Value::Null);
                    }
                }
                Ok(Value::Object(out))
            }
            FactKey::IamInstanceProfile { name } => {
                let res = self
                    .aws()
                    .await?
                    .iam
                    .get_instance_profile()
                    .instance_profile_name(name)
                    .send()
                    .await;
                let Some(out) = absent_as_none("iam:GetInstanceProfile", res, |e| {
                    e.is_no_such_entity_exception()
                })?
                else {
                    return Ok(Value::Null);
                };
                Ok(match out.instance_profile() {
                    Some(p) => json!({
                        "name": p.instance_profile_name(),
                        "arn": p.arn(),
                        "path": p.path(),
                        "roles": p.roles().iter().map(|r| r.arn()).collect::<Vec<_>>(),
                    }),
                    None => Value::Null,
                })
            }
            FactKey::IamAttachedRolePolicies { role } => {
                let mut pages = self
                    .aws()
                    .await?
                    .iam
                    .list_attached_role_policies()
                    .role_name(role)
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("iam:ListAttachedRolePolicies", e))?;
                    out.extend(page.attached_policies().iter().map(|p| {
                        json!({
                            "policyName": p.policy_name().unwrap_or_default(),
                            "policyArn": p.policy_arn().unwrap_or_default(),
                        })
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::EksAccessEntries { cluster } => {
                let eks = &self.aws().await?.eks;
                let mut principals = Vec::new();
                let mut pages = eks
                    .list_access_entries()
                    .cluster_name(cluster)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("eks:ListAccessEntries", e))?;
                    principals.extend(page.access_entries().iter().cloned());
                }
                // Bounded fan-out: FAN_OUT describes in flight, batch after batch.
                let mut described = Vec::new();
                for batch in principals.chunks(FAN_OUT) {
                    described.extend(
                        futures::future::join_all(batch.iter().map(|p| {
                            eks.describe_access_entry()
                                .cluster_name(cluster)
                                .principal_arn(p)
                                .send()
                        }))
                        .await,
                    );
                }
                let mut out = Vec::new();
                for d in described {
                    let d = d.map_err(|e| aws_error("eks:DescribeAccessEntry", e))?;
                    if let Some(a) = d.access_entry() {
                        out.push(json!({
                            "principalArn": a.principal_arn().unwrap_or_default(),
                            "type": a.r#type().unwrap_or_default(),
                            "username": a.username().unwrap_or_default(),
                            "kubernetesGroups": a.kubernetes_groups(),
                        }));
                    }
                }
                Ok(Value::Array(out))
            }
            FactKey::EbsDefaults => {
                let ec2 = &self.aws().await?.ec2;
                let (by_default, key) = futures::future::join(
                    ec2.get_ebs_encryption_by_default().send(),
                    ec2.get_ebs_default_kms_key_id().send(),
                )
                .await;
                let by_default =
                    by_default.map_err(|e| aws_error("ec2:GetEbsEncryptionByDefault", e))?;
                let key = key.map_err(|e| aws_error("ec2:GetEbsDefaultKmsKeyId", e))?;
                Ok(json!({
                    "encryptedByDefault": by_default.ebs_encryption_by_default().unwrap_or(false),
                    "defaultKmsKeyId": key.kms_key_id().unwrap_or("alias/aws/ebs"),
                }))
            }
            FactKey::KmsKey { key_id } => {
                let kms = &self.aws().await?.kms;
                let res = kms.describe_key().key_id(key_id).send().await;
                let Some(out) =
                    absent_as_none("kms:DescribeKey", res, |e| e.is_not_found_exception())?
                else {
                    return Ok(Value::Null);
                };
                let Some(meta) = out.key_metadata() else {
                    return Ok(Value::Null);
                };
                // The policy is read by key id: GetKeyPolicy does not take aliases.
                let policy = kms
                    .get_key_policy()
                    .key_id(meta.key_id())
                    .send()
                    .await
                    .map_err(|e| aws_error("kms:GetKeyPolicy", e))?;
                Ok(json!({
                    "keyId": meta.key_id(),
                    "arn": meta.arn(),
                    "keyManager": meta.key_manager().map(|m| m.as_str().to_string()),
                    "keyState": meta.key_state().map(|m| m.as_str().to_string()),
                    "policy": policy.policy().unwrap_or_default(),
                }))
            }
            // The later fact kinds live in their own future, boxed: one match over every
            // kind makes a future as large as its largest arm, and a debug build's task stack
            // overflowed once the EventBridge and SQS arms joined.
            FactKey::PodLogs { .. }
            | FactKey::Events { .. }
            | FactKey::WebhookConfigurations
            | FactKey::Service { .. }
            | FactKey::EksFargateProfiles { .. }
            | FactKey::Ec2InstanceTypes
            | FactKey::Ec2InstanceTypeOfferings
            | FactKey::SqsQueue { .. }
            | FactKey::SqsQueues
            | FactKey::EventRules { .. } => Box::pin(self.fetch_more(key)).await,
            FactKey::AwsAuth => {
                self.get_object(&CONFIGMAPS, Some("kube-system"), "aws-auth")
                    .await
            }
            FactKey::CallerIdentity => {
                let out = self
                    .aws()
                    .await?
                    .sts
                    .get_caller_identity()
                    .send()
                    .await
                    .map_err(|e| aws_error("sts:GetCallerIdentity", e))?;
                Ok(json!({
                    "account": out.account().unwrap_or_default(),
                    "arn": out.arn().unwrap_or_default(),
                }))
            }
            FactKey::EksCluster { name } => {
                let res = self
                    .aws()
                    .await?
                    .eks
                    .describe_cluster()
                    .name(name)
                    .send()
                    .await;
                let Some(out) = absent_as_none("eks:DescribeCluster", res, |e| {
                    e.is_resource_not_found_exception()
                })?
                else {
                    return Ok(Value::Null);
                };
                let Some(c) = out.cluster() else {
                    return Ok(Value::Null);
                };
                Ok(json!({
                    "name": c.name().unwrap_or_default(),
                    "arn": c.arn().unwrap_or_default(),
                    "version": c.version().unwrap_or_default(),
                    "endpoint": c.endpoint().unwrap_or_default(),
                    "status": c.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
                    "oidcIssuer": c.identity().and_then(|i| i.oidc()).and_then(|o| o.issuer()),
                    "authenticationMode": c.access_config().and_then(|a| a.authentication_mode()).map(|m| m.as_str().to_string()),
                    "vpcId": c.resources_vpc_config().and_then(|v| v.vpc_id()),
                    "clusterSecurityGroupId": c.resources_vpc_config().and_then(|v| v.cluster_security_group_id()),
                }))
            }
        }
    }

    /// Reads the `--history` document; `Ok(None)` when the ConfigMap has none yet. The
    /// ConfigMap itself must exist (`deploy/history-configmap.yaml`): creating it would need a
    /// permission that cannot be limited to one name.
    pub async fn read_history(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<(k8s_openapi::api::core::v1::ConfigMap, Option<String>), String> {
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.kube().map_err(|e| e.to_string())?, namespace);
        match api.get_opt(name).await {
            Ok(Some(cm)) => {
                let doc = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get(crate::history::DATA_KEY))
                    .cloned();
                Ok((cm, doc))
            }
            Ok(None) => Err(format!(
                "history ConfigMap {namespace}/{name} does not exist (apply deploy/history-configmap.yaml)"
            )),
            Err(e) => Err(format!(
                "history ConfigMap {namespace}/{name}: {}",
                kube_error("get configmaps", e)
            )),
        }
    }

    /// Stores the `--history` document (an update of the ConfigMap read before, so a
    /// concurrent writer is detected by its resourceVersion).
    pub async fn write_history(
        &self,
        mut cm: k8s_openapi::api::core::v1::ConfigMap,
        document: String,
    ) -> Result<(), String> {
        let namespace = cm.metadata.namespace.clone().unwrap_or_default();
        let name = cm.metadata.name.clone().unwrap_or_default();
        cm.data
            .get_or_insert_with(Default::default)
            .insert(crate::history::DATA_KEY.to_string(), document);
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.kube().map_err(|e| e.to_string())?, &namespace);
        api.replace(&name, &kube::api::PostParams::default(), &cm)
            .await
            .map(drop)
            .map_err(|e| {
                format!(
                    "history ConfigMap {namespace}/{name}: {}",
                    kube_error("update configmaps", e)
                )
            })
    }

    /// Gets one object; `null` when it does not exist. Scrubbed like listed objects.
    /// The fact kinds of the controller-install, NodeClaim and interruption checks.
    async fn fetch_more(&self, key: &FactKey) -> Result<Value, FactError> {
        match key {
            FactKey::PodLogs {
                namespace,
                pod,
                container,
                previous,
            } => {
                use k8s_openapi::api::core::v1::Pod;
                let api: Api<Pod> = Api::namespaced(self.kube()?, namespace);
                let params = kube::api::LogParams {
                    container: Some(container.clone()),
                    previous: *previous,
                    tail_lines: Some(LOG_LINES),
                    limit_bytes: Some(LOG_BYTES),
                    ..kube::api::LogParams::default()
                };
                match api.logs(pod, &params).await {
                    Ok(text) => Ok(Value::String(text)),
                    // 400: no previous container (it never restarted); 404: the pod is gone.
                    Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => Ok(Value::Null),
                    Err(e) => Err(kube_error("get pods/log", e)),
                }
            }
            FactKey::Events { kind, namespace } => {
                // Both APIs at once: the newer one repeats the same events for reporters that
                // use it (series, notes); duplicates are folded by uid when the fact is read.
                let core_selector = format!("involvedObject.kind={kind}");
                let newer_selector = format!("regarding.kind={kind}");
                let (core, newer) = tokio::join!(
                    self.list_bounded(
                        &EVENTS,
                        namespace.as_deref(),
                        None,
                        Some(&core_selector),
                        MAX_EVENTS,
                    ),
                    self.list_bounded(
                        &EVENTS_V1,
                        namespace.as_deref(),
                        None,
                        Some(&newer_selector),
                        MAX_EVENTS,
                    )
                );
                let core = core?;
                let newer = match newer {
                    Ok(items) => items,
                    Err(FactError::NotInstalled { .. }) => Vec::new(),
                    Err(e) => return Err(e),
                };
                Ok(Value::Array(core.into_iter().chain(newer).collect()))
            }
            FactKey::WebhookConfigurations => {
                let (validating, mutating) = futures::future::join(
                    self.list(&VALIDATING_WEBHOOKS, None, None),
                    self.list(&MUTATING_WEBHOOKS, None, None),
                )
                .await;
                Ok(Value::Array(
                    validating?.into_iter().chain(mutating?).collect(),
                ))
            }
            FactKey::Service { namespace, name } => {
                self.get_object(&SERVICES, Some(namespace), name).await
            }
            FactKey::EksFargateProfiles { cluster } => {
                let eks = &self.aws().await?.eks;
                let mut names = Vec::new();
                let mut pages = eks
                    .list_fargate_profiles()
                    .cluster_name(cluster)
                    .into_paginator()
                    .send();
                while let Some(page) = pages.next().await {
                    match page {
                        Ok(page) => names.extend(page.fargate_profile_names().iter().cloned()),
                        Err(SdkError::ServiceError(e))
                            if e.err().is_resource_not_found_exception() =>
                        {
                            return Ok(Value::Array(Vec::new()));
                        }
                        Err(e) => return Err(aws_error("eks:ListFargateProfiles", e)),
                    }
                }
                let mut described = Vec::new();
                for batch in names.chunks(FAN_OUT) {
                    described.extend(
                        futures::future::join_all(batch.iter().map(|n| {
                            eks.describe_fargate_profile()
                                .cluster_name(cluster)
                                .fargate_profile_name(n)
                                .send()
                        }))
                        .await,
                    );
                }
                let mut out = Vec::new();
                for d in described {
                    let d = d.map_err(|e| aws_error("eks:DescribeFargateProfile", e))?;
                    if let Some(p) = d.fargate_profile() {
                        let selectors: Vec<Value> = p
                            .selectors()
                            .iter()
                            .map(|s| {
                                json!({
                                    "namespace": s.namespace().unwrap_or_default(),
                                    "labels": s.labels().cloned().unwrap_or_default()
                                        .into_iter().collect::<std::collections::BTreeMap<_, _>>(),
                                })
                            })
                            .collect();
                        out.push(json!({
                            "name": p.fargate_profile_name().unwrap_or_default(),
                            "status": p.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
                            "podExecutionRoleArn": p.pod_execution_role_arn().unwrap_or_default(),
                            "subnets": p.subnets(),
                            "selectors": selectors,
                        }));
                    }
                }
                Ok(Value::Array(out))
            }
            FactKey::Ec2InstanceTypes => {
                use aws_sdk_ec2::types::Filter;
                let ec2 = &self.aws().await?.ec2;
                // A large region lists about a thousand types or more (the emulator's us-west-2:
                // 14 pages) and a page holds at most 100, each page waiting for the one before:
                // as one list this is the longest chain of requests in a run.
                // Disjoint name slices, listed side by side, take three pages at most.
                let slices = instance_type_slices().into_iter().map(|patterns| async move {
                    let filter = Filter::builder()
                        .name("instance-type")
                        .set_values(Some(patterns))
                        .build();
                    let mut pages = ec2
                        .describe_instance_types()
                        .filters(filter)
                        .max_results(100)
                        .into_paginator()
                        .send();
                    let mut out = Vec::new();
                    while let Some(page) = pages.next().await {
                        let page = page.map_err(|e| aws_error("ec2:DescribeInstanceTypes", e))?;
                        out.extend(page.instance_types().iter().map(|t| {
                            json!({
                                "instanceType": t.instance_type().map(|x| x.as_str().to_string()).unwrap_or_default(),
                                "architectures": t.processor_info().map(|p| p.supported_architectures().iter().map(|a| a.as_str().to_string()).collect::<Vec<_>>()).unwrap_or_default(),
                                "vcpus": t.v_cpu_info().and_then(|v| v.default_v_cpus()).unwrap_or_default(),
                                "memoryMib": t.memory_info().and_then(|m| m.size_in_mib()).unwrap_or_default(),
                                "gpus": t.gpu_info().map(|g| g.gpus().iter().filter_map(|d| d.count()).sum::<i32>()).unwrap_or_default(),
                                "usageClasses": t.supported_usage_classes().iter().map(|u| u.as_str().to_string()).collect::<Vec<_>>(),
                                "hypervisor": t.hypervisor().map(|h| h.as_str().to_string()).unwrap_or_default(),
                                "bareMetal": t.bare_metal().unwrap_or(false),
                            })
                        }));
                    }
                    Ok::<_, FactError>(out)
                });
                // One list in name order, each type once whatever the slices returned.
                let mut by_name = std::collections::BTreeMap::new();
                for t in futures::future::try_join_all(slices)
                    .await?
                    .into_iter()
                    .flatten()
                {
                    by_name.insert(
                        t["instanceType"].as_str().unwrap_or_default().to_string(),
                        t,
                    );
                }
                Ok(Value::Array(by_name.into_values().collect()))
            }
            FactKey::Ec2InstanceTypeOfferings => {
                let mut pages = self
                    .aws()
                    .await?
                    .ec2
                    .describe_instance_type_offerings()
                    .location_type(aws_sdk_ec2::types::LocationType::AvailabilityZone)
                    .max_results(1000)
                    .into_paginator()
                    .send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page =
                        page.map_err(|e| aws_error("ec2:DescribeInstanceTypeOfferings", e))?;
                    out.extend(page.instance_type_offerings().iter().map(|o| {
                        json!({
                            "instanceType": o.instance_type().map(|x| x.as_str().to_string()).unwrap_or_default(),
                            "zone": o.location().unwrap_or_default(),
                        })
                    }));
                }
                Ok(Value::Array(out))
            }
            FactKey::SqsQueue { name } => {
                let sqs = &self.aws().await?.sqs;
                let res = sqs.get_queue_url().queue_name(name).send().await;
                let Some(out) =
                    absent_as_none("sqs:GetQueueUrl", res, |e| e.is_queue_does_not_exist())?
                else {
                    return Ok(Value::Null);
                };
                let url = out.queue_url().unwrap_or_default().to_string();
                let attrs = sqs
                    .get_queue_attributes()
                    .queue_url(&url)
                    .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
                    .send()
                    .await
                    .map_err(|e| aws_error("sqs:GetQueueAttributes", e))?;
                let attributes: std::collections::BTreeMap<String, String> = attrs
                    .attributes()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(json!({
                    "name": name,
                    "url": url,
                    "arn": attributes.get("QueueArn").cloned().unwrap_or_default(),
                    "attributes": attributes,
                }))
            }
            FactKey::SqsQueues => {
                let mut pages = self.aws().await?.sqs.list_queues().into_paginator().send();
                let mut out = Vec::new();
                while let Some(page) = pages.next().await {
                    let page = page.map_err(|e| aws_error("sqs:ListQueues", e))?;
                    out.extend(
                        page.queue_urls()
                            .iter()
                            .filter_map(|u| u.rsplit('/').next().map(str::to_string)),
                    );
                }
                Ok(json!(out))
            }
            FactKey::EventRules { target_arn } => {
                let events = &self.aws().await?.events;
                let mut names = Vec::new();
                let mut token: Option<String> = None;
                loop {
                    let page = events
                        .list_rule_names_by_target()
                        .target_arn(target_arn)
                        .set_next_token(token.clone())
                        .send()
                        .await
                        .map_err(|e| aws_error("events:ListRuleNamesByTarget", e))?;
                    names.extend(page.rule_names().iter().cloned());
                    token = page
                        .next_token()
                        .map(str::to_string)
                        .filter(|t| !t.is_empty());
                    if token.is_none() {
                        break;
                    }
                }
                let mut out = Vec::new();
                for batch in names.chunks(FAN_OUT) {
                    let described = futures::future::join_all(batch.iter().map(|n| async move {
                        let rule = events.describe_rule().name(n).send().await;
                        let targets = events.list_targets_by_rule().rule(n).send().await;
                        (rule, targets)
                    }))
                    .await;
                    for (rule, targets) in described {
                        let rule = rule.map_err(|e| aws_error("events:DescribeRule", e))?;
                        let targets =
                            targets.map_err(|e| aws_error("events:ListTargetsByRule", e))?;
                        let targets: Vec<Value> = targets
                            .targets()
                            .iter()
                            .map(|t| json!({"id": t.id(), "arn": t.arn()}))
                            .collect();
                        out.push(json!({
                            "name": rule.name().unwrap_or_default(),
                            "arn": rule.arn().unwrap_or_default(),
                            "state": rule.state().map(|s| s.as_str().to_string()).unwrap_or_default(),
                            "eventPattern": rule.event_pattern().unwrap_or_default(),
                            "targets": targets,
                        }));
                    }
                }
                Ok(Value::Array(out))
            }
            other => Err(FactError::Malformed {
                message: format!("{other}: not a fact of fetch_more (karpdoctor bug)"),
            }),
        }
    }

    async fn get_object(
        &self,
        resource: &KubeResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, FactError> {
        let ar = resource.api_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.kube()?, ns, &ar),
            None => Api::all_with(self.kube()?, &ar),
        };
        match api.get_opt(name).await {
            Ok(Some(mut obj)) => {
                obj.types = Some(kube::api::TypeMeta {
                    api_version: resource.api_version(),
                    kind: resource.kind.to_string(),
                });
                let mut value = to_value(obj)?;
                crate::model::scrub(&mut value);
                Ok(value)
            }
            Ok(None) => Ok(Value::Null),
            Err(e) => Err(kube_error(resource.op("get"), e)),
        }
    }

    /// Lists a resource with server-side pagination and label selection. A resource the API
    /// server does not serve (its CRD is missing) is `NotInstalled`.
    async fn list(
        &self,
        resource: &KubeResource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, FactError> {
        self.list_bounded(resource, namespace, label_selector, None, usize::MAX)
            .await
    }

    /// [`Live::list`] with a field selector, stopping after about `max` items (whole pages).
    async fn list_bounded(
        &self,
        resource: &KubeResource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        max: usize,
    ) -> Result<Vec<Value>, FactError> {
        let ar = resource.api_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.kube()?, ns, &ar),
            None => Api::all_with(self.kube()?, &ar),
        };
        let mut params = ListParams::default().limit(PAGE_SIZE);
        if let Some(sel) = label_selector {
            params = params.labels(sel);
        }
        if let Some(sel) = field_selector {
            params = params.fields(sel);
        }
        let mut items = Vec::new();
        loop {
            let page = match api.list(&params).await {
                Ok(page) => page,
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    return Err(FactError::NotInstalled {
                        what: format!(
                            "the {} API ({}/{})",
                            resource.kind,
                            resource.group_or_core(),
                            resource.version
                        ),
                    });
                }
                Err(e) => return Err(kube_error(resource.op("list"), e)),
            };
            let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
            for mut obj in page.items {
                // List items carry no type meta; add it so each object stands alone in a bundle.
                obj.types = Some(kube::api::TypeMeta {
                    api_version: resource.api_version(),
                    kind: resource.kind.to_string(),
                });
                let mut value = to_value(obj)?;
                crate::model::scrub(&mut value);
                items.push(value);
            }
            match next {
                Some(token) if items.len() < max => params = params.continue_token(&token),
                _ => break,
            }
        }
        Ok(items)
    }
}

/// A `kube::Client` whose every request passes the read-only guard first.
pub fn guarded_kube_client(config: kube::Config, log: ApiLog) -> Result<kube::Client, Error> {
    let filter = tower::filter::FilterLayer::new(crate::guard::kube_filter(log));
    // Inside the guard, so only requests that pass it are counted for their fact. kube's
    // client buffers requests: this layer is called in the buffer's worker task, but the
    // response future it returns is awaited by the task that made the request. The fact being
    // fetched is a task-local of that task, so the request is marked when that future is
    // first polled, not when the layer is called.
    let in_flight = tower::util::MapFutureLayer::new(|response| async move {
        let mark = crate::guard::InFlight::start();
        let out = response.await;
        drop(mark);
        out
    });
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::Kubeconfig {
            reason: e.to_string(),
        })?
        .with_layer(&in_flight)
        .with_layer(&filter)
        .build())
}

/// A Kubernetes resource karpdoctor lists or gets.
pub struct KubeResource {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl KubeResource {
    fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        )
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn group_or_core(&self) -> &'static str {
        if self.group.is_empty() {
            "core"
        } else {
            self.group
        }
    }

    /// The RBAC form of a verb on this resource, as used in `Forbidden` reasons.
    fn op(&self, verb: &str) -> String {
        if self.group.is_empty() {
            format!("{verb} {}", self.plural)
        } else {
            format!("{verb} {}.{}", self.plural, self.group)
        }
    }
}

pub const DEPLOYMENTS: KubeResource = KubeResource {
    group: "apps",
    version: "v1",
    kind: "Deployment",
    plural: "deployments",
};
pub const PODS: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "Pod",
    plural: "pods",
};
pub const CRDS: KubeResource = KubeResource {
    group: "apiextensions.k8s.io",
    version: "v1",
    kind: "CustomResourceDefinition",
    plural: "customresourcedefinitions",
};
pub const SERVICEACCOUNTS: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "ServiceAccount",
    plural: "serviceaccounts",
};
pub const CONFIGMAPS: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "ConfigMap",
    plural: "configmaps",
};
pub const NODES: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "Node",
    plural: "nodes",
};
pub const SERVICES: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "Service",
    plural: "services",
};
pub const EVENTS: KubeResource = KubeResource {
    group: "",
    version: "v1",
    kind: "Event",
    plural: "events",
};
pub const EVENTS_V1: KubeResource = KubeResource {
    group: "events.k8s.io",
    version: "v1",
    kind: "Event",
    plural: "events",
};
pub const VALIDATING_WEBHOOKS: KubeResource = KubeResource {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "ValidatingWebhookConfiguration",
    plural: "validatingwebhookconfigurations",
};
pub const MUTATING_WEBHOOKS: KubeResource = KubeResource {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "MutatingWebhookConfiguration",
    plural: "mutatingwebhookconfigurations",
};
pub const NODEPOOLS: KubeResource = KubeResource {
    group: "karpenter.sh",
    version: "v1",
    kind: "NodePool",
    plural: "nodepools",
};
pub const NODECLAIMS: KubeResource = KubeResource {
    group: "karpenter.sh",
    version: "v1",
    kind: "NodeClaim",
    plural: "nodeclaims",
};
pub const EC2NODECLASSES: KubeResource = KubeResource {
    group: "karpenter.k8s.aws",
    version: "v1",
    kind: "EC2NodeClass",
    plural: "ec2nodeclasses",
};

/// Characters EC2 instance type names are made of.
const TYPE_NAME_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789-.";

/// `instance-type` filter values (wildcards) that split every possible type name into disjoint
/// slices of a few hundred types, so the list can be read as concurrent short chains of pages.
/// The big families (c, m, r: about three quarters of a region) get two slices each, by
/// generation 8 and the rest; the other first letters share two slices.
fn instance_type_slices() -> Vec<Vec<String>> {
    let mut slices = Vec::new();
    for family in ['c', 'm', 'r'] {
        slices.push(vec![format!("{family}8*")]);
        slices.push(
            TYPE_NAME_CHARS
                .chars()
                .filter(|c| *c != '8')
                .map(|c| format!("{family}{c}*"))
                .collect(),
        );
    }
    let (some, others): (Vec<char>, Vec<char>) = TYPE_NAME_CHARS
        .chars()
        .filter(|c| !matches!(c, 'c' | 'm' | 'r'))
        .partition(|c| matches!(c, 'i' | 'x' | 'g'));
    for letters in [some, others] {
        slices.push(letters.iter().map(|c| format!("{c}*")).collect());
    }
    slices
}

/// EC2 tags as a map (keys are unique per resource).
fn ec2_tags(tags: &[aws_sdk_ec2::types::Tag]) -> serde_json::Map<String, Value> {
    tags.iter()
        .filter_map(|t| Some((t.key()?.to_string(), json!(t.value().unwrap_or_default()))))
        .collect()
}

/// Keeps only Deployments running the controller image or labelled as the Karpenter chart,
/// so a bundle never carries the cluster's other workloads.
fn looks_like_controller(deployment: &Value) -> bool {
    let images = deployment
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("image").and_then(Value::as_str));
    let by_image = images.into_iter().any(is_controller_image);
    let by_label = deployment
        .pointer("/metadata/labels/app.kubernetes.io~1name")
        .and_then(Value::as_str)
        == Some("karpenter");
    by_image || by_label
}

fn to_value(obj: impl serde::Serialize) -> Result<Value, FactError> {
    serde_json::to_value(obj).map_err(|e| FactError::Malformed {
        message: e.to_string(),
    })
}

/// Reads the kubeconfig the way kubectl does and applies karpdoctor's timeouts.
async fn kube_config(options: &LiveOptions) -> Result<(kube::Config, KubeTarget), Error> {
    let kubeconfig = match &options.kubeconfig {
        Some(path) => Some(Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig {
            reason: format!("cannot read {}: {}", path.display(), root_cause(&e)),
        })?),
        None => match Kubeconfig::read() {
            Ok(kc) => Some(kc),
            // No kubeconfig at all: in a pod, fall back to the service account.
            Err(_) if options.context.is_none() && in_cluster() => None,
            Err(e) => {
                return Err(Error::Kubeconfig {
                    reason: format!(
                        "no usable kubeconfig ({}); pass --kubeconfig or set KUBECONFIG",
                        root_cause(&e)
                    ),
                });
            }
        },
    };
    let (mut config, target) = match kubeconfig {
        Some(kc) => {
            let context = options
                .context
                .clone()
                .or_else(|| kc.current_context.clone());
            let Some(context) = context else {
                return Err(Error::Kubeconfig {
                    reason: "the kubeconfig has no current context; pass --context".to_string(),
                });
            };
            let Some(named) = kc.contexts.iter().find(|c| c.name == context) else {
                let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
                return Err(Error::Kubeconfig {
                    reason: format!(
                        "context \"{context}\" is not in the kubeconfig (known: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                });
            };
            let context_cluster = named.context.as_ref().map(|c| c.cluster.clone());
            let server = kc
                .clusters
                .iter()
                .find(|c| Some(&c.name) == context_cluster.as_ref())
                .and_then(|c| c.cluster.as_ref())
                .and_then(|c| c.server.clone());
            let opts = KubeConfigOptions {
                context: Some(context.clone()),
                ..KubeConfigOptions::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| Error::Kubeconfig {
                    reason: root_cause(&e),
                })?;
            (
                config,
                KubeTarget {
                    context: Some(context),
                    context_cluster,
                    server,
                },
            )
        }
        None => {
            let config = kube::Config::incluster().map_err(|e| Error::Kubeconfig {
                reason: format!("in-cluster configuration: {}", root_cause(&e)),
            })?;
            let server = config.cluster_url.to_string();
            (
                config,
                KubeTarget {
                    context: Some("in-cluster".to_string()),
                    context_cluster: None,
                    server: Some(server),
                },
            )
        }
    };
    config.connect_timeout = Some(Duration::from_secs(5).min(options.request_timeout));
    config.read_timeout = Some(options.request_timeout);
    config.write_timeout = Some(options.request_timeout);
    Ok((config, target))
}

fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// The innermost message of an error chain: what a person needs on one line.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    let mut text = e.to_string();
    while let Some(next) = current.source() {
        let s = next.to_string();
        if !s.is_empty() && !text.contains(&s) {
            text = format!("{text}: {s}");
        }
        current = next;
    }
    text
}

/// Maps a kube error to a fact error. `op` is the RBAC form of the request, quoted in
/// `Forbidden` so the report can name the exact permission to grant.
fn kube_error(op: impl Into<String>, e: kube::Error) -> FactError {
    let op = op.into();
    match e {
        kube::Error::Api(s) => match s.code {
            401 => FactError::NoCredentials {
                message: format!(
                    "the API server rejected karpdoctor's credentials: {}",
                    s.message
                ),
            },
            403 => FactError::Forbidden {
                permission: op,
                message: s.message,
            },
            404 => FactError::NotFound { message: s.message },
            429 => FactError::Throttled { message: s.message },
            504 | 408 => FactError::Timeout { message: s.message },
            _ => FactError::Api {
                message: format!("{op}: HTTP {} {}", s.code, s.message),
            },
        },
        kube::Error::SerdeError(e) => FactError::Malformed {
            message: format!("{op}: {e}"),
        },
        kube::Error::Auth(e) => FactError::NoCredentials {
            message: root_cause(&e),
        },
        other => {
            let text = root_cause(&other);
            if text.contains("timed out") || text.contains("deadline") || text.contains("elapsed") {
                FactError::Timeout {
                    message: format!("{op}: {text}"),
                }
            } else {
                FactError::Unreachable {
                    message: format!("{op}: {text}"),
                }
            }
        }
    }
}

/// An AWS read whose "not found" error means the object is absent: `Ok(None)`, so the fact is
/// `null` rather than an error (a missing role is a finding, not a failure to look).
fn absent_as_none<T, E, R>(
    action: &str,
    result: Result<T, SdkError<E, R>>,
    not_found: impl Fn(&E) -> bool,
) -> Result<Option<T>, FactError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(out) => Ok(Some(out)),
        Err(SdkError::ServiceError(e)) if not_found(e.err()) => Ok(None),
        Err(e) => Err(aws_error(action, e)),
    }
}

/// Maps an AWS SDK error to a fact error; `action` is the IAM action, quoted in `Forbidden`.
fn aws_error<E, R>(action: &str, e: SdkError<E, R>) -> FactError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &e {
        SdkError::ServiceError(ctx) => {
            let err = ctx.err();
            let code = err.code().unwrap_or("Unknown");
            let message = format!("{code}: {}", err.message().unwrap_or_default());
            match code {
                "AccessDenied"
                | "AccessDeniedException"
                | "UnauthorizedOperation"
                | "UnauthorizedAccess"
                | "AuthorizationError" => FactError::Forbidden {
                    permission: action.to_string(),
                    message,
                },
                "Throttling"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "TooManyRequestsException" => FactError::Throttled { message },
                "ExpiredToken"
                | "ExpiredTokenException"
                | "InvalidClientTokenId"
                | "UnrecognizedClientException"
                | "SignatureDoesNotMatch"
                | "AuthFailure" => FactError::NoCredentials { message },
                "NoSuchEntity" | "ResourceNotFoundException" | "NotFoundException" => {
                    FactError::NotFound { message }
                }
                _ => FactError::Api {
                    message: format!("{action}: {message}"),
                },
            }
        }
        SdkError::TimeoutError(_) => FactError::Timeout {
            message: format!("{action}: no answer in time"),
        },
        SdkError::DispatchFailure(d) if d.is_timeout() => FactError::Timeout {
            message: format!("{action}: {}", DisplayErrorContext(&e)),
        },
        SdkError::ResponseError(_) => FactError::Malformed {
            message: format!("{action}: {}", DisplayErrorContext(&e)),
        },
        _ => {
            let text = DisplayErrorContext(&e).to_string();
            if text.contains("credentials") || text.contains("Credentials") {
                FactError::NoCredentials {
                    message: credentials_message(&text),
                }
            } else if text.contains("refused by karpdoctor") || text.contains("karpdoctor refused")
            {
                FactError::Api { message: text }
            } else {
                FactError::Unreachable {
                    message: format!("{action}: {text}"),
                }
            }
        }
    }
}

/// The SDK's credentials error is long and nested; keep the part a person can act on.
fn credentials_message(text: &str) -> String {
    if text.contains("no providers in chain provided credentials") {
        "no credentials found in the AWS default chain (environment, profile, SSO, web identity, instance metadata)".to_string()
    } else {
        text.to_string()
    }
}

/// Copies the fields karpdoctor reads from `iam:SimulatePrincipalPolicy` results, whichever of
/// the two result shapes IAM used; `crate::iam::simulation::normalise` makes rows of them.
pub fn raw_simulation_results(
    results: &[aws_sdk_iam::types::EvaluationResult],
) -> Vec<crate::iam::simulation::RawResult> {
    use crate::iam::simulation::RawResult;
    let statements = |s: &[aws_sdk_iam::types::Statement]| -> Vec<String> {
        s.iter()
            .filter_map(|m| m.source_policy_id().map(str::to_string))
            .collect()
    };
    results
        .iter()
        .map(|r| RawResult {
            action: r.eval_action_name().to_string(),
            resource: r.eval_resource_name().unwrap_or("*").to_string(),
            decision: r.eval_decision().as_str().to_string(),
            allowed_by_organizations: r
                .organizations_decision_detail()
                .map(|d| d.allowed_by_organizations()),
            allowed_by_boundary: r
                .permissions_boundary_decision_detail()
                .map(|d| d.allowed_by_permissions_boundary()),
            matched_statements: statements(r.matched_statements()),
            missing_context_values: r.missing_context_values().to_vec(),
            resource_specific: r
                .resource_specific_results()
                .iter()
                .map(|s| RawResult {
                    action: r.eval_action_name().to_string(),
                    resource: s.eval_resource_name().to_string(),
                    decision: s.eval_resource_decision().as_str().to_string(),
                    allowed_by_organizations: None,
                    allowed_by_boundary: s
                        .permissions_boundary_decision_detail()
                        .map(|d| d.allowed_by_permissions_boundary()),
                    matched_statements: statements(s.matched_statements()),
                    missing_context_values: s.missing_context_values().to_vec(),
                    resource_specific: Vec::new(),
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_type_slices_cover_every_name_exactly_once() {
        let slices = instance_type_slices();
        assert!(
            slices.len() <= 8,
            "one EC2 concurrency limit's worth of lists"
        );
        for a in TYPE_NAME_CHARS.chars() {
            for b in TYPE_NAME_CHARS.chars() {
                let name = format!("{a}{b}x.large");
                let hits = slices
                    .iter()
                    .filter(|patterns| {
                        patterns
                            .iter()
                            .any(|p| name.starts_with(p.trim_end_matches('*')))
                    })
                    .count();
                assert_eq!(hits, 1, "{name}");
            }
        }
        assert!(slices.iter().flatten().all(|p| p.ends_with('*')));
    }
}
