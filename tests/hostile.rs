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

/// Karpenter objects as a broken cluster may hold them: quantities that are not quantities,
/// huge requirement lists, requirements with unknown operators. Each gets a finding or an
/// `unknown`, never a panic, and the run completes.
#[tokio::test]
async fn malformed_karpenter_objects_get_findings_not_panics() {
    let mut bundle = Bundle::read(&support::fixture_bundle("nodepool-limits-reached")).unwrap();
    for entry in bundle.facts.iter_mut() {
        let FactOutcome::Value(value) = &mut entry.outcome else {
            continue;
        };
        match &entry.fact {
            FactKey::NodePools => {
                let pool = &mut value[0];
                pool["spec"]["limits"]["cpu"] = json!("lots");
                pool["spec"]["limits"]["memory"] = json!("9".repeat(400) + "Ei");
                let weird = json!({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["1e999"]});
                let requirements = pool["spec"]["template"]["spec"]["requirements"]
                    .as_array_mut()
                    .unwrap();
                requirements.extend(std::iter::repeat_n(weird, 20_000));
                requirements.push(
                    json!({"key": "kubernetes.io/arch", "operator": "Sometimes", "values": []}),
                );
            }
            FactKey::NodeClaims => {
                value[0]["status"]["capacity"]["cpu"] = json!("16 cores");
                value[1]["status"]["capacity"]["memory"] = json!(-1);
            }
            _ => {}
        }
    }
    let out = app::run_bundle(bundle, &ReportArgs::default(), false)
        .await
        .unwrap();
    let kd4002 = out
        .report
        .checks
        .iter()
        .find(|c| c.code == "KD4002")
        .unwrap();
    let messages: Vec<&str> = kd4002.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("spec.limits.cpu is \"lots\"")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("spec.limits.memory")),
        "an overflowing limit is not a quantity either: {messages:?}"
    );
    // KD4003 evaluated twenty thousand requirements and an unknown operator without panicking.
    let kd4003 = out
        .report
        .checks
        .iter()
        .find(|c| c.code == "KD4003")
        .unwrap();
    assert!(
        !kd4003
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("internal error"),
        "{:?}",
        kd4003.reason
    );
}
