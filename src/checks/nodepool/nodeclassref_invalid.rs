//! KD4001: a NodePool whose `nodeClassRef` does not resolve to an EC2NodeClass is ignored by
//! the AWS provider, so its pods stay Pending with no error on the pods themselves.

use crate::check::prelude::*;
use crate::model::AWS_GROUP;

declare_check! {
    pub static NODEPOOL_NODECLASSREF_INVALID = {
        code: "KD4001",
        slug: "nodepool-nodeclassref-invalid",
        title: "every NodePool references an existing EC2NodeClass by group, kind and name",
        category: Nodepool,
        severity: Error,
        needs: [NodePools, Ec2NodeClasses],
        self_managed: true,
        run: nodeclassref_invalid,
    }
}

async fn nodeclassref_invalid(cx: &CheckCx) -> CheckResult {
    let (pools, classes) = futures::future::join(cx.nodepools(), cx.ec2_nodeclasses()).await;
    let (pools, classes) = (pools?, classes?);
    let known: Vec<&str> = classes.iter().map(|c| c.name()).collect();
    let mut findings = Vec::new();
    for pool in pools.iter() {
        let Some(r) = &pool.spec.template.spec.node_class_ref else {
            findings.push(
                Finding::new(pool.object(), "spec.template.spec.nodeClassRef is missing")
                    .hint("set nodeClassRef to {group: karpenter.k8s.aws, kind: EC2NodeClass, name: <class>}")
                    .fix(patch(
                        pool.name(),
                        known.first().copied().unwrap_or("default"),
                        pool.is_v1beta1(),
                    )),
            );
            continue;
        };
        let mut problems = Vec::new();
        // v1beta1 requires only the name: the class is looked up by name, and a missing
        // apiVersion or kind means the provider's own (its conversion to v1 does the same).
        let v1beta1 = pool.is_v1beta1();
        let group = if v1beta1 {
            r.api_version
                .as_deref()
                .map(|v| v.split('/').next().unwrap_or(v))
        } else {
            r.group.as_deref()
        };
        let field = if v1beta1 { "apiVersion" } else { "group" };
        // EKS Auto Mode's NodeClass: that pool is Auto Mode's, not the self-managed
        // controller's (docs/auto-mode.md §9: Auto Mode's own checks are to judge it).
        if pool.is_auto_mode() {
            continue;
        }
        match group {
            None | Some("") if !v1beta1 => {
                problems.push("nodeClassRef.group is missing (required since v1)".to_string())
            }
            None | Some("") | Some(AWS_GROUP) => {}
            Some(other) => problems.push(format!(
                "nodeClassRef.{field} names the group \"{other}\", not \"{AWS_GROUP}\""
            )),
        }
        match r.kind.as_deref() {
            None | Some("") if !v1beta1 => {
                problems.push("nodeClassRef.kind is missing (required since v1)".to_string())
            }
            None | Some("") | Some("EC2NodeClass") => {}
            Some(other) => problems.push(format!(
                "nodeClassRef.kind is \"{other}\", not \"EC2NodeClass\""
            )),
        }
        let name = r.name.as_deref().unwrap_or("");
        if name.is_empty() {
            problems.push("nodeClassRef.name is missing".to_string());
        } else if !known.contains(&name) {
            problems.push(format!("EC2NodeClass \"{name}\" does not exist"));
        }
        if problems.is_empty() {
            continue;
        }
        let target = if known.contains(&name) {
            name
        } else {
            known.first().copied().unwrap_or(name)
        };
        findings.push(
            Finding::new(pool.object(), problems.join("; "))
                .evidence("nodeClassRef", serde_json::to_value(r).unwrap_or_default())
                .evidence("existingEC2NodeClasses", known.join(", "))
                .hint(if known.is_empty() {
                    "create an EC2NodeClass and point the NodePool at it".to_string()
                } else {
                    format!(
                        "point the NodePool at an existing EC2NodeClass ({})",
                        known.join(", ")
                    )
                })
                .fix(patch(
                    pool.name(),
                    if target.is_empty() { "default" } else { target },
                    v1beta1,
                )),
        );
    }
    Ok(findings)
}

/// The patch that points the NodePool at `class`, in the form its API version takes
/// (v1beta1 has no `group` field: the API server would prune or reject it).
fn patch(pool: &str, class: &str, v1beta1: bool) -> String {
    let group = if v1beta1 {
        format!("\"apiVersion\":\"{AWS_GROUP}/v1beta1\"")
    } else {
        format!("\"group\":\"{AWS_GROUP}\"")
    };
    format!(
        "kubectl patch nodepool {pool} --type merge -p '{{\"spec\":{{\"template\":{{\"spec\":{{\"nodeClassRef\":{{{group},\"kind\":\"EC2NodeClass\",\"name\":\"{class}\"}}}}}}}}}}'"
    )
}
