//! KD5001: a node whose role is not mapped to the node identity is refused by the API server
//! ("Unauthorized"): the instance runs, the NodeClaim stays `Registered=Unknown` with
//! NodeNotFound "Node not registered with cluster", and is replaced every 15 minutes.

use crate::check::prelude::*;
use crate::checks::common::access::{Mode, NodeRole, map_roles, node_entry_type, node_roles};
use crate::checks::common::cluster::cluster;
use crate::checks::common::codes::{AWS_AUTH_MALFORMED, NODECLASS_NODE_ROLE_INVALID};
use crate::checks::common::evidence::capped;
use crate::checks::common::nodeclass::{not_a_node_role, object};
use crate::model::NodeClaim;

declare_check! {
    pub static NODE_ROLE_NOT_MAPPED = {
        code: "KD5001",
        slug: "node-role-not-mapped",
        title: "every EC2NodeClass's node role is mapped in aws-auth or an access entry, as the cluster's authentication mode requires",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster, IamRole, IamInstanceProfile, AwsAuth, EksAccessEntries, NodeClaims, ControllerDeployments],
        self_managed: true,
        run: node_role_not_mapped,
    }
}

async fn node_role_not_mapped(cx: &CheckCx) -> CheckResult {
    let (classes, cluster) = futures::future::join(cx.ec2_nodeclasses(), cluster(cx)).await;
    let (classes, cluster) = (classes?, cluster?);
    let mode = Mode::of(&cluster);
    let roles = node_roles(cx, &classes).await?;
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    // Read both mechanisms when they exist, so a mapping in the ignored one can be named.
    let mapped_roles = map_roles(cx).await?;
    let entries = if mode.reads_access_entries() {
        Some(cx.access_entries(&cluster.name).await?)
    } else {
        None
    };
    let mut findings = Vec::new();
    for role in &roles {
        let in_aws_auth = match &mapped_roles {
            Some(Ok(m)) => m.iter().any(|e| e.rolearn == role.pathless()),
            _ => false,
        };
        let in_entries = entries
            .as_ref()
            .is_some_and(|e| e.iter().any(|x| x.principal_arn == role.arn));
        let mapped =
            (mode.reads_aws_auth() && in_aws_auth) || (mode.reads_access_entries() && in_entries);
        if mapped {
            continue;
        }
        let mut why = format!(
            "node role {} has no {}",
            role.arn,
            match mode {
                Mode::ConfigMap => "aws-auth mapping",
                Mode::Api => "access entry",
                Mode::ApiAndConfigMap => "access entry and no aws-auth mapping",
            }
        );
        if in_aws_auth && !mode.reads_aws_auth() {
            why.push_str(" (it is in aws-auth, which the API authentication mode ignores)");
        }
        // The mapping is there but aws-auth's shape keeps it from counting: one cause, KD5002's.
        let mut owners = Vec::new();
        if let Some(Err(e)) = &mapped_roles
            && mode.reads_aws_auth()
        {
            why.push_str(&format!(
                " (aws-auth cannot be parsed, so none of its mappings count: {e}; see {AWS_AUTH_MALFORMED})"
            ));
            owners.push(AWS_AUTH_MALFORMED);
        }
        if role.has_path()
            && mode.reads_aws_auth()
            && let Some(Ok(m)) = &mapped_roles
            && m.iter().any(|e| e.rolearn == role.arn)
        {
            why.push_str(&format!(
                " (aws-auth names it with its path, which never matches; see {AWS_AUTH_MALFORMED})"
            ));
            owners.push(AWS_AUTH_MALFORMED);
        }
        // A role EC2 may not assume is not a node role: mapping it would not help (KD3005).
        if not_a_node_role(cx, &role.arn).await? {
            owners.push(NODECLASS_NODE_ROLE_INVALID);
        }
        why.push_str(": its nodes are refused by the API server and never register");
        // Read only when there is something to report: NodeClaims are evidence here.
        let stuck = unregistered(&cx.nodeclaims().await?, role.nodeclass.name());
        let mut f = Finding::new(object(role.nodeclass), why)
            .owned_by(owners)
            .evidence("authenticationMode", mode.as_str())
            .evidence("nodeRole", role.arn.clone());
        if !stuck.is_empty() {
            f = f.evidence("unregisteredNodeClaims", capped(stuck, 10));
        }
        f = f.hint(match mode {
            Mode::ConfigMap => {
                "add the node role to aws-auth mapRoles with the node username and groups"
                    .to_string()
            }
            _ => format!(
                "create an {} access entry for the node role",
                node_entry_type(role)
            ),
        });
        f = add_fixes(f, mode, role, &cluster.name);
        findings.push(f);
    }
    Ok(findings)
}

fn add_fixes(f: Finding, mode: Mode, role: &NodeRole, cluster: &str) -> Finding {
    let entry = format!(
        "aws eks create-access-entry --cluster-name {cluster} --principal-arn {} --type {}",
        role.arn,
        node_entry_type(role)
    );
    let mut groups = String::from("--group system:bootstrappers --group system:nodes");
    if role.windows {
        groups.push_str(" --group eks:kube-proxy-windows");
    }
    let mapping = format!(
        "eksctl create iamidentitymapping --cluster {cluster} --arn {} --username 'system:node:{{{{EC2PrivateDNSName}}}}' {groups}",
        role.pathless()
    );
    match mode {
        Mode::ConfigMap => f.fix(mapping),
        Mode::Api => f.fix(entry),
        Mode::ApiAndConfigMap => f.fix(entry),
    }
}

/// NodeClaims of a NodeClass that launched but never registered, newest reason quoted.
fn unregistered(claims: &[NodeClaim], class: &str) -> Vec<String> {
    claims
        .iter()
        .filter(|c| {
            c.spec
                .node_class_ref
                .as_ref()
                .and_then(|r| r.name.as_deref())
                == Some(class)
        })
        .filter_map(|c| {
            let reg = c.status.condition("Registered")?;
            (reg.status != "True").then(|| {
                format!(
                    "{} ({} {}: {})",
                    c.metadata.name.as_deref().unwrap_or_default(),
                    reg.status,
                    reg.reason,
                    reg.message
                )
            })
        })
        .collect()
}
