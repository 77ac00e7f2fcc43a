//! One run: the backend for its source, the target, the permission self-check, the checks
//! and the report.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::KeptHistory;
use super::target::{karpenter_namespace, merge, resolve_target, self_check, within};
use super::{DEMO_BUNDLE, RunOutput, Source};
use crate::backend::Backend;
use crate::backend::live::{Live, LiveOptions, SharedReads, kubeconfig};
use crate::backend::recorded::Recorded;
use crate::bundle::Bundle;
use crate::check::CheckInfo;
use crate::cli::{ReportArgs, TargetArgs};
use crate::context::Context;
use crate::engine::{self, Outcome, RunOptions};
use crate::error::Error;
use crate::facts::{ApiOp, ApiService, FactKind};
use crate::finding::Category;
use crate::guard::ApiLog;
use crate::history_store::HistoryStore;
use crate::iam::reference::Version;
use crate::report::{CheckTime, CriticalPathStat, FactStat, Report, Stats};
use crate::target::{Hints, Target};

/// Builds the context for `source`, resolves the target and runs `checks`.
pub async fn execute(
    source: Source,
    target_args: &TargetArgs,
    args: &ReportArgs,
    checks: &[&'static CheckInfo],
) -> Result<RunOutput, Error> {
    let started = jiff::Timestamp::now();
    let clock = Instant::now();
    let deadline = clock + args.timeout;
    let log = ApiLog::default();
    let opened = open(source, target_args, args, deadline, &log).await?;
    // `pre-install` runs only the checks about the installer and `upgrade` only those about a
    // target; a normal run runs neither.
    let checks: Vec<&'static CheckInfo> = checks
        .iter()
        .copied()
        .filter(|c| (c.category == Category::PreInstall) == opened.hints.pre_install)
        .filter(|c| (c.category == Category::Upgrade) == opened.hints.upgrade)
        .collect();
    if checks.is_empty() {
        return Err(Error::Usage {
            message: "--only and --skip leave no check to run".to_string(),
        });
    }
    let checks = checks.as_slice();
    let mut ctx = Context::new(opened.backend, opened.hints, target_args.record.is_some());
    if let Some(at) = opened
        .recorded_at
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        ctx.set_now(at);
    }
    let ctx = Arc::new(ctx);
    let (target, notes, denied) =
        resolve(&ctx, opened.live.as_deref(), checks, args, deadline).await?;
    ctx.set_target(target.clone());
    // `upgrade --to` judges upgrades: a rollback has rules of its own (the v1 migration guide's
    // rollback section), none of which these checks know.
    if let (Some(to), Some(now)) = (
        target.upgrade_to.as_deref().and_then(Version::parse),
        target.karpenter_version.as_deref().and_then(Version::parse),
    ) && to < now
    {
        return Err(Error::Usage {
            message: format!(
                "--to {to} is older than the installed Karpenter {now}: karpdoctor upgrade judges upgrades, not rollbacks"
            ),
        });
    }
    // Where EKS Auto Mode runs compute, whether the checks of a self-managed install apply
    // (docs/auto-mode.md §9): not where it is the only Karpenter, unknown where the controller
    // Deployments could not be read. Each such check's outcome then rests on the facts that
    // decided it, and is credited with them.
    let basis = super::target::self_managed(&ctx, &target).await;
    let mut set_aside: Vec<Outcome> = Vec::new();
    let checks: Vec<&'static CheckInfo> = checks
        .iter()
        .copied()
        .filter(|info| {
            let Some(basis) = basis.as_ref().filter(|_| info.self_managed) else {
                return true;
            };
            for key in &basis.facts {
                ctx.credit(info.code, key.clone());
            }
            match basis.alone {
                Some(false) => true,
                Some(true) => {
                    set_aside.push(engine::not_applicable(
                        info,
                        "EKS Auto Mode runs Karpenter on this cluster, and there is no self-managed controller",
                    ));
                    false
                }
                None => {
                    let reason = match &basis.missing_permission {
                        Some(p) => format!(
                            "karpdoctor lacks permission {p}, so it cannot tell whether this check applies: EKS Auto Mode runs compute here"
                        ),
                        None => format!(
                            "could not tell whether it applies: EKS Auto Mode runs compute, and the controller Deployments could not be read ({})",
                            basis.why_unknown.as_deref().unwrap_or("unknown error")
                        ),
                    };
                    set_aside.push(engine::undecided(
                        info,
                        reason,
                        basis.missing_permission.clone(),
                    ));
                    false
                }
            }
        })
        .collect();
    let mut outcomes = run_with_progress(
        &ctx,
        &checks,
        args,
        deadline,
        denied,
        !target_args.no_progress,
    )
    .await;
    outcomes.extend(set_aside);
    outcomes.sort_by_key(|o| o.info.code);

    let mut report = Report::new(opened.mode, target, &outcomes, started);
    report.errors = notes;
    if args.verbose > 0 {
        report.stats = Some(stats(&ctx, &log, clock.elapsed(), &outcomes));
    }
    Ok(RunOutput {
        report,
        context: ctx,
        history: opened.history,
    })
}

/// Where a run's facts come from, and what the run starts from.
struct Opened {
    backend: Backend,
    hints: Hints,
    /// `live`, `replay` or `demo`.
    mode: &'static str,
    /// The moment the facts describe, when it is not now.
    recorded_at: Option<String>,
    /// A live run's own handle on the backend (the target it resolves connects its AWS side).
    live: Option<Arc<Live>>,
    history: Option<KeptHistory>,
}

/// Opens the backend for `source`: a bundle (the demo, a replay) or the live APIs.
async fn open(
    source: Source,
    target_args: &TargetArgs,
    args: &ReportArgs,
    deadline: Instant,
    log: &ApiLog,
) -> Result<Opened, Error> {
    let flag_hints = Hints {
        cluster: target_args.cluster.clone(),
        region: target_args.region.clone(),
        namespace: target_args.namespace.clone(),
        kube_context: None,
        kube_context_cluster: None,
        karpenter_version: target_args.karpenter_version.clone(),
        pre_install: target_args.pre_install,
        upgrade_to: target_args.upgrade_to.clone(),
        upgrade_kubernetes: target_args.upgrade_kubernetes.clone(),
        upgrade: target_args.upgrade,
        history: None,
    };
    // A replay judges time-dependent facts (a condition stuck for minutes) as of the
    // recording, so it concludes the same on any later day.
    let now = match &target_args.now {
        Some(now) => match now.parse::<jiff::Timestamp>() {
            Ok(_) => Some(now.clone()),
            Err(e) => {
                return Err(Error::Usage {
                    message: format!("--now {now:?} is not an RFC 3339 time: {e}"),
                });
            }
        },
        None => None,
    };
    let (bundle, mode) = match source {
        Source::Demo => (
            Bundle::parse(DEMO_BUNDLE, "the built-in demo bundle")?.into_stored(),
            "demo",
        ),
        Source::Replay(bundle) => (*bundle, "replay"),
        Source::Live(shared) => {
            let mut opened =
                open_live(target_args, args, deadline, log, flag_hints, shared).await?;
            opened.recorded_at = now;
            return Ok(opened);
        }
    };
    Ok(Opened {
        hints: merge(flag_hints, bundle.hints.clone()),
        recorded_at: bundle.recorded_at.clone(),
        backend: Backend::Recorded(Recorded::from_bundle(bundle)),
        mode,
        live: None,
        history: None,
    })
}

/// Connects the live backend (the Kubernetes side now, AWS once the region is resolved) and,
/// with `--history`, the history store.
async fn open_live(
    target_args: &TargetArgs,
    args: &ReportArgs,
    deadline: Instant,
    log: &ApiLog,
    flag_hints: Hints,
    shared: Option<Arc<SharedReads>>,
) -> Result<Opened, Error> {
    let options = LiveOptions {
        kubeconfig: target_args.kubeconfig.clone(),
        // The app hands `execute` one context at most: a fleet runs it once per target.
        context: target_args.context.first().cloned(),
        profile: target_args.profile.clone(),
        region: target_args.region.clone(),
        request_timeout: args.check_timeout.min(args.timeout),
        kube_optional: target_args.pre_install,
        shared,
    };
    // Read once: the backend and the history store build their clients from it.
    let kube = kubeconfig::load(&options).await?;
    let live = Arc::new(Live::connect(options, kube.clone(), log.clone())?);
    let history = match &args.history {
        Some(name) => {
            let (config, namespace) = (kube.map(|(c, _)| c), crate::history::own_namespace());
            let store = HistoryStore::connect(config, namespace, name, log.clone())?;
            Some(
                within(
                    deadline,
                    args.timeout,
                    "reading the history ConfigMap",
                    KeptHistory::open(store),
                )
                .await?,
            )
        }
        None => None,
    };
    // The churn record goes to KD4103 as a fact, so a recording of this run replays it.
    let kept_churn = history.as_ref().and_then(|h| {
        let (_, doc) = h.read.as_ref().ok()?;
        let churn = doc.as_ref().map(|d| d.churn.clone()).unwrap_or_default();
        Some((h.configmap(), churn))
    });
    if let Some((configmap, churn)) = &kept_churn {
        live.give(
            crate::facts::FactKey::ChurnHistory {
                configmap: configmap.clone(),
            },
            serde_json::to_value(churn).unwrap_or_default(),
        );
    }
    let region = within(
        deadline,
        args.timeout,
        "reading the AWS configuration",
        live.chain_region(),
    )
    .await?;
    let hints = Hints {
        region: flag_hints.region.clone().or(region),
        kube_context: live.kube_target.context.clone(),
        kube_context_cluster: live.kube_target.context_cluster.clone(),
        history: kept_churn.map(|(configmap, _)| configmap),
        ..flag_hints
    };
    Ok(Opened {
        backend: Backend::Live(Arc::clone(&live)),
        hints,
        mode: "live",
        recorded_at: None,
        live: Some(live),
        history,
    })
}

/// Whether the checks read any fact through an operation of this kind (Kubernetes or AWS).
fn uses(checks: &[&'static CheckInfo], kind: fn(&ApiOp) -> bool) -> bool {
    checks
        .iter()
        .flat_map(|c| c.needs.iter())
        .any(|k| k.operations().iter().any(kind))
}

/// Resolves the target and, at the same time, what karpdoctor's own identity may not do.
async fn resolve(
    ctx: &Arc<Context>,
    live: Option<&Live>,
    checks: &[&'static CheckInfo],
    args: &ReportArgs,
    deadline: Instant,
) -> Result<(Target, Vec<String>, BTreeMap<FactKind, String>), Error> {
    let needs_aws = uses(checks, |op| matches!(op, ApiOp::Aws { .. }));
    let needs_kube = uses(checks, |op| matches!(op, ApiOp::Kube { .. }));
    // Kubernetes facts that need no parameter start now; AWS ones once the region is known.
    engine::prefetch(ctx, checks, |svc| svc == ApiService::Kubernetes);
    // Target resolution and the permission self-check both start from the controller
    // Deployment, then go their own ways (AWS identity and cluster; access reviews).
    let (resolved, denied) = tokio::join!(
        within(
            deadline,
            args.timeout,
            "connecting to the Kubernetes API server",
            Box::pin(crate::context::chained(resolve_target(
                ctx, live, checks, needs_aws, needs_kube
            ))),
        ),
        within(
            deadline,
            args.timeout,
            "checking karpdoctor's own permissions",
            Box::pin(crate::context::chained(async {
                let namespace = if needs_kube {
                    karpenter_namespace(ctx).await
                } else {
                    None
                };
                self_check(ctx, checks, namespace.as_deref()).await
            })),
        ),
    );
    let (target, notes) = resolved??;
    Ok((target, notes, denied?))
}

/// Runs the checks, with a progress bar on a terminal.
async fn run_with_progress(
    ctx: &Arc<Context>,
    checks: &[&'static CheckInfo],
    args: &ReportArgs,
    deadline: Instant,
    denied: BTreeMap<FactKind, String>,
    show_progress: bool,
) -> Vec<Outcome> {
    let progress = show_progress
        .then(|| progress_bar(checks.len(), args))
        .flatten();
    let on_done = progress.clone().map(|bar| {
        Arc::new(move |info: &'static CheckInfo| {
            bar.set_message(info.code);
            bar.inc(1);
        }) as Arc<dyn Fn(&'static CheckInfo) + Send + Sync>
    });
    let outcomes = engine::run(
        Arc::clone(ctx),
        checks,
        &RunOptions {
            check_timeout: args.check_timeout,
            deadline,
            on_done,
            denied,
        },
    )
    .await;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    outcomes
}

fn stats(ctx: &Context, log: &ApiLog, wall: Duration, outcomes: &[Outcome]) -> Stats {
    let path = ctx.critical_path();
    let mut checks: Vec<CheckTime> = outcomes
        .iter()
        .map(|o| CheckTime {
            code: o.info.code.to_string(),
            duration_ms: o.duration.as_millis() as u64,
        })
        .collect();
    checks.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.code.cmp(&b.code)));
    Stats {
        wall_ms: wall.as_millis() as u64,
        api_calls: log.calls_per_service(),
        operations: log.calls(),
        facts: ctx
            .fetch_stats()
            .into_iter()
            .map(|(key, s)| FactStat {
                fact: key.to_string(),
                fetches: s.fetches,
                duration_ms: s.duration.as_millis() as u64,
                error: s.error,
                started_ms: s.started.as_millis() as u64,
                calls: s.calls,
                rounds: s.rounds,
                after: s.after.map(|k| k.to_string()),
                requested_by: s.requested_by.map(str::to_string),
            })
            .collect(),
        critical_path: Some(CriticalPathStat {
            rounds: path.rounds,
            elapsed_ms: path.elapsed.as_millis() as u64,
            facts: path.facts.iter().map(ToString::to_string).collect(),
        }),
        checks,
    }
}

fn progress_bar(total: usize, args: &ReportArgs) -> Option<indicatif::ProgressBar> {
    // Progress is for a person watching: never when stderr is piped, quiet or verbose.
    if !std::io::stderr().is_terminal() || args.quiet || args.verbose > 0 {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{spinner} checking {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    Some(bar)
}
