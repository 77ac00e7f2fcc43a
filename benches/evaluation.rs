//! In-process benchmark of judgement at scale: every check over a grown healthy bundle whose
//! facts are already in memory (decoding, selector matching, joins, report building), on one
//! thread so that wall time is CPU time. Sizes are `karpdoctor_testkit::scale` factors.
//!
//! `cargo bench --bench evaluation`; under `cargo test` divan runs each case once, and only
//! the smallest size, so CI stays quick.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark harness: a panic is a failure

use std::path::Path;

use karpdoctor::app;
use karpdoctor::bundle::Bundle;
use karpdoctor::cli::ReportArgs;
use karpdoctor_testkit::scale;

fn main() {
    divan::main();
}

fn factors() -> Vec<usize> {
    if std::env::args().any(|a| a == "--bench") {
        vec![1, 4, 16]
    } else {
        vec![1]
    }
}

fn grown(factor: usize) -> Bundle {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/healthy/bundle.json");
    let base: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let text = serde_json::to_string(&scale::grow(&base, factor).unwrap()).unwrap();
    Bundle::parse(&text, "a grown bundle").unwrap()
}

#[divan::bench(args = factors(), sample_count = 10, sample_size = 1)]
fn all_checks(bencher: divan::Bencher, factor: usize) {
    let bundle = grown(factor);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args = ReportArgs::default();
    bencher
        .with_inputs(|| bundle.clone())
        .bench_local_values(|bundle| {
            let out = runtime
                .block_on(app::run_bundle(bundle, &args, false))
                .unwrap();
            // A healthy cluster, however large, stays healthy: the work was really done.
            assert_eq!(
                out.report.summary.fail, 0,
                "{factor}×: {:?}",
                out.report.summary
            );
            assert!(out.report.summary.pass > 40);
            out
        });
}
