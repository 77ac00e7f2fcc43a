//! The built binary, end to end: options, exit codes, clean stdout, one-line errors.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn karpdoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_karpdoctor"))
        .args(args)
        .env_remove("NO_COLOR")
        .env("KUBECONFIG", "/nonexistent-kubeconfig-for-tests")
        .output()
        .expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fixture(name: &str) -> String {
    support::fixture_bundle(name).display().to_string()
}

/// A failure is exactly one line on stderr, prefixed, with nothing on stdout.
fn assert_one_line_failure(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "expected one line, got: {err}");
    assert!(err.starts_with("karpdoctor: "), "{err}");
    assert!(err.contains(needle), "{err} lacks {needle}");
    assert!(o.stdout.is_empty(), "stdout must stay empty: {}", stdout(o));
}

#[test]
fn help_documents_exit_codes_and_options() {
    let o = karpdoctor(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = stdout(&o);
    for needle in [
        "Exit codes",
        "--kubeconfig",
        "--replay",
        "--record",
        "--fail-on",
        "--check-timeout",
        "NO_COLOR",
        "explain",
        "demo",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn list_json_lists_every_check() {
    let o = karpdoctor(&["list", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).expect("JSON array");
    let codes: Vec<&str> = items.iter().filter_map(|i| i["code"].as_str()).collect();
    let expected: Vec<&str> = karpdoctor::registry::CHECKS
        .iter()
        .map(|c| c.code)
        .collect();
    assert_eq!(codes, expected);
    for i in &items {
        for field in ["slug", "category", "severity", "title"] {
            assert!(i[field].is_string(), "{field} missing in {i}");
        }
    }
}

#[test]
fn explain_prints_the_doc_by_code_or_slug() {
    let by_code = karpdoctor(&["explain", "KD1001"]);
    assert_eq!(by_code.status.code(), Some(0));
    assert!(stdout(&by_code).starts_with("# KD1001 · controller-not-running"));
    let by_slug = karpdoctor(&["explain", "controller-not-running"]);
    assert_eq!(stdout(&by_code), stdout(&by_slug));
    let json = karpdoctor(&["explain", "kd4001", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("JSON");
    assert_eq!(v["code"], "KD4001");
    assert!(
        v["sections"]["How to fix"]
            .as_str()
            .is_some_and(|s| s.contains("kubectl patch nodepool"))
    );
}

#[test]
fn explain_unknown_code_suggests_the_closest() {
    assert_one_line_failure(&karpdoctor(&["explain", "KD1010"]), "did you mean KD1001?");
}

#[test]
fn demo_reports_failures_and_exits_1() {
    let o = karpdoctor(&["demo", "--color", "never"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("✖ KD1001"), "{text}");
    assert!(text.contains("→ karpdoctor explain KD4001"), "{text}");
    assert!(text.contains("? KD1002"), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour when asked for none");
}

#[test]
fn demo_json_is_only_json_and_matches_the_schema() {
    let o = karpdoctor(&["demo", "-o", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stderr.is_empty(), "stderr: {}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("stdout is one JSON document");
    assert_matches_the_schema(&report);
    assert_eq!(report["mode"], "demo");
}

/// A fixture replayed with `-o json`, its exit code checked.
fn replayed_json(name: &str, exit: i32) -> serde_json::Value {
    let o = karpdoctor(&["--replay", &fixture(name), "-o", "json"]);
    assert_eq!(o.status.code(), Some(exit), "stderr: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("stdout is one JSON document")
}

/// The codes of the checks a report ran, in report order.
fn codes_of(report: &serde_json::Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

fn assert_matches_the_schema(report: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.v1.json"),
        )
        .expect("schema"),
    )
    .expect("schema JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let always = karpdoctor(&["demo", "--color", "always"]);
    assert!(stdout(&always).contains('\u{1b}'), "--color always colours");
    let piped = karpdoctor(&["demo"]);
    assert!(
        !stdout(&piped).contains('\u{1b}'),
        "auto does not colour a pipe"
    );
    let no_color = Command::new(env!("CARGO_BIN_EXE_karpdoctor"))
        .args(["demo", "--color", "auto"])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert!(!stdout(&no_color).contains('\u{1b}'));
}

#[test]
fn fail_on_moves_the_exit_code() {
    let never = karpdoctor(&["demo", "--fail-on", "never", "-q"]);
    assert_eq!(never.status.code(), Some(0));
    let healthy = karpdoctor(&["--replay", &fixture("healthy"), "-q"]);
    assert_eq!(healthy.status.code(), Some(0), "{}", stderr(&healthy));
}

#[test]
fn nothing_conclusive_exits_2() {
    // The forbidden-crds scenario, restricted to the check that cannot read its facts.
    let o = karpdoctor(&[
        "--replay",
        &fixture("forbidden-crds"),
        "--only",
        "KD1002",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["checks"][0]["status"], "unknown");
    assert_eq!(
        v["checks"][0]["missingPermission"],
        "get customresourcedefinitions.apiextensions.k8s.io"
    );
}

#[test]
fn missing_kubeconfig_is_one_line_exit_2() {
    assert_one_line_failure(
        &karpdoctor(&["--kubeconfig", "/nonexistent"]),
        "/nonexistent",
    );
}

#[test]
fn closed_port_is_one_line_exit_2_within_the_timeout() {
    // Bind then drop a listener: the port is (almost certainly) closed afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let dir = support::scratch("cli");
    let path = dir.join("closed.kubeconfig");
    let mut f = std::fs::File::create(&path).expect("kubeconfig");
    write!(
        f,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\nusers:\n- name: u\n  user: {{token: t}}\n"
    )
    .expect("write");
    let started = Instant::now();
    let o = karpdoctor(&[
        "--kubeconfig",
        &path.display().to_string(),
        "--timeout",
        "10s",
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(11),
        "took {:?}",
        started.elapsed()
    );
    assert_one_line_failure(&o, "cannot reach the Kubernetes API server");
    let unknown_context = karpdoctor(&[
        "--kubeconfig",
        &path.display().to_string(),
        "--context",
        "nope",
    ]);
    assert_one_line_failure(
        &unknown_context,
        "context \"nope\" is not in the kubeconfig",
    );
}

#[test]
fn bad_replay_files_are_one_line_exit_2() {
    assert_one_line_failure(
        &karpdoctor(&["--replay", "/nonexistent/bundle.json"]),
        "not a usable karpdoctor bundle",
    );
    let dir = support::scratch("cli-bad");
    let path = dir.join("broken.json");
    std::fs::write(&path, "{\"bundleVersion\": 1, \"facts\": [ {\"fact\": ").expect("write");
    assert_one_line_failure(
        &karpdoctor(&["--replay", &path.display().to_string()]),
        "broken.json",
    );
    std::fs::write(&path, "{\"bundleVersion\": 99}").expect("write");
    assert_one_line_failure(
        &karpdoctor(&["--replay", &path.display().to_string()]),
        "bundle version 99",
    );
}

#[test]
fn unknown_selection_is_exit_2_with_a_suggestion() {
    assert_one_line_failure(
        &karpdoctor(&["demo", "--only", "controler-not-running"]),
        "did you mean controller-not-running?",
    );
    assert_one_line_failure(
        &karpdoctor(&["demo", "--only", "KD1001", "--skip", "install"]),
        "leave no check to run",
    );
}

#[test]
fn record_of_a_replay_replays_to_the_same_json() {
    let dir = support::scratch("cli-rec");
    let bundle = dir.join("rerecorded.json");
    let first = karpdoctor(&[
        "--replay",
        &fixture("demo"),
        "--record",
        &bundle.display().to_string(),
        "-o",
        "json",
    ]);
    let second = karpdoctor(&["--replay", &bundle.display().to_string(), "-o", "json"]);
    assert_eq!(first.status.code(), second.status.code());
    let strip = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("JSON");
        for k in ["runId", "startedAt", "finishedAt"] {
            v[k] = serde_json::Value::Null;
        }
        for c in v["checks"].as_array_mut().expect("checks") {
            c["durationMs"] = 0.into();
        }
        v
    };
    assert_eq!(strip(&first), strip(&second));
}

#[test]
fn redact_leaves_no_account_ip_or_hostname_in_any_output() {
    let dir = support::scratch("cli-redact");
    let account = regex::Regex::new(r"\b\d{12}\b").unwrap();
    let ipv4 = regex::Regex::new(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b").unwrap();
    let host = regex::Regex::new(r"ip-\d+-\d+-\d+-\d+").unwrap();
    // The corpus in two halves side by side: each run is a process of its own, and the test
    // would otherwise spawn them one at a time on one core.
    let names = support::fixture_names();
    let half = names.len().div_ceil(2);
    let checked: usize = std::thread::scope(|scope| {
        let runs: Vec<_> = names
            .chunks(half)
            .map(|chunk| {
                let (dir, account, ipv4, host) = (&dir, &account, &ipv4, &host);
                scope.spawn(move || {
                    let mut checked = 0;
                    for name in chunk {
                        checked += redacted_everywhere(name, dir, account, ipv4, host);
                    }
                    checked
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).sum()
    });
    assert!(checked >= 8);
}

/// Replays one fixture redacted in every format (recording the bundle once: redaction does not
/// depend on the format) and finds no account id, IPv4 address or EC2 hostname in the outputs or
/// the bundle. Returns the number of outputs checked.
fn redacted_everywhere(
    name: &str,
    dir: &std::path::Path,
    account: &regex::Regex,
    ipv4: &regex::Regex,
    host: &regex::Regex,
) -> usize {
    // The unredacted fixtures do carry these identifiers: the test would prove nothing otherwise.
    let raw = std::fs::read_to_string(fixture(name)).unwrap();
    assert!(
        account.is_match(&raw),
        "{name}: fixture has no account id to redact"
    );
    let mut checked = 0;
    for format in ["json", "markdown", "text", "short"] {
        let bundle = dir.join(format!("{name}.json"));
        let mut args = vec![
            "--replay".to_string(),
            fixture(name),
            "--redact".into(),
            "-o".into(),
            format.into(),
            "--color".into(),
            "never".into(),
        ];
        if format == "json" {
            args.extend(["--record".to_string(), bundle.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = karpdoctor(&args);
        assert_ne!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let mut texts = vec![("output", stdout(&o))];
        if format == "json" {
            texts.push(("bundle", std::fs::read_to_string(&bundle).unwrap()));
        }
        for (what, text) in texts {
            for (kind, re) in [
                ("account id", account),
                ("IPv4 address", ipv4),
                ("EC2 hostname", host),
            ] {
                assert!(
                    !re.is_match(&text),
                    "{name} -o {format}: {what} still has an {kind}: {:?}",
                    re.find(&text)
                );
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn redaction_is_stable_within_a_run() {
    let o = karpdoctor(&["--replay", &fixture("healthy"), "--redact", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["target"]["account"], "ACCOUNT-1");
    assert_eq!(
        v["target"]["awsIdentity"],
        "arn:aws:sts::ACCOUNT-1:assumed-role/PlatformAdmin/alice"
    );
}

#[test]
fn permissions_prints_the_policy_and_the_cluster_role() {
    let json = karpdoctor(&["permissions", "-o", "json"]);
    assert_eq!(json.status.code(), Some(0));
    let policy: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("IAM policy JSON");
    let actions = policy["Statement"][0]["Action"]
        .as_array()
        .expect("actions");
    assert!(actions.iter().any(|a| a == "sts:GetCallerIdentity"));
    let yaml = karpdoctor(&["permissions", "-o", "yaml"]);
    assert!(stdout(&yaml).contains("kind: ClusterRole"));
    let text = karpdoctor(&["permissions", "--only", "KD4001"]);
    let t = stdout(&text);
    assert!(
        t.contains("list nodepools.karpenter.sh") && !t.contains("KD1001"),
        "{t}"
    );
}

#[test]
fn short_output_and_exit_zero() {
    let o = karpdoctor(&["demo", "-o", "short", "--exit-zero"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "--exit-zero turns findings into exit 0"
    );
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.starts_with("error KD1001 Pod/karpenter/")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("unknown KD1002: ")),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("summary ")),
        "{text}"
    );
}

#[test]
fn history_needs_a_live_run() {
    assert_one_line_failure(
        &karpdoctor(&["demo", "--history", "configmap/x"]),
        "--history needs a live run",
    );
    let bad = karpdoctor(&["--history", "secret/x"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn pre_install_needs_a_cluster_and_a_release_it_knows() {
    assert_one_line_failure(
        &karpdoctor(&["pre-install", "--region", "us-west-2"]),
        "--cluster",
    );
    assert_one_line_failure(
        &karpdoctor(&[
            "pre-install",
            "--cluster",
            "demo",
            "--karpenter-version",
            "latest",
        ]),
        "--karpenter-version",
    );
}

#[test]
fn upgrade_needs_a_target_and_refuses_a_release_it_does_not_know() {
    assert_one_line_failure(&karpdoctor(&["upgrade"]), "--to VERSION");
    let unknown = karpdoctor(&["upgrade", "--to", "9.9.9"]);
    assert_one_line_failure(&unknown, "1.14.1");
    assert_eq!(unknown.status.code(), Some(2));
    assert_one_line_failure(
        &karpdoctor(&["upgrade", "--kubernetes", "latest"]),
        "--kubernetes",
    );
    // A minor far past what any known release accepts is refused, not walked one by one.
    assert_one_line_failure(
        &karpdoctor(&["upgrade", "--kubernetes", "1.4000000000"]),
        "accepts Kubernetes up to",
    );
}

#[test]
fn a_replayed_upgrade_bundle_runs_only_the_upgrade_checks_with_its_targets() {
    let report = replayed_json("upgrade-kubernetes-beyond-the-release", 1);
    assert_eq!(codes_of(&report), ["KD1101", "KD1102", "KD1103", "KD1104"]);
    // `upgrade --replay` takes the targets the bundle recorded.
    let o = karpdoctor(&[
        "upgrade",
        "--replay",
        &fixture("upgrade-kubernetes-beyond-the-release"),
    ]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    assert!(stdout(&o).contains("1.6.6"), "{}", stdout(&o));
}

/// The plan of an upgrade that must stop at 1.0.14: the charts go there, and a run from there
/// plans the rest; the same plan in JSON (within the schema) and markdown.
#[test]
fn an_upgrade_prints_its_plan_in_order_in_every_format() {
    let bundle = fixture("upgrade-from-1-0-2-skips-migration");
    let report = replayed_json("upgrade-from-1-0-2-skips-migration", 1);
    assert_matches_the_schema(&report);
    let plan = &report["plan"];
    assert_eq!(plan["from"], "1.0.2");
    assert_eq!(plan["to"], "1.2.0");
    let steps: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["path", "crds", "controller", "next"]);
    assert_eq!(plan["steps"][0]["required"], true);
    assert!(
        plan["steps"][1]["commands"][0].as_str().unwrap().contains(
            "karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd --version 1.0.14"
        ),
        "{plan}"
    );
    let text = stdout(&karpdoctor(&["--replay", &bundle]));
    let at = text
        .find("Upgrade plan: Karpenter 1.0.2 → 1.2.0")
        .expect(&text);
    assert!(
        text[at..].contains("4. Then plan the rest of the way"),
        "{text}"
    );
    assert!(
        text[at..].contains("$ karpdoctor upgrade --to 1.2.0"),
        "{text}"
    );
    let md = stdout(&karpdoctor(&["--replay", &bundle, "-o", "markdown"]));
    assert!(
        md.contains("### Upgrade plan: Karpenter 1.0.2 → 1.2.0"),
        "{md}"
    );
    // A normal run has no plan.
    assert!(replayed_json("healthy", 0).get("plan").is_none());
}

#[test]
fn upgrade_refuses_a_target_older_than_the_installed_release() {
    let o = karpdoctor(&[
        "upgrade",
        "--replay",
        &fixture("upgrade-from-1-0-2-skips-migration"),
        "--to",
        "0.37.8",
    ]);
    assert_one_line_failure(&o, "older than the installed Karpenter 1.0.2");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_replayed_pre_install_bundle_runs_only_the_pre_install_checks() {
    let codes = codes_of(&replayed_json("scp-training-account-pre-install", 1));
    assert!(
        !codes.is_empty() && codes.iter().all(|c| c.starts_with("KD22")),
        "{codes:?}"
    );
    // And a normal replay never runs it.
    let o = karpdoctor(&["--replay", &fixture("healthy"), "-o", "json"]);
    assert!(!stdout(&o).contains("KD2201"));
}

#[test]
fn reference_policy_prints_a_filled_in_policy_and_rejects_bad_input() {
    let o = karpdoctor(&[
        "reference-policy",
        "--karpenter-version",
        "1.8.1",
        "--cluster",
        "prod",
        "--region",
        "eu-west-1",
        "--account",
        "111122223333",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let policy: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let text = policy.to_string();
    // No placeholder is left unfilled: no `{` opens a name.
    assert!(
        !text
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'{' && w[1].is_ascii_alphabetic()),
        "{text}"
    );
    assert!(text.contains("arn:aws:eks:eu-west-1:111122223333:cluster/prod"));
    assert!(text.contains("arn:aws:iam::111122223333:role/KarpenterNodeRole-prod"));
    assert!(
        text.contains("iam:ListInstanceProfiles"),
        "1.8.1 lists instance profiles"
    );
    let sids = policy["Statement"].as_array().unwrap().len();
    assert!(sids > 10, "{sids} statements");
    assert_one_line_failure(
        &karpdoctor(&[
            "reference-policy",
            "--cluster",
            "prod",
            "--region",
            "eu-west-1",
            "--account",
            "12",
        ]),
        "--account",
    );
    assert_one_line_failure(
        &karpdoctor(&[
            "reference-policy",
            "--karpenter-version",
            "0.20.0",
            "--cluster",
            "prod",
            "--region",
            "eu-west-1",
            "--account",
            "111122223333",
        ]),
        "0.37.7",
    );
}

#[test]
fn a_bad_now_is_one_line_exit_2() {
    let o = karpdoctor(&["--replay", &fixture("healthy"), "--now", "yesterday"]);
    assert_one_line_failure(&o, "RFC 3339");
}

#[test]
fn verbose_lists_the_pending_pods_the_scheduling_checks_leave_out() {
    let bundle = fixture("healthy-pending-pods-servable");
    let quiet = karpdoctor(&["--replay", &bundle, "--only", "KD8001"]);
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert!(!stdout(&quiet).contains("left out"), "notes only with -v");
    let verbose = karpdoctor(&["--replay", &bundle, "--only", "KD8001", "-v"]);
    let text = stdout(&verbose);
    for line in [
        "· left out 1 pod (monitoring/node-exporter-abcde): a DaemonSet or static pod",
        "· left out 1 pod (shop/web-5d8f7c9b6d-fresh): Unschedulable for 2 minutes or less",
        "· judged 2 pending pods against 2 NodePools: 2 can be served",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    // JSON carries the notes whatever the verbosity.
    let json = karpdoctor(&["--replay", &bundle, "--only", "KD8001", "-o", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let notes = report["checks"][0]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 3, "{notes:?}");
}

/// README's example plan is the replay's own output, so it cannot drift from what users see.
#[test]
fn readme_shows_the_plan_the_replay_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let heading = "Upgrade plan: Karpenter 1.0.2 → 1.2.0";
    let at = readme.find(heading).expect("README shows the plan");
    let shown = &readme[at..at + readme[at..].find("```").unwrap()];
    let text = stdout(&karpdoctor(&[
        "--replay",
        &fixture("upgrade-from-1-0-2-skips-migration"),
        "-q",
    ]));
    let start = text.find(heading).expect(&text);
    let printed = &text[start..start + text[start..].find("\n\n").unwrap() + 1];
    assert_eq!(shown, printed);
}
