//! KD5003: an access entry's type decides what the principal is in the cluster. A node role
//! entered as `STANDARD` (the default when no type is given) has no node permissions;
//! `FARGATE_LINUX` or `HYBRID_LINUX` map it to the wrong node name; Windows nodes need
//! `EC2_WINDOWS`. The type cannot be changed: the entry has to be re-created.

use crate::check::prelude::*;
use crate::checks::common::access::{Mode, node_entry_type, node_roles};
use crate::checks::common::cluster::cluster;
use crate::checks::common::nodeclass::object;

declare_check! {
    pub static ACCESS_ENTRY_WRONG_TYPE = {
        code: "KD5003",
        slug: "access-entry-wrong-type",
        title: "every node role's access entry is of the EC2 node type",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster, IamRole, IamInstanceProfile, EksAccessEntries, ControllerDeployments],
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
    let mut findings = Vec::new();
    for role in &roles {
        let Some(entry) = entries.iter().find(|e| e.principal_arn == role.arn) else {
            continue;
        };
        let want = node_entry_type(role);
        // `EC2` is the type EKS Auto Mode uses for its own node roles; it also works.
        if entry.kind == want || (entry.kind == "EC2" && !role.windows) {
            continue;
        }
        let effect = match entry.kind.as_str() {
            "STANDARD" => {
                "a STANDARD entry gives the role no node permissions, so its nodes cannot register"
            }
            "FARGATE_LINUX" | "HYBRID_LINUX" => {
                "it maps the role to system:node:{{SessionName}}, a name EC2 nodes do not have"
            }
            "EC2_LINUX" => "Windows nodes need EC2_WINDOWS",
            _ => "its nodes do not get the Windows node identity",
        };
        findings.push(
            Finding::new(
                object(role.nodeclass),
                format!(
                    "the access entry of node role {} is of type {}, not {want}: {effect}",
                    role.arn, entry.kind
                ),
            )
            .evidence("principalArn", entry.principal_arn.clone())
            .evidence("type", entry.kind.clone())
            .evidence("username", entry.username.clone())
            .evidence("kubernetesGroups", entry.kubernetes_groups.clone())
            .hint("an access entry's type cannot be changed: delete it and create it again with the node type (no groups are needed)")
            .fix(format!(
                "aws eks delete-access-entry --cluster-name {} --principal-arn {}",
                cluster.name, role.arn
            ))
            .fix(format!(
                "aws eks create-access-entry --cluster-name {} --principal-arn {} --type {want}",
                cluster.name, role.arn
            )),
        );
    }
    Ok(findings)
}
