//! One line per finding, and per check that could not run, for log pipelines:
//! `error KD1001 Pod/karpenter/karpenter-x: container controller is crash-looping …`.

use std::fmt::Write;

use super::Report;
use crate::engine::Status;
use crate::sanitize::one_line;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for c in &report.checks {
        match c.status {
            Status::Fail => {
                for f in &c.findings {
                    let mut state = f
                        .history
                        .map(|h| format!(" [{}]", h.as_str()))
                        .unwrap_or_default();
                    if !f.caused_by.is_empty() {
                        let _ = write!(state, " [caused by {}]", f.caused_by.join(","));
                    }
                    let _ = writeln!(
                        out,
                        "{} {} {}: {}{state}",
                        f.severity,
                        f.code,
                        one_line(&f.object),
                        one_line(&f.message)
                    );
                }
            }
            Status::Unknown => {
                let _ = writeln!(
                    out,
                    "unknown {}: {}",
                    c.code,
                    one_line(c.reason.as_deref().unwrap_or(""))
                );
            }
            Status::Pass | Status::Skip => {}
        }
    }
    for r in report.resolved.iter().flatten() {
        let _ = writeln!(
            out,
            "resolved {} {}: {}",
            r.code,
            one_line(&r.object),
            one_line(&r.message)
        );
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "summary checks={} pass={} fail={} unknown={} skip={} error={} warning={} info={} root_causes={}",
        s.checks,
        s.pass,
        s.fail,
        s.unknown,
        s.skip,
        s.error,
        s.warning,
        s.info,
        s.root_causes.join(",")
    );
    out
}
