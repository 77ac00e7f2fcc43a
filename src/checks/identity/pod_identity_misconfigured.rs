//! KD2005: EKS Pod Identity needs three things besides the association: the agent running on
//! the controller's node, a role that trusts `pods.eks.amazonaws.com` for `sts:AssumeRole` and
//! `sts:TagSession`, and a node that is not Fargate (where Pod Identity is not supported).

use std::collections::BTreeSet;

use serde_json::json;

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::codes::IRSA_TRUST_POLICY_MISMATCH;
use crate::checks::common::wiring;
use crate::iam::policy::PolicyDocument;
use crate::iam::trust::{check_pod_identity, pod_identity_statement};
use crate::model::object_ref;

declare_check! {
    pub static POD_IDENTITY_MISCONFIGURED = {
        code: "KD2005",
        slug: "pod-identity-misconfigured",
        title: "the controller's Pod Identity works: agent running, role trusted, not on Fargate",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, Node, EksAddon, IamRole],
        self_managed: true,
        run: pod_identity_misconfigured,
    }
}

/// The add-on (and DaemonSet) that serves Pod Identity credentials on each node.
pub const AGENT: &str = "eks-pod-identity-agent";

async fn pod_identity_misconfigured(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    // Pod Identity is in use only when chosen alone: with IRSA too, IRSA wins (KD2008).
    let Some(association) = w.associations.first().filter(|_| w.irsa_role_arn.is_none()) else {
        return Ok(Vec::new());
    };
    let mut findings = Vec::new();

    // Where the controller runs: Fargate nodes cannot use Pod Identity.
    let nodes: BTreeSet<String> = w
        .pods
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    let mut ec2_nodes = Vec::new();
    for name in &nodes {
        let node = cx.node(name).await?;
        let fargate = name.starts_with("fargate-")
            || node
                .as_ref()
                .as_ref()
                .and_then(|n| n.metadata.labels.as_ref())
                .and_then(|l| l.get("eks.amazonaws.com/compute-type"))
                .is_some_and(|t| t == "fargate");
        if fargate {
            findings.push(
                Finding::new(format!("Node/{name}"), "the controller runs on Fargate, where EKS Pod Identity is not supported")
                    .evidence("node", name.clone())
                    .hint(format!("use IRSA on Fargate: annotate the ServiceAccount with a role whose trust allows this cluster's OIDC provider (run karpdoctor again: {IRSA_TRUST_POLICY_MISMATCH} prints the statement), or run the controller on EC2 nodes"))
                    .fix(format!(
                        "kubectl -n {} annotate serviceaccount {} eks.amazonaws.com/role-arn={}",
                        w.namespace, w.service_account, association.role_arn
                    )),
            );
        } else {
            ec2_nodes.push(name.clone());
        }
    }

    // The agent: the add-on, and an agent pod on each EC2 node hosting the controller.
    if !ec2_nodes.is_empty() {
        let (addon, agents) = futures::future::join(
            cx.eks_addon(&w.cluster, AGENT),
            cx.pods("kube-system", &format!("app.kubernetes.io/name={AGENT}")),
        )
        .await;
        let (addon, agents) = (addon?, agents?);
        let install = format!(
            "aws eks create-addon --cluster-name {} --addon-name {AGENT}",
            w.cluster
        );
        match addon.as_ref() {
            None if agents.is_empty() => findings.push(
                Finding::new(format!("EKSAddon/{AGENT}"), "the EKS Pod Identity Agent is not installed: no pod gets Pod Identity credentials")
                    .evidence("addon", "absent")
                    .evidence("agentPods", 0)
                    .hint("install the eks-pod-identity-agent add-on")
                    .fix(install.clone())
                    .fix(w.restart()),
            ),
            Some(a) if a.status != "ACTIVE" => findings.push(
                Finding::new(format!("EKSAddon/{AGENT}"), format!("the EKS Pod Identity Agent add-on is {}, not ACTIVE", a.status))
                    .evidence("status", a.status.clone())
                    .hint("look at the add-on's health issues")
                    .fix(format!("aws eks describe-addon --cluster-name {} --addon-name {AGENT}", w.cluster)),
            ),
            _ => {
                let agent_nodes: BTreeSet<&str> = agents
                    .iter()
                    .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                    .filter_map(|p| p.spec.as_ref()?.node_name.as_deref())
                    .collect();
                for node in ec2_nodes.iter().filter(|n| !agent_nodes.contains(n.as_str())) {
                    let pods: Vec<String> = w
                        .pods
                        .iter()
                        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node.as_str()))
                        .map(|p| object_ref("Pod", &p.metadata))
                        .collect();
                    findings.push(
                        Finding::new(format!("Node/{node}"), "no running Pod Identity Agent pod on the node that hosts the controller")
                            .evidence("controllerPods", pods.join(", "))
                            .hint("the agent DaemonSet must tolerate the node's taints; check why its pod is not running there")
                            .fix(format!("kubectl -n kube-system get pods -l app.kubernetes.io/name={AGENT} -o wide")),
                    );
                }
            }
        }
    }

    // The role must trust the Pod Identity service principal.
    if let Some(name) = Arn::parse(&association.role_arn).and_then(|a| a.role_name())
        && let Some(role) = cx.iam_role(name).await?.as_ref()
    {
        let problems = match PolicyDocument::parse(&role.trust_policy) {
            Ok(doc) => check_pod_identity(&doc),
            Err(e) => vec![e.to_string()],
        };
        if !problems.is_empty() {
            let doc = json!({"Version": "2012-10-17", "Statement": [pod_identity_statement()]});
            findings.push(
                Finding::new(role.arn.clone(), format!("the role's trust does not allow EKS Pod Identity: {}", problems.join("; ")))
                    .evidence("associationId", association.association_id.clone())
                    .evidence("correctedStatement", pod_identity_statement())
                    .hint("add a statement trusting pods.eks.amazonaws.com with sts:AssumeRole and sts:TagSession (keep any other statements)")
                    .fix(format!("aws iam update-assume-role-policy --role-name {name} --policy-document '{doc}'")),
            );
        }
    }
    Ok(findings)
}
