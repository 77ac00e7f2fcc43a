//! The pending-pod analysis KD8001–KD8003 share: which pods Karpenter should place and cannot,
//! grouped by workload, each with every NodePool's first reason. Each check reports the pods
//! whose furthest-reaching NodePool stopped at its step, so a pod is reported once.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;

use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::pools::PoolFacts;
use crate::model::{ControllerDeployment, NodeClaim, PendingPod};
use crate::scheduling::pods::{self, Volumes};
use crate::scheduling::spread::{self, PoolZones, ZoneSpread};
use crate::scheduling::{Blocked, PodNeeds, Pool, Verdict, judge};

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
    out.notes.push(format!(
        "judged {candidate_count} pending pod{} against {} NodePool{}: {} can be served",
        if candidate_count == 1 { "" } else { "s" },
        pools.len(),
        if pools.len() == 1 { "" } else { "s" },
        candidate_count.saturating_sub(waiting)
    ));
    Ok(out)
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

/// One pod's verdict against every NodePool, the self-managed controller's and EKS Auto Mode's,
/// for `karpdoctor pod`: `Err` is why Karpenter ignores it.
pub async fn judge_pod(
    cx: &CheckCx,
    pod: &PendingPod,
) -> Result<Result<Verdict, String>, FactError> {
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
    Ok(Ok(judge(&needs, &pools)))
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
