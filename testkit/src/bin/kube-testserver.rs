//! Serves a karpdoctor fixture (or any bundle) as a Kubernetes API on 127.0.0.1, so the
//! binary, a person or a benchmark can point at it:
//!
//! ```sh
//! cargo run -p karpdoctor-testkit --bin kube-testserver -- data/demo --kubeconfig /tmp/kc
//! KUBECONFIG=/tmp/kc karpdoctor --region us-west-2
//! ```

use std::path::PathBuf;
use std::time::Duration;

use karpdoctor_testkit::{Cluster, TestServer};

const USAGE: &str =
    "usage: kube-testserver FIXTURE_DIR|BUNDLE [--port N] [--delay-ms N] [--kubeconfig FILE]";

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kube-testserver: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut source: Option<PathBuf> = None;
    let mut port = 0u16;
    let mut delay = Duration::ZERO;
    let mut kubeconfig: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--port" => {
                port = value("--port")?
                    .parse()
                    .map_err(|e| format!("--port: {e}"))?
            }
            "--delay-ms" => {
                delay = Duration::from_millis(
                    value("--delay-ms")?
                        .parse()
                        .map_err(|e| format!("--delay-ms: {e}"))?,
                )
            }
            "--kubeconfig" => kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other if source.is_none() && !other.starts_with('-') => {
                source = Some(PathBuf::from(other))
            }
            other => return Err(format!("unexpected argument {other}\n{USAGE}")),
        }
    }
    let source = source.ok_or_else(|| USAGE.to_string())?;
    let cluster = Cluster::from_path(&source)?;
    let server = TestServer::start(cluster, port, delay)
        .await
        .map_err(|e| format!("cannot listen: {e}"))?;
    if let Some(path) = &kubeconfig {
        std::fs::write(path, server.kubeconfig())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // The first line is the contract with scripts: the address to point a kubeconfig at.
    println!("listening {}", server.url());
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    Ok(())
}
