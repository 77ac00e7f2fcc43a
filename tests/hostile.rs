//! Cluster data is not trusted terminal input. Object names, references and messages with ANSI
//! escapes, control characters, bidi overrides or megabytes of text must come out sanitised and
//! bounded in text, markdown and short output, and intact but escaped in JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use karpdoctor::app;
use karpdoctor::bundle::{Bundle, FactOutcome};
use karpdoctor::cli::ReportArgs;
use karpdoctor::facts::FactKey;
use karpdoctor::report;
use serde_json::{Value, json};

const ESC_NAME: &str = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}gpj.exe\u{0}\r";

fn hostile_bundle() -> Bundle {
    let mut bundle = Bundle::read(&support::fixture_bundle("nodeclassref-invalid")).unwrap();
    let huge = "A".repeat(2_000_000);
    for entry in bundle.facts.iter_mut() {
        if entry.fact == FactKey::NodePools {
            let FactOutcome::Value(Value::Array(pools)) = &mut entry.outcome else {
                panic!("nodePools")
            };
            pools[1]["metadata"]["name"] = json!(ESC_NAME);
            pools[1]["spec"]["template"]["spec"]["nodeClassRef"]["name"] =
                json!(format!("{huge}\u{1b}[31m"));
        }
    }
    bundle
}

#[tokio::test]
async fn hostile_strings_are_sanitised_bounded_and_kept_escaped_in_json() {
    let out = app::run_bundle(hostile_bundle(), &ReportArgs::default(), false)
        .await
        .unwrap();
    let finding = out
        .report
        .findings()
        .find(|f| f.object.contains("evil"))
        .expect("the hostile NodePool is reported");
    assert!(
        finding.object.contains('\u{1b}'),
        "the model keeps the data as it is"
    );

    let renders = [
        (
            "text",
            report::text::render(
                &out.report,
                report::text::TextOptions {
                    color: false,
                    verbose: true,
                    quiet: false,
                },
            ),
        ),
        ("markdown", report::markdown::render(&out.report)),
        ("short", report::short::render(&out.report)),
    ];
    for (format, text) in renders {
        for bad in ['\u{1b}', '\u{7}', '\u{0}', '\r', '\u{202e}'] {
            assert!(!text.contains(bad), "{format} output contains {:?}", bad);
        }
        assert!(
            text.contains("\\u{1b}"),
            "{format}: escapes are shown, not executed"
        );
        let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(longest < 10_000, "{format}: a line of {longest} characters");
        assert!(
            text.len() < 200_000,
            "{format}: {} bytes for a report with a 2 MB name",
            text.len()
        );
    }

    let json_text = report::json::render(&out.report);
    assert!(
        !json_text.contains('\u{1b}') && !json_text.contains('\u{0}'),
        "raw control characters in JSON"
    );
    let parsed: Value = serde_json::from_str(&json_text).unwrap();
    let objects: Vec<&str> = parsed["checks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["findings"].as_array().unwrap())
        .filter_map(|f| f["object"].as_str())
        .collect();
    assert!(
        objects.contains(&format!("NodePool/{ESC_NAME}").as_str()),
        "JSON keeps the exact string, escaped"
    );
}
