//! `-o prometheus`: the Prometheus text exposition format (version 0.0.4), for alerting. The
//! same text is what `--pushgateway` pushes.
//!
//! Every metric carries the `cluster` label (empty when the run could not name the cluster):
//! - `karpdoctor_up`: 1 when the run could judge (its exit code is not 2), else 0.
//! - `karpdoctor_last_run_timestamp_seconds`, `karpdoctor_run_duration_seconds`.
//! - `karpdoctor_check_status{code,slug,category}`: 0 pass, 1 fail, 2 unknown, 3 skip; one
//!   series per check the run applied.
//! - `karpdoctor_findings{code,severity}`: for every check that concluded (passed or failed),
//!   one series per severity (error, warning, info), zero included. A problem that goes away
//!   therefore shows as a series dropping to 0, not as a series that vanishes, and the set of
//!   series stays the same from run to run. A check that could not conclude (unknown, skip)
//!   has no findings series: its count is not known, and 0 would claim it is.
//!
//! The exposition is written by `prometheus-client` (its 0.0.4 text encoder escapes label
//! values and help text); a collector over the report keeps the report's order, so the output
//! is stable from run to run.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::fleet::FleetReport;
use super::{EXIT_TROUBLE, FailOn, Report};
use crate::engine::Status;
use crate::finding::Severity;

/// The `Content-Type` of this output (the Pushgateway reads it from the push).
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Severities in the order their series are written.
const SEVERITIES: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Info];

pub fn render(report: &Report) -> String {
    encode(vec![RunMetrics::of(report)])
}

/// A fleet's metrics in one exposition: each family once, with a series per cluster. A
/// cluster that could not be checked is `karpdoctor_up 0` and nothing else. The `cluster`
/// label is the cluster's name, or its kube context when the name is unknown or shared by
/// another target of the fleet.
pub fn render_fleet(fleet: &FleetReport) -> String {
    encode(fleet_runs(fleet).into_iter().map(|(_, run)| run).collect())
}

/// Each target's own exposition, keyed by its `cluster` label: what `--pushgateway` pushes,
/// one group per cluster, so a fleet run replaces exactly the groups a run per cluster would.
pub fn render_fleet_groups(fleet: &FleetReport) -> Vec<(String, String)> {
    fleet_runs(fleet)
        .into_iter()
        .map(|(label, run)| (label, encode(vec![run])))
        .collect()
}

fn fleet_runs(fleet: &FleetReport) -> Vec<(String, RunMetrics)> {
    let mut runs: Vec<RunMetrics> = fleet
        .targets
        .iter()
        .map(|row| match row.report.and_then(|i| fleet.reports.get(i)) {
            Some(report) => RunMetrics::of(report),
            None => RunMetrics::down(crate::sanitize::for_terminal(
                row.cluster.as_deref().unwrap_or(""),
            )),
        })
        .collect();
    // Series must be unique per exposition and a group per Pushgateway: a cluster whose name
    // is unknown, or shared with another target (the same name in two accounts or regions is
    // common), is labelled with its kube context instead, which is unique in a fleet.
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for run in &runs {
        *seen.entry(run.cluster.clone()).or_default() += 1;
    }
    for (run, row) in runs.iter_mut().zip(&fleet.targets) {
        if run.cluster.is_empty() || seen[&run.cluster] > 1 {
            run.cluster = crate::sanitize::for_terminal(&row.context);
        }
    }
    runs.into_iter().map(|r| (r.cluster.clone(), r)).collect()
}

fn encode(runs: Vec<RunMetrics>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Runs(runs)));
    let mut out = String::new();
    // Writing into a String cannot fail; an error here would leave the text short, never
    // malformed line by line.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    out
}

/// The `cluster` label of a report's metrics (and its Pushgateway group): the target
/// cluster's name, empty when unknown. A cluster name is cluster data: it is kept to what a
/// terminal shows safely (the encoder then escapes backslashes, quotes and newlines).
pub fn cluster_label(report: &Report) -> String {
    crate::sanitize::for_terminal(report.target.cluster.as_deref().unwrap_or(""))
}

/// What the metrics say about one run, owned (the registry keeps collectors for 'static).
#[derive(Debug)]
struct RunMetrics {
    cluster: String,
    up: bool,
    finished_seconds: Option<f64>,
    duration_seconds: Option<f64>,
    checks: Vec<CheckRow>,
}

#[derive(Debug)]
struct CheckRow {
    code: String,
    slug: String,
    category: &'static str,
    status: i64,
    /// Findings per severity (in [`SEVERITIES`] order), for a check that concluded.
    findings: Option<[i64; 3]>,
}

impl RunMetrics {
    fn of(report: &Report) -> Self {
        let started = report.started_at.parse::<jiff::Timestamp>().ok();
        let finished = report.finished_at.parse::<jiff::Timestamp>().ok();
        let duration_seconds = started
            .zip(finished)
            .map(|(s, f)| f.duration_since(s).as_secs_f64().max(0.0));
        let checks = report
            .checks
            .iter()
            .map(|c| CheckRow {
                code: c.code.clone(),
                slug: c.slug.clone(),
                category: c.category.slug(),
                status: match c.status {
                    Status::Pass => 0,
                    Status::Fail => 1,
                    Status::Unknown => 2,
                    Status::Skip => 3,
                },
                findings: matches!(c.status, Status::Pass | Status::Fail).then(|| {
                    SEVERITIES.map(|s| c.findings.iter().filter(|f| f.severity == s).count() as i64)
                }),
            })
            .collect();
        RunMetrics {
            cluster: cluster_label(report),
            up: report.exit_code(FailOn::Never) != EXIT_TROUBLE,
            finished_seconds: finished.map(|t| t.as_millisecond() as f64 / 1000.0),
            duration_seconds,
            checks,
        }
    }

    /// A cluster that could not be checked at all: down, and nothing else is known.
    fn down(cluster: String) -> Self {
        RunMetrics {
            cluster,
            up: false,
            finished_seconds: None,
            duration_seconds: None,
            checks: Vec::new(),
        }
    }
}

/// The runs of one exposition (one cluster, or a fleet): each family is written once, with
/// every run's series in it, as the text format requires.
#[derive(Debug)]
struct Runs(Vec<RunMetrics>);

impl Collector for Runs {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let runs = &self.0;
        let cluster = |r: &'_ RunMetrics| ("cluster", r.cluster.clone());
        gauge(
            &mut encoder,
            "karpdoctor_up",
            "1 when the run could judge the cluster (at least one check concluded), 0 when it could not",
            runs.iter().map(|r| ([cluster(r)], i64::from(r.up))),
        )?;
        gauge(
            &mut encoder,
            "karpdoctor_last_run_timestamp_seconds",
            "When the run finished, in seconds since the Unix epoch",
            runs.iter()
                .filter_map(|r| r.finished_seconds.map(|t| ([cluster(r)], t))),
        )?;
        gauge(
            &mut encoder,
            "karpdoctor_run_duration_seconds",
            "How long the run took",
            runs.iter()
                .filter_map(|r| r.duration_seconds.map(|d| ([cluster(r)], d))),
        )?;
        gauge(
            &mut encoder,
            "karpdoctor_check_status",
            "Result of each check: 0 pass, 1 fail, 2 unknown (could not conclude), 3 skip",
            runs.iter().flat_map(|r| {
                r.checks.iter().map(move |c| {
                    let labels = [
                        cluster(r),
                        ("code", c.code.clone()),
                        ("slug", c.slug.clone()),
                        ("category", c.category.to_string()),
                    ];
                    (labels, c.status)
                })
            }),
        )?;
        gauge(
            &mut encoder,
            "karpdoctor_findings",
            "Findings of each check that concluded, per severity (0 when it has none)",
            runs.iter().flat_map(|r| {
                r.checks.iter().flat_map(move |c| {
                    c.findings.into_iter().flat_map(move |counts| {
                        SEVERITIES.iter().zip(counts).map(move |(s, n)| {
                            let labels = [
                                cluster(r),
                                ("code", c.code.clone()),
                                ("severity", s.as_str().to_string()),
                            ];
                            (labels, n)
                        })
                    })
                })
            }),
        )
    }
}

/// One gauge family: its HELP and TYPE lines, then a sample per series. A family without
/// series is left out entirely (a HELP and TYPE with no sample says nothing).
fn gauge<L: EncodeLabelSet, V: EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, V)>,
) -> fmt::Result {
    let mut series = series.into_iter().peekable();
    if series.peek().is_none() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        family.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Category;
    use crate::report::{CheckReport, Summary};
    use crate::target::Target;

    fn check(code: &str, status: Status, findings: &[Severity]) -> CheckReport {
        let mut json = serde_json::json!({
            "code": code, "slug": format!("slug-{code}"), "title": "t",
            "category": "nodepool", "severity": "error", "status": status.as_str(),
            "durationMs": 1, "findings": [], "docUrl": "u",
        });
        for s in findings {
            json["findings"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({
                    "code": code, "severity": s.as_str(), "object": "NodePool/x",
                    "message": "m", "evidence": {}, "hint": "h",
                    "remediation": {"commands": []}, "docUrl": "u",
                }));
        }
        serde_json::from_value(json).unwrap()
    }

    fn report(cluster: Option<&str>, checks: Vec<CheckReport>) -> Report {
        Report {
            schema_version: 1,
            karpdoctor_version: "0".into(),
            run_id: "r".into(),
            started_at: "2026-01-02T03:04:05Z".into(),
            finished_at: "2026-01-02T03:04:06.5Z".into(),
            mode: "replay".into(),
            target: Target {
                cluster: cluster.map(str::to_string),
                ..Target::default()
            },
            summary: Summary::default(),
            checks,
            errors: Vec::new(),
            stats: None,
            resolved: None,
            plan: None,
        }
    }

    #[test]
    fn renders_every_metric_with_zeros_for_concluded_checks_only() {
        let r = report(
            Some("prod"),
            vec![
                check(
                    "KD4001",
                    Status::Fail,
                    &[Severity::Error, Severity::Error, Severity::Info],
                ),
                check("KD4002", Status::Pass, &[]),
                check("KD4003", Status::Unknown, &[]),
                check("KD4004", Status::Skip, &[]),
            ],
        );
        assert_eq!(Category::Nodepool.slug(), "nodepool");
        let text = render(&r);
        let expected = r#"# HELP karpdoctor_up 1 when the run could judge the cluster (at least one check concluded), 0 when it could not
# TYPE karpdoctor_up gauge
karpdoctor_up{cluster="prod"} 1
# HELP karpdoctor_last_run_timestamp_seconds When the run finished, in seconds since the Unix epoch
# TYPE karpdoctor_last_run_timestamp_seconds gauge
karpdoctor_last_run_timestamp_seconds{cluster="prod"} 1767323046.5
# HELP karpdoctor_run_duration_seconds How long the run took
# TYPE karpdoctor_run_duration_seconds gauge
karpdoctor_run_duration_seconds{cluster="prod"} 1.5
# HELP karpdoctor_check_status Result of each check: 0 pass, 1 fail, 2 unknown (could not conclude), 3 skip
# TYPE karpdoctor_check_status gauge
karpdoctor_check_status{cluster="prod",code="KD4001",slug="slug-KD4001",category="nodepool"} 1
karpdoctor_check_status{cluster="prod",code="KD4002",slug="slug-KD4002",category="nodepool"} 0
karpdoctor_check_status{cluster="prod",code="KD4003",slug="slug-KD4003",category="nodepool"} 2
karpdoctor_check_status{cluster="prod",code="KD4004",slug="slug-KD4004",category="nodepool"} 3
# HELP karpdoctor_findings Findings of each check that concluded, per severity (0 when it has none)
# TYPE karpdoctor_findings gauge
karpdoctor_findings{cluster="prod",code="KD4001",severity="error"} 2
karpdoctor_findings{cluster="prod",code="KD4001",severity="warning"} 0
karpdoctor_findings{cluster="prod",code="KD4001",severity="info"} 1
karpdoctor_findings{cluster="prod",code="KD4002",severity="error"} 0
karpdoctor_findings{cluster="prod",code="KD4002",severity="warning"} 0
karpdoctor_findings{cluster="prod",code="KD4002",severity="info"} 0
"#;
        assert_eq!(text, expected);
    }

    #[test]
    fn a_run_that_could_not_judge_is_down_and_has_no_findings_series() {
        let r = report(None, vec![check("KD4003", Status::Unknown, &[])]);
        let text = render(&r);
        assert!(text.contains("karpdoctor_up{cluster=\"\"} 0\n"), "{text}");
        assert!(!text.contains("karpdoctor_findings"), "{text}");
    }

    #[test]
    fn label_values_are_escaped_and_control_characters_shown_not_sent() {
        let r = report(
            Some("a\"b\\c\nd\u{1b}[2J"),
            vec![check("KD4002", Status::Pass, &[])],
        );
        let text = render(&r);
        assert!(
            text.contains(r#"karpdoctor_up{cluster="a\"b\\c\nd\\u{1b}[2J"} 1"#),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'));
        // Each sample stays on its own line.
        assert!(
            text.lines()
                .all(|l| l.starts_with('#') || l.starts_with("karpdoctor_"))
        );
    }
}
