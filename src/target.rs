//! Which cluster, region, account and Karpenter install a run is about.
//!
//! Users rarely pass all of `--cluster`, `--region` and `--namespace`, so the rest is
//! discovered from facts: the controller Deployment (its namespace, image tag and
//! `CLUSTER_NAME`/`AWS_REGION` settings) and the kube context name (EKS context names are
//! cluster ARNs). The [`Hints`] a run started from are stored in its bundle, so a replay makes
//! the same discoveries from the same facts.

use serde::{Deserialize, Serialize};

use crate::model::ControllerDeployment;

/// What the user said, or what the environment said, before any fact was read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Hints {
    pub cluster: Option<String>,
    pub region: Option<String>,
    pub namespace: Option<String>,
    pub kube_context: Option<String>,
    /// The `cluster` entry the kube context points at (an EKS ARN for `aws eks
    /// update-kubeconfig`, `<name>.<region>.eksctl.io` for eksctl).
    pub kube_context_cluster: Option<String>,
    /// `pre-install --karpenter-version`: the release about to be installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karpenter_version: Option<String>,
    /// The run was `karpdoctor pre-install` (a replay of its bundle runs the same checks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pre_install: bool,
    /// `upgrade --to`: the Karpenter release the install would move to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_to: Option<String>,
    /// `upgrade --kubernetes`: the Kubernetes minor the cluster would move to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_kubernetes: Option<String>,
    /// The run was `karpdoctor upgrade` (a replay of its bundle runs the same checks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upgrade: bool,
    /// The `--history` ConfigMap (`namespace/name`) whose churn record the run read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
}

/// The resolved target, shown in every report header and in JSON `target`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Target {
    pub cluster: Option<String>,
    pub region: Option<String>,
    pub account: Option<String>,
    pub kube_context: Option<String>,
    pub karpenter_namespace: Option<String>,
    pub karpenter_version: Option<String>,
    pub kubernetes_version: Option<String>,
    /// The ARN karpdoctor's own AWS credentials resolve to.
    pub aws_identity: Option<String>,
    /// EKS Auto Mode runs compute in the cluster (`eks:DescribeCluster` `computeConfig`):
    /// [`AUTO_MODE_ONLY`] without a self-managed Karpenter controller, [`AUTO_MODE_MIXED`]
    /// beside one. Absent when Auto Mode's compute is off or the cluster could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_mode: Option<String>,
    /// `karpdoctor upgrade --to`: the Karpenter release the run judged an upgrade to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_to: Option<String>,
    /// `karpdoctor upgrade --kubernetes`: the Kubernetes minor the run judged an upgrade to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_kubernetes: Option<String>,
}

/// `target.autoMode` when EKS Auto Mode is the cluster's only Karpenter.
pub const AUTO_MODE_ONLY: &str = "only";
/// `target.autoMode` when EKS Auto Mode runs beside a self-managed Karpenter controller.
pub const AUTO_MODE_MIXED: &str = "mixed";

/// Cluster name and region encoded in a kube context's cluster entry, if it has a known form.
pub fn cluster_from_context(context_cluster: &str) -> Option<(String, Option<String>)> {
    // arn:aws:eks:us-west-2:111122223333:cluster/my-cluster
    if let Some(arn) = crate::arn::Arn::parse(context_cluster)
        && arn.service == "eks"
        && let Some(name) = arn.resource.strip_prefix("cluster/")
    {
        return Some((name.to_string(), Some(arn.region.to_string())));
    }
    // my-cluster.us-west-2.eksctl.io
    if let Some(rest) = context_cluster.strip_suffix(".eksctl.io")
        && let Some((name, region)) = rest.rsplit_once('.')
    {
        return Some((name.to_string(), Some(region.to_string())));
    }
    None
}

impl Hints {
    /// Cluster name: the flag, then the controller's `CLUSTER_NAME`, then the kube context.
    pub fn resolve_cluster(&self, controller: Option<&ControllerDeployment>) -> Option<String> {
        self.cluster
            .clone()
            .or_else(|| {
                controller
                    .and_then(|c| c.env("CLUSTER_NAME"))
                    .map(str::to_string)
            })
            .or_else(|| {
                self.kube_context_cluster
                    .as_deref()
                    .and_then(cluster_from_context)
                    .map(|(name, _)| name)
            })
    }

    /// Region: the flag or AWS chain, then the kube context ARN, then the controller's setting.
    pub fn resolve_region(&self, controller: Option<&ControllerDeployment>) -> Option<String> {
        self.region
            .clone()
            .or_else(|| {
                self.kube_context_cluster
                    .as_deref()
                    .and_then(cluster_from_context)
                    .and_then(|(_, region)| region)
            })
            .or_else(|| {
                controller
                    .and_then(|c| c.env("AWS_REGION"))
                    .map(str::to_string)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eks_arn_context_gives_cluster_and_region() {
        assert_eq!(
            cluster_from_context("arn:aws:eks:eu-west-1:111122223333:cluster/prod"),
            Some(("prod".into(), Some("eu-west-1".into())))
        );
    }

    #[test]
    fn eksctl_context_gives_cluster_and_region() {
        assert_eq!(
            cluster_from_context("dev-blue.us-east-2.eksctl.io"),
            Some(("dev-blue".into(), Some("us-east-2".into())))
        );
    }

    #[test]
    fn other_contexts_give_nothing() {
        assert_eq!(cluster_from_context("kind-kind"), None);
        assert_eq!(
            cluster_from_context("arn:aws:iam::111122223333:role/x"),
            None
        );
    }

    #[test]
    fn flag_wins_over_context() {
        let hints = Hints {
            cluster: Some("flagged".into()),
            kube_context_cluster: Some("arn:aws:eks:eu-west-1:111122223333:cluster/prod".into()),
            ..Hints::default()
        };
        assert_eq!(hints.resolve_cluster(None).as_deref(), Some("flagged"));
        assert_eq!(hints.resolve_region(None).as_deref(), Some("eu-west-1"));
    }
}
