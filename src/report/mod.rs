//! The report: one serde model, built once from the engine's outcomes; renderers only read
//! it. The JSON form is a contract (`schema/report.v1.json`): fields are added, never renamed.

pub mod chain;
pub mod fleet;
pub mod json;
pub mod markdown;
pub mod prometheus;
pub mod short;
pub mod text;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::engine::{Outcome, Status};
use crate::finding::{Category, Finding, Severity, doc_url};
use crate::history::{Annotations, Resolved};
use crate::target::Target;
use crate::upgrade::plan::{self, Judged, Plan};

/// Version of the JSON report schema; bumped only for incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    pub karpdoctor_version: String,
    pub run_id: String,
    pub started_at: String,
    pub finished_at: String,
    /// `live`, `replay` or `demo`.
    pub mode: String,
    pub target: Target,
    pub summary: Summary,
    pub checks: Vec<CheckReport>,
    /// Problems of the run itself (not of the cluster), e.g. a fact that could not be read.
    pub errors: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    /// With `--history`: findings of the previous run that are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Vec<Resolved>>,
    /// `karpdoctor upgrade`: the steps to take, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub checks: usize,
    pub pass: usize,
    pub fail: usize,
    pub unknown: usize,
    pub skip: usize,
    /// Findings per severity.
    pub error: usize,
    pub warning: usize,
    pub info: usize,
    /// The failed checks to fix first: each has a warning or error finding that no other
    /// failed check of the run explains (`causedBy`). Errors first, then registry order.
    #[serde(default)]
    pub root_causes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub code: String,
    pub slug: String,
    pub title: String,
    pub category: Category,
    pub severity: Severity,
    pub status: Status,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_permission: Option<String>,
    pub findings: Vec<Finding>,
    /// What the check left out or assumed, whatever its status (shown with `-v`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub doc_url: String,
}

/// Run statistics, shown with `-v` and carried in JSON under `stats`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub wall_ms: u64,
    /// API requests per service (`kubernetes`, `sts`, `eks`, …).
    pub api_calls: BTreeMap<String, u64>,
    /// API requests per operation.
    pub operations: BTreeMap<String, u64>,
    /// Facts read, and how many times each was fetched (always 1).
    pub facts: Vec<FactStat>,
    /// The longest chain of fetches that each waited for the one before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_path: Option<CriticalPathStat>,
    /// Checks by duration, slowest first.
    #[serde(default)]
    pub checks: Vec<CheckTime>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CriticalPathStat {
    /// Rounds of API requests along the chain: the run cannot be faster than this many round
    /// trips.
    pub rounds: u32,
    pub elapsed_ms: u64,
    /// The facts along the chain, first to last.
    pub facts: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckTime {
    pub code: String,
    pub duration_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FactStat {
    pub fact: String,
    pub fetches: u32,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Since the run's facts started to be read.
    #[serde(default)]
    pub started_ms: u64,
    /// API requests sent for this fact, and the rounds among them that waited for each other.
    #[serde(default)]
    pub calls: u32,
    #[serde(default)]
    pub rounds: u32,
    /// The fact read just before this one was asked for, by the same check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The check that asked first; absent for prefetches and target resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// How a run ends, independent of the output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

pub const EXIT_OK: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_TROUBLE: u8 = 2;

impl Report {
    pub fn new(mode: &str, target: Target, outcomes: &[Outcome], started: jiff::Timestamp) -> Self {
        let mut checks: Vec<CheckReport> = outcomes
            .iter()
            .map(|o| CheckReport {
                code: o.info.code.to_string(),
                slug: o.info.slug.to_string(),
                title: o.info.title.to_string(),
                category: o.info.category,
                severity: o.info.severity,
                status: o.status,
                duration_ms: o.duration.as_millis() as u64,
                reason: o.reason.clone(),
                missing_permission: o.missing_permission.clone(),
                findings: o.findings.clone(),
                notes: o.notes.clone(),
                doc_url: doc_url(o.info.code),
            })
            .collect();
        link_causes(&mut checks);
        let summary = Summary::of(&checks);
        let judged: Vec<Judged> = checks
            .iter()
            .filter(|c| c.category == Category::Upgrade)
            .map(|c| Judged {
                code: &c.code,
                unknown: (c.status == Status::Unknown)
                    .then(|| c.reason.as_deref().unwrap_or("unknown error")),
                findings: &c.findings,
            })
            .collect();
        let plan = if judged.is_empty() {
            None
        } else {
            plan::build(&target, &judged)
        };
        Report {
            schema_version: SCHEMA_VERSION,
            karpdoctor_version: crate::VERSION.to_string(),
            run_id: run_id(started),
            started_at: started.to_string(),
            finished_at: jiff::Timestamp::now().to_string(),
            mode: mode.to_string(),
            target,
            summary,
            checks,
            errors: Vec::new(),
            stats: None,
            resolved: None,
            plan,
        }
    }

    /// Checks that failed with a warning or an error: the problems of the run, of which
    /// `summary.rootCauses` are the ones to fix first.
    pub fn problems(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .filter(|c| c.findings.iter().any(|f| f.severity >= Severity::Warning))
            .count()
    }

    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.checks.iter().flat_map(|c| c.findings.iter())
    }

    /// The codes of the checks that concluded (passed or failed) this run: only their
    /// previous findings can be resolved by `--history`.
    pub fn concluded(&self) -> BTreeSet<String> {
        self.checks
            .iter()
            .filter(|c| matches!(c.status, Status::Pass | Status::Fail))
            .map(|c| c.code.clone())
            .collect()
    }

    /// Shows what `--history` found: each finding marked new or ongoing with the time it was
    /// first seen, and the previous findings that are gone.
    pub fn annotate(&mut self, notes: Annotations) {
        for f in self.checks.iter_mut().flat_map(|c| c.findings.iter_mut()) {
            if let Some(mark) = notes.marks.get(&(f.code.clone(), f.object.clone())) {
                f.history = Some(mark.state);
                f.first_seen = Some(mark.first_seen.clone());
            }
        }
        self.resolved = Some(notes.resolved);
    }

    /// The exit code: 1 when a finding is at or above `fail_on`; else 2 when no check could
    /// conclude (every selected check unknown); else 0.
    pub fn exit_code(&self, fail_on: FailOn) -> u8 {
        let threshold = match fail_on {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        };
        if let Some(t) = threshold
            && self.findings().any(|f| f.severity >= t)
        {
            return EXIT_FINDINGS;
        }
        let concluded = self
            .checks
            .iter()
            .any(|c| matches!(c.status, Status::Pass | Status::Fail));
        if !concluded && self.checks.iter().any(|c| c.status == Status::Unknown) {
            return EXIT_TROUBLE;
        }
        EXIT_OK
    }
}

impl Summary {
    fn of(checks: &[CheckReport]) -> Self {
        let mut s = Summary {
            checks: checks.len(),
            ..Summary::default()
        };
        for c in checks {
            match c.status {
                Status::Pass => s.pass += 1,
                Status::Fail => s.fail += 1,
                Status::Unknown => s.unknown += 1,
                Status::Skip => s.skip += 1,
            }
            for f in &c.findings {
                match f.severity {
                    Severity::Error => s.error += 1,
                    Severity::Warning => s.warning += 1,
                    Severity::Info => s.info += 1,
                }
            }
        }
        let mut roots: Vec<(Severity, usize, &str)> = checks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.status == Status::Fail)
            .filter_map(|(i, c)| {
                let unexplained = c
                    .findings
                    .iter()
                    .filter(|f| f.severity >= Severity::Warning && f.caused_by.is_empty())
                    .map(|f| f.severity)
                    .max()?;
                Some((unexplained, i, c.code.as_str()))
            })
            .collect();
        roots.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        s.root_causes = roots.into_iter().map(|(_, _, c)| c.to_string()).collect();
        s
    }
}

/// Links every symptom finding to the checks of the same run that explain it (`causedBy`),
/// or says that all of them passed (`ownersPassed`).
fn link_causes(checks: &mut [CheckReport]) {
    let outcome: BTreeMap<String, (Status, bool)> = checks
        .iter()
        .map(|c| {
            let serious = c.findings.iter().any(|f| f.severity >= Severity::Warning);
            (c.code.clone(), (c.status, serious))
        })
        .collect();
    let failed = |code: &str| matches!(outcome.get(code), Some((Status::Fail, true)));
    let passed = |code: &str| matches!(outcome.get(code), Some((Status::Pass, _)));
    for f in checks.iter_mut().flat_map(|c| c.findings.iter_mut()) {
        f.link_owners(failed, passed);
    }
}

/// A run id that sorts by time and is unique enough for correlating a ticket with logs.
fn run_id(started: jiff::Timestamp) -> String {
    let nanos = started.as_nanosecond();
    format!("{:x}-{:04x}", nanos / 1_000_000, (nanos % 65_536) as u16)
}

/// The worst finding severity of a failed check (a check can report below its default).
pub fn worst(check: &CheckReport) -> Option<Severity> {
    check.findings.iter().map(|f| f.severity).max()
}
