//! Runs checks: concurrently, each in its own task (a panic is contained to its check), each
//! bounded by `--check-timeout` and all by the run deadline, results in registry order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde::{Deserialize, Serialize};

use crate::check::{CheckCx, CheckInfo, Finding};
use crate::context::Context;
use crate::facts::{ApiService, FactError, FactKind};

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Unknown,
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
            Status::Skip => "skip",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub info: &'static CheckInfo,
    pub status: Status,
    /// Why the check is unknown or skipped.
    pub reason: Option<String>,
    /// The permission karpdoctor lacks, when that is why the check is unknown.
    pub missing_permission: Option<String>,
    pub findings: Vec<Finding>,
    /// What the check left out or assumed (`-v`).
    pub notes: Vec<String>,
    pub duration: Duration,
}

pub struct RunOptions {
    pub check_timeout: Duration,
    pub deadline: Instant,
    /// Called after each check finishes (progress display).
    pub on_done: Option<Arc<dyn Fn(&'static CheckInfo) + Send + Sync>>,
    /// Fact kinds the permission self-check found karpdoctor may not read, with the missing
    /// permission: checks that need one are `unknown` without running.
    pub denied: std::collections::BTreeMap<FactKind, String>,
}

/// Runs `checks` against `ctx` and returns one outcome per check, in the order given.
pub async fn run(
    ctx: Arc<Context>,
    checks: &[&'static CheckInfo],
    options: &RunOptions,
) -> Vec<Outcome> {
    prefetch(&ctx, checks, |_| true);
    let tasks = checks.iter().map(|&info| {
        let ctx = Arc::clone(&ctx);
        let budget = options
            .check_timeout
            .min(options.deadline.saturating_duration_since(Instant::now()));
        let deadline_is_binding = budget < options.check_timeout;
        let on_done = options.on_done.clone();
        let denied = info
            .needs
            .iter()
            .filter(|k| !info.evidence.contains(k))
            .find_map(|k| options.denied.get(k))
            .cloned();
        async move {
            let started = Instant::now();
            if let Some(permission) = denied {
                if let Some(cb) = on_done {
                    cb(info);
                }
                return Outcome {
                    info,
                    status: Status::Unknown,
                    reason: Some(format!(
                        "karpdoctor lacks permission {permission} (permission self-check)"
                    )),
                    missing_permission: Some(permission),
                    findings: Vec::new(),
                    notes: Vec::new(),
                    duration: started.elapsed(),
                };
            }
            let handle = tokio::spawn(async move {
                let cx = CheckCx::new(ctx, info);
                let result = crate::context::chained(
                    crate::context::CURRENT_CHECK
                        .scope(info.code, tokio::time::timeout(budget, (info.run)(&cx))),
                )
                .await;
                (result, cx.take_notes())
            });
            // Abort on drop so a timed-out check cannot keep fetching after the run is over.
            let abort = handle.abort_handle();
            let joined = handle.await;
            abort.abort();
            let outcome = match joined {
                Ok((Ok(result), notes)) => Outcome {
                    notes,
                    ..judge(info, result, started.elapsed())
                },
                Ok((Err(_elapsed), _)) => unknown(
                    info,
                    if deadline_is_binding {
                        "the run deadline (--timeout) was reached before this check finished".to_string()
                    } else {
                        format!(
                            "timed out after {} (--check-timeout)",
                            humanize(budget)
                        )
                    },
                    started.elapsed(),
                ),
                Err(join_error) => {
                    let what = panic_message(join_error);
                    unknown(
                        info,
                        format!(
                            "internal error in {}: {what}; please report it with the output of `karpdoctor --record`",
                            info.code
                        ),
                        started.elapsed(),
                    )
                }
            };
            if let Some(cb) = on_done {
                cb(info);
            }
            outcome
        }
    });
    join_all(tasks).await
}

/// Starts fetching the parameterless facts the selected checks declare whose service passes
/// `service` (`kubernetes`, `iam`, `ec2`, …), so that checks which read several facts one
/// after another find them already in flight. Calling it again for a fact already asked for
/// fetches nothing more: the context fetches each fact once.
pub fn prefetch(
    ctx: &Arc<Context>,
    checks: &[&'static CheckInfo],
    service: impl Fn(ApiService) -> bool,
) {
    let mut kinds: Vec<FactKind> = checks
        .iter()
        .flat_map(|c| c.needs.iter().copied())
        .filter(|k| service(k.service()))
        .collect();
    kinds.sort();
    kinds.dedup();
    for key in kinds.into_iter().filter_map(FactKind::parameterless_key) {
        let ctx = Arc::clone(ctx);
        tokio::spawn(async move { ctx.prefetch(key).await });
    }
}

fn humanize(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The outcome of a check that does not apply to this cluster, with why.
pub fn not_applicable(info: &'static CheckInfo, why: &str) -> Outcome {
    Outcome {
        info,
        status: Status::Skip,
        reason: Some(format!("not applicable: {why}")),
        missing_permission: None,
        findings: Vec::new(),
        notes: Vec::new(),
        duration: Duration::ZERO,
    }
}

/// The outcome of a check whose applicability could not be decided: unknown, with why.
pub fn undecided(
    info: &'static CheckInfo,
    reason: String,
    missing_permission: Option<String>,
) -> Outcome {
    Outcome {
        info,
        status: Status::Unknown,
        reason: Some(reason),
        missing_permission,
        findings: Vec::new(),
        notes: Vec::new(),
        duration: Duration::ZERO,
    }
}

/// Maps what a check returned to its outcome.
pub fn judge(
    info: &'static CheckInfo,
    result: Result<Vec<Finding>, FactError>,
    duration: Duration,
) -> Outcome {
    match result {
        Ok(findings) if findings.is_empty() => Outcome {
            info,
            status: Status::Pass,
            reason: None,
            missing_permission: None,
            findings,
            notes: Vec::new(),
            duration,
        },
        Ok(findings) => {
            let mut findings: Vec<Finding> = findings
                .into_iter()
                .map(|f| f.finish(info.code, info.severity))
                .collect();
            findings.sort_by(|a, b| {
                (b.severity, &a.object, &a.message).cmp(&(a.severity, &b.object, &b.message))
            });
            Outcome {
                info,
                status: Status::Fail,
                reason: None,
                missing_permission: None,
                findings,
                notes: Vec::new(),
                duration,
            }
        }
        // The API this check judges is absent: not applicable here (KD1002 reports missing CRDs).
        Err(FactError::NotInstalled { what }) => Outcome {
            info,
            status: Status::Skip,
            reason: Some(format!("not applicable: {what} is not installed")),
            missing_permission: None,
            findings: Vec::new(),
            notes: Vec::new(),
            duration,
        },
        Err(e) => {
            let permission = e.missing_permission().map(str::to_string);
            let reason = match &permission {
                Some(p) => format!("karpdoctor lacks permission {p}"),
                None => format!("could not read the facts it needs: {e}"),
            };
            Outcome {
                info,
                status: Status::Unknown,
                reason: Some(reason),
                missing_permission: permission,
                findings: Vec::new(),
                notes: Vec::new(),
                duration,
            }
        }
    }
}

fn unknown(info: &'static CheckInfo, reason: String, duration: Duration) -> Outcome {
    Outcome {
        info,
        status: Status::Unknown,
        reason: Some(reason),
        missing_permission: None,
        findings: Vec::new(),
        notes: Vec::new(),
        duration,
    }
}

fn panic_message(e: tokio::task::JoinError) -> String {
    if e.is_cancelled() {
        return "the check was cancelled".to_string();
    }
    let payload = e.into_panic();
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
