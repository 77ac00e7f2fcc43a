//! The live path, as users run it: the karpdoctor binary, through kube-rs and the real AWS
//! SDK over HTTP, against the Kubernetes test API server and the AWS emulator on 127.0.0.1.
//! Every fixture scenario runs live and must reach the same verdicts as its replay; a live
//! run's `--record` must replay to the same verdicts; and the operations issued across the
//! suite are listed in `tests/live-operations.txt`, so a new API call shows up in review.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../support/mod.rs"]
mod support;

mod chains;
mod history;
mod transport;

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
        // A scenario recorded with `--history` runs with it, against the ConfigMap that the
        // test API server holds its churn record in.
        let history = bundle["hints"]["history"]
            .as_str()
            .and_then(|h| h.split_once('/'))
            .map(|(ns, cm)| (ns.to_string(), format!("configmap/{cm}")));
        if let Some((_, cm)) = &history {
            args.extend(["--history", cm]);
        }
        let caller = caller_env(&emulator.url, &bundle).await;
        let mut env = live_env(&kc, &emulator.url);
        env.extend(caller.iter().map(|(k, v)| (*k, v.as_str())));
        if let Some((ns, _)) = &history {
            env.push(("KARPDOCTOR_NAMESPACE", ns));
        }
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
        // On a disagreement, the live run's reasons for the checks that could not conclude.
        let reasons: Vec<String> = live_json["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"] == "unknown")
            .map(|c| format!("{}: {}", c["code"], c["reason"]))
            .collect();
        assert_eq!(
            verdicts(&live_json),
            verdicts(&replay_json),
            "{name}: live and replay disagree; live unknowns: {reasons:?}"
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
            let label = fact["fact"].as_str().unwrap();
            let shared = calls == Some(0) && label.starts_with("IAM simulation");
            // The churn record is handed over: the run read its ConfigMap itself, through the
            // history store, before the checks.
            let given = calls == Some(0) && label.starts_with("the churn record in ConfigMap");
            assert!(
                given || (rounds.is_some_and(|r| r >= 1) && (calls >= rounds || shared)),
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
        // Nothing but reads (and access reviews, which store nothing) reached the API server,
        // and, with `--history`, the update of its own ConfigMap.
        let own = history.as_ref().map(|(ns, cm)| {
            format!(
                "/api/v1/namespaces/{ns}/configmaps/{}",
                cm.trim_start_matches("configmap/")
            )
        });
        assert!(
            server.seen().iter().all(|s| s.method == "GET"
                || (s.method == "POST" && s.path.ends_with("/selfsubjectaccessreviews"))
                || (s.method == "PUT" && Some(&s.path) == own.as_ref())),
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
    // Of the checks a normal run runs: `pre-install` and `upgrade` have their own.
    let needing: BTreeSet<String> = karpdoctor::registry::CHECKS
        .iter()
        .filter(|c| {
            !matches!(
                c.category,
                karpdoctor::finding::Category::PreInstall | karpdoctor::finding::Category::Upgrade
            )
        })
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

/// `pre-install --cluster …` for a bundle recorded by `pre-install`, `upgrade --to …` for one
/// recorded by `upgrade`, nothing otherwise.
fn mode_args(bundle: &serde_json::Value) -> Vec<&str> {
    if bundle["hints"]["upgrade"] == true {
        let mut args = vec!["upgrade"];
        if let Some(v) = bundle["hints"]["upgradeTo"].as_str() {
            args.extend(["--to", v]);
        }
        if let Some(k) = bundle["hints"]["upgradeKubernetes"].as_str() {
            args.extend(["--kubernetes", k]);
        }
        args
    } else if bundle["hints"]["preInstall"] == true {
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
