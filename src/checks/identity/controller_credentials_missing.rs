//! KD2001: with neither IRSA nor Pod Identity the controller falls back to the node's instance
//! role (or to no credentials at all on Fargate), which is the start of most crash loops.

use crate::check::prelude::*;
use crate::checks::common::wiring::{self, IRSA_ANNOTATION};

declare_check! {
    pub static CONTROLLER_CREDENTIALS_MISSING = {
        code: "KD2001",
        slug: "controller-credentials-missing",
        title: "the controller's ServiceAccount is wired to an IAM role through IRSA or Pod Identity",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods],
        self_managed: true,
        run: credentials_missing,
    }
}

async fn credentials_missing(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    if w.irsa_role_arn.is_some() || !w.associations.is_empty() {
        return Ok(Vec::new());
    }
    let account = w
        .account
        .clone()
        .unwrap_or_else(|| "${AWS_ACCOUNT_ID}".to_string());
    Ok(vec![
        Finding::new(
            w.object(),
            "neither IRSA nor EKS Pod Identity gives the controller an IAM role: it falls back to the node's instance role",
        )
        .evidence("serviceAccount", w.object())
        .evidence(IRSA_ANNOTATION, "absent")
        .evidence("podIdentityAssociations", 0)
        .hint("associate the ServiceAccount with the controller role (Pod Identity), or annotate it with the role ARN (IRSA), then restart the controller")
        .fix(format!(
            "aws eks create-pod-identity-association --cluster-name {} --namespace {} --service-account {} --role-arn arn:aws:iam::{account}:role/KarpenterController-{}",
            w.cluster, w.namespace, w.service_account, w.cluster
        ))
        .fix(w.restart()),
    ])
}
