//! The pending-pod analysis KD8001–KD8003 share: which pods Karpenter should place and cannot,
//! grouped by workload, each with every NodePool's first reason. Each check reports the pods
//! whose furthest-reaching NodePool stopped at its step, so a pod is reported once.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;

use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::nodeclaim::{pool_class, pool_of};
use crate::checks::common::nodeclass::{ami_arches, subnet_zones};
use crate::facts::{InstanceType, InstanceTypeOffering};
use crate::model::{ControllerDeployment, Ec2NodeClass, NodeClaim, NodePool, PendingPod};
use crate::quantity::Quantity;
use crate::scheduling::allocatable::{NodeSettings, Resources, allocatable, capacity};
use crate::scheduling::pods::{self, Volumes};
use crate::scheduling::sets::{Requirements, ValueSet};
use crate::scheduling::spread::{self, PoolZones, ZoneSpread};
use crate::scheduling::{Blocked, Candidate, PodNeeds, Pool, Verdict, judge, untolerated};

/// Which check reports a group of unserved pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Unserved,
    TooLarge,
    ZoneUnreachable,
}

/// Pods of one workload that share their constraints, and what Karpenter makes of them.
#[derive(Clone, Debug)]
pub struct Group {
    /// `Deployment/shop/web`, `StatefulSet/db/pg`, `Pod/ns/name`.
    pub owner: String,
    pub pods: Vec<String>,
    /// When the first of them was marked Unschedulable.
    pub since: String,
    pub outcome: Outcome,
    /// Karpenter's latest `FailedScheduling` message about one of the pods, if any.
    pub karpenter_says: Option<String>,
    /// Karpenter's latest `could not schedule pod` log line about one of them, or why the
    /// log could not be read.
    pub karpenter_logged: Option<String>,
}

#[derive(Clone, Debug)]
pub enum Outcome {
    /// Karpenter ignores the pods: why (its own words where it has them).
    Ignored(String),
    /// Every NodePool's first reason, by descending weight (empty: no NodePool exists).
    Unserved(Vec<(String, Blocked)>),
}

impl Group {
    pub fn code(&self) -> Option<Code> {
        match &self.outcome {
            Outcome::Ignored(_) => Some(Code::Unserved),
            Outcome::Unserved(pools) => {
                let furthest = pools.iter().map(|(_, b)| b).max_by_key(|b| b.progress());
                Some(match furthest {
                    Some(Blocked::TooLarge { .. }) => Code::TooLarge,
                    Some(Blocked::Zones { .. }) => Code::ZoneUnreachable,
                    _ => Code::Unserved,
                })
            }
        }
    }

    /// `pod shop/web-0` or `3 pods` (the finding's object names the workload).
    pub fn subject(&self) -> String {
        match self.pods.as_slice() {
            [one] => format!("pod {one}"),
            many => format!("{} pods", many.len()),
        }
    }

    /// `pod shop/web-0 has been Pending since …` / `3 pods have been …`.
    pub fn waiting(&self) -> String {
        format!(
            "{} {} Unschedulable since {}",
            self.subject(),
            if self.pods.len() == 1 {
                "has been"
            } else {
                "have been"
            },
            self.since
        )
    }

    /// `it` or `them`.
    pub fn them(&self) -> &'static str {
        if self.pods.len() == 1 { "it" } else { "them" }
    }
}

/// The pending pods' verdict: the unserved groups, and what was left out and why (each check
/// may note it; KD8001 does, under `-v`).
#[derive(Debug, Default)]
pub struct Pending {
    pub groups: Vec<Group>,
    pub notes: Vec<String>,
}

/// `3 pods (shop/a, shop/b, …)`.
fn counted(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    let more = if names.len() > shown.len() {
        ", …"
    } else {
        ""
    };
    format!(
        "{} pod{} ({}{more})",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        shown.join(", ")
    )
}

/// The pods `out` does not pick, with a note saying which were left out and why.
fn leave_out<'p>(
    pods: Vec<&'p PendingPod>,
    out: impl Fn(&PendingPod) -> bool,
    why: &str,
    notes: &mut Vec<String>,
) -> Vec<&'p PendingPod> {
    let (left, kept): (Vec<&PendingPod>, Vec<&PendingPod>) = pods.into_iter().partition(|p| out(p));
    if !left.is_empty() {
        let names: Vec<String> = left.iter().map(|p| pod_name(p)).collect();
        notes.push(format!("left out {}: {why}", counted(&names)));
    }
    kept
}

/// The unserved groups. Reads nothing beyond the pending pods when none is a candidate.
pub async fn unserved(cx: &CheckCx) -> Result<Pending, FactError> {
    let pending = cx.pending_pods().await?;
    let now = cx.now();
    let mut out = Pending::default();
    let mut skipped: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut candidates: Vec<&PendingPod> = Vec::new();
    for p in pending.iter() {
        match pods::candidate(p, now) {
            Ok(()) => candidates.push(p),
            Err(why) => skipped.entry(why.describe()).or_default().push(pod_name(p)),
        }
    }
    for (why, names) in &skipped {
        out.notes
            .push(format!("left out {}: {why}", counted(names)));
    }
    if candidates.is_empty() {
        return Ok(out);
    }
    let controller = cx.controller().await?;
    // The controller's own pods: Karpenter cannot launch a node for itself; KD1005 owns them.
    let own = controller.as_ref().map(|(deployments, i)| {
        let d = ControllerDeployment::new(&deployments[*i]);
        format!("Deployment/{}/{}", d.namespace(), d.name())
    });
    let candidates = leave_out(
        candidates,
        |p| own.as_deref() == Some(pods::owner(p).as_str()),
        "the Karpenter controller's own (KD1005 judges them)",
        &mut out.notes,
    );
    if candidates.is_empty() {
        return Ok(out);
    }
    let (events, nominated) = futures::join!(cx.events("Pod", None), nominations(cx));
    let (events, nominated) = (events?, nominated?);
    let claims = cx.nodeclaims().await?;
    // A pod nominated to a NodeClaim that is still on its way is being served.
    let candidates = leave_out(
        candidates,
        |p| nominated_in_flight(p, &nominated, &claims),
        "nominated by Karpenter to a NodeClaim still on its way",
        &mut out.notes,
    );
    if candidates.is_empty() {
        return Ok(out);
    }
    let volume_facts = VolumeFacts::read(cx, &candidates).await?;
    let volumes = volume_facts.view();
    let spread_facts = SpreadFacts::read(cx, &candidates).await?;
    let pool_facts = PoolFacts::read(cx, controller.as_ref(), claims.clone()).await?;
    let pools = pool_facts.pools();
    let spreads = spread_facts.counter(&pools);

    let candidate_count = candidates.len();
    let mut left_to_auto_mode = 0;
    // Workloads often share their constraints (a chart's defaults, one team's selectors):
    // each distinct set is judged against the NodePools once, whichever workload asks.
    let mut judged: HashMap<String, Verdict> = HashMap::new();
    for (owner, members) in pods::by_owner(candidates.iter().copied()) {
        // Pods of one workload usually share their constraints: judge each distinct set once.
        let mut by_needs: Vec<(Result<PodNeeds, String>, Vec<&PendingPod>)> = Vec::new();
        for pod in members {
            let needs = pods::needs(pod, volumes).map(|n| spreads.apply(pod, n));
            match by_needs.iter_mut().find(|(n, _)| *n == needs) {
                Some((_, list)) => list.push(pod),
                None => by_needs.push((needs, vec![pod])),
            }
        }
        for (needs, members) in by_needs {
            let outcome = match needs {
                Err(why) => Outcome::Ignored(why),
                Ok(needs) => {
                    let verdict = judged
                        .entry(format!("{needs:?}"))
                        .or_insert_with(|| judge(&needs, &pools));
                    match verdict {
                        Verdict::Served { .. } => continue,
                        // Auto Mode's instance rules and labels are not modelled for pods: a
                        // pool of it the pods may land on could serve them, and saying none
                        // can would be a false error (docs/automode.md §9).
                        Verdict::Unserved(_)
                            if !auto_mode_may_serve(&needs, &pool_facts.nodepools).is_empty() =>
                        {
                            let names: Vec<String> = members.iter().map(|p| pod_name(p)).collect();
                            left_to_auto_mode += names.len();
                            out.notes.push(format!(
                                "left out {}: EKS Auto Mode's NodePool {} may serve {} (Auto Mode's scheduling is not judged here)",
                                counted(&names),
                                auto_mode_may_serve(&needs, &pool_facts.nodepools).join(", "),
                                if names.len() == 1 { "it" } else { "them" }
                            ));
                            continue;
                        }
                        Verdict::Unserved(blocked) => Outcome::Unserved(blocked.clone()),
                    }
                }
            };
            let names: Vec<String> = members.iter().map(|p| pod_name(p)).collect();
            let since = members
                .iter()
                .filter_map(|p| pods::unschedulable_since(p))
                .min()
                .unwrap_or_default();
            let karpenter_says = members.iter().find_map(|p| {
                karpenter_event(p, &events, "FailedScheduling").map(|e| e.message.clone())
            });
            out.groups.push(Group {
                owner: owner.clone(),
                pods: names,
                since,
                outcome,
                karpenter_says,
                karpenter_logged: None,
            });
        }
    }
    if !out.groups.is_empty() {
        // Evidence only: the verdict stands whether or not the log can be read.
        match cx.enrich(logged_reasons(cx)).await {
            Ok(said) => {
                for g in &mut out.groups {
                    g.karpenter_logged = g.pods.iter().find_map(|p| said.get(p)).cloned();
                }
            }
            Err(e) => {
                for g in &mut out.groups {
                    g.karpenter_logged =
                        Some(format!("the controller's log could not be read: {e}"));
                }
            }
        }
    }
    let waiting: usize = out.groups.iter().map(|g| g.pods.len()).sum();
    let candidate_count = candidate_count - left_to_auto_mode;
    out.notes.push(format!(
        "judged {candidate_count} pending pod{} against {} NodePool{}: {} can be served",
        if candidate_count == 1 { "" } else { "s" },
        pools.len(),
        if pools.len() == 1 { "" } else { "s" },
        candidate_count.saturating_sub(waiting)
    ));
    Ok(out)
}

/// EKS Auto Mode's NodePools (not being deleted) whose taints the pod tolerates and that its
/// `karpenter.sh/nodepool` requirement, if any, allows: those that may serve it.
pub fn auto_mode_may_serve(needs: &PodNeeds, nodepools: &[NodePool]) -> Vec<String> {
    nodepools
        .iter()
        .filter(|p| p.is_auto_mode() && p.metadata.deletion_timestamp.is_none())
        .filter(|p| untolerated(&p.spec.template.spec.taints, &needs.tolerations).is_none())
        .filter(|p| {
            needs.alternatives.is_empty()
                || needs.alternatives.iter().any(|alt| {
                    alt.get("karpenter.sh/nodepool")
                        .is_none_or(|v| v.has(p.name()))
                })
        })
        .map(|p| p.name().to_string())
        .collect()
}

/// The newest `could not schedule pod` reason Karpenter logged per pod (`namespace/name`),
/// from the running controller pods' current logs; none when no controller pod runs.
async fn logged_reasons(cx: &CheckCx) -> Result<HashMap<String, String>, FactError> {
    let logs = match crate::checks::common::controller::current_logs(cx).await {
        Err(FactError::NotInstalled { .. }) => Vec::new(),
        other => other?,
    };
    // Later lines overwrite earlier ones: the newest reason wins.
    Ok(logs
        .iter()
        .flat_map(|l| crate::logs::unschedulable_pods(l))
        .collect())
}

/// The volume facts pending pods' zones depend on, read only when one of them has a claim.
#[derive(Default)]
pub struct VolumeFacts {
    claims: Option<Arc<Vec<PersistentVolumeClaim>>>,
    volumes: Option<Arc<Vec<PersistentVolume>>>,
    classes: Option<Arc<Vec<StorageClass>>>,
}

impl VolumeFacts {
    pub async fn read(cx: &CheckCx, pods: &[&PendingPod]) -> Result<Self, FactError> {
        let has_claims = pods.iter().any(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.volumes.as_ref())
                .is_some_and(|v| v.iter().any(|v| v.persistent_volume_claim.is_some()))
        });
        if !has_claims {
            return Ok(VolumeFacts::default());
        }
        Ok(VolumeFacts {
            claims: Some(cx.persistent_volume_claims().await?),
            volumes: Some(cx.persistent_volumes().await?),
            classes: Some(cx.storage_classes().await?),
        })
    }

    pub fn view(&self) -> Volumes<'_> {
        Volumes {
            claims: self
                .claims
                .as_deref()
                .map(Vec::as_slice)
                .unwrap_or_default(),
            volumes: self
                .volumes
                .as_deref()
                .map(Vec::as_slice)
                .unwrap_or_default(),
            classes: self
                .classes
                .as_deref()
                .map(Vec::as_slice)
                .unwrap_or_default(),
        }
    }
}

/// The counts pending pods' zone spreads depend on, read only when one of them has a
/// `DoNotSchedule` zone spread: the bound pods each spread selects, and the nodes with a zone.
#[derive(Default)]
pub struct SpreadFacts {
    selected: BTreeMap<(String, String), Arc<Vec<Pod>>>,
    nodes: Option<Arc<Vec<crate::model::ListedNode>>>,
}

impl SpreadFacts {
    pub async fn read(cx: &CheckCx, pods: &[&PendingPod]) -> Result<Self, FactError> {
        let keys: BTreeSet<(String, String)> = pods
            .iter()
            .flat_map(|p| {
                let ns = p
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into());
                spread::zone_constraints(p)
                    .into_iter()
                    .map(move |c| (ns.clone(), c.selector()))
            })
            .collect();
        if keys.is_empty() {
            return Ok(SpreadFacts::default());
        }
        // One round: the nodes and every selector's pods at once.
        let selected = futures::future::try_join_all(keys.into_iter().map(|key| async move {
            let pods = cx.scheduled_pods(&key.0, &key.1).await?;
            Ok::<_, FactError>((key, pods))
        }));
        let (nodes, selected) = futures::try_join!(cx.nodes(spread::NODES_WITH_ZONE), selected)?;
        Ok(SpreadFacts {
            selected: selected.into_iter().collect(),
            nodes: Some(nodes),
        })
    }

    /// What applies the counts to each pod, given the NodePools as the scheduler sees them.
    pub fn counter<'f>(&'f self, pools: &[Pool<'_>]) -> SpreadCounter<'f> {
        SpreadCounter {
            facts: self,
            nodes: self
                .nodes
                .as_deref()
                .map(|n| spread::counted_nodes(n))
                .unwrap_or_default(),
            pools: pools.iter().filter_map(spread::pool_zones).collect(),
            memo: std::cell::RefCell::new(HashMap::new()),
        }
    }
}

pub struct SpreadCounter<'f> {
    facts: &'f SpreadFacts,
    nodes: BTreeMap<&'f str, spread::CountedNode<'f>>,
    pools: Vec<PoolZones>,
    /// Pods of one workload share their spreads: each distinct one is counted once.
    memo: std::cell::RefCell<HashMap<String, Option<ZoneSpread>>>,
}

impl SpreadCounter<'_> {
    /// `needs` with where each of the pod's zone spreads lets it go now.
    pub fn apply(&self, pod: &PendingPod, mut needs: PodNeeds) -> PodNeeds {
        let ns = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        for c in spread::zone_constraints(pod) {
            let own = c.selects(&pod.metadata.labels.clone().unwrap_or_default());
            let key = format!(
                "{ns}|{c:?}|{own}|{:?}|{:?}",
                needs.alternatives, needs.tolerations
            );
            let counted = self
                .memo
                .borrow_mut()
                .entry(key)
                .or_insert_with(|| {
                    let selected = self
                        .facts
                        .selected
                        .get(&(ns.clone(), c.selector()))
                        .map(|p| p.as_slice())
                        .unwrap_or_default();
                    spread::spread(
                        pod,
                        &needs.alternatives,
                        &c,
                        selected,
                        &self.nodes,
                        &self.pools,
                    )
                })
                .clone();
            needs.spread.extend(counted);
        }
        needs
    }
}

/// What the NodePools' verdicts are built from.
pub struct PoolFacts {
    nodepools: Arc<Vec<NodePool>>,
    classes: Arc<Vec<Ec2NodeClass>>,
    claims: Arc<Vec<NodeClaim>>,
    daemonsets: Arc<Vec<DaemonSet>>,
    types: Arc<Vec<InstanceType>>,
    offerings: Arc<Vec<InstanceTypeOffering>>,
    overhead_env: Option<String>,
    enis_env: Option<String>,
}

impl PoolFacts {
    pub async fn read(
        cx: &CheckCx,
        controller: Option<&(Arc<Vec<Deployment>>, usize)>,
        claims: Arc<Vec<NodeClaim>>,
    ) -> Result<Self, FactError> {
        let env = |name: &str| -> Option<String> {
            let (deployments, i) = controller?;
            ControllerDeployment::new(&deployments[*i])
                .env(name)
                .map(str::to_string)
        };
        Ok(PoolFacts {
            nodepools: cx.nodepools().await?,
            classes: cx.ec2_nodeclasses().await?,
            claims,
            daemonsets: cx.daemonsets().await?,
            types: cx.instance_types().await?,
            offerings: cx.instance_type_offerings().await?,
            overhead_env: env("VM_MEMORY_OVERHEAD_PERCENT"),
            enis_env: env("RESERVED_ENIS"),
        })
    }

    /// The NodePools as the self-managed controller's scheduler sees them: those being deleted
    /// are not tried, and EKS Auto Mode's are not its own (kubernetes-sigs/karpenter#1818).
    pub fn pools(&self) -> Vec<Pool<'_>> {
        self.nodepools
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && !p.is_auto_mode())
            .map(|np| {
                build_pool(
                    np,
                    &self.classes,
                    &self.claims,
                    &self.daemonsets,
                    &self.types,
                    &self.offerings,
                    self.overhead_env.as_deref(),
                    self.enis_env.as_deref(),
                )
            })
            .collect()
    }
}

/// One pod's verdict against every NodePool of the self-managed controller, for `karpdoctor
/// pod`, with EKS Auto Mode's pools that may serve it ([`auto_mode_may_serve`]): `Err` is why
/// Karpenter ignores it.
pub async fn judge_pod(
    cx: &CheckCx,
    pod: &PendingPod,
) -> Result<Result<(Verdict, Vec<String>), String>, FactError> {
    let volume_facts = VolumeFacts::read(cx, &[pod]).await?;
    let needs = match pods::needs(pod, volume_facts.view()) {
        Ok(n) => n,
        Err(why) => return Ok(Err(why)),
    };
    let spread_facts = SpreadFacts::read(cx, &[pod]).await?;
    let controller = cx.controller().await?;
    let claims = cx.nodeclaims().await?;
    let pool_facts = PoolFacts::read(cx, controller.as_ref(), claims).await?;
    let pools = pool_facts.pools();
    let needs = spread_facts.counter(&pools).apply(pod, needs);
    let auto_mode = auto_mode_may_serve(&needs, &pool_facts.nodepools);
    Ok(Ok((judge(&needs, &pools), auto_mode)))
}

/// The code of the check that reports a verdict.
pub fn code_of(verdict: &Verdict) -> Option<&'static str> {
    match verdict.furthest()? {
        Blocked::TooLarge { .. } => Some(codes::PENDING_PODS_TOO_LARGE),
        Blocked::Zones { .. } => Some(codes::PENDING_PODS_ZONE_UNREACHABLE),
        _ => Some(codes::PENDING_PODS_UNSERVED),
    }
}

fn pod_name(p: &PendingPod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or("<unnamed>")
    )
}

/// Karpenter's latest event of `reason` about the pod (`Nominated`, `FailedScheduling`).
/// kube-scheduler reports `FailedScheduling` too, so that reason must come from Karpenter;
/// only Karpenter nominates pods to NodeClaims.
pub fn karpenter_event<'e>(
    pod: &'e PendingPod,
    events: &'e crate::events::Events,
    reason: &str,
) -> Option<&'e crate::events::Event> {
    let name = pod.metadata.name.as_deref().unwrap_or("");
    events.about("Pod", name).find(|e| {
        e.reason == reason
            && (reason != "FailedScheduling" || e.reporter == "karpenter")
            && Some(e.namespace.as_str()) == pod.metadata.namespace.as_deref()
    })
}

/// Karpenter's `Nominated` events, the newest per pod, read on their own so that thousands
/// of kube-scheduler events cannot crowd them out. A bundle recorded before they were read
/// on their own falls back to the Pod events it holds.
pub async fn nominations(cx: &CheckCx) -> Result<Arc<crate::events::Events>, FactError> {
    match cx.events_by_reason("Pod", "Nominated").await {
        Ok(latest) => Ok(Arc::new(latest.0.clone())),
        Err(FactError::NotRecorded { .. }) => cx.events("Pod", None).await,
        Err(e) => Err(e),
    }
}

/// Karpenter's latest nomination of the pod: when, and the NodeClaim it names
/// (`Pod should schedule on: nodeclaim/<name>[, node/<node>]`).
pub fn latest_nomination(
    pod: &PendingPod,
    events: &crate::events::Events,
) -> Option<(Option<String>, String)> {
    let event = karpenter_event(pod, events, "Nominated")?;
    let claim = event
        .message
        .split_whitespace()
        .find_map(|w| w.trim_end_matches(',').strip_prefix("nodeclaim/"))?;
    Some((event.last_seen.map(|t| t.to_string()), claim.to_string()))
}

/// Whether Karpenter's latest `Nominated` event for the pod names a NodeClaim that exists,
/// is not being deleted and has not initialized yet.
fn nominated_in_flight(
    pod: &PendingPod,
    events: &crate::events::Events,
    claims: &[NodeClaim],
) -> bool {
    let Some((_, claim)) = latest_nomination(pod, events) else {
        return false;
    };
    claims.iter().any(|c| {
        c.metadata.name.as_deref() == Some(claim.as_str())
            && c.metadata.deletion_timestamp.is_none()
            && c.status
                .condition("Initialized")
                .is_none_or(|i| i.status != "True")
    })
}

#[allow(clippy::too_many_arguments)]
fn build_pool<'a>(
    np: &NodePool,
    classes: &[Ec2NodeClass],
    claims: &[NodeClaim],
    daemonsets: &[DaemonSet],
    types: &'a [InstanceType],
    offerings: &[InstanceTypeOffering],
    overhead_env: Option<&str>,
    enis_env: Option<&str>,
) -> Pool<'a> {
    let template = &np.spec.template;
    let class_name = template
        .spec
        .node_class_ref
        .as_ref()
        .and_then(|r| r.name.clone())
        .unwrap_or_default();
    let class = pool_class(np, classes);
    let mut requirements = Requirements::default();
    let mut not_ready = None;
    match Requirements::from_list(&template.spec.requirements) {
        Ok(r) => requirements = r,
        Err(bad) => {
            not_ready = Some((
                format!("a requirement the API would reject: {bad}"),
                vec![codes::NODEPOOL_NOT_READY],
            ))
        }
    }
    for (k, v) in &template.metadata.labels {
        requirements.add(k, ValueSet::only([v.clone()]));
    }
    requirements.add(
        "karpenter.sh/nodepool",
        ValueSet::only([np.name().to_string()]),
    );
    requirements.add(
        "karpenter.k8s.aws/ec2nodeclass",
        ValueSet::only([class_name.clone()]),
    );
    let zones = class.map(subnet_zones).unwrap_or_default();
    if not_ready.is_none() {
        not_ready = match class {
            None => Some((
                format!("its EC2NodeClass {class_name} does not exist"),
                vec![codes::NODEPOOL_NODECLASSREF_INVALID],
            )),
            Some(c)
                if c.status
                    .condition("Ready")
                    .is_some_and(|r| r.status != "True") =>
            {
                Some((
                    format!(
                        "its EC2NodeClass {class_name} is not Ready ({})",
                        c.status
                            .condition("Ready")
                            .map(|r| r.describe())
                            .unwrap_or_default()
                    ),
                    vec![codes::NODECLASS_NOT_READY],
                ))
            }
            Some(_) if zones.is_empty() => Some((
                format!("its EC2NodeClass {class_name} has no resolved subnets"),
                vec![
                    codes::NODECLASS_SUBNETS_UNRESOLVED,
                    codes::NODECLASS_NOT_READY,
                ],
            )),
            Some(_) => np
                .status
                .condition("Ready")
                .filter(|r| r.status == "False")
                .map(|r| (r.describe(), vec![codes::NODEPOOL_NOT_READY])),
        };
    }
    let settings = class
        .map(|c| NodeSettings::from_class(&c.spec, overhead_env, enis_env))
        .unwrap_or_default();
    let mut offered: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for o in offerings.iter().filter(|o| zones.contains(&o.zone)) {
        offered
            .entry(o.instance_type.as_str())
            .or_default()
            .insert(o.zone.clone());
    }
    let candidates: Vec<Candidate<'a>> = types
        .iter()
        .filter_map(|t| {
            let zones = offered.get(t.instance_type.as_str())?.clone();
            Some(Candidate {
                it: t,
                zones,
                allocatable: allocatable(t, &settings),
                capacity: capacity(t, &settings),
            })
        })
        .collect();
    let taints = template.spec.taints.clone();
    let daemon_overhead = daemonsets
        .iter()
        .filter(|ds| daemon_lands(ds, &requirements, &taints))
        .filter_map(|ds| ds.spec.as_ref()?.template.spec.as_ref())
        .map(pods::requests)
        .fold(Resources::new(), |mut acc, r| {
            for (k, v) in r {
                let total = acc.get(&k).and_then(|a| a.checked_add(v)).unwrap_or(v);
                acc.insert(k, total);
            }
            acc
        });
    Pool {
        name: np.name().to_string(),
        weight: np.spec.weight.unwrap_or(0),
        not_ready,
        requirements,
        taints,
        headroom: headroom(np, claims),
        types: candidates,
        ami_arches: class.map(ami_arches).unwrap_or_default(),
        daemon_overhead,
    }
}

/// Whether a DaemonSet's pods would run on the pool's nodes: they tolerate its taints and
/// some required term of theirs is compatible with its requirements.
fn daemon_lands(
    ds: &DaemonSet,
    pool: &Requirements,
    taints: &[k8s_openapi::api::core::v1::Taint],
) -> bool {
    let Some(spec) = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref()) else {
        return false;
    };
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    if untolerated(taints, &tolerations).is_some() {
        return false;
    }
    pods::alternatives(spec).is_ok_and(|alts| alts.iter().any(|a| pool.compatible(a).is_ok()))
}

/// What is left under each of the pool's limits: usage from `status.resources` (Karpenter's
/// own tally, with `nodes` from v1.11), else the pool's NodeClaims' capacity.
fn headroom(np: &NodePool, claims: &[NodeClaim]) -> Resources {
    let mine: Vec<&NodeClaim> = claims.iter().filter(|c| pool_of(c) == np.name()).collect();
    let status = np.status.rest.get("resources");
    let quantity = Quantity::from_json;
    let mut out = Resources::new();
    for (resource, limit) in &np.spec.limits {
        let Some(limit) = quantity(limit) else {
            continue;
        };
        let used = if resource == "nodes" {
            Some(Quantity::units(mine.len() as i64))
        } else {
            status
                .and_then(|s| s.get(resource))
                .and_then(quantity)
                .or_else(|| {
                    mine.iter()
                        .filter_map(|c| c.status.capacity.get(resource))
                        .filter_map(Quantity::parse)
                        .try_fold(Quantity::ZERO, |a, q| a.checked_add(q))
                })
        };
        if let Some(used) = used {
            out.insert(resource.clone(), limit.saturating_sub(used));
        }
    }
    out
}

/// The evidence every scheduling finding carries: the pods, since when, each NodePool's
/// reason, and Karpenter's own message.
pub fn finding(group: &Group, message: String) -> Finding {
    let pools: serde_json::Map<String, serde_json::Value> = match &group.outcome {
        Outcome::Unserved(pools) => pools
            .iter()
            .map(|(name, b)| (name.clone(), b.describe().into()))
            .collect(),
        Outcome::Ignored(_) => serde_json::Map::new(),
    };
    let shown: Vec<&String> = group.pods.iter().take(5).collect();
    let mut f = Finding::new(group.owner.clone(), message)
        .evidence("pods", group.pods.len())
        .evidence("examples", serde_json::json!(shown))
        .evidence("unschedulableSince", group.since.clone());
    if !pools.is_empty() {
        f = f.evidence("nodePools", serde_json::Value::Object(pools));
    }
    if let Some(said) = &group.karpenter_says {
        f = f.evidence("karpenter", said.clone());
    }
    if let Some(logged) = &group.karpenter_logged {
        f = f.evidence("karpenterLog", logged.clone());
    }
    f
}
