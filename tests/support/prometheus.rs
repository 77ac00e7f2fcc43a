//! Prometheus helpers for the tests: promtool and a real Pushgateway (Debian's `prometheus`
//! and `prometheus-pushgateway`, which `.ci/run` installs), and a small reader of the text
//! exposition format that does not share code with the product.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SKIP_VAR: &str = "KARPDOCTOR_SKIP_PROMETHEUS";

/// A tool on PATH, or a failure; `None` only when the skip is asked for outside CI.
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
    {
        return Some(found);
    }
    let skip = std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1");
    if skip && std::env::var_os("CI").is_none() {
        eprintln!("SKIPPED: {name} is not installed and {SKIP_VAR}=1");
        return None;
    }
    panic!(
        "{name} is not installed: apt-get install {package} (.ci/run does). \
         To skip on a machine without it, set {SKIP_VAR}=1 (ignored when CI is set)."
    );
}

/// One sample of the text exposition format.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The samples of an exposition (a small reader, independent of the code under test).
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(sample)
        .collect()
}

pub fn sample(line: &str) -> Sample {
    let Some((name, mut rest)) = line.split_once('{') else {
        let (name, value) = line.split_once(' ').unwrap();
        return Sample {
            name: name.to_string(),
            labels: BTreeMap::new(),
            value: value.parse().unwrap(),
        };
    };
    let mut labels = BTreeMap::new();
    loop {
        let after = rest.strip_prefix(',').unwrap_or(rest);
        if let Some(after) = after.strip_prefix('}') {
            rest = after;
            break;
        }
        let (key, quoted) = after.split_once("=\"").expect(line);
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        let end = loop {
            match chars.next().expect(line) {
                (_, '\\') => match chars.next().expect(line).1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i + 1,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        rest = &quoted[end..];
    }
    Sample {
        name: name.to_string(),
        labels,
        value: rest.trim().parse().expect(line),
    }
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `promtool check metrics` on `text`: it must accept it without a single lint remark.
pub fn promtool_accepts(promtool: &Path, text: &str, what: &str) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{what}: promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Pushgateway on a free 127.0.0.1 port, metrics in memory only; killed on drop.
pub struct Pushgateway {
    pub child: Child,
    pub url: String,
}

impl Pushgateway {
    pub fn start(binary: &Path) -> Pushgateway {
        let gateway = Pushgateway::spawn(binary, &[], "http");
        let port = gateway.port();
        let started = Instant::now();
        while http_get(port, "/-/ready").is_none_or(|r| !r.starts_with("HTTP/1.0 200")) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the Pushgateway is not ready on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        gateway
    }

    /// A Pushgateway serving HTTPS with `web_config` (its TLS settings); ready once it
    /// accepts connections.
    pub fn start_tls(binary: &Path, web_config: &Path) -> Pushgateway {
        let flag = format!("--web.config.file={}", web_config.display());
        let gateway = Pushgateway::spawn(binary, &[&flag], "https");
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, gateway.port())).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no TLS Pushgateway"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        gateway
    }

    pub fn spawn(binary: &Path, extra: &[&str], scheme: &str) -> Pushgateway {
        let port = free_port();
        let child = Command::new(binary)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--persistence.file=")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Pushgateway starts");
        Pushgateway {
            child,
            url: format!("{scheme}://127.0.0.1:{port}"),
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// The karpdoctor samples the Pushgateway exposes for scraping.
    pub fn karpdoctor_samples(&self) -> Vec<Sample> {
        let answer = http_get(self.port(), "/metrics").expect("the Pushgateway answers");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        samples(body)
            .into_iter()
            .filter(|s| s.name.starts_with("karpdoctor_"))
            .collect()
    }
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain GET on 127.0.0.1; HTTP/1.0, so the answer is not chunked. `None` when nothing
/// answers.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// The group of `cluster` as the Pushgateway exposes it: each pushed sample, with the
/// grouping labels added.
pub fn group(gateway: &[Sample], cluster: &str) -> Vec<Sample> {
    let mut found: Vec<Sample> = gateway
        .iter()
        .filter(|s| s.labels.get("cluster").map(String::as_str) == Some(cluster))
        .cloned()
        .collect();
    found.sort_by(|a, b| (&a.name, &a.labels).cmp(&(&b.name, &b.labels)));
    found
}

/// What pushing `printed` under job karpdoctor must make the Pushgateway expose.
pub fn as_pushed(printed: &str) -> Vec<Sample> {
    let mut want: Vec<Sample> = samples(printed)
        .into_iter()
        .map(|mut s| {
            s.labels.insert("job".to_string(), "karpdoctor".to_string());
            s.labels.insert("instance".to_string(), String::new());
            s
        })
        .collect();
    want.sort_by(|a, b| (&a.name, &a.labels).cmp(&(&b.name, &b.labels)));
    want
}
