//! `karpdoctor pod` and `karpdoctor node` live, and replayed from what they recorded.

use super::*;

/// Runs `args` live against a test API server and emulator serving `fixture`, expecting
/// `code`. The servers are returned to keep them up for the runs that follow.
async fn run_chain(
    fixture: &str,
    kubeconfig: &std::path::Path,
    args: &[&str],
    code: i32,
) -> (serde_json::Value, Emulator, TestServer) {
    let (emulator, server) = serve(&read_json(&fixture_bundle(fixture))).await;
    std::fs::write(kubeconfig, server.kubeconfig()).unwrap();
    let kc = kubeconfig.display().to_string();
    let env = live_env(&kc, &emulator.url);
    let out = tokio::task::block_in_place(|| karpdoctor(args, &env));
    assert_eq!(
        out.status.code(),
        Some(code),
        "{fixture}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        emulator,
        server,
    )
}

/// What a live chain recorded (`args` with `--record`) replays to the same chains (`field`).
fn replays_the_same(args: &[&str], record: &str, field: &str, live: &serde_json::Value) {
    let mut argv = args.to_vec();
    argv.extend(["--replay", record]);
    let out = karpdoctor(&argv, &[]);
    assert_eq!(out.status.code(), Some(1));
    let replayed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replayed[field], live[field]);
}

/// Bad input and an object that does not exist: exit 2 with one line on stderr.
fn refused(argvs: &[&[&str]], env: &[(&str, &str)]) {
    for args in argvs {
        let out = tokio::task::block_in_place(|| karpdoctor(args, env));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{args:?}"
        );
    }
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
    let kubeconfig = dir.join("kubeconfig");
    let kc = kubeconfig.display().to_string();
    let pod_args = ["pod", "shop/web-5d8f7c9b6d-2xkqp", "-o", "json"];
    let mut args = pod_args.to_vec();
    args.extend(["--record", &record_arg]);
    let (live, emulator, _server) = run_chain(
        "pending-nodeselector-undeclared-label",
        &kubeconfig,
        &args,
        1,
    )
    .await;
    let env = live_env(&kc, &emulator.url);
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
    replays_the_same(&pod_args, &record_arg, "pods", &live);
    // A workload by selector: one chain per pod; text names the owner.
    let by_selector =
        tokio::task::block_in_place(|| karpdoctor(&["pod", "shop", "-l", "app=web"], &env));
    let text = String::from_utf8_lossy(&by_selector.stdout);
    assert_eq!(text.matches("stops here: KD8001").count(), 3, "{text}");
    // Bad input and a pod that does not exist: exit 2, one line.
    refused(
        &[
            &["pod", "web-0"],
            &["pod", "shop/nope"],
            &["pod", "shop/web", "-l", "a=b"],
        ],
        &env,
    );

    // Nominated to a NodeClaim launched a minute ago: the chain waits at registration.
    let (chain, _emulator, _server) = run_chain(
        "healthy-pending-nominated-to-launching-nodeclaim",
        &kubeconfig,
        &["pod", "shop/web-5d8f7c9b6d-9qwer", "-o", "json"],
        0,
    )
    .await;
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

    let node = "ip-10-7-11-51.us-west-2.compute.internal";
    let node_args = ["node", node, "-o", "json"];
    let mut args = node_args.to_vec();
    args.extend(["--record", &record_arg]);
    let (live, emulator, _server) =
        run_chain("drift-frozen-by-zero-budget", &kubeconfig, &args, 1).await;
    let env = live_env(&kc, &emulator.url);
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
    replays_the_same(&node_args, &record_arg, "nodes", &live);
    // Text names the owner; bad input and a node Karpenter does not manage: exit 2, one line.
    let text = tokio::task::block_in_place(|| karpdoctor(&["node", node], &env));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("stops here: KD4101 disruption-blocked"),
        "{text}"
    );
    refused(
        &[&["node", "ip-10-0-0-1.ec2.internal"], &["node", "a/b"]],
        &env,
    );

    // A node deleting for three hours behind a do-not-disrupt pod: the deletion's step.
    let (chain, _emulator, _server) = run_chain(
        "expired-node-held-by-do-not-disrupt-pod",
        &kubeconfig,
        &[
            "node",
            "ip-10-7-40-17.us-west-2.compute.internal",
            "-o",
            "json",
        ],
        1,
    )
    .await;
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
