//! KD3005: the node role is what a node is inside AWS and in the cluster. A role that does not
//! exist, that EC2 may not assume, that is the controller's own, or that lacks the EKS node
//! managed policies gives instances that never join, pull no images, or have no pod network.

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::checks::common::grants;
use crate::checks::common::nodeclass::{NodeRoleSource, node_role_source, object, trusts_ec2};
use crate::checks::common::wiring::irsa_role;
use crate::facts::{AttachedPolicy, IamRole};
use crate::iam::simulation::{Attribution, attribute};
use crate::model::Ec2NodeClass;

declare_check! {
    pub static NODECLASS_NODE_ROLE_INVALID = {
        code: "KD3005",
        slug: "nodeclass-node-role-invalid",
        title: "every EC2NodeClass's node role exists, trusts EC2, is not the controller's role and carries the EKS node policies",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster, IamRole, IamInstanceProfile, IamAttachedRolePolicies, ServiceAccount, PodIdentityAssociations, ControllerDeployments, Pods, Simulation],
        self_managed: true,
        run: node_role_invalid,
    }
}

const POLICY_PREFIX: &str = "policy/";

/// What every node role is judged against.
struct Expected<'a> {
    /// The service principal the role must trust.
    ec2_principal: &'static str,
    /// The controller's role, when there is one to compare with (KD2001/KD2004 own the rest).
    controller_role: Option<String>,
    cni_has_own_identity: bool,
    partition: &'a str,
    cluster: &'a str,
}

async fn node_role_invalid(cx: &CheckCx) -> CheckResult {
    let (classes, cluster) = futures::future::join(cx.ec2_nodeclasses(), cluster(cx)).await;
    let (classes, cluster) = (classes?, cluster?);
    let arn = cluster_arn(&cluster)?;
    let expected = Expected {
        ec2_principal: if arn.partition == "aws-cn" {
            "ec2.amazonaws.com.cn"
        } else {
            "ec2.amazonaws.com"
        },
        controller_role: grants::optional_controller_role(cx).await?.map(|r| r.arn),
        cni_has_own_identity: cni_has_own_identity(cx, &cluster.name).await?,
        partition: arn.partition,
        cluster: &cluster.name,
    };
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let (name, via) = match node_role_source(nc) {
            NodeRoleSource::Role(r) => {
                let name = Arn::parse(&r)
                    .and_then(|a| a.role_name().map(str::to_string))
                    .unwrap_or(r);
                (name, "spec.role".to_string())
            }
            // An ARN where a name belongs is KD3006's finding; IAM would refuse to look it up.
            NodeRoleSource::InstanceProfile(p) if p.starts_with("arn:") => continue,
            NodeRoleSource::InstanceProfile(p) => {
                // The profile itself is KD3006's; judge the role inside it.
                let Some(role_arn) = cx
                    .instance_profile(&p)
                    .await?
                    .as_ref()
                    .as_ref()
                    .and_then(|ip| ip.roles.first().cloned())
                else {
                    continue;
                };
                let Some(name) =
                    Arn::parse(&role_arn).and_then(|a| a.role_name().map(str::to_string))
                else {
                    continue;
                };
                (name, format!("the role of instance profile {p}"))
            }
            NodeRoleSource::None => {
                findings.push(
                    Finding::new(object(nc), "neither spec.role nor spec.instanceProfile is set: nodes would have no IAM identity")
                        .hint(format!("set spec.role to the node role (KarpenterNodeRole-{} in the getting-started guide)", cluster.name)),
                );
                continue;
            }
        };
        let Some(role) = cx.iam_role(&name).await?.as_ref().clone() else {
            findings.push(
                Finding::new(
                    object(nc),
                    format!("{via} names the IAM role {name}, which does not exist in account {}", arn.account),
                )
                .evidence("role", name.clone())
                .hint("create the node role, or point spec.role at the existing one (Terraform modules may add a random suffix to the name)")
                .fix(format!("aws iam get-role --role-name {name}")),
            );
            continue;
        };
        let attached = cx.attached_role_policies(&role.name).await?;
        let (missing, ssm_missing) = missing_policies(&attached, expected.cni_has_own_identity);
        let granted = granted_otherwise(cx, &role, &missing, ssm_missing).await?;
        let missing: Vec<&str> = missing.into_iter().filter(|p| !granted.contains(p)).collect();
        let ssm_missing = ssm_missing && !granted.contains(&SSM_POLICY);
        findings.extend(
            judge_role(nc, &role, &via, &attached, (missing, ssm_missing), &expected)
                .map(|f| match granted.is_empty() {
                    true => f,
                    false => f.evidence("grantedWithoutTheManagedPolicy", granted.clone()),
                }),
        );
    }
    Ok(findings)
}

/// Judges a node role that exists: its trust, whether it is the controller's, its policies.
fn judge_role(
    nc: &Ec2NodeClass,
    role: &IamRole,
    via: &str,
    attached: &[AttachedPolicy],
    (missing, ssm_missing): (Vec<&'static str>, bool),
    expected: &Expected,
) -> Option<Finding> {
    let ec2_principal = expected.ec2_principal;
    let is_controller_role = expected.controller_role.as_deref() == Some(role.arn.as_str());
    let mut problems = Vec::new();
    if is_controller_role {
        problems.push("it is the controller's own role: nodes would get the controller's permissions and its trust policy does not let EC2 assume it".to_string());
    }
    let trusts_ec2 = trusts_ec2(role, ec2_principal);
    if !trusts_ec2 {
        problems.push(format!("its trust policy does not let {ec2_principal} assume it (sts:AssumeRole): instances get no credentials"));
    }
    if !missing.is_empty() {
        problems.push(format!(
            "it lacks {}{}",
            missing.join(", "),
            if expected.cni_has_own_identity { "" } else { " (aws-node has no IRSA or Pod Identity role of its own, so the VPC CNI uses the node role)" }
        ));
    }
    if problems.is_empty() && !ssm_missing {
        return None;
    }
    let mut f = if problems.is_empty() {
        Finding::new(
            object(nc),
            format!(
                "node role {} lacks AmazonSSMManagedInstanceCore: no SSM sessions to debug nodes",
                role.name
            ),
        )
        .severity(Severity::Warning)
    } else {
        Finding::new(
            object(nc),
            format!("node role {} ({via}): {}", role.name, problems.join("; ")),
        )
    };
    f = f.evidence("role", role.arn.clone()).evidence(
        "attachedPolicies",
        attached
            .iter()
            .map(|p| p.policy_name.clone())
            .collect::<Vec<_>>(),
    );
    if !trusts_ec2 || is_controller_role {
        f = f.hint(format!(
            "use a dedicated node role that trusts {ec2_principal} (KarpenterNodeRole-{} in the getting-started guide)",
            expected.cluster
        ));
    } else {
        f = f.hint("attach the EKS node managed policies to the node role");
    }
    let mut attach = missing;
    if ssm_missing {
        attach.push("AmazonSSMManagedInstanceCore");
    }
    for policy in attach {
        f = f.fix(format!(
            "aws iam attach-role-policy --role-name {} --policy-arn arn:{}:iam::aws:policy/{policy}",
            role.name, expected.partition
        ));
    }
    Some(f)
}

const SSM_POLICY: &str = "AmazonSSMManagedInstanceCore";

/// What each node managed policy grants (its actions, from AWS's managed policy reference):
/// a role that lacks the policy by name but may do all of these, through inline or customer
/// managed policies, has what the policy gives.
fn policy_actions(policy: &str) -> &'static [&'static str] {
    match policy {
        "AmazonEKSWorkerNodePolicy" => &[
            "ec2:DescribeInstances",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeRouteTables",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSubnets",
            "ec2:DescribeVolumes",
            "ec2:DescribeVolumesModifications",
            "ec2:DescribeVpcs",
            "eks:DescribeCluster",
            "eks-auth:AssumeRoleForPodIdentity",
        ],
        "AmazonEC2ContainerRegistryPullOnly" => &[
            "ecr:GetAuthorizationToken",
            "ecr:BatchGetImage",
            "ecr:GetDownloadUrlForLayer",
        ],
        "AmazonEKS_CNI_Policy" => &[
            "ec2:AssignPrivateIpAddresses",
            "ec2:AttachNetworkInterface",
            "ec2:CreateNetworkInterface",
            "ec2:DeleteNetworkInterface",
            "ec2:DescribeInstances",
            "ec2:DescribeTags",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeSubnets",
            "ec2:DetachNetworkInterface",
            "ec2:ModifyNetworkInterfaceAttribute",
            "ec2:UnassignPrivateIpAddresses",
        ],
        SSM_POLICY => &[
            "ssm:UpdateInstanceInformation",
            "ssmmessages:CreateControlChannel",
            "ssmmessages:CreateDataChannel",
            "ssmmessages:OpenControlChannel",
            "ssmmessages:OpenDataChannel",
        ],
        _ => &[],
    }
}

/// The managed policies the role lacks by name whose actions it may all perform anyway
/// (inline or customer managed policies), by one simulation of the node role. Only asked when
/// a policy is missing, so a role with the managed policies costs nothing. Resources are `*`:
/// a copy scoped to specific ECR repositories reads as not granted, which is what the name
/// check said before.
async fn granted_otherwise(
    cx: &CheckCx,
    role: &IamRole,
    missing: &[&'static str],
    ssm_missing: bool,
) -> Result<Vec<&'static str>, FactError> {
    let mut policies: Vec<&'static str> = missing.to_vec();
    if ssm_missing {
        policies.push(SSM_POLICY);
    }
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let mut actions: Vec<String> = policies
        .iter()
        .flat_map(|p| policy_actions(p).iter().map(|a| a.to_string()))
        .collect();
    actions.sort();
    actions.dedup();
    let rows = cx.simulate(&role.arn, &actions, &[], &[]).await?;
    let allowed = |action: &str| {
        rows.iter()
            .filter(|r| r.action.eq_ignore_ascii_case(action))
            .all(|r| attribute(r) == Attribution::Allowed)
            && rows.iter().any(|r| r.action.eq_ignore_ascii_case(action))
    };
    Ok(policies
        .into_iter()
        .filter(|p| policy_actions(p).iter().all(|a| allowed(a)))
        .collect())
}

/// The EKS node managed policies the role lacks, and whether it lacks the SSM one (only a
/// warning: nodes work without it).
fn missing_policies(
    attached: &[AttachedPolicy],
    cni_has_own_identity: bool,
) -> (Vec<&'static str>, bool) {
    let has = |names: &[&str]| {
        attached.iter().any(|p| {
            names.iter().any(|n| {
                p.policy_name == *n || p.policy_arn.rsplit(POLICY_PREFIX).next() == Some(*n)
            })
        })
    };
    let mut missing = Vec::new();
    if !has(&["AmazonEKSWorkerNodePolicy"]) {
        missing.push("AmazonEKSWorkerNodePolicy");
    }
    if !has(&[
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonEC2ContainerRegistryPullOnly",
    ]) {
        missing.push("AmazonEC2ContainerRegistryPullOnly");
    }
    if !cni_has_own_identity && !has(&["AmazonEKS_CNI_Policy"]) {
        missing.push("AmazonEKS_CNI_Policy");
    }
    (missing, !has(&[SSM_POLICY]))
}

/// Whether the node role can do without `AmazonEKS_CNI_Policy`: the VPC CNI
/// (`kube-system/aws-node`) has credentials of its own (IRSA or Pod Identity), or the cluster
/// runs another CNI (no aws-node ServiceAccount).
async fn cni_has_own_identity(cx: &CheckCx, cluster: &str) -> Result<bool, FactError> {
    let sa = cx.service_account("kube-system", "aws-node").await?;
    let Some(sa) = sa.as_ref() else {
        return Ok(true);
    };
    let irsa = irsa_role(sa).is_some();
    // IRSA decides alone: the association is read only when it could (a verdict never rests
    // on a fact whose read failed).
    if irsa {
        return Ok(true);
    }
    Ok(!cx
        .pod_identity_associations(cluster, "kube-system", "aws-node")
        .await?
        .is_empty())
}
