//! The manifests in `deploy/` parse as the real Kubernetes types, grant only reads (the history
//! ConfigMap excepted, by name), and match what `karpdoctor permissions` derives.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::BTreeSet;
use std::path::Path;

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde::Deserialize;
use serde_json::Value;

const HISTORY: &str = "karpdoctor-history";

/// Every YAML document under deploy/, as (file, kind, JSON).
fn documents() -> Vec<(String, String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
    {
        let text = std::fs::read_to_string(&path).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if v.is_null() {
                continue;
            }
            let kind = v["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: no kind", path.display()))
                .to_string();
            out.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                kind,
                v,
            ));
        }
    }
    out
}

fn typed<T: serde::de::DeserializeOwned>(file: &str, v: &Value) -> T {
    serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{file}: does not parse as a Kubernetes object: {e}"))
}

#[test]
fn every_manifest_parses_as_its_kubernetes_type() {
    let docs = documents();
    assert!(docs.len() >= 8, "{} documents", docs.len());
    for (file, kind, v) in &docs {
        match kind.as_str() {
            "Namespace" => drop(typed::<Namespace>(file, v)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(file, v)),
            "ClusterRole" => drop(typed::<ClusterRole>(file, v)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(file, v)),
            "Role" => drop(typed::<Role>(file, v)),
            "RoleBinding" => drop(typed::<RoleBinding>(file, v)),
            "ConfigMap" => drop(typed::<ConfigMap>(file, v)),
            "CronJob" => drop(typed::<CronJob>(file, v)),
            other => panic!("{file}: unexpected kind {other}"),
        }
    }
}

fn rules() -> Vec<(String, PolicyRule)> {
    let mut out = Vec::new();
    for (file, kind, v) in documents() {
        let rules = match kind.as_str() {
            "ClusterRole" => typed::<ClusterRole>(&file, &v).rules,
            "Role" => typed::<Role>(&file, &v).rules,
            _ => continue,
        };
        out.extend(
            rules
                .unwrap_or_default()
                .into_iter()
                .map(|r| (format!("{file} {kind}"), r)),
        );
    }
    out
}

#[test]
fn rbac_grants_no_write_except_the_named_history_configmap() {
    let rules = rules();
    assert!(!rules.is_empty());
    for (place, rule) in rules {
        let resources = rule.resources.clone().unwrap_or_default();
        assert!(
            !resources.iter().any(|r| r == "*" || r == "secrets"),
            "{place}: {rule:?}"
        );
        assert!(!rule.verbs.iter().any(|v| v == "*"), "{place}: {rule:?}");
        let writes: Vec<&String> = rule
            .verbs
            .iter()
            .filter(|v| !matches!(v.as_str(), "get" | "list" | "watch"))
            .collect();
        if writes.is_empty() {
            continue;
        }
        assert!(
            place.contains("Role") && !place.contains("ClusterRole"),
            "{place}: cluster-wide write {rule:?}"
        );
        assert_eq!(
            resources,
            ["configmaps"],
            "{place}: writes only to configmaps"
        );
        assert_eq!(
            rule.resource_names.as_deref(),
            Some(&[HISTORY.to_string()][..]),
            "{place}: scoped by name"
        );
        assert_eq!(
            writes,
            ["update"],
            "{place}: only update (create cannot be scoped by name)"
        );
    }
}

#[test]
fn cluster_role_and_iam_policy_equal_what_karpdoctor_derives() {
    let derived = karpdoctor::permissions::for_checks(karpdoctor::registry::CHECKS);
    let (file, _, role) = documents()
        .into_iter()
        .find(|(_, k, _)| k == "ClusterRole")
        .expect("a ClusterRole");
    assert_eq!(
        typed::<ClusterRole>(&file, &role),
        derived.cluster_role(),
        "deploy/{file} differs: regenerate it with `karpdoctor permissions -o yaml`"
    );
    let policy: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/iam-policy.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        policy,
        derived.iam_policy(),
        "deploy/iam-policy.json differs: regenerate it with `karpdoctor permissions -o json`"
    );
}

#[test]
fn cronjob_is_safe_to_schedule() {
    let (file, _, v) = documents()
        .into_iter()
        .find(|(_, k, _)| k == "CronJob")
        .expect("a CronJob");
    let cj: CronJob = typed(&file, &v);
    let spec = cj.spec.expect("spec");
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    let job = spec.job_template.spec.expect("job spec");
    assert!(job.active_deadline_seconds.is_some_and(|s| s > 0));
    assert!(job.backoff_limit.is_some());
    let pod = job.template.spec.expect("pod spec");
    assert_eq!(pod.service_account_name.as_deref(), Some("karpdoctor"));
    assert_eq!(
        pod.security_context
            .as_ref()
            .and_then(|s| s.run_as_non_root),
        Some(true)
    );
    let c = &pod.containers[0];
    let sc = c
        .security_context
        .as_ref()
        .expect("container securityContext");
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    let res = c.resources.as_ref().expect("resources");
    assert!(res.requests.is_some() && res.limits.is_some());
    let args = c.args.clone().unwrap_or_default();
    assert!(args.contains(&"--output=json".to_string()), "{args:?}");
    assert!(
        args.contains(&format!("--history=configmap/{HISTORY}")),
        "{args:?}"
    );
    // The job's arguments are valid karpdoctor options.
    let mut argv = vec!["karpdoctor".to_string()];
    argv.extend(args);
    <karpdoctor::cli::Cli as clap::Parser>::try_parse_from(&argv).expect("CronJob args parse");
}

#[test]
fn both_service_account_variants_exist() {
    let accounts: Vec<(String, ServiceAccount)> = documents()
        .into_iter()
        .filter(|(_, k, _)| k == "ServiceAccount")
        .map(|(f, _, v)| (f.clone(), typed(&f, &v)))
        .collect();
    let files: BTreeSet<&str> = accounts.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "serviceaccount-irsa.yaml",
            "serviceaccount-pod-identity.yaml"
        ])
    );
    let irsa = &accounts.iter().find(|(f, _)| f.contains("irsa")).unwrap().1;
    assert!(
        irsa.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("eks.amazonaws.com/role-arn"))
    );
}
