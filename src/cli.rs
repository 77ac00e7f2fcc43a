//! Command-line interface (clap derive). Parsing only: validation and the run live in `app`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::pushgateway::Gateway;
use crate::report::FailOn;

const AFTER_HELP: &str = "\
Exit codes (the same for every output format):
  0  nothing at or above --fail-on was found
  1  findings at or above --fail-on
  2  karpdoctor could not do its job: bad options, unreadable kubeconfig or bundle,
     cluster unreachable, no AWS credentials, or no check could conclude
  With --exit-zero, findings exit 0 (2 still means karpdoctor could not run).
  With several clusters (--context a,b, --all-contexts, --targets), the exit code is the
  worst of theirs: one cluster that cannot be reached makes it 2.

Examples:
  karpdoctor                          check the cluster of the current kube context
  karpdoctor --only identity -o json  only the identity checks, as JSON
  karpdoctor --record ticket.json     also save every fact read, for support
  karpdoctor --replay ticket.json     judge a saved bundle offline
  karpdoctor --context prod,staging   check two clusters at once, then a fleet table
  karpdoctor --all-contexts -o json   every context of the kubeconfig: one FleetReport
  karpdoctor explain KD1001           how to fix one problem
  karpdoctor demo                     see a report on a built-in broken cluster
  karpdoctor permissions -o json      the IAM policy karpdoctor needs
  karpdoctor -o prometheus            metrics for alerting (or push them: --pushgateway URL)";

/// Diagnoses broken Karpenter installs on AWS EKS.
///
/// Runs read-only checks against the Kubernetes API and AWS APIs and, for each problem,
/// prints what is wrong, the evidence, and the documented fix.
#[derive(Debug, Parser)]
#[command(name = "karpdoctor", version, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the checks against the cluster (the default when no command is given).
    #[command(after_help = AFTER_HELP)]
    Check(CheckArgs),
    /// List every check: code, slug, category, severity and title.
    List(ListArgs),
    /// Show how to fix a problem: the remediation doc of a check code or slug.
    Explain(ExplainArgs),
    /// Run every check on a recorded broken cluster built into the binary (no cluster, no AWS).
    #[command(after_help = AFTER_HELP)]
    Demo(ReportArgs),
    /// Why a pod is Pending: its constraints, every NodePool's verdict, the NodeClaim it was
    /// nominated to and that NodeClaim's launch, registration and initialization, with
    /// timestamps, up to the node it runs on or the step where it stops and the check that
    /// owns that step. `karpdoctor pod shop/web-0`, or `karpdoctor pod shop -l app=web`.
    #[command(after_help = AFTER_HELP)]
    Pod(Box<PodArgs>),
    /// Why Karpenter keeps a node or cannot remove it: its NodeClaim, its NodePool's budgets now,
    /// whether Karpenter wants it gone (drift, consolidation) and every blocker in the order
    /// Karpenter meets them (do-not-disrupt, a PodDisruptionBudget, the budget and when it
    /// opens), or the step its deletion is held at, and the check that owns the step where it
    /// stops. `karpdoctor node ip-10-0-1-2.us-west-2.compute.internal` (a Node or a NodeClaim).
    #[command(after_help = AFTER_HELP)]
    Node(Box<NodeArgs>),
    /// Print the least-privilege permissions the selected checks need: a summary (text), the
    /// IAM policy (json) or the Kubernetes ClusterRole (yaml).
    Permissions(PermissionsArgs),
    /// Before installing Karpenter: may your AWS identity (and the account's SCPs) do what an
    /// install needs? Prints what each blocked action disables and the configuration that
    /// works around it. Needs AWS credentials and --cluster/--region; no Kubernetes access.
    #[command(after_help = AFTER_HELP)]
    PreInstall(PreInstallArgs),
    /// Before upgrading Karpenter (--to VERSION) or the cluster's Kubernetes minor
    /// (--kubernetes 1.N), or both: what the target would break in this install, then the
    /// plan, step by step in the order to apply it. A release karpdoctor does not know is
    /// refused with the newest it knows.
    #[command(after_help = AFTER_HELP)]
    Upgrade(UpgradeArgs),
    /// Print the reference controller IAM policy of a Karpenter release (least privilege),
    /// placeholders filled in for your cluster.
    ReferencePolicy(ReferencePolicyArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell or elvish) to stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout: karpdoctor's own, listing every command, or
    /// one command's.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct PodArgs {
    /// The pod, as NAMESPACE/NAME; with --selector, the NAMESPACE to select in
    #[arg(value_name = "NAMESPACE/NAME")]
    pub pod: String,
    /// Every pod of NAMESPACE matching this label selector (`app=web`), one chain each
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The Node, or the NodeClaim, by name
    #[arg(value_name = "NAME")]
    pub node: String,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print [default: karpdoctor's own page]
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
    /// Instead of printing one page, write every page (karpdoctor.1 and karpdoctor-COMMAND.1)
    /// into DIR
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// The file name kubectl looks for on PATH to run `kubectl karpdoctor` (krew installs a link
/// by this name too).
pub const KUBECTL_PLUGIN: &str = "kubectl-karpdoctor";

/// Parses the process's arguments. Run as `kubectl-karpdoctor`, the usage lines and examples
/// name the command the way the user typed it, `kubectl karpdoctor`; nothing else changes.
pub fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut cmd = command_for(args.first().map(OsString::as_os_str));
    let mut matches = cmd
        .try_get_matches_from_mut(args)
        .unwrap_or_else(|e| e.exit());
    Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
}

/// The command definition as seen by a process started as `argv0`.
pub fn command_for(argv0: Option<&OsStr>) -> clap::Command {
    let cmd = Cli::command();
    if argv0.is_some_and(is_kubectl_plugin) {
        as_kubectl_plugin(cmd)
    } else {
        cmd
    }
}

/// Whether `argv0` (a path, as kubectl passes the plugin's full path) names the plugin file.
pub fn is_kubectl_plugin(argv0: &OsStr) -> bool {
    let Some(name) = Path::new(argv0).file_name().and_then(OsStr::to_str) else {
        return false;
    };
    name.strip_suffix(".exe").unwrap_or(name) == KUBECTL_PLUGIN
}

fn as_kubectl_plugin(cmd: clap::Command) -> clap::Command {
    // clap names the program after argv[0]'s file name unless told otherwise; the examples
    // are plain text and need the same words. Every example line starts "  karpdoctor".
    fn examples(cmd: clap::Command) -> clap::Command {
        match cmd.get_after_help().map(ToString::to_string) {
            Some(text) => cmd.after_help(text.replace("\n  karpdoctor", "\n  kubectl karpdoctor")),
            None => cmd,
        }
    }
    examples(cmd.bin_name("kubectl karpdoctor")).mut_subcommands(examples)
}

#[derive(Debug, Args, Default)]
pub struct PreInstallArgs {
    /// The Karpenter release you are about to install (default: the newest karpdoctor knows)
    #[arg(long, value_name = "VERSION")]
    pub karpenter_version: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args, Default)]
pub struct UpgradeArgs {
    /// The Karpenter release to upgrade to (default: the installed one)
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// The Kubernetes minor to upgrade the cluster to, as 1.34 (default: the cluster's)
    #[arg(long, value_name = "1.N")]
    pub kubernetes: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct ReferencePolicyArgs {
    /// Karpenter release (default: the newest karpdoctor knows)
    #[arg(long, value_name = "VERSION")]
    pub karpenter_version: Option<String>,
    /// EKS cluster name
    #[arg(long, value_name = "NAME")]
    pub cluster: String,
    /// AWS region of the cluster
    #[arg(long, value_name = "REGION")]
    pub region: String,
    /// AWS account id of the cluster
    #[arg(long, value_name = "ID")]
    pub account: String,
    /// AWS partition
    #[arg(long, default_value = "aws", value_name = "PARTITION")]
    pub partition: String,
    /// The node role Karpenter passes to EC2 (default: KarpenterNodeRole-<cluster>)
    #[arg(long, value_name = "ARN")]
    pub node_role_arn: Option<String>,
    /// The interruption queue name (default: the cluster name)
    #[arg(long, value_name = "NAME")]
    pub interruption_queue: Option<String>,
}

#[derive(Debug, Args)]
pub struct PermissionsArgs {
    /// text: per check, what it cannot do without which permission; json: the IAM policy
    /// document; yaml: the ClusterRole manifest
    #[arg(short, long, value_enum, default_value_t = PermissionsOutput::Text)]
    pub output: PermissionsOutput,
    /// Only the checks given: codes, slugs or categories
    #[arg(long, value_delimiter = ',', value_name = "CHECKS")]
    pub only: Vec<String>,
    /// Leave out these checks: codes, slugs or categories
    #[arg(long, value_delimiter = ',', value_name = "CHECKS")]
    pub skip: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PermissionsOutput {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Args, Default)]
pub struct CheckArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Checking several clusters in one run. With more than one target, each is checked
/// concurrently and the output is a section per cluster and a fleet table (JSON: one
/// `FleetReport`); with exactly one, the output is the usual single-cluster report.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Check every context of the kubeconfig
    #[arg(long, conflicts_with_all = ["context", "targets"], help_heading = "Many clusters")]
    pub all_contexts: bool,
    /// A YAML file of the clusters to check: `targets:`, a list of `context` with optional
    /// `profile`, `region` and `cluster` (flags given as well apply where an entry is silent)
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "context",
        help_heading = "Many clusters"
    )]
    pub targets: Option<PathBuf>,
    /// How many clusters are checked at once
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256), help_heading = "Many clusters")]
    pub parallel: u16,
}

impl Default for FleetArgs {
    fn default() -> Self {
        FleetArgs {
            all_contexts: false,
            targets: None,
            parallel: 8,
        }
    }
}

#[derive(Clone, Debug, Args, Default)]
pub struct TargetArgs {
    /// Kubeconfig file [default: $KUBECONFIG, then ~/.kube/config, then in-cluster]
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    pub kubeconfig: Option<PathBuf>,
    /// Kube context to use [default: the current context]. Several (comma-separated or
    /// repeated) check each of those clusters concurrently
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAME",
        help_heading = "Target"
    )]
    pub context: Vec<String>,
    /// AWS profile [default: $AWS_PROFILE, then the default chain]
    #[arg(long, value_name = "NAME", help_heading = "Target")]
    pub profile: Option<String>,
    /// AWS region [default: $AWS_REGION, the profile, the kube context's EKS ARN, the controller's AWS_REGION]
    #[arg(long, value_name = "REGION", help_heading = "Target")]
    pub region: Option<String>,
    /// EKS cluster name [default: the controller's CLUSTER_NAME, then the kube context]
    #[arg(long, value_name = "NAME", help_heading = "Target")]
    pub cluster: Option<String>,
    /// Namespace Karpenter runs in [default: wherever the controller Deployment is]
    #[arg(short = 'n', long, value_name = "NAMESPACE", help_heading = "Target")]
    pub namespace: Option<String>,
    /// Also write every fact read (and every error) to a bundle FILE, for support or --replay
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    pub record: Option<PathBuf>,
    /// Judge a recorded bundle offline instead of the live APIs
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    pub replay: Option<PathBuf>,
    /// Judge ages (conditions stuck for minutes) as of this RFC 3339 time instead of now.
    /// For reproducing a recorded moment against live endpoints (tests, demos); a replay
    /// always uses its bundle's recording time.
    #[arg(long, value_name = "TIME", env = "KARPDOCTOR_NOW", hide = true)]
    pub now: Option<String>,
    /// Set by `pre-install`, not a flag of its own.
    #[arg(skip)]
    pub pre_install: bool,
    #[arg(skip)]
    pub karpenter_version: Option<String>,
    /// Set by `upgrade`, not flags of their own.
    #[arg(skip)]
    pub upgrade: bool,
    #[arg(skip)]
    pub upgrade_to: Option<String>,
    #[arg(skip)]
    pub upgrade_kubernetes: Option<String>,
    /// Set for each run of a fleet: several runs at once would draw over each other's
    /// progress bar (the fleet draws its own).
    #[arg(skip)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output format
    #[arg(short, long, value_enum, default_value_t = Output::Text, help_heading = "Output")]
    pub output: Output,
    /// Run only these checks: codes, slugs or categories (comma-separated or repeated)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "CHECKS",
        help_heading = "Selection"
    )]
    pub only: Vec<String>,
    /// Skip these checks: codes, slugs or categories (comma-separated or repeated)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "CHECKS",
        help_heading = "Selection"
    )]
    pub skip: Vec<String>,
    /// Lowest finding severity that makes the exit code 1
    #[arg(long, value_enum, default_value_t = FailOnArg::Error, value_name = "SEVERITY", help_heading = "Selection")]
    pub fail_on: FailOnArg,
    /// Bound for the whole run (e.g. 60s, 2m)
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION", help_heading = "Limits")]
    pub timeout: Duration,
    /// Bound for each check, API requests included (e.g. 20s)
    #[arg(long, value_parser = parse_duration, default_value = "20s", value_name = "DURATION", help_heading = "Limits")]
    pub check_timeout: Duration,
    /// When to use colour (`auto` honours NO_COLOR and needs a terminal)
    #[arg(long, value_enum, default_value_t = ColorArg::Auto, value_name = "WHEN", help_heading = "Output")]
    pub color: ColorArg,
    /// More detail: timings, API call counts, every fact read
    #[arg(short, long, action = clap::ArgAction::Count, help_heading = "Output")]
    pub verbose: u8,
    /// Less output: only problems and the verdict
    #[arg(short, long, conflicts_with = "verbose", help_heading = "Output")]
    pub quiet: bool,
    /// Exit 0 even when findings are found (for jobs that alert from the JSON instead)
    #[arg(long, help_heading = "Selection")]
    pub exit_zero: bool,
    /// Replace account ids, IP addresses, hostnames and ARN account parts with stable
    /// pseudonyms in every output and in --record bundles (for support tickets)
    #[arg(long, help_heading = "Output")]
    pub redact: bool,
    /// Keep the last result in a ConfigMap of karpdoctor's own namespace and mark each
    /// finding new, ongoing or resolved (scheduled runs)
    #[arg(long, value_name = "configmap/NAME", value_parser = parse_history, help_heading = "Output")]
    pub history: Option<String>,
    /// After the run, push its metrics (what `-o prometheus` prints) to this Prometheus
    /// Pushgateway, as job `karpdoctor` grouped by cluster. A failed push is a warning on
    /// stderr; it never changes the exit code
    #[arg(long, value_name = "URL", value_parser = Gateway::parse, help_heading = "Output")]
    pub pushgateway: Option<Gateway>,
}

/// `configmap/NAME` → `NAME` (a DNS-1123 name).
pub fn parse_history(s: &str) -> Result<String, String> {
    let name = s
        .strip_prefix("configmap/")
        .or_else(|| s.strip_prefix("configmaps/"))
        .or_else(|| s.strip_prefix("cm/"))
        .ok_or_else(|| format!("\"{s}\": expected configmap/NAME"))?;
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if valid {
        Ok(name.to_string())
    } else {
        Err(format!("\"{name}\" is not a valid ConfigMap name"))
    }
}

impl Default for ReportArgs {
    fn default() -> Self {
        ReportArgs {
            output: Output::Text,
            only: Vec::new(),
            skip: Vec::new(),
            fail_on: FailOnArg::Error,
            timeout: Duration::from_secs(60),
            check_timeout: Duration::from_secs(20),
            color: ColorArg::Auto,
            verbose: 0,
            quiet: false,
            exit_zero: false,
            redact: false,
            history: None,
            pushgateway: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A check code (KD1001) or slug (controller-not-running)
    #[arg(value_name = "CODE|SLUG")]
    pub check: String,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ListOutput::Text)]
    pub output: ListOutput,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
    Markdown,
    /// One line per finding and per check that could not run, for log pipelines
    Short,
    /// Prometheus text exposition format (0.0.4): a gauge per check and per finding
    /// severity, for alerting
    Prometheus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListOutput {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    Error,
    Warning,
    Info,
    Never,
}

impl From<FailOnArg> for FailOn {
    fn from(f: FailOnArg) -> Self {
        match f {
            FailOnArg::Error => FailOn::Error,
            FailOnArg::Warning => FailOn::Warning,
            FailOnArg::Info => FailOn::Info,
            FailOnArg::Never => FailOn::Never,
        }
    }
}

/// `90`, `90s`, `1500ms`, `2m`: a positive duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration (try 30s, 500ms or 2m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "\"{s}\": unknown unit \"{unit}\" (use ms, s, m or h)"
            ));
        }
    };
    if !(seconds > 0.0 && seconds.is_finite() && seconds < 86_400.0) {
        return Err(format!(
            "\"{s}\" must be more than zero and less than a day"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn bare_invocation_is_a_check_run() {
        let cli =
            Cli::try_parse_from(["karpdoctor", "-o", "json", "--only", "KD1001,install"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.check.report.output, Output::Json);
        assert_eq!(cli.check.report.only, ["KD1001", "install"]);
    }

    #[test]
    fn the_kubectl_plugin_is_recognised_by_its_file_name() {
        for plugin in [
            "kubectl-karpdoctor",
            "/home/me/.krew/bin/kubectl-karpdoctor",
            "kubectl-karpdoctor.exe",
        ] {
            assert!(is_kubectl_plugin(OsStr::new(plugin)), "{plugin}");
        }
        for other in [
            "karpdoctor",
            "/usr/local/bin/karpdoctor",
            "kubectl-karpdoctor-old",
            "/opt/kubectl-karpdoctor/karpdoctor",
        ] {
            assert!(!is_kubectl_plugin(OsStr::new(other)), "{other}");
        }
    }

    #[test]
    fn as_a_plugin_usage_and_examples_say_kubectl_karpdoctor() {
        let argv0 = "/home/me/.krew/bin/kubectl-karpdoctor";
        let help = |args: &[&str]| {
            let mut argv = vec![argv0];
            argv.extend(args);
            command_for(Some(OsStr::new(argv0)))
                .try_get_matches_from(argv)
                .unwrap_err()
                .to_string()
        };
        let top = help(&["--help"]);
        assert!(top.contains("Usage: kubectl karpdoctor [OPTIONS]"), "{top}");
        assert!(
            top.contains("\n  kubectl karpdoctor explain KD1001"),
            "{top}"
        );
        assert!(!top.contains("\n  karpdoctor "), "{top}");
        let demo = help(&["demo", "--help"]);
        assert!(demo.contains("Usage: kubectl karpdoctor demo"), "{demo}");
        assert!(demo.contains("\n  kubectl karpdoctor demo "), "{demo}");
        // Run under its own name, nothing changes.
        let plain = command_for(Some(OsStr::new("karpdoctor")))
            .try_get_matches_from(["karpdoctor", "--help"])
            .unwrap_err()
            .to_string();
        assert!(plain.contains("Usage: karpdoctor [OPTIONS]"), "{plain}");
        assert!(!plain.contains("kubectl karpdoctor"), "{plain}");
    }
}
