//! `karpdoctor pod` and `karpdoctor node` live, and replayed from what they recorded.

use super::*;

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
