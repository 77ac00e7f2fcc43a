//! KD2003: the trust policy of the IRSA role decides which ServiceAccount of which cluster may
//! assume it. A namespace, provider or key that does not match refuses every exchange.

use serde_json::json;

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::wiring;
use crate::iam::policy::PolicyDocument;
use crate::iam::trust::{IrsaExpectation, check_irsa};

declare_check! {
    pub static IRSA_TRUST_POLICY_MISMATCH = {
        code: "KD2003",
        slug: "irsa-trust-policy-mismatch",
        title: "the IRSA role's trust policy lets the controller's ServiceAccount assume it",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, EksCluster, IamRole],
        self_managed: true,
        run: trust_mismatch,
    }
}

async fn trust_mismatch(cx: &CheckCx) -> CheckResult {
    let w = wiring::resolve(cx).await?;
    let Some(arn) = w.irsa_role_arn.as_deref().and_then(Arn::parse) else {
        return Ok(Vec::new());
    };
    let Some(name) = arn.role_name() else {
        return Ok(Vec::new()); // not a role ARN: KD2004 reports it
    };
    if w.account.as_deref().is_some_and(|a| a != arn.account) {
        return Ok(Vec::new());
    }
    let (cluster, role) =
        futures::future::join(cx.eks_cluster(&w.cluster), cx.iam_role(name)).await;
    let (Some(cluster), Some(role)) = (cluster?.as_ref().clone(), role?.as_ref().clone()) else {
        return Ok(Vec::new()); // no cluster or no role: KD2004 and the run notes say so
    };
    let Some(issuer) = cluster.oidc_issuer else {
        return Ok(Vec::new());
    };
    let exp = IrsaExpectation::new(
        arn.partition,
        arn.account,
        &issuer,
        &w.namespace,
        &w.service_account,
    );
    let doc = match PolicyDocument::parse(&role.trust_policy) {
        Ok(doc) => doc,
        Err(e) => {
            return Ok(vec![
                Finding::new(
                    role.arn.clone(),
                    format!("the role's trust policy cannot be read: {}", e.0),
                )
                .hint("replace the trust policy with the statement karpdoctor prints")
                .evidence("correctedStatement", exp.statement()),
            ]);
        }
    };
    let problems = check_irsa(&doc, &exp);
    if problems.is_empty() {
        return Ok(Vec::new());
    }
    let blocking = problems.iter().any(|p| p.blocks());
    let corrected = json!({"Version": "2012-10-17", "Statement": [exp.statement()]});
    let finding = Finding::new(
        role.arn.clone(),
        format!(
            "the trust policy does not let {} assume the role: {}",
            exp.subject(),
            problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; ")
        ),
    )
    .evidence("expectedSubject", exp.subject())
    .evidence("expectedProvider", exp.provider_arn.clone())
    .evidence("correctedStatement", exp.statement())
    .hint("replace the IRSA statement of the trust policy with the corrected statement (keep any other statements)")
    .fix(format!(
        "aws iam update-assume-role-policy --role-name {name} --policy-document '{}'",
        corrected
    ))
    .fix(w.restart());
    Ok(vec![if blocking {
        finding
    } else {
        finding.severity(Severity::Warning)
    }])
}
