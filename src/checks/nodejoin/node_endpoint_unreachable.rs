//! KD5004: a node registers by calling the cluster's API endpoint. With private endpoint
//! access on, that call stays inside the VPC (through the private hosted zone EKS adds, which
//! needs the VPC's DNS support and DNS hostnames). With only the public endpoint, it leaves the
//! VPC: through a NAT gateway (whose Elastic IP the endpoint's `publicAccessCidrs` must admit)
//! or an internet gateway with the node's own public address. A subnet an EC2NodeClass selects
//! without such a path launches instances that never join. The routing is read in
//! `crate::network`.

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::evidence::subnet_words;
use crate::checks::common::nodeclass::{object, status_ids, subnet_egress};
use crate::network::{AclVerdict, Egress, Routing, acl_tcp, ip_in_any};

declare_check! {
    pub static NODE_ENDPOINT_UNREACHABLE = {
        code: "KD5004",
        slug: "node-endpoint-unreachable",
        title: "nodes in every EC2NodeClass's subnets can reach the cluster's API endpoint",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, ControllerDeployments, EksCluster, Ec2Subnets, Ec2VpcAttributes, Ec2RouteTables, Ec2NatGateways, Ec2InternetGateways, Ec2NetworkAcls],
        self_managed: true,
        run: node_endpoint_unreachable,
    }
}

async fn node_endpoint_unreachable(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    // A class that resolved no subnet launches nothing: KD3001 owns it.
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
    let (Some(public), Some(private)) = (
        cluster.endpoint_public_access,
        cluster.endpoint_private_access,
    ) else {
        return Err(FactError::NotRecorded {
            fact: "the cluster's endpoint access".to_string(),
        });
    };
    let cluster_object = format!("EKSCluster/{}", cluster.name);
    let mut findings = Vec::new();
    // Network ACLs sit on every path, private or public: HTTPS out, and its replies back in on
    // the ephemeral ports (ACLs are stateless).
    let (acls, subnets) = futures::join!(cx.network_acls(&vpc_id), cx.subnets());
    let (acls, subnets) = (acls?, subnets?);
    for nc in &classes {
        let mut denied = Vec::new();
        for id in status_ids(nc, "subnets") {
            if !subnets.iter().any(|s| s.subnet_id == id && s.vpc_id == vpc_id) {
                continue;
            }
            let Some(acl) = acls.iter().find(|a| a.subnet_ids.contains(&id)) else {
                continue;
            };
            for (egress, ports, what) in [
                (true, (443, 443), "HTTPS (TCP 443) out"),
                (false, (1024, 65535), "the replies (TCP 1024-65535) in"),
            ] {
                if let AclVerdict::Denied { rule } = acl_tcp(acl, egress, ports) {
                    let rule = if rule == i32::MAX {
                        "*".to_string()
                    } else {
                        rule.to_string()
                    };
                    denied.push(serde_json::json!({
                        "subnet": id, "networkAcl": acl.network_acl_id, "denies": what, "rule": rule,
                    }));
                }
            }
        }
        if denied.is_empty() {
            continue;
        }
        let first = &denied[0];
        let acl_id = first["networkAcl"].as_str().unwrap_or_default().to_string();
        let mut f = Finding::new(
            object(nc),
            format!(
                "network ACL {acl_id} of subnet {} denies {} (rule {}): nodes cannot talk to the cluster endpoint",
                first["subnet"].as_str().unwrap_or_default(),
                first["denies"].as_str().unwrap_or_default(),
                first["rule"].as_str().unwrap_or_default()
            ),
        )
        .evidence("denied", denied.clone())
        .hint("network ACLs are stateless: allow TCP 443 out and TCP 1024-65535 back in, to and from where the endpoint is");
        if denied.iter().any(|d| d["denies"].as_str().is_some_and(|w| w.contains("out"))) {
            f = f.fix(format!(
                "aws ec2 create-network-acl-entry --network-acl-id {acl_id} --egress --rule-number 90 --protocol tcp --port-range From=443,To=443 --cidr-block 0.0.0.0/0 --rule-action allow"
            ));
        }
        if denied.iter().any(|d| d["denies"].as_str().is_some_and(|w| w.contains(" in"))) {
            f = f.fix(format!(
                "aws ec2 create-network-acl-entry --network-acl-id {acl_id} --ingress --rule-number 90 --protocol tcp --port-range From=1024,To=65535 --cidr-block 0.0.0.0/0 --rule-action allow"
            ));
        }
        findings.push(f);
    }

    if private {
        // In-VPC path: the private hosted zone resolves only with both DNS attributes on.
        let attributes = cx.vpc_attributes(&vpc_id).await?;
        let Some(attributes) = attributes.as_ref() else {
            return Err(FactError::NotFound {
                message: format!("VPC {vpc_id} does not exist"),
            });
        };
        let off: Vec<&str> = [
            ("enableDnsSupport", attributes.enable_dns_support),
            ("enableDnsHostnames", attributes.enable_dns_hostnames),
        ]
        .into_iter()
        .filter(|(_, on)| !on)
        .map(|(name, _)| name)
        .collect();
        if !off.is_empty() {
            let mut f = Finding::new(
                cluster_object.clone(),
                format!(
                    "private endpoint access is on but VPC {vpc_id} has {} off: nodes cannot resolve the endpoint to its private addresses",
                    off.join(" and ")
                ),
            )
            .evidence("vpcId", vpc_id.clone())
            .evidence("off", off.clone())
            .evidence("endpointPublicAccess", public)
            .hint("turn both DNS attributes on; the private endpoint's hosted zone needs them");
            for attribute in &off {
                let flag = match *attribute {
                    "enableDnsSupport" => "--enable-dns-support",
                    _ => "--enable-dns-hostnames",
                };
                f = f.fix(format!(
                    "aws ec2 modify-vpc-attribute --vpc-id {vpc_id} {flag} '{{\"Value\":true}}'"
                ));
            }
            findings.push(f);
        }
        // Everything else stays in the VPC: routes out do not matter for the endpoint.
        return Ok(findings);
    }

    let (tables, nats, igws) = futures::join!(
        cx.route_tables(&vpc_id),
        cx.nat_gateways(&vpc_id),
        cx.internet_gateways(&vpc_id)
    );
    let (tables, nats, igws) = (tables?, nats?, igws?);
    let routing = Routing {
        vpc_id: &vpc_id,
        route_tables: &tables,
        nat_gateways: &nats,
        internet_gateways: &igws,
    };
    let allowed = cluster
        .public_access_cidrs
        .clone()
        .unwrap_or_else(|| vec!["0.0.0.0/0".to_string()]);
    let open_to_all = allowed.iter().any(|c| c == "0.0.0.0/0");
    let mut unknown = Vec::new();
    for nc in &classes {
        let mut no_way_out = Vec::new();
        let mut excluded = Vec::new();
        let mut random_ip = Vec::new();
        for (subnet, egress) in subnet_egress(nc, &subnets, &routing) {
            let id = &subnet.subnet_id;
            match egress {
                Egress::None { route_table, why } => no_way_out.push(serde_json::json!({
                    "subnet": id, "routeTable": route_table, "why": why,
                })),
                Egress::Unknown { route_table, why } => {
                    unknown.push(format!("{}: subnet {id} ({route_table}): {why}", object(nc)));
                }
                Egress::Nat {
                    gateway,
                    public_ips,
                    route_table,
                } => {
                    if !public_ips.iter().any(|ip| ip_in_any(ip, &allowed)) {
                        excluded.push(serde_json::json!({
                            "subnet": id, "routeTable": route_table, "natGateway": gateway,
                            "publicIps": public_ips,
                        }));
                    }
                }
                Egress::InternetGateway { .. } => {
                    if !open_to_all {
                        random_ip.push(id.clone());
                    }
                }
            }
        }
        if !no_way_out.is_empty() {
            let first = no_way_out[0]["why"].as_str().unwrap_or_default().to_string();
            let names: Vec<&str> = no_way_out
                .iter()
                .filter_map(|s| s["subnet"].as_str())
                .collect();
            findings.push(
                Finding::new(
                    object(nc),
                    format!(
                        "nodes in {} cannot reach the cluster's public endpoint and private endpoint access is off: {first}",
                        subnet_words(&names)
                    ),
                )
                .evidence("subnets", no_way_out.clone())
                .evidence("endpointPrivateAccess", false)
                .hint(
                    "give the subnets a default route to a NAT gateway (or select subnets that have one), or turn on private endpoint access and add the VPC endpoints nodes need (KD5005)",
                )
                .fix(format!(
                    "aws eks update-cluster-config --name {} --resources-vpc-config endpointPrivateAccess=true",
                    cluster.name
                )),
            );
        }
        if !excluded.is_empty() {
            // Subnets behind one NAT gateway share its addresses: name each once.
            let mut ips: Vec<String> = Vec::new();
            for ip in excluded
                .iter()
                .flat_map(|s| s["publicIps"].as_array().cloned().unwrap_or_default())
                .filter_map(|ip| ip.as_str().map(str::to_string))
            {
                if !ips.contains(&ip) {
                    ips.push(ip);
                }
            }
            let mut cidrs = allowed.clone();
            cidrs.extend(ips.iter().map(|ip| format!("{ip}/32")));
            findings.push(
                Finding::new(
                    object(nc),
                    format!(
                        "only the public endpoint is on and its publicAccessCidrs ({}) exclude {}, the NAT address nodes come from",
                        allowed.join(", "),
                        ips.join(", ")
                    ),
                )
                .evidence("subnets", excluded.clone())
                .evidence("publicAccessCidrs", allowed.clone())
                .hint("admit the NAT gateways' Elastic IPs on the public endpoint, or turn on private endpoint access")
                .fix(format!(
                    "aws eks update-cluster-config --name {} --resources-vpc-config publicAccessCidrs={}",
                    cluster.name,
                    cidrs.join(",")
                )),
            );
        }
        if !random_ip.is_empty() {
            findings.push(
                Finding::new(
                    object(nc),
                    format!(
                        "nodes in public {} reach the public endpoint from their own random public address, which publicAccessCidrs ({}) may not admit",
                        subnet_words(&random_ip),
                        allowed.join(", ")
                    ),
                )
                .severity(Severity::Warning)
                .evidence("subnets", random_ip.clone())
                .evidence("publicAccessCidrs", allowed.clone())
                .hint("turn on private endpoint access, or place nodes in private subnets behind a NAT gateway whose address you admit")
                .fix(format!(
                    "aws eks update-cluster-config --name {} --resources-vpc-config endpointPrivateAccess=true",
                    cluster.name
                )),
            );
        }
    }
    // A route karpdoctor cannot follow may reach the internet: say so rather than pass,
    // unless something already fails.
    if findings.is_empty() && !unknown.is_empty() {
        return Err(FactError::NotFound {
            message: format!(
                "cannot tell whether nodes reach the public endpoint ({})",
                unknown.join("; ")
            ),
        });
    }
    Ok(findings)
}

