//! What each command does, from parsed options to an exit code. Fatal problems become one
//! line on stderr and exit code 2; everything found in the cluster goes into the report.

mod commands;
mod execute;
mod fleet;
mod node;
mod packaging;
mod pod;
mod target;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::bundle::Bundle;
use crate::check::CheckInfo;
use crate::cli::{
    CheckArgs, Cli, ColorArg, Command, Output, PreInstallArgs, ReportArgs, TargetArgs, UpgradeArgs,
};
use crate::context::Context;
use crate::error::Error;
use crate::facts::{FactKind, Stored};
use crate::history::HistoryDoc;
use crate::history_store::HistoryStore;
use crate::registry::{self};
use crate::report::{self, EXIT_OK, EXIT_TROUBLE, Report};

use commands::{explain, list, parse_selectors, permissions, reference_policy};
pub use execute::execute;

/// The recorded broken cluster behind `karpdoctor demo`.
pub const DEMO_BUNDLE: &str = include_str!("../../data/demo/bundle.json");

/// The whole program: parses the command line, runs it on a multi-threaded runtime and returns
/// the exit code. It lives in the library rather than in `main.rs` so that the async code it
/// drives is compiled once: a binary crate that polls the library's futures instantiates their
/// whole call tree again (in the release profile, without shared generics, that was a quarter
/// of karpdoctor's own build time and 3 MB of the binary).
pub fn main() -> u8 {
    // One line instead of a backtrace: checks run in their own tasks and report their own
    // panics as an internal-error outcome; this hook only keeps stderr readable.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("karpdoctor: internal error: {info} (please report this)");
    }));
    let cli = crate::cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Checks await facts through a few layers of async helpers, each holding the AWS SDK
        // call's state; unoptimised builds lay those out on the task's stack. Tokio's 2 MiB
        // default is too tight there, and the few worker threads make room cheap.
        .thread_stack_size(16 << 20)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("karpdoctor: cannot start the async runtime: {e}");
            return EXIT_TROUBLE;
        }
    };
    let code = runtime.block_on(run(cli));
    // A request stuck on a stalled endpoint must not keep the process alive past --timeout.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

pub async fn run(cli: Cli) -> u8 {
    let result = match cli.command {
        Some(Command::List(args)) => list(&args),
        Some(Command::Explain(args)) => explain(&args),
        Some(Command::Permissions(args)) => permissions(&args),
        Some(Command::ReferencePolicy(args)) => reference_policy(&args),
        Some(Command::Completions(args)) => packaging::completions(&args),
        Some(Command::Man(args)) => packaging::man(&args),
        Some(Command::PreInstall(args)) => pre_install(args).await,
        Some(Command::Upgrade(args)) => upgrade(args).await,
        Some(Command::Demo(report)) => {
            run_checks(Source::Demo, &TargetArgs::default(), &report).await
        }
        Some(Command::Check(args)) => check(args).await,
        Some(Command::Pod(args)) => pod::pod(*args).await,
        Some(Command::Node(args)) => node::node(*args).await,
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
    match fleet::targets(&args.target, &args.fleet)? {
        Some(specs) => fleet::run(specs, args).await,
        None => check_one(args.target, &args.report).await,
    }
}

/// One cluster (or one bundle): the report of a single run.
async fn check_one(target: TargetArgs, report: &ReportArgs) -> Result<u8, Error> {
    let source = match &target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => Source::Live(None),
    };
    run_checks(source, &target, report).await
}

async fn pre_install(args: PreInstallArgs) -> Result<u8, Error> {
    if args.target.context.len() > 1 {
        return Err(Error::Usage {
            message: "pre-install checks one cluster: give one --context".to_string(),
        });
    }
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
            Source::Live(None)
        }
    };
    let target = TargetArgs {
        pre_install: true,
        karpenter_version: args.karpenter_version.clone(),
        ..args.target
    };
    run_checks(source, &target, &args.report).await
}

async fn upgrade(args: UpgradeArgs) -> Result<u8, Error> {
    if args.target.context.len() > 1 {
        return Err(Error::Usage {
            message: "upgrade checks one cluster: give one --context".to_string(),
        });
    }
    let newest = crate::upgrade::releases::newest();
    if let Some(to) = &args.to {
        let Some(v) = crate::iam::reference::Version::parse(to) else {
            return Err(Error::Usage {
                message: format!("--to {to:?} is not a release like 1.9.0"),
            });
        };
        // A release the data does not hold cannot be judged: say which is the newest it does.
        if !crate::upgrade::releases::knows(v) {
            return Err(Error::Usage {
                message: format!(
                    "--to {to}: karpdoctor {} knows Karpenter releases {} to {}; upgrade karpdoctor for a newer one",
                    crate::VERSION,
                    crate::upgrade::releases::oldest()
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                    newest.map(|v| v.to_string()).unwrap_or_default()
                ),
            });
        }
    }
    if let Some(k) = &args.kubernetes {
        use crate::upgrade::releases::{Minor, kubernetes, newest};
        let Some(minor) = Minor::parse(k) else {
            return Err(Error::Usage {
                message: format!("--kubernetes {k:?} is not a Kubernetes minor like 1.34"),
            });
        };
        // A minor past the newest any known release accepts, with room for one EKS adds
        // before karpdoctor knows of a release for it.
        let newest_max = newest().and_then(kubernetes).map(|k| k.max);
        if let Some(max) = newest_max
            && minor.0 > max.0 + 1
        {
            return Err(Error::Usage {
                message: format!(
                    "--kubernetes {minor}: the newest Karpenter release karpdoctor knows accepts Kubernetes up to {max}; upgrade karpdoctor for a newer minor"
                ),
            });
        }
    }
    // A replay takes the targets its bundle recorded.
    if args.to.is_none() && args.kubernetes.is_none() && args.target.replay.is_none() {
        return Err(Error::Usage {
            message:
                "upgrade needs --to VERSION (Karpenter), --kubernetes 1.N (the cluster), or both"
                    .to_string(),
        });
    }
    let source = match &args.target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => Source::Live(None),
    };
    let target = TargetArgs {
        upgrade: true,
        upgrade_to: args.to.clone(),
        upgrade_kubernetes: args.kubernetes.clone(),
        ..args.target
    };
    run_checks(source, &target, &args.report).await
}

pub enum Source {
    /// The cluster of the current target, through the live backend; within a fleet run, with
    /// the AWS answers the fleet's targets share.
    Live(Option<Arc<crate::backend::live::SharedReads>>),
    Replay(Box<Bundle<Stored>>),
    Demo,
}

/// Everything a run produces besides the report's checks.
pub struct RunOutput {
    pub report: Report,
    pub context: Arc<Context>,
    /// The `--history` ConfigMap of a live run that keeps one.
    pub history: Option<KeptHistory>,
}

/// A live run's `--history`: the store, and what the run read from it before its checks (the
/// ConfigMap to update and the document it held, or why it could not be read).
pub struct KeptHistory {
    pub store: HistoryStore,
    pub read: Result<(ConfigMap, Option<HistoryDoc>), String>,
    /// Problems with the stored document that the run starts afresh from.
    pub notes: Vec<String>,
}

impl KeptHistory {
    /// Reads the history ConfigMap once: its churn record feeds KD4103 and the update after
    /// the run replaces exactly this version (a concurrent writer is detected).
    pub async fn open(store: HistoryStore) -> Self {
        let (namespace, name) = (store.namespace().to_string(), store.name().to_string());
        let mut notes = Vec::new();
        let read = store.read().await.map(|(cm, text)| {
            let doc = text.and_then(|text| match serde_json::from_str::<HistoryDoc>(&text) {
                Ok(doc) => Some(doc),
                Err(e) => {
                    notes.push(format!(
                        "history ConfigMap {namespace}/{name}: unreadable, starting afresh: {e}"
                    ));
                    None
                }
            });
            (cm, doc)
        });
        KeptHistory { store, read, notes }
    }

    /// `namespace/name`, as the churn record's fact and the bundle's hints name it.
    pub fn configmap(&self) -> String {
        format!("{}/{}", self.store.namespace(), self.store.name())
    }
}

/// The checks `--only` and `--skip` leave; none is a usage error.
fn selected_checks(args: &ReportArgs) -> Result<Vec<&'static CheckInfo>, Error> {
    let only = parse_selectors(&args.only)?;
    let skip = parse_selectors(&args.skip)?;
    let checks = registry::select(&only, &skip);
    if checks.is_empty() {
        return Err(Error::Usage {
            message: "--only and --skip leave no check to run".to_string(),
        });
    }
    Ok(checks)
}

/// A report's exit code under `--fail-on` and `--exit-zero`.
fn exit_code(report: &Report, args: &ReportArgs) -> u8 {
    match report.exit_code(args.fail_on.into()) {
        report::EXIT_FINDINGS if args.exit_zero => EXIT_OK,
        code => code,
    }
}

/// Whether to colour: `auto` needs a terminal and honours `NO_COLOR`.
fn color(arg: ColorArg) -> bool {
    match arg {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

async fn run_checks(source: Source, target: &TargetArgs, args: &ReportArgs) -> Result<u8, Error> {
    let checks = selected_checks(args)?;
    if args.history.is_some() && !matches!(source, Source::Live(_)) {
        return Err(Error::Usage {
            message: "--history needs a live run (not --replay or demo)".to_string(),
        });
    }
    let mut out = execute(source, target, args, &checks).await?;
    if let Some(kept) = out.history.take() {
        record_history(kept, &mut out.report, &out.context).await;
    }
    let code = exit_code(&out.report, args);

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
    let color = color(args.color);
    let rendered = match args.output {
        Output::Json => report::json::render(&out.report),
        Output::Markdown => report::markdown::render(&out.report),
        Output::Short => report::short::render(&out.report),
        Output::Prometheus => report::prometheus::render(&out.report),
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
    if let Some(gateway) = &args.pushgateway {
        push_metrics(gateway, &out.report).await;
    }
    Ok(code)
}

/// How long a push may take, connection included.
const PUSH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Pushes the run's metrics, grouped by job and cluster.
async fn push_metrics(gateway: &crate::pushgateway::Gateway, report: &Report) {
    let cluster = report::prometheus::cluster_label(report);
    let body = report::prometheus::render(report);
    push_group(gateway, &cluster, body, "metrics").await;
}

/// Pushes one cluster's metrics to its group. A failed push is one warning line (`what` says
/// whose metrics): the run's outcome and exit code are the cluster's, not the Pushgateway's.
async fn push_group(
    gateway: &crate::pushgateway::Gateway,
    cluster: &str,
    body: String,
    what: &str,
) {
    let pushed = crate::pushgateway::push(
        gateway,
        "karpdoctor",
        &[("cluster", cluster)],
        report::prometheus::CONTENT_TYPE,
        body,
        PUSH_TIMEOUT,
    )
    .await;
    if let Err(e) = pushed {
        eprintln!(
            "karpdoctor: warning: {what} not pushed to {gateway}: {}",
            crate::sanitize::one_line(&e)
        );
    }
}

/// Marks findings new/ongoing/resolved against the history read before the checks, adds this
/// run's churn sample and stores both. Problems with the history are run notes: they never
/// change the verdict.
async fn record_history(kept: KeptHistory, report: &mut Report, context: &Context) {
    report.errors.extend(kept.notes);
    let (cm, previous) = match kept.read {
        Ok(found) => found,
        Err(e) => {
            report.errors.push(e);
            return;
        }
    };
    let (mut doc, notes) = crate::history::merge(
        previous.as_ref(),
        report.findings(),
        &report.concluded(),
        &report.started_at,
    );
    report.annotate(notes);
    // A run that did not read the NodeClaims (or could not) adds no sample: a gap, not a
    // pool that emptied.
    if let Some(claims) = context.peek(crate::facts::FactKey::nodeclaims()) {
        let now = context.now();
        let sample = crate::disruption::rates::sample(&claims, doc.churn.last(), now);
        doc.churn = crate::disruption::rates::appended(&doc.churn, sample, now);
    }
    let text = serde_json::to_string(&doc).unwrap_or_default();
    if let Err(e) = kept.store.write(cm, text).await {
        report.errors.push(e);
    }
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
