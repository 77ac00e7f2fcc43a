//! KD2002: IRSA tokens are exchanged against the account's IAM OIDC provider for the cluster's
//! issuer; without it every exchange fails with "No OpenIDConnect provider found".

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::wiring;
use crate::iam::trust::{IRSA_AUDIENCE, IrsaExpectation};

declare_check! {
    pub static IRSA_OIDC_PROVIDER_MISSING = {
        code: "KD2002",
        slug: "irsa-oidc-provider-missing",
        title: "the account has an IAM OIDC provider for the cluster's issuer when IRSA is used",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, EksCluster, OidcProviders],
        self_managed: true,
        run: oidc_provider_missing,
    }
}

async fn oidc_provider_missing(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    let Some(role) = w.irsa_role_arn.as_deref().and_then(Arn::parse) else {
        return Ok(Vec::new());
    };
    // The provider must be in the role's account; another account's providers are not visible.
    if w.account.as_deref().is_some_and(|a| a != role.account) {
        return Ok(Vec::new());
    }
    let cluster = cx.eks_cluster(&w.cluster).await?;
    let Some(issuer) = cluster
        .as_ref()
        .as_ref()
        .and_then(|c| c.oidc_issuer.clone())
    else {
        return Ok(Vec::new());
    };
    let exp = IrsaExpectation::new(
        role.partition,
        role.account,
        &issuer,
        &w.namespace,
        &w.service_account,
    );
    let providers = cx.oidc_providers().await?;
    let fix = format!(
        "eksctl utils associate-iam-oidc-provider --cluster {} --approve",
        w.cluster
    );
    let finding = match providers.iter().find(|p| p.arn == exp.provider_arn || p.url == exp.issuer) {
        None => Finding::new(
            exp.provider_arn.clone(),
            format!("IRSA is configured, but account {} has no IAM OIDC provider for the cluster's issuer", role.account),
        )
        .evidence("issuer", issuer.clone())
        .evidence("providersInAccount", providers.len())
        .hint("create the IAM OIDC provider for this cluster (the InvalidIdentityToken: No OpenIDConnect provider found case)")
        .fix(fix),
        Some(p) if !p.client_ids.iter().any(|c| c == IRSA_AUDIENCE) => Finding::new(
            p.arn.clone(),
            format!("the OIDC provider does not list the audience {IRSA_AUDIENCE}"),
        )
        .evidence("clientIds", p.client_ids.join(", "))
        .hint("add sts.amazonaws.com to the provider's client IDs")
        .fix(format!("aws iam add-client-id-to-open-id-connect-provider --open-id-connect-provider-arn {} --client-id {IRSA_AUDIENCE}", p.arn)),
        Some(_) => return Ok(Vec::new()),
    };
    Ok(vec![finding])
}
