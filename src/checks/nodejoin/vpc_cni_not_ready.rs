//! KD5008: a node that registered stays NotReady until its CNI writes a network config. With
//! the Amazon VPC CNI, that is aws-node's ipamd, which needs EC2 permissions
//! (`AmazonEKS_CNI_Policy`) from its own identity (IRSA, else Pod Identity, else the node
//! role) and its images from ECR. Karpenter waits for Ready, so the NodeClaim never
//! initializes and the node is replaced. This check reads the Karpenter nodes that stayed
//! NotReady with the CNI's message and names which of those causes it can see.

use crate::check::prelude::*;
use crate::checks::common::cluster::name_unknown;
use crate::checks::common::codes::{NODE_AWS_ENDPOINTS_UNREACHABLE, NODECLASS_NODE_ROLE_INVALID};
use crate::checks::common::nodeclaim::stuck;
use crate::checks::common::wiring::irsa_role;

declare_check! {
    pub static VPC_CNI_NOT_READY = {
        code: "KD5008",
        slug: "vpc-cni-not-ready",
        title: "the VPC CNI (aws-node) is ready on Karpenter's nodes",
        category: NodeJoin,
        severity: Error,
        needs: [NodeClaims, Node, ServiceAccount, Pods, PodIdentityAssociations, EksCluster, IamAttachedRolePolicies],
        self_managed: true,
        run: vpc_cni_not_ready,
    }
}

/// The managed policy the VPC CNI needs for IPv4 (cni-iam-role doc).
const CNI_POLICY: &str = "AmazonEKS_CNI_Policy";
/// Nodes named per finding, at most.
const NODES_NAMED: usize = 10;

/// What the kubelet says while no CNI config exists.
fn cni_not_ready(message: &str) -> bool {
    message.contains("NetworkPluginNotReady")
        || message.contains("cni plugin not initialized")
        || message.contains("cni config uninitialized")
}

async fn vpc_cni_not_ready(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let now = cx.now();
    // Registered nodes that never initialized: where a CNI that cannot start shows.
    let nodes: Vec<String> = claims
        .iter()
        .filter(|c| {
            c.status
                .condition("Registered")
                .is_some_and(|r| r.status == "True")
        })
        .filter(|c| stuck(c, "Initialized", now).is_some())
        .filter_map(|c| c.status.node_name.as_deref())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let read = futures::future::join_all(nodes.iter().map(|n| cx.node(n))).await;
    let mut blocked = Vec::new();
    for (name, node) in nodes.iter().zip(read) {
        let node = node?;
        let Some(node) = node.as_ref() else { continue };
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
        // Windows nodes run no aws-node; their network comes from the VPC resource controller.
        let windows = node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/os"))
            .is_some_and(|os| os == "windows");
        if let Some(r) = ready
            && r.status != "True"
            && !windows
            && cni_not_ready(r.message.as_deref().unwrap_or_default())
        {
            blocked.push((name.clone(), r.message.clone().unwrap_or_default()));
        }
    }
    if blocked.is_empty() {
        return Ok(Vec::new());
    }
    // Another CNI (Cilium, Calico) has no aws-node: its readiness is not this check's.
    let sa = cx.service_account("kube-system", "aws-node").await?;
    let Some(sa) = sa.as_ref() else {
        return Err(FactError::NotInstalled {
            what: "the VPC CNI (kube-system/aws-node)".to_string(),
        });
    };
    let pods = cx.pods("kube-system", "k8s-app=aws-node").await?;
    let mut evidence_pods = Vec::new();
    let mut image_pull = false;
    for (node, _) in &blocked {
        for p in pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        {
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            if ready {
                continue;
            }
            let waiting: Vec<String> = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten()
                .chain(
                    p.status
                        .as_ref()
                        .and_then(|s| s.init_container_statuses.as_ref())
                        .into_iter()
                        .flatten(),
                )
                .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
                .collect();
            image_pull |= waiting
                .iter()
                .any(|r| r == "ErrImagePull" || r == "ImagePullBackOff");
            evidence_pods.push(format!(
                "{} on {node}: {}",
                p.metadata.name.as_deref().unwrap_or_default(),
                if waiting.is_empty() {
                    "not ready".to_string()
                } else {
                    waiting.join(", ")
                }
            ));
        }
    }

    // Whose credentials ipamd uses: IRSA wins over Pod Identity, which wins over the node role.
    // The cluster's name (for aws-node's Pod Identity association) and its IP family.
    let Some(name) = cx.target().cluster else {
        return Err(name_unknown());
    };
    let ip_family = cx
        .eks_cluster(&name)
        .await?
        .as_ref()
        .as_ref()
        .and_then(|c| c.ip_family.clone());
    let irsa = irsa_role(sa).map(str::to_string);
    let identity = match irsa {
        Some(arn) => Some(("IRSA", arn)),
        None => cx
            .pod_identity_associations(&name, "kube-system", "aws-node")
            .await?
            .first()
            .map(|a| ("Pod Identity", a.role_arn.clone())),
    };
    let names: Vec<&str> = blocked
        .iter()
        .take(NODES_NAMED)
        .map(|(n, _)| n.as_str())
        .collect();
    let mut f = Finding::new(
        "DaemonSet/kube-system/aws-node",
        format!(
            "the VPC CNI is not ready on {} Karpenter node(s), which stay NotReady (cni plugin not initialized)",
            blocked.len()
        ),
    )
    .evidence("nodes", names.clone())
    .evidence("nodeReady", blocked[0].1.clone());
    if !evidence_pods.is_empty() {
        f = f.evidence("awsNodePods", evidence_pods);
    }
    let ipv6 = ip_family.as_deref() == Some("ipv6");
    let mut cause = None;
    if let Some((how, arn)) = &identity {
        f = f.evidence("cniIdentity", format!("{how} role {arn}"));
        let role = arn.rsplit('/').next().unwrap_or_default();
        // The IPv6 policy is one each account creates under its own name: not judged.
        if !ipv6 && !role.is_empty() {
            let attached = cx.attached_role_policies(role).await?;
            if !attached.iter().any(|p| p.policy_name == CNI_POLICY) {
                cause = Some(format!(
                    "aws-node's {how} role {role} lacks {CNI_POLICY}, so ipamd cannot manage ENIs"
                ));
                f = f.fix(format!(
                    "aws iam attach-role-policy --role-name {role} --policy-arn arn:aws:iam::aws:policy/{CNI_POLICY}"
                ));
            }
        }
    } else {
        f = f.evidence("cniIdentity", "the node role (aws-node has no IRSA or Pod Identity role)");
        // KD3005 judges the node role's policies, CNI policy included.
        f = f.owned_by([NODECLASS_NODE_ROLE_INVALID]);
    }
    if image_pull {
        f = f.owned_by([NODE_AWS_ENDPOINTS_UNREACHABLE]);
        cause.get_or_insert_with(|| "aws-node's images cannot be pulled".to_string());
    }
    if let Some(cause) = &cause {
        f.message = format!("{}: {cause}", f.message);
    }
    f = f
        .hint(match (&cause, &identity) {
            (Some(_), _) => "fix the cause above, then delete the NotReady nodes' NodeClaims so Karpenter replaces them".to_string(),
            (None, None) => format!(
                "aws-node uses the node role: it needs {CNI_POLICY} (see KD3005); else read ipamd's log on the node (/var/log/aws-routed-eni/ipamd.log)"
            ),
            (None, Some(_)) => "read aws-node's logs (kubectl logs -n kube-system -l k8s-app=aws-node -c aws-node) and ipamd's log on the node (/var/log/aws-routed-eni/ipamd.log); a subnet without free addresses is KD3009".to_string(),
        })
        .fix(format!(
            "kubectl get pods -n kube-system -l k8s-app=aws-node -o wide --field-selector spec.nodeName={}",
            names[0]
        ));
    Ok(vec![f])
}
