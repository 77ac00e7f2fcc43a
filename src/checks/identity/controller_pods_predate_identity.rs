//! KD2006: the IRSA and Pod Identity webhooks inject credentials into pods only when they are
//! created, so pods started before the annotation or association keep running without them.

use crate::check::prelude::*;
use crate::checks::common::wiring::{self, pod_env};
use crate::model::object_ref;

declare_check! {
    pub static CONTROLLER_PODS_PREDATE_IDENTITY = {
        code: "KD2006",
        slug: "controller-pods-predate-identity",
        title: "running controller pods carry the credentials their ServiceAccount is wired to",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods],
        self_managed: true,
        run: pods_predate_identity,
    }
}

async fn pods_predate_identity(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    let mut findings = Vec::new();
    for pod in &w.pods {
        let object = object_ref("Pod", &pod.metadata);
        let problem = if let Some(annotated) = &w.irsa_role_arn {
            match (pod_env(pod, "AWS_ROLE_ARN"), pod_env(pod, "AWS_WEB_IDENTITY_TOKEN_FILE")) {
                (None, _) | (_, None) => Some((
                    "the pod has no IRSA credentials (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE): it was created before the annotation".to_string(),
                    annotated.clone(),
                )),
                (Some(env), Some(_)) if env != annotated => Some((
                    format!("the pod uses role {env}, but the annotation now names {annotated}: it was created before the change"),
                    annotated.clone(),
                )),
                _ => None,
            }
        } else if let Some(a) = w.associations.first() {
            pod_env(pod, "AWS_CONTAINER_CREDENTIALS_FULL_URI").is_none().then(|| {
                (
                    "the pod has no Pod Identity credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI): it was created before the association".to_string(),
                    a.role_arn.clone(),
                )
            })
        } else {
            None
        };
        if let Some((message, role)) = problem {
            findings.push(
                Finding::new(object, message)
                    .evidence("expectedRole", role)
                    .evidence(
                        "AWS_ROLE_ARN",
                        pod_env(pod, "AWS_ROLE_ARN").unwrap_or("absent"),
                    )
                    .hint("restart the controller so its pods are created with the credentials")
                    .fix(w.restart()),
            );
        }
    }
    Ok(findings)
}
