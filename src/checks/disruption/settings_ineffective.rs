//! KD4104: disruption settings that cannot do what they say. Built: a disruption budget with a
//! schedule read as a maintenance window, while budgets only restrict: a reason whose every
//! budget is scheduled is unlimited between the windows (rules: docs/disruption.md §2, §11).

use crate::check::prelude::*;
use crate::disruption::budgets::{closing_budget, unlimited_between_windows};

declare_check! {
    pub static DISRUPTION_SETTINGS_INEFFECTIVE = {
        code: "KD4104",
        slug: "disruption-settings-ineffective",
        title: "disruption settings do what they appear to",
        category: Disruption,
        severity: Warning,
        needs: [NodePools],
        run: settings_ineffective,
    }
}

async fn settings_ineffective(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let mut out = Vec::new();
    for pool in pools.iter().filter(|p| p.metadata.deletion_timestamp.is_none()) {
        let found = unlimited_between_windows(pool);
        if found.is_empty() {
            continue;
        }
        let reasons: Vec<&str> = found.iter().map(|(r, _)| *r).collect();
        let windows: Vec<String> = found
            .iter()
            .flat_map(|(_, bs)| bs.iter())
            .map(|b| {
                format!(
                    "nodes {} on \"{}\" for {}",
                    b.nodes,
                    b.schedule.as_deref().unwrap_or(""),
                    b.duration.as_deref().unwrap_or("?")
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let closing: Vec<String> = found
            .iter()
            .filter_map(|(r, bs)| bs.iter().find_map(|b| closing_budget(b, r)))
            .collect();
        let fix = if closing.is_empty() {
            "add a budget that is always active for these reasons (a small limit such as nodes: \"10%\"), or a nodes: \"0\" budget scheduled over the hours outside the window".to_string()
        } else {
            format!(
                "to allow disruption only in the window, add {} (a nodes: \"0\" budget over the rest of the day); or add an always-active budget with a small limit",
                closing.join(" and ")
            )
        };
        out.push(
            Finding::new(
                pool.object(),
                format!(
                    "disruption for {} is unlimited outside the scheduled budget's window: a budget limits only while its schedule is active",
                    reasons.join(", ")
                ),
            )
            .evidence("reasons", reasons.join(", "))
            .evidence("scheduledBudgets", windows)
            .hint(format!(
                "Karpenter applies the smallest limit among the budgets active now, and a budget outside its schedule limits nothing: between the windows it may disrupt every node of the pool at once for these reasons (all nodes drifting on an AMI release). Schedules are in UTC. To fix: {fix}"
            ))
            .fix(format!(
                "kubectl get nodepool {} -o jsonpath='{{.spec.disruption.budgets}}'",
                pool.name()
            )),
        );
    }
    Ok(out)
}
