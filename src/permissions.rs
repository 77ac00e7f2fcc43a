//! The permissions karpdoctor needs, derived from the facts the selected checks declare
//! (`FactKind::operations`): the same table the read-only guard enforces, so the policy users
//! grant and the requests karpdoctor sends cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use crate::check::CheckInfo;
use crate::facts::{ApiOp, FactKind};

/// What a set of checks needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    /// `(api group, resource)` → verbs.
    pub kube: BTreeMap<(String, String), BTreeSet<String>>,
    /// `(api group, resource)` → the only object names read, for resources every operation
    /// reads by one name (`resourceNames`); absent when any operation reads the whole resource.
    pub kube_names: BTreeMap<(String, String), BTreeSet<String>>,
    /// IAM actions (`sts:GetCallerIdentity`).
    pub aws: BTreeSet<String>,
    /// Per check (and `run` for the run itself): the permissions without which it is `unknown`.
    pub per_check: Vec<(&'static str, Vec<String>)>,
}

/// The name of karpdoctor's ClusterRole in `deploy/`.
pub const CLUSTER_ROLE: &str = "karpdoctor";

/// What every run reads besides its checks' facts: the header and target discovery (the
/// controller Deployment, karpdoctor's own AWS identity) and, when a check talks to AWS, the
/// EKS cluster that proves `--cluster` and `--region` right. Access reviews need no RBAC.
pub fn run_needs(checks: &[&'static CheckInfo]) -> Vec<FactKind> {
    let mut kinds = vec![FactKind::ControllerDeployments, FactKind::CallerIdentity];
    let needs_aws = checks
        .iter()
        .flat_map(|c| c.needs.iter())
        .flat_map(|k| k.operations())
        .any(|op| matches!(op, ApiOp::Aws { .. }));
    if needs_aws {
        kinds.push(FactKind::EksCluster);
    }
    kinds
}

pub fn for_checks(checks: &[&'static CheckInfo]) -> Permissions {
    let mut p = Permissions::default();
    // Resources some operation reads without a name: no `resourceNames` for them.
    let mut unnamed = BTreeSet::new();
    let run = run_needs(checks);
    let entries =
        std::iter::once(("run", run.as_slice())).chain(checks.iter().map(|c| (c.code, c.needs)));
    for (code, needs) in entries {
        let mut mine = BTreeSet::new();
        for op in needs.iter().flat_map(|k| k.operations()) {
            mine.insert(op.to_string());
            match op {
                ApiOp::Kube {
                    verb,
                    group,
                    resource,
                    name,
                } => {
                    let key = (group.to_string(), resource.to_string());
                    p.kube
                        .entry(key.clone())
                        .or_default()
                        .insert(verb.to_string());
                    match name {
                        Some(n) => {
                            p.kube_names.entry(key).or_default().insert(n.to_string());
                        }
                        None => {
                            unnamed.insert(key);
                        }
                    }
                }
                ApiOp::Aws { service, action } => {
                    p.aws.insert(format!("{service}:{action}"));
                }
            }
        }
        p.per_check.push((code, mine.into_iter().collect()));
    }
    p.kube_names.retain(|key, _| !unnamed.contains(key));
    p
}

impl Permissions {
    /// The IAM policy document: every action on `*` (the read actions karpdoctor calls either
    /// support no resource scoping or are scoped by the account it runs in).
    pub fn iam_policy(&self) -> serde_json::Value {
        json!({
            "Version": "2012-10-17",
            "Statement": [{
                "Sid": "KarpdoctorReadOnly",
                "Effect": "Allow",
                "Action": self.aws.iter().collect::<Vec<_>>(),
                "Resource": "*",
            }],
        })
    }

    /// The ClusterRole: only the verbs the facts use (get, list), never Secrets.
    pub fn cluster_role(&self) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(CLUSTER_ROLE.to_string()),
                labels: Some(
                    [(
                        "app.kubernetes.io/name".to_string(),
                        "karpdoctor".to_string(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(
                self.kube
                    .iter()
                    .map(|((group, resource), verbs)| PolicyRule {
                        api_groups: Some(vec![group.clone()]),
                        resources: Some(vec![resource.clone()]),
                        resource_names: self
                            .kube_names
                            .get(&(group.clone(), resource.clone()))
                            .map(|names| names.iter().cloned().collect()),
                        verbs: verbs.iter().cloned().collect(),
                        ..PolicyRule::default()
                    })
                    .collect(),
            ),
            ..ClusterRole::default()
        }
    }

    pub fn iam_policy_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.iam_policy()).unwrap_or_default();
        s.push('\n');
        s
    }

    pub fn cluster_role_yaml(&self) -> String {
        serde_norway::to_string(&self.cluster_role()).unwrap_or_default()
    }

    pub fn text(&self) -> String {
        let mut out = String::from("Kubernetes (ClusterRole rules):\n");
        for (key @ (group, resource), verbs) in &self.kube {
            let names = self.kube_names.get(key);
            let group = if group.is_empty() {
                "\"\" (core)"
            } else {
                group
            };
            let verbs: Vec<&str> = verbs.iter().map(String::as_str).collect();
            let resource = match names {
                Some(names) => format!(
                    "{resource} ({})",
                    names.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => resource.clone(),
            };
            out.push_str(&format!(
                "  {resource:<28} {group:<28} {}\n",
                verbs.join(", ")
            ));
        }
        out.push_str("\nAWS (IAM actions, Resource \"*\"):\n");
        for a in &self.aws {
            out.push_str(&format!("  {a}\n"));
        }
        out.push_str("\nWithout a permission, the checks that need it report `unknown`:\n");
        for (code, perms) in &self.per_check {
            let code = if *code == "run" { "(run)" } else { code };
            out.push_str(&format!("  {code:<7} {}\n", perms.join(", ")));
        }
        out.push_str("  (run) is the report header and target discovery: without it the report lacks the\n  Karpenter namespace or the AWS identity, and no check fails because of it.\n");
        out.push_str("\n`karpdoctor permissions -o json` prints the IAM policy, `-o yaml` the ClusterRole.\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_rules_and_actions_from_the_checks() {
        let p = for_checks(crate::registry::CHECKS);
        assert!(p.aws.is_empty() || p.aws.iter().all(|a| a.contains(':')));
        let pods = p
            .kube
            .get(&(String::new(), "pods".to_string()))
            .expect("pods");
        assert!(pods.contains("list"));
        assert!(
            !p.kube.keys().any(|(_, r)| r == "secrets"),
            "karpdoctor never reads Secrets"
        );
        for verbs in p.kube.values() {
            assert!(
                verbs
                    .iter()
                    .all(|v| v == "get" || v == "list" || v == "watch"),
                "{verbs:?}"
            );
        }
    }
}
