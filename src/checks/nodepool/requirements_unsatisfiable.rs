//! KD4003: requirements that no instance type can meet in the subnets' zones with the AMIs'
//! architectures ("no instance type met the scheduling requirements or had a required
//! offering"). Karpenter only says the set is empty; this names the requirement that emptied it.

use crate::check::prelude::*;
use crate::checks::common::nodeclass::{ami_arches, subnet_zones};
use crate::checks::common::nodeclaim::pool_class;
use crate::model::{ControllerDeployment, NodePool};
use crate::requirements::{MinValuesShort, narrow};

declare_check! {
    pub static NODEPOOL_REQUIREMENTS_UNSATISFIABLE = {
        code: "KD4003",
        slug: "nodepool-requirements-unsatisfiable",
        title: "every NodePool's requirements match an instance type offered in its subnets' zones",
        category: Nodepool,
        severity: Error,
        needs: [NodePools, Ec2NodeClasses, Ec2InstanceTypes, Ec2InstanceTypeOfferings, ControllerDeployments],
        self_managed: true,
        run: requirements_unsatisfiable,
    }
}

async fn requirements_unsatisfiable(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let classes = cx.ec2_nodeclasses().await?;
    let mut findings = Vec::new();
    let mut types = None;
    for pool in pools.iter() {
        let Some(nc) = pool_class(pool, &classes) else {
            // KD4001 owns a reference to nothing.
            continue;
        };
        let zones = subnet_zones(nc);
        if zones.is_empty() {
            // No resolved subnets: KD3001 and KD3008 own that.
            continue;
        }
        let (types, offerings) = match &types {
            Some(t) => t,
            None => types.insert((
                cx.instance_types().await?,
                cx.instance_type_offerings().await?,
            )),
        };
        let requirements = &pool.spec.template.spec.requirements;
        let narrowing = narrow(types, offerings, &zones, requirements, &ami_arches(nc));
        let Some(culprit) = narrowing.emptied_by() else {
            for short in &narrowing.min_values_short {
                findings.push(min_values_finding(cx, pool, short).await?);
            }
            continue;
        };
        // Only the AMIs' architecture left nothing: KD3004 owns a NodePool without an AMI for
        // its architecture.
        if narrowing
            .steps
            .last()
            .is_some_and(|s| std::ptr::eq(s, culprit))
            && !ami_arches(nc).is_empty()
        {
            continue;
        }
        let steps: Vec<String> = narrowing
            .steps
            .iter()
            .map(|s| format!("{}: {} left", s.what, s.left))
            .collect();
        findings.push(
            Finding::new(
                pool.object(),
                format!(
                    "no instance type satisfies its requirements: none is left after {}",
                    culprit.what
                ),
            )
            .evidence("emptiedBy", culprit.what.clone())
            .evidence("narrowing", steps)
            .evidence("zones", zones.iter().cloned().collect::<Vec<_>>())
            .hint("relax or fix that requirement (for example arm64 needs Graviton families such as t4g, m7g, c7g; t3 is x86 only)")
            .fix(format!("kubectl get nodepool {} -o jsonpath='{{.spec.template.spec.requirements}}'", pool.name()))
            .fix("aws ec2 describe-instance-type-offerings --location-type availability-zone --region ${AWS_REGION} --filters Name=instance-type,Values=<type>".to_string()),
        );
    }
    Ok(findings)
}

/// A requirement's `minValues` that the launchable types cannot meet. With the default
/// `MIN_VALUES_POLICY=Strict` (and always before Karpenter 1.6, which added the setting)
/// Karpenter does not launch from the NodePool; with `BestEffort` it relaxes the minimum, so
/// launches are less diverse than asked (a warning).
async fn min_values_finding(
    cx: &CheckCx,
    pool: &NodePool,
    short: &MinValuesShort,
) -> Result<Finding, FactError> {
    let policy = cx.controller().await?.and_then(|(deployments, i)| {
        ControllerDeployment::new(&deployments[i])
            .env("MIN_VALUES_POLICY")
            .map(str::to_string)
    });
    let best_effort = policy.as_deref() == Some("BestEffort");
    let effect = if best_effort {
        "MIN_VALUES_POLICY is BestEffort, so Karpenter relaxes the minimum and launches from fewer choices than asked"
    } else {
        "Karpenter does not launch from this NodePool (MIN_VALUES_POLICY Strict, the default): pods wait or fall to another NodePool"
    };
    let finding = Finding::new(
        pool.object(),
        format!(
            "{} asks for at least {} distinct values (minValues) but the instance types it can launch have {}: {effect}",
            short.key,
            short.min,
            short.values.len()
        ),
    )
    .severity(if best_effort {
        Severity::Warning
    } else {
        Severity::Error
    })
    .evidence("key", short.key.clone())
    .evidence("minValues", short.min)
    .evidence("values", short.values.clone())
    .evidence("minValuesPolicy", policy.unwrap_or_else(|| "Strict (default)".to_string()))
    .hint(format!(
        "lower minValues on {} to at most {}, or widen the NodePool's other requirements so more values qualify",
        short.key,
        short.values.len()
    ))
    .fix(format!(
        "kubectl get nodepool {} -o jsonpath='{{.spec.template.spec.requirements}}'",
        pool.name()
    ));
    Ok(finding)
}

