//! Disruption budgets as Karpenter applies them (KD4104; docs/disruption.md §2). For a reason,
//! Karpenter takes the smallest limit among the budgets that apply to it and are active now,
//! and an inactive budget limits nothing (core: `apis/v1/nodepool.go`
//! `GetAllowedDisruptionsByReason` starts from MaxInt32; `Budget.GetAllowedDisruptions` returns
//! MaxInt32 outside the schedule). So a reason whose every budget has a schedule is unlimited
//! between the windows: the budget restricts during the window, it does not open one.

use crate::model::{Budget, NodePool};

/// The reasons Karpenter v1 disrupts for, as budgets name them.
pub const REASONS: [&str; 3] = ["Empty", "Underutilized", "Drifted"];

/// The reasons the pool can be disrupted for at all: drift always; emptiness unless
/// consolidation is off (`consolidateAfter: Never`); underutilization only under
/// `WhenEmptyOrUnderutilized` (v1) or `WhenUnderutilized` (v1beta1).
pub fn reasons_in_use(pool: &NodePool) -> Vec<&'static str> {
    let d = pool.spec.disruption.as_ref();
    let never = d
        .and_then(|d| d.consolidate_after.as_deref())
        .is_some_and(|a| a == "Never");
    let underutilized = d
        .and_then(|d| d.consolidation_policy.as_deref())
        .is_some_and(|p| p == "WhenEmptyOrUnderutilized" || p == "WhenUnderutilized");
    REASONS
        .into_iter()
        .filter(|r| match *r {
            "Drifted" => true,
            "Empty" => !never,
            _ => underutilized && !never,
        })
        .collect()
}

fn applies(b: &Budget, reason: &str) -> bool {
    b.reasons
        .as_ref()
        .is_none_or(|rs| rs.iter().any(|r| r == reason))
}

/// The reasons in use whose every applicable budget has a schedule and one of them allows
/// some disruption, with those budgets: a window meant to allow, between whose windows Karpenter
/// disrupts for that reason without limit. Scheduled `"0"` budgets alone are a freeze, whose
/// unlimited hours are the point (docs/disruption.md §11). A pool without budgets gets the API's
/// default (`nodes: 10%`, always active) and is never reported.
pub fn unlimited_between_windows(pool: &NodePool) -> Vec<(&'static str, Vec<&Budget>)> {
    let budgets = pool
        .spec
        .disruption
        .as_ref()
        .map(|d| d.budgets.as_slice())
        .unwrap_or_default();
    if budgets.is_empty() {
        return Vec::new();
    }
    reasons_in_use(pool)
        .into_iter()
        .filter_map(|reason| {
            let applying: Vec<&Budget> = budgets.iter().filter(|b| applies(b, reason)).collect();
            let windows = !applying.is_empty()
                && applying.iter().all(|b| b.schedule.is_some())
                && applying.iter().any(|b| b.nodes.trim() != "0");
            windows.then_some((reason, applying))
        })
        .collect()
}

/// Minutes in a Go duration of the form the budget's schema allows (`8h`, `30m`, `1h30m`).
pub fn duration_minutes(d: &str) -> Option<u32> {
    let d = d.strip_suffix("0s").unwrap_or(d);
    let (hours, rest) = match d.split_once('h') {
        Some((h, rest)) => (h.parse::<u32>().ok()?, rest),
        None => (0, d),
    };
    let minutes = match rest.strip_suffix('m') {
        Some(m) => m.parse::<u32>().ok()?,
        None if rest.is_empty() => 0,
        None => return None,
    };
    hours.checked_mul(60)?.checked_add(minutes)
}

/// For a daily window (`M H * * *` with a duration under a day), the budget that closes the
/// rest of the day: a `"0"` budget starting when the window ends. `None` for any other schedule.
pub fn closing_budget(b: &Budget, reason: &str) -> Option<String> {
    let fields: Vec<&str> = b.schedule.as_deref()?.split_whitespace().collect();
    let [m, h, "*", "*", "*"] = fields.as_slice() else {
        return None;
    };
    let (m, h): (u32, u32) = (m.parse().ok()?, h.parse().ok()?);
    let length = duration_minutes(b.duration.as_deref()?)?;
    if m > 59 || h > 23 || length == 0 || length >= 24 * 60 {
        return None;
    }
    let end = (h * 60 + m + length) % (24 * 60);
    let rest = 24 * 60 - length;
    let rest = if rest % 60 == 0 {
        format!("{}h", rest / 60)
    } else {
        format!("{}h{}m", rest / 60, rest % 60)
    };
    Some(format!(
        "{{nodes: \"0\", reasons: [{reason}], schedule: \"{} {} * * *\", duration: {rest}}}",
        end % 60,
        end / 60
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(disruption: serde_json::Value) -> NodePool {
        serde_json::from_value(json!({"apiVersion":"karpenter.sh/v1","kind":"NodePool",
            "metadata":{"name":"default"},"spec":{"template":{"spec":{}},"disruption":disruption}}))
        .unwrap()
    }

    #[test]
    fn a_window_alone_leaves_its_reason_unlimited_outside_it() {
        // aws#7842: Drifted only in a window, consolidation unbudgeted but for the default.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","consolidateAfter":"0s",
            "budgets":[{"nodes":"20%","reasons":["Drifted"],"schedule":"0 7 * * *","duration":"7h"}]}),
        );
        let found = unlimited_between_windows(&p);
        assert_eq!(
            found.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            ["Drifted"]
        );
        assert_eq!(
            closing_budget(found[0].1[0], "Drifted").unwrap(),
            "{nodes: \"0\", reasons: [Drifted], schedule: \"0 14 * * *\", duration: 17h}"
        );
    }

    #[test]
    fn an_always_active_budget_for_the_reason_is_quiet() {
        // Karpenter's documented business-hours freeze beside a 10% budget.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[
            {"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"},{"nodes":"10%"}]}),
        );
        assert!(unlimited_between_windows(&p).is_empty());
        // core#2183: one scheduled budget for all, an unscheduled one for Empty only.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[
            {"nodes":"35%","schedule":"0 1 * * mon","duration":"4h"},{"nodes":"35%","reasons":["Empty"]}]}),
        );
        let reasons: Vec<&str> = unlimited_between_windows(&p)
            .iter()
            .map(|(r, _)| *r)
            .collect();
        assert_eq!(reasons, ["Underutilized", "Drifted"]);
    }

    #[test]
    fn a_freeze_alone_is_intent() {
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"}]}));
        assert!(unlimited_between_windows(&p).is_empty());
    }

    #[test]
    fn reasons_follow_the_policy() {
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","consolidateAfter":"Never"}));
        assert_eq!(reasons_in_use(&p), ["Drifted"]);
    }

    #[test]
    fn durations_read_as_the_schema_writes_them() {
        assert_eq!(duration_minutes("8h"), Some(480));
        assert_eq!(duration_minutes("1h30m"), Some(90));
        assert_eq!(duration_minutes("45m0s"), Some(45));
        assert_eq!(duration_minutes("x"), None);
    }
}
