//! The live path's transport: bounded requests, the read-only guard, stalled and failing
//! endpoints, paged and sliced lists, the test API server itself, and proxies.

use super::*;

/// kube's `read_timeout` once timed out idle pooled connections: a request sent on one that had
/// waited longer than the request timeout failed at once (the CI failure of the stalled-AWS
/// test). The guard's client bounds each request instead; an idle connection is reused
/// safely, and a server that never answers is still cut off at the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_requests_are_bounded_but_idle_connections_are_not() {
    use karpdoctor::guard::ApiLog;
    let bound = std::time::Duration::from_millis(700);
    let client_for = |kubeconfig: String| async move {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        config.read_timeout = Some(bound);
        config.write_timeout = Some(bound);
        karpdoctor::guard::kube_client(config, ApiLog::default(), None).unwrap()
    };
    // Each answer takes 300 ms. The connection goes idle after the first one; the second
    // request is sent on it 500 ms later and answered 300 ms after that: within its own
    // bound, but 800 ms after the connection went quiet.
    let answer = std::time::Duration::from_millis(300);
    let server = TestServer::start(
        Cluster::from_bundle(&read_json(&fixture_bundle("healthy"))),
        0,
        answer,
    )
    .await
    .unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client_for(server.kubeconfig()).await, "karpenter");
    pods.list(&Default::default()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    pods.list(&Default::default())
        .await
        .expect("a request answered within its bound, on a reused connection");

    let (url, _stall) = karpdoctor_testkit::stalled_endpoint().await.unwrap();
    let stalled: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(
        client_for(karpdoctor_testkit::kubeconfig_for(&url)).await,
        "karpenter",
    );
    let started = std::time::Instant::now();
    let err = stalled.list(&Default::default()).await.unwrap_err();
    assert!(
        started.elapsed() < bound * 3,
        "took {:?}",
        started.elapsed()
    );
    assert!(err.to_string().contains("timed out"), "{err}");
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
    let client = karpdoctor::guard::kube_client(config, log.clone(), None).unwrap();
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
        .http_client(karpdoctor::backend::live::https_client())
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
    let _quiet = LOAD.write().await;
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
    let _quiet = LOAD.write().await;
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
    // 6 s per check: long enough for the local API server to accept and answer while the
    // other live tests load both cores (at 2 s, then 3 s, its connection timed out under load
    // and took the Kubernetes checks with it), short enough to show the stalled AWS side is
    // bounded well inside --timeout.
    let out = tokio::task::block_in_place(|| {
        karpdoctor(
            &["--timeout", "15s", "--check-timeout", "6s", "-o", "json"],
            &live_env(&kc, &aws_url),
        )
    });
    assert!(
        started.elapsed() < std::time::Duration::from_secs(16),
        "took {:?}",
        started.elapsed()
    );
    let report = parse(&out);
    // The checks that need no AWS answer here: controller, CRDs, NodePool references, and the
    // EC2NodeClass status, instance profile (none set), user data (none set) and spot (no spot
    // NodePool) checks, the VPC CNI and startup-taint checks (no node waits to initialize), the
    // EBS attach check (no volume waits), the estimate and pod-address checks (no node has
    // a NodeClaim), the termination check (no node is deleting), the budget check (no
    // budget) and the scheduling checks (no pod is pending). KD6005 stays unknown: without
    // the instance types only requested resources could be judged, and no node has any.
    let passed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "pass")
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        passed,
        [
            "KD1001", "KD1002", "KD1003", "KD1005", "KD1006", "KD1007", "KD1008", "KD1009",
            "KD2301", "KD3006", "KD3008", "KD3101", "KD4001", "KD4002", "KD4004", "KD4005",
            "KD4101", "KD4102", "KD4103", "KD4104", "KD4201", "KD5007", "KD5008", "KD5101",
            "KD6001", "KD6002", "KD6003", "KD6004", "KD6006", "KD6007", "KD6008", "KD7003",
            "KD8001", "KD8002", "KD8003", "KD9001"
        ],
        "{report}"
    );
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
    seed_aws(&emulator.url, &read_json(&fixture_bundle("healthy"))).await;
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
    assert_eq!(
        report["summary"]["pass"], report["summary"]["checks"],
        "no check depends on the caller identity"
    );
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

/// The instance types are read in concurrent name slices, each paged: against a region's
/// whole catalogue (moto's 1,354 types of us-west-2, many pages per slice) the list must be
/// that catalogue, each type once. The scenarios restrict the catalogue to their fixture's
/// few types, so this runs the healthy scenario against the whole one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instance_types_read_in_slices_are_the_regions_whole_list() {
    let _load = LOAD.read().await;
    let emulator = Emulator::start();
    let dir = scratch("whole-catalogue");
    let bundle = read_json(&fixture_bundle("healthy"));
    seed_aws(&emulator.url, &bundle).await;
    support::unrestrict_instance_types(&emulator.url);
    let server = TestServer::start(Cluster::from_bundle(&bundle), 0, std::time::Duration::ZERO)
        .await
        .expect("test API server");
    let kubeconfig = dir.join("healthy.kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let recorded = dir.join("healthy.recorded.json");
    let (kc, rec) = (
        kubeconfig.display().to_string(),
        recorded.display().to_string(),
    );
    let caller = caller_env(&emulator.url, &bundle).await;
    let mut env = live_env(&kc, &emulator.url);
    env.extend(caller.iter().map(|(k, v)| (*k, v.as_str())));
    let args = ["--region", "us-west-2", "-o", "json", "--record", &rec];
    let out = tokio::task::block_in_place(|| karpdoctor(&args, &env));
    assert!(out.status.code().is_some_and(|c| c < 2));
    assert_eq!(
        instance_type_names(&read_json(&recorded)),
        region_instance_types(&emulator.url),
        "the instance type list, read in concurrent slices, is the region's whole list"
    );
}

/// The names in a recorded bundle's instance type list, in its order.
fn instance_type_names(bundle: &serde_json::Value) -> Vec<String> {
    bundle["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fact"] == "ec2InstanceTypes")
        .and_then(|f| f["value"].as_array())
        .expect("a healthy run reads the instance types")
        .iter()
        .map(|t| t["instanceType"].as_str().unwrap().to_string())
        .collect()
}

/// Every instance type of us-west-2, sorted, as one unfiltered paged listing through the
/// emulator's boto3 returns them: the truth the sliced listing must match.
fn region_instance_types(url: &str) -> Vec<String> {
    let script = format!(
        r#"
import boto3
ec2 = boto3.client("ec2", endpoint_url="{url}", region_name="us-west-2", aws_access_key_id="testing", aws_secret_access_key="testing")
names = [t["InstanceType"] for p in ec2.get_paginator("describe_instance_types").paginate() for t in p["InstanceTypes"]]
print("\n".join(sorted(names)))
"#
    );
    let out = std::process::Command::new(root().join(".venv-emulator/bin/python"))
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(names.len() > 1000, "{} types", names.len());
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_api_server_pages_selects_discovers_and_serves_logs_to_kube_rs() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams, LogParams};
    let mut cluster = Cluster::default();
    for i in 0..5 {
        cluster.objects.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "karpenter", "labels": {"app": if i < 3 { "karpenter" } else { "other" }}},
            "spec": {"containers": [{"name": "controller"}]}
        }));
    }
    cluster
        .served
        .insert((String::new(), "v1".into(), "pods".into()));
    cluster.logs.insert(
        ("karpenter".into(), "p0".into(), "controller".into(), true),
        "panic: boom\n".into(),
    );
    let server = TestServer::start(cluster, 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "karpenter");

    // limit/continue: 5 pods in pages of 2.
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(2);
    let mut pages = 0;
    loop {
        let page = pods.list(&params).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().filter_map(|p| p.metadata.name.clone()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!((pages, names.len()), (3, 5));
    // Label and field selectors, server-side.
    let selected = pods
        .list(
            &ListParams::default()
                .labels("app=karpenter")
                .fields("metadata.name!=p1"),
        )
        .await
        .unwrap();
    let selected: Vec<_> = selected
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(selected, ["p0", "p2"]);
    // get, 404 as a metav1.Status, the previous container's log, discovery and /version.
    assert!(pods.get("p3").await.is_ok());
    match pods.get("missing").await {
        Err(kube::Error::Api(s)) => assert_eq!((s.code, s.reason.as_str()), (404, "NotFound")),
        other => panic!("expected a 404 Status, got {other:?}"),
    }
    let log = pods
        .logs(
            "p0",
            &LogParams {
                container: Some("controller".into()),
                previous: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log, "panic: boom\n");
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(
        discovery.groups().any(|g| g.name() == ""),
        "the core group is discovered"
    );
    assert_eq!(client.apiserver_version().await.unwrap().major, "1");
}

/// The AWS SDK's HTTPS client is karpdoctor's own (`backend::live::https_client`, rustls on
/// ring rather than the SDK's default on aws-lc): like the default it replaces, it must send
/// through the proxy the environment names, and leave alone what `NO_PROXY` exempts. Behind a
/// proxy without it, every AWS check would be unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_requests_go_through_the_proxy_the_environment_names() {
    let _load = LOAD.read().await;
    let emulator = tokio::task::block_in_place(Emulator::start);
    // A "proxy" that only counts the connections it is offered, then drops them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let offered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let offered = std::sync::Arc::clone(&offered);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                offered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
    }
    // `pre-install` needs no Kubernetes API, so only AWS requests are made.
    let run = |extra: &[(&str, &str)]| {
        let mut env = live_env("/nonexistent-kubeconfig", &emulator.url);
        env.extend(extra.iter().copied());
        let args = [
            "pre-install",
            "--cluster",
            "demo",
            "--region",
            "us-west-2",
            "-o",
            "json",
        ];
        let out = tokio::task::block_in_place(|| karpdoctor(&args, &env));
        let report = parse(&out);
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "unknown")
            .count()
    };

    let direct = run(&[]);
    assert_eq!(offered.load(std::sync::atomic::Ordering::SeqCst), 0);
    let exempt = run(&[("HTTP_PROXY", &proxy), ("NO_PROXY", "127.0.0.1")]);
    assert_eq!(
        offered.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "NO_PROXY was not honoured"
    );
    assert_eq!(exempt, direct);
    let proxied = run(&[("HTTP_PROXY", &proxy)]);
    assert!(
        offered.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "HTTP_PROXY was not honoured: no AWS request reached the proxy"
    );
    assert!(
        proxied > direct,
        "a dead proxy must leave the AWS checks unknown ({proxied} unknown, {direct} without it)"
    );
}
