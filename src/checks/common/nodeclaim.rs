//! What a NodeClaim says about itself: its name in findings, its NodePool, and a lifecycle
//! step that takes too long.

use crate::check::prelude::*;
use crate::model::{Condition, NodeClaim};

/// How long a lifecycle step may take before it counts as failed: launches take seconds,
/// registration a minute or two; Karpenter itself gives up after 5 and 15 minutes.
pub const STUCK_MINUTES: i64 = 5;

/// A NodeClaim condition that is not True and has been so for longer than a launch or a
/// registration takes; `AwaitingReconciliation` right after creation does not count.
pub fn stuck<'a>(claim: &'a NodeClaim, type_: &str, now: jiff::Timestamp) -> Option<&'a Condition> {
    let c = claim.status.condition(type_)?;
    (c.status != "True" && c.held_longer_than(now, STUCK_MINUTES)).then_some(c)
}

pub fn object(claim: &NodeClaim) -> String {
    format!(
        "NodeClaim/{}",
        claim.metadata.name.as_deref().unwrap_or("<unnamed>")
    )
}

/// The NodePool a NodeClaim belongs to (its label).
pub fn pool_of(claim: &NodeClaim) -> &str {
    claim.pool()
}

/// A NodeClaim whose node registered long enough ago to have settled, with that Node.
pub struct Settled<'a> {
    pub claim: &'a NodeClaim,
    pub node: k8s_openapi::api::core::v1::Node,
}

/// The claims `keep` selects whose node registered more than
/// [`SETTLE_MINUTES`](crate::nodecap::SETTLE_MINUTES) ago, with their Nodes (read side by side:
/// one round trip, not one per claim). A Node that is gone is left to KD6002 and KD6003.
pub async fn settled_claims<'a>(
    cx: &CheckCx,
    claims: &'a [NodeClaim],
    keep: impl Fn(&NodeClaim) -> bool,
) -> Result<Vec<Settled<'a>>, FactError> {
    let now = cx.now();
    let chosen: Vec<(&NodeClaim, &str)> = claims
        .iter()
        .filter(|c| {
            c.status.condition("Registered").is_some_and(|r| {
                r.status == "True" && r.held_longer_than(now, crate::nodecap::SETTLE_MINUTES)
            })
        })
        .filter(|c| keep(c))
        .filter_map(|c| Some((c, c.status.node_name.as_deref().filter(|n| !n.is_empty())?)))
        .collect();
    let nodes = futures::future::join_all(chosen.iter().map(|(_, n)| cx.node(n))).await;
    let mut out = Vec::new();
    for ((claim, _), node) in chosen.into_iter().zip(nodes) {
        if let Some(node) = node?.as_ref() {
            out.push(Settled {
                claim,
                node: node.clone(),
            });
        }
    }
    Ok(out)
}

/// The instance type a claim launched (its `node.kubernetes.io/instance-type` label).
pub fn instance_type_of(claim: &NodeClaim) -> Option<&str> {
    claim
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("node.kubernetes.io/instance-type"))
}

/// The EC2NodeClass a claim references, among `classes`.
pub fn class_of<'c>(
    claim: &NodeClaim,
    classes: &'c [crate::model::Ec2NodeClass],
) -> Option<&'c crate::model::Ec2NodeClass> {
    let name = claim.spec.node_class_ref.as_ref()?.name.as_deref()?;
    classes.iter().find(|c| c.name() == name)
}

/// The EC2NodeClass a NodePool's template references, among `classes`.
pub fn pool_class<'c>(
    pool: &crate::model::NodePool,
    classes: &'c [crate::model::Ec2NodeClass],
) -> Option<&'c crate::model::Ec2NodeClass> {
    // An Auto Mode pool's class is EKS's NodeClass, never an EC2NodeClass of the same name.
    if pool.is_auto_mode() {
        return None;
    }
    let name = pool
        .spec
        .template
        .spec
        .node_class_ref
        .as_ref()?
        .name
        .as_deref()?;
    classes.iter().find(|c| c.name() == name)
}

/// Whether a Node runs Windows (its `kubernetes.io/os` label).
pub fn is_windows(node: &crate::model::ListedNode) -> bool {
    node.label("kubernetes.io/os") == Some("windows")
}

/// A Node's name.
pub fn name_of(node: &k8s_openapi::api::core::v1::Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

/// The taints a claim's NodePool declares, lasting and startup.
pub struct Declared {
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    pub startup: Vec<k8s_openapi::api::core::v1::Taint>,
}

impl Declared {
    /// The claim's copies are what Karpenter compares; the pool's current lists are added for
    /// claims recorded without them.
    pub fn of(claim: &NodeClaim, pools: &[crate::model::NodePool]) -> Declared {
        let pool = pools.iter().find(|p| p.name() == pool_of(claim));
        let from_pool = |f: fn(&crate::model::NodePool) -> &[k8s_openapi::api::core::v1::Taint]| {
            pool.map(f).unwrap_or_default().to_vec()
        };
        Declared {
            taints: [
                claim.spec.taints.clone(),
                from_pool(|p| &p.spec.template.spec.taints),
            ]
            .concat(),
            startup: [
                claim.spec.startup_taints.clone(),
                from_pool(|p| &p.spec.template.spec.startup_taints),
            ]
            .concat(),
        }
    }
}
