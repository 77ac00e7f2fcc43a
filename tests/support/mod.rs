//! Shared helpers for the live-path tests: the AWS emulator process and the karpdoctor binary.

#![allow(dead_code)] // each test file uses a different subset

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
        let python = root().join(".venv-emulator/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash scripts/test` (it creates the emulator's virtualenv)",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root().join("tests/emulator/karpmoto.py"))
            .args(["-H", "127.0.0.1", "-p", "0"])
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

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the karpdoctor binary with a clean environment: no user kubeconfig, AWS profile or
/// credentials leak in from the machine running the tests.
pub fn karpdoctor(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karpdoctor"));
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

/// Environment for a live run against the test API server and the emulator.
pub fn live_env<'a>(kubeconfig: &'a str, aws_url: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("KUBECONFIG", kubeconfig),
        ("AWS_ENDPOINT_URL", aws_url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-west-2"),
    ]
}

/// A private scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("karpdoctor-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("bundle.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn fixture_bundle(name: &str) -> PathBuf {
    root().join("fixtures").join(name).join("bundle.json")
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
