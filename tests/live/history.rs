//! History across runs, secrets kept out of bundles and reports, and each permission's
//! removal leaving only its readers unknown.

use super::*;

/// The document the history ConfigMap holds after a run.
fn kept_history(server: &TestServer) -> serde_json::Value {
    let stored = server
        .object("ConfigMap", "karpdoctor", "karpdoctor-history")
        .unwrap();
    serde_json::from_str(stored["data"]["last-run.json"].as_str().unwrap()).unwrap()
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
    // Each run read the NodeClaims and left its churn sample. The three runs describe the same
    // moment (KARPDOCTOR_NOW), so each replaced the sample of that moment instead of counting
    // the same NodeClaims again; the sample has no earlier one to count creations from.
    let kept = kept_history(&server);
    let churn = kept["churn"].as_array().unwrap();
    assert_eq!(churn.len(), 1, "{kept}");
    assert_eq!(churn[0]["at"], "2026-11-23T10:00:00Z");
    assert!(
        churn[0]["pools"]
            .as_object()
            .unwrap()
            .values()
            .all(|p| p.get("created").is_none()),
        "{kept}"
    );
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

/// The churn record across runs: a run with `--history` judges the record the ConfigMap holds
/// (KD4103's replacement rate), adds its own sample, and a recording of it replays the same
/// verdict without the ConfigMap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_keeps_a_churn_record_that_kd4103_judges_live_and_replayed() {
    let emulator = Emulator::start();
    let dir = scratch("live-churn-history");
    let fixture = read_json(&fixture_bundle("consolidation-churn-over-days"));
    // The record the hourly runs of the last two days left, as the fixture holds it.
    let samples = fixture["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fact"].get("churnHistory").is_some())
        .map(|f| f["value"].clone())
        .unwrap();
    assert_eq!(samples.as_array().unwrap().len(), 48);
    let doc = serde_json::json!({"version": 1, "runAt": "2026-11-23T09:00:00Z", "findings": [], "churn": samples});
    let mut cluster = Cluster::from_bundle(&fixture);
    cluster.objects.push(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "karpdoctor-history", "namespace": "karpdoctor", "resourceVersion": "1"},
        "data": {"last-run.json": doc.to_string()}
    }));
    cluster
        .writable
        .insert((String::new(), "v1".into(), "configmaps".into()));
    seed_aws(&emulator.url, &fixture).await;
    let server = TestServer::start(cluster, 0, std::time::Duration::ZERO)
        .await
        .unwrap();
    let bundle = dir.join("bundle.json");
    let rec = bundle.display().to_string();
    let args = [
        "-o",
        "json",
        "--only",
        "KD4103",
        "--history",
        "configmap/karpdoctor-history",
        "--now",
        "2026-11-23T10:00:00Z",
        "--record",
        &rec,
    ];
    let ns = [("KARPDOCTOR_NAMESPACE", "karpdoctor")];
    let finding = |r: &serde_json::Value| -> serde_json::Value {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["code"] == "KD4103")
            .map(|c| c["findings"][0].clone())
            .unwrap()
    };
    let live = run_live(&server, &emulator, &dir, &args, &ns);
    let f = finding(&live);
    assert_eq!(f["object"], "NodePool/default", "{live}");
    assert!(
        f["evidence"]["replacedOverDays"]
            .as_str()
            .unwrap()
            .starts_with("48 NodeClaim(s) replaced in 48 h over 49 runs"),
        "{f}"
    );
    // The run added its own sample: twelve NodeClaims, one created since 09:00.
    let kept = kept_history(&server);
    let churn = kept["churn"].as_array().unwrap();
    assert_eq!(churn.len(), 49);
    assert_eq!(churn[48]["at"], "2026-11-23T10:00:00Z");
    assert_eq!(
        churn[48]["pools"]["default"],
        serde_json::json!({"size": 12, "created": 1})
    );
    // The recording carries the record it judged, so a replay, with no ConfigMap to read,
    // reaches the same finding.
    let recorded = read_json(&bundle);
    assert_eq!(
        recorded["hints"]["history"],
        "karpdoctor/karpdoctor-history"
    );
    let replayed = karpdoctor(&["-o", "json", "--only", "KD4103", "--replay", &rec], &[]);
    let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
    // The same finding, without the live run's history marks.
    let mut unmarked = f.clone();
    let marks = unmarked.as_object_mut().unwrap();
    marks.remove("history");
    marks.remove("firstSeen");
    assert_eq!(finding(&replayed), unmarked);
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
        // EKS Auto Mode: its NodeClasses and a node role's access policies.
        ("healthy-auto-mode-custom-nodeclass", false),
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
