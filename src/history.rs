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

use crate::finding::{Finding, HistoryState, Severity};
use crate::model::ChurnSample;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryDoc {
    pub version: u32,
    pub run_at: String,
    pub findings: Vec<Entry>,
    /// The churn record KD4103 judges replacement rates from (`crate::disruption::rates`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub churn: Vec<ChurnSample>,
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

/// How one finding of this run stands against the last run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub state: HistoryState,
    pub first_seen: String,
}

/// What the history says about this run, for the report to show: a mark per finding, by
/// code and object, and the previous findings that are gone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    pub marks: BTreeMap<(String, String), Mark>,
    pub resolved: Vec<Resolved>,
}

/// Marks this run's `findings` against `previous` and returns the document to store with the
/// annotations for the report. `concluded` holds the codes of the checks that passed or
/// failed this run: only their previous findings can be resolved.
pub fn merge<'a>(
    previous: Option<&HistoryDoc>,
    findings: impl IntoIterator<Item = &'a Finding>,
    concluded: &BTreeSet<String>,
    now: &str,
) -> (HistoryDoc, Annotations) {
    let before: BTreeMap<(&str, &str), &Entry> = previous
        .map(|p| {
            p.findings
                .iter()
                .map(|e| ((e.code.as_str(), e.object.as_str()), e))
                .collect()
        })
        .unwrap_or_default();
    let mut notes = Annotations::default();
    let mut stored = Vec::new();
    for f in findings {
        let mark = match before.get(&(f.code.as_str(), f.object.as_str())) {
            Some(prev) => Mark {
                state: HistoryState::Ongoing,
                first_seen: prev.first_seen.clone(),
            },
            None => Mark {
                state: HistoryState::New,
                first_seen: now.to_string(),
            },
        };
        stored.push(Entry {
            code: f.code.clone(),
            object: f.object.clone(),
            message: f.message.clone(),
            severity: f.severity,
            first_seen: mark.first_seen.clone(),
        });
        notes.marks.insert((f.code.clone(), f.object.clone()), mark);
    }
    for prev in before.values() {
        if notes
            .marks
            .contains_key(&(prev.code.clone(), prev.object.clone()))
        {
            continue;
        }
        if concluded.contains(&prev.code) {
            notes.resolved.push(Resolved {
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
    stored.sort_by(|a, b| (&a.code, &a.object).cmp(&(&b.code, &b.object)));
    let doc = HistoryDoc {
        version: 1,
        run_at: now.to_string(),
        findings: stored,
        // The run adds its own sample ([`crate::disruption::rates::appended`]).
        churn: previous.map(|p| p.churn.clone()).unwrap_or_default(),
    };
    (doc, notes)
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

    fn finding(code: &str, object: &str) -> Finding {
        Finding::new(object, "broken").finish(code, Severity::Error)
    }

    fn concluded(codes: &[&str]) -> BTreeSet<String> {
        codes.iter().map(|c| c.to_string()).collect()
    }

    fn states(notes: &Annotations) -> Vec<(String, HistoryState, String)> {
        notes
            .marks
            .iter()
            .map(|((_, object), m)| (object.clone(), m.state, m.first_seen.clone()))
            .collect()
    }

    const ALL: &[&str] = &["KD1001", "KD1002", "KD4001"];

    #[test]
    fn new_then_ongoing_then_resolved() {
        let (d1, n1) = merge(None, &[finding("KD1001", "Pod/a")], &concluded(ALL), "t1");
        assert_eq!(
            states(&n1),
            [("Pod/a".into(), HistoryState::New, "t1".into())]
        );

        let run2 = [finding("KD1001", "Pod/a"), finding("KD4001", "NodePool/x")];
        let (d2, n2) = merge(Some(&d1), &run2, &concluded(ALL), "t2");
        assert_eq!(
            states(&n2),
            [
                ("Pod/a".into(), HistoryState::Ongoing, "t1".into()),
                ("NodePool/x".into(), HistoryState::New, "t2".into())
            ]
        );

        let run3 = [finding("KD4001", "NodePool/x")];
        let (d3, n3) = merge(Some(&d2), &run3, &concluded(ALL), "t3");
        assert_eq!(
            states(&n3),
            [("NodePool/x".into(), HistoryState::Ongoing, "t2".into())]
        );
        assert_eq!(n3.resolved.len(), 1);
        assert_eq!(
            (
                n3.resolved[0].object.as_str(),
                n3.resolved[0].first_seen.as_str(),
                n3.resolved[0].resolved_at.as_str()
            ),
            ("Pod/a", "t1", "t3")
        );
        assert_eq!(d3.findings.len(), 1);
    }

    #[test]
    fn findings_of_checks_that_could_not_conclude_are_carried_not_resolved() {
        let (d1, _) = merge(None, &[finding("KD1001", "Pod/a")], &concluded(ALL), "t1");
        // KD1001 is unknown this run: not among the concluded checks.
        let (d2, n2) = merge(Some(&d1), &[], &concluded(&["KD1002", "KD4001"]), "t2");
        assert!(n2.resolved.is_empty());
        assert_eq!(d2.findings, d1.findings);
    }
}
