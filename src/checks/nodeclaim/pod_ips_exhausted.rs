//! KD6007: pods on Karpenter's nodes that the Amazon VPC CNI cannot give an address
//! (`FailedCreatePodSandBox … failed to assign an IP address to container`), with the cause:
//! a node admitting more pods than its ENIs hold addresses, or a subnet out of addresses; and
//! prefix delegation that stays unused because the node's pod count is the secondary-address
//! figure (rules: docs/node-capacity.md §5).

use std::collections::BTreeMap;


use crate::check::prelude::*;
use crate::checks::common::codes;
use crate::checks::common::held::{HeldNodes, NodeCause};
use crate::checks::common::nodeclaim::{class_of, instance_type_of, is_windows};
use crate::checks::common::nodeclass::status_ids;
use crate::events::Event;
use crate::facts::InstanceType;
use crate::model::{Ec2NodeClass, ListedNode, NodeClaim};
use crate::nodecap::podips::{Cni, IP_ERROR, PodIps, pod_ips, prefix_max_pods, secondary_max_pods};
use crate::quantity::Quantity;
use crate::scheduling::spread::{NODES_WITH_ZONE, ZONE};

declare_check! {
    pub static NODE_POD_IPS_EXHAUSTED = {
        code: "KD6007",
        slug: "node-pod-ips-exhausted",
        title: "pods on Karpenter's nodes get IP addresses",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, DaemonSets, Nodes, EventsByReason, NodePods, Ec2InstanceTypes, Ec2NodeClasses, Ec2Subnets],
        self_managed: true,
        run: pod_ips_exhausted,
    }
}


/// A pod that failed this many times, or still is not running, did not just wait for the warm
/// pool: new nodes fill it within a minute or two and the kubelet retries (aws#4202).
const TRANSIENT_TIMES: u64 = 3;

async fn pod_ips_exhausted(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let by_node: BTreeMap<&str, &NodeClaim> = claims
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter_map(|c| Some((c.status.node_name.as_deref().filter(|n| !n.is_empty())?, c)))
        .collect();
    if by_node.is_empty() {
        return Ok(Vec::new());
    }
    let daemonsets = cx.daemonsets().await?;
    // Another CNI assigns addresses by rules of its own, and says so in other words.
    let Some(cni) = Cni::of(&daemonsets) else {
        return Ok(Vec::new());
    };
    if cni.ipv6 {
        return Ok(Vec::new());
    }
    let events = cx
        .events_by_reason("Pod", "FailedCreatePodSandBox")
        .await?;
    let mut failures: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in events.0.0.iter() {
        if e.message.contains(IP_ERROR) && by_node.contains_key(e.host.as_str()) {
            failures.entry(e.host.as_str()).or_default().push(e);
        }
    }
    // Nothing failed and delegation is off: nothing to judge, nothing more to read.
    if failures.is_empty() && !cni.prefix_delegation {
        return Ok(Vec::new());
    }
    let (nodes, types, classes) = futures::try_join!(
        cx.nodes(NODES_WITH_ZONE),
        cx.instance_types(),
        cx.ec2_nodeclasses()
    )?;
    let type_of: BTreeMap<&str, &InstanceType> = types
        .iter()
        .map(|t| (t.instance_type.as_str(), t))
        .collect();
    let mut held = HeldNodes::default();
    for node in nodes.iter() {
        let name = node.name();
        let Some(claim) = by_node.get(name) else {
            continue;
        };
        // The VPC CNI on Windows gives pods the primary ENI's addresses only, by rules of its
        // own (Karpenter's "Windows Support Notice"): not judged here.
        if is_windows(node) {
            continue;
        }
        let itype = instance_type_of(claim).unwrap_or("");
        let Some(it) = type_of.get(itype) else {
            continue;
        };
        let Some(ips) = pod_ips(it, &cni) else {
            continue;
        };
        let Some(pods) = pod_capacity(node) else {
            continue;
        };
        let class = class_of(claim, &classes);
        let max_pods = class
            .and_then(|c| c.spec.get("kubelet"))
            .and_then(|k| k.get("maxPods"))
            .and_then(serde_json::Value::as_i64);
        let (cause, owners) = match failures.get(name) {
            Some(failed) => {
                if !lasting(cx, name, failed).await? {
                    continue;
                }
                let failed_pods: Vec<String> = failed
                    .iter()
                    .map(|e| format!("{}/{} (x{})", e.namespace, e.name, e.count))
                    .collect();
                let (mut cause, owners): (NodeCause, &[&str]) = if pods - 2 > ips.ips {
                    (over_capacity(it, &cni, &ips, pods, max_pods, class), &[])
                } else {
                    // A subnet low on addresses is KD3009's: when it fails too, this finding
                    // is its consequence.
                    (subnet_short(cx, node, class, &cni).await?, &[codes::NODECLASS_SUBNET_IPS_LOW])
                };
                cause.evidence.push(("pods", failed_pods.join(", ")));
                cause
                    .evidence
                    .push(("event", failed.first().map(|e| e.message.clone()).unwrap_or_default()));
                (cause, owners)
            }
            None => match unused_prefixes(it, &ips, pods, max_pods, class) {
                Some(cause) => (cause, &[] as &[&str]),
                None => continue,
            },
        };
        held.add_owned(claim, name, itype.to_string(), cause, owners);
    }
    Ok(held.findings("instanceType", |itype, h| {
        format!("{} node(s) of {itype}: {}", h.nodes.len(), h.cause.what)
    }))
}

fn pod_capacity(node: &ListedNode) -> Option<i64> {
    Some(Quantity::parse(node.capacity.get("pods")?)?.as_units())
}

/// Whether the node's failures last: a pod that failed more than a few times, or one that is
/// still on the node and not ready. Failures that cleared are the warm pool filling.
async fn lasting(cx: &CheckCx, node: &str, failed: &[&Event]) -> Result<bool, FactError> {
    if failed.iter().any(|e| e.count > TRANSIENT_TIMES) {
        return Ok(true);
    }
    let pods = cx.node_pods(node).await?;
    Ok(failed.iter().any(|e| {
        pods.iter().any(|p| {
            p.metadata.name.as_deref() == Some(e.name.as_str())
                && p.metadata.namespace.as_deref() == Some(e.namespace.as_str())
                && !crate::checks::common::controller::pod_ready(p)
        })
    }))
}

/// The node admits more pods than the CNI has addresses for: say which setting makes it so.
fn over_capacity(
    it: &InstanceType,
    cni: &Cni,
    ips: &PodIps,
    pods: i64,
    max_pods: Option<i64>,
    class: Option<&Ec2NodeClass>,
) -> NodeCause {
    let class_name = class.map(Ec2NodeClass::name).unwrap_or("");
    let t = &it.instance_type;
    let figures = format!(
        "{t}: {} ENIs for pods × {} addresses{} = {} pod addresses; the node admits {pods} pods, {} of them not on the host network",
        ips.enis,
        it.ipv4_per_eni.unwrap_or(0) - 1,
        if ips.prefixes { " × 16 (prefixes)" } else { "" },
        ips.ips,
        pods - 2
    );
    let (what, hint) = if ips.prefix_fallback {
        (
            "prefix delegation is on, but these instances are not Nitro, so the CNI falls back to single addresses".to_string(),
            format!(
                "The VPC CNI delegates prefixes only on Nitro and bare-metal instances; on {t} it gives one address per slot, far fewer than the pods the node admits. Keep the NodePool to Nitro types (requirement karpenter.k8s.aws/instance-hypervisor In [nitro]), or lower EC2NodeClass {class_name}'s spec.kubelet.maxPods"
            ),
        )
    } else if (cni.custom_networking || cni.pod_eni) && max_pods.is_none() {
        let what = if cni.custom_networking {
            "custom networking"
        } else {
            "security groups for pods (the trunk ENI)"
        };
        (
            format!("{what} takes one ENI from pods, and Karpenter still counts it"),
            format!(
                "Karpenter passes the kubelet a pod count from every ENI of the type; {what} leaves one fewer for pods. Set RESERVED_ENIS=1 in Karpenter's settings (Helm settings.reservedENIs) so it counts one ENI fewer, or set EC2NodeClass {class_name}'s spec.kubelet.maxPods to what the remaining ENIs hold"
            ),
        )
    } else {
        let set = max_pods
            .map(|m| format!("EC2NodeClass {class_name}'s spec.kubelet.maxPods ({m})"))
            .unwrap_or_else(|| "the node's max pods".to_string());
        (
            "the nodes admit more pods than their ENIs have addresses".to_string(),
            format!(
                "{set} is above what the CNI can address on {t}. Enable prefix delegation (aws-node ENABLE_PREFIX_DELEGATION=true, Nitro types), or lower maxPods to at most {}, or remove it and let Karpenter compute it from the ENIs",
                ips.ips + 2
            ),
        )
    };
    NodeCause {
        what,
        hint,
        fix: Some(
            "kubectl get events -A --field-selector reason=FailedCreatePodSandBox".to_string(),
        ),
        severity: Severity::Error,
        evidence: vec![("addresses", figures)],
    }
}

/// The node may hold its pods, but the CNI found no address: its zone's subnets are short.
async fn subnet_short(
    cx: &CheckCx,
    node: &ListedNode,
    class: Option<&Ec2NodeClass>,
    cni: &Cni,
) -> Result<NodeCause, FactError> {
    let zone = node.label(ZONE).unwrap_or_default();
    let resolved = class.map(|c| status_ids(c, "subnets")).unwrap_or_default();
    let subnets = cx.subnets().await?;
    let chosen: Vec<&crate::facts::Subnet> = subnets
        .iter()
        .filter(|s| resolved.contains(&s.subnet_id) && s.availability_zone == zone)
        .collect();
    let in_zone: Vec<&str> = chosen.iter().map(|s| s.subnet_id.as_str()).collect();
    let counts: Vec<String> = chosen
        .iter()
        .map(|s| format!("{} {} free", s.subnet_id, s.available_ip_address_count))
        .collect();
    // Fewer than 16 free is no /28 and at most a handful of pods: the subnet is out. More
    // proves nothing with prefixes (the free addresses may be scattered), and without them
    // says the addresses exist and the CNI could not get them.
    let short = !chosen.is_empty() && chosen.iter().all(|s| s.available_ip_address_count < 16);
    let (what, hint) = if short || chosen.is_empty() {
        (
            format!("zone {zone}'s subnets are out of addresses"),
            "The node holds fewer pods than its ENIs can address, and its subnets have no free addresses left: widen them (or add a secondary CIDR with subnets for pods), spread pods and nodes over zones, or use custom networking for pods".to_string(),
        )
    } else if cni.prefix_delegation {
        (
            format!("the CNI found no free /28 prefix in zone {zone}'s subnets"),
            "With prefix delegation each ENI slot needs a free, aligned /28 (16 addresses). These subnets show free addresses, but they may be scattered so that no /28 is left (EC2 answers InsufficientCidrBlocks, which only ipamd's log shows). Reserve a range for prefixes (aws ec2 create-subnet-cidr-reservation --reservation-type prefix), or add subnets for pods".to_string(),
        )
    } else {
        (
            "the CNI could not assign addresses its subnets have".to_string(),
            "The subnets have free addresses and the node holds fewer pods than its ENIs can address, so ipamd itself could not attach them: read /var/log/aws-routed-eni/ipamd.log on the node. Common causes are aws-node's role lacking AmazonEKS_CNI_Policy (ec2:AssignPrivateIpAddresses, ec2:AttachNetworkInterface), EC2 API throttling, and MINIMUM_IP_TARGET without WARM_IP_TARGET".to_string(),
        )
    };
    Ok(NodeCause {
        what,
        hint,
        fix: Some(if in_zone.is_empty() {
            format!(
                "aws ec2 describe-subnets --filters Name=availability-zone,Values={zone} --query 'Subnets[].[SubnetId,AvailableIpAddressCount]'"
            )
        } else {
            format!(
                "aws ec2 describe-subnets --subnet-ids {} --query 'Subnets[].[SubnetId,AvailableIpAddressCount]'",
                in_zone.join(" ")
            )
        }),
        severity: Severity::Error,
        evidence: vec![(
            "subnets",
            if counts.is_empty() {
                format!("no subnet of the EC2NodeClass in {zone} was found")
            } else {
                counts.join(", ")
            },
        )],
    })
}

/// Prefix delegation is on, the instance could use it, and the node still admits only the
/// secondary-address count: Karpenter does not model prefixes and passes its own figure.
fn unused_prefixes(
    it: &InstanceType,
    ips: &PodIps,
    pods: i64,
    max_pods: Option<i64>,
    class: Option<&Ec2NodeClass>,
) -> Option<NodeCause> {
    if !ips.prefixes || max_pods.is_some() {
        return None;
    }
    let recommended = prefix_max_pods(it)?;
    if Some(pods) != secondary_max_pods(it) || recommended <= pods {
        return None;
    }
    let class_name = class.map(Ec2NodeClass::name).unwrap_or("");
    Some(NodeCause {
        what: "prefix delegation is on, but the nodes admit only the pods of single addresses".to_string(),
        hint: format!(
            "Karpenter does not model prefix delegation: without spec.kubelet.maxPods it passes the kubelet the single-address count ({pods} on {}), so the prefixes go unused and Karpenter launches more nodes than needed. Set EC2NodeClass {class_name}'s spec.kubelet.maxPods (EKS's max-pods calculator gives {recommended} for {}; 110 below 30 vCPUs, 250 above); nodes take it when they are replaced",
            it.instance_type, it.instance_type
        ),
        fix: Some(
            "kubectl get nodes -l karpenter.sh/nodepool -o custom-columns=NAME:.metadata.name,TYPE:.metadata.labels.node\\.kubernetes\\.io/instance-type,PODS:.status.capacity.pods".to_string(),
        ),
        severity: Severity::Warning,
        evidence: vec![(
            "pods",
            format!("{pods} per node, with prefixes up to {recommended}"),
        )],
    })
}
