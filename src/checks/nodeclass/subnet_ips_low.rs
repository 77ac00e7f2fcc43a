//! KD3009: a launch needs a free IPv4 address in the chosen subnet, and the VPC CNI takes more
//! for pods. Subnets close to exhaustion fail launches with InsufficientFreeAddressesInSubnet,
//! or leave pods in ContainerCreating, long before anything else looks wrong.

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::evidence::capped;
use crate::checks::common::nodeclass::object;
use crate::checks::common::selection::SUBNETS;
use crate::ec2;

declare_check! {
    pub static NODECLASS_SUBNET_IPS_LOW = {
        code: "KD3009",
        slug: "nodeclass-subnet-ips-low",
        title: "the subnets of every EC2NodeClass have free IPv4 addresses for nodes and pods",
        category: Nodeclass,
        severity: Warning,
        needs: [Ec2NodeClasses, Ec2Subnets, EksCluster, ControllerDeployments],
        self_managed: true,
        run: subnet_ips_low,
    }
}

/// Below this many free addresses a subnet is reported: a single node of a mid-size instance
/// type with the VPC CNI's default warm ENI takes 30 or more.
pub const LOW_FREE_IPS: i64 = 64;

async fn subnet_ips_low(cx: &CheckCx) -> CheckResult {
    let (classes, subnets, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.subnets(), cluster(cx)).await;
    let (classes, subnets, cluster) = (classes?, subnets?, cluster?);
    let vpc = cluster.vpc_id.clone().unwrap_or_default();
    let mut findings = Vec::new();
    for nc in classes.iter() {
        // A selector that cannot be read or selects nothing is KD3001's.
        let Ok(terms) = ec2::terms(nc, SUBNETS.field) else {
            continue;
        };
        let selected: Vec<_> = ec2::select_subnets(&terms, &subnets)
            .into_iter()
            .filter(|s| vpc.is_empty() || s.vpc_id == vpc)
            .collect();
        let low: Vec<_> = selected
            .iter()
            .filter(|s| s.available_ip_address_count < LOW_FREE_IPS)
            .collect();
        if low.is_empty() {
            continue;
        }
        let all_low = low.len() == selected.len();
        // A zone whose every selected subnet has no free address cannot launch at all: an
        // error now (InsufficientFreeAddressesInSubnet). Low but not empty is a warning: it
        // runs out on the next nodes or pods.
        let mut zones: Vec<&str> = selected.iter().map(|s| s.availability_zone.as_str()).collect();
        zones.sort();
        zones.dedup();
        let full: Vec<&str> = zones
            .into_iter()
            .filter(|z| {
                selected
                    .iter()
                    .filter(|s| s.availability_zone == *z)
                    .all(|s| s.available_ip_address_count <= 0)
            })
            .collect();
        let listed: Vec<String> = low
            .iter()
            .map(|s| {
                format!(
                    "{} ({}, {}): {} free",
                    s.subnet_id, s.availability_zone, s.cidr_block, s.available_ip_address_count
                )
            })
            .collect();
        let (severity, consequence) = if !full.is_empty() {
            (
                Severity::Error,
                format!(
                    ": no address is left in {}, so every launch there fails with InsufficientFreeAddressesInSubnet",
                    full.join(", ")
                ),
            )
        } else if all_low {
            (
                Severity::Warning,
                ": new nodes and pods will run out of addresses".to_string(),
            )
        } else {
            (Severity::Warning, String::new())
        };
        findings.push(Finding::new(
            object(nc),
            format!(
                "{} of {} selected subnet(s) have fewer than {LOW_FREE_IPS} free IPv4 addresses{consequence}",
                low.len(),
                selected.len(),
            ),
        )
        .severity(severity)
        .evidence("lowSubnets", capped(listed, 20))
        .hint("add larger subnets to the selector (tag them), enable VPC CNI prefix delegation, or spread NodePools over more zones"));
    }
    Ok(findings)
}
