//! How often a NodePool's nodes are replaced, measured over the days `--history` covers
//! (KD4103; docs/disruption.md §6.3). Each scheduled run adds one sample: per pool, the
//! NodeClaims that exist and how many of them were created since the run before. Between two
//! runs a pool then lost `size before + created − size now` NodeClaims, and of the nodes that
//! came and went, `min(created, deleted)` were replacements: a pool that only grows or only
//! shrinks (scaling with load) replaces nothing. A NodeClaim created and deleted between two
//! runs is in neither count, so the rate can only be low, never high: a false alarm would need
//! replacements that did not happen.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{ChurnSample, NodeClaim, PoolSample};

use super::churn::seconds;

/// Samples older than this are dropped from the record.
pub const KEEP_DAYS: i64 = 8;
/// The record's most samples (a CronJob every 5 minutes keeps 33 hours).
pub const MAX_SAMPLES: usize = 400;
/// The record's largest size in bytes: it shares a ConfigMap (1 MiB at most) with the findings.
pub const MAX_BYTES: usize = 256 * 1024;
/// The days a rate is judged over, at most.
pub const JUDGED_DAYS: i64 = 7;
/// The least time the samples must cover before a rate means anything: a day, so the pool's
/// daily rhythm is seen whole.
pub const MIN_HOURS: i64 = 24;
/// Replacements per node per day from which a pool churns: every node, on average, replaced
/// at least daily.
pub const CHURN_PER_NODE_DAY: f64 = 1.0;
/// And at least this many replacements in all, so a one-node pool replaced twice is not a
/// trend.
pub const MIN_REPLACED: u32 = 3;

/// Why Karpenter has marked a claim for disruption, as the sample records it: the
/// `DisruptionReason` condition (1.2+), the `Drifted` reason, or an expiry passed; `None` for a
/// claim left alone.
pub fn marked(claim: &NodeClaim, now: jiff::Timestamp) -> Option<String> {
    let drifted = claim
        .status
        .condition("Drifted")
        .filter(|c| c.status == "True")
        .map(|c| format!("Drifted/{}", c.reason));
    let reason = claim
        .status
        .condition("DisruptionReason")
        .filter(|c| c.status == "True" && !c.reason.is_empty());
    if let Some(r) = reason {
        return Some(match (r.reason.as_str(), drifted) {
            ("Drifted", Some(d)) => d,
            _ => r.reason.to_string(),
        });
    }
    if drifted.is_some() {
        return drifted;
    }
    super::pinned::expires_at(claim)
        .is_some_and(|at| at <= now)
        .then(|| "Expired".to_string())
}

/// The sample of `claims` at `now`; creations are counted since `previous`.
pub fn sample(
    claims: &[NodeClaim],
    previous: Option<&ChurnSample>,
    now: jiff::Timestamp,
) -> ChurnSample {
    let since: Option<jiff::Timestamp> = previous.and_then(|p| p.at.parse().ok());
    let mut pools: BTreeMap<String, PoolSample> = BTreeMap::new();
    for claim in claims {
        if claim.pool().is_empty() {
            continue;
        }
        let pool = pools.entry(claim.pool().to_string()).or_default();
        pool.size += 1;
        if let Some(since) = since {
            let created = claim
                .metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| t.0 > since);
            *pool.created.get_or_insert(0) += u32::from(created);
        }
        if let Some(why) = marked(claim, now) {
            *pool.marked.entry(why).or_default() += 1;
        }
    }
    ChurnSample {
        at: now.to_string(),
        pools,
    }
}

/// `record` with `sample` added, trimmed: samples older than [`KEEP_DAYS`], beyond
/// [`MAX_SAMPLES`] or [`MAX_BYTES`] go, oldest first. Trimming only ever removes the oldest,
/// so each kept sample's `created` still counts from the sample before it. A sample of the same
/// moment or later (a run repeated, or replayed at a moment already kept) is replaced, so the
/// same NodeClaims are never counted twice.
pub fn appended(
    record: &[ChurnSample],
    sample: ChurnSample,
    now: jiff::Timestamp,
) -> Vec<ChurnSample> {
    let oldest = now
        .checked_sub(jiff::SignedDuration::from_hours(KEEP_DAYS * 24))
        .unwrap_or(now);
    let mut kept: Vec<ChurnSample> = record
        .iter()
        .filter(|s| {
            s.at.parse::<jiff::Timestamp>()
                .is_ok_and(|at| at >= oldest && at < now)
        })
        .cloned()
        .collect();
    kept.push(sample);
    let excess = kept.len().saturating_sub(MAX_SAMPLES);
    kept.drain(..excess);
    let sizes: Vec<usize> = kept
        .iter()
        .map(|s| serde_json::to_string(s).map_or(0, |t| t.len() + 1))
        .collect();
    let mut total: usize = sizes.iter().sum();
    let mut drop = 0;
    while total > MAX_BYTES && drop + 1 < kept.len() {
        total -= sizes[drop];
        drop += 1;
    }
    kept.drain(..drop);
    kept
}

/// One pool's replacements over the span judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Rate {
    pub pool: String,
    pub replaced: u32,
    /// The pool's mean size over the samples.
    pub mean_size: f64,
    /// Replacements per node per day.
    pub per_node_day: f64,
    /// Why claims were marked for disruption, with the number of runs each was seen in.
    pub marked: BTreeMap<String, usize>,
}

/// What the record covers and each pool's rate over it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    /// From the oldest sample judged to now.
    pub hours: i64,
    /// Runs judged, this one included.
    pub runs: usize,
    pub pools: Vec<Rate>,
}

/// Each pool's replacement rate over the record's last [`JUDGED_DAYS`] and `current`, the
/// sample of this run (made by [`sample`] against the record's last sample).
pub fn rates(record: &[ChurnSample], current: &ChurnSample) -> Rates {
    let now: Option<jiff::Timestamp> = current.at.parse().ok();
    let from = now.and_then(|n| {
        n.checked_sub(jiff::SignedDuration::from_hours(JUDGED_DAYS * 24))
            .ok()
    });
    let mut window: Vec<(jiff::Timestamp, &ChurnSample)> = record
        .iter()
        .filter_map(|s| Some((s.at.parse::<jiff::Timestamp>().ok()?, s)))
        .filter(|(at, _)| from.is_some_and(|f| *at >= f) && now.is_some_and(|n| *at < n))
        .collect();
    if let Some(n) = now {
        window.push((n, current));
    }
    let hours = match (window.first(), window.last()) {
        (Some((a, _)), Some((b, _))) => b.duration_since(*a).as_hours(),
        _ => 0,
    };
    let names: BTreeSet<&String> = window.iter().flat_map(|(_, s)| s.pools.keys()).collect();
    let days = hours as f64 / 24.0;
    let mut pools = Vec::new();
    for name in names {
        let size = |s: &ChurnSample| s.pools.get(name).map_or(0, |p| p.size);
        let mut replaced = 0;
        for pair in window.windows(2) {
            let (before, after) = (pair[0].1, pair[1].1);
            let created = after.pools.get(name).and_then(|p| p.created).unwrap_or(0);
            let deleted = (size(before) + created).saturating_sub(size(after));
            replaced += created.min(deleted);
        }
        let mean_size =
            window.iter().map(|(_, s)| f64::from(size(s))).sum::<f64>() / window.len() as f64;
        let mut marked: BTreeMap<String, usize> = BTreeMap::new();
        for (_, s) in &window {
            for why in s.pools.get(name).into_iter().flat_map(|p| p.marked.keys()) {
                *marked.entry(why.clone()).or_default() += 1;
            }
        }
        let per_node_day = if days > 0.0 {
            f64::from(replaced) / mean_size.max(1.0) / days
        } else {
            0.0
        };
        pools.push(Rate {
            pool: name.clone(),
            replaced,
            mean_size,
            per_node_day,
            marked,
        });
    }
    Rates {
        hours,
        runs: window.len(),
        pools,
    }
}

/// Replacements per node per day that the pool's `expireAfter` alone makes (`None`: never).
pub fn expiry_per_node_day(expire_after: Option<&str>) -> Option<f64> {
    let secs = seconds(expire_after?)?;
    (secs > 0).then(|| 86_400.0 / secs as f64)
}

/// Whether a pool's rate is churn: at least [`CHURN_PER_NODE_DAY`] and [`MIN_REPLACED`] over
/// at least [`MIN_HOURS`], and four times or more what its `expireAfter` alone would do (a
/// pool that asks for short-lived nodes gets them).
pub fn churns(rate: &Rate, hours: i64, expire_after: Option<&str>) -> bool {
    let intended = expiry_per_node_day(expire_after).unwrap_or(0.0);
    hours >= MIN_HOURS
        && rate.replaced >= MIN_REPLACED
        && rate.per_node_day >= CHURN_PER_NODE_DAY
        && rate.per_node_day >= 4.0 * intended
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(h: i64) -> jiff::Timestamp {
        "2026-11-20T00:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .checked_add(jiff::SignedDuration::from_hours(h))
            .unwrap()
    }

    fn claim(name: &str, pool: &str, created_h: i64, conds: serde_json::Value) -> NodeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": name, "creationTimestamp": at(created_h).to_string(),
                         "labels": {"karpenter.sh/nodepool": pool}},
            "spec": {"expireAfter": "720h"},
            "status": {"conditions": conds}
        }))
        .unwrap()
    }

    #[test]
    fn a_sample_counts_claims_created_since_the_last_run_and_why_claims_are_marked() {
        let drifted = json!([{"type":"Drifted","status":"True","reason":"AMIDrift","message":""}]);
        let claims = [
            claim("a", "default", 0, json!([])),
            claim("b", "default", 5, drifted.clone()),
            claim("c", "gpu", 7, json!([])),
        ];
        let first = sample(&claims, None, at(6));
        assert_eq!(first.pools["default"].created, None);
        let second = sample(&claims, Some(&first), at(8));
        assert_eq!(second.pools["default"].size, 2);
        assert_eq!(second.pools["default"].created, Some(0));
        assert_eq!(second.pools["gpu"].created, Some(1));
        assert_eq!(second.pools["default"].marked["Drifted/AMIDrift"], 1);
        // Past its expireAfter (720 h) a claim counts as expired.
        let late = sample(&claims, Some(&second), at(730));
        assert_eq!(late.pools["default"].marked["Expired"], 1);
    }

    fn pool(size: u32, created: Option<u32>) -> BTreeMap<String, PoolSample> {
        BTreeMap::from([(
            "default".to_string(),
            PoolSample {
                size,
                created,
                marked: BTreeMap::new(),
            },
        )])
    }

    fn s(h: i64, size: u32, created: Option<u32>) -> ChurnSample {
        ChurnSample {
            at: at(h).to_string(),
            pools: pool(size, created),
        }
    }

    #[test]
    fn steady_replacement_is_churn_and_scaling_with_load_is_not() {
        // Ten nodes, four replaced every six hours for two days: 32 replacements, 1.6 a node a day.
        let mut record: Vec<ChurnSample> = vec![s(0, 10, None)];
        for i in 1..8 {
            record.push(s(i * 6, 10, Some(4)));
        }
        let r = rates(&record, &s(48, 10, Some(4)));
        assert_eq!((r.hours, r.runs), (48, 9));
        let p = &r.pools[0];
        assert_eq!(p.replaced, 32);
        assert!((p.per_node_day - 1.6).abs() < 1e-9, "{}", p.per_node_day);
        assert!(churns(p, r.hours, Some("720h")));
        // A pool asking for 12-hour nodes is replaced twice a day on purpose.
        assert!(!churns(p, r.hours, Some("12h")));

        // Day and night: 10 → 40 → 10, twice. Nodes come and go, none is replaced.
        let sizes: [u32; 5] = [10, 40, 10, 40, 10];
        let mut record = vec![s(0, 10, None)];
        for (i, pair) in sizes.windows(2).enumerate() {
            let created = pair[1].saturating_sub(pair[0]);
            record.push(s((i as i64 + 1) * 12, pair[1], Some(created)));
        }
        let current = record.pop().unwrap();
        let r = rates(&record, &current);
        assert_eq!(r.pools[0].replaced, 0);
        assert!(!churns(&r.pools[0], r.hours, Some("720h")));
    }

    #[test]
    fn less_than_a_day_of_history_judges_nothing() {
        let record = vec![s(0, 2, None), s(6, 2, Some(2))];
        let r = rates(&record, &s(12, 2, Some(2)));
        assert_eq!(r.pools[0].replaced, 4);
        assert!(!churns(&r.pools[0], r.hours, Some("720h")));
    }

    #[test]
    fn the_record_keeps_eight_days_and_its_size_bound() {
        let record: Vec<ChurnSample> = (0..300).map(|i| s(i, 10, Some(0))).collect();
        let kept = appended(&record, s(300, 10, Some(0)), at(300));
        assert_eq!(
            kept.first().unwrap().at,
            at(300 - KEEP_DAYS * 24).to_string()
        );
        assert_eq!(kept.last().unwrap().at, at(300).to_string());
        // Many pools: the byte bound keeps the newest samples.
        let wide = |h: i64| ChurnSample {
            at: at(h).to_string(),
            pools: (0..200)
                .map(|p| (format!("pool-{p}"), PoolSample::default()))
                .collect(),
        };
        let record: Vec<ChurnSample> = (0..100).map(wide).collect();
        let kept = appended(&record, wide(100), at(100));
        let bytes: usize = kept
            .iter()
            .map(|s| serde_json::to_string(s).unwrap().len() + 1)
            .sum();
        assert!(
            bytes <= MAX_BYTES && kept.len() < 101,
            "{bytes} {}",
            kept.len()
        );
        assert_eq!(kept.last().unwrap().at, at(100).to_string());
    }
}
