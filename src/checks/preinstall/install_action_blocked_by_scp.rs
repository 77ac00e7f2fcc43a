//! KD2201: before installing, which actions of an install an organization SCP blocks, and
//! the configuration that needs none of them. Answers "what can I install here at all?" for
//! sandbox and training accounts before the first failed `helm install`.

use std::collections::BTreeMap;

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::caller::principal_arn;
use crate::checks::common::cluster::{minor, name_unknown};
use crate::checks::common::codes::CONTROLLER_ACTION_BLOCKED_BY_SCP;
use crate::checks::common::grants::base_vars;
use crate::facts::ContextEntry;
use crate::iam::reference::{self, InstallStep, Version};
use crate::iam::simulation::{Attribution, attribute};

declare_check! {
    pub static INSTALL_ACTION_BLOCKED_BY_SCP = {
        code: "KD2201",
        slug: "install-action-blocked-by-scp",
        title: "no action a Karpenter install needs is blocked by an organization SCP",
        category: PreInstall,
        severity: Error,
        needs: [CallerIdentity, IamRole, EksCluster, Simulation],
        run: install_action_blocked_by_scp,
    }
}

/// The configuration that avoids an action, in a few words (for the summary line).
fn avoided_by(action: &str) -> &'static str {
    match action {
        a if a.starts_with("sqs:") || a.starts_with("events:") => {
            "no interruption queue (settings.interruptionQueue empty)"
        }
        "eks-auth:AssumeRoleForPodIdentity"
        | "eks:CreatePodIdentityAssociation"
        | "eks:CreateAddon" => "IRSA for the controller",
        "iam:CreateOpenIDConnectProvider" => "EKS Pod Identity for the controller (not on Fargate)",
        "ssm:GetParameter" => "AMIs pinned by id, name or tags (no alias)",
        "kms:CreateKey" => "the AWS-managed aws/ebs key or encrypted: false",
        "iam:CreateServiceLinkedRole" => {
            "on-demand capacity only (or a pre-created AWSServiceRoleForEC2Spot)"
        }
        "iam:CreateInstanceProfile" => "spec.role (Karpenter manages instance profiles)",
        "iam:CreateRole" | "iam:CreatePolicy" | "iam:AttachRolePolicy" => {
            "roles and policies created by the platform team"
        }
        "eks:CreateAccessEntry" => "an aws-auth mapRoles entry for the node role",
        "cloudformation:CreateStack" => {
            "Terraform, CDK or a pipeline instead of the getting-started stack"
        }
        "pricing:GetProducts" => "nothing (built-in prices are used)",
        _ => "an exception from the SCP owners",
    }
}

async fn install_action_blocked_by_scp(cx: &CheckCx) -> CheckResult {
    let hints = cx.hints().clone();
    let target = cx.target();
    let Some(cluster) = target.cluster.clone() else {
        return Err(name_unknown());
    };
    let version = match hints.karpenter_version.as_deref() {
        Some(v) => Version::parse(v),
        None => reference::newest(),
    };
    let Some(version) = version.and_then(|v| match reference::coverage(v)? {
        reference::Coverage::Covered(v) => Some(v),
        reference::Coverage::Newer { used } => Some(used),
        reference::Coverage::Older { .. } => None,
    }) else {
        return Err(FactError::NotInstalled {
            what: "reference data for this Karpenter release".to_string(),
        });
    };
    let caller = cx.caller_identity().await?;
    let principal = principal_arn(cx, &caller.arn).await?;
    let region = target.region.clone().unwrap_or_default();
    let partition = Arn::parse(&caller.arn)
        .map_or("aws", |a| a.partition)
        .to_string();
    let eks = cx.eks_cluster(&cluster).await?;
    let cluster_arn = match eks.as_ref() {
        Some(c) => c.arn.clone(),
        None => format!(
            "arn:{partition}:eks:{region}:{}:cluster/{cluster}",
            caller.account
        ),
    };
    let Some(parsed) = Arn::parse(&cluster_arn) else {
        return Err(FactError::Malformed {
            message: format!("the cluster ARN {cluster_arn:?} is not an ARN"),
        });
    };
    let mut vars = base_vars(&parsed, &cluster, &cluster_arn);
    vars.insert(
        "controllerRoleArn".into(),
        format!(
            "arn:{partition}:iam::{}:role/KarpenterControllerRole-{cluster}",
            parsed.account
        ),
    );
    if let Some(c) = eks.as_ref() {
        if let Some(k) = minor(&c.version) {
            vars.insert("k8sVersion".into(), k);
        }
        if let Some(issuer) = &c.oidc_issuer {
            vars.insert(
                "oidcIssuerHostPath".into(),
                issuer.trim_start_matches("https://").to_string(),
            );
        }
    }
    let steps = reference::install_steps(version, &vars);
    // One simulation per distinct (resources, context); each batches its actions.
    let mut batches: BTreeMap<(Vec<String>, Vec<ContextEntry>), Vec<&InstallStep>> =
        BTreeMap::new();
    for s in &steps {
        batches
            .entry((s.resources.clone(), s.context.clone()))
            .or_default()
            .push(s);
    }
    let batches: Vec<_> = batches.into_iter().collect();
    let answers = futures::future::join_all(batches.iter().map(|((resources, context), steps)| {
        let mut actions: Vec<String> = steps.iter().map(|s| s.action.clone()).collect();
        actions.sort();
        actions.dedup();
        let principal = principal.clone();
        async move { cx.simulate(&principal, &actions, resources, context).await }
    }))
    .await;
    let mut blocked: BTreeMap<&str, &InstallStep> = BTreeMap::new();
    for (((_, _), steps), answer) in batches.iter().zip(answers) {
        for row in answer? {
            if attribute(&row) == Attribution::Scp
                && let Some(step) = steps.iter().find(|s| s.action == row.action)
            {
                blocked.insert(step.action.as_str(), step);
            }
        }
    }
    let mut findings: Vec<Finding> = blocked
        .values()
        .map(|step| {
            let mut f = Finding::new(
                step.action.clone(),
                format!(
                    "blocked by an organization SCP (the statement is not visible to the simulator): disables {}",
                    step.disables
                ),
            )
            .evidence("purpose", step.purpose.clone())
            .evidence("resources", step.resources.clone())
            .hint(format!("workaround: {}", step.workaround));
            if step.principal != "installer" {
                f = f.evidence(
                    "whoCalls",
                    match step.principal.as_str() {
                        "controllerHostNodeRole" => "the role of the node running the controller (the SCP applies to every role in the account)",
                        _ => "any role of the account",
                    },
                );
            }
            // Blocks that disable nothing Karpenter needs (pricing, a KMS key of one's own)
            // are worth knowing, not worth failing the run over.
            if step.action == "pricing:GetProducts" || step.disables.starts_with("nothing") {
                f = f.severity(Severity::Info);
            }
            f
        })
        .collect();
    if !blocked.is_empty() {
        let mut config: Vec<&str> = blocked.keys().map(|a| avoided_by(a)).collect();
        config.sort();
        config.dedup();
        findings.push(
            Finding::new(
                format!("account {}", parsed.account),
                format!(
                    "a Karpenter {version} install that works under these SCPs: {}",
                    config.join("; ")
                ),
            )
            .severity(Severity::Info)
            .evidence("simulatedAs", principal.clone())
            .hint(format!("apply each workaround above, then run karpdoctor after installing: {CONTROLLER_ACTION_BLOCKED_BY_SCP} checks the controller role the same way")),
        );
    }
    Ok(findings)
}
