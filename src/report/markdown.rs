//! Markdown output, for pasting into a GitHub issue or a support ticket: a summary, a table
//! of every check, each problem with its fix, and the evidence folded away.

use std::fmt::Write;

use super::Report;
use super::text::mark;
use crate::engine::Status;
use crate::sanitize::{for_terminal, one_line};

/// Escapes text for a markdown table cell or inline position.
fn md(s: &str) -> String {
    one_line(s)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('`', "\\`")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn render(report: &Report) -> String {
    let t = &report.target;
    let s = &report.summary;
    let mut out = String::new();
    let _ = writeln!(out, "## karpdoctor report\n");
    let _ = writeln!(out, "| | |\n|---|---|");
    let rows = [
        ("karpdoctor", Some(report.karpdoctor_version.clone())),
        ("mode", Some(report.mode.clone())),
        ("cluster", t.cluster.clone()),
        ("region", t.region.clone()),
        ("account", t.account.clone()),
        ("Karpenter", t.karpenter_version.clone()),
        (
            "EKS Auto Mode",
            t.auto_mode.as_deref().map(|m| {
                if m == crate::target::AUTO_MODE_MIXED {
                    "on, beside a self-managed Karpenter".to_string()
                } else {
                    "on, with no self-managed Karpenter".to_string()
                }
            }),
        ),
        ("Karpenter namespace", t.karpenter_namespace.clone()),
        ("Kubernetes", t.kubernetes_version.clone()),
        ("upgrade to Karpenter", t.upgrade_to.clone()),
        ("upgrade to Kubernetes", t.upgrade_kubernetes.clone()),
        ("kube context", t.kube_context.clone()),
        (
            "run",
            Some(format!("{} ({})", report.run_id, report.started_at)),
        ),
    ];
    // The Auto Mode row only where it is on (absent, it is off or could not be read), and the
    // upgrade rows only on `karpdoctor upgrade`'s runs.
    let optional = [
        "EKS Auto Mode",
        "upgrade to Karpenter",
        "upgrade to Kubernetes",
    ];
    for (name, value) in rows
        .into_iter()
        .filter(|(name, value)| !optional.contains(name) || value.is_some())
    {
        let _ = writeln!(
            out,
            "| {name} | {} |",
            md(value.as_deref().unwrap_or("unknown"))
        );
    }
    let _ = writeln!(
        out,
        "\n**{} passed, {} failed, {} unknown, {} skipped** — findings: {} error, {} warning, {} info\n",
        s.pass, s.fail, s.unknown, s.skip, s.error, s.warning, s.info
    );
    if let Some(line) = super::text::root_causes(report) {
        let _ = writeln!(out, "**{}**\n", md(&line));
    }

    let _ = writeln!(out, "| | code | check | status |\n|---|---|---|---|");
    for c in &report.checks {
        let _ = writeln!(
            out,
            "| {} | [{}]({}) | {} | {} |",
            mark(c),
            c.code,
            c.doc_url,
            md(&c.title),
            match (&c.status, &c.reason) {
                (Status::Unknown | Status::Skip, Some(r)) =>
                    format!("{}: {}", c.status.as_str(), md(r)),
                _ => c.status.as_str().to_string(),
            }
        );
    }

    if let Some(plan) = &report.plan {
        let _ = writeln!(out, "\n### Upgrade plan: {}\n", md(&plan.moves()));
        if plan.steps.is_empty() {
            let _ = writeln!(out, "Nothing to do.");
        }
        for (i, step) in plan.steps.iter().enumerate() {
            let _ = write!(out, "{}. **{}**", i + 1, md(&step.title));
            if let Some(why) = step.reasons() {
                let _ = write!(out, " ({})", md(&why));
            }
            out.push('\n');
            for action in &step.actions {
                let _ = writeln!(out, "   - {}", md(action));
            }
            if !step.commands.is_empty() {
                let _ = writeln!(out, "\n   ```sh");
                for cmd in &step.commands {
                    for line in for_terminal(cmd).lines() {
                        let _ = writeln!(out, "   {}", line.replace("```", "'''"));
                    }
                }
                let _ = writeln!(out, "   ```\n");
            }
        }
        for u in &plan.unjudged {
            let _ = writeln!(out, "- not judged: {}", md(u));
        }
    }

    let failing: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "\n### Problems\n");
    }
    for c in failing {
        let _ = writeln!(out, "#### {} {} · {}\n", mark(c), c.code, c.slug);
        for f in &c.findings {
            let _ = writeln!(
                out,
                "- **{}** `{}`: {}",
                f.severity,
                md(&f.object),
                md(&f.message)
            );
            if !f.caused_by.is_empty() {
                let _ = writeln!(out, "  - caused by {}", f.caused_by.join(", "));
            }
            if !f.owners_passed.is_empty() {
                let _ = writeln!(
                    out,
                    "  - {} passed: the cause is one they cannot see",
                    f.owners_passed.join(", ")
                );
            }
            if !f.hint.is_empty() {
                let _ = writeln!(out, "  - try: {}", md(&f.hint));
            }
            if !f.remediation.commands.is_empty() {
                let _ = writeln!(out, "  - fix:\n\n    ```sh");
                for cmd in &f.remediation.commands {
                    for line in for_terminal(cmd).lines() {
                        let _ = writeln!(out, "    {}", line.replace("```", "'''"));
                    }
                }
                let _ = writeln!(out, "    ```\n");
            }
            if !f.evidence.is_empty() {
                let _ = writeln!(out, "  <details><summary>evidence</summary>\n");
                let _ = writeln!(out, "  | | |\n  |---|---|");
                for (k, v) in &f.evidence {
                    let v = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let _ = writeln!(out, "  | {} | {} |", md(k), md(&v));
                }
                let _ = writeln!(out, "\n  </details>\n");
            }
        }
        let _ = writeln!(
            out,
            "\nRemediation: `karpdoctor explain {}` or [{}]({})\n",
            c.code, c.code, c.doc_url
        );
    }
    out
}
