//! KD4103: nodes replaced far more often than their NodePool intends, as far as one snapshot
//! shows it: replacements that drift for their security groups minutes after launch (something
//! outside Karpenter changes them, so every replacement drifts again), and consolidation that
//! removes nodes minutes after launching them under a `consolidateAfter` shorter than their pods
//! take to settle; and an `@latest` alias in a pool whose budgets leave drift unlimited, so each
//! AMI release replaces the whole pool within minutes (rules: docs/disruption.md §2, §6). With
//! `--history`, also how often each pool's nodes were replaced over the days the scheduled runs
//! cover (§6.3).

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::{object, pool_class, pool_of};
use crate::disruption::churn::{
    CONSOLIDATED_SOON_MINUTES, DRIFT_SOON_MINUTES, consolidate_after_underutilized,
    consolidated_soon, security_groups_drifted_soon,
};
use crate::disruption::budgets::drift_unlimited;
use crate::disruption::rates::{self, MIN_HOURS, Rate};
use crate::ec2::{AmiTerm, ami_terms};
use crate::model::{NodeClaim, NodePool};

declare_check! {
    pub static DISRUPTION_CHURN = {
        code: "KD4103",
        slug: "disruption-churn",
        title: "Karpenter replaces nodes no more often than the NodePool intends",
        category: Disruption,
        severity: Warning,
        needs: [NodePools, NodeClaims, Ec2NodeClasses, ChurnHistory],
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
    replaced_over_days(cx, &pools, &claims, &mut out).await?;
    Ok(out)
}

/// With `--history`: pools whose nodes were replaced at least daily, on average, over the days
/// the record covers, and several times faster than their `expireAfter` asks. A pool another
/// rule already names keeps one finding, with the measured rate as evidence.
async fn replaced_over_days(
    cx: &CheckCx,
    pools: &[NodePool],
    claims: &[NodeClaim],
    out: &mut Vec<Finding>,
) -> Result<(), FactError> {
    let Some(record) = cx.churn_history().await else {
        cx.note("replacement rates over days not judged: they need --history, which a scheduled run keeps (deploy/cronjob.yaml)");
        return Ok(());
    };
    let record = record?;
    let current = rates::sample(claims, record.last(), cx.now());
    let measured = rates::rates(&record, &current);
    if measured.hours < MIN_HOURS {
        cx.note(format!(
            "replacement rates over days not judged yet: the history covers {} h of {} run(s), and a rate is judged from {MIN_HOURS} h",
            measured.hours, measured.runs
        ));
        return Ok(());
    }
    for rate in &measured.pools {
        // A pool deleted since is not judged: its nodes went with it.
        let Some(pool) = pools.iter().find(|p| p.name() == rate.pool) else {
            continue;
        };
        let expire = pool.spec.template.spec.expire_after.as_deref();
        if !rates::churns(rate, measured.hours, expire) {
            continue;
        }
        let summary = format!(
            "{} NodeClaim(s) replaced in {} h over {} runs, with {:.1} nodes on average: {:.1} per node per day",
            rate.replaced, measured.hours, measured.runs, rate.mean_size, rate.per_node_day
        );
        let marked: Vec<String> = rate
            .marked
            .iter()
            .map(|(why, runs)| format!("{why} in {runs} of {} runs", measured.runs))
            .collect();
        if let Some(f) = out.iter_mut().find(|f| f.object == pool.object()) {
            f.evidence.insert("replacedOverDays".into(), summary.into());
            continue;
        }
        let intended = match rates::expiry_per_node_day(expire) {
            Some(per_day) => format!(
                "{} ({per_day:.2} per node per day)",
                expire.unwrap_or_default()
            ),
            None => format!("{} (no expiry)", expire.unwrap_or("unset")),
        };
        out.push(
            Finding::new(
                pool.object(),
                format!(
                    "Karpenter replaced the nodes of NodePool {} {} times in the last {} h ({:.1} per node per day, {:.0} nodes on average), where {}",
                    pool.name(),
                    rate.replaced,
                    measured.hours,
                    rate.per_node_day,
                    rate.mean_size,
                    match rates::expiry_per_node_day(expire) {
                        Some(per_day) => format!(
                            "its expireAfter of {} replaces each node once in {:.0} days",
                            expire.unwrap_or_default(),
                            1.0 / per_day
                        ),
                        None => "its expireAfter replaces none".to_string(),
                    }
                ),
            )
            .evidence("replacedOverDays", summary)
            .evidence("expireAfter", intended)
            .evidence("markedForDisruption", marked)
            .hint(rate_hint(rate, pool.name()))
            .fix(format!(
                "kubectl get nodeclaims -l karpenter.sh/nodepool={} --sort-by=.metadata.creationTimestamp -o custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,DRIFTED:.status.conditions[?(@.type==\"Drifted\")].reason",
                pool.name()
            )),
        );
    }
    Ok(())
}

/// What to look at, from the reason the runs saw most on the pool's claims.
fn rate_hint(rate: &Rate, pool: &str) -> String {
    let top = rate
        .marked
        .iter()
        .max_by_key(|(why, runs)| (**runs, std::cmp::Reverse(why.as_str())))
        .map(|(why, _)| why.as_str());
    let cause = match top {
        Some("Drifted/AMIDrift") => "The runs saw claims drifted for their AMI most: an @latest (or version-less) alias drifts every node at each EKS AMI release, and a control-plane upgrade with a version alias does too. Pin the alias to a version and move it deliberately, or limit drift with a budget".to_string(),
        Some("Drifted/SecurityGroupDrift") => "The runs saw claims drifted for their security groups most: something outside Karpenter attaches a group to new instances, so every replacement drifts again. Stop the attachment or select that group in the EC2NodeClass".to_string(),
        Some(why) if why.starts_with("Drifted/") => format!("The runs saw {why} most: find what changes between launches (the EC2NodeClass, the NodePool template, or something editing the instances)"),
        Some("Underutilized" | "Empty") => format!("The runs saw consolidation most: raise NodePool {pool}'s consolidateAfter, check that its pods' requests are what they use, and add a budget if replacements disrupt the workloads"),
        Some("Expired") => format!("The runs saw expiry most: NodePool {pool}'s expireAfter replaces every node on that timer"),
        _ => "No run saw the claims marked for disruption, so they went between runs: read the NodeClaims' events (kubectl get events --field-selector involvedObject.kind=NodeClaim) and the controller's `disrupting node(s)` log lines".to_string(),
    };
    format!(
        "Counted from the --history record: between two runs, NodeClaims created while others of the pool went away are replacements; a pool that only grows or shrinks with load replaces nothing, and claims that came and went between runs are not counted, so the true rate is at least this. {cause}"
    )
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
