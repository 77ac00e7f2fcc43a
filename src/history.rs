//! `--history configmap/NAME`: what changed since the last scheduled run.
//!
//! The last run's findings are kept in one ConfigMap in karpdoctor's own namespace. Each
//! finding of this run is marked `new` or `ongoing` (with the time it was first seen), and the
//! previous findings that are gone are listed as `resolved`. A finding is identified by its
//! code and object, not its message, so a crash loop whose restart count grows stays the same
//! finding. Findings of checks that could not conclude this run are carried over untouched:
//! not knowing is not the same as fixed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::check::Severity;
use crate::engine::Status;
use crate::report::Report;

/// The key in the ConfigMap's `data` that holds the document.
pub const DATA_KEY: &str = "last-run.json";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryDoc {
    pub version: u32,
    pub run_at: String,
    pub findings: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub code: String,
    pub object: String,
    pub message: String,
    pub severity: Severity,
    pub first_seen: String,
}

/// A finding of the previous run that this run no longer reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub code: String,
    pub object: String,
    pub message: String,
    pub first_seen: String,
    pub resolved_at: String,
}

/// Marks the report's findings against `previous` and returns the document to store.
pub fn merge(previous: Option<&HistoryDoc>, report: &mut Report, now: &str) -> HistoryDoc {
    let before: BTreeMap<(&str, &str), &Entry> = previous
        .map(|p| {
            p.findings
                .iter()
                .map(|e| ((e.code.as_str(), e.object.as_str()), e))
                .collect()
        })
        .unwrap_or_default();
    let concluded: BTreeSet<&str> = report
        .checks
        .iter()
        .filter(|c| matches!(c.status, Status::Pass | Status::Fail))
        .map(|c| c.code.as_str())
        .collect();
    let concluded: BTreeSet<String> = concluded.into_iter().map(str::to_string).collect();

    let mut stored = Vec::new();
    let mut seen_now = BTreeSet::new();
    for f in report.checks.iter_mut().flat_map(|c| c.findings.iter_mut()) {
        let first_seen = match before.get(&(f.code.as_str(), f.object.as_str())) {
            Some(prev) => {
                f.history = Some("ongoing".to_string());
                prev.first_seen.clone()
            }
            None => {
                f.history = Some("new".to_string());
                now.to_string()
            }
        };
        f.first_seen = Some(first_seen.clone());
        seen_now.insert((f.code.clone(), f.object.clone()));
        stored.push(Entry {
            code: f.code.clone(),
            object: f.object.clone(),
            message: f.message.clone(),
            severity: f.severity,
            first_seen,
        });
    }
    let mut resolved = Vec::new();
    for prev in before.values() {
        if seen_now.contains(&(prev.code.clone(), prev.object.clone())) {
            continue;
        }
        if concluded.contains(&prev.code) {
            resolved.push(Resolved {
                code: prev.code.clone(),
                object: prev.object.clone(),
                message: prev.message.clone(),
                first_seen: prev.first_seen.clone(),
                resolved_at: now.to_string(),
            });
        } else {
            // The check did not conclude (or was not selected): keep what we knew.
            stored.push((*prev).clone());
        }
    }
    report.resolved = Some(resolved);
    stored.sort_by(|a, b| (&a.code, &a.object).cmp(&(&b.code, &b.object)));
    HistoryDoc {
        version: 1,
        run_at: now.to_string(),
        findings: stored,
    }
}

/// karpdoctor's own namespace: `KARPDOCTOR_NAMESPACE` (set from the downward API in
/// `deploy/cronjob.yaml`), else the service account's, else `default`.
pub fn own_namespace() -> String {
    std::env::var("KARPDOCTOR_NAMESPACE")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "default".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Finding;
    use crate::engine::Outcome;
    use crate::registry::find;
    use std::time::Duration;

    fn report(failing: &[(&str, &str)], unknown: &[&str]) -> Report {
        let outcomes: Vec<Outcome> = ["KD1001", "KD1002", "KD4001"]
            .iter()
            .map(|code| {
                let info = find(code).unwrap();
                let findings: Vec<Finding> = failing
                    .iter()
                    .filter(|(c, _)| c == code)
                    .map(|(_, obj)| Finding::new(*obj, "broken").finish(info))
                    .collect();
                let status = if unknown.contains(code) {
                    Status::Unknown
                } else if findings.is_empty() {
                    Status::Pass
                } else {
                    Status::Fail
                };
                Outcome {
                    info,
                    status,
                    reason: None,
                    missing_permission: None,
                    findings,
                    duration: Duration::ZERO,
                }
            })
            .collect();
        Report::new(
            "live",
            Default::default(),
            &outcomes,
            jiff::Timestamp::UNIX_EPOCH,
        )
    }

    fn states(r: &Report) -> Vec<(String, String, String)> {
        r.findings()
            .map(|f| {
                (
                    f.object.clone(),
                    f.history.clone().unwrap(),
                    f.first_seen.clone().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn new_then_ongoing_then_resolved() {
        let mut r1 = report(&[("KD1001", "Pod/a")], &[]);
        let d1 = merge(None, &mut r1, "t1");
        assert_eq!(states(&r1), [("Pod/a".into(), "new".into(), "t1".into())]);

        let mut r2 = report(&[("KD1001", "Pod/a"), ("KD4001", "NodePool/x")], &[]);
        let d2 = merge(Some(&d1), &mut r2, "t2");
        assert_eq!(
            states(&r2),
            [
                ("Pod/a".into(), "ongoing".into(), "t1".into()),
                ("NodePool/x".into(), "new".into(), "t2".into())
            ]
        );

        let mut r3 = report(&[("KD4001", "NodePool/x")], &[]);
        let d3 = merge(Some(&d2), &mut r3, "t3");
        assert_eq!(
            states(&r3),
            [("NodePool/x".into(), "ongoing".into(), "t2".into())]
        );
        let resolved = r3.resolved.clone().unwrap();
        assert_eq!(resolved.len(), 1);
        assert_eq!(
            (
                resolved[0].object.as_str(),
                resolved[0].first_seen.as_str(),
                resolved[0].resolved_at.as_str()
            ),
            ("Pod/a", "t1", "t3")
        );
        assert_eq!(d3.findings.len(), 1);
    }

    #[test]
    fn findings_of_checks_that_could_not_conclude_are_carried_not_resolved() {
        let mut r1 = report(&[("KD1001", "Pod/a")], &[]);
        let d1 = merge(None, &mut r1, "t1");
        let mut r2 = report(&[], &["KD1001"]);
        let d2 = merge(Some(&d1), &mut r2, "t2");
        assert!(r2.resolved.unwrap().is_empty());
        assert_eq!(d2.findings, d1.findings);
    }
}
