//! EC2 facts: subnets, security groups, images, instances, instance types and their offerings,
//! and the account's EBS defaults.

use aws_sdk_ec2::Client;
use serde_json::{Value, json};

use super::errors::aws_error;
use crate::facts::{Ec2Filter, FactError};

/// Every subnet of the region.
pub(super) async fn subnets(ec2: &Client) -> Result<Value, FactError> {
    let mut pages = ec2.describe_subnets().into_paginator().send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeSubnets", e))?;
        out.extend(page.subnets().iter().map(|s| {
            json!({
                "subnetId": s.subnet_id().unwrap_or_default(),
                "vpcId": s.vpc_id().unwrap_or_default(),
                "availabilityZone": s.availability_zone().unwrap_or_default(),
                "availabilityZoneId": s.availability_zone_id().unwrap_or_default(),
                "cidrBlock": s.cidr_block().unwrap_or_default(),
                "availableIpAddressCount": s.available_ip_address_count().unwrap_or_default(),
                "tags": ec2_tags(s.tags()),
                "mapPublicIpOnLaunch": s.map_public_ip_on_launch(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// Every security group of the region.
pub(super) async fn security_groups(ec2: &Client) -> Result<Value, FactError> {
    let mut pages = ec2.describe_security_groups().into_paginator().send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeSecurityGroups", e))?;
        out.extend(page.security_groups().iter().map(|g| {
            json!({
                "groupId": g.group_id().unwrap_or_default(),
                "groupName": g.group_name().unwrap_or_default(),
                "vpcId": g.vpc_id().unwrap_or_default(),
                "tags": ec2_tags(g.tags()),
                "ipPermissions": g.ip_permissions().iter().map(sg_permission).collect::<Vec<_>>(),
                "ipPermissionsEgress": g.ip_permissions_egress().iter().map(sg_permission).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// One rule of a security group, flattened to what the network checks read (`sgr-` ids are not
/// needed: findings name the group and the port).
fn sg_permission(p: &aws_sdk_ec2::types::IpPermission) -> Value {
    json!({
        "ipProtocol": p.ip_protocol().unwrap_or("-1"),
        "fromPort": p.from_port(),
        "toPort": p.to_port(),
        "ipRanges": p.ip_ranges().iter().filter_map(|r| r.cidr_ip()).collect::<Vec<_>>(),
        "ipv6Ranges": p.ipv6_ranges().iter().filter_map(|r| r.cidr_ipv6()).collect::<Vec<_>>(),
        "prefixListIds": p.prefix_list_ids().iter().filter_map(|r| r.prefix_list_id()).collect::<Vec<_>>(),
        "groups": p.user_id_group_pairs().iter().map(|g| json!({
            "groupId": g.group_id().unwrap_or_default(),
            "userId": g.user_id(),
            "vpcPeeringConnectionId": g.vpc_peering_connection_id(),
        })).collect::<Vec<_>>(),
    })
}

/// `ec2:DescribeImages` as Karpenter queries one AMI selector term.
pub(super) async fn images(
    ec2: &Client,
    filters: &[Ec2Filter],
    owners: &[String],
) -> Result<Value, FactError> {
    use aws_sdk_ec2::types::Filter;
    let filters = filters
        .iter()
        .map(|f| {
            Filter::builder()
                .name(&f.name)
                .set_values(Some(f.values.clone()))
                .build()
        })
        .collect();
    let mut pages = ec2
        .describe_images()
        .set_filters(Some(filters))
        .set_owners((!owners.is_empty()).then(|| owners.to_vec()))
        // Karpenter still uses a deprecated image when nothing newer matches.
        .include_deprecated(true)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeImages", e))?;
        out.extend(page.images().iter().map(|i| {
            json!({
                "imageId": i.image_id().unwrap_or_default(),
                "name": i.name().unwrap_or_default(),
                "architecture": i.architecture().map(|a| a.as_str().to_string()).unwrap_or_default(),
                "state": i.state().map(|a| a.as_str().to_string()).unwrap_or_default(),
                "ownerId": i.owner_id().unwrap_or_default(),
                "creationDate": i.creation_date(),
                "deprecationTime": i.deprecation_time(),
                "tags": ec2_tags(i.tags()),
                "blockDevices": i.block_device_mappings().iter().filter_map(|m| {
                    let ebs = m.ebs()?;
                    Some(json!({
                        "deviceName": m.device_name(),
                        "snapshotId": ebs.snapshot_id(),
                        "encrypted": ebs.encrypted(),
                    }))
                }).collect::<Vec<_>>(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// Every instance type of the region, in name order.
pub(super) async fn instance_types(ec2: &Client) -> Result<Value, FactError> {
    // A large region lists about a thousand types or more (the emulator's us-west-2: 14 pages)
    // and a page holds at most 100, each page waiting for the one before: as one list this is
    // the longest chain of requests in a run. Disjoint name slices, listed side by side, take
    // three pages at most.
    let slices = instance_type_slices()
        .into_iter()
        .map(|patterns| instance_type_slice(ec2, patterns));
    // One list in name order, each type once whatever the slices returned.
    let mut by_name = std::collections::BTreeMap::new();
    for t in futures::future::try_join_all(slices)
        .await?
        .into_iter()
        .flatten()
    {
        by_name.insert(
            t["instanceType"].as_str().unwrap_or_default().to_string(),
            t,
        );
    }
    Ok(Value::Array(by_name.into_values().collect()))
}

/// The instance types whose names match one slice's patterns, every page.
async fn instance_type_slice(ec2: &Client, patterns: Vec<String>) -> Result<Vec<Value>, FactError> {
    use aws_sdk_ec2::types::Filter;
    let filter = Filter::builder()
        .name("instance-type")
        .set_values(Some(patterns))
        .build();
    let mut pages = ec2
        .describe_instance_types()
        .filters(filter)
        .max_results(100)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeInstanceTypes", e))?;
        out.extend(page.instance_types().iter().map(instance_type_json));
    }
    Ok(out)
}

/// The fields of one instance type that karpdoctor reads.
fn instance_type_json(t: &aws_sdk_ec2::types::InstanceTypeInfo) -> Value {
    json!({
        "instanceType": t.instance_type().map(|x| x.as_str().to_string()).unwrap_or_default(),
        "architectures": t.processor_info().map(|p| p.supported_architectures().iter().map(|a| a.as_str().to_string()).collect::<Vec<_>>()).unwrap_or_default(),
        "vcpus": t.v_cpu_info().and_then(|v| v.default_v_cpus()).unwrap_or_default(),
        "memoryMib": t.memory_info().and_then(|m| m.size_in_mib()).unwrap_or_default(),
        "gpus": t.gpu_info().map(|g| g.gpus().iter().filter_map(|d| d.count()).sum::<i32>()).unwrap_or_default(),
        "accelerators": accelerators(t),
        "usageClasses": t.supported_usage_classes().iter().map(|u| u.as_str().to_string()).collect::<Vec<_>>(),
        "hypervisor": t.hypervisor().map(|h| h.as_str().to_string()).unwrap_or_default(),
        "bareMetal": t.bare_metal().unwrap_or(false),
        "maxEnis": default_card_enis(t),
        "ipv4PerEni": t.network_info().and_then(|n| n.ipv4_addresses_per_interface()),
    })
}

/// Accelerators counted as Karpenter 1.1+ does (`computeCapacity`): GPUs per manufacturer,
/// Neuron devices, and cores as the first device entry's count times its cores.
fn accelerators(t: &aws_sdk_ec2::types::InstanceTypeInfo) -> Value {
    let gpus = t.gpu_info().map(|g| g.gpus()).unwrap_or_default();
    let by_maker = |maker: &str| -> i32 {
        gpus.iter()
            .filter(|g| g.manufacturer() == Some(maker))
            .filter_map(|g| g.count())
            .sum()
    };
    let neuron = t
        .neuron_info()
        .map(|n| n.neuron_devices())
        .unwrap_or_default();
    let cores = neuron
        .first()
        .map(|d| d.count().unwrap_or(0) * d.core_info().and_then(|c| c.count()).unwrap_or(0))
        .unwrap_or(0);
    json!({
        "nvidiaGpus": by_maker("NVIDIA"),
        "amdGpus": by_maker("AMD"),
        "habanaGaudis": by_maker("Habana"),
        "neuronDevices": neuron.iter().filter_map(|d| d.count()).sum::<i32>(),
        "neuronCores": cores,
        "gpuEntries": gpus.len(),
    })
}

/// The interfaces of the default network card (the VPC CNI attaches its ENIs there), else
/// the type's total for types that describe no cards.
fn default_card_enis(t: &aws_sdk_ec2::types::InstanceTypeInfo) -> Option<i32> {
    let net = t.network_info()?;
    let index = net.default_network_card_index().unwrap_or(0);
    net.network_cards()
        .iter()
        .find(|c| c.network_card_index() == Some(index))
        .and_then(|c| c.maximum_network_interfaces())
        .or(net.maximum_network_interfaces())
}

/// Which instance types are offered in which availability zone.
pub(super) async fn instance_type_offerings(ec2: &Client) -> Result<Value, FactError> {
    let mut pages = ec2
        .describe_instance_type_offerings()
        .location_type(aws_sdk_ec2::types::LocationType::AvailabilityZone)
        .max_results(1000)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeInstanceTypeOfferings", e))?;
        out.extend(page.instance_type_offerings().iter().map(|o| {
            json!({
                "instanceType": o.instance_type().map(|x| x.as_str().to_string()).unwrap_or_default(),
                "zone": o.location().unwrap_or_default(),
            })
        }));
    }
    Ok(Value::Array(out))
}

/// The account's EBS defaults in the region: encryption by default and the default key.
pub(super) async fn ebs_defaults(ec2: &Client) -> Result<Value, FactError> {
    let (by_default, key) = futures::future::join(
        ec2.get_ebs_encryption_by_default().send(),
        ec2.get_ebs_default_kms_key_id().send(),
    )
    .await;
    let by_default = by_default.map_err(|e| aws_error("ec2:GetEbsEncryptionByDefault", e))?;
    let key = key.map_err(|e| aws_error("ec2:GetEbsDefaultKmsKeyId", e))?;
    Ok(json!({
        "encryptedByDefault": by_default.ebs_encryption_by_default().unwrap_or(false),
        "defaultKmsKeyId": key.kms_key_id().unwrap_or("alias/aws/ebs"),
    }))
}

/// Characters EC2 instance type names are made of.
const TYPE_NAME_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789-.";

/// `instance-type` filter values (wildcards) that split every possible type name into disjoint
/// slices of a few hundred types, so the list can be read as concurrent short chains of pages.
/// The big families (c, m, r: about three quarters of a region) get two slices each, by
/// generation 8 and the rest; the other first letters share two slices.
fn instance_type_slices() -> Vec<Vec<String>> {
    let mut slices = Vec::new();
    for family in ['c', 'm', 'r'] {
        slices.push(vec![format!("{family}8*")]);
        slices.push(
            TYPE_NAME_CHARS
                .chars()
                .filter(|c| *c != '8')
                .map(|c| format!("{family}{c}*"))
                .collect(),
        );
    }
    let (some, others): (Vec<char>, Vec<char>) = TYPE_NAME_CHARS
        .chars()
        .filter(|c| !matches!(c, 'c' | 'm' | 'r'))
        .partition(|c| matches!(c, 'i' | 'x' | 'g'));
    for letters in [some, others] {
        slices.push(letters.iter().map(|c| format!("{c}*")).collect());
    }
    slices
}

/// EC2 tags as a map (keys are unique per resource).
fn ec2_tags(tags: &[aws_sdk_ec2::types::Tag]) -> serde_json::Map<String, Value> {
    tags.iter()
        .filter_map(|t| Some((t.key()?.to_string(), json!(t.value().unwrap_or_default()))))
        .collect()
}

/// The snapshots of `ids` the account may see, by a filter: an id it may not see (a snapshot
/// of another account's AMI that was not shared with it) is left out instead of failing the
/// call.
pub(super) async fn snapshots(ec2: &Client, ids: &[String]) -> Result<Value, FactError> {
    use aws_sdk_ec2::types::Filter;
    let filter = Filter::builder()
        .name("snapshot-id")
        .set_values(Some(ids.to_vec()))
        .build();
    let mut pages = ec2
        .describe_snapshots()
        .filters(filter)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeSnapshots", e))?;
        for s in page.snapshots() {
            out.push(json!({
                "snapshotId": s.snapshot_id(),
                "encrypted": s.encrypted(),
                "kmsKeyId": s.kms_key_id(),
                "ownerId": s.owner_id(),
            }));
        }
    }
    Ok(Value::Array(out))
}

/// The instances of `ids` that exist, by a filter: an id EC2 no longer knows (an instance
/// terminated more than about an hour ago) is left out instead of failing the whole call, as
/// `InstanceIds` would.
pub(super) async fn instances(ec2: &Client, ids: &[String]) -> Result<Value, FactError> {
    use aws_sdk_ec2::types::Filter;
    let filter = Filter::builder()
        .name("instance-id")
        .set_values(Some(ids.to_vec()))
        .build();
    let mut pages = ec2
        .describe_instances()
        .filters(filter)
        .into_paginator()
        .send();
    let mut out = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("ec2:DescribeInstances", e))?;
        for i in page.reservations().iter().flat_map(|r| r.instances()) {
            out.push(json!({
                "instanceId": i.instance_id(),
                "state": i.state().and_then(|s| s.name()).map(|n| n.as_str().to_string()),
                "stateReasonCode": i.state_reason().and_then(|r| r.code()),
                "stateReasonMessage": i.state_reason().and_then(|r| r.message()),
                "launchTime": i.launch_time().map(|t| t.to_string()),
            }));
        }
    }
    Ok(Value::Array(out))
}

/// An instance's latest console output, decoded and scrubbed; `null` when the instance is gone
/// or has printed nothing. Instance types that cannot give the latest output refuse `Latest`:
/// then the last output captured is read instead.
pub(super) async fn console_output(ec2: &Client, instance_id: &str) -> Result<Value, FactError> {
    use aws_sdk_ec2::error::ProvideErrorMetadata;
    use base64::Engine as _;
    let gone = |e: &aws_sdk_ec2::operation::get_console_output::GetConsoleOutputError| {
        matches!(
            e.code(),
            Some("InvalidInstanceID.NotFound" | "InvalidInstanceID.Malformed")
        )
    };
    let action = "ec2:GetConsoleOutput";
    let latest = ec2
        .get_console_output()
        .instance_id(instance_id)
        .latest(true)
        .send()
        .await;
    let out = match latest {
        Err(aws_sdk_ec2::error::SdkError::ServiceError(e))
            if e.err().code() == Some("UnsupportedOperation") =>
        {
            let res = ec2
                .get_console_output()
                .instance_id(instance_id)
                .send()
                .await;
            super::errors::absent_as_none(action, res, gone)?
        }
        res => super::errors::absent_as_none(action, res, gone)?,
    };
    let Some(encoded) = out.as_ref().and_then(|o| o.output()) else {
        return Ok(Value::Null);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| FactError::Malformed {
            message: format!("{action}: the output is not base64: {e}"),
        })?;
    Ok(Value::String(crate::console::scrub(
        &String::from_utf8_lossy(&bytes),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_type_slices_cover_every_name_exactly_once() {
        let slices = instance_type_slices();
        assert!(
            slices.len() <= 8,
            "one EC2 concurrency limit's worth of lists"
        );
        for a in TYPE_NAME_CHARS.chars() {
            for b in TYPE_NAME_CHARS.chars() {
                let name = format!("{a}{b}x.large");
                let hits = slices
                    .iter()
                    .filter(|patterns| {
                        patterns
                            .iter()
                            .any(|p| name.starts_with(p.trim_end_matches('*')))
                    })
                    .count();
                assert_eq!(hits, 1, "{name}");
            }
        }
        assert!(slices.iter().flatten().all(|p| p.ends_with('*')));
    }
}
