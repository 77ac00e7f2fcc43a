//! The manifests in `deploy/` parse as the real Kubernetes types (the PrometheusRule, a CRD, as
//! the fields Prometheus Operator requires), grant only reads (the history ConfigMap excepted,
//! by name), and match what `karpdoctor permissions` derives. `tests/prometheus.rs` runs
//! promtool on the rules.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::{BTreeMap, BTreeSet};
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

/// A `monitoring.coreos.com/v1` PrometheusRule, as far as Prometheus Operator reads it: a
/// misspelt field is an error, not a rule that silently never fires.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PrometheusRule {
    api_version: String,
    kind: String,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: RuleSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    groups: Vec<RuleGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleGroup {
    name: String,
    #[serde(default)]
    interval: Option<String>,
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    #[serde(default)]
    alert: Option<String>,
    #[serde(default)]
    record: Option<String>,
    expr: String,
    #[serde(default, rename = "for")]
    for_: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

fn prometheus_rule(file: &str, v: &Value) -> PrometheusRule {
    let rule: PrometheusRule = typed(file, v);
    assert_eq!(rule.api_version, "monitoring.coreos.com/v1", "{file}");
    assert_eq!(rule.kind, "PrometheusRule", "{file}");
    assert!(rule.metadata.name.is_some(), "{file}: metadata.name");
    assert!(!rule.spec.groups.is_empty(), "{file}: no rule group");
    for group in &rule.spec.groups {
        assert!(
            !group.name.is_empty() && !group.rules.is_empty(),
            "{file}: {group:?}"
        );
        assert!(group.interval.as_deref().is_none_or(|i| !i.is_empty()));
        for r in &group.rules {
            assert!(
                r.alert.is_some() != r.record.is_some(),
                "{file}: a rule is an alert or a recording rule: {r:?}"
            );
            assert!(!r.expr.trim().is_empty(), "{file}: {r:?}");
            if r.alert.is_some() {
                assert!(
                    r.annotations.contains_key("summary") && r.labels.contains_key("severity"),
                    "{file}: an alert says what happened and how bad: {r:?}"
                );
            }
        }
    }
    rule
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
            "PrometheusRule" => drop(prometheus_rule(file, v)),
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

/// Every CronJob variant (`cronjob.yaml`, `cronjob-pushgateway.yaml`) is safe to schedule.
fn cronjobs() -> Vec<(String, CronJob)> {
    documents()
        .into_iter()
        .filter(|(_, k, _)| k == "CronJob")
        .map(|(f, _, v)| (f.clone(), typed(&f, &v)))
        .collect()
}

/// The arguments of a CronJob's karpdoctor container, parsed as karpdoctor parses them.
fn cronjob_args(file: &str, cj: &CronJob) -> karpdoctor::cli::Cli {
    let pod = cj
        .spec
        .as_ref()
        .and_then(|s| s.job_template.spec.as_ref())
        .and_then(|j| j.template.spec.as_ref())
        .unwrap_or_else(|| panic!("{file}: pod spec"));
    let mut argv = vec!["karpdoctor".to_string()];
    argv.extend(pod.containers[0].args.clone().unwrap_or_default());
    <karpdoctor::cli::Cli as clap::Parser>::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("{file}: CronJob args do not parse: {e}"))
}

#[test]
fn cronjob_is_safe_to_schedule() {
    let cronjobs = cronjobs();
    let files: BTreeSet<&str> = cronjobs.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        BTreeSet::from(["cronjob-pushgateway.yaml", "cronjob.yaml"])
    );
    for (file, cj) in &cronjobs {
        let spec = cj.spec.as_ref().expect("spec");
        assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"), "{file}");
        let job = spec.job_template.spec.as_ref().expect("job spec");
        assert!(job.active_deadline_seconds.is_some_and(|s| s > 0), "{file}");
        assert!(job.backoff_limit.is_some(), "{file}");
        let pod = job.template.spec.as_ref().expect("pod spec");
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("karpdoctor"),
            "{file}"
        );
        assert_eq!(
            pod.security_context
                .as_ref()
                .and_then(|s| s.run_as_non_root),
            Some(true),
            "{file}"
        );
        let c = &pod.containers[0];
        let sc = c
            .security_context
            .as_ref()
            .expect("container securityContext");
        assert_eq!(sc.read_only_root_filesystem, Some(true), "{file}");
        assert_eq!(sc.allow_privilege_escalation, Some(false), "{file}");
        let res = c.resources.as_ref().expect("resources");
        assert!(res.requests.is_some() && res.limits.is_some(), "{file}");
        let args = c.args.clone().unwrap_or_default();
        assert!(
            args.contains(&"--output=json".to_string()),
            "{file}: {args:?}"
        );
        assert!(
            args.contains(&format!("--history=configmap/{HISTORY}")),
            "{file}: {args:?}"
        );
        // The job's arguments are valid karpdoctor options.
        cronjob_args(file, cj);
    }
}

#[test]
fn the_pushgateway_cronjob_pushes_and_differs_from_the_plain_one_only_there() {
    let cronjobs = cronjobs();
    let find = |name: &str| {
        &cronjobs
            .iter()
            .find(|(f, _)| f == name)
            .unwrap_or_else(|| panic!("deploy/{name}"))
            .1
    };
    let (plain, pushing) = (find("cronjob.yaml"), find("cronjob-pushgateway.yaml"));
    // The CronJobs run `karpdoctor check …`.
    let gateway = |cli: karpdoctor::cli::Cli| match cli.command {
        Some(karpdoctor::cli::Command::Check(args)) => args.report.pushgateway,
        other => panic!("not a check run: {other:?}"),
    };
    let url = gateway(cronjob_args("cronjob-pushgateway.yaml", pushing));
    assert!(url.is_some(), "--pushgateway is set");
    assert!(gateway(cronjob_args("cronjob.yaml", plain)).is_none());
    // Apart from that one argument, the variant is the same Job (one replaces the other).
    let mut without: Value = serde_json::to_value(pushing).unwrap();
    let args = without["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array_mut()
        .unwrap();
    args.retain(|a| !a.as_str().unwrap().starts_with("--pushgateway"));
    assert_eq!(without, serde_json::to_value(plain).unwrap());
}

#[test]
fn the_prometheus_rule_alerts_on_errors_on_down_and_on_silence() {
    let (file, _, v) = documents()
        .into_iter()
        .find(|(_, k, _)| k == "PrometheusRule")
        .expect("a PrometheusRule");
    let rule = prometheus_rule(&file, &v);
    let alerts: BTreeMap<String, &Rule> = rule
        .spec
        .groups
        .iter()
        .flat_map(|g| &g.rules)
        .filter_map(|r| Some((r.alert.clone()?, r)))
        .collect();
    let errors = &alerts["KarpdoctorErrorFinding"];
    assert_eq!(errors.expr, r#"karpdoctor_findings{severity="error"} > 0"#);
    assert_eq!(errors.for_.as_deref(), Some("1h"));
    assert_eq!(alerts["KarpdoctorDown"].expr, "karpdoctor_up == 0");
    assert!(
        alerts["KarpdoctorNotReporting"]
            .expr
            .contains("time() - karpdoctor_last_run_timestamp_seconds >")
    );
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
