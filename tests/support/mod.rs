//! Shared helpers for the live-path tests: the AWS emulator process and the karpdoctor binary.

#![allow(dead_code)] // each test file uses a different subset

pub mod prometheus;
mod seed;
mod seed_ec2;

#[allow(unused_imports)] // each test file uses a different subset
pub use seed::{caller_env, emulator_config, seed_aws};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The moto-based AWS emulator (`tests/emulator/karpmoto.py`) on a free 127.0.0.1 port.
/// Killed on drop.
pub struct Emulator {
    child: Child,
    pub url: String,
}

impl Emulator {
    /// Starts the emulator from the virtualenv `scripts/test` creates. Fails loudly when the
    /// virtualenv is missing: the live path must not be skipped silently.
    pub fn start() -> Emulator {
        Emulator::start_with(&[])
    }

    /// Starts an emulator with extra environment (`KARPMOTO_DENY=service:Action` to take one
    /// permission away from karpdoctor's identity).
    pub fn start_with(env: &[(&str, &str)]) -> Emulator {
        let python = root().join(".venv-emulator/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash scripts/test` (it creates the emulator's virtualenv)",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root().join("tests/emulator/karpmoto.py"))
            .args(["-H", "127.0.0.1", "-p", "0"])
            // The fixtures' account, so ARNs and the caller identity agree with the bundles.
            .env("MOTO_ACCOUNT_ID", FIXTURE_ACCOUNT)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the emulator starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the emulator exited before listening"))
                .expect("stderr is text");
            if let Some(rest) = line.split("Running on ").nth(1) {
                break rest.trim().to_string();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the emulator did not start"
            );
        };
        // Keep draining stderr so a chatty server can never block on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Emulator { child, url }
    }
}

impl Emulator {
    /// The emulator's process id (benchmarks read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `recordedAt` of every fixture bundle.
pub const FIXTURE_TIME: &str = "2026-11-23T10:00:00Z";

/// The AWS account every fixture bundle is recorded in.
pub const FIXTURE_ACCOUNT: &str = "111122223333";

/// Wipes the emulator's state (`POST /moto-api/reset`).
pub fn reset_emulator(url: &str) {
    emulator_post(url, "/moto-api/reset", "", "", "reset");
}

/// One plain HTTP POST to the emulator (its own routes, or a call the tests need no SDK for);
/// the answer must be 200, and its body is returned.
fn emulator_post(url: &str, path: &str, headers: &str, body: &str, what: &str) -> String {
    use std::io::{Read, Write};
    let host = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("emulator reachable");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{what} failed: {answer}"
    );
    answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// Limits the emulator's instance types to those a fixture's region offers (its
/// `ec2InstanceTypes` fact), so a live run judges the same catalogue as the replay.
pub fn restrict_instance_types(url: &str, names: &[String]) {
    post_catalogue(url, &serde_json::to_string(names).unwrap());
}

/// Every instance type moto knows for the region again (until the next reset or restriction).
pub fn unrestrict_instance_types(url: &str) {
    post_catalogue(url, "null");
}

/// Answers exactly these actions (`service:Action`) with AccessDenied from now on; `&[]` for none.
pub fn deny_actions(url: &str, actions: &[&str]) {
    emulator_post(
        url,
        "/karpmoto-api/deny",
        "Content-Type: application/json\r\n",
        &serde_json::to_string(actions).unwrap(),
        "deny",
    );
}

fn post_catalogue(url: &str, body: &str) {
    emulator_post(
        url,
        "/karpmoto-api/instance-types",
        "Content-Type: application/json\r\n",
        body,
        "catalogue",
    );
}

/// Runs the karpdoctor binary with a clean environment: no user kubeconfig, AWS profile or
/// credentials leak in from the machine running the tests.
pub fn karpdoctor(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(karpdoctor_exe());
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .env("KUBECONFIG", "/nonexistent-kubeconfig")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

/// The binary under test: the one cargo built, or `KARPDOCTOR_EXE` (to benchmark another
/// build, such as a release profile, with the same harness).
pub fn karpdoctor_exe() -> String {
    std::env::var("KARPDOCTOR_EXE").unwrap_or_else(|_| env!("CARGO_BIN_EXE_karpdoctor").to_string())
}

/// Environment for a live run against the test API server and the emulator.
pub fn live_env<'a>(kubeconfig: &'a str, aws_url: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("KUBECONFIG", kubeconfig),
        // Every fixture is recorded at this moment; a live run judges ages as of it too.
        ("KARPDOCTOR_NOW", FIXTURE_TIME),
        ("AWS_ENDPOINT_URL", aws_url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-west-2"),
    ]
}

/// A private scratch directory for one test, removed when the test passes. A test that fails
/// keeps it, so the bundle or report it wrote can be read; a passing run leaves nothing
/// behind (they held copies of the binary and whole bundles, and filled a developer's disk).
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("karpdoctor-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// See [`scratch`].
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// Keeps the directory past this value (a benchmark's reports are read afterwards).
    #[allow(dead_code)] // used by the benchmarks, not by every test crate
    pub fn keep(self) -> PathBuf {
        let dir = self.0.clone();
        std::mem::forget(self);
        dir
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Scenarios whose bundle is product data under `data/<name>/` (the demo `karpdoctor demo`
/// embeds) rather than a test fixture; their `expect.json` and `simulations.json` stay under
/// `fixtures/<name>/` with every other scenario's.
pub const PRODUCT_BUNDLES: &[&str] = &["demo"];

/// The files under `dir` whose names end with `ext`, recursively.
pub fn files_under(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every scenario: a directory of `fixtures/` with an `expect.json`.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expect.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The bundle of scenario `name`.
pub fn fixture_bundle(name: &str) -> PathBuf {
    let dir = if PRODUCT_BUNDLES.contains(&name) {
        "data"
    } else {
        "fixtures"
    };
    root().join(dir).join(name).join("bundle.json")
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON")
}

/// What a report concluded, per check: status and the objects of its findings. Live and
/// replay runs must agree on this.
pub fn verdicts(report: &serde_json::Value) -> Vec<(String, String, Vec<String>)> {
    report["checks"]
        .as_array()
        .expect("checks[]")
        .iter()
        .map(|c| {
            let mut objects: Vec<String> = c["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| f["object"].as_str().unwrap_or_default().to_string())
                .collect();
            objects.sort();
            (
                c["code"].as_str().unwrap_or_default().to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
                objects,
            )
        })
        .collect()
}

/// What a report concluded, per check: code, status and (object, message) of each finding.
pub type Verdict = (String, karpdoctor::engine::Status, Vec<(String, String)>);

pub fn report_verdicts(r: &karpdoctor::report::Report) -> Vec<Verdict> {
    r.checks
        .iter()
        .map(|c| {
            (
                c.code.clone(),
                c.status,
                c.findings
                    .iter()
                    .map(|f| (f.object.clone(), f.message.clone()))
                    .collect(),
            )
        })
        .collect()
}
