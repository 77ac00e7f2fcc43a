//! What the scenario snapshots leave out: every trace of the checks that passed (their text
//! lines and markdown rows, their JSON entries, the counts of them), so that adding a check
//! that passes on a scenario changes none of its snapshots. Each elided line and count is
//! compared with the report before it goes; that exactly the expected checks did not pass is
//! asserted by `every_scenario_fires_exactly_the_expected_checks`.

use std::collections::{BTreeMap, BTreeSet};

use karpdoctor::check::Category;
use karpdoctor::engine::Status;
use karpdoctor::report::{CheckReport, Report};

/// Stands for the number of passing checks.
const REST: &str = "[rest]";
/// Stands for the number of checks that ran.
const ALL: &str = "[all]";

fn passing(report: &Report) -> impl Iterator<Item = &CheckReport> {
    report.checks.iter().filter(|c| c.status == Status::Pass)
}

/// The JSON report without passing checks; `summary.checks` and `summary.pass` become markers.
pub fn json(report: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(report).expect("the report serializes");
    v["checks"]
        .as_array_mut()
        .expect("checks[]")
        .retain(|c| c["status"] != "pass");
    let summary = v["summary"].as_object_mut().expect("summary{}");
    assert_eq!(summary["pass"], passing(report).count(), "summary.pass");
    assert_eq!(summary["checks"], report.checks.len(), "summary.checks");
    summary.insert("checks".into(), ALL.into());
    summary.insert("pass".into(), REST.into());
    v
}

/// The text report without the passing checks' lines, the category headings left empty, the
/// summary table's rows of categories where everything passed, its pass column, and the
/// verdict's count of passes.
pub fn text(report: &Report, text: &str) -> String {
    let pass_lines: BTreeSet<String> = passing(report)
        .map(|c| format!("  ✔ {}  {}", c.code, c.title))
        .collect();
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        if !pass_lines.contains(line) {
            lines.push(line.to_string());
        }
    }
    assert_eq!(
        text.lines().count() - lines.len(),
        pass_lines.len(),
        "every passing check has one line"
    );
    let lines = without_empty_headings(lines);
    let mut lines = summary_table(report, lines);
    let verdict = lines
        .iter_mut()
        .rev()
        .find(|l| !l.is_empty())
        .expect("a verdict line");
    let count = format!("· {} passed, ", report.summary.pass);
    assert!(verdict.contains(&count), "verdict counts passes: {verdict}");
    *verdict = verdict.replacen(&count, &format!("· {REST} passed, "), 1);
    joined(lines, text)
}

/// Drops a category heading with no check left under it, and the blank line before it.
fn without_empty_headings(lines: Vec<String>) -> Vec<String> {
    let titles: BTreeSet<&str> = Category::ALL.iter().map(|c| c.title()).collect();
    let mut kept: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let empty_section = lines.get(i + 1).is_none_or(|next| next.is_empty());
        if titles.contains(line.as_str()) && empty_section {
            if kept.last().is_some_and(|l| l.is_empty()) {
                kept.pop();
            }
            continue;
        }
        kept.push(line.clone());
    }
    kept
}

/// In the summary table (`│ category ┆ pass ┆ fail ┆ unknown ┆ skip │` rows): checks each
/// pass count against the report, drops the rows with nothing but passes, and masks the pass
/// count of the others, keeping the cell's width.
fn summary_table(report: &Report, lines: Vec<String>) -> Vec<String> {
    let mut passes: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &report.checks {
        let n = passes.entry(c.category.title()).or_default();
        if c.status == Status::Pass {
            *n += 1;
        }
    }
    let mut rows = 0;
    let mut kept = Vec::new();
    for line in lines {
        let Some(inner) = line.strip_prefix('│').and_then(|l| l.strip_suffix('│')) else {
            kept.push(line);
            continue;
        };
        let mut cells: Vec<String> = inner.split('┆').map(str::to_string).collect();
        assert_eq!(cells.len(), 5, "a summary row has five cells: {line}");
        let category = cells[0].trim();
        if category == "category" {
            kept.push(line);
            continue;
        }
        rows += 1;
        let expected = passes
            .get(category)
            .unwrap_or_else(|| panic!("summary row of an unknown category: {line}"));
        assert_eq!(
            cells[1].trim(),
            expected.to_string(),
            "passes in {category}"
        );
        if cells[2..].iter().all(|c| c.trim() == "0") {
            continue;
        }
        let width = cells[1].chars().count();
        cells[1] = format!("{:>w$} ", "·", w = width - 1);
        kept.push(format!("│{}│", cells.join("┆")));
    }
    assert_eq!(rows, passes.len(), "one summary row per category that ran");
    kept
}

/// The markdown report without the passing checks' table rows and the count of passes.
pub fn markdown(report: &Report, md: &str) -> String {
    let rows: BTreeSet<String> = passing(report)
        .map(|c| format!("| ✔ | [{}](", c.code))
        .collect();
    let is_pass_row =
        |l: &str| l.ends_with(" | pass |") && rows.iter().any(|r| l.starts_with(r.as_str()));
    let mut lines: Vec<String> = md
        .lines()
        .filter(|l| !is_pass_row(l))
        .map(str::to_string)
        .collect();
    assert_eq!(
        md.lines().count() - lines.len(),
        rows.len(),
        "every passing check has one row"
    );
    let count = format!("**{} passed, ", report.summary.pass);
    let summary = lines
        .iter_mut()
        .find(|l| l.starts_with(&count))
        .unwrap_or_else(|| panic!("no line starts with {count}"));
    *summary = summary.replacen(&count, &format!("**{REST} passed, "), 1);
    joined(lines, md)
}

/// The lines as one text, ending in a newline when the original did.
fn joined(lines: Vec<String>, original: &str) -> String {
    let mut out = lines.join("\n");
    if original.ends_with('\n') {
        out.push('\n');
    }
    out
}
