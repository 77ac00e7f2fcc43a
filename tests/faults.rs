//! The fault matrix, generated: every fact of every fixture is replaced in turn by each kind of
//! error karpdoctor can meet (its own missing permission, not found, a transient failure, a
//! malformed payload). For every combination the run must complete; the checks that read the
//! fact must be `unknown` with a reason (never pass, never fail); the others must reach exactly
//! the verdicts of the unbroken run; and the exit code must follow the contract.
//!
//! The three transient failures (throttled, timed out, a server error) take one path through
//! every check: nothing but the API server's `/version` (a timeout there is fatal) and the
//! error's own label tells them apart, which `transient_errors_share_one_path` holds. So each
//! fact fails as one of them, in turn, and every fixture still meets all three.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::BTreeSet;

use karpdoctor::app;
use karpdoctor::bundle::{Bundle, FactOutcome};
use karpdoctor::cli::ReportArgs;
use karpdoctor::engine::Status;
use karpdoctor::facts::{FactError, FactKey};
use karpdoctor::report::FailOn;
use serde_json::json;

/// One of each error kind, plus a payload of the wrong shape.
fn faults() -> Vec<(&'static str, FactOutcome)> {
    let e = |err: FactError| FactOutcome::Error(err);
    vec![
        (
            "forbidden",
            e(FactError::Forbidden {
                permission: "list widgets".into(),
                message: "denied".into(),
            }),
        ),
        (
            "notFound",
            e(FactError::NotFound {
                message: "gone".into(),
            }),
        ),
        (
            "throttled",
            e(FactError::Throttled {
                message: "Rate exceeded".into(),
            }),
        ),
        (
            "timeout",
            e(FactError::Timeout {
                message: "no answer".into(),
            }),
        ),
        (
            "api",
            e(FactError::Api {
                message: "HTTP 500 internal error".into(),
            }),
        ),
        // Malformed: a value of the wrong type, which decoding must reject.
        (
            "malformed",
            FactOutcome::Value(json!({"unexpected": [1, 2, 3], "items": "not a list"})),
        ),
    ]
}

/// The fault kinds that reach checks by one path (see the module doc).
const TRANSIENT: [&str; 3] = ["throttled", "timeout", "api"];

/// Holds the reason the matrix may rotate the transient kinds: outside the error type itself
/// and the fatal `/version` timeout, no code of karpdoctor's tells them apart.
#[test]
fn transient_errors_share_one_path() {
    let mut named = Vec::new();
    let root = support::root();
    for file in support::files_under(&root.join("src"), "rs") {
        let text = std::fs::read_to_string(&file).unwrap();
        let path = file.strip_prefix(&root).unwrap().display().to_string();
        // The live backend makes them (from AWS and Kubernetes errors); the error type labels
        // them; the target's /version read treats a timeout as unreachable.
        if path.contains("backend/live") || path.ends_with("facts/error.rs") {
            continue;
        }
        for variant in [
            "FactError::Throttled",
            "FactError::Timeout",
            "FactError::Api",
        ] {
            if text.contains(variant) {
                named.push(format!("{path}: {variant}"));
            }
        }
    }
    assert_eq!(
        named,
        vec!["src/app/target.rs: FactError::Timeout".to_string()],
        "a transient error kind handled apart must be faulted on every fact again"
    );
}

/// The matrix is split into shards by fixture, each its own test, so the test harness runs
/// them side by side on every core (the corpus makes it tens of thousands of runs). Many more
/// shards than cores keep the cores busy to the end: with as many shards as cores, the last
/// large shard ran alone.
const SHARDS: usize = 16;

macro_rules! shards {
    ($($name:ident = $shard:literal,)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                matrix($shard).await;
            }
        )*
        /// Every shard has its test.
        #[test]
        fn every_shard_runs() {
            assert_eq!([$($shard),*].len(), SHARDS);
        }
    };
}

shards! {
    every_fact_fails_every_way_and_only_its_readers_notice_0 = 0,
    every_fact_fails_every_way_and_only_its_readers_notice_1 = 1,
    every_fact_fails_every_way_and_only_its_readers_notice_2 = 2,
    every_fact_fails_every_way_and_only_its_readers_notice_3 = 3,
    every_fact_fails_every_way_and_only_its_readers_notice_4 = 4,
    every_fact_fails_every_way_and_only_its_readers_notice_5 = 5,
    every_fact_fails_every_way_and_only_its_readers_notice_6 = 6,
    every_fact_fails_every_way_and_only_its_readers_notice_7 = 7,
    every_fact_fails_every_way_and_only_its_readers_notice_8 = 8,
    every_fact_fails_every_way_and_only_its_readers_notice_9 = 9,
    every_fact_fails_every_way_and_only_its_readers_notice_10 = 10,
    every_fact_fails_every_way_and_only_its_readers_notice_11 = 11,
    every_fact_fails_every_way_and_only_its_readers_notice_12 = 12,
    every_fact_fails_every_way_and_only_its_readers_notice_13 = 13,
    every_fact_fails_every_way_and_only_its_readers_notice_14 = 14,
    every_fact_fails_every_way_and_only_its_readers_notice_15 = 15,
}

async fn matrix(shard: usize) {
    let mut combinations = 0;
    let names = support::fixture_names();
    for name in names.iter().skip(shard).step_by(SHARDS) {
        let bundle = Bundle::read(&support::fixture_bundle(name)).unwrap();
        let baseline = app::run_bundle(bundle.clone(), &ReportArgs::default(), false)
            .await
            .unwrap();
        let readers = baseline.context.read_keys();
        let enrichers = baseline.context.enrichment_keys();
        for (index, entry) in bundle.facts.iter().enumerate() {
            let transient = TRANSIENT[index % TRANSIENT.len()];
            for (kind, fault) in faults() {
                let kube_version_timeout = entry.fact == FactKey::KubeVersion && kind == "timeout";
                if TRANSIENT.contains(&kind) && kind != transient && !kube_version_timeout {
                    continue;
                }
                combinations += 1;
                let mut broken = bundle.clone();
                broken.facts[index].outcome = fault.clone();
                let label = format!("{name}: {} as {kind}", entry.fact);
                let run = app::run_bundle(broken, &ReportArgs::default(), false).await;

                // The API server's /version is how karpdoctor knows it can reach the cluster at
                // all: when it times out, the run stops with exit 2 rather than guessing.
                if entry.fact == FactKey::KubeVersion && kind == "timeout" {
                    assert!(
                        run.is_err(),
                        "{label}: an unreachable API server must be fatal"
                    );
                    continue;
                }
                let out = run.unwrap_or_else(|e| panic!("{label}: the run did not complete: {e}"));
                let dependents: BTreeSet<&str> = readers
                    .iter()
                    .filter(|(_, keys)| keys.contains(&entry.fact))
                    .map(|(code, _)| *code)
                    .collect();
                let before = support::report_verdicts(&baseline.report);
                let after = support::report_verdicts(&out.report);
                assert_eq!(before.len(), after.len(), "{label}");
                for (b, a) in before.iter().zip(&after) {
                    if dependents.contains(b.0.as_str()) && b.1 == Status::Skip {
                        // Not applicable for another reason (its API is not served): it stays so,
                        // and in no case may it pass or fail.
                        assert!(
                            matches!(a.1, Status::Skip | Status::Unknown),
                            "{label}: {} became {:?}",
                            a.0,
                            a.1
                        );
                    } else if dependents.contains(b.0.as_str()) {
                        assert_eq!(
                            a.1,
                            Status::Unknown,
                            "{label}: {} read the broken fact and must be unknown, was {:?}",
                            a.0,
                            a.1
                        );
                        let check = out.report.checks.iter().find(|c| c.code == a.0).unwrap();
                        assert!(
                            check.reason.as_deref().is_some_and(|r| !r.is_empty()),
                            "{label}: {} unknown without a reason",
                            a.0
                        );
                        // The missing permission is named (another fact's, if it already failed).
                        if kind == "forbidden" && b.1 != Status::Unknown {
                            assert_eq!(
                                check.missing_permission.as_deref(),
                                Some("list widgets"),
                                "{label}"
                            );
                        } else if kind == "forbidden" {
                            assert!(check.missing_permission.is_some(), "{label}");
                        }
                    } else if b.1 != Status::Skip || a.1 != Status::Skip {
                        // A check that read the fact only as evidence keeps its verdict and
                        // says in the evidence what it could not read.
                        let enriched = enrichers
                            .get(b.0.as_str())
                            .is_some_and(|keys| keys.contains(&entry.fact));
                        if enriched {
                            assert_eq!(
                                a.1, b.1,
                                "{label}: {} read it only as evidence but its verdict changed",
                                a.0
                            );
                        }
                        if enriched && a.1 == Status::Fail {
                            let check = out.report.checks.iter().find(|c| c.code == a.0).unwrap();
                            assert!(
                                check
                                    .findings
                                    .iter()
                                    .any(|f| f.evidence.values().any(|v| v
                                        .as_str()
                                        .is_some_and(|s| s.contains("could not")))),
                                "{label}: {} lost evidence without saying so",
                                a.0
                            );
                        }
                        // Checks that never read it judge exactly as before (findings compared by
                        // object and message; fix commands may name fewer run details).
                        if !enriched {
                            assert_eq!(
                                a, b,
                                "{label}: {} did not read the broken fact but changed",
                                a.0
                            );
                        }
                    }
                }
                let expected_exit = if out
                    .report
                    .findings()
                    .any(|f| f.severity >= karpdoctor::check::Severity::Error)
                {
                    1
                } else if !out
                    .report
                    .checks
                    .iter()
                    .any(|c| matches!(c.status, Status::Pass | Status::Fail))
                    && out
                        .report
                        .checks
                        .iter()
                        .any(|c| c.status == Status::Unknown)
                {
                    2
                } else {
                    0
                };
                assert_eq!(
                    out.report.exit_code(FailOn::Error),
                    expected_exit,
                    "{label}: exit code"
                );
            }
        }
    }
    assert!(
        combinations > 100,
        "shard {shard}: only {combinations} combinations"
    );
}
