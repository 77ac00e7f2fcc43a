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

pub fn applies(b: &Budget, reason: &str) -> bool {
    b.reasons
        .as_ref()
        .is_none_or(|rs| rs.iter().any(|r| r == reason))
}

/// A reason in use whose budgets leave it unlimited at some time: every applicable budget has a
/// schedule, one of them allows some disruption, and their windows leave a gap.
#[derive(Debug)]
pub struct Unlimited<'a> {
    pub reason: &'static str,
    pub budgets: Vec<&'a Budget>,
    /// The first moment from now (within a year) that no budget limits.
    pub from: jiff::Timestamp,
}

/// The reasons in use left unlimited between scheduled windows: a window meant to allow,
/// between whose windows Karpenter disrupts for that reason without limit. Windows that cover
/// all time between them (a `"100%"` window on Sunday beside a `"0"` one from Monday for six
/// days, as Karpenter's maintainers suggest in core#2218) leave no gap and are quiet.
/// Scheduled `"0"` budgets alone are a freeze, whose unlimited hours are the point
/// (docs/disruption.md §11). A pool without budgets gets the API's default (`nodes: 10%`,
/// always active) and is never reported. A schedule that cannot be read is not judged.
pub fn unlimited_between_windows(pool: &NodePool, now: jiff::Timestamp) -> Vec<Unlimited<'_>> {
    let budgets = pool_budgets(pool);
    if budgets.is_empty() {
        return Vec::new();
    }
    reasons_in_use(pool)
        .into_iter()
        .filter_map(|reason| {
            let applying: Vec<&Budget> = budgets.iter().filter(|b| applies(b, reason)).collect();
            let windows = !applying.is_empty()
                && applying.iter().all(|b| b.schedule.is_some())
                && applying.iter().any(|b| !allows_none(b));
            if !windows {
                return None;
            }
            let Coverage::Gap(from) = coverage(&applying, now) else {
                return None;
            };
            Some(Unlimited {
                reason,
                budgets: applying,
                from,
            })
        })
        .collect()
}

/// Why drift is unlimited at every moment for the pool, when it is: budgets are written and
/// none applies to `Drifted` (any budget replaces the API's default of 10%, and a reason no
/// budget names has no limit), or every one that applies is unscheduled and allows all nodes.
/// A pool without budgets keeps the default and is limited; scheduled budgets with gaps are
/// [`unlimited_between_windows`]'s.
pub fn drift_unlimited(pool: &NodePool) -> Option<String> {
    let budgets = pool_budgets(pool);
    if budgets.is_empty() {
        return None;
    }
    let applying: Vec<&Budget> = budgets.iter().filter(|b| applies(b, "Drifted")).collect();
    if applying.is_empty() {
        return Some(format!(
            "no budget applies to Drifted ({})",
            budgets.iter().map(describe).collect::<Vec<_>>().join(", ")
        ));
    }
    applying
        .iter()
        .all(|b| b.schedule.is_none() && b.nodes.trim() == "100%")
        .then(|| {
            format!(
                "every budget for Drifted allows all nodes ({})",
                applying
                    .iter()
                    .map(|b| describe(b))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// A reason in use whose scheduled window never opens: budgets allowing none cover all time,
/// and Karpenter applies the smallest limit among the active budgets.
#[derive(Debug)]
pub struct NeverOpens<'a> {
    pub reason: &'static str,
    /// The budgets allowing none that are active at every moment between them.
    pub closed: Vec<&'a Budget>,
    /// The scheduled budgets allowing some disruption: the window meant to open.
    pub windows: Vec<&'a Budget>,
}

/// The reasons in use whose scheduled windows never open, because budgets of `"0"` limit at all
/// times (an unscheduled `nodes: "0"` beside a window for the same reason is the common form:
/// core#2374). Budgets of `"0"` alone are a freeze and intent (docs/disruption.md §11); a
/// schedule that cannot be read is not judged.
pub fn windows_never_open(pool: &NodePool, now: jiff::Timestamp) -> Vec<NeverOpens<'_>> {
    let budgets = pool_budgets(pool);
    reasons_in_use(pool)
        .into_iter()
        .filter_map(|reason| {
            let applying = budgets.iter().filter(|b| applies(b, reason));
            let (closed, open): (Vec<&Budget>, Vec<&Budget>) =
                applying.partition(|b| allows_none(b));
            let windows: Vec<&Budget> = open.into_iter().filter(|b| b.schedule.is_some()).collect();
            if closed.is_empty() || windows.is_empty() {
                return None;
            }
            (coverage(&closed, now) == Coverage::Always).then_some(NeverOpens {
                reason,
                closed,
                windows,
            })
        })
        .collect()
}

fn pool_budgets(pool: &NodePool) -> &[Budget] {
    pool.spec
        .disruption
        .as_ref()
        .map(|d| d.budgets.as_slice())
        .unwrap_or_default()
}

/// `nodes: "0"` or `"0%"`: a percentage above zero rounds up to at least one node.
fn allows_none(b: &Budget) -> bool {
    scaled(&b.nodes, 1) == Some(0)
}

/// How far ahead windows are walked: a year covers every daily, weekly and monthly pattern.
const HORIZON_DAYS: i64 = 366;
/// Windows walked per budget; a schedule hitting more often than this in a year (every few
/// minutes) is judged no further.
const MAX_HITS: usize = 10_000;

/// Whether a set of budgets limits at every moment of the next year.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The first moment from now at which none of them is active.
    Gap(jiff::Timestamp),
    /// One is unscheduled (or never fires), or their windows cover the whole year.
    Always,
    /// A schedule cannot be read, or hits too often to walk.
    Unknown,
}

/// Whether `budgets` leave a moment within a year at which none is active. A budget is active at
/// `t` when a hit `h` of its schedule has `t - duration < h <= t` (core: `Budget.IsActive` asks
/// for the first hit after `now - duration`), so each hit covers `[h, h + duration)` and a sweep
/// over them finds the gap.
pub fn coverage(budgets: &[&Budget], now: jiff::Timestamp) -> Coverage {
    walk(budgets, now).unwrap_or(Coverage::Unknown)
}

fn walk(budgets: &[&Budget], now: jiff::Timestamp) -> Option<Coverage> {
    let horizon = now
        .checked_add(jiff::SignedDuration::from_hours(HORIZON_DAYS * 24))
        .ok()?;
    let mut windows = Vec::new();
    for b in budgets {
        let Some(cron) = schedule(b) else {
            return Some(Coverage::Always);
        };
        let cron = cron.ok()?;
        let length =
            jiff::SignedDuration::from_mins(i64::from(duration_minutes(b.duration.as_deref()?)?));
        let from = now.checked_sub(length).ok()?;
        if next_hit(&cron, from).is_none() {
            // Never fires: active at every moment, as an unscheduled budget.
            return Some(Coverage::Always);
        }
        for (n, hit) in cron.iter_after(utc(from)).enumerate() {
            let hit = hit.timestamp();
            if hit > horizon {
                break;
            }
            if n >= MAX_HITS {
                return None;
            }
            windows.push((hit, hit.checked_add(length).ok()?));
        }
    }
    windows.sort();
    let mut covered = now;
    for (start, end) in windows {
        if start > covered {
            return Some(Coverage::Gap(covered));
        }
        covered = covered.max(end);
    }
    Some(if covered <= horizon {
        Coverage::Gap(covered)
    } else {
        Coverage::Always
    })
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

/// A budget's schedule as Karpenter parses it: robfig/cron's standard five fields or a
/// descriptor (`@daily`), evaluated in UTC (core: `Budget.IsActive` prepends `TZ=UTC`). Karpenter
/// fails closed on a schedule it cannot parse; a schedule this parser rejects is reported as
/// unreadable rather than guessed at.
fn schedule(b: &Budget) -> Option<Result<croner::Cron, ()>> {
    let text = b.schedule.as_deref()?;
    let parser = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .build();
    Some(parser.parse(text.trim()).map_err(|_| ()))
}

fn utc(t: jiff::Timestamp) -> jiff::Zoned {
    t.to_zoned(jiff::tz::TimeZone::UTC)
}

/// Whether the budget limits now: unscheduled budgets always do; a scheduled one from each hit of
/// its schedule for `duration` (core: active when the first hit after `now - duration` is not
/// after `now`). `None` when the schedule or duration cannot be read.
pub fn active(b: &Budget, now: jiff::Timestamp) -> Option<bool> {
    let Some(cron) = schedule(b) else {
        return Some(true);
    };
    let cron = cron.ok()?;
    let minutes = duration_minutes(b.duration.as_deref()?)?;
    let from = now
        .checked_sub(jiff::SignedDuration::from_mins(i64::from(minutes)))
        .ok()?;
    Some(match next_hit(&cron, from) {
        Some(next) => next <= now,
        None => true,
    })
}

/// The schedule's first hit after `from`, as robfig/cron's `Next` finds it: `None` when there
/// is none within five years (`0 0 31 2 *`), where robfig returns the zero time, which is never
/// after now, so Karpenter holds such a budget active at every moment (checked by compiling
/// robfig/cron v3.0.1, the version Karpenter pins).
fn next_hit(cron: &croner::Cron, from: jiff::Timestamp) -> Option<jiff::Timestamp> {
    let next = cron
        .find_next_occurrence(&utc(from), false)
        .ok()?
        .timestamp();
    let limit = from
        .checked_add(jiff::SignedDuration::from_hours(5 * 366 * 24))
        .ok()?;
    (next <= limit).then_some(next)
}

/// When an active scheduled budget stops limiting: its latest hit plus its duration. `None` for
/// an unscheduled budget (it never stops) or one that cannot be read.
pub fn window_end(b: &Budget, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    let cron = schedule(b)?.ok()?;
    let minutes = duration_minutes(b.duration.as_deref()?)?;
    let hit = cron.find_previous_occurrence(&utc(now), true).ok()?;
    hit.timestamp()
        .checked_add(jiff::SignedDuration::from_mins(i64::from(minutes)))
        .ok()
}

/// A budget's `nodes` against the pool's count: a percentage rounds up (core:
/// `GetScaledValueFromIntOrPercent(…, true)`). `None` for a value the API would not admit.
pub fn scaled(nodes: &str, count: u32) -> Option<u32> {
    let nodes = nodes.trim();
    match nodes.strip_suffix('%') {
        Some(p) => {
            let p: u32 = p.parse().ok().filter(|p| *p <= 100)?;
            Some((count * p).div_ceil(100))
        }
        None => nodes.parse().ok(),
    }
}

/// How many nodes the pool's budgets let Karpenter disrupt for a reason now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allowance {
    /// The smallest limit among the active budgets for the reason; `None`: unlimited.
    pub limit: Option<u32>,
    /// The active budgets that allow none, as written.
    pub zero: Vec<String>,
    /// When every one of those stops limiting; `None` when one never does (unscheduled).
    pub opens: Option<jiff::Timestamp>,
}

/// The budgets' limit for `reason` over `count` initialized nodes, before the nodes already
/// being disrupted are subtracted. A pool without budgets has the API's default, 10%. `None`
/// when a budget cannot be read.
pub fn allowance(
    pool: &NodePool,
    reason: &str,
    count: u32,
    now: jiff::Timestamp,
) -> Option<Allowance> {
    let default = [Budget {
        nodes: "10%".to_string(),
        ..Budget::default()
    }];
    let budgets = match pool.spec.disruption.as_ref().map(|d| d.budgets.as_slice()) {
        Some(bs) if !bs.is_empty() => bs,
        _ => &default[..],
    };
    let mut out = Allowance {
        limit: None,
        zero: Vec::new(),
        opens: None,
    };
    let mut never_opens = false;
    for b in budgets.iter().filter(|b| applies(b, reason)) {
        if !active(b, now)? {
            continue;
        }
        let n = scaled(&b.nodes, count)?;
        out.limit = Some(out.limit.map_or(n, |l| l.min(n)));
        if n == 0 {
            out.zero.push(describe(b));
            match window_end(b, now) {
                Some(end) => out.opens = Some(out.opens.map_or(end, |o| o.max(end))),
                None => never_opens = true,
            }
        }
    }
    if never_opens {
        out.opens = None;
    }
    Some(out)
}

/// A budget as a user wrote it, for evidence.
pub fn describe(b: &Budget) -> String {
    let mut parts = vec![format!("nodes: \"{}\"", b.nodes)];
    if let Some(rs) = &b.reasons {
        parts.push(format!("reasons: [{}]", rs.join(", ")));
    }
    if let Some(s) = &b.schedule {
        parts.push(format!("schedule: \"{s}\""));
    }
    if let Some(d) = &b.duration {
        parts.push(format!("duration: {d}"));
    }
    format!("{{{}}}", parts.join(", "))
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

    const NOW: &str = "2026-11-27T10:00:00Z"; // a Friday

    fn unlimited(p: &NodePool) -> Vec<&'static str> {
        unlimited_between_windows(p, at(NOW))
            .iter()
            .map(|u| u.reason)
            .collect()
    }

    #[test]
    fn a_window_alone_leaves_its_reason_unlimited_outside_it() {
        // aws#7842: Drifted only in a window, consolidation unbudgeted but for the default.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","consolidateAfter":"0s",
            "budgets":[{"nodes":"20%","reasons":["Drifted"],"schedule":"0 7 * * *","duration":"7h"}]}),
        );
        let found = unlimited_between_windows(&p, at(NOW));
        assert_eq!(
            found.iter().map(|u| u.reason).collect::<Vec<_>>(),
            ["Drifted"]
        );
        assert_eq!(
            found[0].from,
            at("2026-11-27T14:00:00Z"),
            "when today's window ends"
        );
        assert_eq!(
            closing_budget(found[0].budgets[0], "Drifted").unwrap(),
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
        assert!(unlimited(&p).is_empty());
        // core#2183: one scheduled budget for all, an unscheduled one for Empty only.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[
            {"nodes":"35%","schedule":"0 1 * * mon","duration":"4h"},{"nodes":"35%","reasons":["Empty"]}]}),
        );
        assert_eq!(unlimited(&p), ["Underutilized", "Drifted"]);
    }

    #[test]
    fn windows_that_cover_all_time_between_them_leave_no_gap() {
        // core#2218, a maintainer's answer: all nodes on Sunday, none Monday to Saturday.
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"100%","schedule":"0 0 * * 0","duration":"24h"},
            {"nodes":"0","schedule":"0 0 * * 1","duration":"144h"}]}));
        assert!(unlimited(&p).is_empty());
        // core#2374's answer: ten minutes at 10:00, closed from 10:10 for the rest of the day.
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"100%","reasons":["Empty"]},
            {"nodes":"50%","reasons":["Drifted"],"schedule":"0 10 * * *","duration":"10m"},
            {"nodes":"0","reasons":["Drifted"],"schedule":"10 10 * * *","duration":"23h50m"}]}));
        assert!(unlimited(&p).is_empty());
        assert!(windows_never_open(&p, at(NOW)).is_empty());
        // The same with the closing budget a minute short: a gap every day at 09:59.
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"50%","reasons":["Drifted"],"schedule":"0 10 * * *","duration":"10m"},
            {"nodes":"0","reasons":["Drifted"],"schedule":"10 10 * * *","duration":"23h49m"}]}));
        let found = unlimited_between_windows(&p, at(NOW));
        assert_eq!(found[0].from, at("2026-11-28T09:59:00Z"));
    }

    #[test]
    fn an_unscheduled_zero_beside_a_window_never_lets_it_open() {
        // core#2374's question written as people first write it: drift closed, a window open.
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"0","reasons":["Drifted"]},
            {"nodes":"1","reasons":["Drifted"],"schedule":"0 10 * * *","duration":"10m"}]}));
        let found = windows_never_open(&p, at(NOW));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].reason, "Drifted");
        assert_eq!(found[0].closed.len(), 1);
        assert_eq!(found[0].windows[0].nodes, "1");
        // Zero budgets whose schedules cover all time close it as surely: weekdays and weekend.
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"0%","schedule":"0 0 * * 1","duration":"120h"},
            {"nodes":"0","schedule":"0 0 * * 6","duration":"48h"},
            {"nodes":"20%","schedule":"0 2 * * 0","duration":"4h"}]}));
        let reasons: Vec<&str> = windows_never_open(&p, at(NOW))
            .iter()
            .map(|n| n.reason)
            .collect();
        assert_eq!(reasons, ["Empty", "Drifted"]);
        // A freeze alone (no window) is intent, and a zero with gaps lets the window open.
        let p = pool(json!({"budgets":[{"nodes":"0","reasons":["Drifted"]}]}));
        assert!(windows_never_open(&p, at(NOW)).is_empty());
        let p = pool(json!({"budgets":[
            {"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"},
            {"nodes":"5","schedule":"0 20 * * *","duration":"2h"}]}));
        assert!(windows_never_open(&p, at(NOW)).is_empty());
    }

    #[test]
    fn a_schedule_that_never_fires_is_active_at_every_moment() {
        // robfig/cron finds no 31 February within five years and returns the zero time.
        let b = budget(json!({"nodes":"0","schedule":"0 0 31 2 *","duration":"1h"}));
        assert_eq!(active(&b, at(NOW)), Some(true));
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"0","schedule":"0 0 31 2 *","duration":"24h"},
            {"nodes":"2","schedule":"0 3 * * sun","duration":"3h"}]}));
        assert_eq!(windows_never_open(&p, at(NOW)).len(), 2);
    }

    #[test]
    fn drift_is_unlimited_when_no_budget_names_it() {
        // aws#8290's consolidation budget, with no budget for drift.
        let p = pool(json!({"budgets":[{"nodes":"10%","reasons":["Underutilized","Empty"]}]}));
        assert!(
            drift_unlimited(&p)
                .unwrap()
                .starts_with("no budget applies to Drifted")
        );
        let p = pool(json!({"budgets":[{"nodes":"100%"}]}));
        assert!(drift_unlimited(&p).is_some());
        // The default (no budgets), a limit, or a window are not this rule's.
        assert!(drift_unlimited(&pool(json!({}))).is_none());
        assert!(drift_unlimited(&pool(json!({"budgets":[{"nodes":"20%"}]}))).is_none());
        let p = pool(
            json!({"budgets":[{"nodes":"100%","reasons":["Drifted"],"schedule":"0 2 * * *","duration":"2h"}]}),
        );
        assert!(drift_unlimited(&p).is_none());
    }

    #[test]
    fn a_freeze_alone_is_intent() {
        let p = pool(json!({"consolidationPolicy":"WhenEmpty","budgets":[
            {"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"}]}));
        assert!(unlimited(&p).is_empty());
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

    fn at(t: &str) -> jiff::Timestamp {
        t.parse().unwrap()
    }

    fn budget(v: serde_json::Value) -> Budget {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_scheduled_budget_is_active_from_each_hit_for_its_duration_in_utc() {
        let b = budget(json!({"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"}));
        // 2026-11-27 is a Friday, 2026-11-28 a Saturday.
        assert_eq!(active(&b, at("2026-11-27T09:00:00Z")), Some(true));
        assert_eq!(active(&b, at("2026-11-27T16:59:00Z")), Some(true));
        assert_eq!(active(&b, at("2026-11-27T17:01:00Z")), Some(false));
        assert_eq!(active(&b, at("2026-11-28T10:00:00Z")), Some(false));
        assert_eq!(
            window_end(&b, at("2026-11-27T10:00:00Z")),
            Some(at("2026-11-27T17:00:00Z"))
        );
        // Day of month and day of week both set: either matches (Vixie cron, as robfig/cron).
        let b = budget(json!({"nodes":"0","schedule":"0 0 1 * sun","duration":"1h"}));
        assert_eq!(active(&b, at("2026-11-29T00:30:00Z")), Some(true)); // a Sunday
        assert_eq!(active(&b, at("2026-12-01T00:30:00Z")), Some(true)); // the 1st
        assert_eq!(active(&b, at("2026-12-02T00:30:00Z")), Some(false));
        let b = budget(json!({"nodes":"0","schedule":"@daily","duration":"30m"}));
        assert_eq!(active(&b, at("2026-12-02T00:29:00Z")), Some(true));
        // Six fields (seconds) are not Karpenter's: unreadable, not guessed.
        let b = budget(json!({"nodes":"0","schedule":"0 0 9 * * *","duration":"1h"}));
        assert_eq!(active(&b, at("2026-12-02T09:30:00Z")), None);
    }

    #[test]
    fn the_allowance_is_the_smallest_active_limit_rounded_up() {
        assert_eq!(scaled("10%", 1), Some(1));
        assert_eq!(scaled("10%", 11), Some(2));
        assert_eq!(scaled("0%", 50), Some(0));
        assert_eq!(scaled("3", 50), Some(3));
        // No budgets: the API's default, 10%.
        let a = allowance(&pool(json!({})), "Drifted", 20, at("2026-11-27T10:00:00Z")).unwrap();
        assert_eq!(a.limit, Some(2));
        // core#1939: Drifted "0" always, a window for the rest.
        let p = pool(
            json!({"consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[
            {"nodes":"10%","schedule":"0 8 * * mon-fri","duration":"8h","reasons":["Empty","Underutilized"]},
            {"nodes":"0","reasons":["Drifted"]}]}),
        );
        let a = allowance(&p, "Drifted", 20, at("2026-11-27T10:00:00Z")).unwrap();
        assert_eq!((a.limit, a.opens), (Some(0), None));
        assert_eq!(a.zero, ["{nodes: \"0\", reasons: [Drifted]}"]);
        let a = allowance(&p, "Empty", 20, at("2026-11-28T10:00:00Z")).unwrap();
        assert_eq!(a.limit, None, "outside the window nothing limits");
        // A freeze opens when its window ends.
        let p = pool(
            json!({"budgets":[{"nodes":"0","schedule":"0 9 * * mon-fri","duration":"8h"},{"nodes":"10%"}]}),
        );
        let a = allowance(&p, "Drifted", 20, at("2026-11-27T10:00:00Z")).unwrap();
        assert_eq!(
            (a.limit, a.opens),
            (Some(0), Some(at("2026-11-27T17:00:00Z")))
        );
    }
}
