//! KD6006: Karpenter's estimate of a node (the NodeClaim's `status.allocatable`, written at
//! launch) above what the Node offers. Until a node registers Karpenter packs pods onto it by
//! the estimate, so pods nominated to every new node of that type do not fit on it, wait, and
//! make Karpenter launch again (rules: docs/node-capacity.md §4).

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::held::{HeldNodes, NodeCause};
use crate::checks::common::nodeclaim::{class_of, instance_type_of, is_windows};
use crate::model::{Ec2NodeClass, NodeClaim};
use crate::nodecap::estimate::{
    Gap, Part, Resources, gaps, kubelet_field, user_data_reservations,
};
use crate::quantity::Quantity;
use crate::scheduling::spread::NODES_WITH_ZONE;

declare_check! {
    pub static NODE_ALLOCATABLE_BELOW_ESTIMATE = {
        code: "KD6006",
        slug: "node-allocatable-below-estimate",
        title: "Karpenter's estimate of each node is at or below what the node offers",
        category: Nodeclaim,
        severity: Warning,
        needs: [NodeClaims, Nodes, Ec2NodeClasses],
        self_managed: true,
        run: allocatable_below_estimate,
    }
}

async fn allocatable_below_estimate(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    // An initialized claim has a Node whose figures the kubelet has posted; claims recorded
    // without an estimate (older bundles) cannot be judged.
    let initialized: Vec<(&NodeClaim, &str)> = claims
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter(|c| {
            c.status
                .condition("Initialized")
                .is_some_and(|i| i.status == "True")
        })
        .filter_map(|c| Some((c, c.status.node_name.as_deref().filter(|n| !n.is_empty())?)))
        .collect();
    let (judged, unrecorded): (Vec<_>, Vec<_>) = initialized
        .into_iter()
        .partition(|(c, _)| !c.status.allocatable.is_empty());
    // Karpenter writes the estimate at every launch, so only a bundle recorded before
    // karpdoctor kept it lacks one: say what was not judged rather than pass it silently.
    if !unrecorded.is_empty() {
        cx.note(format!(
            "{} initialized NodeClaim(s) carry no status.allocatable (recorded before karpdoctor kept it); their estimate is not judged",
            unrecorded.len()
        ));
    }
    if judged.is_empty() {
        return Ok(Vec::new());
    }
    let nodes = cx.nodes(NODES_WITH_ZONE).await?;
    let by_name: BTreeMap<&str, &crate::model::ListedNode> =
        nodes.iter().map(|n| (n.name(), n)).collect();
    let mut classes = None;
    let mut held = HeldNodes::default();
    for (claim, node_name) in judged {
        let Some(node) = by_name.get(node_name) else {
            continue;
        };
        // What EKS's Windows bootstrap reserves is not traced (docs/node-capacity.md §4), so
        // Windows nodes are not judged rather than judged by a guess.
        if is_windows(node) {
            continue;
        }
        let node_side = |p: &crate::model::Labels| -> Resources {
            p.iter()
                .filter_map(|(k, q)| Some((k.to_string(), Quantity::parse(q)?)))
                .collect()
        };
        let found = gaps(
            &from_claim(&claim.status.capacity),
            &from_claim(&claim.status.allocatable),
            &node_side(&node.capacity),
            &node_side(&node.allocatable),
        );
        if found.is_empty() {
            continue;
        }
        let all = match &classes {
            Some(c) => std::sync::Arc::clone(c),
            None => {
                let c = cx.ec2_nodeclasses().await?;
                classes = Some(std::sync::Arc::clone(&c));
                c
            }
        };
        let class = class_of(claim, &all);
        let itype = instance_type_of(claim)
            .unwrap_or("an unknown type")
            .to_string();
        let mut cause = cause(&found, class);
        cause.fix = Some(format!(
            "kubectl get nodeclaim {} -o jsonpath='{{.status.allocatable}}' && echo && kubectl get node {node_name} -o jsonpath='{{.status.allocatable}}'",
            claim.metadata.name.as_deref().unwrap_or("")
        ));
        held.add(claim, node_name, itype, cause);
    }
    Ok(held.findings("instanceType", |itype, h| {
        format!(
            "{} node(s) of {itype} offer less than Karpenter planned when it launched them: {}",
            h.nodes.len(),
            h.cause.what
        )
    }))
}

fn from_claim(map: &crate::model::Labels) -> Resources {
    map.iter()
        .filter_map(|(k, v)| Some((k.to_string(), Quantity::parse(v)?)))
        .collect()
}

fn show(resource: &str, q: Quantity) -> String {
    match resource {
        "memory" => format!("{}Mi", q.as_mebibytes()),
        _ => q.to_string(),
    }
}

/// One cause for a node's gaps, worded so that nodes of a type with the same gaps group: the
/// figures are evidence (the first node's), the words name the resources and the part.
fn cause(found: &[Gap], class: Option<&Ec2NodeClass>) -> NodeCause {
    let resources: Vec<&str> = found.iter().map(|g| g.resource).collect();
    let capacity = found.iter().any(|g| g.part == Part::Capacity);
    let reserved: Vec<&Gap> = found.iter().filter(|g| g.part == Part::Reserved).collect();
    let class_name = class.map(Ec2NodeClass::name).unwrap_or("");
    let in_user_data = class
        .and_then(|c| c.spec.get("userData"))
        .and_then(serde_json::Value::as_str)
        .map(user_data_reservations)
        .unwrap_or_default();
    let mut parts = Vec::new();
    let mut hints = Vec::new();
    if capacity {
        parts.push("the instances report less memory than Karpenter assumed");
        hints.push(
            "Karpenter takes VM_MEMORY_OVERHEAD_PERCENT (settings.vmMemoryOverheadPercent, 0.075 by default) off each type's memory until it has seen a node of the type; raise it until the NodeClaims' capacity.memory is at or below the nodes'"
                .to_string(),
        );
    }
    if !reserved.is_empty() {
        let pods_only = reserved.iter().all(|g| g.resource == "pods");
        parts.push(if pods_only {
            "the nodes admit fewer pods than Karpenter planned"
        } else {
            "the nodes keep back more than Karpenter reserves"
        });
        // Only the settings that explain the resources short.
        let named: Vec<&str> = in_user_data
            .iter()
            .copied()
            .filter(|s| {
                reserved
                    .iter()
                    .any(|g| (g.resource == "pods") == (*s == "max-pods"))
            })
            .collect();
        if named.is_empty() {
            hints.push(format!(
                "The node's kubelet reserves more than EC2NodeClass {class_name}'s spec.kubelet tells Karpenter: set spec.kubelet's {} to what the nodes apply, so the estimate matches",
                reserved
                    .iter()
                    .map(|g| if g.resource == "pods" { "maxPods" } else { "kubeReserved, systemReserved and evictionHard" })
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        } else {
            hints.push(format!(
                "EC2NodeClass {class_name}'s userData sets {}, which Karpenter does not read: move {} to spec.kubelet.{}, where Karpenter counts it and passes it to the kubelet",
                named.join(", "),
                if named.len() == 1 { "it" } else { "them" },
                named.iter().map(|s| kubelet_field(s)).collect::<Vec<_>>().join(", spec.kubelet.")
            ));
        }
    }
    hints.push("Until a node registers Karpenter places pods by its estimate, so pods sent to each new node of the type may not fit on it and wait for another launch".to_string());
    let figures: Vec<String> = found
        .iter()
        .map(|g| {
            let split = if g.capacity_short.is_positive() || g.reserved_more.is_positive() {
                format!(
                    " (capacity {} short, {} more reserved)",
                    show(g.resource, g.capacity_short),
                    show(g.resource, g.reserved_more)
                )
            } else {
                String::new()
            };
            format!(
                "{}: Karpenter planned {}, the node has {}{split}",
                g.resource,
                show(g.resource, g.planned),
                show(g.resource, g.actual)
            )
        })
        .collect();
    let mut evidence = vec![("allocatable", figures.join("; "))];
    if !in_user_data.is_empty() {
        evidence.push(("userData", in_user_data.join(", ")));
    }
    NodeCause {
        what: format!("{} ({})", resources.join(", "), parts.join("; ")),
        hint: hints.join(". "),
        fix: None,
        severity: Severity::Warning,
        evidence,
    }
}
