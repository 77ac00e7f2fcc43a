//! KD5003: an access entry's type decides what the principal is in the cluster. A node role
//! entered as `STANDARD` (the default when no type is given) has no node permissions;
//! `FARGATE_LINUX` or `HYBRID_LINUX` map it to the wrong node name; Windows nodes need
//! `EC2_WINDOWS`. The type cannot be changed: the entry has to be re-created.

use crate::check::prelude::*;
use crate::checks::common::access::{Mode, NodeRole, node_roles};
use crate::checks::common::cluster::cluster;
use crate::checks::common::codes::NODECLASS_NODE_ROLE_INVALID;
use crate::checks::common::nodeclass::{not_a_node_role, object};

declare_check! {
    pub static ACCESS_ENTRY_WRONG_TYPE = {
        code: "KD5003",
        slug: "access-entry-wrong-type",
        title: "every node role's access entry is of the EC2 node type",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster, IamRole, IamInstanceProfile, EksAccessEntries, ControllerDeployments],
        self_managed: true,
        run: access_entry_wrong_type,
    }
}

async fn access_entry_wrong_type(cx: &CheckCx) -> CheckResult {
    let (classes, cluster) = futures::future::join(cx.ec2_nodeclasses(), cluster(cx)).await;
    let (classes, cluster) = (classes?, cluster?);
    if !Mode::of(&cluster).reads_access_entries() {
        return Ok(Vec::new());
    }
    let roles = node_roles(cx, &classes).await?;
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    let entries = cx.access_entries(&cluster.name).await?;
    // One role may serve Linux and Windows classes; an IAM principal has one access entry, so
    // it is judged once, against every class that uses it.
    let mut by_role: Vec<(&str, Vec<&NodeRole>)> = Vec::new();
    for role in &roles {
        match by_role.iter_mut().find(|(arn, _)| *arn == role.arn) {
            Some((_, users)) => users.push(role),
            None => by_role.push((role.arn.as_str(), vec![role])),
        }
    }
    let mut findings = Vec::new();
    for (arn, users) in by_role {
        let Some(entry) = entries.iter().find(|e| e.principal_arn == arn) else {
            continue;
        };
        let windows: Vec<&str> = users
            .iter()
            .filter(|r| r.windows)
            .map(|r| r.nodeclass.name())
            .collect();
        let linux: Vec<&str> = users
            .iter()
            .filter(|r| !r.windows)
            .map(|r| r.nodeclass.name())
            .collect();
        let first = users[0];
        let delete = format!(
            "aws eks delete-access-entry --cluster-name {} --principal-arn {arn}",
            cluster.name
        );
        let evidence = |f: Finding| {
            f.evidence("principalArn", entry.principal_arn.clone())
                .evidence("type", entry.kind.clone())
                .evidence("username", entry.username.clone())
                .evidence("kubernetesGroups", entry.kubernetes_groups.clone())
        };
        // `EC2` is the type EKS Auto Mode uses for its own node roles; Linux nodes work with it.
        let linux_type = matches!(entry.kind.as_str(), "EC2_LINUX" | "EC2");
        if entry.kind == "EC2_WINDOWS" && !linux.is_empty() {
            // EKS documents EC2_WINDOWS for Windows nodes only; which groups it maps and
            // whether a Linux kubelet registers under it is not stated, so say what to verify.
            let shared = !windows.is_empty();
            findings.push(
                evidence(Finding::new(
                    object(first.nodeclass),
                    format!(
                        "the access entry of node role {arn} is EC2_WINDOWS, and Linux EC2NodeClasses use the role too ({}): EKS documents EC2_WINDOWS for Windows nodes only, so verify that Linux nodes of these classes register",
                        linux.join(", ")
                    ),
                ))
                .severity(Severity::Warning)
                .evidence("linuxNodeClasses", linux.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .evidence("windowsNodeClasses", windows.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .hint(if shared {
                    "a principal has one access entry: give the Windows classes a node role of their own with an EC2_WINDOWS entry (and let the controller pass it), or, in API_AND_CONFIG_MAP mode, delete the entry and map the shared role in aws-auth with system:bootstrappers, system:nodes and eks:kube-proxy-windows"
                } else {
                    "Linux nodes need an EC2_LINUX entry: an access entry's type cannot be changed, so delete it and create it again"
                })
                .fix(delete.clone()),
            );
            continue;
        }
        if entry.kind == "EC2_WINDOWS" || (linux_type && windows.is_empty()) {
            continue;
        }
        let want = if windows.is_empty() { "EC2_LINUX" } else { "EC2_WINDOWS" };
        let effect = match entry.kind.as_str() {
            "STANDARD" => {
                "a STANDARD entry gives the role no node permissions, so its nodes cannot register"
            }
            "FARGATE_LINUX" | "HYBRID_LINUX" => {
                "it maps the role to system:node:{{SessionName}}, a name EC2 nodes do not have"
            }
            _ => "Windows nodes need EC2_WINDOWS: without eks:kube-proxy-windows their kube-proxy cannot read endpoints and DNS fails",
        };
        let owner = if windows.is_empty() {
            first
        } else {
            users.iter().copied().find(|r| r.windows).unwrap_or(first)
        };
        let mut f = evidence(Finding::new(
            object(owner.nodeclass),
            format!(
                "the access entry of node role {arn} is of type {}, not {want}: {effect}",
                entry.kind
            ),
        ));
        // A role EC2 may not assume is not a node role (KD3005): its entry's type follows from
        // naming it, e.g. a Fargate pod execution role's FARGATE_LINUX entry.
        if not_a_node_role(cx, arn).await? {
            f = f.owned_by([NODECLASS_NODE_ROLE_INVALID]);
        }
        if !windows.is_empty() && !linux.is_empty() {
            f = f
                .evidence("linuxNodeClasses", linux.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .evidence("windowsNodeClasses", windows.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .hint("one role serves Linux and Windows classes, and a principal has one access entry: give the Windows classes a node role of their own with an EC2_WINDOWS entry (and let the controller pass it), or map the shared role in aws-auth with eks:kube-proxy-windows (API_AND_CONFIG_MAP)");
        } else {
            f = f.hint("an access entry's type cannot be changed: delete it and create it again with the node type (no groups are needed)");
        }
        findings.push(
            f.fix(delete).fix(format!(
                "aws eks create-access-entry --cluster-name {} --principal-arn {arn} --type {want}",
                cluster.name
            )),
        );
    }
    Ok(findings)
}
