//! KD4104: disruption settings that cannot do what they say. Built: disruption budgets read as a
//! maintenance window, while budgets only restrict: a reason whose every budget is scheduled is
//! unlimited in the gaps between the windows, and a window beside "0" budgets that limit at
//! every moment never opens; a PodDisruptionBudget that can never allow a disruption over pods
//! on Karpenter's nodes; and, with SpotToSpotConsolidation on, a spot pool admitting too few
//! instance types for it ever to replace a node (rules: docs/disruption.md §2, §4, §7, §11).

use std::collections::{BTreeMap, BTreeSet};

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::pool_of;
use crate::disruption::budgets::{
    closing_budget, describe, unlimited_between_windows, windows_never_open,
};
use crate::checks::common::pools::PoolFacts;
use crate::disruption::pdbs::never_allows;
use crate::disruption::pinned::{first_expiry, held_for_good, pins_for_good};
use crate::disruption::spot::{MIN_CHEAPER_TYPES, spot_to_spot_gate};
use crate::model::{Budget, ControllerDeployment, NodeClaim, NodePool, PinnedWorkload};
use crate::scheduling::admitted;
use crate::scheduling::spread::selector_string;

declare_check! {
    pub static DISRUPTION_SETTINGS_INEFFECTIVE = {
        code: "KD4104",
        slug: "disruption-settings-ineffective",
        title: "disruption settings do what they appear to",
        category: Disruption,
        severity: Warning,
        needs: [NodePools, NodeClaims, PodDisruptionBudgets, PinnedWorkloads, ScheduledPods, ControllerDeployments, Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        // The controller's feature gates decide whether the instance types are read at all.
        evidence: [Ec2NodeClasses, DaemonSets, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        run: settings_ineffective,
    }
}

async fn settings_ineffective(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let now = cx.now();
    let mut out = Vec::new();
    for pool in pools.iter().filter(|p| p.metadata.deletion_timestamp.is_none()) {
        out.extend(unlimited_finding(pool, now));
        out.extend(never_open_finding(pool, now));
    }
    out.extend(pdbs_never_allowing(cx).await?);
    out.extend(workloads_pinning_nodes(cx).await?);
    out.extend(spot_to_spot_starved(cx).await?);
    Ok(out)
}

fn window_text(b: &Budget) -> String {
    format!(
        "nodes {} on \"{}\" for {}",
        b.nodes,
        b.schedule.as_deref().unwrap_or(""),
        b.duration.as_deref().unwrap_or("?")
    )
}

/// Scheduled budgets read as a maintenance window, with a gap between the windows where the
/// reason is unlimited.
fn unlimited_finding(pool: &NodePool, now: jiff::Timestamp) -> Option<Finding> {
    let found = unlimited_between_windows(pool, now);
    let first = found.iter().map(|u| u.from).min()?;
    let reasons: Vec<&str> = found.iter().map(|u| u.reason).collect();
    let windows: Vec<String> = found
        .iter()
        .flat_map(|u| u.budgets.iter())
        .map(|b| window_text(b))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let closing: Vec<String> = found
        .iter()
        .filter_map(|u| u.budgets.iter().find_map(|b| closing_budget(b, u.reason)))
        .collect();
    let fix = if closing.is_empty() {
        "add a budget that is always active for these reasons (a small limit such as nodes: \"10%\"), or a nodes: \"0\" budget scheduled over the hours outside the window".to_string()
    } else {
        format!(
            "to allow disruption only in the window, add {} (a nodes: \"0\" budget over the rest of the day); or add an always-active budget with a small limit",
            closing.join(" and ")
        )
    };
    Some(
        Finding::new(
            pool.object(),
            format!(
                "disruption for {} is unlimited outside the scheduled budget's window: a budget limits only while its schedule is active",
                reasons.join(", ")
            ),
        )
        .evidence("reasons", reasons.join(", "))
        .evidence("scheduledBudgets", windows)
        .evidence("unlimitedFrom", first.to_string())
        .hint(format!(
            "Karpenter applies the smallest limit among the budgets active now, and a budget outside its schedule limits nothing: between the windows it may disrupt every node of the pool at once for these reasons (all nodes drifting on an AMI release). Schedules are in UTC. To fix: {fix}"
        ))
        .fix(format!(
            "kubectl get nodepool {} -o jsonpath='{{.spec.disruption.budgets}}'",
            pool.name()
        )),
    )
}

/// A window that never opens: budgets of "0" for the same reason limit at every moment.
fn never_open_finding(pool: &NodePool, now: jiff::Timestamp) -> Option<Finding> {
    let found = windows_never_open(pool, now);
    if found.is_empty() {
        return None;
    }
    let reasons: Vec<&str> = found.iter().map(|n| n.reason).collect();
    let described = |bs: &mut dyn Iterator<Item = &&Budget>| -> Vec<String> {
        bs.map(|b| describe(b))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let closed = described(&mut found.iter().flat_map(|n| n.closed.iter()));
    let windows = described(&mut found.iter().flat_map(|n| n.windows.iter()));
    let unscheduled = found
        .iter()
        .flat_map(|n| n.closed.iter())
        .any(|b| b.schedule.is_none());
    let closing: Vec<String> = found
        .iter()
        .filter_map(|n| n.windows.iter().find_map(|b| closing_budget(b, n.reason)))
        .collect();
    let mut staying = Vec::new();
    if reasons.contains(&"Drifted") {
        staying.push("drifted nodes stay on their old AMI and configuration");
    }
    if reasons.iter().any(|r| *r != "Drifted") {
        staying.push("empty or underutilized nodes stay");
    }
    let stay = capitalized(&staying.join(", and "));
    let fix = match (unscheduled, closing.is_empty()) {
        (true, false) => format!(
            "replace the always-active nodes: \"0\" budget with {}: a \"0\" budget over the rest of the day only",
            closing.join(" and ")
        ),
        (true, true) => "give the nodes: \"0\" budget a schedule and duration covering only the hours outside the window".to_string(),
        _ => "shorten the nodes: \"0\" budgets' schedules so that they leave the window's hours free".to_string(),
    };
    Some(
        Finding::new(
            pool.object(),
            format!(
                "the disruption window for {} never opens: a budget allowing no nodes is active at every moment, so Karpenter never disrupts for {}",
                reasons.join(", "),
                if reasons.len() == 1 { "it" } else { "them" }
            ),
        )
        .evidence("reasons", reasons.join(", "))
        .evidence("alwaysClosed", closed)
        .evidence("windows", windows)
        .hint(format!(
            "Budgets only restrict: Karpenter applies the smallest limit among the budgets active now, so a window's budget cannot raise a limit another active budget sets to 0. {stay} until the \"0\" budget is narrowed. Schedules are in UTC. To fix: {fix}"
        ))
        .fix(format!(
            "kubectl get nodepool {} -o jsonpath='{{.spec.disruption.budgets}}'",
            pool.name()
        )),
    )
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// PDBs that can never allow a disruption and cover pods on Karpenter's nodes: those nodes are
/// never consolidated, and their drift or expiry hangs in the drain without
/// `terminationGracePeriod`. A PDB whose pods all run elsewhere is not Karpenter's concern.
async fn pdbs_never_allowing(cx: &CheckCx) -> Result<Vec<Finding>, FactError> {
    let (pdbs, claims) = futures::try_join!(cx.pod_disruption_budgets(), cx.nodeclaims())?;
    let on_node: BTreeMap<&str, &NodeClaim> = claims
        .iter()
        .filter_map(|c| Some((c.status.node_name.as_deref().filter(|n| !n.is_empty())?, c)))
        .collect();
    let blocking: Vec<_> = pdbs
        .iter()
        .filter_map(|p| {
            let why = never_allows(p)?;
            let ns = p.metadata.namespace.clone()?;
            let selector = selector_string(p.spec.as_ref()?.selector.as_ref()?)?;
            Some((p, why, ns, selector))
        })
        .collect();
    if blocking.is_empty() || on_node.is_empty() {
        return Ok(Vec::new());
    }
    // One round: every blocking PDB's pods at once.
    let selected = futures::future::try_join_all(
        blocking
            .iter()
            .map(|(_, _, ns, sel)| cx.scheduled_pods(ns, sel)),
    )
    .await?;
    let mut out = Vec::new();
    for ((pdb, why, ns, _), pods) in blocking.iter().zip(selected) {
        let nodes: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| p.spec.as_ref()?.node_name.as_deref())
            .filter(|n| on_node.contains_key(n))
            .collect();
        if nodes.is_empty() {
            continue;
        }
        let claims: Vec<&NodeClaim> = nodes.iter().map(|n| on_node[n]).collect();
        let pools: BTreeSet<&str> = claims.iter().map(|c| pool_of(c)).collect();
        let unbounded = claims
            .iter()
            .any(|c| c.spec.termination_grace_period.is_none());
        let name = pdb.metadata.name.as_deref().unwrap_or("");
        let then = if unbounded {
            " Without terminationGracePeriod on the NodePool, a node of theirs that drifts or expires drains forever (KD4102); set it to bound the wait."
        } else {
            " The NodePools' terminationGracePeriod bounds drift and expiry: past it Karpenter deletes the pods regardless."
        };
        out.push(
            Finding::new(
                format!("PodDisruptionBudget/{ns}/{name}"),
                format!(
                    "PodDisruptionBudget {ns}/{name} can never allow a disruption ({why}), and its pods run on {} Karpenter node(s): Karpenter cannot consolidate them, and their drift or expiry waits on the PDB",
                    nodes.len()
                ),
            )
            .evidence("pdb", why.clone())
            .evidence("nodes", nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .evidence("nodePools", pools.iter().map(|p| p.to_string()).collect::<Vec<_>>())
            .hint(format!(
                "A PDB that allows no eviction makes every node its pods run on permanent. If the workload can lose one pod at a time, use maxUnavailable: 1 (or a minAvailable below its replicas); if its pods must never move, pin them to nodes Karpenter does not manage.{then}"
            ))
            .fix(format!("kubectl -n {ns} get pdb {name} -o yaml")),
        );
    }
    Ok(out)
}

/// Deployments and StatefulSets whose pod template carries `karpenter.sh/do-not-disrupt:
/// "true"`, whose pods run on Karpenter nodes without `terminationGracePeriod`: those nodes are
/// never consolidated or drifted, and at expiry they drain forever (docs/disruption.md §3, §5).
/// With the grace period, only consolidation is given up, which is what the annotation asks.
async fn workloads_pinning_nodes(cx: &CheckCx) -> Result<Vec<Finding>, FactError> {
    let claims = cx.nodeclaims().await?;
    // Deleting claims too: one the workload's pods hold in its drain is this setting's
    // consequence, and KD4102's finding for it links here.
    let on_node: BTreeMap<&str, &NodeClaim> = claims
        .iter()
        .filter_map(|c| Some((c.status.node_name.as_deref().filter(|n| !n.is_empty())?, c)))
        .collect();
    if on_node.is_empty() {
        return Ok(Vec::new());
    }
    let workloads = cx.pinned_workloads().await?;
    let pinned: Vec<(&PinnedWorkload, String)> = workloads
        .iter()
        .filter(|w| pins_for_good(w))
        .filter_map(|w| Some((w, selector_string(w.spec.selector.as_ref()?)?)))
        .collect();
    // One round: every pinned workload's pods at once.
    let selected = futures::future::try_join_all(
        pinned
            .iter()
            .map(|(w, sel)| cx.scheduled_pods(&w.metadata.namespace, sel)),
    )
    .await?;
    let now = cx.now();
    let mut out = Vec::new();
    for ((w, _), pods) in pinned.iter().zip(selected) {
        let nodes: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| p.spec.as_ref()?.node_name.as_deref())
            .filter(|n| on_node.contains_key(n))
            .collect();
        let held: Vec<&NodeClaim> = nodes.iter().map(|n| on_node[n]).collect();
        if held.is_empty() {
            continue;
        }
        let unbounded = held_for_good(&held);
        if unbounded.is_empty() {
            cx.note(format!(
                "{} pins {} Karpenter node(s) against consolidation (do-not-disrupt on every pod); their terminationGracePeriod lets drift and expiry go ahead",
                w.id(),
                held.len()
            ));
            continue;
        }
        let pinned_nodes: Vec<String> = unbounded
            .iter()
            .filter_map(|c| c.status.node_name.as_deref().map(str::to_string))
            .collect();
        let pools: BTreeSet<&str> = unbounded.iter().map(|c| pool_of(c)).collect();
        let (draining, running): (Vec<&NodeClaim>, Vec<&NodeClaim>) = unbounded
            .iter()
            .partition(|c| c.metadata.deletion_timestamp.is_some());
        let expiry = first_expiry(&running);
        let mut effects = Vec::new();
        if !running.is_empty() {
            let which = match (draining.is_empty(), running.len()) {
                (true, 1) => "it".to_string(),
                (true, _) => "them".to_string(),
                (false, n) => format!("the {n} not deleting"),
            };
            effects.push(match &expiry {
                Some((t, c)) => format!(
                    "Karpenter never consolidates or drifts {which}, and when the first expires ({} at {t}) its drain will wait on these pods forever",
                    c.status.node_name.as_deref().unwrap_or_default()
                ),
                None => format!("Karpenter never consolidates or drifts {which}"),
            });
        }
        if !draining.is_empty() {
            effects.push(format!(
                "{} already deleting {} without end (KD4102)",
                draining.len(),
                if draining.len() == 1 { "drains" } else { "drain" }
            ));
        }
        let then = format!(": {}", effects.join("; "));
        let (kind, id) = (w.kind.as_str(), format!("{}/{}", w.metadata.namespace, w.metadata.name));
        let mut finding = Finding::new(
            w.id(),
            format!(
                "every pod of {kind} {id} is annotated karpenter.sh/do-not-disrupt=true, and they run on {} Karpenter node(s) without terminationGracePeriod{then}",
                unbounded.len()
            ),
        )
        .evidence("annotation", "karpenter.sh/do-not-disrupt: \"true\" (pod template)")
        .evidence("nodes", pinned_nodes)
        .evidence("nodePools", pools.iter().map(|p| p.to_string()).collect::<Vec<_>>());
        if let Some((t, _)) = &expiry {
            finding = finding.evidence("firstExpiry", t.to_string());
        }
        let overdue = expiry.as_ref().is_some_and(|(t, _)| *t <= now);
        out.push(
            finding
                .hint(format!(
                    "The annotation in the pod template is on every pod the {kind} runs, so every node they land on is kept from voluntary disruption for as long as they run, which for a {kind} is always: nodes are never consolidated, and drifted nodes keep their old AMI.{} Expiry deletes the NodeClaim regardless, but the drain never evicts these pods, so without terminationGracePeriod the node stays draining (KD4102). Keep the annotation for work that must finish (Jobs), or use a duration (\"30m\", Karpenter 1.12+) that lapses as the pod ages; or set terminationGracePeriod on the NodePools ({}) so drift and expiry end: NodeClaims created after the change carry it",
                    if overdue { " Its first expiry has passed and the node is not yet deleting: the controller may be behind." } else { "" },
                    pools.iter().copied().collect::<Vec<_>>().join(", ")
                ))
                .fix(format!(
                    "kubectl -n {} get {} {} -o jsonpath='{{.spec.template.metadata.annotations}}'",
                    w.metadata.namespace,
                    kind.to_ascii_lowercase(),
                    w.metadata.name
                )),
        );
    }
    Ok(out)
}

/// NodePools that ask for spot-to-spot consolidation (the feature gate is on, the pool admits
/// spot and consolidates underutilized nodes) but admit too few instance types for Karpenter
/// ever to replace one spot node with another: it needs 15 cheaper than the node's own
/// (docs/disruption.md §7). Read only when the gate is on: the instance types and offerings
/// are then needed, and a missing permission for them is this rule's unknown, not the check's.
async fn spot_to_spot_starved(cx: &CheckCx) -> Result<Vec<Finding>, FactError> {
    let controller = cx.controller().await?;
    let gates = controller
        .as_ref()
        .and_then(|(d, i)| ControllerDeployment::new(&d[*i]).env("FEATURE_GATES"));
    if spot_to_spot_gate(gates) != Some(true) {
        return Ok(Vec::new());
    }
    let (nodepools, claims) = futures::try_join!(cx.nodepools(), cx.nodeclaims())?;
    let facts = PoolFacts::read_self_managed(cx, controller.as_ref(), claims).await?;
    let mut out = Vec::new();
    for pool in facts.pools() {
        let Some(np) = nodepools.iter().find(|p| p.name() == pool.name) else {
            continue;
        };
        let policy = np
            .spec
            .disruption
            .as_ref()
            .and_then(|d| d.consolidation_policy.as_deref());
        // Only a policy that replaces underutilized nodes tries spot-to-spot; v1's default is
        // WhenEmptyOrUnderutilized. A pool Karpenter skips (its class not ready) is another
        // check's.
        if matches!(policy, Some("WhenEmpty")) || pool.not_ready.is_some() {
            continue;
        }
        // Only a pool that names spot: without the requirement the capacity type is the
        // provider's choice, which karpdoctor does not model.
        if !pool
            .requirements
            .get("karpenter.sh/capacity-type")
            .is_some_and(|s| s.has("spot"))
        {
            continue;
        }
        let admitted: Vec<&str> = admitted(&pool)
            .map(|c| c.it.instance_type.as_str())
            .collect();
        if admitted.is_empty() || admitted.len() > MIN_CHEAPER_TYPES {
            continue;
        }
        out.push(
            Finding::new(
                np.object(),
                format!(
                    "spot-to-spot consolidation can never replace a single node of NodePool {}: it admits {} instance type(s), and Karpenter needs {MIN_CHEAPER_TYPES} cheaper than the node's own",
                    pool.name,
                    admitted.len()
                ),
            )
            .evidence("featureGates", gates.unwrap_or_default().to_string())
            .evidence("instanceTypes", admitted.iter().map(|t| t.to_string()).collect::<Vec<_>>())
            .hint(format!(
                "SpotToSpotConsolidation is on, but a single spot node is replaced only when at least {MIN_CHEAPER_TYPES} instance types cheaper than its own can take its pods (Karpenter keeps spot nodes flexible so that they are not interrupted together); with {} admitted no node ever qualifies, and Karpenter's event says \"SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate\". Nodes are still deleted when their pods fit elsewhere, and several spot nodes may still be replaced by one. Widen the pool's requirements (instance categories, generations, sizes) so that it admits well over {}, or accept that underutilized spot nodes stay",
                admitted.len(),
                MIN_CHEAPER_TYPES + 1
            ))
            .fix(format!(
                "kubectl get nodepool {} -o jsonpath='{{.spec.template.spec.requirements}}'",
                pool.name
            )),
        );
    }
    Ok(out)
}
