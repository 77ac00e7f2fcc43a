//! KD1004: the controller tags, discovers and bootstraps with its own settings. A cluster
//! name, endpoint or region copied from another cluster makes launches fail authorization
//! (tag conditions), nodes join the wrong API server, or the controller fail at start-up.

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::controller::controller;
use crate::target::cluster_from_context;

declare_check! {
    pub static CONTROLLER_SETTINGS_MISMATCH = {
        code: "KD1004",
        slug: "controller-settings-mismatch",
        title: "the controller's cluster name, endpoint and region are the EKS cluster's",
        category: Install,
        severity: Error,
        needs: [ControllerDeployments, Pods, EksCluster],
        self_managed: true,
        run: controller_settings_mismatch,
    }
}

async fn controller_settings_mismatch(cx: &CheckCx) -> CheckResult {
    let c = controller(cx).await?;
    let d = c.deployment();
    let (ns, name) = (d.namespace(), d.name());
    let helm = |set: &str| c.helm_upgrade(set);
    let object = d.object();
    let configured = d.env("CLUSTER_NAME").filter(|n| !n.is_empty());
    // The cluster the user pointed karpdoctor at, independent of the controller's settings.
    let expected = cx.hints().cluster.clone().or_else(|| {
        cx.hints()
            .kube_context_cluster
            .as_deref()
            .and_then(cluster_from_context)
            .map(|(n, _)| n)
    });
    let Some(configured) = configured else {
        return Ok(vec![
            Finding::new(object, "CLUSTER_NAME (settings.clusterName) is not set: the controller exits at start-up (\"missing field, cluster-name\")")
                .hint("set settings.clusterName to the EKS cluster's name")
                .fix(helm(&format!("--set settings.clusterName={}", expected.as_deref().unwrap_or("${CLUSTER_NAME}")))),
        ]);
    };
    let mut findings = Vec::new();
    if let Some(expected) = expected.as_deref()
        && expected != configured
    {
        findings.push(
            Finding::new(
                object.clone(),
                format!("CLUSTER_NAME is {configured:?} but this is cluster {expected:?}: launches are tagged for the wrong cluster and fail the policy's tag conditions"),
            )
            .evidence("CLUSTER_NAME", configured)
            .evidence("cluster", expected)
            .hint("set settings.clusterName to this cluster's name")
            .fix(helm(&format!("--set settings.clusterName={expected}"))),
        );
    }
    let judged = expected.as_deref().unwrap_or(configured);
    let Some(cluster) = cx.eks_cluster(judged).await?.as_ref().clone() else {
        if judged == configured {
            findings.push(
                Finding::new(
                    object,
                    format!("CLUSTER_NAME {configured:?} names no EKS cluster in this account and region: the controller cannot discover its endpoint"),
                )
                .evidence("CLUSTER_NAME", configured)
                .hint("set settings.clusterName to the name `aws eks list-clusters` shows")
                .fix("aws eks list-clusters --region ${AWS_REGION}"),
            );
        }
        return Ok(findings);
    };
    if let Some(endpoint) = d.env("CLUSTER_ENDPOINT").filter(|e| !e.is_empty())
        && normalise(endpoint) != normalise(&cluster.endpoint)
    {
        findings.push(
            Finding::new(
                object.clone(),
                format!("CLUSTER_ENDPOINT is {endpoint} but cluster {} serves at {}: nodes bootstrap against the wrong API server and never register", cluster.name, cluster.endpoint),
            )
            .evidence("CLUSTER_ENDPOINT", endpoint)
            .evidence("clusterEndpoint", cluster.endpoint.clone())
            .hint("remove settings.clusterEndpoint (Karpenter discovers it with eks:DescribeCluster) or correct it")
            .fix(helm("--set settings.clusterEndpoint=")),
        );
    }
    if let Some(region) = d.env("AWS_REGION").filter(|r| !r.is_empty())
        && let Some(arn) = Arn::parse(&cluster.arn)
        && arn.region != region
    {
        findings.push(
            Finding::new(
                object,
                format!("AWS_REGION is {region} but cluster {} is in {}: the controller looks for subnets, AMIs and the cluster in the wrong region", cluster.name, arn.region),
            )
            .evidence("AWS_REGION", region)
            .evidence("clusterRegion", arn.region.to_string())
            .hint("set the controller's AWS_REGION to the cluster's region")
            .fix(format!("kubectl -n {ns} set env deploy/{name} -c {} AWS_REGION={}", c.container(), arn.region)),
        );
    }
    Ok(findings)
}

/// Endpoints compare without scheme case, trailing slashes or a default port.
fn normalise(url: &str) -> String {
    url.trim()
        .trim_end_matches('/')
        .to_ascii_lowercase()
        .trim_end_matches(":443")
        .to_string()
}
