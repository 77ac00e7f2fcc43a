//! Many clusters in one run: the fleet document (`schema/fleet.v1.json`, `kind: FleetReport`)
//! and its text, markdown and short forms. Each cluster's own report is rendered exactly as a
//! single run renders it; this module adds the sections around them and the table across them.

use std::fmt::Write;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
use owo_colors::OwoColorize;
use serde::{Deserialize, Serialize};

use super::text::TextOptions;
use super::{EXIT_OK, Report, SCHEMA_VERSION, worst};
use crate::finding::Severity;
use crate::sanitize::{clip, one_line};

/// The `kind` of a fleet document; a single-cluster report has none.
pub const KIND: &str = "FleetReport";

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetReport {
    pub schema_version: u32,
    pub kind: String,
    pub karpdoctor_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub summary: FleetSummary,
    /// One row per target, in the order they were given.
    pub targets: Vec<FleetRow>,
    /// The single-cluster report of every target that could be checked, in target order.
    pub reports: Vec<Report>,
}

/// How a target came out, best to worst (the order the fleet table sorts by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No error or warning finding (info findings and some unknown checks allowed).
    Pass,
    /// Warnings, no error.
    Warning,
    /// At least one error-level finding.
    Error,
    /// Nothing could be concluded: every check that ran is unknown.
    Unknown,
    /// karpdoctor could not check the target at all; the row carries the reason.
    Unreachable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warning => "warning",
            Verdict::Error => "error",
            Verdict::Unknown => "unknown",
            Verdict::Unreachable => "unreachable",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Verdict::Pass => "✔",
            Verdict::Warning => "‼",
            Verdict::Error | Verdict::Unreachable => "✖",
            Verdict::Unknown => "?",
        }
    }

    /// The verdict of a report that was produced.
    pub fn of(report: &Report) -> Verdict {
        let s = &report.summary;
        if s.error > 0 {
            Verdict::Error
        } else if s.pass + s.fail == 0 && s.unknown > 0 {
            Verdict::Unknown
        } else if s.warning > 0 {
            Verdict::Warning
        } else {
            Verdict::Pass
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetSummary {
    pub targets: usize,
    pub pass: usize,
    pub warning: usize,
    pub error: usize,
    pub unknown: usize,
    pub unreachable: usize,
    /// The process's exit code: the worst of the targets' (2 > 1 > 0).
    pub exit_code: u8,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub context: String,
    /// The cluster the run resolved (or, when it could not run, the one it was given).
    pub cluster: Option<String>,
    pub region: Option<String>,
    /// The AWS profile the target was given, if any.
    pub profile: Option<String>,
    pub verdict: Verdict,
    /// This target's own exit code (`--fail-on` and `--exit-zero` applied).
    pub exit_code: u8,
    /// Findings per severity and checks that could not conclude.
    pub errors: usize,
    pub warnings: usize,
    pub unknown: usize,
    /// The run's root causes (`summary.rootCauses`) with an error-level finding.
    pub root_causes: Vec<String>,
    /// Why the target could not be checked (verdict `unreachable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Index of the target's report in `reports`; absent when it could not be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<usize>,
}

/// One target's run, as the app hands it over.
pub struct TargetOutcome {
    pub context: String,
    pub profile: Option<String>,
    pub cluster: Option<String>,
    pub region: Option<String>,
    /// The report, or the one-line reason the target could not be checked.
    pub result: Result<Report, String>,
    pub exit_code: u8,
}

impl FleetReport {
    pub fn new(started: jiff::Timestamp, outcomes: Vec<TargetOutcome>) -> Self {
        let mut reports = Vec::new();
        let mut targets = Vec::new();
        for o in outcomes {
            let row = match o.result {
                Ok(report) => {
                    let row = row_of(&report, o.context, o.profile, o.exit_code, reports.len());
                    reports.push(report);
                    row
                }
                Err(error) => FleetRow {
                    context: o.context,
                    cluster: o.cluster,
                    region: o.region,
                    profile: o.profile,
                    verdict: Verdict::Unreachable,
                    exit_code: o.exit_code,
                    errors: 0,
                    warnings: 0,
                    unknown: 0,
                    root_causes: Vec::new(),
                    error: Some(error),
                    report: None,
                },
            };
            targets.push(row);
        }
        let mut summary = FleetSummary {
            targets: targets.len(),
            exit_code: targets.iter().map(|r| r.exit_code).max().unwrap_or(EXIT_OK),
            ..FleetSummary::default()
        };
        for row in &targets {
            *match row.verdict {
                Verdict::Pass => &mut summary.pass,
                Verdict::Warning => &mut summary.warning,
                Verdict::Error => &mut summary.error,
                Verdict::Unknown => &mut summary.unknown,
                Verdict::Unreachable => &mut summary.unreachable,
            } += 1;
        }
        FleetReport {
            schema_version: SCHEMA_VERSION,
            kind: KIND.to_string(),
            karpdoctor_version: crate::VERSION.to_string(),
            started_at: started.to_string(),
            finished_at: jiff::Timestamp::now().to_string(),
            summary,
            targets,
            reports,
        }
    }

    /// The rows, worst first: by verdict, then errors, warnings and unknown checks; ties keep
    /// the order the targets were given.
    pub fn worst_first(&self) -> Vec<&FleetRow> {
        let mut rows: Vec<&FleetRow> = self.targets.iter().collect();
        rows.sort_by(|a, b| {
            (b.verdict, b.errors, b.warnings, b.unknown)
                .cmp(&(a.verdict, a.errors, a.warnings, a.unknown))
        });
        rows
    }

    fn report_of(&self, row: &FleetRow) -> Option<&Report> {
        row.report.and_then(|i| self.reports.get(i))
    }

    /// The closing line: how many targets came out how.
    fn verdict_line(&self) -> String {
        let s = &self.summary;
        let worst = self.worst_first().first().map(|r| r.verdict);
        let mut parts = Vec::new();
        for (n, words) in [
            (s.unreachable, "could not be checked"),
            (s.unknown, "inconclusive"),
            (s.error, "with problems that block nodes"),
            (s.warning, "with warnings"),
            (s.pass, "without problems"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {words}"));
            }
        }
        format!(
            "{} {} cluster{}: {}",
            worst.unwrap_or(Verdict::Pass).mark(),
            s.targets,
            if s.targets == 1 { "" } else { "s" },
            parts.join(", ")
        )
    }
}

fn row_of(
    report: &Report,
    context: String,
    profile: Option<String>,
    exit_code: u8,
    index: usize,
) -> FleetRow {
    // The run's root causes (what no other failed check explains) that block nodes.
    let root_causes = report
        .summary
        .root_causes
        .iter()
        .filter(|code| {
            report
                .checks
                .iter()
                .any(|c| &c.code == *code && worst(c) == Some(Severity::Error))
        })
        .cloned()
        .collect();
    FleetRow {
        context,
        cluster: report.target.cluster.clone(),
        region: report.target.region.clone(),
        profile,
        verdict: Verdict::of(report),
        exit_code,
        errors: report.summary.error,
        warnings: report.summary.warning,
        unknown: report.summary.unknown,
        root_causes,
        error: None,
        report: Some(index),
    }
}

pub fn render_json(fleet: &FleetReport) -> String {
    let mut text = serde_json::to_string_pretty(fleet).unwrap_or_else(|e| {
        serde_json::json!({ "schemaVersion": SCHEMA_VERSION, "kind": KIND, "errors": [e.to_string()] })
            .to_string()
    });
    text.push('\n');
    text
}

/// A section per cluster in target order (its usual text report), then the fleet table,
/// worst first, and a closing line: the end of the output is what stays on the screen.
pub fn render_text(fleet: &FleetReport, opts: TextOptions) -> String {
    let bold = |s: &str| {
        if opts.color {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    let n = fleet.targets.len();
    for (i, row) in fleet.targets.iter().enumerate() {
        let title = format!("━━ {}/{n} · context {} ━━", i + 1, one_line(&row.context));
        let _ = writeln!(out, "{}\n", bold(&title));
        match fleet.report_of(row) {
            Some(report) => out.push_str(&super::text::render(report, opts)),
            None => {
                let _ = writeln!(
                    out,
                    "✖ could not check this cluster: {}",
                    one_line(row.error.as_deref().unwrap_or("unknown reason"))
                );
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", bold(&format!("━━ fleet · {n} clusters ━━")));
    out.push_str(&table(fleet));
    let _ = writeln!(out, "\n\n{}", bold(&fleet.verdict_line()));
    out
}

fn table(fleet: &FleetReport) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "cluster",
            "context",
            "verdict",
            "errors",
            "warnings",
            "unknown",
            "root causes",
        ]);
    for row in fleet.worst_first() {
        let count = |n: usize| {
            let text = if row.report.is_some() {
                n.to_string()
            } else {
                "–".to_string()
            };
            Cell::new(text).set_alignment(CellAlignment::Right)
        };
        table.add_row(vec![
            Cell::new(show(row.cluster.as_deref())),
            Cell::new(one_line(&row.context)),
            Cell::new(format!("{} {}", row.verdict.mark(), row.verdict.as_str())),
            count(row.errors),
            count(row.warnings),
            count(row.unknown),
            // The cluster's own section above has the whole reason.
            Cell::new(clip(&causes(row), 72)),
        ]);
    }
    table.to_string()
}

fn show(v: Option<&str>) -> String {
    v.map(one_line).unwrap_or_else(|| "(unknown)".to_string())
}

/// The root-cause cell: the failing error-level checks, or why the target was not checked.
fn causes(row: &FleetRow) -> String {
    match &row.error {
        Some(e) => one_line(e),
        None if row.root_causes.is_empty() => "–".to_string(),
        None => row.root_causes.join(", "),
    }
}

/// The fleet table first (what a ticket or a pull request wants to see), then each
/// cluster's usual markdown report in target order.
pub fn render_markdown(fleet: &FleetReport) -> String {
    let md = |s: &str| one_line(s).replace('|', "\\|").replace('`', "\\`");
    let mut out = String::new();
    let _ = writeln!(out, "## karpdoctor fleet report\n");
    let _ = writeln!(out, "**{}**\n", fleet.verdict_line());
    let _ = writeln!(
        out,
        "| cluster | context | verdict | errors | warnings | unknown | root causes |\n|---|---|---|---:|---:|---:|---|"
    );
    for row in fleet.worst_first() {
        let count = |n: usize| {
            if row.report.is_some() {
                n.to_string()
            } else {
                "–".to_string()
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {} | {} | {} | {} |",
            md(&show(row.cluster.as_deref())),
            md(&row.context),
            row.verdict.mark(),
            row.verdict.as_str(),
            count(row.errors),
            count(row.warnings),
            count(row.unknown),
            md(&causes(row)),
        );
    }
    for row in &fleet.targets {
        let _ = writeln!(out, "\n---\n");
        match fleet.report_of(row) {
            Some(report) => out.push_str(&super::markdown::render(report)),
            None => {
                let _ = writeln!(
                    out,
                    "## karpdoctor report\n\n✖ could not check context {}: {}",
                    md(&row.context),
                    md(row.error.as_deref().unwrap_or("unknown reason"))
                );
            }
        }
    }
    out
}

/// Every line of each cluster's short output prefixed with `[context]`, a line per target
/// that could not be checked, and a closing `fleet …` line.
pub fn render_short(fleet: &FleetReport) -> String {
    let mut out = String::new();
    for row in &fleet.targets {
        let context = one_line(&row.context);
        match fleet.report_of(row) {
            Some(report) => {
                for line in super::short::render(report).lines() {
                    let _ = writeln!(out, "[{context}] {line}");
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "[{context}] unreachable: {}",
                    one_line(row.error.as_deref().unwrap_or("unknown reason"))
                );
            }
        }
    }
    let s = &fleet.summary;
    let _ = writeln!(
        out,
        "fleet targets={} pass={} warning={} error={} unknown={} unreachable={}",
        s.targets, s.pass, s.warning, s.error, s.unknown, s.unreachable
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{CheckReport, Summary};

    fn report(context: &str, summary: Summary, failing: &[(&str, Severity)]) -> Report {
        let mut r: Report = serde_json::from_value(serde_json::json!({
            "schemaVersion": 1, "karpdoctorVersion": "0", "runId": "r", "startedAt": "t",
            "finishedAt": "t", "mode": "live", "target": {"kubeContext": context, "cluster": context},
            "summary": summary, "checks": [], "errors": []
        }))
        .unwrap();
        for (code, severity) in failing {
            let c: CheckReport = serde_json::from_value(serde_json::json!({
                "code": code, "slug": "s", "title": "t", "category": "install",
                "severity": "error", "status": "fail", "durationMs": 0, "docUrl": "u",
                "findings": [{"code": code, "severity": severity, "object": "o", "message": "m",
                              "evidence": {}, "hint": "", "remediation": {"commands": []}, "docUrl": "u"}]
            }))
            .unwrap();
            r.checks.push(c);
        }
        r
    }

    fn outcome(context: &str, result: Result<Report, String>, exit_code: u8) -> TargetOutcome {
        TargetOutcome {
            context: context.to_string(),
            profile: None,
            cluster: None,
            region: None,
            result,
            exit_code,
        }
    }

    #[test]
    fn rows_sort_worst_first_and_the_exit_code_is_the_worst() {
        let healthy = Summary {
            checks: 2,
            pass: 2,
            ..Summary::default()
        };
        let warned = Summary {
            checks: 2,
            pass: 1,
            fail: 1,
            warning: 1,
            root_causes: vec!["KD4001".to_string()],
            ..Summary::default()
        };
        let broken = Summary {
            checks: 2,
            pass: 1,
            fail: 1,
            error: 1,
            root_causes: vec!["KD1001".to_string()],
            ..Summary::default()
        };
        let fleet = FleetReport::new(
            jiff::Timestamp::now(),
            vec![
                outcome("green", Ok(report("green", healthy, &[])), 0),
                outcome(
                    "amber",
                    Ok(report("amber", warned, &[("KD4001", Severity::Warning)])),
                    0,
                ),
                outcome("gone", Err("cannot reach it".to_string()), 2),
                outcome(
                    "red",
                    Ok(report("red", broken, &[("KD1001", Severity::Error)])),
                    1,
                ),
            ],
        );
        let order: Vec<&str> = fleet
            .worst_first()
            .iter()
            .map(|r| r.context.as_str())
            .collect();
        assert_eq!(order, ["gone", "red", "amber", "green"]);
        assert_eq!(fleet.summary.exit_code, 2);
        assert_eq!(
            (
                fleet.summary.pass,
                fleet.summary.warning,
                fleet.summary.error
            ),
            (1, 1, 1)
        );
        assert_eq!(fleet.summary.unreachable, 1);
        // Only root causes that block nodes (errors) count; the unreachable row has no report.
        assert_eq!(fleet.targets[3].root_causes, ["KD1001"]);
        assert!(fleet.targets[1].root_causes.is_empty());
        assert_eq!(fleet.targets[2].report, None);
        assert_eq!(fleet.targets[3].report, Some(2));
        let text = render_text(&fleet, TextOptions::default());
        let table_start = text.find("━━ fleet").unwrap();
        let table = &text[table_start..];
        let at = |s: &str| table.find(s).unwrap();
        assert!(at("gone") < at("red") && at("red") < at("amber") && at("amber") < at("green"));
        assert!(table.contains("cannot reach it"));
        let markdown = render_markdown(&fleet);
        let md_at = |s: &str| markdown.find(&format!("| {s} |")).unwrap();
        assert!(md_at("gone") < md_at("red") && md_at("red") < md_at("green"));
        assert!(markdown.contains("✖ could not check context gone: cannot reach it"));
        assert_eq!(markdown.matches("## karpdoctor report").count(), 4);
        let short = render_short(&fleet);
        assert!(short.contains("[gone] unreachable: cannot reach it"));
        assert!(
            short.ends_with("fleet targets=4 pass=1 warning=1 error=1 unknown=0 unreachable=1\n")
        );
    }
}
