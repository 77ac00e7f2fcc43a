//! What each command does, from parsed options to an exit code. Fatal problems become one
//! line on stderr and exit code 2; everything found in the cluster goes into the report.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{ContentArrangement, Table, presets};

use crate::backend::Backend;
use crate::backend::live::{Live, LiveOptions};
use crate::backend::recorded::Recorded;
use crate::bundle::Bundle;
use crate::check::CheckInfo;
use crate::cli::{
    CheckArgs, Cli, ColorArg, Command, ExplainArgs, ListArgs, ListOutput, Output, PermissionsArgs,
    PermissionsOutput, PreInstallArgs, ReferencePolicyArgs, ReportArgs, TargetArgs,
};
use crate::context::Context;
use crate::engine::{self, Outcome, RunOptions};
use crate::error::Error;
use crate::facts::Stored;
use crate::facts::{FactError, FactKind};
use crate::guard::ApiLog;
use crate::model::ControllerDeployment;
use crate::registry::{self, Selector};
use crate::report::{
    self, CheckTime, CriticalPathStat, EXIT_OK, EXIT_TROUBLE, FactStat, Report, Stats,
};
use crate::target::{Hints, Target};

/// The recorded broken cluster behind `karpdoctor demo`.
pub const DEMO_BUNDLE: &str = include_str!("../data/demo/bundle.json");

pub async fn run(cli: Cli) -> u8 {
    let result = match cli.command {
        Some(Command::List(args)) => list(&args),
        Some(Command::Explain(args)) => explain(&args),
        Some(Command::Permissions(args)) => permissions(&args),
        Some(Command::ReferencePolicy(args)) => reference_policy(&args),
        Some(Command::PreInstall(args)) => pre_install(args).await,
        Some(Command::Demo(report)) => {
            run_checks(Source::Demo, &TargetArgs::default(), &report).await
        }
        Some(Command::Check(args)) => check(args).await,
        None => check(cli.check).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("karpdoctor: {}", crate::sanitize::one_line(&e.to_string()));
            EXIT_TROUBLE
        }
    }
}

async fn check(args: CheckArgs) -> Result<u8, Error> {
    let source = match &args.target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => Source::Live,
    };
    run_checks(source, &args.target, &args.report).await
}

async fn pre_install(args: PreInstallArgs) -> Result<u8, Error> {
    if let Some(v) = &args.karpenter_version
        && crate::iam::reference::Version::parse(v).is_none()
    {
        return Err(Error::Usage {
            message: format!("--karpenter-version {v:?} is not a release like 1.8.1"),
        });
    }
    let source = match &args.target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => {
            if args.target.cluster.is_none() {
                return Err(Error::Usage {
                    message: "pre-install needs --cluster (the EKS cluster Karpenter will run in)"
                        .to_string(),
                });
            }
            Source::Live
        }
    };
    let target = TargetArgs {
        pre_install: true,
        karpenter_version: args.karpenter_version.clone(),
        ..args.target
    };
    run_checks(source, &target, &args.report).await
}

/// `reference-policy`: the controller policy document of a release, offline.
fn reference_policy(args: &ReferencePolicyArgs) -> Result<u8, Error> {
    use crate::iam::reference::{self, Version};
    let version = match &args.karpenter_version {
        Some(v) => Version::parse(v).ok_or_else(|| Error::Usage {
            message: format!("--karpenter-version {v:?} is not a release like 1.8.1"),
        })?,
        None => reference::newest().ok_or_else(|| Error::Internal {
            message: "the reference policy data is unreadable".to_string(),
        })?,
    };
    let version = match reference::coverage(version) {
        Some(reference::Coverage::Older { minimum }) => {
            return Err(Error::Usage {
                message: format!("karpdoctor's reference data starts at Karpenter {minimum}"),
            });
        }
        Some(reference::Coverage::Newer { used }) => {
            eprintln!("karpdoctor: the reference data ends at {used}; printing its policy");
            used
        }
        _ => version,
    };
    if !args.account.chars().all(|c| c.is_ascii_digit()) || args.account.len() != 12 {
        return Err(Error::Usage {
            message: format!("--account {:?} is not a 12-digit account id", args.account),
        });
    }
    let arn = format!(
        "arn:{}:eks:{}:{}:cluster/{}",
        args.partition, args.region, args.account, args.cluster
    );
    let Some(parsed) = crate::arn::Arn::parse(&arn) else {
        return Err(Error::Usage {
            message: format!("cannot form a cluster ARN from {arn}"),
        });
    };
    let mut vars = crate::checks::identity::grants::base_vars(&parsed, &args.cluster, &arn);
    let queue = args
        .interruption_queue
        .clone()
        .unwrap_or_else(|| args.cluster.clone());
    vars.insert(
        "queueArn".into(),
        format!(
            "arn:{}:sqs:{}:{}:{queue}",
            args.partition, args.region, args.account
        ),
    );
    vars.insert(
        "nodeRoleArn".into(),
        args.node_role_arn.clone().unwrap_or_else(|| {
            format!(
                "arn:{}:iam::{}:role/KarpenterNodeRole-{}",
                args.partition, args.account, args.cluster
            )
        }),
    );
    let doc = reference::policy_document(version, &vars);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Internal {
        message: e.to_string(),
    })?;
    print(&format!("{text}\n"))?;
    Ok(EXIT_OK)
}

pub enum Source {
    Live,
    Replay(Box<Bundle<Stored>>),
    Demo,
}

/// Everything a run produces besides the report's checks.
pub struct RunOutput {
    pub report: Report,
    pub context: Arc<Context>,
}

async fn run_checks(source: Source, target: &TargetArgs, args: &ReportArgs) -> Result<u8, Error> {
    let only = parse_selectors(&args.only)?;
    let skip = parse_selectors(&args.skip)?;
    let checks = registry::select(&only, &skip);
    if checks.is_empty() {
        return Err(Error::Usage {
            message: "--only and --skip leave no check to run".to_string(),
        });
    }
    if args.history.is_some() && !matches!(source, Source::Live) {
        return Err(Error::Usage {
            message: "--history needs a live run (not --replay or demo)".to_string(),
        });
    }
    let mut out = execute(source, target, args, &checks).await?;
    if let Some(name) = &args.history {
        record_history(&out.context, &mut out.report, name).await;
    }
    let fail_on = args.fail_on.into();
    let code = match out.report.exit_code(fail_on) {
        report::EXIT_FINDINGS if args.exit_zero => EXIT_OK,
        code => code,
    };

    // One redactor for the report and the bundle, so both use the same pseudonyms.
    let mut redactor = args.redact.then(crate::redact::Redactor::new);
    if let Some(r) = redactor.as_mut() {
        out.report = r.document(&out.report).ok_or_else(|| Error::Internal {
            message: "redacting the report failed".to_string(),
        })?;
    }
    if let Some(path) = &target.record {
        let mut bundle = out.context.bundle(out.report.target.clone());
        if let Some(r) = redactor.as_mut() {
            bundle = r.document(&bundle).ok_or_else(|| Error::Internal {
                message: "redacting the bundle failed".to_string(),
            })?;
        }
        bundle.write(path)?;
    }
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let rendered = match args.output {
        Output::Json => report::json::render(&out.report),
        Output::Markdown => report::markdown::render(&out.report),
        Output::Short => report::short::render(&out.report),
        Output::Text => report::text::render(
            &out.report,
            report::text::TextOptions {
                color,
                verbose: args.verbose > 0,
                quiet: args.quiet,
            },
        ),
    };
    print(&rendered)?;
    Ok(code)
}

/// Marks findings new/ongoing/resolved against the history ConfigMap and stores this run.
/// Problems with the history are run notes: they never change the verdict.
async fn record_history(ctx: &Context, report: &mut Report, name: &str) {
    let Backend::Live(live) = ctx.backend() else {
        return;
    };
    let namespace = crate::history::own_namespace();
    crate::guard::allow_history_configmap(&namespace, name);
    let (cm, previous) = match live.read_history(&namespace, name).await {
        Ok(found) => found,
        Err(e) => {
            report.errors.push(e);
            return;
        }
    };
    let previous = previous.and_then(|text| match serde_json::from_str(&text) {
        Ok(doc) => Some(doc),
        Err(e) => {
            report.errors.push(format!(
                "history ConfigMap {namespace}/{name}: unreadable, starting afresh: {e}"
            ));
            None
        }
    });
    let doc = crate::history::merge(previous.as_ref(), report, &report.started_at.clone());
    let text = serde_json::to_string(&doc).unwrap_or_default();
    if let Err(e) = live.write_history(cm, text).await {
        report.errors.push(e);
    }
}

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
    let flag_hints = Hints {
        cluster: target_args.cluster.clone(),
        region: target_args.region.clone(),
        namespace: target_args.namespace.clone(),
        kube_context: None,
        kube_context_cluster: None,
        karpenter_version: target_args.karpenter_version.clone(),
        pre_install: target_args.pre_install,
    };
    // A replay judges time-dependent facts (a condition stuck for minutes) as of the
    // recording, so it concludes the same on any later day.
    let mut recorded_at = match &target_args.now {
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
    let (backend, hints, mode) = match source {
        Source::Demo => {
            let bundle = Bundle::parse(DEMO_BUNDLE, "the built-in demo bundle")?.into_stored();
            let hints = merge(flag_hints, bundle.hints.clone());
            recorded_at = bundle.recorded_at.clone();
            (
                Backend::Recorded(Recorded::from_bundle(bundle)),
                hints,
                "demo",
            )
        }
        Source::Replay(bundle) => {
            let bundle = *bundle;
            let hints = merge(flag_hints, bundle.hints.clone());
            recorded_at = bundle.recorded_at.clone();
            (
                Backend::Recorded(Recorded::from_bundle(bundle)),
                hints,
                "replay",
            )
        }
        Source::Live => {
            let live = Live::connect(
                LiveOptions {
                    kubeconfig: target_args.kubeconfig.clone(),
                    context: target_args.context.clone(),
                    profile: target_args.profile.clone(),
                    region: target_args.region.clone(),
                    request_timeout: args.check_timeout.min(args.timeout),
                    kube_optional: target_args.pre_install,
                },
                log.clone(),
            )
            .await?;
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
                ..flag_hints
            };
            (Backend::Live(Box::new(live)), hints, "live")
        }
    };
    // `pre-install` runs only the checks about the installer; a normal run never runs them.
    let checks: Vec<&'static CheckInfo> = checks
        .iter()
        .copied()
        .filter(|c| (c.category == crate::check::Category::PreInstall) == hints.pre_install)
        .collect();
    if checks.is_empty() {
        return Err(Error::Usage {
            message: "--only and --skip leave no check to run".to_string(),
        });
    }
    let checks = checks.as_slice();
    let mut ctx = Context::new(backend, hints, target_args.record.is_some());
    if let Some(at) = recorded_at.and_then(|t| t.parse::<jiff::Timestamp>().ok()) {
        ctx.set_now(at);
    }
    let ctx = Arc::new(ctx);

    let needs_aws = checks.iter().any(|c| {
        c.needs.iter().any(|k| {
            k.operations()
                .iter()
                .any(|op| matches!(op, crate::facts::ApiOp::Aws { .. }))
        })
    });
    let needs_kube = checks.iter().any(|c| {
        c.needs.iter().any(|k| {
            k.operations()
                .iter()
                .any(|op| matches!(op, crate::facts::ApiOp::Kube { .. }))
        })
    });
    // Kubernetes facts that need no parameter start now; AWS ones once the region is known.
    engine::prefetch(&ctx, checks, |svc| svc == "kubernetes");
    // Target resolution and the permission self-check both start from the controller
    // Deployment, then go their own ways (AWS identity and cluster; access reviews).
    let (resolved, denied) = tokio::join!(
        within(
            deadline,
            args.timeout,
            "connecting to the Kubernetes API server",
            Box::pin(crate::context::chained(resolve_target(
                &ctx, checks, needs_aws, needs_kube
            ))),
        ),
        within(
            deadline,
            args.timeout,
            "checking karpdoctor's own permissions",
            Box::pin(crate::context::chained(async {
                let namespace = if needs_kube {
                    karpenter_namespace(&ctx).await
                } else {
                    None
                };
                self_check(&ctx, checks, namespace.as_deref()).await
            })),
        ),
    );
    let (target, notes) = resolved??;
    let denied = denied?;
    ctx.set_target(target.clone());

    let progress = progress_bar(checks.len(), args);
    let on_done = progress.clone().map(|bar| {
        Arc::new(move |info: &'static CheckInfo| {
            bar.set_message(info.code);
            bar.inc(1);
        }) as Arc<dyn Fn(&'static CheckInfo) + Send + Sync>
    });
    let outcomes = engine::run(
        Arc::clone(&ctx),
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

    let mut report = Report::new(mode, target, &outcomes, started);
    report.errors = notes;
    if args.verbose > 0 {
        report.stats = Some(stats(&ctx, &log, clock.elapsed(), &outcomes));
    }
    Ok(RunOutput {
        report,
        context: ctx,
    })
}

/// Asks the API server, with one SelfSubjectAccessReview per Kubernetes operation the selected
/// checks need, what karpdoctor's own identity may not do. A review that cannot be answered
/// (an older bundle, an API server without the API) denies nothing: the checks then find out
/// for themselves.
async fn self_check(
    ctx: &Context,
    checks: &[&'static CheckInfo],
    karpenter_namespace: Option<&str>,
) -> std::collections::BTreeMap<FactKind, String> {
    let mut reviews = Vec::new();
    for kind in needed_kinds(checks) {
        let namespace = match kind {
            FactKind::Pods | FactKind::PodLogs => match karpenter_namespace {
                Some(ns) => Some(ns.to_string()),
                // No controller found: nothing will list its pods.
                None => continue,
            },
            FactKind::ControllerDeployments => ctx.hints().namespace.clone(),
            FactKind::AwsAuth => Some("kube-system".to_string()),
            _ => None,
        };
        for op in kind.operations() {
            if let crate::facts::ApiOp::Kube {
                verb,
                group,
                resource,
                name,
            } = op
            {
                reviews.push((
                    kind,
                    *op,
                    *verb,
                    *group,
                    *resource,
                    namespace.clone(),
                    *name,
                ));
            }
        }
    }
    let answers = futures::future::join_all(reviews.iter().map(
        |(_, _, verb, group, resource, ns, name)| {
            ctx.access_review(verb, group, resource, ns.as_deref(), *name)
        },
    ))
    .await;
    let mut denied = std::collections::BTreeMap::new();
    for ((kind, op, ..), answer) in reviews.into_iter().zip(answers) {
        if let Ok(a) = answer
            && !a.allowed
        {
            denied.entry(kind).or_insert_with(|| op.to_string());
        }
    }
    denied
}

/// Where the controller runs: `--namespace`, or the controller Deployment's namespace.
async fn karpenter_namespace(ctx: &Context) -> Option<String> {
    if let Some(ns) = &ctx.hints().namespace {
        return Some(ns.clone());
    }
    let (deployments, i) = ctx.controller().await.ok().flatten()?;
    Some(
        ControllerDeployment::new(&deployments[i])
            .namespace()
            .to_string(),
    )
}

/// The target of a run that needs no Kubernetes API (`pre-install`): the cluster and region
/// come from the flags (or the bundle), the account from the caller identity.
async fn resolve_aws_target(
    ctx: &Context,
    hints: &Hints,
    mut notes: Vec<String>,
) -> Result<(Target, Vec<String>), Error> {
    let region = hints.region.clone();
    if region.is_none() {
        return Err(Error::Usage {
            message:
                "cannot tell which AWS region the cluster is in: pass --region or set AWS_REGION"
                    .to_string(),
        });
    }
    if let Backend::Live(live) = ctx.backend() {
        live.set_region(region.clone());
    }
    let mut target = Target {
        cluster: hints.cluster.clone(),
        region,
        karpenter_version: hints.karpenter_version.clone(),
        ..Target::default()
    };
    match ctx.caller_identity().await {
        Ok(id) => {
            target.account = Some(id.account.clone());
            target.aws_identity = Some(id.arn.clone());
        }
        Err(FactError::NoCredentials { message }) => {
            return Err(Error::NoAwsCredentials { reason: message });
        }
        Err(e) => notes.push(format!("AWS identity: {e}")),
    }
    Ok((target, notes))
}

/// Flags win over what a bundle recorded.
fn merge(flags: Hints, recorded: Hints) -> Hints {
    Hints {
        cluster: flags.cluster.or(recorded.cluster),
        region: flags.region.or(recorded.region),
        namespace: flags.namespace.or(recorded.namespace),
        kube_context: recorded.kube_context,
        kube_context_cluster: recorded.kube_context_cluster,
        karpenter_version: flags.karpenter_version.or(recorded.karpenter_version),
        pre_install: flags.pre_install || recorded.pre_install,
    }
}

async fn within<T>(
    deadline: Instant,
    timeout: Duration,
    during: &str,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, Error> {
    tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), fut)
        .await
        .map_err(|_| Error::Timeout {
            seconds: timeout.as_secs(),
            during: during.to_string(),
        })
}

/// Finds out what the run is about. Fails (exit 2) only when karpdoctor cannot work at all:
/// the API server is unreachable, or AWS is needed and unusable. Everything else is a note
/// and leaves the checks that depend on it `unknown`.
async fn resolve_target(
    ctx: &Arc<Context>,
    checks: &[&'static CheckInfo],
    needs_aws: bool,
    needs_kube: bool,
) -> Result<(Target, Vec<String>), Error> {
    let mut notes = Vec::new();
    let hints = ctx.hints().clone();
    if !needs_kube {
        let resolved = resolve_aws_target(ctx, &hints, notes).await;
        engine::prefetch(ctx, checks, |svc| svc != "kubernetes");
        return resolved;
    }
    let kube_version = match ctx.kube_version().await {
        Ok(v) => Some(v),
        Err(
            e @ (FactError::Unreachable { .. }
            | FactError::Timeout { .. }
            | FactError::NoCredentials { .. }),
        ) => {
            let server = match ctx.backend() {
                Backend::Live(live) => live.kube_target.server.clone(),
                Backend::Recorded(_) => None,
            };
            return Err(Error::KubeUnreachable {
                server,
                reason: e.to_string(),
            });
        }
        Err(e) => {
            notes.push(format!("Kubernetes version: {e}"));
            None
        }
    };
    let controller = match ctx.controller().await {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("controller Deployment: {e}"));
            None
        }
    };
    let controller = controller
        .as_ref()
        .map(|(deps, i)| ControllerDeployment::new(&deps[*i]));
    let cluster = hints.resolve_cluster(controller.as_ref());
    let region = hints.resolve_region(controller.as_ref());
    if let Backend::Live(live) = ctx.backend() {
        live.set_region(region.clone());
    }
    let mut target = Target {
        cluster: cluster.clone(),
        region: region.clone(),
        account: None,
        kube_context: hints.kube_context.clone(),
        karpenter_namespace: hints
            .namespace
            .clone()
            .or_else(|| controller.as_ref().map(|c| c.namespace().to_string())),
        karpenter_version: controller.as_ref().and_then(|c| c.version()),
        kubernetes_version: kube_version.map(|v| {
            if v.git_version.is_empty() {
                format!("{}.{}", v.major, v.minor)
            } else {
                v.git_version.clone()
            }
        }),
        aws_identity: None,
    };

    // Recorded runs have what they have; live runs without a region cannot ask AWS at all.
    if region.is_none() && ctx.backend().is_live() {
        if needs_aws {
            return Err(Error::Usage {
                message: "cannot tell which AWS region the cluster is in: pass --region or set AWS_REGION".to_string(),
            });
        }
        return Ok((target, notes));
    }
    // The region is known: AWS facts that need no parameter can start.
    engine::prefetch(ctx, checks, |svc| svc != "kubernetes");
    // Who karpdoctor is and whether the cluster exists do not depend on each other.
    let cluster_of_run = match (&cluster, &region) {
        (Some(c), Some(_)) if needs_aws => Some(c.clone()),
        _ => None,
    };
    let (identity, found) = tokio::join!(ctx.caller_identity(), async {
        match &cluster_of_run {
            Some(c) => Some(ctx.eks_cluster(c).await),
            None => None,
        }
    });
    match identity {
        Ok(id) => {
            target.account = Some(id.account.clone());
            target.aws_identity = Some(id.arn.clone());
        }
        Err(FactError::NoCredentials { message }) if needs_aws => {
            return Err(Error::NoAwsCredentials { reason: message });
        }
        // An unreachable AWS endpoint is a note, not the end of the run: the checks that need
        // AWS find out for themselves (bounded by --check-timeout) and say so; the others judge.
        Err(e) => notes.push(format!("AWS identity: {e}")),
    }
    if let (Some(found), Some(cluster), Some(region)) = (found, &cluster, &region) {
        match found {
            Ok(found) if found.is_none() => {
                return Err(Error::ClusterNotFound {
                    cluster: cluster.clone(),
                    region: region.clone(),
                });
            }
            Ok(_) => {}
            Err(e) => notes.push(format!("EKS cluster {cluster}: {e}")),
        }
    }
    Ok((target, notes))
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

fn parse_selectors(tokens: &[String]) -> Result<Vec<Selector>, Error> {
    tokens
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(Selector::parse)
        .collect()
}

fn list(args: &ListArgs) -> Result<u8, Error> {
    let text = match args.output {
        ListOutput::Json => {
            let items: Vec<serde_json::Value> = registry::CHECKS
                .iter()
                .map(|c| {
                    let e = crate::docs::explain_json(c);
                    serde_json::json!({
                        "code": e.code,
                        "slug": e.slug,
                        "category": e.category,
                        "severity": e.severity,
                        "title": e.title,
                        "needs": e.needs,
                        "permissions": e.permissions,
                        "docUrl": e.doc_url,
                    })
                })
                .collect();
            json_text(&serde_json::Value::Array(items))
        }
        ListOutput::Text => {
            let mut table = Table::new();
            table
                .load_preset(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Disabled)
                .set_header(vec!["CODE", "SLUG", "CATEGORY", "SEVERITY", "TITLE"]);
            for c in registry::CHECKS {
                table.add_row(vec![
                    c.code,
                    c.slug,
                    c.category.slug(),
                    c.severity.as_str(),
                    c.title,
                ]);
            }
            let mut text = table.to_string();
            text.push('\n');
            text
        }
    };
    print(&text)?;
    Ok(EXIT_OK)
}

fn permissions(args: &PermissionsArgs) -> Result<u8, Error> {
    let only = parse_selectors(&args.only)?;
    let skip = parse_selectors(&args.skip)?;
    let checks = registry::select(&only, &skip);
    let p = crate::permissions::for_checks(&checks);
    let text = match args.output {
        PermissionsOutput::Text => p.text(),
        PermissionsOutput::Json => p.iam_policy_text(),
        PermissionsOutput::Yaml => p.cluster_role_yaml(),
    };
    print(&text)?;
    Ok(EXIT_OK)
}

fn explain(args: &ExplainArgs) -> Result<u8, Error> {
    if let Some((code, version, reason)) = registry::RETIRED
        .iter()
        .find(|(code, _, _)| code.eq_ignore_ascii_case(&args.check))
    {
        return Err(Error::Usage {
            message: format!("{code} was retired in karpdoctor {version}: {reason}"),
        });
    }
    let info = registry::find(&args.check).ok_or_else(|| Error::UnknownCheck {
        query: args.check.clone(),
        suggestion: registry::suggest(&args.check),
    })?;
    let text = match args.output {
        ListOutput::Json => json_text(&crate::docs::explain_json(info)),
        ListOutput::Text => {
            let mut t = info.doc.to_string();
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t
        }
    };
    print(&text)?;
    Ok(EXIT_OK)
}

fn json_text(value: &impl serde::Serialize) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Writes to stdout; a closed pipe (`karpdoctor | head`) is not an error.
fn print(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Io {
            what: "writing to stdout".to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Runs the selected checks on a bundle (scenario tests and benchmarks use this). With
/// `record`, the context keeps every fact read, for [`Context::recording`].
pub async fn run_bundle(
    bundle: Bundle,
    args: &ReportArgs,
    record: bool,
) -> Result<RunOutput, Error> {
    let only = parse_selectors(&args.only)?;
    let skip = parse_selectors(&args.skip)?;
    let checks = registry::select(&only, &skip);
    let target = TargetArgs {
        // Only the flag's presence matters to `execute`; nothing is written here.
        record: record.then(std::path::PathBuf::new),
        ..TargetArgs::default()
    };
    execute(
        Source::Replay(Box::new(bundle.into_stored())),
        &target,
        args,
        &checks,
    )
    .await
}

/// The kinds of fact a set of checks may read.
pub fn needed_kinds(checks: &[&'static CheckInfo]) -> Vec<FactKind> {
    let mut kinds: Vec<FactKind> = checks
        .iter()
        .flat_map(|c| c.needs.iter().copied())
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}
