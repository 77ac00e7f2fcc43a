//! The live path, as users run it: the karpdoctor binary, through kube-rs and the real AWS
//! SDK over HTTP, against the Kubernetes test API server and the AWS emulator on 127.0.0.1.
//! Every fixture scenario runs live and must reach the same verdicts as its replay; a live
//! run's `--record` must replay to the same verdicts; and the operations issued across the
//! suite are listed in `tests/live-operations.txt`, so a new API call shows up in review.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::BTreeSet;

use karpdoctor_testkit::{Cluster, TestServer};
use support::*;

fn parse(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_live_equals_replay_and_records_faithfully() {
    let emulator = Emulator::start();
    let dir = scratch("live");
    let mut operations = BTreeSet::new();
    for name in fixture_names() {
        let bundle = read_json(&fixture_bundle(&name));
        let server = TestServer::start(Cluster::from_bundle(&bundle), 0, std::time::Duration::ZERO)
            .await
            .expect("test API server");
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
        let recorded = dir.join(format!("{name}.recorded.json"));
        let kc = kubeconfig.display().to_string();
        let rec = recorded.display().to_string();

        let live = tokio::task::block_in_place(|| {
            karpdoctor(
                &[
                    "--region",
                    "us-west-2",
                    "-o",
                    "json",
                    "-v",
                    "--record",
                    &rec,
                ],
                &live_env(&kc, &emulator.url),
            )
        });
        let replay = karpdoctor(
            &[
                "--replay",
                &fixture_bundle(&name).display().to_string(),
                "-o",
                "json",
            ],
            &[],
        );
        let rereplay = karpdoctor(&["--replay", &rec, "-o", "json"], &[]);

        let (live_json, replay_json, rereplay_json) =
            (parse(&live), parse(&replay), parse(&rereplay));
        assert_eq!(live_json["mode"], "live");
        assert_eq!(
            verdicts(&live_json),
            verdicts(&replay_json),
            "{name}: live and replay disagree"
        );
        assert_eq!(
            live.status.code(),
            replay.status.code(),
            "{name}: exit codes differ"
        );
        assert_eq!(
            verdicts(&live_json),
            verdicts(&rereplay_json),
            "{name}: --record did not replay the same"
        );
        assert_eq!(
            live.status.code(),
            rereplay.status.code(),
            "{name}: recorded exit code"
        );
        assert!(
            live.stderr.is_empty(),
            "{name}: stderr: {}",
            String::from_utf8_lossy(&live.stderr)
        );

        // Every fact was fetched once, however many checks read it.
        for fact in live_json["stats"]["facts"].as_array().unwrap() {
            assert_eq!(fact["fetches"], 1, "{name}: {fact}");
        }
        for op in live_json["stats"]["operations"].as_object().unwrap().keys() {
            operations.insert(op.clone());
        }
        // Nothing but GETs reached the API server.
        assert!(
            server.seen().iter().all(|s| s.method == "GET"),
            "{name}: {:?}",
            server.seen()
        );
    }

    for op in &operations {
        let read_only = match op.split_once(':') {
            Some((_, action)) if !op.contains(' ') => {
                karpdoctor::guard::is_read_only_aws_action(action)
            }
            _ => op.starts_with("get ") || op.starts_with("list "),
        };
        assert!(read_only, "a live run issued a non-read operation: {op}");
    }
    let listed = std::fs::read_to_string(root().join("tests/live-operations.txt")).unwrap();
    let listed: BTreeSet<String> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert_eq!(
        operations, listed,
        "the operations issued by the live scenario suite changed: update tests/live-operations.txt (and review why)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_resources_and_missing_aws_access_make_checks_unknown_not_failed() {
    let emulator = Emulator::start();
    let dir = scratch("live-forbidden");
    let mut cluster = Cluster::from_bundle(&read_json(&fixture_bundle("healthy")));
    cluster
        .forbidden
        .insert(("karpenter.sh".into(), "v1".into(), "nodepools".into()));
    let server = TestServer::start(cluster, 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();
    let out = tokio::task::block_in_place(|| {
        karpdoctor(
            &["--region", "us-west-2", "-o", "json"],
            &live_env(&kc, &emulator.url),
        )
    });
    let report = parse(&out);
    let kd4001 = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == "KD4001")
        .unwrap();
    assert_eq!(kd4001["status"], "unknown");
    assert_eq!(kd4001["missingPermission"], "list nodepools.karpenter.sh");
    // The other checks still conclude, and the exit code follows the contract (0: no finding).
    assert_eq!(report["summary"]["pass"], 2);
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_refuses_writes_before_they_are_sent() {
    use karpdoctor::guard::{ApiLog, AwsGuard};
    let server = TestServer::start(Cluster::default(), 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    let log = ApiLog::default();

    // Kubernetes: a DELETE through the guarded client never reaches the server.
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = karpdoctor::backend::live::guarded_kube_client(config, log.clone()).unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client, "karpenter");
    let err = pods
        .delete("karpenter-0", &Default::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("karpdoctor refused"), "{err}");
    assert!(
        server.seen().is_empty(),
        "a refused request reached the server: {:?}",
        server.seen()
    );

    // AWS: a write operation is refused by the interceptor before it is signed or sent.
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(server.url())
        .region(aws_config::Region::new("us-west-2"))
        .credentials_provider(aws_sdk_sts::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .load()
        .await;
    let iam = aws_sdk_iam::Client::from_conf(
        aws_sdk_iam::config::Builder::from(&sdk)
            .interceptor(AwsGuard { log: log.clone() })
            .build(),
    );
    let err = iam
        .create_role()
        .role_name("x")
        .assume_role_policy_document("{}")
        .send()
        .await
        .unwrap_err();
    assert!(
        aws_smithy_types::error::display::DisplayErrorContext(&err)
            .to_string()
            .contains("karpdoctor refused"),
        "{err:?}"
    );
    assert!(
        server.seen().is_empty(),
        "a refused request reached the server: {:?}",
        server.seen()
    );
    assert!(
        log.calls().is_empty(),
        "refused requests are not counted as issued"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_api_server_ends_within_the_timeout_with_exit_2() {
    let (url, _stall) = karpdoctor_testkit::stalled_endpoint().await.unwrap();
    let dir = scratch("live-stalled-kube");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, karpdoctor_testkit::kubeconfig_for(&url)).unwrap();
    let kc = kubeconfig.display().to_string();
    let started = std::time::Instant::now();
    let out = tokio::task::block_in_place(|| {
        karpdoctor(
            &["--timeout", "3s", "--region", "us-west-2"],
            &live_env(&kc, "http://127.0.0.1:9"),
        )
    });
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(4),
        "took {took:?}, --timeout was 3s"
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("Kubernetes API server") || err.contains("--timeout"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_aws_endpoint_is_bounded_and_kubernetes_checks_still_conclude() {
    let server = TestServer::start(
        Cluster::from_bundle(&read_json(&fixture_bundle("healthy"))),
        0,
        std::time::Duration::ZERO,
    )
    .await
    .unwrap();
    let (aws_url, _stall) = karpdoctor_testkit::stalled_endpoint().await.unwrap();
    let dir = scratch("live-stalled-aws");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();
    let started = std::time::Instant::now();
    let out = tokio::task::block_in_place(|| {
        karpdoctor(
            &["--timeout", "10s", "--check-timeout", "2s", "-o", "json"],
            &live_env(&kc, &aws_url),
        )
    });
    assert!(
        started.elapsed() < std::time::Duration::from_secs(11),
        "took {:?}",
        started.elapsed()
    );
    let report = parse(&out);
    assert_eq!(report["summary"]["pass"], 3, "{report}");
    let errors = report["errors"].to_string();
    assert!(
        errors.contains("AWS identity") && errors.contains("timed out"),
        "{errors}"
    );
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_denied_and_throttling_of_karpdoctors_own_calls_are_handled() {
    use karpdoctor_testkit::AwsStub;
    let emulator = Emulator::start();
    let server = TestServer::start(
        Cluster::from_bundle(&read_json(&fixture_bundle("healthy"))),
        0,
        std::time::Duration::ZERO,
    )
    .await
    .unwrap();
    let dir = scratch("live-aws-faults");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();

    // AccessDenied on sts:GetCallerIdentity, through the per-service endpoint variable.
    let denied = AwsStub::start(vec![(
        "GetCallerIdentity",
        vec![(
            403,
            AwsStub::error_xml(
                "AccessDenied",
                "User is not authorized to perform sts:GetCallerIdentity",
            ),
        )],
    )])
    .await
    .unwrap();
    let mut env = live_env(&kc, &emulator.url);
    let denied_url = denied.url();
    env.push(("AWS_ENDPOINT_URL_STS", &denied_url));
    let out = tokio::task::block_in_place(|| karpdoctor(&["-o", "json"], &env));
    let report = parse(&out);
    assert!(
        report["errors"]
            .to_string()
            .contains("lacks permission sts:GetCallerIdentity"),
        "{report}"
    );
    assert_eq!(report["target"]["awsIdentity"], serde_json::Value::Null);
    assert_eq!(report["summary"]["pass"], 3);
    assert!(
        !denied.calls().is_empty(),
        "the per-service endpoint was used"
    );

    // Throttling twice, then an answer: the SDK's standard retry gets through.
    let throttled = AwsStub::start(vec![(
        "GetCallerIdentity",
        vec![
            (400, AwsStub::error_xml("Throttling", "Rate exceeded")),
            (400, AwsStub::error_xml("Throttling", "Rate exceeded")),
            (
                200,
                AwsStub::caller_identity_xml("111122223333", "arn:aws:iam::111122223333:user/ci"),
            ),
        ],
    )])
    .await
    .unwrap();
    let mut env = live_env(&kc, &emulator.url);
    let throttled_url = throttled.url();
    env.push(("AWS_ENDPOINT_URL_STS", &throttled_url));
    let out = tokio::task::block_in_place(|| karpdoctor(&["-o", "json"], &env));
    let report = parse(&out);
    assert_eq!(report["target"]["account"], "111122223333", "{report}");
    assert_eq!(
        throttled.calls().len(),
        3,
        "two throttled attempts and one success"
    );
}
