//! KD5005: a node in a subnet with no way out of the VPC (an isolated or "private" cluster)
//! reaches AWS only through VPC endpoints. To join, it needs EC2 (nodeadm describes its own
//! instance at boot), ECR's API and registry endpoints and S3 (image layers) to pull the pause,
//! kube-proxy and aws-node images. An Interface endpoint serves the service's usual name only
//! with private DNS on, and admits only what its security groups allow on 443. The routing is
//! read in `crate::network`.

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::evidence::subnet_words;
use crate::checks::common::nodeclass::{object, status_ids, subnet_egress};
use crate::checks::common::wiring::irsa_role;
use crate::facts::{SecurityGroup, VpcEndpoint};
use crate::network::{Direction, Egress, Peer, Routing, Verdict, tcp_allowed};

declare_check! {
    pub static NODE_AWS_ENDPOINTS_UNREACHABLE = {
        code: "KD5005",
        slug: "node-aws-endpoints-unreachable",
        title: "nodes in subnets without internet egress have the VPC endpoints they need to join",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, ControllerDeployments, EksCluster, Ec2Subnets, Ec2SecurityGroups, Ec2RouteTables, Ec2NatGateways, Ec2InternetGateways, Ec2VpcEndpoints, ServiceAccount, PodIdentityAssociations],
        self_managed: true,
        run: node_aws_endpoints_unreachable,
    }
}

/// The Interface endpoints a node needs to join (service name suffixes after the region).
const INTERFACE: &[(&str, &str)] = &[
    ("ec2", "nodeadm and the kubelet's cloud provider describe the instance at boot"),
    ("ecr.api", "image pulls ask ECR for credentials and manifests"),
    ("ecr.dkr", "image pulls fetch manifests from the registry"),
];

/// The endpoints aws-node's own credentials need, besides [`INTERFACE`]: IRSA assumes its role
/// through STS (`AssumeRoleWithWebIdentity`, at the regional endpoint), Pod Identity gets its
/// credentials from the EKS Auth API. Without either, aws-node uses the node role, whose
/// credentials come from the instance metadata service.
async fn cni_endpoints(
    cx: &CheckCx,
    cluster: &str,
) -> Result<Vec<(&'static str, &'static str)>, FactError> {
    let sa = cx.service_account("kube-system", "aws-node").await?;
    let Some(sa) = sa.as_ref() else {
        return Ok(Vec::new());
    };
    let irsa = irsa_role(sa).is_some();
    if irsa {
        return Ok(vec![(
            "sts",
            "aws-node's IRSA role is assumed through STS (AssumeRoleWithWebIdentity)",
        )]);
    }
    let associations = cx
        .pod_identity_associations(cluster, "kube-system", "aws-node")
        .await?;
    Ok(if associations.is_empty() {
        Vec::new()
    } else {
        vec![(
            "eks-auth",
            "aws-node's Pod Identity credentials come from the EKS Auth API",
        )]
    })
}

async fn node_aws_endpoints_unreachable(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    let classes: Vec<_> = classes
        .iter()
        .filter(|nc| !status_ids(nc, "subnets").is_empty())
        .collect();
    if classes.is_empty() {
        return Ok(Vec::new());
    }
    let cluster = cluster(cx).await?;
    let Some(vpc_id) = cluster.vpc_id.clone() else {
        return Err(FactError::NotFound {
            message: format!("the EKS cluster {} names no VPC", cluster.name),
        });
    };
    // Without private endpoint access, a subnet with no way out cannot reach the API server
    // either: KD5004 owns that, and its fix (a NAT gateway) serves AWS's APIs too.
    if cluster.endpoint_private_access != Some(true) {
        return Ok(Vec::new());
    }
    let region = cluster
        .arn
        .split(':')
        .nth(3)
        .unwrap_or_default()
        .to_string();
    let subnets = cx.subnets().await?;
    let (tables, nats, igws, endpoints, groups) = futures::join!(
        cx.route_tables(&vpc_id),
        cx.nat_gateways(&vpc_id),
        cx.internet_gateways(&vpc_id),
        cx.vpc_endpoints(&vpc_id),
        cx.security_groups()
    );
    let (tables, nats, igws, endpoints, groups) = (tables?, nats?, igws?, endpoints?, groups?);
    let routing = Routing {
        vpc_id: &vpc_id,
        route_tables: &tables,
        nat_gateways: &nats,
        internet_gateways: &igws,
    };
    let by_id: BTreeMap<&str, &SecurityGroup> =
        groups.iter().map(|g| (g.group_id.as_str(), g)).collect();
    let service = |suffix: &str| format!("com.amazonaws.{region}.{suffix}");
    let usable = |e: &&VpcEndpoint| e.state == "available";

    let mut findings = Vec::new();
    let mut unknown = Vec::new();
    // Read once, and only when some subnet has no way out.
    let mut cni_extra: Option<Vec<(&'static str, &'static str)>> = None;
    for nc in classes {
        let mut isolated = Vec::new();
        let mut route_tables = Vec::new();
        for (subnet, egress) in subnet_egress(nc, &subnets, &routing) {
            let id = &subnet.subnet_id;
            match egress {
                Egress::None { route_table, .. } => {
                    isolated.push(subnet);
                    route_tables.push(route_table);
                }
                Egress::Unknown { route_table, why } => {
                    // Traffic may reach endpoints in a hub VPC, or the internet.
                    unknown.push(format!("{}: subnet {id} ({route_table}): {why}", object(nc)));
                }
                Egress::Nat { .. } | Egress::InternetGateway { .. } => {}
            }
        }
        if isolated.is_empty() {
            continue;
        }
        let subnet_ids: Vec<&str> = isolated.iter().map(|s| s.subnet_id.as_str()).collect();
        let node_groups: Vec<String> = status_ids(nc, "securityGroups");
        let node_peer = Peer {
            groups: node_groups.iter().map(String::as_str).collect(),
            cidrs: isolated
                .iter()
                .filter_map(|s| s.cidr_block.parse().ok())
                .collect(),
        };
        let mut missing = Vec::new();
        let mut no_private_dns = Vec::new();
        let mut closed = Vec::new();
        let mut closed_groups: Vec<String> = Vec::new();
        if cni_extra.is_none() {
            cni_extra = Some(cni_endpoints(cx, &cluster.name).await?);
        }
        let required = INTERFACE.iter().chain(cni_extra.iter().flatten());
        for (suffix, why) in required {
            let name = service(suffix);
            let found: Vec<&VpcEndpoint> = endpoints
                .iter()
                .filter(|e| e.service_name == name && e.vpc_endpoint_type == "Interface")
                .filter(usable)
                .collect();
            let Some(endpoint) = found.first() else {
                missing.push(serde_json::json!({"service": name, "type": "Interface", "why": why}));
                continue;
            };
            if !endpoint.private_dns_enabled {
                no_private_dns.push(endpoint.vpc_endpoint_id.clone());
                continue;
            }
            let groups: Vec<&str> = endpoint.group_ids.iter().map(String::as_str).collect();
            match tcp_allowed(&by_id, &groups, Direction::Inbound, 443, &node_peer) {
                Ok(Verdict::Denied) => {
                    closed.push(endpoint.vpc_endpoint_id.clone());
                    for g in &endpoint.group_ids {
                        if !closed_groups.contains(g) {
                            closed_groups.push(g.clone());
                        }
                    }
                }
                Ok(Verdict::Unknown(why)) => {
                    unknown.push(format!("{}: endpoint {}: {why}", object(nc), endpoint.vpc_endpoint_id));
                }
                Ok(Verdict::Allowed { .. }) => {}
                Err(crate::network::Unjudged::RulesNotRecorded(group)) => {
                    return Err(FactError::NotRecorded {
                        fact: format!("the rules of security group {group}"),
                    });
                }
            }
        }
        // S3 serves image layers: a Gateway endpoint on every isolated subnet's route table,
        // or an Interface endpoint.
        let s3 = service("s3");
        let s3_interface = endpoints
            .iter()
            .filter(usable)
            .any(|e| e.service_name == s3 && e.vpc_endpoint_type == "Interface");
        if !s3_interface {
            let gateway_tables: Vec<&str> = endpoints
                .iter()
                .filter(usable)
                .filter(|e| e.service_name == s3 && e.vpc_endpoint_type == "Gateway")
                .flat_map(|e| e.route_table_ids.iter().map(String::as_str))
                .collect();
            let without: Vec<&str> = route_tables
                .iter()
                .flatten()
                .map(String::as_str)
                .filter(|t| !gateway_tables.contains(t))
                .collect();
            if !without.is_empty() {
                missing.push(serde_json::json!({
                    "service": s3, "type": "Gateway", "routeTables": without,
                    "why": "ECR keeps image layers in S3",
                }));
            }
        }
        if missing.is_empty() && no_private_dns.is_empty() && closed.is_empty() {
            continue;
        }
        let mut problems = Vec::new();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().filter_map(|m| m["service"].as_str()).collect();
            problems.push(format!("no endpoint for {}", names.join(", ")));
        }
        if !no_private_dns.is_empty() {
            problems.push(format!("private DNS off on {}", no_private_dns.join(", ")));
        }
        if !closed.is_empty() {
            problems.push(format!(
                "the security groups of {} do not admit TCP 443 from the nodes",
                closed.join(", ")
            ));
        }
        let mut f = Finding::new(
            object(nc),
            format!(
                "{} {} no way out of the VPC and {}",
                subnet_words(&subnet_ids),
                if subnet_ids.len() == 1 { "has" } else { "have" },
                problems.join("; ")
            ),
        )
        .evidence("subnets", subnet_ids.clone())
        .hint("a node in an isolated subnet reaches EC2, ECR and S3 only through VPC endpoints: add the missing ones (or a NAT gateway route)");
        if !missing.is_empty() {
            f = f.evidence("missingEndpoints", missing.clone());
        }
        if !no_private_dns.is_empty() {
            f = f.evidence("privateDnsOff", no_private_dns.clone());
        }
        if !closed.is_empty() {
            f = f.evidence("endpointsClosedToNodes", closed.clone());
        }
        let subnet_list = subnet_ids.join(" ");
        for m in &missing {
            let name = m["service"].as_str().unwrap_or_default();
            f = f.fix(if m["type"] == "Gateway" {
                let tables: Vec<&str> = m["routeTables"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str())
                    .collect();
                format!(
                    "aws ec2 create-vpc-endpoint --vpc-id {vpc_id} --vpc-endpoint-type Gateway --service-name {name} --route-table-ids {}",
                    tables.join(" ")
                )
            } else {
                format!(
                    "aws ec2 create-vpc-endpoint --vpc-id {vpc_id} --vpc-endpoint-type Interface --service-name {name} --subnet-ids {subnet_list} --security-group-ids {} --private-dns-enabled",
                    node_groups.first().map(String::as_str).unwrap_or("<a group admitting 443 from the nodes>")
                )
            });
        }
        for group in &closed_groups {
            f = f.fix(match node_groups.first() {
                Some(node_sg) => format!(
                    "aws ec2 authorize-security-group-ingress --group-id {group} --protocol tcp --port 443 --source-group {node_sg}"
                ),
                None => format!(
                    "aws ec2 authorize-security-group-ingress --group-id {group} --protocol tcp --port 443 --cidr <the node subnets' range>"
                ),
            });
        }
        for id in &no_private_dns {
            f = f.fix(format!(
                "aws ec2 modify-vpc-endpoint --vpc-endpoint-id {id} --private-dns-enabled"
            ));
        }
        findings.push(f);
    }
    if findings.is_empty() && !unknown.is_empty() {
        return Err(FactError::NotFound {
            message: format!(
                "cannot tell whether nodes reach AWS's APIs ({})",
                unknown.join("; ")
            ),
        });
    }
    Ok(findings)
}
