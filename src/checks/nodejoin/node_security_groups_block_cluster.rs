//! KD5006: a node joins only if the control plane can reach its kubelet (TCP 10250: logs,
//! exec, metrics, webhooks through the API server) and the node can reach the API server
//! (TCP 443). The control plane's network interfaces carry the cluster security group and the
//! groups given at creation (`securityGroupIds`); the node carries the groups its EC2NodeClass
//! resolved. When none of those rules admit one of the flows, every node of the class stays
//! out of the cluster, however right its IAM side is. The rules are judged in
//! `crate::network`, as EC2 evaluates them.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::nodeclass::{object, status_ids};
use crate::facts::{SecurityGroup, Subnet};
use crate::network::{Direction, Peer, Unjudged, Verdict, tcp_allowed};

declare_check! {
    pub static NODE_SECURITY_GROUPS_BLOCK_CLUSTER = {
        code: "KD5006",
        slug: "node-security-groups-block-cluster",
        title: "the security groups of every EC2NodeClass let its nodes and the control plane reach each other",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, ControllerDeployments, EksCluster, Ec2SecurityGroups, Ec2Subnets],
        self_managed: true,
        run: node_security_groups_block_cluster,
    }
}

/// The flows a node needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// The control plane to the kubelet.
    Kubelet,
    /// The node to the API server, as the control plane's groups admit it.
    ApiIn,
    /// The node to the API server, as the node's own groups let it out.
    ApiOut,
}

impl Flow {
    fn what(self) -> &'static str {
        match self {
            Flow::Kubelet => "the control plane cannot reach the kubelet (TCP 10250)",
            Flow::ApiIn => {
                "the control plane does not admit the nodes to the API server (TCP 443)"
            }
            Flow::ApiOut => "the nodes' groups do not let TCP 443 out to the control plane",
        }
    }

    fn port(self) -> i32 {
        match self {
            Flow::Kubelet => 10250,
            Flow::ApiIn | Flow::ApiOut => 443,
        }
    }

    /// How evidence names it.
    fn key(self) -> &'static str {
        match self {
            Flow::Kubelet => "kubelet10250FromControlPlane",
            Flow::ApiIn => "api443FromNodes",
            Flow::ApiOut => "api443OutFromNodes",
        }
    }

    fn fix(self, node_sg: &str, cp_sg: &str) -> String {
        match self {
            Flow::Kubelet => format!(
                "aws ec2 authorize-security-group-ingress --group-id {node_sg} --protocol tcp --port 10250 --source-group {cp_sg}"
            ),
            Flow::ApiIn => format!(
                "aws ec2 authorize-security-group-ingress --group-id {cp_sg} --protocol tcp --port 443 --source-group {node_sg}"
            ),
            Flow::ApiOut => format!(
                "aws ec2 authorize-security-group-egress --group-id {node_sg} --ip-permissions 'IpProtocol=tcp,FromPort=443,ToPort=443,UserIdGroupPairs=[{{GroupId={cp_sg}}}]'"
            ),
        }
    }
}

async fn node_security_groups_block_cluster(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    // A class that resolved no security group launches nothing: KD3002 owns it.
    let classes: Vec<_> = classes
        .iter()
        .filter(|nc| !status_ids(nc, "securityGroups").is_empty())
        .collect();
    if classes.is_empty() {
        return Ok(Vec::new());
    }
    let cluster = cluster(cx).await?;
    let groups = cx.security_groups().await?;
    let subnets = cx.subnets().await?;
    let by_id: BTreeMap<&str, &SecurityGroup> =
        groups.iter().map(|g| (g.group_id.as_str(), g)).collect();
    // The control plane's interfaces: the cluster security group (every cluster since
    // platform version eks.1 on 1.14) and the extra groups given at creation.
    let mut control_plane: Vec<&str> = Vec::new();
    for id in cluster
        .cluster_security_group_id
        .iter()
        .chain(&cluster.security_group_ids)
    {
        if !control_plane.contains(&id.as_str()) {
            control_plane.push(id);
        }
    }
    if control_plane.is_empty() {
        return Err(FactError::NotFound {
            message: format!(
                "the EKS cluster {} names no control-plane security group",
                cluster.name
            ),
        });
    }
    let cp_peer = Peer {
        groups: control_plane.clone(),
        cidrs: cidrs(&subnets, &cluster.subnet_ids),
    };
    let cluster_sg = cluster.cluster_security_group_id.clone();

    let mut findings = Vec::new();
    let mut unknown = Vec::new();
    for nc in classes {
        let node_groups: Vec<String> = status_ids(nc, "securityGroups")
            .into_iter()
            .filter(|id| by_id.contains_key(id.as_str()))
            .collect();
        if node_groups.is_empty() {
            // Resolved ids the region does not list: the class's status is stale (KD3002).
            continue;
        }
        let node_groups: Vec<&str> = node_groups.iter().map(String::as_str).collect();
        let node_peer = Peer {
            groups: node_groups.clone(),
            cidrs: cidrs(&subnets, &status_ids(nc, "subnets")),
        };
        let verdicts = [
            (Flow::Kubelet, &node_groups, Direction::Inbound, &cp_peer),
            (Flow::ApiIn, &control_plane, Direction::Inbound, &node_peer),
            (Flow::ApiOut, &node_groups, Direction::Outbound, &cp_peer),
        ]
        .map(|(flow, groups, direction, peer)| {
            (flow, tcp_allowed(&by_id, groups, direction, flow.port(), peer))
        });
        let mut blocked = Vec::new();
        let mut allowed = serde_json::Map::new();
        for (flow, verdict) in verdicts {
            match verdict {
                Err(Unjudged::RulesNotRecorded(group)) => {
                    return Err(FactError::NotRecorded {
                        fact: format!("the rules of security group {group}"),
                    });
                }
                Ok(Verdict::Allowed { group, rule }) => {
                    allowed.insert(flow.key().to_string(), format!("{group}: {rule}").into());
                }
                Ok(Verdict::Unknown(why)) => unknown.push(format!("{}: {why}", object(nc))),
                Ok(Verdict::Denied) => blocked.push(flow),
            }
        }
        if blocked.is_empty() {
            continue;
        }
        let message = blocked
            .iter()
            .map(|f| f.what())
            .collect::<Vec<_>>()
            .join("; ");
        let node_sg = node_groups[0];
        let cp_sg = cluster_sg.as_deref().unwrap_or(control_plane[0]);
        let mut f = Finding::new(object(nc), message)
            .evidence("nodeSecurityGroups", node_groups.clone())
            .evidence("controlPlaneSecurityGroups", control_plane.clone())
            .evidence(
                "blocked",
                blocked.iter().map(|f| f.key()).collect::<Vec<_>>(),
            );
        if !allowed.is_empty() {
            f = f.evidence("allowedBy", allowed);
        }
        f = f.hint(match &cluster_sg {
            Some(sg) => format!(
                "add the cluster security group {sg} to the EC2NodeClass's securityGroupSelectorTerms (it admits its own members both ways), or open the ports below"
            ),
            None => "open the ports below between the node and control-plane security groups"
                .to_string(),
        });
        for flow in &blocked {
            f = f.fix(flow.fix(node_sg, cp_sg));
        }
        findings.push(f);
    }
    // A rule karpdoctor cannot resolve might be the one that admits the flow: say so rather
    // than pass, unless some class already fails.
    if findings.is_empty() && !unknown.is_empty() {
        return Err(FactError::NotFound {
            message: format!(
                "cannot tell whether a security group rule admits the flow ({})",
                unknown.join("; ")
            ),
        });
    }
    Ok(findings)
}

/// The IPv4 ranges of the named subnets that the region lists (others are skipped: a rule's
/// CIDR is then judged against those known, or, with none, cannot be judged).
fn cidrs(subnets: &[Subnet], ids: &[String]) -> Vec<Ipv4Net> {
    subnets
        .iter()
        .filter(|s| ids.contains(&s.subnet_id))
        .filter_map(|s| s.cidr_block.parse().ok())
        .collect()
}
