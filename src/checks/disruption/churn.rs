//! KD4103: nodes replaced far more often than their NodePool intends, as far as one snapshot
//! shows it: replacements that drift for their security groups minutes after launch (something
//! outside Karpenter changes them, so every replacement drifts again), and consolidation that
//! removes nodes minutes after launching them under a `consolidateAfter` shorter than their pods
//! take to settle; and an `@latest` alias in a pool whose budgets leave drift unlimited, so each
//! AMI release replaces the whole pool within minutes (rules: docs/disruption.md §2, §6).

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::{object, pool_class, pool_of};
use crate::disruption::churn::{
    CONSOLIDATED_SOON_MINUTES, DRIFT_SOON_MINUTES, consolidate_after_underutilized,
    consolidated_soon, security_groups_drifted_soon,
};
use crate::disruption::budgets::drift_unlimited;
use crate::ec2::{AmiTerm, ami_terms};
use crate::model::{NodeClaim, NodePool};

declare_check! {
    pub static DISRUPTION_CHURN = {
        code: "KD4103",
        slug: "disruption-churn",
        title: "Karpenter replaces nodes no more often than the NodePool intends",
        category: Disruption,
        severity: Warning,
        needs: [NodePools, NodeClaims, Ec2NodeClasses],
        run: disruption_churn,
    }
}

/// A replacement that drifted for its security groups within minutes: one could be an
/// EC2NodeClass edited right after a launch; two in a pool are a loop.
const LOOP_CLAIMS: usize = 2;

fn instance_id(claim: &NodeClaim) -> Option<&str> {
    claim.status.provider_id.as_deref()?.rsplit('/').next()
}

async fn disruption_churn(cx: &CheckCx) -> CheckResult {
    let (pools, claims) = futures::try_join!(cx.nodepools(), cx.nodeclaims())?;
    let mut drifting: BTreeMap<&str, Vec<(&NodeClaim, i64)>> = BTreeMap::new();
    let mut consolidated: BTreeMap<&str, Vec<(&NodeClaim, i64)>> = BTreeMap::new();
    for claim in claims.iter() {
        if let Some(m) = security_groups_drifted_soon(claim) {
            drifting.entry(pool_of(claim)).or_default().push((claim, m));
        }
        if let Some(m) = consolidated_soon(claim) {
            consolidated.entry(pool_of(claim)).or_default().push((claim, m));
        }
    }
    let mut out = Vec::new();
    let loops: Vec<_> = drifting
        .into_iter()
        .filter(|(_, cs)| cs.len() >= LOOP_CLAIMS)
        .collect();
    if !loops.is_empty() {
        let classes = cx.ec2_nodeclasses().await?;
        for (pool, cs) in loops {
            let class_name = cs
                .iter()
                .find_map(|(c, _)| c.spec.node_class_ref.as_ref().and_then(|r| r.name.clone()))
                .unwrap_or_default();
            let resolved: Vec<String> = classes
                .iter()
                .find(|c| c.name() == class_name)
                .and_then(|c| c.status.rest.get("securityGroups"))
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .filter_map(|g| g.get("id").and_then(|i| i.as_str()).map(str::to_string))
                .collect();
            let first = cs.iter().find_map(|(c, _)| instance_id(c)).unwrap_or("INSTANCE_ID");
            out.push(
                Finding::new(
                    format!("NodePool/{pool}"),
                    format!(
                        "{} NodeClaim(s) drifted for their security groups within {DRIFT_SOON_MINUTES} minutes of launch: something outside Karpenter changes the instances' security groups, so each replacement drifts again",
                        cs.len()
                    ),
                )
                .evidence(
                    "nodeClaims",
                    cs.iter()
                        .map(|(c, m)| format!("{} (SecurityGroupDrift {m} min after launch)", object(c)))
                        .collect::<Vec<_>>(),
                )
                .evidence("ec2NodeClass", class_name.clone())
                .evidence("resolvedSecurityGroups", resolved.join(", "))
                .hint(format!(
                    "Karpenter drifts a node whose instance's security groups are not exactly the EC2NodeClass's resolved ones, extra groups included. A group attached after launch (an organisation's AWS Firewall Manager policy, a script in user data, another controller) makes every new node drift minutes after it starts, and Karpenter replaces nodes in a loop. Stop the outside attachment, or select that group in EC2NodeClass {class_name}'s securityGroupSelectorTerms so Karpenter launches with it. If you changed the class's security groups within the last hour, this is the rollout and it ends by itself"
                ))
                .fix(format!(
                    "aws ec2 describe-instances --instance-ids {first} --query 'Reservations[].Instances[].SecurityGroups'"
                )),
            );
        }
    }
    out.extend(latest_without_drift_budget(cx, &pools, &claims).await?);
    for pool in pools.iter() {
        let Some(after) = consolidate_after_underutilized(pool) else {
            continue;
        };
        let Some(cs) = consolidated.get(pool.name()) else {
            continue;
        };
        // A wait of a minute or more is a choice; below it a node with pods still starting
        // looks underutilized.
        if after >= 60 {
            continue;
        }
        let set = pool
            .spec
            .disruption
            .as_ref()
            .and_then(|d| d.consolidate_after.clone())
            .unwrap_or_else(|| "0s (the default)".to_string());
        out.push(
            Finding::new(
                pool.object(),
                format!(
                    "Karpenter consolidates nodes of NodePool {} within {CONSOLIDATED_SOON_MINUTES} minutes of launching them: consolidateAfter is {set}",
                    pool.name()
                ),
            )
            .evidence(
                "nodeClaims",
                cs.iter()
                    .map(|(c, m)| format!("{} (consolidated {m} min after launch)", object(c)))
                    .collect::<Vec<_>>(),
            )
            .evidence("consolidateAfter", set.clone())
            .hint(
                "consolidateAfter is how long a node must go without pods arriving or leaving before Karpenter considers consolidating it. At a few seconds, a node launched for pods that start slowly, or whose pods are still being scheduled, is judged underutilized at once, and Karpenter replaces or removes it and launches again: pods restart and nodes churn. Set it to a few minutes or more (5m to 30m is common) on this NodePool",
            )
            .fix(format!(
                "kubectl patch nodepool {} --type merge -p '{{\"spec\":{{\"disruption\":{{\"consolidateAfter\":\"5m\"}}}}}}'",
                pool.name()
            )),
        );
    }
    Ok(out)
}

/// Pools whose EC2NodeClass follows an `@latest` alias while no budget limits drift: each EKS
/// AMI release (every week or two) drifts every node, and Karpenter replaces them all at once
/// (docs/disruption.md §2, §6.2; kubernetes-sigs/karpenter#2218). With a budget for drift, or a
/// pinned version, it is a rolling replacement by design and quiet.
async fn latest_without_drift_budget(
    cx: &CheckCx,
    pools: &[NodePool],
    claims: &[NodeClaim],
) -> Result<Vec<Finding>, FactError> {
    let unlimited: Vec<(&NodePool, String)> = pools
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p, drift_unlimited(p)?)))
        .collect();
    if unlimited.is_empty() {
        return Ok(Vec::new());
    }
    let classes = cx.ec2_nodeclasses().await?;
    let mut out = Vec::new();
    for (pool, why) in unlimited {
        let Some(class) = pool_class(pool, &classes) else {
            continue;
        };
        let class_name = class.name();
        let Some(alias) = ami_terms(class).into_iter().find_map(|t| match t {
            AmiTerm::Alias(a) if a.ends_with("@latest") => Some(a),
            _ => None,
        }) else {
            continue;
        };
        let nodes: Vec<&NodeClaim> = claims
            .iter()
            .filter(|c| pool_of(c) == pool.name() && c.metadata.deletion_timestamp.is_none())
            .collect();
        // One node replaced "at once" is a rolling replacement.
        if nodes.len() < 2 {
            continue;
        }
        let drifted = nodes
            .iter()
            .filter(|c| {
                c.status
                    .condition("Drifted")
                    .is_some_and(|d| d.status == "True" && d.reason == "AMIDrift")
            })
            .count();
        out.push(
            Finding::new(
                pool.object(),
                format!(
                    "each AMI release replaces all {} nodes of NodePool {} within minutes, with nothing limiting how many at a time: EC2NodeClass {class_name} follows {alias}, and {why}",
                    nodes.len(),
                    pool.name()
                ),
            )
            .evidence("amiSelector", format!("alias {alias}"))
            .evidence("budgets", why.clone())
            .evidence("nodes", nodes.len().to_string())
            .evidence("driftedForTheirAmi", drifted.to_string())
            .hint(format!(
                "An @latest alias resolves to the newest EKS-optimized AMI, so every release (every week or two) drifts every node on the class. A NodePool with budgets has no default limit: a reason no budget names is unlimited. Karpenter starts one drift replacement per pass, every few seconds, and with no budget nothing caps how many are in progress, so every drifted node of {} is replaced within minutes and most of their pods restart together. Add a budget for drift, e.g. {{nodes: \"10%\", reasons: [Drifted]}} (or a scheduled window with a nodes: \"0\" budget over the rest of the day), or pin the alias to a version (al2023@v20251120) and move it deliberately",
                pool.name()
            ))
            .fix(format!(
                "kubectl get nodepool {} -o jsonpath='{{.spec.disruption.budgets}}'",
                pool.name()
            )),
        );
    }
    Ok(out)
}
