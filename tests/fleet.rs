//! Fleet runs, as users run them: the karpdoctor binary over several kube contexts at once,
//! each a test API server serving a different fixture, with the AWS emulator behind AWS
//! profiles (one profile per emulator, so a target that used another target's profile would
//! reach the wrong AWS state and conclude differently). Also the options' validation: one
//! line on stderr and exit 2.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use karpdoctor_testkit::{Cluster, TestServer};
use support::*;

/// Three fixtures whose AWS side is the healthy one (so one emulator serves them all), with
/// three different outcomes: pass, a warning (KD1009), an error (KD1001, with the warning KD1009).
const HEALTHY: &str = "healthy";
const WARNING: &str = "controller-log-errors";
const BROKEN: &str = "controller-crashloop";
/// The healthy cluster's objects with an AWS side that differs: the controller's policy is
/// an older release's (KD2102). Only the AWS profile tells it from `healthy`.
const OUTDATED: &str = "controller-policy-outdated";

fn parse(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn expected(name: &str) -> (BTreeSet<String>, i32) {
    let e = read_json(&fixture_bundle(name).parent().unwrap().join("expect.json"));
    let failing = e["failing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    (failing, e["exitCode"].as_i64().unwrap() as i32)
}

fn failing(report: &serde_json::Value) -> BTreeSet<String> {
    report["checks"]
        .as_array()
        .expect("checks[]")
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

/// A kubeconfig with one context per `(name, server)`, each through its own cluster entry.
fn kubeconfig(contexts: &[(&str, &str)]) -> String {
    let mut clusters = String::new();
    let mut named = String::new();
    for (name, server) in contexts {
        clusters.push_str(&format!(
            "- name: {name}\n  cluster:\n    server: {server}\n"
        ));
        named.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {name}\n    user: test\n"
        ));
    }
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n{clusters}contexts:\n{named}current-context: {}\n\
         users:\n- name: test\n  user:\n    token: test-token\n",
        contexts[0].0
    )
}

/// An AWS config file: the default profile and `outdated`, each with its own emulator.
fn aws_config(default_url: &str, outdated_url: &str) -> String {
    let profile = |header: &str, url: &str| {
        format!(
            "[{header}]\nregion = us-west-2\nendpoint_url = {url}\n\
             aws_access_key_id = testing\naws_secret_access_key = testing\n\n"
        )
    };
    profile("default", default_url) + &profile("profile outdated", outdated_url)
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Fleet {
    _emulators: (Emulator, Emulator),
    servers: Vec<(&'static str, TestServer)>,
    dir: Scratch,
    aws_config: String,
    dead: String,
}

impl Fleet {
    async fn start() -> Fleet {
        let (shared, outdated) = (Emulator::start(), Emulator::start());
        seed_aws(&shared.url, &read_json(&fixture_bundle(HEALTHY))).await;
        seed_aws(&outdated.url, &read_json(&fixture_bundle(OUTDATED))).await;
        let history = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "karpdoctor-history", "namespace": "karpdoctor", "resourceVersion": "1"},
            "data": {}
        });
        let mut servers = Vec::new();
        for name in [HEALTHY, WARNING, BROKEN, OUTDATED] {
            let mut cluster = Cluster::from_bundle(&read_json(&fixture_bundle(name)));
            cluster.objects.push(history.clone());
            cluster
                .writable
                .insert((String::new(), "v1".into(), "configmaps".into()));
            let server = TestServer::start(cluster, 0, Duration::ZERO).await.unwrap();
            servers.push((name, server));
        }
        let dir = scratch("fleet");
        let aws_config = dir.join("aws-config");
        std::fs::write(&aws_config, self::aws_config(&shared.url, &outdated.url)).unwrap();
        Fleet {
            _emulators: (shared, outdated),
            servers,
            dir,
            aws_config: aws_config.display().to_string(),
            dead: format!("http://127.0.0.1:{}", closed_port()),
        }
    }

    fn server(&self, name: &str) -> &TestServer {
        &self.servers.iter().find(|(n, _)| *n == name).unwrap().1
    }

    /// Writes a kubeconfig of these contexts (`dead` is the closed port) and returns its path.
    fn kubeconfig(&self, file: &str, names: &[&str]) -> String {
        let urls: Vec<(&str, String)> = names
            .iter()
            .map(|n| {
                let url = match *n {
                    "dead" => self.dead.clone(),
                    n => self.server(n).url(),
                };
                (*n, url)
            })
            .collect();
        let contexts: Vec<(&str, &str)> = urls.iter().map(|(n, u)| (*n, u.as_str())).collect();
        let path = self.dir.join(file);
        std::fs::write(&path, kubeconfig(&contexts)).unwrap();
        path.display().to_string()
    }

    /// Runs the binary with this kubeconfig and the AWS profiles (no AWS settings in the
    /// environment: each target's profile decides its endpoint, region and credentials).
    fn run(&self, kubeconfig: &str, args: &[&str]) -> Output {
        let env = [
            ("KUBECONFIG", kubeconfig),
            ("KARPDOCTOR_NOW", FIXTURE_TIME),
            ("KARPDOCTOR_NAMESPACE", "karpdoctor"),
            ("AWS_CONFIG_FILE", self.aws_config.as_str()),
        ];
        tokio::task::block_in_place(|| karpdoctor(args, &env))
    }
}

fn validate_fleet_schema(doc: &serde_json::Value) {
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root().join("schema").join(name)).unwrap())
            .unwrap()
    };
    let report = read("report.v1.json");
    let registry = jsonschema::Registry::new()
        .add(report["$id"].as_str().unwrap(), report.clone())
        .unwrap()
        .prepare()
        .unwrap();
    let validator = jsonschema::options()
        .with_registry(&registry)
        .build(&read("fleet.v1.json"))
        .expect("the fleet schema compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_runs_check_every_target_with_its_own_context_and_profile() {
    let fleet = Fleet::start().await;

    // 1. `--context a,b,c` (JSON, with --history): one FleetReport. The closed port is a row
    //    with its error, the other clusters still report, and the exit code is 2.
    let kc = fleet.kubeconfig("three.kubeconfig", &[HEALTHY, BROKEN, "dead"]);
    let contexts = format!("{HEALTHY},{BROKEN}");
    let out = fleet.run(
        &kc,
        &[
            "--context",
            &contexts,
            "--context",
            "dead",
            "-o",
            "json",
            "--history",
            "configmap/karpdoctor-history",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = parse(&out);
    validate_fleet_schema(&doc);
    assert_eq!(doc["kind"], "FleetReport");
    assert_eq!(doc["summary"]["targets"], 3);
    assert_eq!(doc["summary"]["unreachable"], 1);
    assert_eq!(doc["summary"]["exitCode"], 2);
    let rows = doc["targets"].as_array().unwrap();
    let contexts: Vec<&str> = rows
        .iter()
        .map(|r| r["context"].as_str().unwrap())
        .collect();
    assert_eq!(
        contexts,
        [HEALTHY, BROKEN, "dead"],
        "rows keep the target order"
    );
    for (row, name) in rows.iter().zip([HEALTHY, BROKEN]) {
        let report = &doc["reports"][row["report"].as_u64().unwrap() as usize];
        let (failing_codes, code) = expected(name);
        assert_eq!(failing(report), failing_codes, "{name}");
        assert_eq!(row["exitCode"], code, "{name}");
        assert_eq!(report["target"]["kubeContext"], name);
        assert_eq!(report["mode"], "live");
        // Each cluster keeps its own history: its own findings, in its own ConfigMap.
        let stored = fleet
            .server(name)
            .object("ConfigMap", "karpdoctor", "karpdoctor-history")
            .unwrap();
        let stored = stored["data"]["last-run.json"].as_str().unwrap_or_default();
        assert_eq!(
            stored.contains("KD1001"),
            name == BROKEN,
            "{name}: {stored}"
        );
    }
    assert_eq!(rows[1]["verdict"], "error");
    // KD1009 (errors in the controller's log) is a warning here: not a root cause.
    assert_eq!(rows[1]["rootCauses"], serde_json::json!(["KD1001"]));
    assert_eq!(rows[2]["verdict"], "unreachable");
    assert!(rows[2].get("report").is_none());
    let port = fleet.dead.rsplit(':').next().unwrap();
    assert!(
        rows[2]["error"].as_str().unwrap().contains(port),
        "the row names what could not be reached: {}",
        rows[2]["error"]
    );

    // 2. `--all-contexts` (text): a section per cluster in kubeconfig order, then the table
    //    worst first; the exit code is the worst (1).
    let kc = fleet.kubeconfig("all.kubeconfig", &[HEALTHY, WARNING, BROKEN]);
    let out = fleet.run(&kc, &["--all-contexts", "--color", "never"]);
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sections: Vec<usize> = [HEALTHY, WARNING, BROKEN]
        .iter()
        .map(|n| text.find(&format!("· context {n} ━━")).expect(n))
        .collect();
    assert!(sections.is_sorted(), "sections in target order: {text}");
    let table = &text[text.find("━━ fleet · 3 clusters ━━").expect("fleet table")..];
    let row_of = |name: &str| {
        table
            .lines()
            .position(|l| l.contains(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {table}"))
    };
    assert!(
        row_of(BROKEN) < row_of(WARNING) && row_of(WARNING) < row_of(HEALTHY),
        "worst first: {table}"
    );
    let broken_row = table.lines().nth(row_of(BROKEN)).unwrap();
    assert!(broken_row.contains("✖ error") && broken_row.contains("KD1001 "));
    assert!(
        table
            .lines()
            .nth(row_of(WARNING))
            .unwrap()
            .contains("‼ warning")
    );
    assert!(
        table
            .lines()
            .nth(row_of(HEALTHY))
            .unwrap()
            .contains("✔ pass")
    );

    // 3. `--targets` with a profile per target: the same cluster objects behind two AWS
    //    states; each target concludes from its own profile's.
    let kc = fleet.kubeconfig("targets.kubeconfig", &[HEALTHY, OUTDATED]);
    let targets = fleet.dir.join("targets.yaml");
    std::fs::write(
        &targets,
        format!(
            "targets:\n  - context: {HEALTHY}\n  - context: {OUTDATED}\n    profile: outdated\n    cluster: demo\n"
        ),
    )
    .unwrap();
    let out = fleet.run(
        &kc,
        &[
            "--targets",
            &targets.display().to_string(),
            "-o",
            "json",
            "--parallel",
            "2",
        ],
    );
    // The worst of the two targets' exit codes.
    assert_eq!(
        out.status.code(),
        Some(expected(HEALTHY).1.max(expected(OUTDATED).1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = parse(&out);
    validate_fleet_schema(&doc);
    for (i, name) in [HEALTHY, OUTDATED].iter().enumerate() {
        assert_eq!(failing(&doc["reports"][i]), expected(name).0, "{name}");
    }
    assert_eq!(doc["targets"][1]["profile"], "outdated");
    assert_eq!(doc["targets"][0]["profile"], serde_json::Value::Null);

    // 4. Exactly one target: today's single-cluster report, unchanged in form.
    let one = fleet.dir.join("one.yaml");
    std::fs::write(
        &one,
        format!("targets:\n  - context: {OUTDATED}\n    profile: outdated\n"),
    )
    .unwrap();
    let out = fleet.run(
        &kc,
        &["--targets", &one.display().to_string(), "-o", "json"],
    );
    let report = parse(&out);
    assert!(report.get("kind").is_none(), "a single report has no kind");
    assert_eq!(failing(&report), expected(OUTDATED).0);
    assert_eq!(out.status.code(), Some(expected(OUTDATED).1));

    // 5. Clusters reached with the same credentials in the same region share their AWS
    //    answers (the same request at the same moment): two such clusters in one run make
    //    fewer AWS requests than the two alone, and judge exactly as they do alone.
    let aws_calls = |report: &serde_json::Value| -> u64 {
        report["stats"]["apiCalls"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(service, _)| *service != "kubernetes")
            .map(|(_, n)| n.as_u64().unwrap())
            .sum()
    };
    let kc = fleet.kubeconfig("pair.kubeconfig", &[HEALTHY, BROKEN]);
    let alone: Vec<serde_json::Value> = [HEALTHY, BROKEN]
        .iter()
        .map(|c| parse(&fleet.run(&kc, &["--context", c, "-o", "json", "-v"])))
        .collect();
    let pair = parse(&fleet.run(&kc, &["--all-contexts", "-o", "json", "-v"]));
    let together: u64 = pair["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(aws_calls)
        .sum();
    let separately: u64 = alone.iter().map(aws_calls).sum();
    assert!(
        together < separately,
        "shared AWS answers: {together} requests together, {separately} separately"
    );
    for (i, report) in alone.iter().enumerate() {
        assert_eq!(failing(&pair["reports"][i]), failing(report));
    }

    // 6. `-o prometheus --pushgateway`: one exposition for the fleet that promtool accepts,
    //    and one Pushgateway group per cluster holding exactly that cluster's series. Both
    //    fixtures are named `demo` and the dead one has no name: each is labelled with its
    //    context instead, so no two clusters share a series or a group.
    let Some(pushgateway) = prometheus::tool("prometheus-pushgateway", "prometheus-pushgateway")
    else {
        return;
    };
    let promtool = prometheus::tool("promtool", "prometheus").unwrap();
    let gateway = prometheus::Pushgateway::start(&pushgateway);
    let kc = fleet.kubeconfig("three.kubeconfig", &[HEALTHY, BROKEN, "dead"]);
    let contexts = format!("{HEALTHY},{BROKEN},dead");
    let out = fleet.run(
        &kc,
        &[
            "--context",
            &contexts,
            "-o",
            "prometheus",
            "--pushgateway",
            &gateway.url,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "the exit code is the fleet's");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    prometheus::promtool_accepts(&promtool, &printed, "fleet exposition");
    let helps = printed
        .lines()
        .filter(|l| l.starts_with("# HELP karpdoctor_up "))
        .count();
    assert_eq!(helps, 1, "each family once: {printed}");
    let series = prometheus::samples(&printed);
    let up: Vec<(String, f64)> = series
        .iter()
        .filter(|s| s.name == "karpdoctor_up")
        .map(|s| (s.labels["cluster"].clone(), s.value))
        .collect();
    let want = [(HEALTHY, 1.0), (BROKEN, 1.0), ("dead", 0.0)].map(|(c, v)| (c.to_string(), v));
    assert_eq!(up, want);
    let broken_error = series.iter().find(|s| {
        s.name == "karpdoctor_findings"
            && s.labels["cluster"] == BROKEN
            && s.labels["code"] == "KD1001"
            && s.labels["severity"] == "error"
    });
    assert!(broken_error.is_some_and(|s| s.value >= 1.0), "{printed}");
    assert!(
        series
            .iter()
            .all(|s| s.labels["cluster"] != "dead" || s.name == "karpdoctor_up"),
        "an unreachable cluster is down and nothing else: {printed}"
    );
    let exposed = gateway.karpdoctor_samples();
    for cluster in [HEALTHY, BROKEN, "dead"] {
        let mine: String = printed
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(&format!("cluster=\"{cluster}\"")))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            prometheus::group(&exposed, cluster),
            prometheus::as_pushed(&mine),
            "{cluster}: its group holds its series, and only those"
        );
    }
}

/// A failure is one line on stderr, prefixed, with nothing on stdout, and exit 2.
fn assert_usage_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("karpdoctor: ") && err.contains(needle),
        "{err} lacks {needle}"
    );
    assert!(out.stdout.is_empty());
}

fn targets_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_bad_targets_file_is_one_line_and_exit_2() {
    let dir = scratch("fleet-targets");
    for (text, needle) in [
        ("", "the file is empty"),
        ("targets: []\n", "lists no cluster"),
        (
            "targets:\n  - context: a\n    profil: x\n",
            "unknown field `profil`",
        ),
        ("targets:\n  - profile: x\n", "missing field `context`"),
        ("clusters:\n  - context: a\n", "unknown field `clusters`"),
        (
            "targets:\n  - context: a\n  - context: b\n  - context: a\n",
            "context a is listed twice (targets 1 and 3)",
        ),
        (
            "targets:\n  - context: \"\"\n",
            "target 1 has an empty context",
        ),
        (
            "targets:\n  - context: a\n    region: \"\"\n",
            "target 1 (a) has an empty region",
        ),
        ("targets: [", "--targets"),
    ] {
        let file = targets_file(&dir, "targets.yaml", text);
        assert_usage_error(&karpdoctor(&["--targets", &file], &[]), needle);
    }
    assert_usage_error(
        &karpdoctor(&["--targets", "/nonexistent/targets.yaml"], &[]),
        "/nonexistent/targets.yaml: cannot read",
    );
}

#[test]
fn options_that_work_on_one_cluster_are_refused_with_several() {
    let dir = scratch("fleet-options");
    let record = dir.join("bundle.json").display().to_string();
    assert_usage_error(
        &karpdoctor(&["--context", "a,b", "--record", &record], &[]),
        "--record works on one cluster",
    );
    assert!(!Path::new(&record).exists());
    assert_usage_error(
        &karpdoctor(
            &[
                "--context",
                "a",
                "--context",
                "b",
                "--replay",
                &fixture_bundle(HEALTHY).display().to_string(),
            ],
            &[],
        ),
        "--replay works on one cluster",
    );
    assert_usage_error(
        &karpdoctor(&["--context", "a,b,a"], &[]),
        "--context a is given twice",
    );
    assert_usage_error(
        &karpdoctor(&["pre-install", "--cluster", "x", "--context", "a,b"], &[]),
        "pre-install checks one cluster",
    );
    // Contradicting selections are clap's usage errors (exit 2).
    let both = karpdoctor(&["--all-contexts", "--context", "a"], &[]);
    assert_eq!(both.status.code(), Some(2));
    let zero = karpdoctor(&["--context", "a,b", "--parallel", "0"], &[]);
    assert_eq!(zero.status.code(), Some(2));
    // --all-contexts with no kubeconfig: one line naming it.
    assert_usage_error(&karpdoctor(&["--all-contexts"], &[]), "kubeconfig");
}

#[test]
fn an_unreadable_context_is_a_row_not_the_end_of_the_run() {
    // Two contexts, neither in the kubeconfig: both rows say so; no server is needed.
    let dir = scratch("fleet-missing-context");
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, kubeconfig(&[("only", "http://127.0.0.1:9")])).unwrap();
    let out = karpdoctor(
        &["--context", "nope,gone", "-o", "short"],
        &[("KUBECONFIG", &kc.display().to_string())],
    );
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[nope] unreachable: kubeconfig: context \"nope\" is not in the kubeconfig (known: only)"), "{text}");
    assert!(text.contains("[gone] unreachable:"), "{text}");
    assert!(
        text.ends_with("fleet targets=2 pass=0 warning=0 error=0 unknown=0 unreachable=2\n"),
        "{text}"
    );
}

#[test]
fn help_documents_the_fleet_options() {
    let out = karpdoctor(&["--help"], &[]);
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--all-contexts",
        "--targets",
        "--parallel",
        "worst of theirs",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}
