//! Whole-process benchmarks of the built binary: start-up, large replays, latency through a
//! proxy that adds a round trip to every request, the same diagnosis by hand, and a fleet of
//! 20 clusters checked in one run.
//!
//! `cargo bench --bench process` (or `bash scripts/bench`) measures and prints a Markdown
//! table; docs/performance.md quotes it. Under `cargo test` (CI, a debug build) it
//! only runs each measurement once, small, to show the harness still works: the figures of a
//! debug build on a busy machine mean nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark harness: a panic is a failure

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use karpdoctor_testkit::proxy::LatencyProxy;
use karpdoctor_testkit::scale::{self, Size};
use karpdoctor_testkit::{Cluster, TestServer};
use support::*;

/// The scenario of the latency and manual-triage comparisons: nodes launch and never join
/// because the node role is missing from aws-auth (KD5001, KD6002), with the controller on
/// Fargate, IRSA, an interruption queue and a CONFIG_MAP cluster, so every service is asked.
const SCENARIO: &str = "node-role-missing-from-aws-auth";
const LATENCY: Duration = Duration::from_millis(50);
/// Clusters in the fleet benchmark (the figure: 20 in ≤ 1.5× the slowest one alone).
const FLEET: usize = 20;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        if full {
            benchmark().await
        } else {
            smoke().await
        }
    });
}

/// What `cargo test` runs: one small pass through each harness, with assertions that hold on
/// any machine (a run cannot beat its own critical path; a healthy cluster stays healthy).
async fn smoke() {
    let dir = scratch("bench-smoke");
    let (wall, cpu, rss, code) = replay_scaled(&dir, 1);
    assert_eq!(code, 0, "the grown healthy bundle must stay healthy");
    assert!(wall > Duration::ZERO && cpu > Duration::ZERO && rss > 0);

    let delay = Duration::from_millis(5);
    let live = LiveSetup::start(delay, Answers::Reused).await;
    let run = live.karpdoctor();
    assert_eq!(run.code, live.expected_code, "exit code through the proxy");
    assert!(run.rounds > 0, "a live run has a critical path");
    assert!(
        run.wall >= delay * run.rounds,
        "{:?} is faster than {} rounds of {delay:?}",
        run.wall,
        run.rounds
    );
    let fleet = FleetSetup::start(2, delay).await;
    let one = fleet.karpdoctor(&["--context", &fleet.contexts[0]]);
    let all = fleet.karpdoctor(&["--all-contexts"]);
    assert_eq!(
        (one.code, all.code),
        (fleet.expected_code, fleet.expected_code)
    );
    assert!(all.cpu > Duration::ZERO && all.emulator_cpu > Duration::ZERO);
    println!("process benchmark harness works (run `cargo bench --bench process` to measure)");
}

/// `KARPDOCTOR_BENCH=startup,scale,livescale,latency,manual,fleet` runs only those parts
/// (default: all).
fn part(name: &str) -> bool {
    std::env::var("KARPDOCTOR_BENCH")
        .map(|v| v.split(',').any(|p| p.trim() == name))
        .unwrap_or(true)
}

async fn benchmark() {
    let dir = scratch("bench-process");
    let exe = &karpdoctor_exe();
    println!("## karpdoctor whole-process benchmarks\n");
    println!("machine: {}\n", machine());

    // 1. Start-up and size.
    if part("startup") {
        startup(exe);
    }
    if part("scale") {
        scale(&dir);
    }
    if part("livescale") {
        live_scale(&dir).await;
    }
    if part("latency") || part("manual") {
        latency().await;
    }
    if part("fleet") {
        fleet().await;
    }
}

fn startup(exe: &str) {
    let version = median(
        (0..21)
            .map(|_| timed(|| karpdoctor(&["--version"], &[])))
            .collect(),
    );
    let list = median(
        (0..21)
            .map(|_| timed(|| karpdoctor(&["list"], &[])))
            .collect(),
    );
    let size = std::fs::metadata(exe).map(|m| m.len()).unwrap_or(0);
    println!("### Start-up (median of 21)\n");
    println!("| command | wall |\n|---|---|");
    println!("| `karpdoctor --version` | {} |", ms(version));
    println!("| `karpdoctor list` | {} |", ms(list));
    println!("\nbinary: {:.1} MiB ({exe})\n", size as f64 / 1048576.0);
}

fn scale(dir: &Path) {
    // 2. Scale: whole-process replays of grown bundles (parse, judge, render).
    println!("### Scale: `karpdoctor --replay` of grown healthy bundles (median of 3)\n");
    println!(
        "| size | NodeClaims | events | subnets + SGs | pending pods | bundle | wall | CPU | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for factor in [1, 4, 16] {
        let runs: Vec<_> = (0..3).map(|_| replay_scaled(dir, factor)).collect();
        assert!(runs.iter().all(|r| r.3 == 0), "{factor}×: not healthy");
        let s = Size::of(factor);
        let bundle = std::fs::metadata(dir.join(format!("scale-{factor}.json")))
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "| {factor}× | {} | {} | {} | {} | {:.0} MB | {} | {} | {:.0} MB |",
            s.nodeclaims,
            s.events,
            s.subnets + s.security_groups,
            s.pending_pods,
            bundle as f64 / 1e6,
            ms(median(runs.iter().map(|r| r.0).collect())),
            ms(median(runs.iter().map(|r| r.1).collect())),
            median(runs.iter().map(|r| Duration::from_millis(r.2)).collect()).as_millis() as f64
                / 1000.0,
        );
    }
}

/// 2b. Scale, live: the scheduled job's run (no `--record`) against the test API server serving
/// the grown cluster, through `kube::Client`'s pages of 500, with the emulator seeded from the
/// base bundle: the grown EC2NodeClasses select the base's subnets and groups, and the AWS
/// side stays at its real size (moto cannot hold 4,000 subnets of one template's CIDR).
async fn live_scale(dir: &Path) {
    println!("### Scale, live: `karpdoctor` against the test API server serving grown clusters\n");
    println!("| size | NodeClaims | events | pending pods | wall | CPU | peak RSS | exit |");
    println!("|---|---|---|---|---|---|---|---|");
    let base = read_json(&fixture_bundle("healthy"));
    let emulator = Emulator::start();
    seed_aws(&emulator.url, &base).await;
    let caller = caller_env(&emulator.url, &base).await;
    for factor in [1, 4, 16] {
        let grown = scale::grow(&base, factor).unwrap();
        let server = TestServer::start(Cluster::from_bundle(&grown), 0, Duration::ZERO)
            .await
            .unwrap();
        drop(grown);
        let kubeconfig = dir.join(format!("kubeconfig-scale-{factor}"));
        std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
        let kubeconfig = kubeconfig.display().to_string();
        let mut env = live_env(&kubeconfig, &emulator.url);
        env.extend(caller.iter().map(|(k, v)| (*k, v.as_str())));
        let args = ["--region", "us-west-2", "-o", "json"];
        let (wall, cpu, rss, code) = tokio::task::block_in_place(|| timed_run(dir, &args, &env));
        let s = Size::of(factor);
        println!(
            "| {factor}× | {} | {} | {} | {} | {} | {:.0} MiB | {} |",
            s.nodeclaims,
            s.events,
            s.pending_pods,
            ms(wall),
            ms(cpu),
            rss as f64 / 1024.0,
            code,
        );
    }
}

/// How the emulator answers in a latency measurement.
#[derive(Clone, Copy, PartialEq)]
enum Answers {
    /// moto computes every answer (in Python, one request at a time, on the same two cores).
    Computed,
    /// A repeated read gets the emulator's first answer again (`KARPMOTO_REUSE_READS`), so
    /// what is left is the requests and the order they wait in.
    Reused,
}

/// Median wall time of 7 runs of [`SCENARIO`] after one uncounted warm-up run (the servers
/// warm up, the emulator builds its static answers), and one of those runs for its stats.
async fn timed_runs(delay: Duration, answers: Answers) -> (Duration, LiveRun, LiveSetup) {
    let live = LiveSetup::start(delay, answers).await;
    live.karpdoctor();
    let runs: Vec<LiveRun> = (0..7).map(|_| live.karpdoctor()).collect();
    assert!(runs.iter().all(|r| r.code == live.expected_code));
    let wall = median(runs.iter().map(|r| r.wall).collect());
    let deepest = runs.into_iter().max_by_key(|r| r.rounds).unwrap();
    (wall, deepest, live)
}

async fn latency() {
    // 3. Latency: every request through a proxy adding 50 ms, with the emulator computing
    //    every answer and with it reusing answers to repeated reads.
    let (computed, run, live) = timed_runs(LATENCY, Answers::Computed).await;
    let (computed_fast, _, _) = timed_runs(Duration::ZERO, Answers::Computed).await;
    let (reused, reused_run, _) = timed_runs(LATENCY, Answers::Reused).await;
    let (reused_fast, _, _) = timed_runs(Duration::ZERO, Answers::Reused).await;
    let bound = |r: &LiveRun| LATENCY * r.rounds;
    let ratio = |wall: Duration, r: &LiveRun| wall.as_secs_f64() / bound(r).as_secs_f64().max(1e-9);
    println!("\n### Latency: `{SCENARIO}` live, +50 ms per request (median of 7)\n");
    println!(
        "| | emulator computes every answer | emulator reuses repeated reads |\n|---|---|---|"
    );
    println!(
        "| wall time, +50 ms per request | {} | {} |",
        ms(computed),
        ms(reused)
    );
    println!(
        "| wall time, no added latency | {} | {} |",
        ms(computed_fast),
        ms(reused_fast)
    );
    println!(
        "| API requests | {} ({}) | {} |",
        run.calls, run.per_service, reused_run.calls
    );
    println!(
        "| critical path | {} rounds: {} | {} rounds: {} |",
        run.rounds,
        run.path.join(" → "),
        reused_run.rounds,
        reused_run.path.join(" → ")
    );
    println!(
        "| lower bound (rounds × 50 ms) | {} | {} |",
        ms(bound(&run)),
        ms(bound(&reused_run))
    );
    println!(
        "| ratio to the lower bound (target ≤ 1.5×) | {:.2}× | {:.2}× |",
        ratio(computed, &run),
        ratio(reused, &reused_run)
    );
    let wall = computed;

    // 4. The same diagnosis by hand: the troubleshooting guide's commands, one after another.
    if !part("manual") {
        return;
    }
    let manual: Vec<(Duration, usize)> = (0..3).map(|_| live.manual_triage()).collect();
    let manual_wall = median(manual.iter().map(|m| m.0).collect());
    println!("\n### Versus manual triage: `{SCENARIO}`, same endpoints, +50 ms (median of 3)\n");
    println!("| | wall |\n|---|---|");
    println!(
        "| {} `kubectl` and `aws` commands, one after another ({} failed) | {} |",
        MANUAL.len(),
        manual[0].1,
        ms(manual_wall)
    );
    println!("| `karpdoctor` | {} |", ms(wall));
    println!(
        "| ratio | {:.0}× faster (target ≥ 20×) |",
        manual_wall.as_secs_f64() / wall.as_secs_f64().max(1e-9)
    );
}

/// Grows `fixtures/healthy` by `factor`, replays it through the binary under `/usr/bin/time`,
/// and returns wall time, CPU time (user + system), peak RSS in KiB and the exit code.
fn replay_scaled(dir: &Path, factor: usize) -> (Duration, Duration, u64, i32) {
    let path = dir.join(format!("scale-{factor}.json"));
    if !path.exists() {
        let base = read_json(&fixture_bundle("healthy"));
        let grown = scale::grow(&base, factor).unwrap();
        std::fs::write(&path, serde_json::to_vec(&grown).unwrap()).unwrap();
    }
    let path = path.display().to_string();
    let args = ["--replay", path.as_str(), "-o", "json"];
    timed_run(dir, &args, &[("NO_COLOR", "1")])
}

/// Runs karpdoctor with `args` (and generous timeouts) under GNU time: wall time, CPU time
/// (user + system), peak RSS in KiB and the exit code.
fn timed_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Duration, Duration, u64, i32) {
    let times = dir.join("time.txt");
    let started = Instant::now();
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%U %S %M", "-o"])
        .arg(&times)
        .arg(karpdoctor_exe())
        .args(args)
        .args(["--timeout", "10m", "--check-timeout", "10m"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .expect("/usr/bin/time (GNU time) runs the binary");
    let wall = started.elapsed();
    let text = std::fs::read_to_string(&times).unwrap_or_default();
    let fields: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    assert_eq!(fields.len(), 3, "GNU time output: {text:?}");
    let code = out.status.code().unwrap_or(-1);
    if code != 0 {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    (
        wall,
        Duration::from_secs_f64(fields[0] + fields[1]),
        fields[2] as u64,
        code,
    )
}

/// The emulator seeded with [`SCENARIO`], the test API server serving it, and a latency proxy
/// in front of each.
struct LiveSetup {
    _emulator: Emulator,
    _server: TestServer,
    _proxies: (LatencyProxy, LatencyProxy),
    kubeconfig: String,
    aws_url: String,
    caller: Vec<(&'static str, String)>,
    expected_code: i32,
    /// Delay and answers, for file names.
    name: String,
    /// Holds the kubeconfig; removed with the setup.
    _dir: Scratch,
}

struct LiveRun {
    wall: Duration,
    code: i32,
    rounds: u32,
    calls: u64,
    per_service: String,
    path: Vec<String>,
}

impl LiveSetup {
    async fn start(delay: Duration, answers: Answers) -> LiveSetup {
        let emulator = match answers {
            Answers::Computed => Emulator::start(),
            Answers::Reused => Emulator::start_with(&[("KARPMOTO_REUSE_READS", "1")]),
        };
        let bundle = read_json(&fixture_bundle(SCENARIO));
        seed_aws(&emulator.url, &bundle).await;
        let caller = caller_env(&emulator.url, &bundle).await;
        let server = TestServer::start(Cluster::from_bundle(&bundle), 0, Duration::ZERO)
            .await
            .unwrap();
        let aws_addr: SocketAddr = emulator.url.trim_start_matches("http://").parse().unwrap();
        let kube_proxy = LatencyProxy::start(server.addr, delay).await.unwrap();
        let aws_proxy = LatencyProxy::start(aws_addr, delay).await.unwrap();
        // Setups run side by side: each has its own files.
        let name = format!(
            "{}ms-{}",
            delay.as_millis(),
            match answers {
                Answers::Computed => "computed",
                Answers::Reused => "reused",
            }
        );
        let dir = scratch(&format!("bench-live-{name}"));
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            server
                .kubeconfig()
                .replace(&server.url(), &kube_proxy.url()),
        )
        .unwrap();
        let expected: serde_json::Value = read_json(
            &fixture_bundle(SCENARIO)
                .parent()
                .unwrap()
                .join("expect.json"),
        );
        LiveSetup {
            aws_url: aws_proxy.url(),
            _emulator: emulator,
            _server: server,
            _proxies: (kube_proxy, aws_proxy),
            kubeconfig: path.display().to_string(),
            caller,
            expected_code: expected["exitCode"].as_i64().unwrap_or(0) as i32,
            name,
            _dir: dir,
        }
    }

    fn env(&self) -> Vec<(&str, &str)> {
        let mut env = live_env(&self.kubeconfig, &self.aws_url);
        env.extend(self.caller.iter().map(|(k, v)| (*k, v.as_str())));
        env
    }

    fn karpdoctor(&self) -> LiveRun {
        let env = self.env();
        let started = Instant::now();
        let out = tokio::task::block_in_place(|| {
            karpdoctor(&["--region", "us-west-2", "-o", "json", "-v"], &env)
        });
        let wall = started.elapsed();
        if std::env::var_os("KARPDOCTOR_BENCH_VERBOSE").is_some() {
            // The last run's report, for reading its `stats` (when each fact started, its
            // requests and rounds) after the benchmark.
            let report = scratch("bench-live")
                .keep()
                .join(format!("report-{}.json", self.name));
            std::fs::write(report, &out.stdout).unwrap();
        }
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        let stats = &report["stats"];
        let path = stats["criticalPath"]["facts"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f.as_str()).map(short).collect())
            .unwrap_or_default();
        let per_service = stats["apiCalls"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        LiveRun {
            wall,
            code: out.status.code().unwrap_or(-1),
            rounds: stats["criticalPath"]["rounds"].as_u64().unwrap_or(0) as u32,
            calls: stats["apiCalls"]
                .as_object()
                .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
                .unwrap_or(0),
            per_service,
            path,
        }
    }

    /// Runs [`MANUAL`] one command after another; returns the time and how many failed.
    fn manual_triage(&self) -> (Duration, usize) {
        let env = self.env();
        let started = Instant::now();
        let mut failed = 0;
        for command in MANUAL {
            let mut words = command.split_whitespace();
            let program = words.next().unwrap();
            let mut cmd = Command::new(program);
            cmd.args(words);
            if program == "aws" {
                // AWS CLI v1 ignores AWS_ENDPOINT_URL for some services (SQS); the flag is
                // what people pointing it at an emulator pass anyway.
                cmd.args(["--endpoint-url", &self.aws_url]);
            }
            let status = cmd
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", std::env::var_os("HOME").unwrap_or_default())
                .env("AWS_CONFIG_FILE", "/dev/null")
                .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                .env("AWS_PAGER", "")
                // AWS CLI v1 reads the region from here only.
                .env("AWS_DEFAULT_REGION", "us-west-2")
                .envs(env.iter().copied())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            if !status.is_ok_and(|s| s.success()) {
                failed += 1;
                if std::env::var_os("KARPDOCTOR_BENCH_VERBOSE").is_some() {
                    eprintln!("failed: {command}");
                }
            }
        }
        (started.elapsed(), failed)
    }
}

/// 5. A fleet: [`FLEET`] clusters of [`SCENARIO`], each its own test API server behind its own
///    +50 ms proxy and kube context, and one emulator behind a +50 ms proxy (reusing repeated
///    reads, as in the latency part). The fleet in one run against the slowest cluster alone.
///    The emulator is one Python process on the same cores, standing in for every cluster's
///    AWS endpoints: its CPU time is printed, with karpdoctor's, to show what the machine
///    allows.
async fn fleet() {
    let fleet = FleetSetup::start(FLEET, LATENCY).await;
    // Warm-up: the servers, the emulator's static answers.
    fleet.karpdoctor(&["--all-contexts", "--parallel", "20"]);
    let singles: Vec<Duration> = fleet
        .contexts
        .iter()
        .map(|c| {
            let runs: Vec<FleetRun> = (0..3)
                .map(|_| fleet.karpdoctor(&["--context", c]))
                .collect();
            assert!(runs.iter().all(|r| r.code == fleet.expected_code), "{c}");
            median(runs.iter().map(|r| r.wall).collect())
        })
        .collect();
    let slowest = singles.iter().max().copied().unwrap_or_default();
    let together = |parallel: &str| {
        let runs: Vec<FleetRun> = (0..5)
            .map(|_| fleet.karpdoctor(&["--all-contexts", "--parallel", parallel]))
            .collect();
        assert!(runs.iter().all(|r| r.code == fleet.expected_code));
        let m = |f: fn(&FleetRun) -> Duration| median(runs.iter().map(f).collect());
        (m(|r| r.wall), m(|r| r.cpu), m(|r| r.emulator_cpu))
    };
    let (all, cpu, emulator_cpu) = together("20");
    let (default, _, _) = together("8");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    println!("\n### Fleet: {FLEET} clusters of `{SCENARIO}` in one run, +50 ms per request\n");
    println!("| | wall |\n|---|---|");
    println!(
        "| each cluster alone: fastest / median / slowest (median of 3 each) | {} / {} / {} |",
        ms(singles.iter().min().copied().unwrap_or_default()),
        ms(median(singles.clone())),
        ms(slowest)
    );
    println!(
        "| {FLEET} clusters, `--all-contexts --parallel 20` (median of 5) | {} |",
        ms(all)
    );
    println!(
        "| ratio to the slowest alone (target ≤ 1.5×) | {:.2}× |",
        all.as_secs_f64() / slowest.as_secs_f64().max(1e-9)
    );
    println!(
        "| {FLEET} clusters, default `--parallel 8` (median of 5) | {} |",
        ms(default)
    );
    println!(
        "| CPU of the `--parallel 20` run: karpdoctor / the emulator | {} / {} |",
        ms(cpu),
        ms(emulator_cpu)
    );
    println!(
        "| their sum over {cores} cores: no run on this machine is faster | {} |",
        ms((cpu + emulator_cpu) / cores)
    );
}

struct FleetRun {
    wall: Duration,
    /// karpdoctor's user + system time.
    cpu: Duration,
    /// The emulator's user + system time during the run.
    emulator_cpu: Duration,
    code: i32,
}

/// [`SCENARIO`] served by `size` test API servers, each behind its own latency proxy and its
/// own context of one kubeconfig, with one emulator behind a proxy for the AWS side.
struct FleetSetup {
    emulator: Emulator,
    _servers: Vec<TestServer>,
    _proxies: Vec<LatencyProxy>,
    kubeconfig: String,
    aws_url: String,
    caller: Vec<(&'static str, String)>,
    contexts: Vec<String>,
    expected_code: i32,
    dir: Scratch,
}

impl FleetSetup {
    async fn start(size: usize, delay: Duration) -> FleetSetup {
        let emulator = Emulator::start_with(&[("KARPMOTO_REUSE_READS", "1")]);
        let bundle = read_json(&fixture_bundle(SCENARIO));
        seed_aws(&emulator.url, &bundle).await;
        let caller = caller_env(&emulator.url, &bundle).await;
        let aws_addr: SocketAddr = emulator.url.trim_start_matches("http://").parse().unwrap();
        let mut proxies = vec![LatencyProxy::start(aws_addr, delay).await.unwrap()];
        let (mut servers, mut contexts) = (Vec::new(), Vec::new());
        let (mut clusters, mut named) = (String::new(), String::new());
        for i in 1..=size {
            let server = TestServer::start(Cluster::from_bundle(&bundle), 0, Duration::ZERO)
                .await
                .unwrap();
            let proxy = LatencyProxy::start(server.addr, delay).await.unwrap();
            let name = format!("cluster-{i:02}");
            clusters.push_str(&format!(
                "- name: {name}\n  cluster:\n    server: {}\n",
                proxy.url()
            ));
            named.push_str(&format!(
                "- name: {name}\n  context:\n    cluster: {name}\n    user: test\n"
            ));
            servers.push(server);
            proxies.push(proxy);
            contexts.push(name);
        }
        let dir = scratch("bench-fleet");
        let path = dir.join(format!("kubeconfig-{size}"));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n{clusters}contexts:\n{named}\
                 current-context: cluster-01\nusers:\n- name: test\n  user:\n    token: test-token\n"
            ),
        )
        .unwrap();
        let expected = read_json(
            &fixture_bundle(SCENARIO)
                .parent()
                .unwrap()
                .join("expect.json"),
        );
        FleetSetup {
            aws_url: proxies[0].url(),
            emulator,
            _servers: servers,
            _proxies: proxies,
            kubeconfig: path.display().to_string(),
            caller,
            contexts,
            expected_code: expected["exitCode"].as_i64().unwrap_or(0) as i32,
            dir,
        }
    }

    /// One run of the binary under GNU time (JSON output, discarded), with the environment
    /// `support::karpdoctor` gives it.
    fn karpdoctor(&self, args: &[&str]) -> FleetRun {
        let times = self.dir.join(format!("time-{}.txt", self.contexts.len()));
        let mut cmd = Command::new("/usr/bin/time");
        cmd.args(["-f", "%U %S", "-o"])
            .arg(&times)
            .arg(karpdoctor_exe())
            .args(args)
            .args(["-o", "json"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::temp_dir())
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("NO_COLOR", "1")
            .envs(live_env(&self.kubeconfig, &self.aws_url))
            .envs(self.caller.iter().map(|(k, v)| (*k, v.as_str())));
        let emulator_before = process_cpu(self.emulator.pid());
        let started = Instant::now();
        let out = tokio::task::block_in_place(|| cmd.output())
            .expect("/usr/bin/time (GNU time) runs the binary");
        let wall = started.elapsed();
        let emulator_cpu = process_cpu(self.emulator.pid()).saturating_sub(emulator_before);
        if !out.stderr.is_empty() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        }
        let text = std::fs::read_to_string(&times).unwrap_or_default();
        let cpu: f64 = text
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|f| f.parse::<f64>().ok())
            .sum();
        FleetRun {
            wall,
            cpu: Duration::from_secs_f64(cpu),
            emulator_cpu,
            code: out.status.code().unwrap_or(-1),
        }
    }
}

/// User + system time of a running process so far (`/proc/PID/stat`, in clock ticks of
/// 1/100 s, the Linux default).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// What a person runs today for this scenario, from Karpenter's troubleshooting guide and the
/// install guides: the controller and its logs, the Karpenter objects and their events, the
/// identity chain, the node role's mapping, and the EC2 resources the NodeClass selects.
const MANUAL: &[&str] = &[
    "kubectl get pods -n karpenter -o wide",
    "kubectl get deployment -n karpenter karpenter -o yaml",
    "kubectl logs -n karpenter karpenter-6d9f7c8b5d-7xk2p -c controller --tail 500",
    "kubectl logs -n karpenter karpenter-6d9f7c8b5d-q9w4n -c controller --tail 500",
    "kubectl get nodepools -o yaml",
    "kubectl get ec2nodeclasses -o yaml",
    "kubectl get nodeclaims -o yaml",
    "kubectl get events -A --field-selector involvedObject.kind=NodeClaim",
    // The full name: the test API server's discovery has no short names (`crd`).
    "kubectl get customresourcedefinitions nodepools.karpenter.sh nodeclaims.karpenter.sh ec2nodeclasses.karpenter.k8s.aws -o yaml",
    "kubectl get serviceaccount -n karpenter karpenter -o yaml",
    "kubectl get configmap -n kube-system aws-auth -o yaml",
    "kubectl get validatingwebhookconfigurations",
    "kubectl get mutatingwebhookconfigurations",
    "aws sts get-caller-identity",
    "aws eks describe-cluster --name demo",
    "aws eks list-access-entries --cluster-name demo",
    "aws eks list-pod-identity-associations --cluster-name demo",
    "aws iam list-open-id-connect-providers",
    "aws iam get-role --role-name KarpenterController-demo",
    "aws iam list-attached-role-policies --role-name KarpenterController-demo",
    "aws iam list-role-policies --role-name KarpenterController-demo",
    "aws iam simulate-principal-policy --policy-source-arn arn:aws:iam::111122223333:role/KarpenterController-demo --action-names ec2:CreateFleet ec2:RunInstances ec2:CreateLaunchTemplate ec2:CreateTags ec2:TerminateInstances ec2:DescribeInstances iam:PassRole iam:CreateInstanceProfile ssm:GetParameter eks:DescribeCluster pricing:GetProducts sqs:ReceiveMessage",
    "aws iam get-role --role-name KarpenterNodeRole-demo",
    "aws iam list-attached-role-policies --role-name KarpenterNodeRole-demo",
    "aws iam list-instance-profiles-for-role --role-name KarpenterNodeRole-demo",
    "aws ec2 describe-subnets --filters Name=tag:karpenter.sh/discovery,Values=demo",
    "aws ec2 describe-security-groups --filters Name=tag:karpenter.sh/discovery,Values=demo",
    "aws ssm get-parameter --name /aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
    "aws ec2 describe-images --owners amazon --filters Name=name,Values=amazon-eks-node-al2023-x86_64-standard-1.33-*",
    "aws sqs get-queue-url --queue-name demo",
    "aws events list-rule-names-by-target --target-arn arn:aws:sqs:us-west-2:111122223333:demo",
];

fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let started = Instant::now();
    let _ = f();
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    if d >= Duration::from_secs(10) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A fact key, without its longest parameters (principal and action lists).
fn short(fact: &str) -> String {
    match fact.split_once('{') {
        Some((kind, _)) if fact.len() > 60 => format!("{kind}{{…}}"),
        _ => fact.to_string(),
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}")
}
