//! Seeding the emulator's EC2 side: security groups and their rules, the network (VPCs,
//! subnets, route tables, endpoints, ACLs) and the EC2 objects a bundle names.

/// EC2 state of a bundle: VPCs (a /16 around their subnets), subnets, security groups and
/// images, with the recorded ids pinned through karpmoto's `karpmoto:id` tag.
/// A fixture group's rules, as `AuthorizeSecurityGroupIngress`/`Egress` add them. EC2 gives a
/// new group one outbound rule (all traffic to 0.0.0.0/0); it is revoked first when the
/// fixture's outbound rules differ.
async fn seed_rules(ec2: &aws_sdk_ec2::Client, g: &serde_json::Value) {
    use aws_sdk_ec2::types::{IpPermission, IpRange, UserIdGroupPair};
    let id = g["groupId"].as_str().unwrap();
    let permission = |p: &serde_json::Value| {
        let mut b = IpPermission::builder()
            .ip_protocol(p["ipProtocol"].as_str().unwrap_or("-1"))
            .set_from_port(p["fromPort"].as_i64().map(|n| n as i32))
            .set_to_port(p["toPort"].as_i64().map(|n| n as i32));
        for c in p["ipRanges"].as_array().into_iter().flatten() {
            b = b.ip_ranges(IpRange::builder().cidr_ip(c.as_str().unwrap()).build());
        }
        for r in p["groups"].as_array().into_iter().flatten() {
            b = b.user_id_group_pairs(
                UserIdGroupPair::builder()
                    .group_id(r["groupId"].as_str().unwrap())
                    .build(),
            );
        }
        b.build()
    };
    let inbound: Vec<_> = g["ipPermissions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(permission)
        .collect();
    if !inbound.is_empty() {
        ec2.authorize_security_group_ingress()
            .group_id(id)
            .set_ip_permissions(Some(inbound))
            .send()
            .await
            .unwrap();
    }
    let Some(outbound) = g["ipPermissionsEgress"].as_array() else {
        return;
    };
    let all_out = serde_json::json!([{"ipProtocol": "-1", "fromPort": null, "toPort": null,
        "ipRanges": ["0.0.0.0/0"], "ipv6Ranges": [], "prefixListIds": [], "groups": []}]);
    if outbound == all_out.as_array().unwrap() {
        return;
    }
    ec2.revoke_security_group_egress()
        .group_id(id)
        .ip_permissions(permission(&all_out[0]))
        .send()
        .await
        .unwrap();
    let outbound: Vec<_> = outbound.iter().map(permission).collect();
    if !outbound.is_empty() {
        ec2.authorize_security_group_egress()
            .group_id(id)
            .set_ip_permissions(Some(outbound))
            .send()
            .await
            .unwrap();
    }
}

/// The items of a fact keyed by a VPC id (`{"ec2RouteTables": {"vpcId": …}}` and the like).
fn keyed(facts: &[serde_json::Value], kind: &str, vpc: &str) -> Vec<serde_json::Value> {
    facts
        .iter()
        .filter(|f| f["fact"][kind]["vpcId"] == vpc)
        .filter_map(|f| f["value"].as_array().cloned())
        .flatten()
        .collect()
}

/// A fixture VPC's network as EC2 builds it: DNS attributes, internet gateways attached, NAT
/// gateways on their Elastic IPs, route tables with their subnets and routes, endpoints; every
/// id pinned to the fixture's.
async fn seed_network(
    ec2: &aws_sdk_ec2::Client,
    facts: &[serde_json::Value],
    vpcs: &std::collections::BTreeMap<String, String>,
) {
    use aws_sdk_ec2::types::{
        AttributeBooleanValue, ConnectivityType, DomainType, ResourceType, Tag, TagSpecification,
        VpcEndpointType,
    };
    let pin = |kind: ResourceType, id: &str| {
        TagSpecification::builder()
            .resource_type(kind)
            .tags(Tag::builder().key("karpmoto:id").value(id).build())
            .build()
    };
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let on = |v: bool| AttributeBooleanValue::builder().value(v).build();
    for vpc in vpcs.keys() {
        for f in facts
            .iter()
            .filter(|f| f["fact"]["ec2VpcAttributes"]["vpcId"] == vpc.as_str())
        {
            let v = &f["value"];
            if v.is_null() {
                continue;
            }
            // EC2 takes one attribute per call.
            for (name, value) in [
                ("enableDnsSupport", &v["enableDnsSupport"]),
                ("enableDnsHostnames", &v["enableDnsHostnames"]),
            ] {
                let call = ec2.modify_vpc_attribute().vpc_id(vpc);
                let call = match name {
                    "enableDnsSupport" => call.enable_dns_support(on(value == true)),
                    _ => call.enable_dns_hostnames(on(value == true)),
                };
                call.send().await.unwrap();
            }
        }
        for g in keyed(facts, "ec2InternetGateways", vpc) {
            let id = g["internetGatewayId"].as_str().unwrap();
            ec2.create_internet_gateway()
                .tag_specifications(pin(ResourceType::InternetGateway, id))
                .send()
                .await
                .unwrap();
            ec2.attach_internet_gateway()
                .internet_gateway_id(id)
                .vpc_id(vpc)
                .send()
                .await
                .unwrap();
        }
        for n in keyed(facts, "ec2NatGateways", vpc) {
            let id = n["natGatewayId"].as_str().unwrap();
            let private = n["connectivityType"] == "private";
            let mut create = ec2
                .create_nat_gateway()
                .subnet_id(n["subnetId"].as_str().unwrap())
                .tag_specifications(pin(ResourceType::Natgateway, id));
            if private {
                create = create.connectivity_type(ConnectivityType::Private);
            } else if let Some(ip) = n["publicIps"][0].as_str() {
                let eip = ec2
                    .allocate_address()
                    .domain(DomainType::Vpc)
                    .address(ip)
                    .send()
                    .await
                    .unwrap();
                create = create.set_allocation_id(eip.allocation_id().map(str::to_string));
            }
            create.send().await.unwrap();
        }
        for t in keyed(facts, "ec2RouteTables", vpc) {
            let id = t["routeTableId"].as_str().unwrap();
            let associations = t["associations"].as_array().cloned().unwrap_or_default();
            if !associations.iter().any(|a| a["main"] == true) {
                ec2.create_route_table()
                    .vpc_id(vpc)
                    .tag_specifications(pin(ResourceType::RouteTable, id))
                    .send()
                    .await
                    .unwrap();
            }
            for a in associations.iter().filter(|a| a["subnetId"].is_string()) {
                ec2.associate_route_table()
                    .route_table_id(id)
                    .subnet_id(a["subnetId"].as_str().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
            for r in t["routes"].as_array().into_iter().flatten() {
                if r["gatewayId"] == "local" {
                    continue;
                }
                ec2.create_route()
                    .route_table_id(id)
                    .set_destination_cidr_block(text(&r["destinationCidrBlock"]))
                    .set_gateway_id(text(&r["gatewayId"]))
                    .set_nat_gateway_id(text(&r["natGatewayId"]))
                    .set_transit_gateway_id(text(&r["transitGatewayId"]))
                    .set_vpc_peering_connection_id(text(&r["vpcPeeringConnectionId"]))
                    .set_network_interface_id(text(&r["networkInterfaceId"]))
                    .send()
                    .await
                    .unwrap();
            }
        }
        // Network ACLs other than the default (whose entries CreateVpc makes): their entries
        // (EC2 adds the final deny itself), then the subnets moved onto them.
        for a in keyed(facts, "ec2NetworkAcls", vpc) {
            if a["isDefault"] == true {
                continue;
            }
            let id = a["networkAclId"].as_str().unwrap();
            ec2.create_network_acl()
                .vpc_id(vpc)
                .tag_specifications(pin(ResourceType::NetworkAcl, id))
                .send()
                .await
                .unwrap();
            for e in a["entries"].as_array().into_iter().flatten() {
                if e["ruleNumber"] == 32767 {
                    continue;
                }
                let mut entry = ec2
                    .create_network_acl_entry()
                    .network_acl_id(id)
                    .rule_number(e["ruleNumber"].as_i64().unwrap() as i32)
                    .protocol(e["protocol"].as_str().unwrap())
                    .rule_action(aws_sdk_ec2::types::RuleAction::from(
                        e["ruleAction"].as_str().unwrap(),
                    ))
                    .egress(e["egress"] == true)
                    .set_cidr_block(text(&e["cidrBlock"]));
                if let (Some(from), Some(to)) = (e["fromPort"].as_i64(), e["toPort"].as_i64()) {
                    entry = entry.port_range(
                        aws_sdk_ec2::types::PortRange::builder()
                            .from(from as i32)
                            .to(to as i32)
                            .build(),
                    );
                }
                entry.send().await.unwrap();
            }
            for subnet in a["subnetIds"].as_array().into_iter().flatten() {
                let subnet = subnet.as_str().unwrap();
                let current = ec2
                    .describe_network_acls()
                    .filters(
                        aws_sdk_ec2::types::Filter::builder()
                            .name("association.subnet-id")
                            .values(subnet)
                            .build(),
                    )
                    .send()
                    .await
                    .unwrap();
                let association = current
                    .network_acls()
                    .iter()
                    .flat_map(|acl| acl.associations())
                    .find(|x| x.subnet_id() == Some(subnet))
                    .and_then(|x| x.network_acl_association_id())
                    .unwrap()
                    .to_string();
                ec2.replace_network_acl_association()
                    .association_id(association)
                    .network_acl_id(id)
                    .send()
                    .await
                    .unwrap();
            }
        }
        for e in keyed(facts, "ec2VpcEndpoints", vpc) {
            let strings = |field: &str| -> Option<Vec<String>> {
                let items: Vec<String> = e[field]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                (!items.is_empty()).then_some(items)
            };
            let kind = VpcEndpointType::from(e["vpcEndpointType"].as_str().unwrap());
            let mut create = ec2
                .create_vpc_endpoint()
                .vpc_id(vpc)
                .service_name(e["serviceName"].as_str().unwrap())
                .set_route_table_ids(strings("routeTableIds"))
                .set_subnet_ids(strings("subnetIds"))
                .set_security_group_ids(strings("groupIds"))
                .tag_specifications(pin(
                    ResourceType::VpcEndpoint,
                    e["vpcEndpointId"].as_str().unwrap(),
                ));
            if kind == VpcEndpointType::Interface {
                create = create.private_dns_enabled(e["privateDnsEnabled"] == true);
            }
            create.vpc_endpoint_type(kind).send().await.unwrap();
        }
    }
}

pub(super) async fn seed_ec2(conf: &aws_config::SdkConfig, facts: &[serde_json::Value]) {
    use aws_sdk_ec2::types::{ArchitectureValues, ResourceType, Tag, TagSpecification};
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let spec = |kind: ResourceType, id: &str, tags: &serde_json::Value| {
        let mut b = TagSpecification::builder()
            .resource_type(kind)
            .tags(Tag::builder().key("karpmoto:id").value(id).build());
        for (k, v) in tags.as_object().into_iter().flatten() {
            b = b.tags(
                Tag::builder()
                    .key(k)
                    .value(v.as_str().unwrap_or_default())
                    .build(),
            );
        }
        b.build()
    };
    let listed = |name: &str| -> Vec<serde_json::Value> {
        facts
            .iter()
            .filter(|f| f["fact"] == name)
            .filter_map(|f| f["value"].as_array().cloned())
            .flatten()
            .collect()
    };
    let (subnets, groups) = (listed("ec2Subnets"), listed("ec2SecurityGroups"));
    let mut vpcs = std::collections::BTreeMap::new();
    for s in &subnets {
        let cidr = s["cidrBlock"].as_str().unwrap();
        let octets: Vec<&str> = cidr.split('.').collect();
        vpcs.entry(s["vpcId"].as_str().unwrap().to_string())
            .or_insert_with(|| format!("{}.{}.0.0/16", octets[0], octets[1]));
    }
    for (i, g) in groups.iter().enumerate() {
        vpcs.entry(g["vpcId"].as_str().unwrap().to_string())
            .or_insert_with(|| format!("10.{}.0.0/16", 100 + i));
    }
    for (id, cidr) in &vpcs {
        // The main route table CreateVpc makes gets the fixture's id.
        let mut tags = serde_json::Map::new();
        for t in keyed(facts, "ec2RouteTables", id) {
            if t["associations"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["main"] == true)
            {
                tags.insert(
                    "karpmoto:main-route-table-id".into(),
                    t["routeTableId"].clone(),
                );
            }
        }
        // And its default network ACL.
        for a in keyed(facts, "ec2NetworkAcls", id) {
            if a["isDefault"] == true {
                tags.insert(
                    "karpmoto:default-network-acl-id".into(),
                    a["networkAclId"].clone(),
                );
            }
        }
        ec2.create_vpc()
            .cidr_block(cidr)
            .tag_specifications(spec(
                ResourceType::Vpc,
                id,
                &serde_json::Value::Object(tags),
            ))
            .send()
            .await
            .unwrap();
    }
    for s in &subnets {
        ec2.create_subnet()
            .vpc_id(s["vpcId"].as_str().unwrap())
            .cidr_block(s["cidrBlock"].as_str().unwrap())
            .availability_zone(s["availabilityZone"].as_str().unwrap())
            .tag_specifications(spec(
                ResourceType::Subnet,
                s["subnetId"].as_str().unwrap(),
                &s["tags"],
            ))
            .send()
            .await
            .unwrap();
    }
    for g in &groups {
        ec2.create_security_group()
            .vpc_id(g["vpcId"].as_str().unwrap())
            .group_name(g["groupName"].as_str().unwrap())
            .description("seeded from a karpdoctor fixture")
            .tag_specifications(spec(
                ResourceType::SecurityGroup,
                g["groupId"].as_str().unwrap(),
                &g["tags"],
            ))
            .send()
            .await
            .unwrap();
    }
    // Rules after every group exists: a rule may name another group.
    for g in &groups {
        seed_rules(&ec2, g).await;
    }
    seed_network(&ec2, facts, &vpcs).await;
    for s in subnets.iter().filter(|s| s["mapPublicIpOnLaunch"] == true) {
        ec2.modify_subnet_attribute()
            .subnet_id(s["subnetId"].as_str().unwrap())
            .map_public_ip_on_launch(
                aws_sdk_ec2::types::AttributeBooleanValue::builder()
                    .value(true)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in facts
        .iter()
        .filter(|f| f["fact"].get("ec2Images").is_some())
    {
        for i in f["value"].as_array().into_iter().flatten() {
            let id = i["imageId"].as_str().unwrap();
            if !seen.insert(id.to_string()) {
                continue;
            }
            let mut tags = i["tags"].clone();
            let extra = tags.as_object_mut().unwrap();
            extra.insert("karpmoto:owner".into(), i["ownerId"].clone());
            if let Some(t) = i["deprecationTime"].as_str() {
                extra.insert("karpmoto:deprecation-time".into(), t.into());
            }
            if let Some(t) = i["creationDate"].as_str() {
                extra.insert("karpmoto:creation-date".into(), t.into());
            }
            // The image's encrypted snapshots, made as EC2 makes them: a volume encrypted
            // with the snapshot's key (from the fixture's `ec2Snapshots`), snapshotted under
            // its recorded id.
            let mut mappings = Vec::new();
            for d in i["blockDevices"].as_array().into_iter().flatten() {
                let (Some(device), Some(snapshot)) =
                    (d["deviceName"].as_str(), d["snapshotId"].as_str())
                else {
                    continue;
                };
                let Some(recorded) = facts
                    .iter()
                    .filter(|f| f["fact"].get("ec2Snapshots").is_some())
                    .flat_map(|f| f["value"].as_array().into_iter().flatten())
                    .find(|s| s["snapshotId"] == snapshot)
                else {
                    continue;
                };
                let volume = ec2
                    .create_volume()
                    .availability_zone("us-west-2a")
                    .size(20)
                    .encrypted(recorded["encrypted"] == true)
                    .set_kms_key_id(recorded["kmsKeyId"].as_str().map(str::to_string))
                    .send()
                    .await
                    .unwrap();
                ec2.create_snapshot()
                    .volume_id(volume.volume_id().unwrap())
                    .tag_specifications(spec(
                        ResourceType::Snapshot,
                        snapshot,
                        &serde_json::json!({}),
                    ))
                    .send()
                    .await
                    .unwrap();
                mappings.push(
                    aws_sdk_ec2::types::BlockDeviceMapping::builder()
                        .device_name(device)
                        .ebs(
                            aws_sdk_ec2::types::EbsBlockDevice::builder()
                                .snapshot_id(snapshot)
                                .volume_type(aws_sdk_ec2::types::VolumeType::Gp3)
                                .volume_size(20)
                                .build(),
                        )
                        .build(),
                );
            }
            let root = mappings
                .first()
                .and_then(|m| m.device_name().map(str::to_string));
            ec2.register_image()
                .name(i["name"].as_str().unwrap())
                .architecture(ArchitectureValues::from(
                    i["architecture"].as_str().unwrap(),
                ))
                .set_root_device_name(root)
                .set_block_device_mappings((!mappings.is_empty()).then_some(mappings))
                .tag_specifications(spec(ResourceType::Image, id, &tags))
                .send()
                .await
                .unwrap();
        }
    }
}
