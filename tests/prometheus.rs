//! `-o prometheus`, `--pushgateway` and the alert rules, checked by the real tools: promtool
//! (Debian's `prometheus`) validates the exposition and the rules and runs the alerts' unit
//! tests, and a real Pushgateway (Debian's `prometheus-pushgateway`), started on 127.0.0.1,
//! receives the pushes and is read back. `scripts/test` installs both. A missing tool fails the
//! test; on a machine without them, `KARPDOCTOR_SKIP_PROMETHEUS=1` skips it, loudly, and
//! never in CI (`CI` set).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use support::prometheus::{
    Pushgateway, Sample, as_pushed, free_port, group, labels, promtool_accepts, samples, tool,
};

use serde_json::Value;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bundle(name: &str) -> String {
    support::fixture_bundle(name).display().to_string()
}

fn run(args: &[&str]) -> Output {
    support::karpdoctor(args, &[])
}

/// The runs the exposition is checked on: the demo, a healthy cluster, unknowns (forbidden
/// CRDs), an unknown cluster name (the empty label), a pre-install run, and a run where no
/// check concludes (exit 2, `karpdoctor_up` 0).
fn scenarios() -> Vec<(&'static str, Vec<String>, u8)> {
    let replay = |name: &str, extra: &[&str]| {
        let mut args = vec!["--replay".to_string(), bundle(name)];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    vec![
        ("demo", vec!["demo".to_string()], 1),
        ("healthy", replay("healthy", &[]), 0),
        ("forbidden-crds", replay("forbidden-crds", &[]), 0),
        (
            "cluster-name-unknown",
            replay("cluster-name-unknown", &[]),
            1,
        ),
        ("pre-install-ready", replay("pre-install-ready", &[]), 0),
        (
            "nothing concludes",
            replay("cluster-name-unknown", &["--only", "KD5003"]),
            2,
        ),
    ]
}

#[test]
fn exposition_passes_promtool_and_says_what_the_json_report_says() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    for (name, args, code) in scenarios() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let json_run = run(&[&args[..], &["-o", "json"]].concat());
        let prom_run = run(&[&args[..], &["-o", "prometheus"]].concat());
        assert_eq!(
            json_run.status.code(),
            Some(code.into()),
            "{name}: json exit code"
        );
        assert_eq!(
            prom_run.status.code(),
            Some(code.into()),
            "{name}: the exit code does not depend on the format"
        );
        assert!(prom_run.stderr.is_empty(), "{name}: {}", stderr(&prom_run));
        let text = stdout(&prom_run);
        promtool_accepts(&promtool, &text, name);

        let report: Value = serde_json::from_str(&stdout(&json_run)).unwrap();
        let cluster = report["target"]["cluster"].as_str().unwrap_or("");
        let got = samples(&text);
        assert!(
            got.iter()
                .all(|s| s.labels.get("cluster").map(String::as_str) == Some(cluster)),
            "{name}: every sample has cluster={cluster:?}"
        );
        let one = |metric: &str| {
            let found: Vec<&Sample> = got.iter().filter(|s| s.name == metric).collect();
            assert_eq!(found.len(), 1, "{name}: one {metric}");
            found[0].value
        };
        assert_eq!(
            one("karpdoctor_up"),
            if code == 2 { 0.0 } else { 1.0 },
            "{name}"
        );
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let finished = one("karpdoctor_last_run_timestamp_seconds");
        assert!(
            (now - finished).abs() < 600.0,
            "{name}: finished at {finished}"
        );
        let duration = one("karpdoctor_run_duration_seconds");
        assert!((0.0..60.0).contains(&duration), "{name}: took {duration}");

        let mut want_status = Vec::new();
        let mut want_findings = Vec::new();
        for c in report["checks"].as_array().unwrap() {
            let code = c["code"].as_str().unwrap();
            let status = c["status"].as_str().unwrap();
            let value = ["pass", "fail", "unknown", "skip"]
                .iter()
                .position(|s| *s == status)
                .unwrap();
            let check_labels = labels(&[
                ("cluster", cluster),
                ("code", code),
                ("slug", c["slug"].as_str().unwrap()),
                ("category", c["category"].as_str().unwrap()),
            ]);
            want_status.push((check_labels, value as f64));
            if matches!(status, "pass" | "fail") {
                for severity in ["error", "warning", "info"] {
                    let n = c["findings"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|f| f["severity"] == severity)
                        .count();
                    let l = labels(&[("cluster", cluster), ("code", code), ("severity", severity)]);
                    want_findings.push((l, n as f64));
                }
            }
        }
        let series = |metric: &str| -> Vec<(BTreeMap<String, String>, f64)> {
            got.iter()
                .filter(|s| s.name == metric)
                .map(|s| (s.labels.clone(), s.value))
                .collect()
        };
        assert!(!want_status.is_empty(), "{name}");
        assert_eq!(series("karpdoctor_check_status"), want_status, "{name}");
        assert_eq!(series("karpdoctor_findings"), want_findings, "{name}");
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert!(
            names.iter().all(|n| [
                "karpdoctor_up",
                "karpdoctor_last_run_timestamp_seconds",
                "karpdoctor_run_duration_seconds",
                "karpdoctor_check_status",
                "karpdoctor_findings",
            ]
            .contains(n)),
            "{name}: {names:?}"
        );
    }
}

#[test]
fn hostile_cluster_names_are_escaped_not_executed() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let name = "we\"ird\\name\nnext\u{1b}[2J";
    let o = run(&[
        "--replay",
        &bundle("healthy"),
        "--cluster",
        name,
        "-o",
        "prometheus",
    ]);
    let text = stdout(&o);
    assert!(!o.stdout.contains(&0x1b), "raw escape in the output");
    promtool_accepts(&promtool, &text, "hostile cluster name");
    let got = samples(&text);
    assert!(!got.is_empty());
    let expected = karpdoctor::sanitize::for_terminal(name);
    assert!(expected.contains('\n') && expected.contains('"') && expected.contains('\\'));
    for s in &got {
        assert_eq!(s.labels["cluster"], expected, "{s:?}");
    }
}

fn findings_of(samples: &[Sample], code: &str, severity: &str) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == "karpdoctor_findings"
                && s.labels["code"] == code
                && s.labels["severity"] == severity
        })
        .map(|s| s.value)
}

#[test]
fn pushes_reach_a_real_pushgateway_grouped_by_job_and_cluster() {
    let Some(binary) = tool("prometheus-pushgateway", "prometheus-pushgateway") else {
        return;
    };
    let gateway = Pushgateway::start(&binary);
    // Pushes what it prints: -o prometheus shows exactly the metrics of the push.
    let push = |args: &[&str]| {
        let o = run(&[args, &["-o", "prometheus", "--pushgateway", &gateway.url]].concat());
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
        (o.status.code(), stdout(&o))
    };

    // A failing cluster: KD1001 has an error-level finding.
    let (code, crashloop) = push(&["--replay", &bundle("controller-crashloop")]);
    assert_eq!(code, Some(1), "a push does not change the exit code");
    let exposed = gateway.karpdoctor_samples();
    assert_eq!(group(&exposed, "demo"), as_pushed(&crashloop));
    assert!(findings_of(&exposed, "KD1001", "error").is_some_and(|n| n >= 1.0));

    // The same cluster fixed: the push replaces the group, and the finding drops to 0.
    let (code, healthy) = push(&["--replay", &bundle("healthy")]);
    assert_eq!(code, Some(0));
    let exposed = gateway.karpdoctor_samples();
    assert_eq!(group(&exposed, "demo"), as_pushed(&healthy));
    assert_eq!(findings_of(&exposed, "KD1001", "error"), Some(0.0));

    // Clusters whose names the URL path cannot carry as they are: empty (unknown), with a
    // slash, with characters to percent-encode. Each is its own group; the others stay.
    let (_, unknown) = push(&["--replay", &bundle("cluster-name-unknown")]);
    let odd = "team/a b%c";
    let (_, slashed) = push(&["--replay", &bundle("healthy"), "--cluster", odd]);
    let exposed = gateway.karpdoctor_samples();
    assert_eq!(group(&exposed, ""), as_pushed(&unknown));
    assert_eq!(group(&exposed, odd), as_pushed(&slashed));
    assert_eq!(group(&exposed, "demo"), as_pushed(&healthy));
    assert!(
        exposed.iter().all(|s| s.labels["job"] == "karpdoctor"),
        "every sample is under job karpdoctor"
    );

    // A smaller run replaces the whole group: nothing of the previous push lingers.
    let (_, only) = push(&["--replay", &bundle("healthy"), "--only", "KD1001"]);
    let exposed = gateway.karpdoctor_samples();
    assert_eq!(group(&exposed, "demo"), as_pushed(&only));
    assert_eq!(
        group(&exposed, "demo")
            .iter()
            .filter(|s| s.name == "karpdoctor_check_status")
            .count(),
        1
    );
}

#[test]
fn https_pushes_verify_the_gateway_certificate() {
    let Some(binary) = tool("prometheus-pushgateway", "prometheus-pushgateway") else {
        return;
    };
    let Some(openssl) = tool("openssl", "openssl") else {
        return;
    };
    // A self-signed certificate for 127.0.0.1, trusted only where SSL_CERT_FILE names it.
    let dir = support::scratch("prometheus-tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new(openssl)
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let gateway = Pushgateway::start_tls(&binary, &web);
    let args = ["demo", "-o", "short", "--pushgateway", &gateway.url];

    let untrusted = run(&args);
    assert_eq!(untrusted.status.code(), Some(1));
    let err = stderr(&untrusted);
    assert!(
        err.starts_with("karpdoctor: warning: metrics not pushed to https://127.0.0.1:")
            && err.contains("certificate"),
        "an unknown certificate is refused: {err}"
    );

    let cert_file = cert.display().to_string();
    let trusted = support::karpdoctor(&args, &[("SSL_CERT_FILE", &cert_file)]);
    assert_eq!(trusted.status.code(), Some(1));
    assert!(
        trusted.stderr.is_empty(),
        "the Pushgateway accepted the push over TLS: {}",
        stderr(&trusted)
    );
    drop(gateway);
}

#[test]
fn help_lists_the_prometheus_output_and_the_pushgateway_option() {
    let help = stdout(&run(&["--help"]));
    for needle in ["prometheus", "--pushgateway <URL>", "Pushgateway"] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn a_failed_push_is_one_warning_and_keeps_output_and_exit_code() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    for (args, code) in [
        (vec!["demo".to_string()], 1),
        (vec!["--replay".to_string(), bundle("healthy")], 0),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let plain = run(&[&args[..], &["-o", "short"]].concat());
        let pushed = run(&[&args[..], &["-o", "short", "--pushgateway", &closed]].concat());
        assert_eq!(plain.status.code(), Some(code));
        assert_eq!(pushed.status.code(), Some(code), "{args:?}");
        assert_eq!(
            stdout(&pushed),
            stdout(&plain),
            "stdout is the report alone"
        );
        let err = stderr(&pushed);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.starts_with(&format!(
                "karpdoctor: warning: metrics not pushed to {closed}: "
            )),
            "{err}"
        );
    }
}

#[test]
fn a_bad_pushgateway_url_is_a_usage_error() {
    for bad in [
        "pushgateway:9091",
        "ftp://gw",
        "http://user:pw@gw:9091",
        "http://gw/?a=b",
    ] {
        let o = run(&["demo", "--pushgateway", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{bad}");
        assert!(
            stderr(&o).contains("--pushgateway"),
            "{bad}: {}",
            stderr(&o)
        );
    }
}

/// Reads one HTTP request (head and body) from a connection.
fn read_request(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).unwrap();
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        assert!(n > 0, "connection closed mid-request: {text}");
    }
}

#[test]
fn the_push_goes_to_the_given_host_only_and_follows_no_redirect() {
    // "Elsewhere" must never be contacted; the gateway answers with a redirect to it.
    let elsewhere = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    elsewhere.set_nonblocking(true).unwrap();
    let elsewhere_port = elsewhere.local_addr().unwrap().port();
    let gateway = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = gateway.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = gateway.accept().unwrap();
        let request = read_request(&mut stream);
        write!(
            stream,
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{elsewhere_port}/metrics/job/karpdoctor\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        request
    });
    let o = run(&[
        "--replay",
        &bundle("healthy"),
        "-o",
        "short",
        "--pushgateway",
        &format!("http://127.0.0.1:{port}/prefix/"),
    ]);
    let request = server.join().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("307") && err.contains("redirects are not followed"),
        "{err}"
    );
    assert!(
        matches!(elsewhere.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the redirect target was contacted"
    );
    // The request itself: a PUT of the 0.0.4 text format to the group's URL.
    let (head, body) = request.split_once("\r\n\r\n").unwrap();
    let lower = head.to_ascii_lowercase();
    assert!(
        head.starts_with("PUT /prefix/metrics/job/karpdoctor/cluster/demo HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        lower.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(lower.contains(&format!("host: 127.0.0.1:{port}")), "{head}");
    assert!(
        body.contains("karpdoctor_up{cluster=\"demo\"} 1\n"),
        "{body}"
    );
}

/// The `spec` of deploy/prometheusrule.yaml: a Prometheus rules file.
fn rules_file(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(support::root().join("deploy/prometheusrule.yaml")).unwrap();
    let rule: Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(rule["kind"], "PrometheusRule");
    let path = dir.join("rules.yaml");
    std::fs::write(&path, serde_norway::to_string(&rule["spec"]).unwrap()).unwrap();
    path
}

#[test]
fn the_alert_rules_pass_promtool_and_fire_when_they_should() {
    let Some(promtool) = tool("promtool", "prometheus") else {
        return;
    };
    let dir = support::scratch("prometheus-rules");
    let rules = rules_file(&dir);
    let check = Command::new(&promtool)
        .args(["check", "rules"])
        .arg(&rules)
        .output()
        .unwrap();
    assert!(
        check.status.success() && stdout(&check).contains("SUCCESS: 3 rules found"),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
    // The alerts' unit tests: each fires when it should and not before.
    let tests = dir.join("alerts.test.yaml");
    std::fs::copy(
        support::root().join("tests/prometheus/alerts.test.yaml"),
        &tests,
    )
    .unwrap();
    let test = Command::new(&promtool)
        .args(["test", "rules"])
        .arg(&tests)
        .output()
        .unwrap();
    assert!(test.status.success(), "{}{}", stdout(&test), stderr(&test));
}

#[test]
fn the_alert_rules_use_only_metrics_karpdoctor_writes() {
    let text = std::fs::read_to_string(support::root().join("deploy/prometheusrule.yaml")).unwrap();
    let demo = stdout(&run(&["demo", "-o", "prometheus"]));
    let written: Vec<String> = samples(&demo).into_iter().map(|s| s.name).collect();
    let re = regex::Regex::new(r"karpdoctor_[a-z_]+").unwrap();
    let used: Vec<&str> = re.find_iter(&text).map(|m| m.as_str()).collect();
    assert!(used.len() >= 3, "{used:?}");
    for metric in used {
        assert!(
            written.iter().any(|w| w == metric),
            "{metric} is not a metric karpdoctor writes"
        );
    }
}
