//! KD2202: before installing, the account facts an install relies on: the EKS cluster
//! itself, an IAM OIDC provider for its issuer (IRSA), and the Spot service-linked role
//! (Karpenter creates it at the first Spot launch, which many accounts do not allow).

use crate::check::prelude::*;
use crate::checks::common::cluster::name_unknown;
use crate::checks::common::codes::INSTALL_ACTION_BLOCKED_BY_SCP;
use crate::checks::common::spot::SPOT_ROLE;

declare_check! {
    pub static INSTALL_PREREQUISITES_MISSING = {
        code: "KD2202",
        slug: "install-prerequisites-missing",
        title: "the cluster, its IAM OIDC provider and the Spot service-linked role exist",
        category: PreInstall,
        severity: Warning,
        needs: [EksCluster, OidcProviders, IamRole],
        run: install_prerequisites_missing,
    }
}

async fn install_prerequisites_missing(cx: &CheckCx) -> CheckResult {
    let target = cx.target();
    let Some(cluster) = target.cluster.clone() else {
        return Err(name_unknown());
    };
    let region = target.region.clone().unwrap_or_default();
    let mut findings = Vec::new();
    let (eks, providers, spot) = futures::future::join3(
        cx.eks_cluster(&cluster),
        cx.oidc_providers(),
        cx.iam_role(SPOT_ROLE),
    )
    .await;
    match eks?.as_ref() {
        None => findings.push(
            Finding::new(
                format!("EKS cluster {cluster}"),
                format!("the EKS cluster {cluster} does not exist in {region}: Karpenter is installed into an existing cluster"),
            )
            .severity(Severity::Error)
            .hint("create the cluster first (or pass the right --cluster and --region)")
            .fix(format!("aws eks list-clusters --region {region}")),
        ),
        Some(c) => {
            let issuer = c
                .oidc_issuer
                .as_deref()
                .map(|i| i.trim_start_matches("https://").to_string());
            if let Some(host) = issuer
                && !providers?.iter().any(|p| p.url == host)
            {
                findings.push(
                    Finding::new(
                        format!("EKS cluster {cluster}"),
                        "the account has no IAM OIDC provider for the cluster's issuer: IRSA cannot work until one is created (EKS Pod Identity does not need it)",
                    )
                    .evidence("issuer", host.clone())
                    .hint("create the provider if the controller will use IRSA")
                    .fix(format!(
                        "eksctl utils associate-iam-oidc-provider --cluster {cluster} --region {region} --approve"
                    )),
                );
            }
        }
    }
    if spot?.is_none() {
        findings.push(
            Finding::new(
                format!("IAM role {SPOT_ROLE}"),
                format!("the Spot service-linked role does not exist: Karpenter creates it at the first Spot launch, which needs iam:CreateServiceLinkedRole (often blocked; see {INSTALL_ACTION_BLOCKED_BY_SCP})"),
            )
            .hint("create it once now with an identity that may, or keep NodePools on-demand")
            .fix("aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"),
        );
    }
    Ok(findings)
}
