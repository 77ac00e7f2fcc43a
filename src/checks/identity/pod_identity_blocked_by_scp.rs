//! KD2007: with EKS Pod Identity the agent on the controller's node calls
//! `eks-auth:AssumeRoleForPodIdentity` as the *node's* role. An SCP that denies that call
//! leaves the controller without credentials, and nothing on the controller role fixes it.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::{grants, wiring};
use crate::iam::simulation::{Attribution, attribute};

declare_check! {
    pub static POD_IDENTITY_BLOCKED_BY_SCP = {
        code: "KD2007",
        slug: "pod-identity-blocked-by-scp",
        title: "the controller's node role may exchange Pod Identity tokens (no SCP blocks it)",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, Node, EksCluster, EksNodegroup, Ec2NodeClasses, IamRole, Simulation],
        self_managed: true,
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
    let mut unattributed = Vec::new();
    for name in &nodes {
        let role_arn = match node_role(cx, &w.cluster, &cluster.arn, name).await? {
            NodeRole::Role(arn) => arn,
            // Pod Identity does not run on Fargate at all: KD2005 says so.
            NodeRole::Fargate => continue,
            NodeRole::Unattributed => {
                unattributed.push(name.clone());
                continue;
            }
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
    // Nothing simulated is not a pass: say which node karpdoctor could not attribute.
    if checked.is_empty() && !unattributed.is_empty() {
        return Err(FactError::NotFound {
            message: format!(
                "cannot tell the IAM role of node {} (neither a managed node group nor a Karpenter node)",
                unattributed.join(", ")
            ),
        });
    }
    Ok(findings)
}

enum NodeRole {
    Role(String),
    Fargate,
    /// Neither a managed node group nor a Karpenter node (a self-managed group, say).
    Unattributed,
}

/// The IAM role a node runs with: its managed node group's `nodeRole`, or the `spec.role` of
/// the EC2NodeClass that launched it.
async fn node_role(
    cx: &CheckCx,
    cluster: &str,
    cluster_arn: &str,
    name: &str,
) -> Result<NodeRole, FactError> {
    let node = cx.node(name).await?;
    let labels = node
        .as_ref()
        .as_ref()
        .and_then(|n| n.metadata.labels.clone())
        .unwrap_or_default();
    if name.starts_with("fargate-")
        || labels
            .get("eks.amazonaws.com/compute-type")
            .is_some_and(|t| t == "fargate")
    {
        return Ok(NodeRole::Fargate);
    }
    if let Some(group) = labels.get("eks.amazonaws.com/nodegroup") {
        let ng = cx.eks_nodegroup(cluster, group).await?;
        return Ok(match ng.as_ref() {
            Some(n) => NodeRole::Role(n.node_role.clone()),
            None => NodeRole::Unattributed,
        });
    }
    if let Some(class) = labels.get("karpenter.k8s.aws/ec2nodeclass") {
        let classes = cx.ec2_nodeclasses().await?;
        let role = classes
            .iter()
            .find(|c| c.name() == class)
            .and_then(|c| c.spec.get("role").and_then(Value::as_str));
        if let (Some(role), Some(arn)) = (role, Arn::parse(cluster_arn)) {
            return Ok(NodeRole::Role(grants::role_arn(cx, role, &arn).await?));
        }
    }
    Ok(NodeRole::Unattributed)
}
