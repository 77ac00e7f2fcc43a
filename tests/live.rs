//! The live path, as users run it: the karpdoctor binary, through kube-rs and the real AWS
//! SDK over HTTP, against the Kubernetes test API server and the AWS emulator on 127.0.0.1.
//! Every fixture scenario runs live and must reach the same verdicts as its replay; a live
//! run's `--record` must replay to the same verdicts; and the operations issued across the
//! suite are listed in `tests/live-operations.txt`, so a new API call shows up in review.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use std::collections::BTreeSet;

use karpdoctor::facts::{ApiService, FactKey};

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

/// Tests that measure time take this alone; tests that keep both cores busy (a live run per
/// scenario, the emulator computing beside them) share it. On a 2-core CI machine a timing
/// taken beside them measures the load: the local API server's connections timed out.
static LOAD: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_live_equals_replay_and_records_faithfully() {
    let _load = LOAD.read().await;
    let dir = scratch("live");
    // Fixtures that describe the same AWS state share one seeding: karpdoctor only reads, so
    // the emulator holds that state unchanged from one run to the next.
    let fixtures: Vec<(String, String)> = fixture_names()
        .into_iter()
        .map(|name| (aws_state(&read_json(&fixture_bundle(&name))), name))
        .collect();
    // A live run mostly waits on one side at a time (karpdoctor, or the emulator answering in
    // Python), so one lane of runs leaves a core idle: two lanes, each with its own emulator,
    // keep both busy. Each AWS state stays in one lane so it is still seeded once.
    let lanes = LIVE_LANES.map(|lane| {
        let dir = dir.to_path_buf();
        let share = lane_share(&fixtures, lane, LIVE_LANES.len());
        tokio::spawn(async move { live_lane(share, &dir).await })
    });
    let mut operations = BTreeSet::new();
    for lane in lanes {
        match lane.await {
            Ok(seen) => operations.extend(seen),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    for op in &operations {
        let read_only = match op.split_once(':') {
            Some((_, action)) if !op.contains(' ') => {
                karpdoctor::guard::is_read_only_aws_action(action)
            }
            _ => {
                let (verb, rest) = op.split_once(' ').unwrap();
                karpdoctor::guard::is_read_only_kube(verb, rest.split('.').next().unwrap())
            }
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

/// How many emulators the scenario loop runs side by side (one per core of a CI machine).
const LIVE_LANES: [usize; 2] = [0, 1];

/// The fixtures of one lane: whole AWS states, dealt largest first to the lane with the fewest
/// fixtures so far, each lane ordered by state so equal states are neighbours.
fn lane_share(fixtures: &[(String, String)], lane: usize, lanes: usize) -> Vec<(String, String)> {
    let mut states: std::collections::BTreeMap<&str, Vec<&(String, String)>> = Default::default();
    for f in fixtures {
        states.entry(f.0.as_str()).or_default().push(f);
    }
    let mut groups: Vec<_> = states.into_values().collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let mut sizes = vec![0; lanes];
    let mut share = Vec::new();
    for group in groups {
        let least = (0..lanes).min_by_key(|&l| (sizes[l], l)).unwrap();
        sizes[least] += group.len();
        if least == lane {
            share.extend(group.into_iter().cloned());
        }
    }
    share.sort();
    share
}

/// Runs one lane's fixtures live against its own emulator, checking each as the suite
/// requires; returns the operations they issued.
async fn live_lane(fixtures: Vec<(String, String)>, dir: &std::path::Path) -> BTreeSet<String> {
    let emulator = tokio::task::block_in_place(Emulator::start);
    let mut operations = BTreeSet::new();
    let mut seeded: Option<String> = None;
    for (state, name) in fixtures {
        let bundle = read_json(&fixture_bundle(&name));
        if seeded.as_ref() != Some(&state) {
            seed_aws(&emulator.url, &bundle).await;
            seeded = Some(state);
        }
        let server = TestServer::start(Cluster::from_bundle(&bundle), 0, std::time::Duration::ZERO)
            .await
            .expect("test API server");
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
        let recorded = dir.join(format!("{name}.recorded.json"));
        let kc = kubeconfig.display().to_string();
        let rec = recorded.display().to_string();

        let mut args = mode_args(&bundle);
        args.extend([
            "--region",
            "us-west-2",
            "-o",
            "json",
            "-v",
            "--record",
            &rec,
        ]);
        let caller = caller_env(&emulator.url, &bundle).await;
        let mut env = live_env(&kc, &emulator.url);
        env.extend(caller.iter().map(|(k, v)| (*k, v.as_str())));
        let live = tokio::task::block_in_place(|| karpdoctor(&args, &env));
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

        // Every fact was fetched once, however many checks read it, and made requests that
        // were counted for it, in rounds (the critical path is built from them; Kubernetes
        // requests used to go uncounted). An IAM simulation answered by a request another
        // simulation sent for both counts the round it waited, and no request of its own.
        for fact in live_json["stats"]["facts"].as_array().unwrap() {
            assert_eq!(fact["fetches"], 1, "{name}: {fact}");
            let (calls, rounds) = (fact["calls"].as_u64(), fact["rounds"].as_u64());
            let shared =
                calls == Some(0) && fact["fact"].as_str().unwrap().starts_with("IAM simulation");
            assert!(
                rounds.is_some_and(|r| r >= 1) && (calls >= rounds || shared),
                "{name}: a fetched fact with no request or round: {fact}"
            );
        }
        for op in live_json["stats"]["operations"].as_object().unwrap().keys() {
            operations.insert(op.clone());
        }
        // Simulations are batched per context, never one call per action: a release's ~40
        // actions over ~100 resources take about 17 requests for one EC2NodeClass; a launch a
        // guardrail denies is asked again with the install's values (up to 10 more: its
        // volumes, its metadata options, one instance type per family tried), and each further
        // class adds its own launch and instance-profile statements.
        let classes = bundle["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fact"] == "ec2NodeClasses")
            .and_then(|f| f["value"].as_array())
            .map_or(1, |v| v.len().max(1)) as u64;
        let simulations = live_json["stats"]["operations"]["iam:SimulatePrincipalPolicy"]
            .as_u64()
            .unwrap_or(0);
        assert!(
            simulations <= 26 + 8 * (classes - 1),
            "{name}: {simulations} simulation calls for {classes} EC2NodeClass(es)"
        );
        // Nothing but reads (and access reviews, which store nothing) reached the API server.
        assert!(
            server.seen().iter().all(|s| s.method == "GET"
                || (s.method == "POST" && s.path.ends_with("/selfsubjectaccessreviews"))),
            "{name}: {:?}",
            server.seen()
        );
    }

    operations
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_resources_and_missing_aws_access_make_checks_unknown_not_failed() {
    let emulator = Emulator::start();
    let dir = scratch("live-forbidden");
    seed_aws(&emulator.url, &read_json(&fixture_bundle("healthy"))).await;
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
    // Exactly the checks that need NodePools are unknown; the others still conclude, and the
    // exit code follows the contract (0: no finding).
    let needing: BTreeSet<String> = karpdoctor::registry::CHECKS
        .iter()
        .filter(|c| c.needs.contains(&karpdoctor::facts::FactKind::NodePools))
        .map(|c| c.code.to_string())
        .collect();
    let unknown: BTreeSet<String> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "unknown")
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        unknown, needing,
        "only the checks that need NodePools are unknown"
    );
    assert_eq!(
        report["summary"]["pass"].as_u64(),
        report["summary"]["checks"]
            .as_u64()
            .map(|n| n - needing.len() as u64),
    );
    assert_eq!(out.status.code(), Some(0));
}

/// `karpdoctor pod`, live and replayed from what it recorded: the chain of a pod no NodePool
/// can serve stops at the NodePools with KD8001 as its owner; a workload by selector gives a
/// chain per pod; a pod nominated to a launching NodeClaim waits without an owner; bad input
/// is exit 2 with one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_chains_follow_a_pod_to_where_it_stops() {
    let _quiet = LOAD.read().await;
    let dir = scratch("live-pod");
    let record = dir.join("pod.json");
    let record_arg = record.display().to_string();
    let chain_of = |name: &str, args: &[&str]| {
        let bundle = read_json(&fixture_bundle(name));
        (
            bundle,
            args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        )
    };

    let (bundle, args) = chain_of(
        "pending-nodeselector-undeclared-label",
        &[
            "pod",
            "shop/web-5d8f7c9b6d-2xkqp",
            "-o",
            "json",
            "--record",
            &record_arg,
        ],
    );
    let (emulator, server) = serve(&bundle).await;
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();
    let env = live_env(&kc, &emulator.url);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tokio::task::block_in_place(|| karpdoctor(&argv, &env));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(live["kind"], "PodChains");
    let chain = &live["pods"][0];
    assert_eq!(chain["workload"], "Deployment/shop/web");
    let steps: Vec<&str> = chain["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["created", "unschedulable", "nodepools", "karpenter says"],
        "{chain}"
    );
    let last = &chain["steps"][2];
    assert_eq!(last["state"], "failed");
    assert!(
        last["detail"]
            .as_str()
            .unwrap()
            .contains("label \"workload\" does not have known values"),
        "{last}"
    );
    assert_eq!(chain["owner"]["code"], "KD8001");
    assert_eq!(chain["owner"]["status"], "fail");
    // What it recorded replays to the same chain.
    let replayed = karpdoctor(
        &[
            "pod",
            "shop/web-5d8f7c9b6d-2xkqp",
            "-o",
            "json",
            "--replay",
            &record_arg,
        ],
        &[],
    );
    assert_eq!(replayed.status.code(), Some(1));
    let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(replayed["pods"], live["pods"]);
    // A workload by selector: one chain per pod; text names the owner.
    let by_selector =
        tokio::task::block_in_place(|| karpdoctor(&["pod", "shop", "-l", "app=web"], &env));
    let text = String::from_utf8_lossy(&by_selector.stdout);
    assert_eq!(text.matches("stops here: KD8001").count(), 3, "{text}");
    // Bad input and a pod that does not exist: exit 2, one line.
    for args in [
        &["pod", "web-0"][..],
        &["pod", "shop/nope"][..],
        &["pod", "shop/web", "-l", "a=b"][..],
    ] {
        let out = tokio::task::block_in_place(|| karpdoctor(args, &env));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
    }

    // Nominated to a NodeClaim launched a minute ago: the chain waits at registration.
    let bundle = read_json(&fixture_bundle(
        "healthy-pending-nominated-to-launching-nodeclaim",
    ));
    let (emulator, server) = serve(&bundle).await;
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let env = live_env(&kc, &emulator.url);
    let out = tokio::task::block_in_place(|| {
        karpdoctor(&["pod", "shop/web-5d8f7c9b6d-9qwer", "-o", "json"], &env)
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chain: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps: Vec<(&str, &str)> = chain["pods"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("created", "done"),
            ("unschedulable", "done"),
            ("nominated", "done"),
            ("launched", "done"),
            ("registered", "waiting")
        ],
        "{chain}"
    );
    assert!(chain["pods"][0]["owner"].is_null());
}

/// `karpdoctor node` live: a drifted node held by a budget of zero names the budget and stops at
/// KD4101, and what it recorded replays to the same chain; a deleting node names the step its
/// deletion is held at and stops at KD4102; a node Karpenter does not manage, or a bad name, is
/// exit 2 with one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_chains_name_what_holds_a_node() {
    let _quiet = LOAD.read().await;
    let dir = scratch("live-node");
    let record = dir.join("node.json");
    let record_arg = record.display().to_string();
    let kubeconfig = dir.join("kubeconfig");
    let kc = kubeconfig.display().to_string();
    let steps_of = |chain: &serde_json::Value| -> Vec<(String, String)> {
        chain["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["step"].as_str().unwrap().to_string(),
                    s["state"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };

    let bundle = read_json(&fixture_bundle("drift-frozen-by-zero-budget"));
    let (emulator, server) = serve(&bundle).await;
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let env = live_env(&kc, &emulator.url);
    let node = "ip-10-7-11-51.us-west-2.compute.internal";
    let out = tokio::task::block_in_place(|| {
        karpdoctor(&["node", node, "-o", "json", "--record", &record_arg], &env)
    });
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(live["kind"], "NodeChains");
    let chain = &live["nodes"][0];
    assert_eq!(chain["nodeClaim"], "default-dr00");
    let steps = steps_of(chain);
    let names: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "nodeclaim",
            "launched",
            "registered",
            "initialized",
            "budgets",
            "candidate",
            "held by"
        ],
        "{chain}"
    );
    assert_eq!(steps[6].1, "failed");
    let held = chain["steps"][6]["detail"].as_str().unwrap();
    assert!(
        held.contains("allows no Drifted disruption, at any time"),
        "{held}"
    );
    let budgets = chain["steps"][4]["detail"].as_str().unwrap();
    assert!(
        budgets
            .starts_with("Empty: 1 at a time; Underutilized: 1 at a time; Drifted: 0, at any time"),
        "{budgets}"
    );
    assert_eq!(chain["owner"]["code"], "KD4101");
    assert_eq!(chain["owner"]["status"], "fail");
    let replayed = karpdoctor(
        &[
            "node",
            "default-dr00",
            "-o",
            "json",
            "--replay",
            &record_arg,
        ],
        &[],
    );
    assert_eq!(replayed.status.code(), Some(1));
    let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(replayed["nodes"], live["nodes"]);
    // Text names the owner; bad input and a node Karpenter does not manage: exit 2, one line.
    let text = tokio::task::block_in_place(|| karpdoctor(&["node", node], &env));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("stops here: KD4101 disruption-blocked"),
        "{text}"
    );
    for args in [
        &["node", "ip-10-0-0-1.ec2.internal"][..],
        &["node", "a/b"][..],
    ] {
        let out = tokio::task::block_in_place(|| karpdoctor(args, &env));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
    }

    // A node deleting for three hours behind a do-not-disrupt pod: the deletion's step.
    let bundle = read_json(&fixture_bundle("expired-node-held-by-do-not-disrupt-pod"));
    let (emulator, server) = serve(&bundle).await;
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let env = live_env(&kc, &emulator.url);
    let out = tokio::task::block_in_place(|| {
        karpdoctor(
            &[
                "node",
                "ip-10-7-40-17.us-west-2.compute.internal",
                "-o",
                "json",
            ],
            &env,
        )
    });
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chain: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chain = &chain["nodes"][0];
    let steps = steps_of(chain);
    assert_eq!(
        steps[4],
        ("deleting".to_string(), "failed".to_string()),
        "{chain}"
    );
    assert_eq!(steps[5].0, "held by", "{chain}");
    assert!(
        chain["steps"][5]["detail"]
            .as_str()
            .unwrap()
            .contains("do-not-disrupt"),
        "{chain}"
    );
    assert_eq!(chain["owner"]["code"], "KD4102");
}

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
            "KD3006", "KD3008", "KD4001", "KD4002", "KD4004", "KD4005", "KD4101", "KD4102",
            "KD4103", "KD4104", "KD5007", "KD5008", "KD6001", "KD6002", "KD6003", "KD6004",
            "KD6006", "KD6007", "KD6008", "KD7003", "KD8001", "KD8002", "KD8003", "KD9001"
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

/// `pre-install --cluster …` for a bundle recorded by `pre-install`, nothing otherwise.
fn mode_args(bundle: &serde_json::Value) -> Vec<&str> {
    if bundle["hints"]["preInstall"] == true {
        let mut args = vec![
            "pre-install",
            "--cluster",
            bundle["hints"]["cluster"].as_str().unwrap(),
        ];
        if let Some(v) = bundle["hints"]["karpenterVersion"].as_str() {
            args.extend(["--karpenter-version", v]);
        }
        args
    } else {
        Vec::new()
    }
}

/// Not a test: regenerates `fixtures/*/simulations.json`, the IAM simulation results of each
/// scenario, by running karpdoctor live against the emulator seeded from the bundle's
/// `emulator` section (policies, boundaries, SCPs). Run through `scripts/record-simulations`,
/// which then rebuilds the bundles; the live test above proves the result replays the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "regenerates fixtures; run scripts/record-simulations"]
async fn record_simulations() {
    let emulator = Emulator::start();
    let dir = scratch("record-simulations");
    // KARPDOCTOR_RECORD_ONLY=a,b re-records only those fixtures (a scenario being written).
    let only = std::env::var("KARPDOCTOR_RECORD_ONLY").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|list| list.split(',').any(|n| n.trim() == name))
    };
    for name in fixture_names().into_iter().filter(|n| wanted(n)) {
        let bundle = read_json(&fixture_bundle(&name));
        seed_aws(&emulator.url, &bundle).await;
        let server = TestServer::start(Cluster::from_bundle(&bundle), 0, std::time::Duration::ZERO)
            .await
            .expect("test API server");
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
        let rec = dir.join(format!("{name}.json")).display().to_string();
        let kc = kubeconfig.display().to_string();
        let mut args = mode_args(&bundle);
        args.extend(["--region", "us-west-2", "-o", "json", "--record", &rec]);
        let caller = caller_env(&emulator.url, &bundle).await;
        let mut env = live_env(&kc, &emulator.url);
        env.extend(caller.iter().map(|(k, v)| (*k, v.as_str())));
        let out = tokio::task::block_in_place(|| karpdoctor(&args, &env));
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let recorded = read_json(std::path::Path::new(&rec));
        let sims: Vec<serde_json::Value> = recorded["facts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["fact"].get("simulation").is_some())
            .cloned()
            .collect();
        let out = root().join("fixtures").join(&name).join("simulations.json");
        if sims.is_empty() {
            let _ = std::fs::remove_file(&out);
        } else {
            let text = serde_json::to_string_pretty(&sims).unwrap();
            std::fs::write(&out, format!("{text}\n")).unwrap();
        }
    }
}

/// An emulator seeded with the bundle's AWS state and a test API server holding its cluster.
async fn serve(bundle: &serde_json::Value) -> (Emulator, TestServer) {
    let emulator = Emulator::start();
    seed_aws(&emulator.url, bundle).await;
    let server = TestServer::start(Cluster::from_bundle(bundle), 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    (emulator, server)
}

fn run_live(
    server: &TestServer,
    emulator: &Emulator,
    dir: &std::path::Path,
    args: &[&str],
    extra: &[(&str, &str)],
) -> serde_json::Value {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();
    let mut env = live_env(&kc, &emulator.url);
    env.extend_from_slice(extra);
    let out = tokio::task::block_in_place(|| karpdoctor(args, &env));
    parse(&out)
}

fn cluster_of(fixtures: &[&str]) -> Cluster {
    let mut merged = Cluster::from_bundle(&read_json(&fixture_bundle(fixtures[0])));
    for name in &fixtures[1..] {
        let other = Cluster::from_bundle(&read_json(&fixture_bundle(name)));
        // Take the other scenario's Karpenter objects, keep the first one's controller.
        merged
            .objects
            .retain(|o| !matches!(o["kind"].as_str(), Some("NodePool" | "EC2NodeClass")));
        merged.objects.extend(
            other
                .objects
                .into_iter()
                .filter(|o| matches!(o["kind"].as_str(), Some("NodePool" | "EC2NodeClass"))),
        );
    }
    merged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_marks_new_ongoing_and_resolved_across_three_runs() {
    let emulator = Emulator::start();
    let dir = scratch("live-history");
    let history = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "karpdoctor-history", "namespace": "karpdoctor", "resourceVersion": "1"},
        "data": {}
    });
    let with_history = |mut c: Cluster| {
        c.objects.push(history.clone());
        c.writable
            .insert((String::new(), "v1".into(), "configmaps".into()));
        c
    };
    seed_aws(
        &emulator.url,
        &read_json(&fixture_bundle("controller-crashloop")),
    )
    .await;
    let server = TestServer::start(
        with_history(cluster_of(&["controller-crashloop"])),
        0,
        std::time::Duration::ZERO,
    )
    .await
    .unwrap();
    let args = ["-o", "json", "--history", "configmap/karpdoctor-history"];
    let ns = [("KARPDOCTOR_NAMESPACE", "karpdoctor")];
    let states = |r: &serde_json::Value| -> Vec<(String, String, String)> {
        let mut v: Vec<_> = r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["findings"].as_array().unwrap().iter())
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_string(),
                    f["object"].as_str().unwrap().to_string(),
                    f["history"].as_str().unwrap_or("-").to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };

    // Run 1: the controller crash-loops. Both pods are new findings, and so is the
    // credentials error its log repeats (KD1009).
    let r1 = run_live(&server, &emulator, &dir, &args, &ns);
    assert!(
        r1["errors"].as_array().unwrap().is_empty(),
        "{}",
        r1["errors"]
    );
    assert!(
        states(&r1)
            .iter()
            .all(|(c, _, h)| (c == "KD1001" || c == "KD1009") && h == "new"),
        "{:?}",
        states(&r1)
    );
    let stored = server
        .object("ConfigMap", "karpdoctor", "karpdoctor-history")
        .unwrap();
    assert!(
        stored["data"]["last-run.json"]
            .as_str()
            .unwrap()
            .contains("KD1001")
    );

    // Run 2: still crash-looping, and a NodePool now points at a missing class.
    server.replace_cluster(cluster_of(&[
        "controller-crashloop",
        "nodeclassref-invalid",
    ]));
    let r2 = run_live(&server, &emulator, &dir, &args, &ns);
    let s2 = states(&r2);
    assert!(
        s2.iter()
            .filter(|(c, _, _)| c == "KD1001")
            .all(|(_, _, h)| h == "ongoing"),
        "{s2:?}"
    );
    assert!(
        s2.iter()
            .filter(|(c, _, _)| c == "KD4001")
            .all(|(_, _, h)| h == "new")
            && s2.iter().any(|(c, _, _)| c == "KD4001"),
        "{s2:?}"
    );
    let first_seen = r2["checks"][0]["findings"][0]["firstSeen"].clone();
    assert_eq!(
        first_seen, r1["startedAt"],
        "ongoing findings keep the time they were first seen"
    );

    // Run 3: the controller is fixed; the NodePool problem remains.
    server.replace_cluster(cluster_of(&["nodeclassref-invalid"]));
    let r3 = run_live(&server, &emulator, &dir, &args, &ns);
    let s3 = states(&r3);
    assert!(
        s3.iter().all(|(c, _, h)| c == "KD4001" && h == "ongoing"),
        "{s3:?}"
    );
    let resolved: Vec<&str> = r3["resolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(resolved, ["KD1001", "KD1001", "KD1009"]);
    // Only the history ConfigMap was ever written.
    for s in server
        .seen()
        .iter()
        .filter(|s| s.method != "GET" && !s.path.ends_with("/selfsubjectaccessreviews"))
    {
        assert_eq!(
            (s.method.as_str(), s.path.as_str()),
            (
                "PUT",
                "/api/v1/namespaces/karpdoctor/configmaps/karpdoctor-history"
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_controller_env_never_reach_a_bundle_or_report() {
    let emulator = Emulator::start();
    let dir = scratch("live-env-scrub");
    seed_aws(&emulator.url, &read_json(&fixture_bundle("healthy"))).await;
    let mut cluster = Cluster::from_bundle(&read_json(&fixture_bundle("healthy")));
    for o in cluster
        .objects
        .iter_mut()
        .filter(|o| o["kind"] == "Deployment" || o["kind"] == "Pod")
    {
        let containers = if o["kind"] == "Deployment" {
            &mut o["spec"]["template"]["spec"]["containers"]
        } else {
            &mut o["spec"]["containers"]
        };
        let secret = serde_json::json!({"name": "AWS_SECRET_ACCESS_KEY", "value": "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"});
        let env = &mut containers[0]["env"];
        if !env.is_array() {
            *env = serde_json::json!([]);
        }
        env.as_array_mut().unwrap().push(secret);
        o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = serde_json::json!(
            "{\"env\":[{\"name\":\"DB_PASSWORD\",\"value\":\"hunter2-EXAMPLE\"}]}"
        );
    }
    let server = TestServer::start(cluster, 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    let bundle = dir.join("bundle.json");
    let rec = bundle.display().to_string();
    let report = run_live(
        &server,
        &emulator,
        &dir,
        &["-o", "json", "--record", &rec],
        &[],
    );
    let recorded = std::fs::read_to_string(&bundle).unwrap();
    for secret in ["wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY", "hunter2-EXAMPLE"] {
        assert!(!recorded.contains(secret), "the bundle kept a secret");
        assert!(
            !report.to_string().contains(secret),
            "the report shows a secret"
        );
    }
    assert!(
        recorded.contains("CLUSTER_NAME"),
        "documented settings are kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_each_permission_leaves_only_the_checks_that_need_it_unknown() {
    let _load = LOAD.read().await;
    use std::collections::BTreeSet;

    use karpdoctor::permissions::for_checks;
    use karpdoctor::registry::CHECKS;
    let dir = scratch("live-permissions");
    let perms = for_checks(CHECKS);
    let declares = |code: &str, permission: &str| {
        perms
            .per_check
            .iter()
            .any(|(c, p)| *c == code && p.iter().any(|x| x == permission))
    };
    let status_of = |r: &serde_json::Value, code: &str| {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["code"] == code)
            .unwrap()["status"]
            .clone()
    };
    // Permissions that made some check unknown, over all scenarios.
    let mut exercised: BTreeSet<String> = BTreeSet::new();
    let check_all = |exercised: &mut BTreeSet<String>,
                     report: &serde_json::Value,
                     baseline: &serde_json::Value,
                     permission: &str,
                     forbidden_with_it: &[String]| {
        for c in report["checks"].as_array().unwrap() {
            let code = c["code"].as_str().unwrap();
            // One forbidden resource removes each of its verbs (`get nodes` and `list nodes`):
            // a check unknown for the other verb is that verb's concern.
            if c["status"] == "unknown"
                && c["missingPermission"] != permission
                && forbidden_with_it
                    .iter()
                    .any(|p| c["missingPermission"] == p.as_str())
            {
                continue;
            }
            // A read that only adds evidence (Context::enrich) leaves the verdict alone and
            // names the missing permission in the finding's evidence instead.
            let in_evidence = c["findings"].as_array().unwrap().iter().any(|f| {
                f["evidence"].as_object().unwrap().values().any(|v| {
                    v.as_str()
                        .is_some_and(|s| s.contains(&format!("lacks permission {permission}")))
                })
            });
            if in_evidence {
                assert!(
                    declares(code, permission),
                    "{code} names {permission} in its evidence, which it does not declare"
                );
                exercised.insert(permission.to_string());
            }
            if c["status"] == "unknown" && c["missingPermission"] == permission {
                assert!(
                    declares(code, permission),
                    "{code} is unknown for {permission}, which it does not declare"
                );
                exercised.insert(permission.to_string());
            } else {
                // A check that did not need the permission here judges exactly as before.
                assert_eq!(
                    c["status"],
                    status_of(baseline, code),
                    "without {permission}, {code} changed: {c}"
                );
            }
        }
    };
    // Between them these scenarios issue every operation: IRSA and Pod Identity associations
    // (both-irsa…), the Pod Identity path with its add-on, agent pods and nodes, and (for the
    // permissions not exercised yet only, to bound the time) AMI ids with an instance profile,
    // NodeClaims read as evidence of an unmapped node role, and a customer managed EBS key.
    let scenarios = [
        ("both-irsa-and-pod-identity", true),
        ("healthy-pod-identity", true),
        ("ami-id-from-other-region", false),
        ("node-role-missing-from-aws-auth", false),
        ("ebs-cmk-unusable", false),
        // Services behind webhooks, Fargate profiles of a Pending controller, and the queue
        // listing of a missing interruption queue.
        ("stale-webhooks", false),
        ("controller-on-fargate-pending", false),
        ("interruption-queue-missing", false),
        // A custom AMI whose snapshot is encrypted (the snapshot read).
        ("ami-snapshot-cmk-unusable", false),
        // The private endpoint: the VPC's DNS attributes and its endpoints.
        ("healthy-private-cluster-isolated-vpc", false),
        // A pending pod with a bound volume: DaemonSets, claims, volumes, StorageClasses and
        // pod events.
        ("pending-volume-in-zone-without-subnet", false),
        // A pending pod with a zone spread: the bound pods it selects and the nodes' zones.
        ("pending-spread-zone-without-subnet", false),
    ];
    for (name, every) in scenarios {
        let wanted = |exercised: &BTreeSet<String>, p: &str| every || !exercised.contains(p);
        let bundle = read_json(&fixture_bundle(name));
        let emulator = Emulator::start();
        seed_aws(&emulator.url, &bundle).await;
        let server = TestServer::start(Cluster::from_bundle(&bundle), 0, std::time::Duration::ZERO)
            .await
            .unwrap();
        let baseline = run_live(&server, &emulator, &dir, &["-o", "json"], &[]);
        // Kubernetes: forbid one resource at a time (every resource karpdoctor reads is served at v1).
        for ((group, resource), verbs) in &perms.kube {
            let permissions: Vec<String> = verbs
                .iter()
                .map(|verb| {
                    if group.is_empty() {
                        format!("{verb} {resource}")
                    } else {
                        format!("{verb} {resource}.{group}")
                    }
                })
                .collect();
            if !permissions.iter().any(|p| wanted(&exercised, p)) {
                continue;
            }
            let mut cluster = Cluster::from_bundle(&bundle);
            cluster
                .forbidden
                .insert((group.clone(), "v1".to_string(), resource.clone()));
            let forbidding = TestServer::start(cluster, 0, std::time::Duration::ZERO)
                .await
                .unwrap();
            let report = run_live(&forbidding, &emulator, &dir, &["-o", "json"], &[]);
            for permission in &permissions {
                check_all(&mut exercised, &report, &baseline, permission, &permissions);
            }
        }
        // AWS: deny one action at a time in the emulator itself (seeded once; the denial is
        // switched between runs, and nothing karpdoctor does writes to it).
        for action in &perms.aws {
            if !wanted(&exercised, action) {
                continue;
            }
            deny_actions(&emulator.url, &[action.as_str()]);
            let report = run_live(&server, &emulator, &dir, &["-o", "json"], &[]);
            deny_actions(&emulator.url, &[]);
            check_all(&mut exercised, &report, &baseline, action, &[]);
        }
    }
    // Every permission a check declares made some check unknown somewhere (the run's own
    // permissions, such as sts:GetCallerIdentity, only ever produce a note).
    let run_only: BTreeSet<&String> = perms
        .per_check
        .iter()
        .filter(|(c, _)| *c == "run")
        .flat_map(|(_, p)| p)
        .collect();
    for (code, permissions) in perms.per_check.iter().filter(|(c, _)| *c != "run") {
        for p in permissions.iter().filter(|p| !run_only.contains(p)) {
            assert!(
                exercised.contains(p),
                "removing {p} never made a check unknown ({code} declares it)"
            );
        }
    }
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

/// What `seed_aws` builds from a bundle: its emulator settings, its target and its AWS facts
/// (never a Kubernetes fact), as one comparable text.
fn aws_state(bundle: &serde_json::Value) -> String {
    let aws: Vec<&serde_json::Value> = bundle["facts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            serde_json::from_value::<FactKey>(f["fact"].clone())
                .map_or(true, |k| k.kind().service() != ApiService::Kubernetes)
        })
        .collect();
    serde_json::json!([bundle["emulator"], bundle["target"], aws]).to_string()
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
