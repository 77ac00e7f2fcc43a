//! KD2008: with both mechanisms configured the SDK uses IRSA (web identity comes first in the
//! credential chain), so fixing the Pod Identity side changes nothing.

use crate::check::prelude::*;
use crate::checks::common::wiring;

declare_check! {
    pub static BOTH_IRSA_AND_POD_IDENTITY = {
        code: "KD2008",
        slug: "both-irsa-and-pod-identity",
        title: "the controller uses one credential mechanism, not IRSA and Pod Identity at once",
        category: Identity,
        severity: Info,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods],
        self_managed: true,
        run: both,
    }
}

async fn both(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    let (Some(irsa), Some(association)) = (&w.irsa_role_arn, w.associations.first()) else {
        return Ok(Vec::new());
    };
    Ok(vec![
        Finding::new(
            w.object(),
            format!(
                "both IRSA ({irsa}) and Pod Identity ({}) are configured; the controller uses the IRSA role",
                association.role_arn
            ),
        )
        .evidence("irsaRoleArn", irsa.clone())
        .evidence("podIdentityRoleArn", association.role_arn.clone())
        .evidence("associationId", association.association_id.clone())
        .hint("keep one mechanism: remove the annotation (Pod Identity) or delete the association (IRSA), then restart")
        .fix(format!(
            "kubectl -n {} annotate serviceaccount {} eks.amazonaws.com/role-arn-",
            w.namespace, w.service_account
        ))
        .fix(w.restart()),
    ])
}
