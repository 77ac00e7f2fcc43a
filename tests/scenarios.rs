//! Scenario tests: every `fixtures/<scenario>/` (its bundle there, or under `data/` for the
//! demo) runs through the engine on the Recorded backend. `expect.json` states which checks
//! must fail, be unknown or be skipped (reasoned from the scenario, not copied from output),
//! and every other check must pass. Text, JSON and markdown reports are snapshot-tested
//! without their passing checks (`elide`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "scenarios/elide.rs"]
mod elide;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use karpdoctor::app;
use karpdoctor::bundle::Bundle;
use karpdoctor::check::Category;
use karpdoctor::cli::ReportArgs;
use karpdoctor::engine::Status;
use karpdoctor::facts::FactKind;
use karpdoctor::registry::CHECKS;
use karpdoctor::report::{self, FailOn, Report};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expect {
    description: String,
    failing: BTreeSet<String>,
    #[serde(default)]
    unknown: BTreeSet<String>,
    #[serde(default)]
    skipped: BTreeSet<String>,
    /// The checks whose errors are the scenario's root causes: every other error of the report
    /// must be linked to one of them (`causedBy`). Required whenever a check is expected to
    /// fail; reasoned from the scenario like `failing`.
    root_causes: Option<BTreeSet<String>>,
    exit_code: u8,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn scenarios() -> Vec<String> {
    support::fixture_names()
}

fn load(name: &str) -> (Bundle, Expect) {
    let bundle = Bundle::read(&support::fixture_bundle(name)).expect("bundle parses");
    let expect: Expect = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join(name).join("expect.json"))
            .expect("expect.json exists"),
    )
    .expect("expect.json parses");
    (bundle, expect)
}

/// The registered checks a run applies, in registry order: `pre-install` runs only the
/// installer's checks, `upgrade` only the upgrade checks, any other run all the others.
fn registered(pre_install: bool, upgrade: bool) -> Vec<&'static str> {
    CHECKS
        .iter()
        .filter(|c| (c.category == Category::PreInstall) == pre_install)
        .filter(|c| (c.category == Category::Upgrade) == upgrade)
        .map(|c| c.code)
        .collect()
}

fn codes_with(report: &Report, status: Status) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.code.clone())
        .collect()
}

/// The checks with an error finding that no other failing check of the run explains.
fn error_roots(report: &Report) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|c| {
            c.findings
                .iter()
                .any(|f| f.severity == karpdoctor::check::Severity::Error && f.caused_by.is_empty())
        })
        .map(|c| c.code.clone())
        .collect()
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.v1.json"),
    )
    .expect("schema file");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

async fn run(name: &str) -> (app::RunOutput, Expect) {
    let (bundle, expect) = load(name);
    let out = app::run_bundle(bundle, &ReportArgs::default(), true)
        .await
        .unwrap_or_else(|e| panic!("{name}: run failed: {e}"));
    (out, expect)
}

#[tokio::test]
async fn every_scenario_fires_exactly_the_expected_checks() {
    let validator = schema();
    for name in scenarios() {
        let (out, expect) = run(&name).await;
        let report = &out.report;
        assert!(
            !expect.description.is_empty(),
            "{name}: expect.json needs a description"
        );
        assert_eq!(
            codes_with(report, Status::Fail),
            expect.failing,
            "{name}: failing checks"
        );
        assert_eq!(
            codes_with(report, Status::Unknown),
            expect.unknown,
            "{name}: unknown checks"
        );
        assert_eq!(
            codes_with(report, Status::Skip),
            expect.skipped,
            "{name}: skipped checks"
        );
        assert_eq!(
            report.exit_code(FailOn::Error),
            expect.exit_code,
            "{name}: exit code"
        );
        // The snapshots leave the passing checks out; this is where they are accounted for.
        let hints = load(&name).0.hints;
        let ran: Vec<&str> = report.checks.iter().map(|c| c.code.as_str()).collect();
        assert_eq!(
            ran,
            registered(hints.pre_install, hints.upgrade),
            "{name}: every check that applies runs once"
        );
        let rest: BTreeSet<String> = ran
            .iter()
            .map(|c| c.to_string())
            .filter(|c| {
                !expect.failing.contains(c)
                    && !expect.unknown.contains(c)
                    && !expect.skipped.contains(c)
            })
            .collect();
        assert_eq!(
            codes_with(report, Status::Pass),
            rest,
            "{name}: every other check passes"
        );
        assert_eq!(report.summary.checks, ran.len(), "{name}: summary.checks");
        assert_eq!(report.summary.pass, rest.len(), "{name}: summary.pass");

        // One root cause, one error: the errors no other failure explains are exactly the
        // scenario's root causes, and the summary lists them first.
        let declared = expect.root_causes.clone().unwrap_or_else(|| {
            assert!(
                expect.failing.is_empty(),
                "{name}: expect.json must declare rootCauses (the checks whose errors nothing else explains)"
            );
            BTreeSet::new()
        });
        let roots = error_roots(report);
        assert_eq!(
            roots, declared,
            "{name}: errors without causedBy must be exactly the declared root causes"
        );
        assert!(
            declared.is_subset(&expect.failing),
            "{name}: a root cause must be a failing check"
        );
        let summary_first: BTreeSet<String> = report
            .summary
            .root_causes
            .iter()
            .take(declared.len())
            .cloned()
            .collect();
        assert_eq!(
            summary_first, declared,
            "{name}: summary.rootCauses starts with the error roots"
        );

        // Every unknown says why; a permission problem names the permission.
        for c in report.checks.iter().filter(|c| c.status == Status::Unknown) {
            assert!(
                c.reason.is_some(),
                "{name}: {} unknown without reason",
                c.code
            );
        }
        // Findings name their object and say what to do.
        for f in report.findings() {
            assert!(
                !f.object.is_empty() && !f.message.is_empty(),
                "{name}: {f:?}"
            );
            assert!(
                !f.hint.is_empty() || !f.remediation.commands.is_empty(),
                "{name}: {} has no fix",
                f.code
            );
            assert!(f.doc_url.ends_with(&format!("/checks/{}.md", f.code)));
        }
        // Each fact is fetched once per run, however many checks read it.
        for (key, stat) in out.context.fetch_stats() {
            assert_eq!(
                stat.fetches, 1,
                "{name}: {key} fetched {} times",
                stat.fetches
            );
        }
        let json: serde_json::Value =
            serde_json::from_str(&report::json::render(report)).expect("json");
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{name}: report violates the schema: {errors:#?}"
        );
    }
}

#[tokio::test]
async fn healthy_scenarios_fire_nothing_and_every_check_fires_somewhere() {
    let mut fired = BTreeSet::new();
    for name in scenarios() {
        let (_, expect) = load(&name);
        if name.starts_with("healthy") {
            assert!(expect.failing.is_empty(), "{name} must not expect failures");
            assert!(
                expect.unknown.is_empty(),
                "{name} must conclude every check"
            );
        }
        fired.extend(expect.failing);
    }
    for c in CHECKS {
        assert!(
            fired.contains(c.code),
            "{} is not fired by any fixture",
            c.code
        );
    }
}

#[tokio::test]
async fn checks_read_exactly_the_facts_they_declare() {
    let mut read: BTreeMap<&str, BTreeSet<FactKind>> = BTreeMap::new();
    for name in scenarios() {
        let (out, _) = run(&name).await;
        for (code, kinds) in out.context.reads() {
            read.entry(code).or_default().extend(kinds);
        }
    }
    for c in CHECKS {
        let declared: BTreeSet<FactKind> = c.needs.iter().copied().collect();
        let actual = read.get(c.code).cloned().unwrap_or_default();
        assert!(
            actual.is_subset(&declared),
            "{} reads undeclared facts: {:?}",
            c.code,
            actual.difference(&declared).collect::<Vec<_>>()
        );
        assert_eq!(
            actual, declared,
            "{} declares facts no scenario makes it read",
            c.code
        );
    }
}

#[tokio::test]
async fn recording_a_replay_replays_to_the_same_report() {
    for name in scenarios() {
        let (out, _) = run(&name).await;
        let recorded = out.context.bundle(out.report.target.clone());
        let again = app::run_bundle(recorded, &ReportArgs::default(), false)
            .await
            .expect("replay of the recording");
        assert_eq!(
            support::report_verdicts(&out.report),
            support::report_verdicts(&again.report),
            "{name}: record → replay changed the report"
        );
        assert_eq!(
            out.report.target, again.report.target,
            "{name}: target changed"
        );
    }
}

/// The snapshots keep what a scenario is about: the checks that did not pass, in full. The
/// passing rest leaves no trace in them (no line, row, JSON entry or count), so a new check
/// that passes here changes none of this scenario's snapshots; that every other check passed
/// is asserted by `every_scenario_fires_exactly_the_expected_checks`, and each elided line and
/// count is checked against the report before it goes.
#[tokio::test]
async fn reports_match_snapshots() {
    for name in scenarios() {
        let (out, _) = run(&name).await;
        // One file per scenario, all three renders: a scenario a new check changes is one
        // snapshot file, not three.
        let text = report::text::render(&out.report, report::text::TextOptions::default());
        let mut json = elide::json(&out.report);
        redact_json(&mut json);
        let json = serde_json::to_string_pretty(&json).unwrap();
        let md = report::markdown::render(&out.report);
        let md = elide::markdown(&out.report, &redact_markdown(&md));
        let text = elide::text(&out.report, &text);
        insta::assert_snapshot!(
            name.as_str(),
            format!("== text\n{text}\n== json\n{json}\n== markdown\n{md}")
        );
    }
}

/// Replaces what differs between runs of the same scenario (ids, times, the version and the
/// doc URLs pinned to it).
fn redact_json(json: &mut serde_json::Value) {
    use serde_json::Value;
    for (field, placeholder) in [
        ("runId", "[run-id]"),
        ("startedAt", "[timestamp]"),
        ("finishedAt", "[timestamp]"),
        ("karpdoctorVersion", "[version]"),
    ] {
        if let Some(v) = json.get_mut(field) {
            *v = Value::from(placeholder);
        }
    }
    for check in json
        .get_mut("checks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(v) = check.get_mut("durationMs") {
            *v = Value::from(0);
        }
        if let Some(v) = check.get_mut("docUrl") {
            *v = Value::from("[doc-url]");
        }
        for finding in check
            .get_mut("findings")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(v) = finding.get_mut("docUrl") {
                *v = Value::from("[doc-url]");
            }
        }
    }
}

fn redact_markdown(md: &str) -> String {
    md.lines()
        .map(|l| {
            if l.starts_with("| run |") {
                "| run | [run] |"
            } else if l.starts_with("| karpdoctor |") {
                "| karpdoctor | [version] |"
            } else {
                l
            }
        })
        .map(|l| {
            l.replace(
                &format!("/blob/v{}/", karpdoctor::VERSION),
                "/blob/v[version]/",
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every simulation a scenario makes carries what every real signed request carries: the
/// region each of its actions is sent to (`aws:RequestedRegion`) and the caller's ARN
/// (`aws:PrincipalArn`). Without them a region allow-list SCP, which denies with negated
/// operators on both keys, reads as denying everything (docs/iam-simulation.md). The bundles
/// hold the simulations exactly as the checks asked for them (re-recorded from the emulator).
#[test]
fn every_simulation_carries_the_request_region_and_principal() {
    use karpdoctor::iam::request::{PRINCIPAL_ARN, REQUESTED_REGION, requested_region};
    let mut seen = 0;
    for name in scenarios() {
        let bundle = support::read_json(&support::fixture_bundle(&name));
        let region = bundle["target"]["region"]
            .as_str()
            .expect("a target region");
        for fact in bundle["facts"].as_array().unwrap() {
            let Some(sim) = fact["fact"].get("simulation") else {
                continue;
            };
            seen += 1;
            let context = sim["context"].as_array().unwrap();
            let value = |key: &str| {
                context
                    .iter()
                    .find(|e| e["key"].as_str().unwrap().eq_ignore_ascii_case(key))
                    .map(|e| e["values"][0].as_str().unwrap().to_string())
            };
            let principal = sim["principal"].as_str().unwrap();
            assert_eq!(
                value(PRINCIPAL_ARN).as_deref(),
                Some(principal),
                "{name}: {sim}"
            );
            let given = value(REQUESTED_REGION)
                .unwrap_or_else(|| panic!("{name}: simulated without a region: {sim}"));
            for action in sim["actions"].as_array().unwrap() {
                let action = action.as_str().unwrap();
                // A caller may pin the region (the pricing endpoint's, for example); it must
                // still be the one the real request goes to.
                assert_eq!(
                    given,
                    requested_region(action, region),
                    "{name}: {action} simulated in the wrong region: {sim}"
                );
            }
        }
    }
    assert!(seen > 100, "the scenarios make simulations ({seen})");
}

#[tokio::test]
async fn a_bundle_from_before_nominated_events_were_read_apart_still_sees_nominations() {
    // Bundles recorded by earlier releases hold Karpenter's Nominated events only among the
    // Pod events: the pod nominated to a launching NodeClaim must still count as served.
    let name = "healthy-pending-nominated-to-launching-nodeclaim";
    let (mut bundle, expect) = load(name);
    let before = bundle.facts.len();
    bundle.facts.retain(|e| {
        !matches!(&e.fact, karpdoctor::facts::FactKey::EventsByReason { reason, .. } if reason == "Nominated")
    });
    assert_eq!(
        bundle.facts.len(),
        before - 1,
        "{name} holds the Nominated events"
    );
    let out = app::run_bundle(bundle, &ReportArgs::default(), true)
        .await
        .unwrap();
    assert_eq!(codes_with(&out.report, Status::Fail), expect.failing);
    assert!(codes_with(&out.report, Status::Unknown).is_empty());
    let kd8001 = out
        .report
        .checks
        .iter()
        .find(|c| c.code == "KD8001")
        .unwrap();
    assert!(
        kd8001
            .notes
            .iter()
            .any(|n| n.contains("nominated by Karpenter to a NodeClaim still on its way")),
        "{:?}",
        kd8001.notes
    );
}
