//! KD6008: Karpenter nodes whose EBS volumes fail to attach because the instance is at its
//! attachment limit: a VolumeAttachment's error says so, or the node holds as many EBS
//! attachments as its CSINode allows while some still wait (rules: docs/node-capacity.md §6).

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::held::{HeldNodes, NodeCause};
use crate::checks::common::nodeclaim::{Declared, pool_of};
use crate::model::NodeClaim;
use crate::nodecap::{EBS_DRIVER, attach_limit_error};

declare_check! {
    pub static NODE_VOLUME_ATTACH_LIMIT = {
        code: "KD6008",
        slug: "node-volume-attach-limit",
        title: "volumes attach to Karpenter's nodes within their EBS limits",
        category: Nodeclaim,
        severity: Warning,
        needs: [NodeClaims, NodePools, CsiNodes, VolumeAttachments],
        self_managed: true,
        run: volume_attach_limit,
    }
}

const EBS_TAINT: &str = "ebs.csi.aws.com/agent-not-ready";

async fn volume_attach_limit(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let by_node: BTreeMap<&str, &NodeClaim> = claims
        .iter()
        .filter_map(|c| Some((c.status.node_name.as_deref()?, c)))
        .collect();
    if by_node.is_empty() {
        return Ok(Vec::new());
    }
    let attachments = cx.volume_attachments().await?;
    // Per node: attachments of the EBS driver, how many wait, and the first limit error.
    let mut per_node: BTreeMap<&str, (usize, usize, Option<String>)> = BTreeMap::new();
    for va in attachments.iter().filter(|v| v.spec.attacher == EBS_DRIVER) {
        let node = va.spec.node_name.as_str();
        if !by_node.contains_key(node) {
            continue;
        }
        let status = va.status.as_ref();
        let e = per_node.entry(node).or_default();
        e.0 += 1;
        if !status.is_some_and(|s| s.attached) {
            e.1 += 1;
        }
        let error = status
            .and_then(|s| s.attach_error.as_ref())
            .and_then(|e| e.message.as_deref())
            .filter(|m| attach_limit_error(m));
        if let Some(m) = error
            && e.2.is_none()
        {
            e.2 = Some(m.to_string());
        }
    }
    if per_node.values().all(|(_, waiting, error)| *waiting == 0 && error.is_none()) {
        return Ok(Vec::new());
    }
    let csinodes = cx.csi_nodes().await?;
    let limit_of = |node: &str| -> Option<i32> {
        csinodes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(node))?
            .spec
            .drivers
            .iter()
            .find(|d| d.name == EBS_DRIVER)?
            .allocatable
            .as_ref()?
            .count
    };
    let pools = cx.nodepools().await?;
    let mut held = HeldNodes::default();
    for (node, (count, waiting, error)) in per_node {
        let limit = limit_of(node);
        let at_limit = limit.is_some_and(|l| count as i64 >= i64::from(l)) && waiting > 0;
        if error.is_none() && !at_limit {
            continue;
        }
        let claim = by_node[node];
        let what = match &error {
            Some(_) => "EC2 refuses attachments over the instance's limit".to_string(),
            None => "nodes hold as many EBS attachments as their CSINode allows, and more wait".to_string(),
        };
        let mut evidence = vec![(
            "attachments",
            format!(
                "{node}: {count} for {EBS_DRIVER} ({waiting} not attached), CSINode limit {}",
                limit.map_or("unknown".to_string(), |l| l.to_string())
            ),
        )];
        if let Some(m) = &error {
            evidence.push(("attachError", m.clone()));
        }
        held.add(
            claim,
            node,
            EBS_DRIVER.to_string(),
            NodeCause {
                what,
                hint: hint(claim, &pools),
                fix: Some(format!(
                    "kubectl get volumeattachments -o wide | grep {node}"
                )),
                severity: Severity::Warning,
                evidence,
            },
        );
    }
    Ok(held.findings("driver", |_, h| {
        format!("{} node(s): volumes wait to attach: {}", h.nodes.len(), h.cause.what)
    }))
}

/// What to change: the startup taint that keeps pods off a node until its CSINode counts
/// (only when the pool lacks it), then spreading volume-heavy pods over nodes.
fn hint(claim: &NodeClaim, pools: &[crate::model::NodePool]) -> String {
    // Any effect will do: the driver removes the key.
    let has_taint = Declared::of(claim, pools)
        .startup
        .iter()
        .any(|t| t.key == EBS_TAINT);
    let first = if has_taint {
        String::new()
    } else {
        format!(
            "Karpenter counts a node's EBS limit only once its CSINode exists, so a burst of pods with volumes can be sent to one new node: add {{key: {EBS_TAINT}, effect: NoExecute}} to NodePool {}'s spec.template.spec.startupTaints, which the EBS CSI node plugin removes once the limit is known. ",
            pool_of(claim)
        )
    };
    format!(
        "{first}Spread pods with volumes over nodes (topologySpreadConstraints or pod anti-affinity on kubernetes.io/hostname), or allow instance types with a higher or dedicated EBS limit"
    )
}
