//! KD4101: nodes Karpenter has wanted to disrupt for over an hour (`Drifted`, or
//! `Consolidatable` where the pool's policy lets it act) that are still there, with what holds
//! them, in Karpenter's order: the node's own do-not-disrupt annotation, pods that block eviction,
//! the pool's budget for the reason; for drift with nothing to name, Karpenter's own
//! `DisruptionBlocked` event or a known release defect (rules: docs/disruption.md §1–§4, §9, §12).

use std::collections::BTreeMap;


use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::held::{HeldNodes, NodeCause};
use crate::checks::common::nodeclaim::pool_of;
use crate::disruption::budgets::windows_never_open;
use crate::disruption::candidates::{
    BLOCKED_MINUTES, Blocker, Candidate, PoolUse, Reason, blockers, disrupting, expected,
    nominated_to, pool_use, reschedulable, says_nominated, wanted,
};
use crate::iam::reference::Version;
use crate::model::{ControllerDeployment, ListedNode, NodeClaim, NodePool};
use crate::scheduling::spread::NODES_WITH_ZONE;

declare_check! {
    pub static DISRUPTION_BLOCKED = {
        code: "KD4101",
        slug: "disruption-blocked",
        title: "nodes Karpenter marks for disruption are replaced",
        category: Disruption,
        severity: Warning,
        needs: [NodePools, NodeClaims, Nodes, NodePods, PodDisruptionBudgets, ControllerDeployments, EventsByReason, PinnedWorkloads],
        // Which workload's template annotates the do-not-disrupt pods (only a link to KD4104),
        // and which pods Karpenter keeps nominating to a node (who they are, not whether).
        evidence: [PinnedWorkloads, EventsByReason],
        run: disruption_blocked,
    }
}

fn condition_held(claim: &NodeClaim, t: &str, now: jiff::Timestamp) -> bool {
    claim
        .status
        .condition(t)
        .is_some_and(|c| c.status == "True" && c.held_longer_than(now, BLOCKED_MINUTES))
}

fn node_of(claim: &NodeClaim) -> Option<&str> {
    claim.status.node_name.as_deref().filter(|n| !n.is_empty())
}

async fn disruption_blocked(cx: &CheckCx) -> CheckResult {
    let now = cx.now();
    let (pools, claims) = futures::try_join!(cx.nodepools(), cx.nodeclaims())?;
    let maybe: Vec<&NodeClaim> = claims
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none() && node_of(c).is_some())
        .filter(|c| !disrupting(c))
        .filter(|c| condition_held(c, "Drifted", now) || condition_held(c, "Consolidatable", now))
        .collect();
    if maybe.is_empty() {
        return Ok(Vec::new());
    }
    let (nodes, pdbs, controller) = futures::try_join!(
        cx.nodes(NODES_WITH_ZONE),
        cx.pod_disruption_budgets(),
        cx.controller()
    )?;
    let version = controller.as_ref().and_then(|(d, i)| {
        ControllerDeployment::new(&d[*i])
            .version()
            .as_deref()
            .and_then(Version::parse)
    });
    let by_name: BTreeMap<&str, &ListedNode> = nodes.iter().map(|n| (n.name(), n)).collect();
    let pool_by_name: BTreeMap<&str, &NodePool> = pools.iter().map(|p| (p.name(), p)).collect();
    let uses = pool_use(&claims, &by_name, now);
    // The candidates' pods, in one round.
    let judged: Vec<(&NodeClaim, &ListedNode, &NodePool)> = maybe
        .into_iter()
        .filter_map(|c| {
            let node = by_name.get(node_of(c)?)?;
            let pool = pool_by_name.get(pool_of(c))?;
            (!node.is_deleting()).then_some((c, *node, *pool))
        })
        .collect();
    let pods = futures::future::try_join_all(
        judged
            .iter()
            .map(|(c, _, _)| cx.node_pods(node_of(c).unwrap_or_default())),
    )
    .await?;
    let idle = PoolUse::default();
    let mut found = Vec::new();
    // Intent and progress, said once per NodePool and blocker under `-v`.
    let mut waiting: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    for ((claim, node, pool), pods) in judged.iter().zip(&pods) {
        let empty = !pods.iter().any(reschedulable);
        let Some((reason, since)) = wanted(claim, pool, empty, now) else {
            continue;
        };
        let all = blockers(
            &Candidate {
                claim,
                reason,
                node_annotated: node.do_not_disrupt,
                pods,
                pdbs: &pdbs,
                pool,
                pool_use: uses.get(pool.name()).unwrap_or(&idle),
                version,
            },
            now,
        );
        let Some(first) = all.first() else { continue };
        let name = node_of(claim).unwrap_or_default();
        if expected(first) {
            let why = format!("{} ({})", describe(first, reason, pool).1.what, reason.as_str());
            waiting
                .entry((pool.name().to_string(), why))
                .or_default()
                .push(name);
            continue;
        }
        found.push((*claim, name, reason, since, all, pods));
    }
    for ((pool, why), nodes) in waiting {
        let shown: Vec<&str> = nodes.iter().take(3).copied().collect();
        let more = nodes.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        cx.note(format!(
            "{} node(s) of NodePool {pool} wait, as intended: {why}: {}{more}",
            nodes.len(),
            shown.join(", ")
        ));
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    // Nodes held, without terminationGracePeriod, by do-not-disrupt pods that a workload's pod
    // template annotates: the setting is KD4104's finding, these nodes its consequence. Read
    // only then, and only as evidence: without it the verdict stands, unlinked.
    let pinned_link = found.iter().any(|f| {
        f.0.spec.termination_grace_period.is_none()
            && matches!(f.4.first(), Some(Blocker::DoNotDisrupt { jobs: false, .. }))
    });
    let workloads = if pinned_link {
        Some(cx.enrich(cx.pinned_workloads()).await)
    } else {
        None
    };
    // Karpenter's own words, for the nodes whose blocker the state does not show.
    let events = if found.iter().any(|f| f.4.first() == Some(&Blocker::Unexplained)) {
        Some(cx.events_by_reason("Node", "DisruptionBlocked").await?)
    } else {
        None
    };
    let mut held = HeldNodes::default();
    // Karpenter's `Nominated` pod events, read once if a node's DisruptionBlocked event names
    // the nomination gate, and only as evidence of which pods it is.
    let mut nominations = None;
    for (claim, name, reason, since, all, pods) in found {
        let pool = pool_by_name.get(pool_of(claim)).copied();
        let Some(pool) = pool else { continue };
        let blocked = events.as_ref().and_then(|es| es.0.about("Node", name).next());
        let (mut subject, mut cause, mut owners) = describe(&all[0], reason, pool);
        if all[0] == Blocker::Unexplained
            && blocked.is_some_and(|e| says_nominated(&e.message))
        {
            if nominations.is_none() {
                nominations = Some(cx.enrich(cx.events_by_reason("Pod", "Nominated")).await);
            }
            (subject, cause, owners) = nominated(name, nominations.as_ref());
        }
        // A "0" that never lifts beside a window for the reason: the setting is the cause
        // (KD4104 says the window never opens), these nodes its consequence.
        if matches!(&all[0], Blocker::Budget { opens: None, .. })
            && windows_never_open(pool, now)
                .iter()
                .any(|n| n.reason == reason.as_str())
        {
            owners = &[codes::DISRUPTION_SETTINGS_INEFFECTIVE];
        }
        if claim.spec.termination_grace_period.is_none()
            && matches!(&all[0], Blocker::DoNotDisrupt { jobs: false, .. })
            && let Some(ws) = &workloads
            && cause.pinned_by(pods, ws.as_ref().map(|w| w.as_slice()))
        {
            owners = &[codes::DISRUPTION_SETTINGS_INEFFECTIVE];
        }
        cause.evidence.push(("reason", reason.as_str().to_string()));
        cause.evidence.push(("since", since));
        if let Some(e) = blocked {
            let text = e
                .message
                .trim_start_matches("(combined from similar events): ")
                .trim();
            // Karpenter's drift simulation failed: say so rather than "nothing holds it".
            if all[0] == Blocker::Unexplained
                && text.to_ascii_lowercase().contains("not all pods would schedule")
            {
                cause.what = "Karpenter's drift simulation cannot place the node's pods elsewhere (its DisruptionBlocked event)".to_string();
            }
            cause.evidence.push((
                "karpenterSays",
                format!("DisruptionBlocked on node {name} (x{}): {text}", e.count),
            ));
        }
        if all.len() > 1 {
            cause.evidence.push((
                "thenWaitsFor",
                all[1..]
                    .iter()
                    .map(|b| describe(b, reason, pool).1.what)
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
        }
        held.add_owned(claim, name, subject, cause, owners);
    }
    Ok(held.findings("heldBy", |_, h| {
        format!(
            "{} node(s) Karpenter has wanted to replace or remove for over an hour are still there: {}",
            h.nodes.len(),
            h.cause.what
        )
    }))
}

/// A drifted node Karpenter skips because it keeps nominating it for pods it is placing
/// (docs/disruption.md §1.3, §9 item 8): the pods are named from their `Nominated` events. Pods
/// that never land are pending (KD8001 says why) or sit on a node whose deletion is stuck
/// (KD4102; aws/karpenter-provider-aws#7521), and their nominations end only with them.
fn nominated(
    node: &str,
    events: Option<&Result<std::sync::Arc<crate::events::Latest>, FactError>>,
) -> (String, NodeCause, &'static [&'static str]) {
    let pods = match events {
        Some(Ok(latest)) => {
            let by = nominated_to(&latest.0, node);
            if by.is_empty() {
                "none of Karpenter's Nominated events kept now names the node".to_string()
            } else {
                by.iter()
                    .map(|e| format!("{}/{} (x{})", e.namespace, e.name, e.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
        Some(Err(e)) => format!("Karpenter's Nominated events could not be read ({e})"),
        None => String::new(),
    };
    (
        "nominations for pending pods".to_string(),
        NodeCause {
            what: "Karpenter keeps nominating the node for pods it is placing, and does not disrupt a node nominated in the last 20 seconds (its DisruptionBlocked event)".to_string(),
            hint: "Each provisioning pass that places a pending pod, or a pod of a node being deleted, on an existing node nominates that node, and drift and consolidation skip it for 2 × BATCH_MAX_DURATION. Pods that never leave keep it nominated for good: pods on a node whose deletion is stuck (a do-not-disrupt pod with a volume on an expired node) or pods the kube-scheduler does not bind where Karpenter expects. Look at the nominated pods (nominatedPods): if they sit on a deleting node, fix what holds that node's deletion; if they are Pending, see why they do not schedule".to_string(),
            fix: Some("kubectl get events -A --field-selector reason=Nominated -o custom-columns=POD:.involvedObject.name,MESSAGE:.message,COUNT:.count".to_string()),
            severity: Severity::Warning,
            evidence: vec![("nominatedPods", pods)],
        },
        &[codes::NODES_STUCK_TERMINATING, codes::PENDING_PODS_UNSERVED],
    )
}

fn when(reason: Reason) -> &'static str {
    match reason {
        Reason::Drifted => "drift",
        Reason::Empty | Reason::Underutilized => "consolidation",
    }
}

/// The blocker as a finding's subject and cause, and the checks whose failure explains it.
pub fn describe(
    b: &Blocker,
    reason: Reason,
    pool: &NodePool,
) -> (String, NodeCause, &'static [&'static str]) {
    let np = pool.name();
    let cause = |what: String, hint: String, fix: Option<String>, evidence| NodeCause {
        what,
        hint,
        fix,
        severity: Severity::Warning,
        evidence,
    };
    // For drift, terminationGracePeriod lets pods that block eviction no longer hold the node.
    let tgp = if reason == Reason::Drifted {
        format!(" Or set spec.template.spec.terminationGracePeriod on NodePool {np}: drift then goes ahead, and what still blocks is deleted at that deadline.")
    } else {
        String::new()
    };
    match b {
        Blocker::NodeAnnotation => (
            "node annotation karpenter.sh/do-not-disrupt".to_string(),
            cause(
                "the node is annotated karpenter.sh/do-not-disrupt=true".to_string(),
                format!("Karpenter never picks a node with this annotation for {}, whatever the NodePool says. Remove it when the node may go (kubectl annotate node NAME karpenter.sh/do-not-disrupt-).", when(reason)),
                None,
                vec![],
            ),
            &[],
        ),
        Blocker::DoNotDisrupt { pods, jobs, until } => (
            "pods annotated karpenter.sh/do-not-disrupt".to_string(),
            cause(
                if let (true, Some(t)) = (*jobs, until) {
                    format!("{} pod(s) annotated karpenter.sh/do-not-disrupt are protected until {t} at the latest (a duration, Karpenter 1.12 and later) or run until they finish", pods.len())
                } else if *jobs {
                    format!("{} Job pod(s) annotated karpenter.sh/do-not-disrupt=true run until they finish", pods.len())
                } else {
                    format!("{} pod(s) on the node are annotated karpenter.sh/do-not-disrupt=true", pods.len())
                },
                format!("A pod with this annotation keeps its node from {} for as long as it runs; on a Deployment's or StatefulSet's pods that is forever. Keep it for work that must finish (Jobs) and remove it from workloads that can move (kubectl annotate pod -n NAMESPACE NAME karpenter.sh/do-not-disrupt-).{tgp}", when(reason)),
                pods.first().map(|p| {
                    let (ns, name) = p.split_once('/').unwrap_or(("", p));
                    format!("kubectl -n {ns} get pod {name} -o jsonpath='{{.metadata.ownerReferences}}'")
                }),
                vec![("pods", pods.join(", "))],
            ),
            &[],
        ),
        Blocker::Pdb { pdb, limit, never, pods } => (
            format!("PodDisruptionBudget {pdb}"),
            cause(
                format!("PodDisruptionBudget {pdb} allows no disruption"),
                format!("Karpenter does not pick a node for {} while a pod on it is under a PDB that allows no eviction ({limit}). Scale the workload above the PDB's minimum or relax minAvailable/maxUnavailable.{tgp}", when(reason)),
                crate::disruption::pods::pdb_command(pdb),
                vec![("pods", pods.join(", ")), ("pdb", limit.clone())],
            ),
            if *never { &[codes::DISRUPTION_SETTINGS_INEFFECTIVE] } else { &[] },
        ),
        Blocker::SeveralPdbs { pod, pdbs } => (
            format!("pod {pod}"),
            cause(
                format!("pod {pod} is covered by {} PodDisruptionBudgets", pdbs.len()),
                format!("The eviction API refuses a pod that more than one PDB selects, so Karpenter (1.7 and later) does not pick its node. Make the PDBs' selectors disjoint.{tgp}"),
                None,
                vec![("pdbs", pdbs.join(", "))],
            ),
            &[],
        ),
        Blocker::Budget { zero, opens } => (
            format!("disruption budget {}", zero.join(", ")),
            cause(
                match opens {
                    Some(t) => format!("NodePool {np}'s budget allows no {} disruption until {t}", reason.as_str()),
                    None => format!("NodePool {np}'s budget allows no {} disruption, at any time", reason.as_str()),
                },
                format!("Karpenter applies the smallest limit among the budgets active now, and {} allows 0 for {} with no schedule, so these nodes stay until the budget changes. If they are meant to roll, give the reason a limit (nodes: \"1\" or a percentage), or a schedule and duration for the hours it may run.", zero.join(", "), reason.as_str()),
                Some(format!("kubectl get nodepool {np} -o jsonpath='{{.spec.disruption.budgets}}'")),
                vec![("budgets", zero.join(", "))],
            ),
            &[],
        ),
        Blocker::BudgetUsed { limit, stuck, not_ready, progressing } => {
            let mut parts = Vec::new();
            if !stuck.is_empty() {
                parts.push(format!("{} node(s) stuck terminating", stuck.len()));
            }
            if !not_ready.is_empty() {
                parts.push(format!("{} node(s) not Ready", not_ready.len()));
            }
            if !progressing.is_empty() {
                parts.push(format!("{} node(s) being replaced now", progressing.len()));
            }
            let mut evidence = vec![("budgetAllows", limit.to_string())];
            if !stuck.is_empty() {
                evidence.push(("stuckTerminating", stuck.join(", ")));
            }
            if !not_ready.is_empty() {
                evidence.push(("notReady", not_ready.join(", ")));
            }
            (
                "disruption budget used up".to_string(),
                cause(
                    format!("NodePool {np}'s budget for {} ({limit} node(s) at a time) is used up by {}", reason.as_str(), parts.join(", ")),
                    "Nodes that are not Ready or are being deleted count against every reason's budget, so while they stay no other node is disrupted. Fix what holds those nodes (a deletion stuck in its drain, a node that lost its kubelet), or delete nodes that are gone".to_string(),
                    Some(format!("kubectl get nodeclaims -l karpenter.sh/nodepool={np}")),
                    evidence,
                ),
                if stuck.is_empty() { &[] } else { &[codes::NODES_STUCK_TERMINATING] },
            )
        }
        Blocker::EmptyDriftDefect { version } => (
            format!("Karpenter {version}"),
            cause(
                format!("Karpenter {version} does not replace an empty drifted node that consolidation does not remove (kubernetes-sigs/karpenter#2423)"),
                "The drift method of Karpenter 1.5.0–1.5.3 and 1.6.0–1.6.2 skips empty nodes and leaves them to consolidation, which does not remove them when consolidateAfter is Never or long, or its budget is 0. Upgrade to 1.5.4, 1.6.3 or later (the CRD chart first, as for any upgrade); until then delete these nodes by hand (kubectl delete nodeclaim NAME)".to_string(),
                Some(format!(
                    "helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter --version {} --namespace NAMESPACE --reuse-values",
                    if version.1 == 5 { "1.5.4" } else { "1.6.3" }
                )),
                vec![],
            ),
            &[],
        ),
        Blocker::Unexplained => (
            "unknown".to_string(),
            cause(
                "nothing in the cluster's state holds the drifted node".to_string(),
                "No annotation, pod, PodDisruptionBudget or budget holds it, so Karpenter's drift simulation is what stops: it replaces a node only when every pod on it can be placed elsewhere or on one new node. Its DisruptionBlocked event on the node (kubectl describe node) names the pods that would not schedule (pod affinity to a DaemonSet's pods, a topology key no node has); the controller's logs say more".to_string(),
                None,
                vec![],
            ),
            &[codes::CONTROLLER_NOT_RUNNING],
        ),
    }
}
