//! The context owns every fact of a run: each one is fetched at most once, by whichever
//! check asks first, and shared with every other check (one `OnceCell` per fact key).
//!
//! Checks never see a client. They call the typed accessors below, which name the fact key
//! and its value type together, so a key always decodes to the same type.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::backend::Backend;
use crate::bundle::Bundle;
use crate::facts::Stored;
use crate::facts::{
    AccessEntry, AccessReview, AttachedPolicy, CallerIdentity, ContextEntry, EbsDefaults,
    Ec2Filter, EksAddon, EksCluster, EksNodegroup, EventRule, FactError, FactKey, FactKind,
    FargateProfile, IamRole, Image, InstanceProfile, InstanceType, InstanceTypeOffering, KmsKey,
    KubeVersion, OidcProvider, PodIdentityAssociation, SecurityGroup, SqsQueue, Subnet,
};
use crate::iam::simulation::{RawResult, Row};
use crate::model::{ControllerDeployment, Ec2NodeClass, NodeClaim, NodePool};
use crate::target::{Hints, Target};

type Shared = Arc<dyn Any + Send + Sync>;
type Cell = Arc<OnceCell<Result<Shared, FactError>>>;

/// Per-fact bookkeeping: how often the backend was asked (must stay at one), when and for how
/// long, the requests it took, and which fact the requester had waited for just before asking
/// (the edge the critical path follows).
#[derive(Clone, Debug, Default)]
pub struct FetchStat {
    pub fetches: u32,
    pub duration: Duration,
    pub error: Option<String>,
    /// Since the context was created.
    pub started: Duration,
    pub finished: Duration,
    /// API requests the fetch sent, and the rounds among them that waited for each other.
    pub calls: u32,
    pub rounds: u32,
    /// The fact the requesting task read last before asking for this one: this fetch could not
    /// start earlier than that one finished. `None` for facts asked for with nothing before.
    pub after: Option<FactKey>,
    /// The check that asked first (`None`: prefetch, or the run's own target resolution).
    pub requested_by: Option<&'static str>,
}

/// The longest chain of fetches that each waited for the one before: the least time any run
/// could take with the same dependencies, given the latency of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// Rounds of requests along the chain (each a full round trip).
    pub rounds: u32,
    /// From the start of the first fetch to the end of the last.
    pub elapsed: Duration,
    /// The facts, first to last.
    pub facts: Vec<FactKey>,
}

tokio::task_local! {
    /// The check whose task is running, so fact reads can be attributed to it.
    pub static CURRENT_CHECK: &'static str;
    /// Set inside [`Context::enrich`]: the reads only add evidence to a verdict already
    /// reached from other facts.
    static ENRICHING: bool;
    /// Of the facts one logical task (a check, or the run's target resolution) has read so
    /// far, the one that finished last, and when: what a new fetch in that task had to wait
    /// for. Only the latest is kept, so a check that reads 20,000 nodes pays a comparison per
    /// read, not a walk over everything it read before.
    static CHAIN: Chain;
}

/// The latest-finished read of one chain: when it finished, and which fact it was.
type Chain = Arc<Mutex<Option<(Duration, FactKey)>>>;

/// Runs `f` as one chain of reads for the critical-path statistics: each fact asked for
/// inside it is taken to depend on the last fact read inside it before.
pub fn chained<F: std::future::Future>(f: F) -> tokio::task::futures::TaskLocalFuture<Chain, F> {
    CHAIN.scope(Arc::new(Mutex::new(None)), f)
}

pub struct Context {
    backend: Backend,
    reads: Mutex<BTreeMap<&'static str, std::collections::BTreeSet<FactKey>>>,
    /// Reads made inside [`Context::enrich`], per check.
    enrichments: Mutex<BTreeMap<&'static str, std::collections::BTreeSet<FactKey>>>,
    cells: Mutex<HashMap<FactKey, Cell>>,
    recorded: Option<Mutex<BTreeMap<FactKey, Result<Value, FactError>>>>,
    stats: Mutex<BTreeMap<FactKey, FetchStat>>,
    hints: Hints,
    target: Mutex<Target>,
    now: jiff::Timestamp,
    /// When the context was created: fetch start and end times are offsets from it.
    epoch: Instant,
}

impl Context {
    /// A context over `backend`. With `record`, every raw fact is kept for [`Self::recording`].
    pub fn new(backend: Backend, hints: Hints, record: bool) -> Self {
        Context {
            backend,
            cells: Mutex::new(HashMap::new()),
            reads: Mutex::new(BTreeMap::new()),
            enrichments: Mutex::new(BTreeMap::new()),
            recorded: record.then(|| Mutex::new(BTreeMap::new())),
            stats: Mutex::new(BTreeMap::new()),
            hints,
            target: Mutex::new(Target::default()),
            now: jiff::Timestamp::now(),
            epoch: Instant::now(),
        }
    }

    /// The time the run judges "how long" against: now, or when a replayed bundle was
    /// recorded.
    pub fn now(&self) -> jiff::Timestamp {
        self.now
    }

    pub fn set_now(&mut self, now: jiff::Timestamp) {
        self.now = now;
    }

    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    pub fn hints(&self) -> &Hints {
        &self.hints
    }

    pub fn target(&self) -> Target {
        lock(&self.target).clone()
    }

    pub fn set_target(&self, target: Target) {
        *lock(&self.target) = target;
    }

    /// The recording of this run as a bundle: its hints and facts, stamped with the moment the
    /// facts describe (a recording of a replay keeps the original moment, so age-based
    /// judgements, such as conditions stuck for minutes, replay the same).
    pub fn bundle(&self, target: Target) -> Bundle {
        let mut bundle = Bundle::new(self.hints.clone(), target, self.recording());
        bundle.recorded_at = Some(self.now.to_string());
        bundle
    }

    /// Every fact fetched so far with its raw value or error (only when recording).
    pub fn recording(&self) -> BTreeMap<FactKey, Result<Value, FactError>> {
        self.recorded
            .as_ref()
            .map(|m| lock(m).clone())
            .unwrap_or_default()
    }

    /// The fact kinds each check read in this run, for its verdict or as evidence (checks
    /// are identified by code).
    pub fn reads(&self) -> BTreeMap<&'static str, std::collections::BTreeSet<FactKind>> {
        let mut out: BTreeMap<&'static str, std::collections::BTreeSet<FactKind>> = BTreeMap::new();
        for map in [&self.reads, &self.enrichments] {
            for (code, keys) in lock(map).iter() {
                out.entry(*code)
                    .or_default()
                    .extend(keys.iter().map(FactKey::kind));
            }
        }
        out
    }

    /// The fact keys each check's verdict depends on (reads inside [`Context::enrich`] are
    /// not among them).
    pub fn read_keys(&self) -> BTreeMap<&'static str, std::collections::BTreeSet<FactKey>> {
        lock(&self.reads).clone()
    }

    /// The fact keys each check read only to add evidence.
    pub fn enrichment_keys(&self) -> BTreeMap<&'static str, std::collections::BTreeSet<FactKey>> {
        lock(&self.enrichments).clone()
    }

    /// Runs `f`, whose fact reads only add evidence to a verdict reached from other facts:
    /// the crash loop is a crash loop whether or not its log can be read. Such reads must
    /// not decide the verdict; a check reports their failure in the evidence instead.
    pub async fn enrich<F: std::future::Future>(&self, f: F) -> F::Output {
        ENRICHING.scope(true, f).await
    }

    /// Fetch statistics per fact key.
    pub fn fetch_stats(&self) -> BTreeMap<FactKey, FetchStat> {
        lock(&self.stats).clone()
    }

    /// Reads a fact, fetching it on first use. Private: the typed accessors below are the only
    /// callers, which keeps one value type per key.
    async fn get<T>(&self, key: FactKey) -> Result<Arc<T>, FactError>
    where
        T: DeserializeOwned + Send + Sync + 'static,
    {
        if let Ok(code) = CURRENT_CHECK.try_with(|c| *c) {
            let map = if ENRICHING.try_with(|e| *e).unwrap_or(false) {
                &self.enrichments
            } else {
                &self.reads
            };
            lock(map).entry(code).or_default().insert(key.clone());
        }
        let cell = lock(&self.cells).entry(key.clone()).or_default().clone();
        let result = cell
            .get_or_init(|| async {
                let after = self.waited_on();
                let started = self.epoch.elapsed();
                let calls = Arc::new(crate::guard::FetchCalls::default());
                let raw = crate::guard::FETCH
                    .scope(Arc::clone(&calls), self.backend.fetch(&key))
                    .await;
                {
                    let finished = self.epoch.elapsed();
                    let (requests, rounds) = calls.counts();
                    let mut stats = lock(&self.stats);
                    let stat = stats.entry(key.clone()).or_default();
                    stat.fetches += 1;
                    stat.duration = finished.saturating_sub(started);
                    stat.started = started;
                    stat.finished = finished;
                    stat.calls = requests;
                    stat.rounds = rounds;
                    stat.after = after;
                    stat.requested_by = CURRENT_CHECK.try_with(|c| *c).ok();
                    stat.error = raw.as_ref().err().map(|e| e.kind_name().to_string());
                }
                if let Some(rec) = &self.recorded {
                    let tree = raw.clone().and_then(|s| {
                        s.into_value().map_err(|e| FactError::Malformed {
                            message: format!("{key}: {e}"),
                        })
                    });
                    lock(rec).insert(key.clone(), tree);
                }
                let typed: T = decode(&key, raw?)?;
                Ok(Arc::new(typed) as Shared)
            })
            .await
            .clone();
        self.note_read(&key);
        let shared = result?;
        shared.downcast::<T>().map_err(|_| FactError::Malformed {
            message: format!("{key}: read with two different types (karpdoctor bug)"),
        })
    }

    /// Of the facts the current task has read, the one that finished last: a fetch asked for
    /// now could not have started before it.
    fn waited_on(&self) -> Option<FactKey> {
        CHAIN
            .try_with(|c| lock(c).as_ref().map(|(_, k)| k.clone()))
            .ok()
            .flatten()
    }

    /// Records that the current task has read `key` (whose fetch has finished by now).
    fn note_read(&self, key: &FactKey) {
        let Some(finished) = lock(&self.stats).get(key).map(|s| s.finished) else {
            return;
        };
        let _ = CHAIN.try_with(|chain| {
            let mut latest = lock(chain);
            if latest.as_ref().is_none_or(|(at, _)| finished >= *at) {
                *latest = Some((finished, key.clone()));
            }
        });
    }

    /// The run's critical path: of all chains of fetches linked by [`FetchStat::after`], the
    /// one with the most rounds of requests (the latest-finishing one among equals).
    pub fn critical_path(&self) -> CriticalPath {
        critical_path(&lock(&self.stats))
    }

    /// Fetches a fact without decoding it (prefetching ahead of the checks that need it).
    pub async fn prefetch(&self, key: FactKey) {
        // The value type does not matter for warming the cell: a later typed read decodes
        // from the cached JSON only if the types agree, so prefetch the exact accessor.
        let _ = match key {
            FactKey::KubeVersion => self.kube_version().await.map(drop),
            FactKey::NodePools => self.nodepools().await.map(drop),
            FactKey::Ec2NodeClasses => self.ec2_nodeclasses().await.map(drop),
            FactKey::NodeClaims => self.nodeclaims().await.map(drop),
            FactKey::CallerIdentity => self.caller_identity().await.map(drop),
            FactKey::Crd { name } => self.crd(&name).await.map(drop),
            FactKey::EksCluster { name } => self.eks_cluster(&name).await.map(drop),
            FactKey::ControllerDeployments { namespace } => self
                .get::<Vec<Deployment>>(FactKey::ControllerDeployments { namespace })
                .await
                .map(drop),
            FactKey::Pods {
                namespace,
                label_selector,
            } => self.pods(&namespace, &label_selector).await.map(drop),
            key @ FactKey::AccessReview { .. } => self.get::<AccessReview>(key).await.map(drop),
            FactKey::ServiceAccount { namespace, name } => {
                self.service_account(&namespace, &name).await.map(drop)
            }
            FactKey::IamRole { name } => self.iam_role(&name).await.map(drop),
            FactKey::OidcProviders => self.oidc_providers().await.map(drop),
            FactKey::Node { name } => self.node(&name).await.map(drop),
            FactKey::EksAddon { cluster, name } => self.eks_addon(&cluster, &name).await.map(drop),
            FactKey::EksNodegroup { cluster, name } => {
                self.eks_nodegroup(&cluster, &name).await.map(drop)
            }
            key @ FactKey::Simulation { .. } => self.get::<Vec<RawResult>>(key).await.map(drop),
            key @ FactKey::PodIdentityAssociations { .. } => {
                self.get::<Vec<PodIdentityAssociation>>(key).await.map(drop)
            }
            FactKey::Ec2Subnets => self.subnets().await.map(drop),
            FactKey::Ec2SecurityGroups => self.security_groups().await.map(drop),
            FactKey::Ec2Images { filters, owners } => self.images(filters, owners).await.map(drop),
            FactKey::SsmParameters { names } => self.ssm_parameters(&names).await.map(drop),
            FactKey::IamInstanceProfile { name } => self.instance_profile(&name).await.map(drop),
            FactKey::IamAttachedRolePolicies { role } => {
                self.attached_role_policies(&role).await.map(drop)
            }
            FactKey::EksAccessEntries { cluster } => self.access_entries(&cluster).await.map(drop),
            FactKey::AwsAuth => self.aws_auth().await.map(drop),
            FactKey::EbsDefaults => self.ebs_defaults().await.map(drop),
            FactKey::KmsKey { key_id } => self.kms_key(&key_id).await.map(drop),
            FactKey::PodLogs {
                namespace,
                pod,
                container,
                previous,
            } => self
                .pod_logs(&namespace, &pod, &container, previous)
                .await
                .map(drop),
            FactKey::Events { kind, namespace } => {
                self.events(&kind, namespace.as_deref()).await.map(drop)
            }
            FactKey::WebhookConfigurations => self.webhook_configurations().await.map(drop),
            FactKey::Service { namespace, name } => self.service(&namespace, &name).await.map(drop),
            FactKey::EksFargateProfiles { cluster } => {
                self.fargate_profiles(&cluster).await.map(drop)
            }
            FactKey::Ec2InstanceTypes => self.instance_types().await.map(drop),
            FactKey::Ec2InstanceTypeOfferings => self.instance_type_offerings().await.map(drop),
            FactKey::SqsQueue { name } => self.sqs_queue(&name).await.map(drop),
            FactKey::SqsQueues => self.sqs_queues().await.map(drop),
            FactKey::EventRules { target_arn } => self.event_rules(&target_arn).await.map(drop),
        };
    }

    // ---- typed accessors, one per fact kind ------------------------------------------------

    pub async fn kube_version(&self) -> Result<Arc<KubeVersion>, FactError> {
        self.get(FactKey::KubeVersion).await
    }

    /// Controller Deployments where the run looks for them: the namespace given with
    /// `--namespace`, or every namespace.
    pub async fn controller_deployments(&self) -> Result<Arc<Vec<Deployment>>, FactError> {
        self.get(FactKey::ControllerDeployments {
            namespace: self.hints.namespace.clone(),
        })
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
        self.get(FactKey::Pods {
            namespace: namespace.to_string(),
            label_selector: label_selector.to_string(),
        })
        .await
    }

    pub async fn crd(
        &self,
        name: &str,
    ) -> Result<Arc<Option<CustomResourceDefinition>>, FactError> {
        self.get(FactKey::Crd {
            name: name.to_string(),
        })
        .await
    }

    pub async fn nodepools(&self) -> Result<Arc<Vec<NodePool>>, FactError> {
        self.get(FactKey::NodePools).await
    }

    pub async fn ec2_nodeclasses(&self) -> Result<Arc<Vec<Ec2NodeClass>>, FactError> {
        self.get(FactKey::Ec2NodeClasses).await
    }

    pub async fn nodeclaims(&self) -> Result<Arc<Vec<NodeClaim>>, FactError> {
        self.get(FactKey::NodeClaims).await
    }

    pub async fn caller_identity(&self) -> Result<Arc<CallerIdentity>, FactError> {
        self.get(FactKey::CallerIdentity).await
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
        self.get(FactKey::AccessReview {
            verb: verb.to_string(),
            group: group.to_string(),
            resource: resource.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
        })
        .await
    }

    pub async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::ServiceAccount>>, FactError> {
        self.get(FactKey::ServiceAccount {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
        .await
    }

    pub async fn node(
        &self,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::Node>>, FactError> {
        self.get(FactKey::Node {
            name: name.to_string(),
        })
        .await
    }

    pub async fn eks_addon(
        &self,
        cluster: &str,
        name: &str,
    ) -> Result<Arc<Option<EksAddon>>, FactError> {
        self.get(FactKey::EksAddon {
            cluster: cluster.to_string(),
            name: name.to_string(),
        })
        .await
    }

    pub async fn eks_nodegroup(
        &self,
        cluster: &str,
        name: &str,
    ) -> Result<Arc<Option<EksNodegroup>>, FactError> {
        self.get(FactKey::EksNodegroup {
            cluster: cluster.to_string(),
            name: name.to_string(),
        })
        .await
    }

    /// `iam:SimulatePrincipalPolicy` of `principal`, as rows (one per action and resource).
    pub async fn simulate(
        &self,
        principal: &str,
        actions: &[String],
        resources: &[String],
        context: &[ContextEntry],
    ) -> Result<Vec<Row>, FactError> {
        let raw: Arc<Vec<RawResult>> = self
            .get(FactKey::Simulation {
                principal: principal.to_string(),
                actions: actions.to_vec(),
                resources: resources.to_vec(),
                context: context.to_vec(),
            })
            .await?;
        Ok(crate::iam::simulation::normalise(&raw))
    }

    pub async fn oidc_providers(&self) -> Result<Arc<Vec<OidcProvider>>, FactError> {
        self.get(FactKey::OidcProviders).await
    }

    pub async fn iam_role(&self, name: &str) -> Result<Arc<Option<IamRole>>, FactError> {
        self.get(FactKey::IamRole {
            name: name.to_string(),
        })
        .await
    }

    pub async fn pod_identity_associations(
        &self,
        cluster: &str,
        namespace: &str,
        service_account: &str,
    ) -> Result<Arc<Vec<PodIdentityAssociation>>, FactError> {
        self.get(FactKey::PodIdentityAssociations {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            service_account: service_account.to_string(),
        })
        .await
    }

    pub async fn subnets(&self) -> Result<Arc<Vec<Subnet>>, FactError> {
        self.get(FactKey::Ec2Subnets).await
    }

    pub async fn security_groups(&self) -> Result<Arc<Vec<SecurityGroup>>, FactError> {
        self.get(FactKey::Ec2SecurityGroups).await
    }

    /// The images one AMI selector term matches (see `ec2::selectors::image_query`).
    pub async fn images(
        &self,
        filters: Vec<Ec2Filter>,
        owners: Vec<String>,
    ) -> Result<Arc<Vec<Image>>, FactError> {
        self.get(FactKey::Ec2Images { filters, owners }).await
    }

    /// SSM parameter values by name; `None` for a parameter that does not exist. Callers
    /// pass the names sorted and deduplicated so one set of names is one fact.
    pub async fn ssm_parameters(
        &self,
        names: &[String],
    ) -> Result<Arc<BTreeMap<String, Option<String>>>, FactError> {
        self.get(FactKey::SsmParameters {
            names: names.to_vec(),
        })
        .await
    }

    pub async fn instance_profile(
        &self,
        name: &str,
    ) -> Result<Arc<Option<InstanceProfile>>, FactError> {
        self.get(FactKey::IamInstanceProfile {
            name: name.to_string(),
        })
        .await
    }

    pub async fn attached_role_policies(
        &self,
        role: &str,
    ) -> Result<Arc<Vec<AttachedPolicy>>, FactError> {
        self.get(FactKey::IamAttachedRolePolicies {
            role: role.to_string(),
        })
        .await
    }

    pub async fn access_entries(&self, cluster: &str) -> Result<Arc<Vec<AccessEntry>>, FactError> {
        self.get(FactKey::EksAccessEntries {
            cluster: cluster.to_string(),
        })
        .await
    }

    pub async fn aws_auth(
        &self,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::ConfigMap>>, FactError> {
        self.get(FactKey::AwsAuth).await
    }

    pub async fn ebs_defaults(&self) -> Result<Arc<EbsDefaults>, FactError> {
        self.get(FactKey::EbsDefaults).await
    }

    pub async fn kms_key(&self, key_id: &str) -> Result<Arc<Option<KmsKey>>, FactError> {
        self.get(FactKey::KmsKey {
            key_id: key_id.to_string(),
        })
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
        self.get(FactKey::PodLogs {
            namespace: namespace.to_string(),
            pod: pod.to_string(),
            container: container.to_string(),
            previous,
        })
        .await
    }

    /// Events about objects of `kind`, newest first, deduplicated across the two events APIs.
    pub async fn events(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Arc<crate::events::Events>, FactError> {
        self.get(FactKey::Events {
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
        })
        .await
    }

    pub async fn webhook_configurations(&self) -> Result<Arc<Vec<Value>>, FactError> {
        self.get(FactKey::WebhookConfigurations).await
    }

    pub async fn service(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Option<k8s_openapi::api::core::v1::Service>>, FactError> {
        self.get(FactKey::Service {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
        .await
    }

    pub async fn fargate_profiles(
        &self,
        cluster: &str,
    ) -> Result<Arc<Vec<FargateProfile>>, FactError> {
        self.get(FactKey::EksFargateProfiles {
            cluster: cluster.to_string(),
        })
        .await
    }

    pub async fn instance_types(&self) -> Result<Arc<Vec<InstanceType>>, FactError> {
        self.get(FactKey::Ec2InstanceTypes).await
    }

    pub async fn instance_type_offerings(
        &self,
    ) -> Result<Arc<Vec<InstanceTypeOffering>>, FactError> {
        self.get(FactKey::Ec2InstanceTypeOfferings).await
    }

    pub async fn sqs_queue(&self, name: &str) -> Result<Arc<Option<SqsQueue>>, FactError> {
        self.get(FactKey::SqsQueue {
            name: name.to_string(),
        })
        .await
    }

    pub async fn sqs_queues(&self) -> Result<Arc<Vec<String>>, FactError> {
        self.get(FactKey::SqsQueues).await
    }

    pub async fn event_rules(&self, target_arn: &str) -> Result<Arc<Vec<EventRule>>, FactError> {
        self.get(FactKey::EventRules {
            target_arn: target_arn.to_string(),
        })
        .await
    }

    pub async fn eks_cluster(&self, name: &str) -> Result<Arc<Option<EksCluster>>, FactError> {
        self.get(FactKey::EksCluster {
            name: name.to_string(),
        })
        .await
    }
}

/// A fact's typed value from what the backend handed over.
fn decode<T: DeserializeOwned>(key: &FactKey, stored: Stored) -> Result<T, FactError> {
    let malformed = |e: serde_json::Error| FactError::Malformed {
        message: format!("{key}: {e}"),
    };
    match stored {
        // Events check their own shape while they decode (a list of objects) and keep the
        // newest 200 of however many: read straight from a bundle's text, the list is never
        // built as a tree (at 50,000 events that tree is most of a replay's memory).
        Stored::Text(text) if key.kind() == FactKind::Events => {
            serde_json::from_str(text.get()).map_err(malformed)
        }
        stored => {
            let value = stored.into_value().map_err(malformed)?;
            validate_shape(key, &value)?;
            serde_json::from_value(value).map_err(malformed)
        }
    }
}

/// Rejects payloads that lenient decoding would turn into plausible-looking but empty values
/// (k8s-openapi fills missing required fields with defaults): a check must say "could not
/// judge" about garbage, not judge an empty object.
fn validate_shape(key: &FactKey, value: &Value) -> Result<(), FactError> {
    let named = |v: &Value| v.pointer("/metadata/name").is_some_and(Value::is_string);
    let fail = |what: &str| {
        Err(FactError::Malformed {
            message: format!("{key}: {what}"),
        })
    };
    match key.kind() {
        FactKind::ControllerDeployments
        | FactKind::Pods
        | FactKind::NodePools
        | FactKind::Ec2NodeClasses
        | FactKind::NodeClaims => match value.as_array() {
            None => fail("expected a list of objects"),
            Some(items) if !items.iter().all(named) => fail("a listed object has no metadata.name"),
            Some(_) => Ok(()),
        },
        FactKind::Events | FactKind::WebhookConfigurations => match value.as_array() {
            None => fail("expected a list of objects"),
            Some(items) if !items.iter().all(Value::is_object) => {
                fail("a listed item is not an object")
            }
            Some(_) => Ok(()),
        },
        FactKind::Crd
        | FactKind::ServiceAccount
        | FactKind::Node
        | FactKind::AwsAuth
        | FactKind::Service
            if value.is_null() || named(value) =>
        {
            Ok(())
        }
        FactKind::ServiceAccount | FactKind::Node | FactKind::AwsAuth | FactKind::Service => {
            fail("expected an object with metadata.name")
        }
        FactKind::PodLogs if value.is_null() || value.is_string() => Ok(()),
        FactKind::PodLogs => fail("expected log text"),
        FactKind::EksFargateProfiles => list_of(key, value, "name", "profiles with names"),
        FactKind::Ec2InstanceTypes => {
            list_of(key, value, "instanceType", "instance types with names")
        }
        FactKind::Ec2InstanceTypeOfferings => {
            list_of(key, value, "instanceType", "offerings with instance types")
        }
        FactKind::SqsQueue if value.is_null() || value.get("arn").is_some_and(Value::is_string) => {
            Ok(())
        }
        FactKind::SqsQueue => fail("expected a queue with an ARN"),
        FactKind::SqsQueues => match value.as_array() {
            Some(items) if items.iter().all(Value::is_string) => Ok(()),
            _ => fail("expected a list of queue names"),
        },
        FactKind::EventRules => list_of(key, value, "name", "rules with names"),
        FactKind::Ec2Subnets => list_of(key, value, "subnetId", "subnets with ids"),
        FactKind::Ec2SecurityGroups => list_of(key, value, "groupId", "security groups with ids"),
        FactKind::Ec2Images => list_of(key, value, "imageId", "images with ids"),
        FactKind::IamAttachedRolePolicies => list_of(key, value, "policyArn", "policies with ARNs"),
        FactKind::EksAccessEntries => {
            list_of(key, value, "principalArn", "entries with principals")
        }
        FactKind::SsmParameters => match value.as_object() {
            Some(m) if m.values().all(|v| v.is_null() || v.is_string()) => Ok(()),
            _ => fail("expected parameter values by name"),
        },
        FactKind::IamInstanceProfile
            if value.is_null() || value.get("arn").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        FactKind::IamInstanceProfile => fail("expected an instance profile with an ARN"),
        FactKind::EbsDefaults
            if value
                .get("encryptedByDefault")
                .is_some_and(Value::is_boolean) =>
        {
            Ok(())
        }
        FactKind::EbsDefaults => fail("expected EBS encryption defaults"),
        FactKind::KmsKey if value.is_null() || value.get("arn").is_some_and(Value::is_string) => {
            Ok(())
        }
        FactKind::KmsKey => fail("expected a KMS key with an ARN"),
        FactKind::EksAddon
            if value.is_null() || value.get("name").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        FactKind::EksAddon => fail("expected an add-on with a name"),
        FactKind::EksNodegroup
            if value.is_null() || value.get("nodeRole").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        FactKind::EksNodegroup => fail("expected a node group with a node role"),
        FactKind::Simulation => match value.as_array() {
            Some(items)
                if items
                    .iter()
                    .all(|i| i.get("action").is_some_and(Value::is_string)) =>
            {
                Ok(())
            }
            _ => fail("expected a list of evaluation results with actions"),
        },
        FactKind::IamRole if value.is_null() || value.get("arn").is_some_and(Value::is_string) => {
            Ok(())
        }
        FactKind::IamRole => fail("expected a role with an ARN"),
        FactKind::OidcProviders => match value.as_array() {
            Some(items)
                if items
                    .iter()
                    .all(|i| i.get("arn").is_some_and(Value::is_string)) =>
            {
                Ok(())
            }
            _ => fail("expected a list of providers with ARNs"),
        },
        FactKind::PodIdentityAssociations => match value.as_array() {
            Some(items)
                if items
                    .iter()
                    .all(|i| i.get("roleArn").is_some_and(Value::is_string)) =>
            {
                Ok(())
            }
            _ => fail("expected a list of associations with role ARNs"),
        },
        FactKind::Crd => fail("expected an object with metadata.name"),
        FactKind::KubeVersion if value.get("major").is_some_and(Value::is_string) => Ok(()),
        FactKind::KubeVersion => fail("expected a version object"),
        FactKind::EksCluster
            if value.is_null() || value.get("name").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        FactKind::EksCluster => fail("expected a cluster with a name"),
        FactKind::AccessReview if value.get("allowed").is_some_and(Value::is_boolean) => Ok(()),
        FactKind::AccessReview => fail("expected an access review answer"),
        // Decoding rejects missing fields for these (no serde defaults).
        FactKind::CallerIdentity => Ok(()),
    }
}

/// A list whose items all carry the string field `field` (their identity).
fn list_of(key: &FactKey, value: &Value, field: &str, what: &str) -> Result<(), FactError> {
    match value.as_array() {
        Some(items)
            if items
                .iter()
                .all(|i| i.get(field).is_some_and(Value::is_string)) =>
        {
            Ok(())
        }
        _ => Err(FactError::Malformed {
            message: format!("{key}: expected a list of {what}"),
        }),
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

/// Locks a mutex, recovering the data if a panicking check poisoned it: the maps it guards
/// are only ever inserted into, so they stay consistent.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// See [`Context::critical_path`]. Separate for unit tests over hand-built statistics.
pub fn critical_path(stats: &BTreeMap<FactKey, FetchStat>) -> CriticalPath {
    // Rounds from the start of each fact's chain to its end; the `after` links form a forest
    // (a fact is always asked for after the one it follows finished), walked with a memo.
    let mut depth: HashMap<&FactKey, u32> = HashMap::new();
    for key in stats.keys() {
        let mut path = Vec::new();
        let mut at = Some(key);
        while let Some(k) = at {
            if depth.contains_key(k) || path.contains(&k) {
                break;
            }
            path.push(k);
            at = stats.get(k).and_then(|s| s.after.as_ref());
        }
        let mut below = at.and_then(|k| depth.get(k)).copied().unwrap_or(0);
        for k in path.into_iter().rev() {
            below += stats.get(k).map_or(0, |s| s.rounds);
            depth.insert(k, below);
        }
    }
    let Some(last) = stats
        .iter()
        .max_by_key(|(k, s)| (depth.get(k).copied().unwrap_or(0), s.finished))
        .map(|(k, _)| k)
    else {
        return CriticalPath::default();
    };
    let mut facts = vec![last.clone()];
    let mut at = stats.get(last).and_then(|s| s.after.as_ref());
    while let Some(k) = at {
        if facts.contains(k) {
            break;
        }
        facts.push(k.clone());
        at = stats.get(k).and_then(|s| s.after.as_ref());
    }
    facts.reverse();
    let first = facts.first().and_then(|k| stats.get(k)).map(|s| s.started);
    let end = stats.get(last).map(|s| s.finished);
    CriticalPath {
        rounds: depth.get(last).copied().unwrap_or(0),
        elapsed: match (first, end) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => Duration::ZERO,
        },
        facts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(started: u64, finished: u64, rounds: u32, after: Option<FactKey>) -> FetchStat {
        FetchStat {
            fetches: 1,
            started: Duration::from_millis(started),
            finished: Duration::from_millis(finished),
            duration: Duration::from_millis(finished - started),
            calls: rounds,
            rounds,
            after,
            ..FetchStat::default()
        }
    }

    fn role(name: &str) -> FactKey {
        FactKey::IamRole {
            name: name.to_string(),
        }
    }

    #[test]
    fn the_critical_path_follows_the_deepest_chain_not_the_slowest_fact() {
        let deployments = FactKey::ControllerDeployments { namespace: None };
        let sa = FactKey::ServiceAccount {
            namespace: "karpenter".into(),
            name: "karpenter".into(),
        };
        let mut stats = BTreeMap::new();
        stats.insert(deployments.clone(), stat(0, 50, 1, None));
        stats.insert(sa.clone(), stat(50, 100, 1, Some(deployments.clone())));
        stats.insert(role("controller"), stat(100, 150, 1, Some(sa.clone())));
        // Slow but shallower: two pages of one list (each page waits for the one before),
        // finished last.
        stats.insert(FactKey::NodeClaims, stat(0, 400, 2, None));
        // A fact whose chain is as deep as another's is broken by the later finish.
        stats.insert(role("node"), stat(60, 120, 2, Some(deployments.clone())));
        let path = critical_path(&stats);
        assert_eq!(path.rounds, 3);
        assert_eq!(path.facts, vec![deployments, sa, role("controller")]);
        assert_eq!(path.elapsed, Duration::from_millis(150));
    }

    #[test]
    fn replays_have_no_rounds_and_cycles_do_not_hang() {
        let mut stats = BTreeMap::new();
        stats.insert(role("a"), stat(0, 1, 0, Some(role("b"))));
        stats.insert(role("b"), stat(1, 2, 0, Some(role("a"))));
        let path = critical_path(&stats);
        assert_eq!(path.rounds, 0);
        assert!(path.facts.len() <= 2);
        assert_eq!(critical_path(&BTreeMap::new()), CriticalPath::default());
    }
}
