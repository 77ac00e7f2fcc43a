//! Human output: a header naming what was examined, checks grouped by category with a mark
//! each, failures expanded (object, message, evidence, fix, explain), a summary table and a
//! one-line verdict. Colour only when asked for or on a terminal; never with `NO_COLOR`.

use std::fmt::Write;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
use owo_colors::OwoColorize;

use super::{CheckReport, Report, worst};
use crate::engine::Status;
use crate::finding::{Category, HistoryState, Severity};
use crate::sanitize::{for_terminal, one_line};
use crate::target::{AUTO_MODE_MIXED, AUTO_MODE_ONLY};
use crate::upgrade::plan::Plan;

#[derive(Clone, Copy, Debug, Default)]
pub struct TextOptions {
    pub color: bool,
    /// Show passing checks' durations, evidence of every finding and run statistics.
    pub verbose: bool,
    /// Only failures and the verdict (`-q`).
    pub quiet: bool,
}

/// Marks per outcome: pass, warning, error, unknown, skip (and info findings).
pub fn mark(check: &CheckReport) -> &'static str {
    match check.status {
        Status::Pass => "✔",
        Status::Fail => match worst(check) {
            Some(Severity::Error) | None => "✖",
            Some(Severity::Warning) => "‼",
            Some(Severity::Info) => "ℹ",
        },
        Status::Unknown => "?",
        Status::Skip => "–",
    }
}

struct Paint(bool);

impl Paint {
    fn mark(&self, check: &CheckReport) -> String {
        let m = mark(check);
        if !self.0 {
            return m.to_string();
        }
        match (check.status, worst(check)) {
            (Status::Pass, _) => m.green().to_string(),
            (Status::Fail, Some(Severity::Warning)) => m.yellow().to_string(),
            (Status::Fail, Some(Severity::Info)) => m.blue().to_string(),
            (Status::Fail, _) => m.red().to_string(),
            (Status::Unknown, _) => m.magenta().to_string(),
            (Status::Skip, _) => m.dimmed().to_string(),
        }
    }

    fn bold(&self, s: &str) -> String {
        if self.0 {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.0 {
            s.dimmed().to_string()
        } else {
            s.to_string()
        }
    }
}

pub fn render(report: &Report, opts: TextOptions) -> String {
    let paint = Paint(opts.color);
    let mut out = String::new();
    header(&mut out, report, &paint);
    if let Some(line) = root_causes(report) {
        let _ = writeln!(out, "\n{}", paint.bold(&line));
    }

    for &category in Category::ALL {
        let checks: Vec<&CheckReport> = report
            .checks
            .iter()
            .filter(|c| c.category == category)
            .filter(|c| !opts.quiet || matches!(c.status, Status::Fail | Status::Unknown))
            .collect();
        if checks.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", paint.bold(category.title()));
        for (i, check) in checks.iter().enumerate() {
            // Skipped checks in a row for one reason (EKS Auto Mode's, a missing API) share
            // one reason line, after the last of them.
            let shared = check.status == Status::Skip
                && checks
                    .get(i + 1)
                    .is_some_and(|next| next.status == Status::Skip && next.reason == check.reason);
            check_line(&mut out, check, &paint, opts, !shared);
        }
    }

    let unknown_for_permissions: Vec<&CheckReport> = report
        .checks
        .iter()
        .filter(|c| c.missing_permission.is_some())
        .collect();
    if !unknown_for_permissions.is_empty() {
        let _ = writeln!(
            out,
            "\n{} check{} could not run: karpdoctor is missing {}",
            unknown_for_permissions.len(),
            if unknown_for_permissions.len() == 1 {
                ""
            } else {
                "s"
            },
            unknown_for_permissions
                .iter()
                .filter_map(|c| c.missing_permission.as_deref())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    if let Some(plan) = &report.plan {
        plan_section(&mut out, plan, &paint);
    }

    if let Some(resolved) = report.resolved.as_ref().filter(|r| !r.is_empty()) {
        let _ = writeln!(out, "\nResolved since the last run");
        for r in resolved {
            let _ = writeln!(
                out,
                "  ✔ {} {}: {} (first seen {})",
                r.code,
                one_line(&r.object),
                one_line(&r.message),
                one_line(&r.first_seen)
            );
        }
    }
    if !opts.quiet {
        out.push('\n');
        out.push_str(&summary_table(report));
        out.push('\n');
    }
    if opts.verbose
        && let Some(stats) = &report.stats
    {
        let _ = writeln!(out, "\nStatistics");
        let _ = writeln!(out, "  wall time: {} ms", stats.wall_ms);
        let calls: Vec<String> = stats
            .api_calls
            .iter()
            .map(|(svc, n)| format!("{svc} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  API calls: {}",
            if calls.is_empty() {
                "none".to_string()
            } else {
                calls.join(", ")
            }
        );
        if let Some(path) = &stats.critical_path {
            let chain: Vec<String> = path.facts.iter().map(|f| one_line(f)).collect();
            let _ = writeln!(
                out,
                "  critical path: {} round{} of requests, {} ms: {}",
                path.rounds,
                if path.rounds == 1 { "" } else { "s" },
                path.elapsed_ms,
                if chain.is_empty() {
                    "none".to_string()
                } else {
                    chain.join(" → ")
                }
            );
        }
        let slowest: Vec<String> = stats
            .checks
            .iter()
            .take(5)
            .map(|c| format!("{} {} ms", c.code, c.duration_ms))
            .collect();
        if !slowest.is_empty() {
            let _ = writeln!(out, "  slowest checks: {}", slowest.join(", "));
        }
        for f in &stats.facts {
            let _ = writeln!(
                out,
                "  fact {}: fetched {}× at +{} ms in {} ms, {} request{}{}",
                one_line(&f.fact),
                f.fetches,
                f.started_ms,
                f.duration_ms,
                f.calls,
                if f.calls == 1 { "" } else { "s" },
                f.error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
    }
    let _ = writeln!(out, "\n{}", verdict(report, &paint));
    out
}

fn header(out: &mut String, report: &Report, paint: &Paint) {
    let t = &report.target;
    let mut first = vec![format!("karpdoctor {}", report.karpdoctor_version)];
    if report.mode != "live" {
        first.push(format!("{} of a recorded cluster", report.mode));
    }
    first.push(format!("cluster {}", show(t.cluster.as_deref())));
    first.push(format!("region {}", show(t.region.as_deref())));
    if let Some(a) = &t.account {
        first.push(format!("account {}", one_line(a)));
    }
    let _ = writeln!(out, "{}", paint.bold(&first.join(" · ")));
    let mut second = Vec::new();
    match (&t.karpenter_version, &t.karpenter_namespace) {
        (Some(v), Some(ns)) => {
            second.push(format!("Karpenter {} in {}", one_line(v), one_line(ns)))
        }
        (None, Some(ns)) => second.push(format!("Karpenter in {}", one_line(ns))),
        // Only `pre-install` knows a version without a controller: the one to be installed.
        (Some(v), None) => second.push(format!("before installing Karpenter {}", one_line(v))),
        _ if t.auto_mode.as_deref() == Some(AUTO_MODE_ONLY) => {}
        _ => second.push("Karpenter controller not found".to_string()),
    }
    match t.auto_mode.as_deref() {
        Some(AUTO_MODE_ONLY) => second.insert(0, "EKS Auto Mode".to_string()),
        Some(AUTO_MODE_MIXED) => second.push("beside EKS Auto Mode".to_string()),
        _ => {}
    }
    if let Some(k) = &t.kubernetes_version {
        second.push(format!("Kubernetes {}", one_line(k)));
    }
    // `karpdoctor upgrade`: what the run judged an upgrade to.
    let upgrade: Vec<String> = [
        t.upgrade_to
            .as_deref()
            .map(|v| format!("Karpenter {}", one_line(v))),
        t.upgrade_kubernetes
            .as_deref()
            .map(|k| format!("Kubernetes {}", one_line(k))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !upgrade.is_empty() {
        second.push(format!("upgrading to {}", upgrade.join(" and ")));
    }
    if let Some(c) = &t.kube_context {
        second.push(format!("context {}", one_line(c)));
    }
    if let Some(id) = &t.aws_identity {
        second.push(format!("as {}", one_line(id)));
    }
    let _ = writeln!(out, "{}", paint.dim(&second.join(" · ")));
}

fn show(v: Option<&str>) -> String {
    v.map(one_line).unwrap_or_else(|| "(unknown)".to_string())
}

fn check_line(
    out: &mut String,
    check: &CheckReport,
    paint: &Paint,
    opts: TextOptions,
    with_reason: bool,
) {
    let timing = if opts.verbose {
        paint.dim(&format!("  [{} ms]", check.duration_ms))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {} {}  {}{}",
        paint.mark(check),
        check.code,
        check.title,
        timing
    );
    match check.status {
        Status::Unknown | Status::Skip if with_reason => {
            if let Some(reason) = &check.reason {
                let _ = writeln!(out, "      {}", paint.dim(&one_line(reason)));
            }
        }
        Status::Fail => {
            for f in &check.findings {
                let since = match (f.history, f.first_seen.as_deref()) {
                    (Some(HistoryState::Ongoing), Some(first)) => {
                        format!(" (ongoing since {first})")
                    }
                    (Some(HistoryState::New), _) => " (new)".to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "      {}: {}{}",
                    one_line(&f.object),
                    one_line(&f.message),
                    paint.dim(&since)
                );
                if !f.caused_by.is_empty() {
                    let _ = writeln!(
                        out,
                        "          {}",
                        paint.bold(&format!("caused by {}", f.caused_by.join(", ")))
                    );
                }
                if !f.owners_passed.is_empty() {
                    let _ = writeln!(
                        out,
                        "          {} passed: the cause is one they cannot see",
                        f.owners_passed.join(", ")
                    );
                }
                for (name, value) in &f.evidence {
                    let value = match value {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let _ = writeln!(out, "          {}: {}", one_line(name), one_line(&value));
                }
                if !f.hint.is_empty() {
                    let _ = writeln!(out, "        try: {}", one_line(&f.hint));
                }
                for cmd in &f.remediation.commands {
                    let _ = writeln!(out, "        fix: {}", for_terminal(cmd));
                }
            }
            let _ = writeln!(
                out,
                "        {}",
                paint.dim(&format!("→ karpdoctor explain {}", check.code))
            );
        }
        Status::Pass | Status::Unknown | Status::Skip => {}
    }
    if opts.verbose {
        for note in &check.notes {
            let _ = writeln!(out, "      {}", paint.dim(&format!("· {}", one_line(note))));
        }
    }
}

/// `karpdoctor upgrade`: the steps in order, each with what stands in its way and its
/// commands.
fn plan_section(out: &mut String, plan: &Plan, paint: &Paint) {
    let _ = writeln!(
        out,
        "\n{}",
        paint.bold(&format!("Upgrade plan: {}", plan.moves()))
    );
    if plan.steps.is_empty() {
        let _ = writeln!(out, "  nothing to do");
    }
    for (i, step) in plan.steps.iter().enumerate() {
        let why = step
            .reasons()
            .map(|r| format!("  ({})", one_line(&r)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}. {}{}",
            i + 1,
            one_line(&step.title),
            paint.dim(&why)
        );
        for action in &step.actions {
            let _ = writeln!(out, "     {}", one_line(action));
        }
        for cmd in &step.commands {
            let _ = writeln!(out, "     $ {}", for_terminal(cmd));
        }
    }
    for u in &plan.unjudged {
        let _ = writeln!(out, "  not judged: {}", one_line(u));
    }
}

/// The opening line when something is wrong: how many problems, and the root causes to fix
/// first (the checks whose problems no other failed check explains).
pub fn root_causes(report: &Report) -> Option<String> {
    let problems = report.problems();
    if problems == 0 {
        return None;
    }
    let roots = &report.summary.root_causes;
    let named: Vec<String> = roots
        .iter()
        .map(|code| {
            let slug = report
                .checks
                .iter()
                .find(|c| &c.code == code)
                .map(|c| c.slug.as_str())
                .unwrap_or_default();
            format!("{code} {slug}")
        })
        .collect();
    Some(format!(
        "{problems} problem{} from {} root cause{}: {}",
        plural(problems),
        roots.len(),
        plural(roots.len()),
        named.join(", ")
    ))
}

fn summary_table(report: &Report) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["category", "pass", "fail", "unknown", "skip"]);
    for &category in Category::ALL {
        let checks: Vec<&CheckReport> = report
            .checks
            .iter()
            .filter(|c| c.category == category)
            .collect();
        if checks.is_empty() {
            continue;
        }
        let count = |s: Status| checks.iter().filter(|c| c.status == s).count().to_string();
        table.add_row(vec![
            Cell::new(category.title()),
            Cell::new(count(Status::Pass)).set_alignment(CellAlignment::Right),
            Cell::new(count(Status::Fail)).set_alignment(CellAlignment::Right),
            Cell::new(count(Status::Unknown)).set_alignment(CellAlignment::Right),
            Cell::new(count(Status::Skip)).set_alignment(CellAlignment::Right),
        ]);
    }
    table.to_string()
}

/// The closing line: the worst outcome's mark and the counts.
fn verdict(report: &Report, paint: &Paint) -> String {
    let s = &report.summary;
    let (mark, words) = if s.error > 0 {
        ("✖", "Karpenter has problems that block nodes")
    } else if s.warning > 0 {
        ("‼", "Karpenter works, with warnings")
    } else if s.fail > 0 {
        ("ℹ", "no problems; see the notes above")
    } else if s.pass == 0 && s.unknown > 0 {
        ("?", "nothing could be checked")
    } else if s.unknown > 0 {
        ("?", "no problems found in what could be checked")
    } else {
        ("✔", "no problems found")
    };
    let roots = if s.error + s.warning > 0 {
        format!(
            " ({} root cause{})",
            s.root_causes.len(),
            plural(s.root_causes.len())
        )
    } else {
        String::new()
    };
    let text = format!(
        "{mark} {words}: {} error{}, {} warning{}{roots}, {} info · {} passed, {} failed, {} unknown, {} skipped",
        s.error,
        plural(s.error),
        s.warning,
        plural(s.warning),
        s.info,
        s.pass,
        s.fail,
        s.unknown,
        s.skip
    );
    paint.bold(&text)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;

    fn second_line(target: Target) -> String {
        let report = Report::new("live", target, &[], jiff::Timestamp::UNIX_EPOCH);
        let text = render(
            &report,
            TextOptions {
                color: false,
                verbose: false,
                quiet: false,
            },
        );
        text.lines().nth(1).unwrap_or_default().to_string()
    }

    /// EKS Auto Mode alone has no controller to miss; beside one, both are named.
    #[test]
    fn the_header_names_eks_auto_mode() {
        let only = second_line(Target {
            auto_mode: Some(AUTO_MODE_ONLY.to_string()),
            kubernetes_version: Some("v1.33.5".to_string()),
            ..Target::default()
        });
        assert_eq!(only, "EKS Auto Mode · Kubernetes v1.33.5");
        let mixed = second_line(Target {
            auto_mode: Some(AUTO_MODE_MIXED.to_string()),
            karpenter_version: Some("1.8.1".to_string()),
            karpenter_namespace: Some("karpenter".to_string()),
            ..Target::default()
        });
        assert_eq!(mixed, "Karpenter 1.8.1 in karpenter · beside EKS Auto Mode");
        let none = second_line(Target::default());
        assert_eq!(none, "Karpenter controller not found");
    }

    /// `karpdoctor upgrade` names what it judged an upgrade to.
    #[test]
    fn the_header_names_the_upgrade_targets() {
        let both = second_line(Target {
            karpenter_version: Some("1.8.1".to_string()),
            karpenter_namespace: Some("karpenter".to_string()),
            upgrade_to: Some("1.9.0".to_string()),
            upgrade_kubernetes: Some("1.34".to_string()),
            ..Target::default()
        });
        assert_eq!(
            both,
            "Karpenter 1.8.1 in karpenter · upgrading to Karpenter 1.9.0 and Kubernetes 1.34"
        );
    }
}
