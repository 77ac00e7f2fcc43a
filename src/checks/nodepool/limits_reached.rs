//! KD4002: a NodePool at its `spec.limits` launches nothing more ("all available instance
//! types exceed limits for nodepool"), however many pods wait.


use serde_json::Value;

use crate::check::prelude::*;
use crate::checks::common::nodeclaim::pool_of;
use crate::quantity::Quantity;

declare_check! {
    pub static NODEPOOL_LIMITS_REACHED = {
        code: "KD4002",
        slug: "nodepool-limits-reached",
        title: "every NodePool has room under its limits",
        category: Nodepool,
        severity: Error,
        needs: [NodePools, NodeClaims],
        run: limits_reached,
    }
}

/// Usage from this share of a limit on is reported as "near" (a warning): the next large
/// instance type may no longer fit.
const NEAR_PERCENT: i128 = 90;

async fn limits_reached(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let claims = cx.nodeclaims().await?;
    let mut findings = Vec::new();
    for pool in pools.iter().filter(|p| !p.spec.limits.is_empty()) {
        let mine: Vec<&crate::model::Labels> = claims
            .iter()
            .filter(|c| pool_of(c) == pool.name())
            .map(|c| &c.status.capacity)
            .collect();
        let status_resources = pool.status.rest.get("resources");
        for (resource, limit) in &pool.spec.limits {
            let Some(limit) = quantity(limit) else {
                // The API validates quantities, so this object was written around it (or by
                // an older, laxer CRD): say so rather than pass it.
                findings.push(malformed(pool, format!("spec.limits.{resource} is {limit}, which is not a Kubernetes quantity: karpdoctor cannot tell how close the NodePool is to it")));
                continue;
            };
            let used = if resource == "nodes" {
                Some(Quantity::parse(&mine.len().to_string()).unwrap_or_default())
            } else if mine.is_empty() {
                // Without NodeClaims to add up, the NodePool's own tally is the best evidence.
                status_resources
                    .and_then(|r| r.get(resource))
                    .and_then(quantity)
            } else {
                match sum(mine.iter().filter_map(|capacity| capacity.get(resource))) {
                    Some(total) => Some(total),
                    None => {
                        findings.push(malformed(pool, format!("a NodeClaim's capacity for {resource} is not a Kubernetes quantity (or the sum overflows): usage against the limit cannot be computed")));
                        continue;
                    }
                }
            };
            let Some(used) = used else { continue };
            let Some(percent) = used.percent_of(limit) else {
                // A limit of zero: nothing may launch at all.
                if !limit.is_positive() {
                    findings.push(finding(pool, resource, used, limit, None, Severity::Error));
                }
                continue;
            };
            let severity = if percent >= 100 {
                Severity::Error
            } else if percent >= NEAR_PERCENT {
                Severity::Warning
            } else {
                continue;
            };
            findings.push(finding(
                pool,
                resource,
                used,
                limit,
                Some(percent),
                severity,
            ));
        }
    }
    Ok(findings)
}

/// A value karpdoctor cannot read in place of a quantity: a warning, never a silent pass.
fn malformed(pool: &crate::model::NodePool, message: String) -> Finding {
    Finding::new(pool.object(), message)
        .severity(Severity::Warning)
        .hint("inspect the object: a value the API should have rejected points at a hand-edited or migrated object")
        .fix(format!("kubectl get nodepool {} -o yaml", pool.name()))
}

fn quantity(v: &Value) -> Option<Quantity> {
    Quantity::from_json(v)
}

/// The sum of quantities; `None` when one does not parse or the sum overflows (a garbage
/// value must not pass as headroom).
fn sum<'a>(values: impl Iterator<Item = &'a str>) -> Option<Quantity> {
    values
        .map(Quantity::parse)
        .try_fold(Quantity::ZERO, |acc, q| acc.checked_add(q?))
}

fn finding(
    pool: &crate::model::NodePool,
    resource: &str,
    used: Quantity,
    limit: Quantity,
    percent: Option<i128>,
    severity: Severity,
) -> Finding {
    let message = match (severity, percent) {
        (Severity::Error, Some(p)) => format!(
            "has reached its {resource} limit: its NodeClaims hold {} of {} ({p}%), so nothing more launches (\"all available instance types exceed limits for nodepool\")",
            used.show(resource),
            limit.show(resource)
        ),
        (Severity::Error, None) => format!(
            "has a {resource} limit of {}: it can never launch",
            limit.show(resource)
        ),
        (_, p) => format!(
            "is near its {resource} limit: its NodeClaims hold {} of {} ({}%); larger instance types no longer fit",
            used.show(resource),
            limit.show(resource),
            p.unwrap_or_default()
        ),
    };
    Finding::new(pool.object(), message)
        .severity(severity)
        .evidence("resource", resource)
        .evidence("used", used.show(resource))
        .evidence("limit", limit.show(resource))
        .hint("raise the limit if the growth is expected, or add another NodePool; limits are eventually consistent and may be overshot slightly")
        .fix(format!(
            "kubectl patch nodepool {} --type merge -p '{{\"spec\":{{\"limits\":{{\"{resource}\":\"<new limit>\"}}}}}}'",
            pool.name()
        ))
}
