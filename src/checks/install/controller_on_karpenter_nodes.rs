//! KD1006: a controller on a node it manages can consolidate or expire that node and evict
//! itself, leaving nothing to provision the replacement.

use crate::check::prelude::*;
use crate::checks::common::controller::controller;
use crate::model::object_ref;

declare_check! {
    pub static CONTROLLER_ON_KARPENTER_NODES = {
        code: "KD1006",
        slug: "controller-on-karpenter-nodes",
        title: "the controller runs on nodes Karpenter does not manage",
        category: Install,
        severity: Warning,
        needs: [ControllerDeployments, Pods, Node],
        self_managed: true,
        run: controller_on_karpenter_nodes,
    }
}

const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

async fn controller_on_karpenter_nodes(cx: &CheckCx) -> CheckResult {
    let c = controller(cx).await?;
    let mut findings = Vec::new();
    for pod in c.pods.iter() {
        let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            continue;
        };
        let node = cx.node(node_name).await?;
        let Some(pool) = node
            .as_ref()
            .as_ref()
            .and_then(|n| n.metadata.labels.as_ref())
            .and_then(|l| l.get(NODEPOOL_LABEL))
        else {
            continue;
        };
        findings.push(
            Finding::new(
                object_ref("Pod", &pod.metadata),
                format!("runs on node {node_name}, which Karpenter manages (NodePool {pool}): disrupting that node evicts the controller that would replace it"),
            )
            .evidence("node", node_name)
            .evidence("nodePool", pool.clone())
            .hint("keep the chart's node affinity (karpenter.sh/nodepool DoesNotExist) and run the controller on a managed node group or Fargate")
            .fix(format!(
                "kubectl -n {} get deploy {} -o jsonpath='{{.spec.template.spec.affinity}}'",
                c.deployment().namespace(),
                c.deployment().name()
            )),
        );
    }
    Ok(findings)
}
