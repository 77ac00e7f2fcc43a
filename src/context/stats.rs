//! What fetching cost: per-fact statistics and the run's critical path.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::facts::FactKey;

/// Per-fact bookkeeping: how often the backend was asked (must stay at one), when and for how
/// long, the requests it took, and which fact the requester had waited for just before asking
/// (the edge the critical path follows).
#[derive(Clone, Debug, Default)]
pub struct FetchStat {
    pub fetches: u32,
    pub duration: Duration,
    pub error: Option<String>,
    /// Since the context was created.
    pub started: Duration,
    pub finished: Duration,
    /// API requests the fetch sent, and the rounds among them that waited for each other.
    pub calls: u32,
    pub rounds: u32,
    /// The fact the requesting task read last before asking for this one: this fetch could not
    /// start earlier than that one finished. `None` for facts asked for with nothing before.
    pub after: Option<FactKey>,
    /// The check that asked first (`None`: prefetch, or the run's own target resolution).
    pub requested_by: Option<&'static str>,
}

/// The longest chain of fetches that each waited for the one before: the least time any run
/// could take with the same dependencies, given the latency of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CriticalPath {
    /// Rounds of requests along the chain (each a full round trip).
    pub rounds: u32,
    /// From the start of the first fetch to the end of the last.
    pub elapsed: Duration,
    /// The facts, first to last.
    pub facts: Vec<FactKey>,
}

/// See [`Context::critical_path`]. Separate for unit tests over hand-built statistics.
pub fn critical_path(stats: &BTreeMap<FactKey, FetchStat>) -> CriticalPath {
    // Rounds from the start of each fact's chain to its end; the `after` links form a forest
    // (a fact is always asked for after the one it follows finished), walked with a memo.
    let mut depth: HashMap<&FactKey, u32> = HashMap::new();
    for key in stats.keys() {
        let mut path = Vec::new();
        let mut at = Some(key);
        while let Some(k) = at {
            if depth.contains_key(k) || path.contains(&k) {
                break;
            }
            path.push(k);
            at = stats.get(k).and_then(|s| s.after.as_ref());
        }
        let mut below = at.and_then(|k| depth.get(k)).copied().unwrap_or(0);
        for k in path.into_iter().rev() {
            below += stats.get(k).map_or(0, |s| s.rounds);
            depth.insert(k, below);
        }
    }
    let Some(last) = stats
        .iter()
        .max_by_key(|(k, s)| (depth.get(k).copied().unwrap_or(0), s.finished))
        .map(|(k, _)| k)
    else {
        return CriticalPath::default();
    };
    let mut facts = vec![last.clone()];
    let mut at = stats.get(last).and_then(|s| s.after.as_ref());
    while let Some(k) = at {
        if facts.contains(k) {
            break;
        }
        facts.push(k.clone());
        at = stats.get(k).and_then(|s| s.after.as_ref());
    }
    facts.reverse();
    let first = facts.first().and_then(|k| stats.get(k)).map(|s| s.started);
    let end = stats.get(last).map(|s| s.finished);
    CriticalPath {
        rounds: depth.get(last).copied().unwrap_or(0),
        elapsed: match (first, end) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => Duration::ZERO,
        },
        facts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(started: u64, finished: u64, rounds: u32, after: Option<FactKey>) -> FetchStat {
        FetchStat {
            fetches: 1,
            started: Duration::from_millis(started),
            finished: Duration::from_millis(finished),
            duration: Duration::from_millis(finished - started),
            calls: rounds,
            rounds,
            after,
            ..FetchStat::default()
        }
    }

    fn role(name: &str) -> FactKey {
        FactKey::IamRole {
            name: name.to_string(),
        }
    }

    #[test]
    fn the_critical_path_follows_the_deepest_chain_not_the_slowest_fact() {
        let deployments = FactKey::ControllerDeployments { namespace: None };
        let sa = FactKey::ServiceAccount {
            namespace: "karpenter".into(),
            name: "karpenter".into(),
        };
        let mut stats = BTreeMap::new();
        stats.insert(deployments.clone(), stat(0, 50, 1, None));
        stats.insert(sa.clone(), stat(50, 100, 1, Some(deployments.clone())));
        stats.insert(role("controller"), stat(100, 150, 1, Some(sa.clone())));
        // Slow but shallower: two pages of one list (each page waits for the one before),
        // finished last.
        stats.insert(FactKey::NodeClaims, stat(0, 400, 2, None));
        // A fact whose chain is as deep as another's is broken by the later finish.
        stats.insert(role("node"), stat(60, 120, 2, Some(deployments.clone())));
        let path = critical_path(&stats);
        assert_eq!(path.rounds, 3);
        assert_eq!(path.facts, vec![deployments, sa, role("controller")]);
        assert_eq!(path.elapsed, Duration::from_millis(150));
    }

    #[test]
    fn replays_have_no_rounds_and_cycles_do_not_hang() {
        let mut stats = BTreeMap::new();
        stats.insert(role("a"), stat(0, 1, 0, Some(role("b"))));
        stats.insert(role("b"), stat(1, 2, 0, Some(role("a"))));
        let path = critical_path(&stats);
        assert_eq!(path.rounds, 0);
        assert!(path.facts.len() <= 2);
        assert_eq!(critical_path(&BTreeMap::new()), CriticalPath::default());
    }
}
