//! KD6003: nodes that registered but never initialized: Karpenter waits for Ready, for startup
//! taints to be removed and for requested resources (GPUs, pod ENIs) to appear. Until then
//! the capacity is paid for and unused, and the node is never consolidated.

use crate::check::prelude::*;
use crate::checks::common::codes::{
    NODE_EXTENDED_RESOURCE_MISSING, NODE_STARTUP_TAINT_STUCK, NODECLASS_NODE_ROLE_INVALID,
    VPC_CNI_NOT_READY,
};
use crate::checks::common::nodeclaim::{object, pool_of, stuck};
use crate::nodecap::UNINITIALIZED;

declare_check! {
    pub static NODECLAIM_NOT_INITIALIZED = {
        code: "KD6003",
        slug: "nodeclaim-not-initialized",
        title: "registered NodeClaims initialize their nodes",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Node],
        run: not_initialized,
    }
}

async fn not_initialized(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let now = cx.now();
    let stuck_claims: Vec<_> = claims
        .iter()
        .filter(|claim| {
            claim
                .status
                .condition("Registered")
                .is_some_and(|c| c.status == "True")
        })
        .filter_map(|claim| {
            let c = stuck(claim, "Initialized", now)?;
            let node_name = claim.status.node_name.clone().unwrap_or_default();
            Some((claim, c, node_name))
        })
        .collect();
    // The nodes of all stuck claims are read side by side: one round trip, not one per claim
    // (failures surface below, where each node is used).
    futures::future::join_all(
        stuck_claims
            .iter()
            .filter(|(_, _, node)| !node.is_empty())
            .map(|(_, _, node)| cx.node(node)),
    )
    .await;
    let mut findings = Vec::new();
    for (claim, c, node_name) in stuck_claims {
        let mut f = Finding::new(
            object(claim),
            format!("registered but not initialized ({})", c.describe()),
        )
        .evidence("nodePool", pool_of(claim))
        .evidence("condition", c.describe())
        .hint(hint(&c.reason));
        if c.reason == "NodeNotReady" {
            // The CNI not starting is the usual cause (KD5008), and a node role without the
            // CNI policy (aws-node without its own identity) the usual reason (KD3005).
            f = f.owned_by([VPC_CNI_NOT_READY, NODECLASS_NODE_ROLE_INVALID]);
        }
        match c.reason.as_str() {
            // A startup taint whose remover is missing, kept off or stuck (KD6004 names which).
            "StartupTaintsExist" => f = f.owned_by([NODE_STARTUP_TAINT_STUCK]),
            // Karpenter's message names the taint: the cloud provider's is KD6004's; the
            // kubelet's not-ready and unreachable taints mean the node is not ready, whose
            // owners are NodeNotReady's.
            "KnownEphemeralTaintsExist" if c.message.contains(UNINITIALIZED) => {
                f = f.owned_by([NODE_STARTUP_TAINT_STUCK]);
            }
            "KnownEphemeralTaintsExist" => {
                f = f.owned_by([VPC_CNI_NOT_READY, NODECLASS_NODE_ROLE_INVALID]);
            }
            // A device plugin that never registers the resource (KD6005).
            "ResourceNotRegistered" => f = f.owned_by([NODE_EXTENDED_RESOURCE_MISSING]),
            _ => {}
        }
        if !node_name.is_empty() {
            f = f.evidence("node", node_name.clone());
            if let Some(node) = cx.node(&node_name).await?.as_ref() {
                let ready = node
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
                if let Some(r) = ready {
                    f = f.evidence(
                        "nodeReady",
                        format!(
                            "{} {}: {}",
                            r.status,
                            r.reason.clone().unwrap_or_default(),
                            r.message.clone().unwrap_or_default()
                        ),
                    );
                }
                let taints: Vec<String> = node
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        format!(
                            "{}{}:{}",
                            t.key,
                            t.value
                                .as_deref()
                                .map(|v| format!("={v}"))
                                .unwrap_or_default(),
                            t.effect
                        )
                    })
                    .collect();
                if !taints.is_empty() {
                    f = f.evidence("nodeTaints", taints);
                }
            }
            f = f.fix(format!("kubectl describe node {node_name}"));
        }
        findings.push(f);
    }
    Ok(findings)
}

fn hint(reason: &str) -> String {
    match reason {
        "StartupTaintsExist" => {
            "the agent that removes the startup taint (a CNI such as Cilium, a GPU operator) is not running on the node, or the NodePool lists a taint nothing removes"
            .to_string()
        }
        "KnownEphemeralTaintsExist" => {
            "the node is not ready yet (not-ready or uninitialized taints): check the kubelet, the CNI and the cloud provider taint"
            .to_string()
        }
        "ResourceNotRegistered" => {
            "a requested extended resource never appeared: install its device plugin (NVIDIA, Neuron) or enable pod ENIs in the VPC CNI, or use the matching AMI variant"
            .to_string()
        }
        "NodeNotReady" => {
            format!("the node is NotReady: usually the CNI (aws-node) cannot start; the node role needs AmazonEKS_CNI_Policy unless aws-node has its own identity (see {NODECLASS_NODE_ROLE_INVALID})")
        }
        _ => "describe the node: its conditions and taints say what it waits for".to_string(),
    }
}
