//! Facts from the live Kubernetes and AWS APIs.
//!
//! The standard chains do the work: kubeconfig (`KUBECONFIG`, contexts, exec plugins such as
//! `aws eks get-token`, in-cluster service accounts) through kube-rs, and the AWS default
//! chain (`AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL` and its per-service variants, SSO,
//! web identity) through aws-config. Every client carries the read-only guard, built with no
//! writable object: the backend only reads.
//!
//! One module per service holds its fetchers and the JSON they shape; [`Live::fetch`] maps
//! every fact key to one of them in a single exhaustive match, so a fact nobody fetches does
//! not compile.

mod ec2;
mod eks;
pub mod errors;
mod iam;
mod kube;
pub mod kubeconfig;
mod messaging;
mod simulations;
mod ssm_kms;
mod vpc;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use futures::future::BoxFuture;
use futures::{FutureExt, TryFutureExt};
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore};

use crate::error::Error;
use crate::facts::{ApiService, FactError, FactKey, Stored};
use crate::guard::{ApiLog, AwsGuard};

pub use iam::raw_simulation_results;

/// The HTTPS client of every AWS call, the credential providers' included: the one the SDK's
/// `default-https-client` feature builds (rustls, `HTTPS_PROXY`/`NO_PROXY` honoured as behaviour
/// versions from 2025-08-07 do), with rustls on ring instead of aws-lc, the provider kube
/// already uses (Cargo.toml says why).
pub fn https_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector = aws_smithy_http_client::ConnectorBuilder::default().tls_provider(
            tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring),
        );
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}

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
    /// The AWS answers the targets of one fleet run share (see [`SharedReads`]).
    pub shared: Option<Arc<SharedReads>>,
}

/// AWS answers shared by the targets of one fleet run. Targets that call the same AWS API with
/// the same credentials (the same profile, or the default chain) in the same region send the
/// same request at the same moment, so they get the same answer: the first target to ask
/// fetches it, the others wait for it. Clusters in one account and region then parse the
/// instance type catalogue, the subnets and the simulations once instead of once each.
/// Kubernetes reads are never shared: each target is its own cluster.
#[derive(Default)]
pub struct SharedReads {
    cells: Mutex<HashMap<SharedKey, Arc<SharedAnswer>>>,
}

/// The profile (`None`: the default chain), the region and the fact.
type SharedKey = (Option<String>, String, FactKey);

/// One answer, fetched by the first target that asks.
type SharedAnswer = OnceCell<Result<Stored, FactError>>;

impl std::fmt::Debug for SharedReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.cells.lock().map_or(0, |c| c.len());
        write!(f, "SharedReads({n} answers)")
    }
}

impl SharedReads {
    fn cell(&self, key: SharedKey) -> Arc<SharedAnswer> {
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(cells.entry(key).or_default())
    }
}

/// What the kube side learned while connecting: shown in the header and used as hints.
#[derive(Clone, Debug, Default)]
pub struct KubeTarget {
    pub context: Option<String>,
    pub context_cluster: Option<String>,
    pub server: Option<String>,
}

/// Declares the AWS clients, one line per service, and builds each from the shared SDK
/// configuration with the read-only guard installed.
macro_rules! aws_clients {
    ($($field:ident: $sdk:ident),* $(,)?) => {
        struct AwsClients {
            $($field: $sdk::Client,)*
        }

        impl AwsClients {
            fn new(sdk: &aws_config::SdkConfig, guard: &AwsGuard) -> Self {
                AwsClients {
                    $($field: $sdk::Client::from_conf(
                        $sdk::config::Builder::from(sdk).interceptor(guard.clone()).build(),
                    ),)*
                }
            }
        }
    };
}

aws_clients! {
    sts: aws_sdk_sts,
    eks: aws_sdk_eks,
    iam: aws_sdk_iam,
    ec2: aws_sdk_ec2,
    ssm: aws_sdk_ssm,
    kms: aws_sdk_kms,
    sqs: aws_sdk_sqs,
    events: aws_sdk_eventbridge,
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
    kube: Option<::kube::Client>,
    limits: Mutex<HashMap<ApiService, Arc<Semaphore>>>,
    /// Simulations sharing a request (see `simulations`).
    simulations: simulations::Coalescer,
    pub kube_target: KubeTarget,
    options: LiveOptions,
    /// Set by [`Live::connect_aws`] once the run's region is known, with that region.
    aws: OnceCell<(String, AwsClients)>,
    log: ApiLog,
    /// Facts the run read itself and hands over (the `--history` churn record).
    given: Mutex<HashMap<FactKey, Value>>,
}

impl Live {
    /// Connects the kube side from the run's kube configuration ([`kubeconfig::load`]; `None`
    /// for a run without a Kubernetes API). No request is sent yet; the AWS side waits for
    /// [`Live::connect_aws`].
    pub fn connect(
        options: LiveOptions,
        kube: Option<(::kube::Config, KubeTarget)>,
        log: ApiLog,
    ) -> Result<Self, Error> {
        let (kube, kube_target) = match kube {
            Some((config, target)) => (
                Some(crate::guard::kube_client(config, log.clone(), None)?),
                target,
            ),
            None => (None, KubeTarget::default()),
        };
        Ok(Live {
            kube,
            kube_target,
            limits: Mutex::default(),
            simulations: simulations::Coalescer::default(),
            options,
            aws: OnceCell::new(),
            log,
            given: Mutex::default(),
        })
    }

    /// Hands over a fact the run has read itself: fetching `key` then answers `value`.
    pub fn give(&self, key: FactKey, value: Value) {
        self.given
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, value);
    }

    /// The Kubernetes client; absent only in runs that need no Kubernetes API.
    fn kube(&self) -> Result<&::kube::Client, FactError> {
        self.kube.as_ref().ok_or_else(errors::no_kubernetes_api)
    }

    /// The AWS clients; absent until the run's region is known.
    fn aws(&self) -> Result<&AwsClients, FactError> {
        self.aws
            .get()
            .map(|(_, clients)| clients)
            .ok_or_else(errors::no_aws_region)
    }

    pub fn api_log(&self) -> &ApiLog {
        &self.log
    }

    /// The region the AWS default chain resolves (`AWS_REGION`, the profile, the instance
    /// metadata), if any. Resolved through a config loader because the chain's last link asks
    /// the instance metadata service over HTTP, with the client only the loader can give it.
    pub async fn chain_region(&self) -> Option<String> {
        if let Some(r) = &self.options.region {
            return Some(r.clone());
        }
        let mut loader =
            aws_config::defaults(BehaviorVersion::latest()).http_client(https_client());
        if let Some(p) = &self.options.profile {
            loader = loader.profile_name(p);
        }
        loader.load().await.region().map(|r| r.to_string())
    }

    /// Builds the AWS clients for the run's region, once it is resolved. Until then AWS facts
    /// fail for want of a region; a second call keeps the first region's clients.
    pub async fn connect_aws(&self, region: &str) {
        self.aws
            .get_or_init(|| async {
                let timeouts = TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(5).min(self.options.request_timeout))
                    .operation_timeout(self.options.request_timeout)
                    .build();
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(https_client())
                    .region(aws_config::Region::new(region.to_string()))
                    .timeout_config(timeouts);
                if let Some(p) = &self.options.profile {
                    loader = loader.profile_name(p);
                }
                let guard = AwsGuard {
                    log: self.log.clone(),
                };
                (
                    region.to_string(),
                    AwsClients::new(&loader.load().await, &guard),
                )
            })
            .await;
    }

    /// Fetches one fact, within its service's concurrency limit; an AWS fact another target
    /// of the same fleet already asked for in the same way is that target's answer.
    pub async fn fetch(&self, key: &FactKey) -> Result<Stored, FactError> {
        let service = key.kind().service();
        if let (Some(shared), Some((region, _))) = (&self.options.shared, self.aws.get())
            && service != ApiService::Kubernetes
        {
            let cell = shared.cell((self.options.profile.clone(), region.clone(), key.clone()));
            return cell
                .get_or_init(|| self.fetch_limited(service, key))
                .await
                .clone();
        }
        self.fetch_limited(service, key).await
    }

    async fn fetch_limited(&self, service: ApiService, key: &FactKey) -> Result<Stored, FactError> {
        let limit = {
            let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(
                limits
                    .entry(service)
                    .or_insert_with(|| Arc::new(Semaphore::new(service_limit(service)))),
            )
        };
        if let FactKey::Simulation {
            principal,
            actions,
            resources,
            context,
        } = key
        {
            let ask = simulations::Ask {
                principal,
                actions,
                resources,
                context,
            };
            return self
                .simulations
                .simulate(&self.aws()?.iam, &limit, ask)
                .await
                .map(Stored::Tree);
        }
        // The semaphore is never closed, so acquiring cannot fail; fetch unbounded if it did.
        let _permit = limit.acquire_owned().await.ok();
        self.fetch_unbounded(key).await
    }

    /// The one map from fact to fetcher. Each fetcher's future is boxed: awaiting them all
    /// inline would make this future as large as its largest arm, which once overflowed a
    /// debug build's task stack.
    async fn fetch_unbounded(&self, key: &FactKey) -> Result<Stored, FactError> {
        use kube::{
            AUTO_NODECLASSES, CRDS, EC2NODECLASSES_SERVED, NODECLAIMS_SERVED, NODEPOOLS_SERVED,
            NODES, SERVICEACCOUNTS, SERVICES,
        };
        let (k, aws) = (|| self.kube(), || self.aws());
        let fetch: BoxFuture<'_, Result<Stored, FactError>> = match key {
            FactKey::KubeVersion => kube::version(k()?).map_ok(Stored::Tree).boxed(),
            FactKey::ControllerDeployments { namespace } => {
                kube::controller_deployments(k()?, namespace.as_deref()).boxed()
            }
            FactKey::Pods {
                namespace,
                label_selector,
            } => kube::pods(k()?, namespace, label_selector).boxed(),
            FactKey::PendingPods => kube::pending_pods(k()?).boxed(),
            FactKey::DaemonSets => kube::daemonsets(k()?).boxed(),
            FactKey::ScheduledPods {
                namespace,
                label_selector,
            } => kube::scheduled_pods(k()?, namespace, label_selector).boxed(),
            FactKey::Nodes { label_selector } => kube::nodes(k()?, label_selector).boxed(),
            FactKey::NodePods { node } => kube::node_pods(k()?, node).boxed(),
            FactKey::PersistentVolumeClaims => kube::list_all(k()?, &kube::PVCS).boxed(),
            FactKey::PersistentVolumes => kube::list_all(k()?, &kube::PVS).boxed(),
            FactKey::StorageClasses => kube::list_all(k()?, &kube::STORAGECLASSES).boxed(),
            FactKey::CsiNodes => kube::csi_nodes(k()?).boxed(),
            FactKey::VolumeAttachments => kube::volume_attachments(k()?).boxed(),
            FactKey::PodDisruptionBudgets => kube::pod_disruption_budgets(k()?).boxed(),
            FactKey::PinnedWorkloads => kube::pinned_workloads(k()?).boxed(),
            FactKey::Crd { name } => kube::get_object(k()?, &CRDS, None, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::NodePools => kube::list_served(k()?, &NODEPOOLS_SERVED).boxed(),
            FactKey::Ec2NodeClasses => kube::list_served(k()?, &EC2NODECLASSES_SERVED).boxed(),
            FactKey::AutoNodeClasses => kube::list_served(k()?, &[AUTO_NODECLASSES]).boxed(),
            FactKey::NodeClaims => kube::list_served(k()?, &NODECLAIMS_SERVED).boxed(),
            FactKey::ServiceAccount { namespace, name } => {
                kube::get_object(k()?, &SERVICEACCOUNTS, Some(namespace), name)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
            FactKey::Node { name } => kube::get_object(k()?, &NODES, None, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Service { namespace, name } => {
                kube::get_object(k()?, &SERVICES, Some(namespace), name)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
            FactKey::AwsAuth => kube::aws_auth(k()?).map_ok(Stored::Tree).boxed(),
            FactKey::ChurnHistory { configmap } => {
                let given = self
                    .given
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(key)
                    .cloned();
                let found = given.ok_or_else(|| FactError::NotFound {
                    message: format!("the run kept no history in ConfigMap {configmap}"),
                });
                futures::future::ready(found.map(Stored::Tree)).boxed()
            }
            FactKey::AccessReview {
                verb,
                group,
                resource,
                namespace,
                name,
            } => kube::access_review(
                k()?,
                verb,
                group,
                resource,
                namespace.as_deref(),
                name.as_deref(),
            )
            .map_ok(Stored::Tree)
            .boxed(),
            FactKey::PodLogs {
                namespace,
                pod,
                container,
                previous,
            } => kube::pod_logs(k()?, namespace, pod, container, *previous)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Events { kind, namespace } => {
                kube::events(k()?, kind, namespace.as_deref()).boxed()
            }
            FactKey::EventsByReason { kind, reason } => {
                kube::events_by_reason(k()?, kind, reason).boxed()
            }
            FactKey::WebhookConfigurations => kube::webhook_configurations(k()?).boxed(),
            FactKey::CallerIdentity => iam::caller_identity(&aws()?.sts)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::IamRole { name } => iam::role(&aws()?.iam, name).map_ok(Stored::Tree).boxed(),
            FactKey::IamInstanceProfile { name } => iam::instance_profile(&aws()?.iam, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::IamAttachedRolePolicies { role } => {
                iam::attached_role_policies(&aws()?.iam, role)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
            FactKey::IamRolePolicyNames { role } => iam::role_policy_names(&aws()?.iam, role)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::OidcProviders => iam::oidc_providers(&aws()?.iam)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Simulation {
                principal,
                actions,
                resources,
                context,
            } => iam::simulation(&aws()?.iam, principal, actions, resources, context)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EksCluster { name } => {
                eks::cluster(&aws()?.eks, name).map_ok(Stored::Tree).boxed()
            }
            FactKey::EksAddon { cluster, name } => eks::addon(&aws()?.eks, cluster, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EksNodegroup { cluster, name } => eks::nodegroup(&aws()?.eks, cluster, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::PodIdentityAssociations {
                cluster,
                namespace,
                service_account,
            } => eks::pod_identity_associations(&aws()?.eks, cluster, namespace, service_account)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EksAccessEntries { cluster } => eks::access_entries(&aws()?.eks, cluster)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EksAccessPolicies { cluster, principal } => {
                eks::access_policies(&aws()?.eks, cluster, principal)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
            FactKey::EksFargateProfiles { cluster } => eks::fargate_profiles(&aws()?.eks, cluster)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2Subnets => ec2::subnets(&aws()?.ec2).map_ok(Stored::Tree).boxed(),
            FactKey::Ec2SecurityGroups => ec2::security_groups(&aws()?.ec2)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2VpcAttributes { vpc_id } => vpc::attributes(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2RouteTables { vpc_id } => vpc::route_tables(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2NatGateways { vpc_id } => vpc::nat_gateways(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2InternetGateways { vpc_id } => vpc::internet_gateways(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2VpcEndpoints { vpc_id } => vpc::endpoints(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2NetworkAcls { vpc_id } => vpc::network_acls(&aws()?.ec2, vpc_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2Images { filters, owners } => ec2::images(&aws()?.ec2, filters, owners)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2InstanceTypes => ec2::instance_types(&aws()?.ec2)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2Instances { ids } => ec2::instances(&aws()?.ec2, ids)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2ConsoleOutput { instance_id } => {
                ec2::console_output(&aws()?.ec2, instance_id)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
            FactKey::Ec2Snapshots { ids } => ec2::snapshots(&aws()?.ec2, ids)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::Ec2InstanceTypeOfferings => ec2::instance_type_offerings(&aws()?.ec2)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EbsDefaults => ec2::ebs_defaults(&aws()?.ec2).map_ok(Stored::Tree).boxed(),
            FactKey::SsmParameters { names } => ssm_kms::parameters(&aws()?.ssm, names)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::KmsKey { key_id } => ssm_kms::key(&aws()?.kms, key_id)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::KmsGrants { key_id, grantee } => ssm_kms::grants(&aws()?.kms, key_id, grantee)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::SqsQueue { name } => messaging::sqs_queue(&aws()?.sqs, name)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::SqsQueues => messaging::sqs_queues(&aws()?.sqs)
                .map_ok(Stored::Tree)
                .boxed(),
            FactKey::EventRules { target_arn } => {
                messaging::event_rules(&aws()?.events, target_arn)
                    .map_ok(Stored::Tree)
                    .boxed()
            }
        };
        fetch.await
    }
}
