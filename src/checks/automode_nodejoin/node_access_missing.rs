//! KD5101: an EKS Auto Mode node role without the access entry its nodes join with. Auto Mode
//! authorizes a node through an entry of type `EC2` carrying `AmazonEKSAutoNodePolicy`; EKS
//! makes one itself only for the built-in pools' role, so a NodeClass of one's own needs its own.
//! Without it instances launch and never join, and Auto Mode replaces them in a loop
//! (terraform-aws-eks#3578; docs/auto-mode.md §3.3, §7.5).

use crate::automode::access::{AUTO_NODE_POLICY, NodeAccess, entry_of, judge};
use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::model::{AutoNodeClass, NodePool};

declare_check! {
    pub static AUTOMODE_NODE_ACCESS_MISSING = {
        code: "KD5101",
        slug: "automode-node-access-missing",
        title: "every Auto Mode NodeClass's node role has an EC2 access entry with AmazonEKSAutoNodePolicy",
        category: NodeJoin,
        severity: Error,
        needs: [NodePools, AutoNodeClasses, EksCluster, IamRole, IamInstanceProfile, EksAccessEntries, EksAccessPolicies],
        run: node_access_missing,
    }
}

async fn node_access_missing(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let auto: Vec<&NodePool> = pools.iter().filter(|p| p.is_auto_mode()).collect();
    if auto.is_empty() {
        return Ok(Vec::new());
    }
    let classes = cx.auto_nodeclasses().await?;
    // Only NodeClasses a pool uses launch nodes: an unused one breaks nothing yet.
    let used: Vec<&AutoNodeClass> = classes
        .iter()
        .filter(|c| auto.iter().any(|p| p.class_name() == Some(c.name())))
        .collect();
    if used.is_empty() {
        return Ok(Vec::new());
    }
    let described = cluster(cx).await?;
    let partition = cluster_arn(&described)?.partition.to_string();
    let entries = cx.access_entries(&described.name).await?;
    let mut seen: Vec<String> = Vec::new();
    let mut findings = Vec::new();
    for class in used {
        let Some(arn) = role_arn(cx, class).await? else {
            // A role or instance profile that does not exist is the NodeClass's own failure.
            continue;
        };
        // One role serves many NodeClasses: judged once, on the first that uses it.
        if seen.contains(&arn) {
            continue;
        }
        seen.push(arn.clone());
        let entry = entry_of(&entries, &arn);
        let policies = match entry {
            Some(e) if e.kind == "EC2" => {
                cx.access_policies(&described.name, &e.principal_arn)
                    .await?
            }
            _ => Default::default(),
        };
        findings.extend(explain(
            class,
            &arn,
            judge(entry, &policies),
            &described.name,
            &partition,
            entry.map(|e| e.principal_arn.as_str()),
        ));
    }
    Ok(findings)
}

/// The node role's ARN: `spec.role` (a name, perhaps after a path) through IAM, or the role of
/// `spec.instanceProfile`. `None` when IAM has no such role or profile.
async fn role_arn(cx: &CheckCx, class: &AutoNodeClass) -> Result<Option<String>, FactError> {
    if let Some(profile) = class.instance_profile() {
        let found = cx.instance_profile(profile).await?;
        return Ok(found.as_ref().as_ref().and_then(|p| p.roles.first().cloned()));
    }
    let Some(role) = class.role() else {
        return Ok(None);
    };
    let name = role.rsplit('/').next().unwrap_or(role);
    let found = cx.iam_role(name).await?;
    Ok(found.as_ref().as_ref().map(|r| r.arn.clone()))
}

fn explain(
    class: &AutoNodeClass,
    arn: &str,
    verdict: NodeAccess,
    cluster: &str,
    partition: &str,
    entry_arn: Option<&str>,
) -> Option<Finding> {
    let policy = format!("arn:{partition}:eks::aws:cluster-access-policy/{AUTO_NODE_POLICY}");
    let principal = entry_arn.unwrap_or(arn);
    let create = format!(
        "aws eks create-access-entry --cluster-name {cluster} --principal-arn {arn} --type EC2"
    );
    let associate = format!(
        "aws eks associate-access-policy --cluster-name {cluster} --principal-arn {principal} --policy-arn {policy} --access-scope type=cluster"
    );
    let effect = "Auto Mode cannot join this NodeClass's nodes to the cluster (it reports the role unauthorized, or its instances launch and never join)";
    let mut f = match &verdict {
        NodeAccess::NoEntry => Finding::new(
            class.object(),
            format!("node role {arn} has no EKS access entry: {effect}"),
        )
        .hint(if class.eks_managed() {
            "EKS made this entry for the built-in pools' role: something deleted it; create it again with the type EC2 and the node policy"
        } else {
            "EKS creates the access entry itself only for the built-in pools' role: a NodeClass of your own needs an entry of type EC2 with AmazonEKSAutoNodePolicy at cluster scope"
        })
        .fix(create)
        .fix(associate),
        NodeAccess::WrongType(kind) => {
            let (why, hint) = match kind.as_str() {
                "EC2_LINUX" | "EC2_WINDOWS" => (
                    "the type of a self-managed node role's entry, Karpenter's or a node group's",
                    "an access entry's type cannot be changed and a role has one entry: give the NodeClass a role of its own with an EC2 entry, or, once no self-managed node uses this role, delete its entry and create it again as EC2",
                ),
                "STANDARD" => (
                    "the type an entry gets when none is given, as CDK's grantAccess and other IaC defaults make it",
                    "an access entry's type cannot be changed: delete the entry and create it again with the type EC2 and the node policy",
                ),
                _ => (
                    "a type for other principals",
                    "an access entry's type cannot be changed: delete the entry and create it again with the type EC2 and the node policy",
                ),
            };
            Finding::new(
                class.object(),
                format!(
                    "the access entry of node role {arn} is of type {kind}, {why}; Auto Mode's nodes need EC2: {effect}"
                ),
            )
            .evidence("type", kind.clone())
            .hint(hint)
            .fix(format!(
                "aws eks delete-access-entry --cluster-name {cluster} --principal-arn {principal}"
            ))
            .fix(create)
            .fix(associate)
        }
        NodeAccess::NoPolicy { namespaced } => Finding::new(
            class.object(),
            format!(
                "the EC2 access entry of node role {arn} does not carry {AUTO_NODE_POLICY}{}: {effect}",
                if *namespaced { " at cluster scope (only for namespaces)" } else { "" }
            ),
        )
        .hint("associate AmazonEKSAutoNodePolicy with the entry at cluster scope")
        .fix(associate),
        NodeAccess::Authorized => return None,
    };
    f = f
        .evidence("nodeClass", class.name().to_string())
        .evidence("principalArn", arn.to_string());
    if arn.matches('/').count() > 1 {
        // Auto Mode once looked entries up by the role's name without its path (#2486).
        f = f.evidence(
            "rolePath",
            "the role has an IAM path: if the entry is right and nodes still do not join, see aws/containers-roadmap#2486",
        );
    }
    // Auto Mode's own word, when the NodeClass has said it.
    if let Some(c) = class
        .status
        .conditions
        .iter()
        .find(|c| c.status == "False" && c.reason == "UnauthorizedNodeRole")
    {
        f = f.evidence("condition", c.describe());
    }
    Some(f)
}
