//! KD2004: an IRSA annotation that is not a role ARN, or names a role that does not exist, makes
//! every token exchange fail.

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::wiring::{self, IRSA_ANNOTATION};

declare_check! {
    pub static IRSA_ROLE_INVALID = {
        code: "KD2004",
        slug: "irsa-role-invalid",
        title: "the controller's IRSA annotation names an existing IAM role",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole],
        self_managed: true,
        run: irsa_role_invalid,
    }
}

async fn irsa_role_invalid(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    let Some(annotated) = w.irsa_role_arn.clone() else {
        return Ok(Vec::new());
    };
    let annotate = |arn: &str| {
        format!(
            "kubectl -n {} annotate serviceaccount {} --overwrite {IRSA_ANNOTATION}={arn}",
            w.namespace, w.service_account
        )
    };
    let parsed = Arn::parse(&annotated).filter(|a| a.service == "iam");
    let Some((arn, name)) = parsed.and_then(|a| a.role_name().map(|n| (a, n))) else {
        return Ok(vec![
            Finding::new(w.object(), format!("the {IRSA_ANNOTATION} annotation is not an IAM role ARN: {annotated}"))
                .evidence(IRSA_ANNOTATION, annotated.clone())
                .hint("set the annotation to arn:aws:iam::<account>:role/<name> (with the role's path, if any)")
                .fix(annotate("arn:aws:iam::${AWS_ACCOUNT_ID}:role/<controller-role>"))
                .fix(w.restart()),
        ]);
    };
    // A role in another account cannot be looked up from here; cross-account IRSA is valid.
    if w.account.as_deref().is_some_and(|a| a != arn.account) {
        return Ok(Vec::new());
    }
    let role = cx.iam_role(name).await?;
    let finding = match role.as_ref() {
        None => Finding::new(
            w.object(),
            format!(
                "the annotation names role {name}, which does not exist in account {}",
                arn.account
            ),
        )
        .evidence(IRSA_ANNOTATION, annotated.clone())
        .hint("create the controller role, or point the annotation at the role that exists"),
        Some(r) if r.arn != annotated => Finding::new(
            w.object(),
            format!(
                "the annotation names {annotated}, but the role's ARN is {} (the path differs)",
                r.arn
            ),
        )
        .evidence(IRSA_ANNOTATION, annotated.clone())
        .evidence("roleArn", r.arn.clone())
        .hint("use the role's exact ARN, path included")
        .fix(annotate(&r.arn)),
        Some(_) => return Ok(Vec::new()),
    };
    Ok(vec![finding.fix(w.restart())])
}
