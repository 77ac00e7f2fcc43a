//! KD4102: NodeClaims Karpenter has been deleting for over 15 minutes (past the forced
//! deletion time when `terminationGracePeriod` is set), with the step that holds them and its
//! object: pods that are never evicted, a PodDisruptionBudget at zero, volumes not detached, an
//! instance that does not terminate, another controller's finalizer; and Nodes Karpenter's
//! finalizer holds with no NodeClaim left to finish them (rules: docs/disruption.md §5).

use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::held::{HeldNodes, NodeCause};
use crate::checks::common::nodeclaim::pool_of;
use crate::disruption::terminating::{
    Blocker, Deleting, FINALIZER, blockers, orphaned_nodes, stuck,
};
use crate::model::NodeClaim;
use crate::scheduling::spread::NODES_WITH_ZONE;

declare_check! {
    pub static NODES_STUCK_TERMINATING = {
        code: "KD4102",
        slug: "nodes-stuck-terminating",
        title: "nodes Karpenter deletes are gone within minutes",
        category: Disruption,
        severity: Error,
        needs: [NodeClaims, Nodes, Node, NodePods, PodDisruptionBudgets, VolumeAttachments, PinnedWorkloads, EventsByReason],
        // Which workload's template annotates the do-not-disrupt pods (only a link to KD4104),
        // and Karpenter's FailedDraining events (quoted beside what the objects show).
        evidence: [PinnedWorkloads, EventsByReason],
        run: nodes_stuck_terminating,
    }
}

async fn nodes_stuck_terminating(cx: &CheckCx) -> CheckResult {
    let now = cx.now();
    let (claims, nodes) = futures::try_join!(cx.nodeclaims(), cx.nodes(NODES_WITH_ZONE))?;
    let mut out = orphans(&orphaned_nodes(&nodes, &claims, now));
    let deleting: Vec<&NodeClaim> = claims.iter().filter(|c| stuck(c, now)).collect();
    if deleting.is_empty() {
        return Ok(out);
    }
    let (pdbs, attachments) =
        futures::try_join!(cx.pod_disruption_budgets(), cx.volume_attachments())?;
    let mut held = HeldNodes::default();
    // Karpenter's own words on a drain it cannot finish, read at the first node held in its
    // drain, and only as evidence: the verdict rests on the objects (docs/disruption.md §8).
    let mut drain_events: Option<Result<std::sync::Arc<crate::events::Latest>, FactError>> = None;
    for claim in deleting {
        let node_name = claim
            .status
            .node_name
            .as_deref()
            .filter(|n| !n.is_empty());
        let node = match node_name {
            Some(n) => cx.node(n).await?,
            None => std::sync::Arc::new(None),
        };
        let pods = match node.as_ref() {
            Some(_) => cx.node_pods(node_name.unwrap_or_default()).await?,
            None => std::sync::Arc::new(Vec::new()),
        };
        let found = blockers(
            &Deleting {
                claim,
                node: node.as_ref().as_ref(),
                pods: &pods,
                pdbs: &pdbs,
                attachments: &attachments,
            },
            now,
        );
        let shown = node_name
            .map(str::to_string)
            .unwrap_or_else(|| format!("(no node) {}", claim.metadata.name.as_deref().unwrap_or("")));
        // The first blocker is the step deletion is at; the others wait behind it.
        let Some(first) = found.first() else {
            continue;
        };
        let (subject, mut cause, mut owners) = describe(first, claim);
        // Pods a workload's template annotates: that setting is KD4104's finding, this node its
        // consequence. Read only then, and only as evidence.
        if let Blocker::DoNotDisrupt { .. } = first
            && claim.spec.termination_grace_period.is_none()
        {
            let workloads = cx.enrich(cx.pinned_workloads()).await;
            if cause.pinned_by(&pods, workloads.as_ref().map(|w| w.as_slice())) {
                owners = &[codes::DISRUPTION_SETTINGS_INEFFECTIVE];
            }
        }
        let deleted = claim
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default();
        // Also when nothing in the objects explains the wait: Karpenter's words then say what
        // the snapshot cannot.
        if (in_drain(first) || matches!(first, Blocker::Unexplained))
            && let Some(node) = node_name
        {
            if drain_events.is_none() {
                drain_events = Some(
                    cx.enrich(cx.events_by_reason("Node", "FailedDraining"))
                        .await,
                );
            }
            match drain_events.as_ref() {
                Some(Ok(events)) => {
                    if let Some(e) = events.0.about("Node", node).next() {
                        cause.evidence.push((
                            "karpenterSays",
                            format!("FailedDraining on node {node} (x{}): {}", e.count, e.message.trim()),
                        ));
                    }
                }
                Some(Err(e)) => cause.evidence.push((
                    "karpenterSays",
                    format!("Karpenter's FailedDraining events could not be read ({e})"),
                )),
                None => {}
            }
        }
        cause.evidence.push(("deletionTimestamp", deleted));
        cause.evidence.push((
            "terminationGracePeriod",
            claim
                .spec
                .termination_grace_period
                .clone()
                .unwrap_or_else(|| "not set: draining has no time limit".to_string()),
        ));
        let conditions: Vec<String> = ["Drained", "VolumesDetached", "InstanceTerminating"]
            .iter()
            .filter_map(|t| claim.status.condition(t).map(|c| c.describe()))
            .collect();
        if !conditions.is_empty() {
            cause.evidence.push(("conditions", conditions.join("; ")));
        }
        if found.len() > 1 {
            cause.evidence.push((
                "thenWaitsFor",
                found[1..]
                    .iter()
                    .map(|b| describe(b, claim).1.what)
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
        }
        held.add_owned(claim, &shown, subject, cause, owners);
    }
    out.extend(held.findings("heldBy", |_, h| {
        format!(
            "{} node(s) deleting for over 15 minutes: {}",
            h.nodes.len(),
            h.cause.what
        )
    }));
    Ok(out)
}

/// Deleting Nodes with Karpenter's finalizer and no NodeClaim, one finding per NodePool: no
/// controller step is left to remove the finalizer, so only a person can, once the instance is
/// known to be gone.
fn orphans(found: &[crate::disruption::terminating::Orphan<'_>]) -> Vec<Finding> {
    let mut by_pool: std::collections::BTreeMap<&str, Vec<_>> = Default::default();
    for o in found {
        let pool = o.node.label("karpenter.sh/nodepool").unwrap_or("");
        by_pool.entry(pool).or_default().push(o);
    }
    by_pool
        .into_iter()
        .map(|(pool, orphans)| {
            let first = orphans[0].node;
            let at = first
                .finalizers
                .iter()
                .position(|f| &**f == FINALIZER)
                .unwrap_or(0);
            let object = if pool.is_empty() {
                format!("Node/{}", first.name())
            } else {
                format!("NodePool/{pool}")
            };
            let instance = first
                .provider_id
                .as_deref()
                .and_then(|p| p.rsplit('/').next())
                .unwrap_or("INSTANCE_ID");
            Finding::new(
                object,
                format!(
                    "{} node(s) deleting for over 15 minutes have no NodeClaim: Karpenter's finalizer {FINALIZER} waits for a NodeClaim that is gone, and nothing will remove it",
                    orphans.len()
                ),
            )
            .evidence(
                "nodes",
                orphans
                    .iter()
                    .map(|o| {
                        format!(
                            "{} (deleting for {} min, {})",
                            o.node.name(),
                            o.minutes,
                            o.node.provider_id.as_deref().unwrap_or("no providerID")
                        )
                    })
                    .collect::<Vec<_>>(),
            )
            .evidence(
                "finalizers",
                first.finalizers.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
            )
            .hint(format!(
                "Karpenter finishes a Node's deletion through its NodeClaim (drain, volumes, instance), found by the Node's provider ID. These NodeClaims are gone, most often because their finalizer was removed by hand. Karpenter's garbage collection then terminates the instance and deletes the Node, but its node termination finds no NodeClaim, logs \"failed to terminate node\" and leaves the Node with its finalizer. Check that the instance is terminated, then remove {FINALIZER} from the Node. Next time, delete the NodeClaim and let Karpenter remove its finalizer"
            ))
            // Two commands: the patch only once the first shows the instance terminated.
            .fix(format!(
                "aws ec2 describe-instances --instance-ids {instance} --query 'Reservations[].Instances[].State.Name'"
            ))
            .fix(format!(
                "kubectl patch node {} --type json -p '[{{\"op\":\"remove\",\"path\":\"/metadata/finalizers/{at}\"}}]'",
                first.name()
            ))
        })
        .collect()
}

/// A blocker met while draining the node's pods: what Karpenter's `FailedDraining` event is
/// about.
fn in_drain(b: &Blocker) -> bool {
    matches!(
        b,
        Blocker::DoNotDisrupt { .. } | Blocker::Pdb { .. } | Blocker::SeveralPdbs { .. }
    )
}

/// The blocker as a finding's subject and cause; the owners are the checks whose failure
/// explains it.
pub fn describe(b: &Blocker, claim: &NodeClaim) -> (String, NodeCause, &'static [&'static str]) {
    let pool = pool_of(claim);
    let tgp = if claim.spec.termination_grace_period.is_some() {
        String::new()
    } else {
        format!(
            " Or set spec.template.spec.terminationGracePeriod on NodePool {pool}: past it Karpenter deletes what is left, PDBs and do-not-disrupt included, so a node never waits forever."
        )
    };
    let cause = |what: String, hint: String, fix: Option<String>, evidence| NodeCause {
        what,
        hint,
        fix,
        severity: Severity::Error,
        evidence,
    };
    match b {
        Blocker::NodeNotDeleted => (
            "the controller".to_string(),
            cause(
                "the NodeClaim is deleting but its Node is not".to_string(),
                "Karpenter deletes a NodeClaim's Node first, and has not: the controller is not reconciling the claim. Its logs say why".to_string(),
                None,
                vec![],
            ),
            &[codes::CONTROLLER_NOT_RUNNING],
        ),
        Blocker::DoNotDisrupt { pods } => (
            "pods annotated karpenter.sh/do-not-disrupt".to_string(),
            cause(
                format!("{} pod(s) annotated karpenter.sh/do-not-disrupt=true are never evicted", pods.len()),
                format!("Karpenter waits for these pods to finish and never evicts them. Remove the annotation from pods that can move (kubectl annotate pod -n NAMESPACE NAME karpenter.sh/do-not-disrupt-), or let them finish.{tgp}"),
                pods.first().map(|p| {
                    let (ns, name) = p.split_once('/').unwrap_or(("", p));
                    format!("kubectl -n {ns} get pod {name} -o jsonpath='{{.metadata.annotations}}'")
                }),
                vec![("pods", pods.join(", "))],
            ),
            &[],
        ),
        Blocker::Pdb {
            pdb,
            pods,
            limit,
            never,
        } => (
            format!("PodDisruptionBudget {pdb}"),
            cause(
                format!("PodDisruptionBudget {pdb} allows no disruption"),
                format!("The eviction API refuses every eviction this PDB would count ({limit}), so the drain never ends. Scale the workload above the PDB's minimum, relax minAvailable/maxUnavailable, or fix the unhealthy pods it waits for.{tgp}"),
                crate::disruption::pods::pdb_command(pdb),
                vec![("pods", pods.join(", ")), ("pdb", limit.clone())],
            ),
            if *never { &[codes::DISRUPTION_SETTINGS_INEFFECTIVE] } else { &[] },
        ),
        Blocker::SeveralPdbs { pod, pdbs } => (
            format!("pod {pod}"),
            cause(
                format!("pod {pod} is covered by {} PodDisruptionBudgets", pdbs.len()),
                format!("The eviction API refuses to evict a pod that more than one PDB selects, whatever they allow. Make the PDBs' selectors disjoint so each pod has one.{tgp}"),
                None,
                vec![("pdbs", pdbs.join(", "))],
            ),
            &[],
        ),
        Blocker::Volumes { attachments } => (
            "VolumeAttachments".to_string(),
            cause(
                format!("{} VolumeAttachment(s) of the node are not detached", attachments.len()),
                format!("Karpenter waits for the node's volumes to detach before it terminates the instance. An attachment whose volume or claim was deleted (a leaked attachment) never detaches: check that its CSI driver's controller runs, and delete an attachment whose volume is gone.{tgp}"),
                Some("kubectl get volumeattachments -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,PV:.spec.source.persistentVolumeName,ATTACHED:.status.attached".to_string()),
                vec![("volumeAttachments", attachments.join(", "))],
            ),
            &[],
        ),
        Blocker::InstanceTerminating { since } => (
            "the instance".to_string(),
            cause(
                "the instance has been terminating for over 15 minutes".to_string(),
                "Karpenter asked EC2 to terminate the instance and it is still there: the controller's logs name the error (ec2:TerminateInstances denied, termination protection), and `aws ec2 describe-instances` its state".to_string(),
                claim.status.provider_id.as_deref().and_then(|p| p.rsplit('/').next()).map(|id| {
                    format!("aws ec2 describe-instances --instance-ids {id} --query 'Reservations[].Instances[].State'")
                }),
                vec![("instanceTerminatingSince", since.clone())],
            ),
            &[codes::CONTROLLER_NOT_RUNNING],
        ),
        Blocker::Finalizers { object, finalizers } => (
            format!("finalizer {}", finalizers.join(", ")),
            cause(
                format!("{object} carries finalizer {} of another controller", finalizers.join(", ")),
                "Kubernetes keeps the object until every finalizer is removed; Karpenter removes only karpenter.sh/termination. The controller that owns the other finalizer must remove it; if that controller is gone, remove the finalizer by hand".to_string(),
                Some(format!("kubectl get {} -o jsonpath='{{.metadata.finalizers}}'", object.to_ascii_lowercase().replacen('/', " ", 1))),
                vec![],
            ),
            &[],
        ),
        Blocker::Unexplained => (
            "unknown".to_string(),
            cause(
                "nothing in the cluster's state explains it".to_string(),
                "No pod, PodDisruptionBudget, volume, condition or finalizer holds it: the controller's logs for this NodeClaim say where it stops".to_string(),
                None,
                vec![],
            ),
            &[codes::CONTROLLER_NOT_RUNNING],
        ),
    }
}
