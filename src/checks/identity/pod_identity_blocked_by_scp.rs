//! KD2007: with EKS Pod Identity the agent on the controller's node calls
//! `eks-auth:AssumeRoleForPodIdentity` as the *node's* role. An SCP that denies that call
//! leaves the controller without credentials, and nothing on the controller role fixes it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::wiring;
use crate::arn::Arn;
use crate::check::prelude::*;
use crate::iam::simulation::{Attribution, attribute};

declare_check! {
    pub static POD_IDENTITY_BLOCKED_BY_SCP = {
        code: "KD2007",
        slug: "pod-identity-blocked-by-scp",
        title: "the controller's node role may exchange Pod Identity tokens (no SCP blocks it)",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, Node, EksCluster, EksNodegroup, Ec2NodeClasses, IamRole, Simulation],
        run: pod_identity_blocked_by_scp,
    }
}

pub const ACTION: &str = "eks-auth:AssumeRoleForPodIdentity";

async fn pod_identity_blocked_by_scp(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    // Only Pod Identity goes through this call; with IRSA set too, IRSA wins (KD2008).
    if w.associations.is_empty() || w.irsa_role_arn.is_some() {
        return Ok(Vec::new());
    }
    let cluster = cx.eks_cluster(&w.cluster).await?;
    let Some(cluster) = cluster.as_ref() else {
        return Err(FactError::NotInstalled {
            what: format!("the EKS cluster {}", w.cluster),
        });
    };
    let nodes: BTreeSet<String> = w
        .pods
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    let mut findings = Vec::new();
    let mut checked = BTreeSet::new();
    for name in &nodes {
        let Some(role_arn) = node_role(cx, &w.cluster, &cluster.arn, name).await? else {
            continue;
        };
        // Several controller replicas usually share one node role: simulate it once.
        if !checked.insert(role_arn.clone()) {
            continue;
        }
        let rows = cx
            .simulate(
                &role_arn,
                &[ACTION.to_string()],
                std::slice::from_ref(&cluster.arn),
                &[],
            )
            .await?;
        if rows.iter().any(|r| attribute(r) == Attribution::Scp) {
            findings.push(
                Finding::new(
                    format!("Node/{name}"),
                    format!(
                        "{ACTION} is blocked by an organization SCP (the statement is not visible to the simulator) for the node role {role_arn}: the Pod Identity agent cannot get the controller's credentials"
                    ),
                )
                .evidence("node", name.clone())
                .evidence("nodeRole", role_arn.clone())
                .evidence("cluster", cluster.arn.clone())
                .hint("use IRSA for the controller (annotate its ServiceAccount with eks.amazonaws.com/role-arn and trust the cluster's OIDC provider), or ask the SCP owners for an exception for node roles")
                .fix(format!(
                    "kubectl -n {} annotate serviceaccount {} eks.amazonaws.com/role-arn=<controller role ARN>",
                    w.namespace, w.service_account
                ))
                .fix(w.restart()),
            );
        }
    }
    Ok(findings)
}

/// The IAM role a node runs with: its managed node group's `nodeRole`, or the `spec.role` of
/// the EC2NodeClass that launched it. `None` for nodes karpdoctor cannot attribute (Fargate,
/// self-managed groups), which are then not simulated.
async fn node_role(
    cx: &CheckCx,
    cluster: &str,
    cluster_arn: &str,
    name: &str,
) -> Result<Option<String>, FactError> {
    let node = cx.node(name).await?;
    let Some(labels) = node
        .as_ref()
        .as_ref()
        .and_then(|n| n.metadata.labels.as_ref())
    else {
        return Ok(None);
    };
    if let Some(group) = labels.get("eks.amazonaws.com/nodegroup") {
        let ng = cx.eks_nodegroup(cluster, group).await?;
        return Ok(ng.as_ref().as_ref().map(|n| n.node_role.clone()));
    }
    if let Some(class) = labels.get("karpenter.k8s.aws/ec2nodeclass") {
        let classes = cx.ec2_nodeclasses().await?;
        let Some(role) = classes
            .iter()
            .find(|c| c.name() == class)
            .and_then(|c| c.spec.get("role").and_then(Value::as_str))
        else {
            return Ok(None);
        };
        return Ok(Some(match cx.iam_role(role).await?.as_ref() {
            Some(r) => r.arn.clone(),
            None => {
                let arn = Arn::parse(cluster_arn);
                format!(
                    "arn:{}:iam::{}:role/{role}",
                    arn.as_ref().map_or("aws", |a| a.partition),
                    arn.as_ref().map_or("", |a| a.account)
                )
            }
        }));
    }
    Ok(None)
}
