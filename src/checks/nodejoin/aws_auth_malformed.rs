//! KD5002: the authenticator reads `aws-auth` strictly. YAML it cannot parse drops every
//! mapping at once; a node entry with another username, missing groups, a role ARN with a
//! path or an instance-profile ARN lets the node authenticate but not register.

use crate::awsauth::{NODE_USERNAME, node_mapping_problems};
use crate::check::prelude::*;
use crate::checks::common::access::{Mode, map_roles, node_roles, pathless};
use crate::checks::common::cluster::cluster;
use crate::checks::common::nodeclass::object;

declare_check! {
    pub static AWS_AUTH_MALFORMED = {
        code: "KD5002",
        slug: "aws-auth-malformed",
        title: "aws-auth parses, and every node role's entry has the node username and groups",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster, IamRole, IamInstanceProfile, AwsAuth, EksAccessEntries, ControllerDeployments],
        self_managed: true,
        run: aws_auth_malformed,
    }
}

const OBJECT: &str = "ConfigMap/kube-system/aws-auth";

async fn aws_auth_malformed(cx: &CheckCx) -> CheckResult {
    let (classes, cluster) = futures::future::join(cx.ec2_nodeclasses(), cluster(cx)).await;
    let (classes, cluster) = (classes?, cluster?);
    let mode = Mode::of(&cluster);
    if !mode.reads_aws_auth() {
        return Ok(Vec::new());
    }
    let mappings = match map_roles(cx).await? {
        None => return Ok(Vec::new()),
        Some(Err(e)) => {
            let mut f = Finding::new(
                OBJECT,
                format!("mapRoles cannot be parsed, so the authenticator ignores every mapping in it (nodes and people alike): {e}"),
            )
            .evidence("problem", e.message.clone())
            .hint("fix the YAML (spaces, not tabs; a list of {rolearn, username, groups}) and validate it before applying")
            .fix("kubectl -n kube-system get configmap aws-auth -o jsonpath='{.data.mapRoles}' | cat -A | head -40");
            if let Some(line) = e.line {
                f = f.evidence("line", line);
            }
            return Ok(vec![f]);
        }
        Some(Ok(m)) => m,
    };
    let roles = node_roles(cx, &classes).await?;
    // With both mechanisms, an access entry takes precedence over aws-auth for its principal:
    // a bad aws-auth entry of such a role changes nothing.
    let entries = if mode.reads_access_entries() {
        cx.access_entries(&cluster.name).await?.to_vec()
    } else {
        Vec::new()
    };
    let mut findings = Vec::new();
    for role in &roles {
        if entries.iter().any(|e| e.principal_arn == role.arn) {
            continue;
        }
        let mut problems = Vec::new();
        let mut lines = Vec::new();
        let ours: Vec<_> = mappings
            .iter()
            .filter(|m| m.rolearn == role.pathless())
            .collect();
        // Every entry the authenticator can match is right: the nodes join now, and the
        // duplicates or strays (a path or instance-profile ARN, which never match) only break
        // it on the next edit of the wrong copy. A warning; otherwise an error.
        let matched_all_right = !ours.is_empty()
            && ours
                .iter()
                .all(|m| node_mapping_problems(m, role.windows).is_empty());
        for m in &ours {
            for p in node_mapping_problems(m, role.windows) {
                problems.push(format!("line {}: {p}", m.line));
                lines.push(m.line);
            }
        }
        if ours.len() > 1 {
            problems.push(format!(
                "the role is mapped {} times (lines {}); the authenticator uses one of them",
                ours.len(),
                ours.iter()
                    .map(|m| m.line.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if role.has_path() {
            for m in mappings.iter().filter(|m| m.rolearn == role.arn) {
                problems.push(format!(
                    "line {}: rolearn {} includes the role's path, which aws-auth never matches (use {})",
                    m.line,
                    m.rolearn,
                    role.pathless()
                ));
                lines.push(m.line);
            }
        }
        let profile = role
            .nodeclass
            .spec
            .get("instanceProfile")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        for m in mappings.iter().filter(|m| {
            m.rolearn.contains(":instance-profile/")
                && (pathless(&m.rolearn).ends_with(&format!("/{profile}")) && !profile.is_empty()
                    || m.rolearn.ends_with(&format!(
                        "/{}",
                        role.pathless().rsplit('/').next().unwrap_or_default()
                    )))
        }) {
            problems.push(format!(
                "line {}: rolearn {} is an instance profile ARN; aws-auth needs the role ARN {}",
                m.line,
                m.rolearn,
                role.pathless()
            ));
            lines.push(m.line);
        }
        if problems.is_empty() {
            continue;
        }
        lines.sort_unstable();
        lines.dedup();
        findings.push(
            Finding::new(
                OBJECT,
                format!(
                    "the mapping of {}'s node role {} is wrong{}: {}",
                    object(role.nodeclass),
                    role.pathless(),
                    if matched_all_right {
                        " beside a correct entry, which the nodes use now"
                    } else {
                        ""
                    },
                    problems.join("; ")
                ),
            )
            .severity(if matched_all_right {
                Severity::Warning
            } else {
                Severity::Error
            })
            .evidence("nodeRole", role.arn.clone())
            .evidence("lines", lines)
            .hint(format!(
                "the entry must read rolearn: {}, username: {NODE_USERNAME}, groups: [system:bootstrappers, system:nodes{}]",
                role.pathless(),
                if role.windows { ", eks:kube-proxy-windows" } else { "" }
            ))
            .fix("kubectl -n kube-system edit configmap aws-auth"),
        );
    }
    Ok(findings)
}
