//! VPC network facts: DNS attributes, route tables, NAT and internet gateways, endpoints and
//! network ACLs, each for one VPC (the cluster's), so a node's path out can be judged.

use aws_sdk_ec2::Client;
use aws_sdk_ec2::types::{Filter, VpcAttributeName};
use serde_json::{Value, json};

use super::errors::{absent_as_none, aws_error};
use crate::facts::FactError;

fn vpc_filter(name: &str, vpc_id: &str) -> Filter {
    Filter::builder().name(name).values(vpc_id).build()
}

/// `enableDnsSupport` and `enableDnsHostnames`, asked together; `null` for an unknown VPC.
pub(super) async fn attributes(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let ask = |attribute: VpcAttributeName| {
        ec2.describe_vpc_attribute()
            .vpc_id(vpc_id)
            .attribute(attribute)
            .send()
    };
    let (support, hostnames) = futures::join!(
        ask(VpcAttributeName::EnableDnsSupport),
        ask(VpcAttributeName::EnableDnsHostnames)
    );
    let missing =
        |e: &aws_sdk_ec2::operation::describe_vpc_attribute::DescribeVpcAttributeError| {
            use aws_sdk_ec2::error::ProvideErrorMetadata;
            e.code() == Some("InvalidVpcID.NotFound")
        };
    let action = "ec2:DescribeVpcAttribute";
    let (Some(support), Some(hostnames)) = (
        absent_as_none(action, support, missing)?,
        absent_as_none(action, hostnames, missing)?,
    ) else {
        return Ok(Value::Null);
    };
    let value = |v: Option<&aws_sdk_ec2::types::AttributeBooleanValue>| {
        v.and_then(|b| b.value()).unwrap_or(false)
    };
    Ok(json!({
        "enableDnsSupport": value(support.enable_dns_support()),
        "enableDnsHostnames": value(hostnames.enable_dns_hostnames()),
    }))
}

/// The VPC's route tables with their associations and routes.
pub(super) async fn route_tables(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_route_tables()
        .filters(vpc_filter("vpc-id", vpc_id))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeRouteTables", e))?;
        for t in page.route_tables() {
            let associations: Vec<Value> = t
                .associations()
                .iter()
                .map(|a| {
                    json!({
                        "subnetId": a.subnet_id(),
                        "main": a.main().unwrap_or(false),
                        "state": a.association_state().and_then(|s| s.state()).map(|s| s.as_str()),
                    })
                })
                .collect();
            let routes: Vec<Value> = t
                .routes()
                .iter()
                .map(|r| {
                    let other = r
                        .carrier_gateway_id()
                        .or(r.local_gateway_id())
                        .or(r.core_network_arn());
                    json!({
                        "destinationCidrBlock": r.destination_cidr_block(),
                        "destinationIpv6CidrBlock": r.destination_ipv6_cidr_block(),
                        "destinationPrefixListId": r.destination_prefix_list_id(),
                        "state": r.state().map(|s| s.as_str()),
                        "gatewayId": r.gateway_id(),
                        "natGatewayId": r.nat_gateway_id(),
                        "transitGatewayId": r.transit_gateway_id(),
                        "vpcPeeringConnectionId": r.vpc_peering_connection_id(),
                        "networkInterfaceId": r.network_interface_id(),
                        "instanceId": r.instance_id(),
                        "egressOnlyInternetGatewayId": r.egress_only_internet_gateway_id(),
                        "otherTarget": other,
                    })
                })
                .collect();
            out.push(json!({
                "routeTableId": t.route_table_id().unwrap_or_default(),
                "associations": associations,
                "routes": routes,
            }));
        }
    }
    Ok(Value::Array(out))
}

/// The VPC's NAT gateways, with their public addresses.
pub(super) async fn nat_gateways(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_nat_gateways()
        .filter(vpc_filter("vpc-id", vpc_id))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeNatGateways", e))?;
        out.extend(page.nat_gateways().iter().map(|n| {
            json!({
                "natGatewayId": n.nat_gateway_id().unwrap_or_default(),
                "state": n.state().map(|s| s.as_str()).unwrap_or_default(),
                // Absent before private NAT gateways existed: those were all public.
                "connectivityType": n.connectivity_type().map(|c| c.as_str()).unwrap_or("public"),
                "subnetId": n.subnet_id().unwrap_or_default(),
                "publicIps": n.nat_gateway_addresses().iter().filter_map(|a| a.public_ip()).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// The internet gateways attached to the VPC.
pub(super) async fn internet_gateways(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_internet_gateways()
        .filters(vpc_filter("attachment.vpc-id", vpc_id))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeInternetGateways", e))?;
        out.extend(page.internet_gateways().iter().map(|g| {
            json!({
                "internetGatewayId": g.internet_gateway_id().unwrap_or_default(),
                "attachments": g.attachments().iter().map(|a| json!({
                    "vpcId": a.vpc_id().unwrap_or_default(),
                    "state": a.state().map(|s| s.as_str()).unwrap_or_default(),
                })).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// The VPC's endpoints.
pub(super) async fn endpoints(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_vpc_endpoints()
        .filters(vpc_filter("vpc-id", vpc_id))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeVpcEndpoints", e))?;
        out.extend(page.vpc_endpoints().iter().map(|e| {
            json!({
                "vpcEndpointId": e.vpc_endpoint_id().unwrap_or_default(),
                "serviceName": e.service_name().unwrap_or_default(),
                "vpcEndpointType": e.vpc_endpoint_type().map(|t| t.as_str()).unwrap_or_default(),
                "state": e.state().map(|s| s.as_str().to_ascii_lowercase()).unwrap_or_default(),
                "privateDnsEnabled": e.private_dns_enabled().unwrap_or(false),
                "routeTableIds": e.route_table_ids(),
                "subnetIds": e.subnet_ids(),
                "groupIds": e.groups().iter().filter_map(|g| g.group_id()).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// The VPC's network ACLs with their entries and subnets.
pub(super) async fn network_acls(ec2: &Client, vpc_id: &str) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_network_acls()
        .filters(vpc_filter("vpc-id", vpc_id))
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeNetworkAcls", e))?;
        out.extend(page.network_acls().iter().map(|a| {
            json!({
                "networkAclId": a.network_acl_id().unwrap_or_default(),
                "isDefault": a.is_default().unwrap_or(false),
                "subnetIds": a.associations().iter().filter_map(|x| x.subnet_id()).collect::<Vec<_>>(),
                "entries": a.entries().iter().map(|e| json!({
                    "ruleNumber": e.rule_number().unwrap_or_default(),
                    "egress": e.egress().unwrap_or(false),
                    "ruleAction": e.rule_action().map(|r| r.as_str()).unwrap_or_default(),
                    "protocol": e.protocol().unwrap_or("-1"),
                    "fromPort": e.port_range().and_then(|p| p.from()),
                    "toPort": e.port_range().and_then(|p| p.to()),
                    "cidrBlock": e.cidr_block(),
                    "ipv6CidrBlock": e.ipv6_cidr_block(),
                })).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}
