//! Many clusters in one run (`--context a,b`, `--all-contexts`, `--targets FILE`). Each target
//! is one run of [`execute`] with its own kube context and AWS profile, region and cluster,
//! at most `--parallel` at once. Nothing a run sets is process-wide: the profile and region
//! are passed to the AWS configuration loader and the context to the kubeconfig reader, so
//! runs side by side cannot see each other's. A target that cannot be checked is a row with
//! its reason, never the end of the run; the exit code is the worst of the targets'.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;

use super::{
    Source, color, execute, exit_code, print, push_group, record_history, selected_checks,
};
use crate::backend::live::{SharedReads, kubeconfig};
use crate::check::CheckInfo;
use crate::cli::{CheckArgs, FleetArgs, Output, ReportArgs, TargetArgs};
use crate::error::Error;
use crate::report::fleet::{self, FleetReport, TargetOutcome};
use crate::report::{EXIT_TROUBLE, text::TextOptions};
use crate::sanitize::one_line;

/// One cluster to check: a kube context and what its AWS side needs, beyond the flags.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with `context` and optionally `profile`, `region`, `cluster`"
)]
pub(super) struct Spec {
    pub context: String,
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub cluster: Option<String>,
}

/// The `--targets` file: `targets:`, a list of [`Spec`].
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping `targets:` holding a list of `- context: NAME`"
)]
struct TargetsFile {
    targets: Vec<Spec>,
}

/// The targets the options name, or `None` for a plain single-cluster run (no fleet option
/// and at most one `--context`).
pub(super) fn targets(target: &TargetArgs, fleet: &FleetArgs) -> Result<Option<Vec<Spec>>, Error> {
    let specs = if let Some(path) = &fleet.targets {
        read_targets(path)?
    } else if fleet.all_contexts {
        let names = kubeconfig::context_names(target.kubeconfig.as_deref())?;
        if names.is_empty() {
            return Err(Error::Usage {
                message: "--all-contexts: the kubeconfig has no context".to_string(),
            });
        }
        names.into_iter().map(spec).collect()
    } else {
        let named: Vec<&String> = target
            .context
            .iter()
            .filter(|c| !c.trim().is_empty())
            .collect();
        if named.len() < 2 {
            return Ok(None);
        }
        if let Some(twice) = named
            .iter()
            .enumerate()
            .find_map(|(i, c)| named[..i].contains(c).then_some(c))
        {
            return Err(Error::Usage {
                message: format!("--context {twice} is given twice"),
            });
        }
        named
            .into_iter()
            .map(|c| spec(c.trim().to_string()))
            .collect()
    };
    // Flags fill in what an entry leaves out.
    let specs = specs
        .into_iter()
        .map(|s| Spec {
            profile: s.profile.or_else(|| target.profile.clone()),
            region: s.region.or_else(|| target.region.clone()),
            cluster: s.cluster.or_else(|| target.cluster.clone()),
            context: s.context,
        })
        .collect();
    Ok(Some(specs))
}

fn spec(context: String) -> Spec {
    Spec {
        context,
        ..Spec::default()
    }
}

/// Reads and validates a `--targets` file; every problem is one line naming the file.
fn read_targets(path: &Path) -> Result<Vec<Spec>, Error> {
    let name = path.display();
    let usage = |message: String| Error::Usage {
        message: format!("--targets {name}: {message}"),
    };
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read: {e}")))?;
    if text.trim().is_empty() {
        return Err(usage(
            "the file is empty; expected `targets:` and a list of `- context: NAME`".to_string(),
        ));
    }
    let file: TargetsFile =
        serde_norway::from_str(&text).map_err(|e| usage(one_line(&e.to_string())))?;
    if file.targets.is_empty() {
        return Err(usage("`targets` lists no cluster".to_string()));
    }
    for (i, s) in file.targets.iter().enumerate() {
        let n = i + 1;
        if s.context.trim().is_empty() {
            return Err(usage(format!("target {n} has an empty context")));
        }
        for (field, value) in [
            ("profile", &s.profile),
            ("region", &s.region),
            ("cluster", &s.cluster),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(usage(format!(
                    "target {n} ({}) has an empty {field}",
                    s.context
                )));
            }
        }
        if let Some(first) = file.targets[..i]
            .iter()
            .position(|t| t.context == s.context)
        {
            return Err(usage(format!(
                "context {} is listed twice (targets {} and {n})",
                s.context,
                first + 1
            )));
        }
    }
    Ok(file.targets)
}

/// Checks every target and prints one output for all of them. Exactly one target is an
/// ordinary single-cluster run, with its usual output.
pub(super) async fn run(specs: Vec<Spec>, args: CheckArgs) -> Result<u8, Error> {
    let CheckArgs {
        target,
        fleet,
        report,
    } = args;
    if let [only] = specs.as_slice() {
        let single = target_args(&target, only, false);
        return super::check_one(single, &report).await;
    }
    for (flag, given) in [
        ("--replay", target.replay.is_some()),
        ("--record", target.record.is_some()),
    ] {
        if given {
            return Err(Error::Usage {
                message: format!(
                    "{flag} works on one cluster; it cannot be combined with {} targets",
                    specs.len()
                ),
            });
        }
    }
    let checks = Arc::new(selected_checks(&report)?);
    let started = jiff::Timestamp::now();
    let report = Arc::new(report);
    let progress = progress_bar(specs.len(), &report);
    let limit = Arc::new(Semaphore::new(usize::from(fleet.parallel.max(1))));
    let shared = Arc::new(SharedReads::default());
    let handles: Vec<_> = specs
        .iter()
        .map(|spec| {
            let (args, checks, report) = (
                target_args(&target, spec, true),
                Arc::clone(&checks),
                Arc::clone(&report),
            );
            let (limit, progress, shared) =
                (Arc::clone(&limit), progress.clone(), Arc::clone(&shared));
            tokio::spawn(async move {
                // The semaphore is never closed; were it, the target would run unbounded.
                let _permit = limit.acquire_owned().await.ok();
                let outcome = run_target(&args, &report, &checks, shared).await;
                if let Some(bar) = &progress {
                    bar.set_message(args.context.first().cloned().unwrap_or_default());
                    bar.inc(1);
                }
                outcome
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(specs.len());
    for (spec, handle) in specs.into_iter().zip(handles) {
        let result = handle.await.unwrap_or_else(|e| {
            Err(Error::Internal {
                message: format!("the run of context {} stopped: {e}", spec.context),
            })
        });
        let (result, code) = match result {
            Ok(r) => {
                let code = exit_code(&r, &report);
                (Ok(r), code)
            }
            Err(e) => (Err(one_line(&e.to_string())), EXIT_TROUBLE),
        };
        outcomes.push(TargetOutcome {
            context: spec.context,
            profile: spec.profile,
            cluster: spec.cluster,
            region: spec.region,
            result,
            exit_code: code,
        });
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let mut doc = FleetReport::new(started, outcomes);
    if report.redact {
        // One redactor for the whole document: a value gets the same pseudonym in every
        // cluster's section.
        doc = crate::redact::Redactor::new()
            .document(&doc)
            .ok_or_else(|| Error::Internal {
                message: "redacting the report failed".to_string(),
            })?;
    }
    print(&render(&doc, &report))?;
    if let Some(gateway) = &report.pushgateway {
        // One group per cluster, as a run per cluster would push: the groups (and the
        // alerts on them) do not depend on how the clusters were checked. One after the
        // other: a Pushgateway is one small server, and twenty pushes take well under a second.
        for (cluster, body) in crate::report::prometheus::render_fleet_groups(&doc) {
            let what = format!("metrics of cluster {}", one_line(&cluster));
            push_group(gateway, &cluster, body, &what).await;
        }
    }
    Ok(doc.summary.exit_code)
}

/// One target's run: today's single-cluster path, `--history` included (each cluster keeps
/// its own ConfigMap).
async fn run_target(
    target: &TargetArgs,
    args: &ReportArgs,
    checks: &[&'static CheckInfo],
    shared: Arc<SharedReads>,
) -> Result<crate::report::Report, Error> {
    let mut out = execute(Source::Live(Some(shared)), target, args, checks).await?;
    if let Some(kept) = out.history.take() {
        record_history(kept, &mut out.report, &out.context).await;
    }
    Ok(out.report)
}

/// The options of one target's run: the shared flags with the target's own context and AWS
/// settings.
fn target_args(base: &TargetArgs, spec: &Spec, in_fleet: bool) -> TargetArgs {
    TargetArgs {
        context: vec![spec.context.clone()],
        profile: spec.profile.clone(),
        region: spec.region.clone(),
        cluster: spec.cluster.clone(),
        no_progress: in_fleet,
        ..base.clone()
    }
}

fn render(doc: &FleetReport, args: &ReportArgs) -> String {
    match args.output {
        Output::Json => fleet::render_json(doc),
        Output::Markdown => fleet::render_markdown(doc),
        Output::Short => fleet::render_short(doc),
        Output::Prometheus => crate::report::prometheus::render_fleet(doc),
        Output::Text => fleet::render_text(
            doc,
            TextOptions {
                color: color(args.color),
                verbose: args.verbose > 0,
                quiet: args.quiet,
            },
        ),
    }
}

fn progress_bar(total: usize, args: &ReportArgs) -> Option<indicatif::ProgressBar> {
    // As for one cluster: only for a person watching a terminal.
    if !std::io::stderr().is_terminal() || args.quiet || args.verbose > 0 {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{spinner} checked {pos}/{len} clusters {msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    Some(bar)
}
