//! KD2301: EKS Auto Mode's cluster IAM role. EKS acts as this role to run Auto Mode: its AWS
//! managed policies must be attached, its trust must let EKS tag its session (the policies
//! condition on the session's `eks:eks-cluster-name` tag), and NodeClass `tags` need a grant
//! none of the managed policies gives (aws/containers-roadmap#2487; docs/automode.md §3.1, §3.2).

use crate::arn::Arn;
use crate::automode::role::{CLUSTER_POLICIES, EKS_SERVICE, has_own_policies, missing_policies};
use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::iam::policy::PolicyDocument;
use crate::iam::trust::check_service_trust;
use crate::model::{AutoNodeClass, NodePool};

declare_check! {
    pub static AUTOMODE_CLUSTER_ROLE_INVALID = {
        code: "KD2301",
        slug: "automode-cluster-role-invalid",
        title: "the cluster role of EKS Auto Mode has its policies, lets EKS tag its session, and may set NodeClass tags",
        category: Identity,
        severity: Error,
        needs: [NodePools, AutoNodeClasses, EksCluster, IamRole, IamAttachedRolePolicies, IamRolePolicyNames],
        run: cluster_role_invalid,
    }
}

async fn cluster_role_invalid(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let auto: Vec<&NodePool> = pools.iter().filter(|p| p.is_auto_mode()).collect();
    if auto.is_empty() {
        return Ok(Vec::new());
    }
    let described = cluster(cx).await?;
    if !described.auto_mode() {
        // Auto Mode pools with compute off are KD4201's: nothing acts as the role.
        return Ok(Vec::new());
    }
    let Some(arn) = described.role_arn.clone().filter(|a| !a.is_empty()) else {
        return Err(FactError::NotRecorded {
            fact: "the cluster's roleArn (a bundle from before it was kept)".to_string(),
        });
    };
    let name = Arn::parse(&arn)
        .and_then(|a| a.role_name())
        .unwrap_or(&arn)
        .to_string();
    let (role, attached, inline, classes) = futures::join!(
        cx.iam_role(&name),
        cx.attached_role_policies(&name),
        cx.role_policy_names(&name),
        cx.auto_nodeclasses()
    );
    let (role, attached, inline, classes) = (role?, attached?, inline?, classes?);
    let Some(role) = role.as_ref() else {
        return Ok(vec![
            Finding::new(
                format!("EKS cluster {}", described.name),
                format!("the cluster role {arn} does not exist: EKS Auto Mode acts as it to launch and delete its instances, so it launches nothing"),
            )
            .hint("a cluster's role cannot be changed: create the role again under the same name, with EKS's trust and Auto Mode's five managed policies")
            .fix(format!(
                "aws iam create-role --role-name {name} --assume-role-policy-document '{{\"Version\":\"2012-10-17\",\"Statement\":[{{\"Effect\":\"Allow\",\"Principal\":{{\"Service\":\"eks.amazonaws.com\"}},\"Action\":[\"sts:AssumeRole\",\"sts:TagSession\"]}}]}}'"
            ))
            .fix(format!(
                "for p in {}; do aws iam attach-role-policy --role-name {name} --policy-arn arn:aws:iam::aws:policy/$p; done",
                CLUSTER_POLICIES.join(" ")
            )),
        ]);
    };
    let object = format!("IAM role {}", role.name);
    let own = has_own_policies(&attached, &inline);
    let mut findings = Vec::new();
    let missing = missing_policies(&attached);
    if !missing.is_empty() {
        let mut f = Finding::new(
            object.clone(),
            format!(
                "is EKS Auto Mode's cluster role and lacks {}{}",
                missing.join(", "),
                if own {
                    ": its own policies may grant the same, which is not verified here"
                } else {
                    ": what they grant (launching and deleting instances, volumes, load balancers, network interfaces) Auto Mode cannot do"
                }
            ),
        )
        .evidence("missing", missing.iter().map(|m| m.to_string()).collect::<Vec<_>>())
        .evidence(
            "attached",
            attached.iter().map(|p| p.policy_arn.clone()).collect::<Vec<_>>(),
        )
        .hint("attach AWS's managed policies for Auto Mode to the cluster role (or a policy of your own that grants the same)");
        if own {
            // Equivalent customer policies are allowed; whether these are is not read here.
            f = f.severity(Severity::Warning);
        }
        for m in &missing {
            f = f.fix(format!(
                "aws iam attach-role-policy --role-name {} --policy-arn arn:aws:iam::aws:policy/{m}",
                role.name
            ));
        }
        findings.push(f);
    }
    match PolicyDocument::parse(&role.trust_policy) {
        Ok(doc) => {
            let lacks = check_service_trust(&doc, EKS_SERVICE);
            if !lacks.is_empty() {
                findings.push(
                    Finding::new(
                        object.clone(),
                        format!(
                            "is EKS Auto Mode's cluster role, and its trust policy does not let EKS tag its session ({}): Auto Mode's policies grant only to sessions tagged with the cluster's name",
                            lacks.join("; ")
                        ),
                    )
                    .evidence("trustLacks", lacks.clone())
                    .hint("let eks.amazonaws.com both sts:AssumeRole and sts:TagSession (required when Auto Mode is enabled on an existing cluster)")
                    .fix(format!(
                        "aws iam update-assume-role-policy --role-name {} --policy-document '{{\"Version\":\"2012-10-17\",\"Statement\":[{{\"Effect\":\"Allow\",\"Principal\":{{\"Service\":\"eks.amazonaws.com\"}},\"Action\":[\"sts:AssumeRole\",\"sts:TagSession\"]}}]}}'",
                        role.name
                    )),
                );
            }
        }
        Err(e) => cx.note(format!("the cluster role's trust policy could not be read: {e}")),
    }
    // NodeClass tags: only AWS's managed policies, none of which grants tagging with tags of
    // one's own, is a sure miss; a role with policies of its own may grant it.
    let tagged: Vec<&AutoNodeClass> = classes
        .iter()
        .filter(|c| auto.iter().any(|p| p.class_name() == Some(c.name())))
        .filter(|c| c.spec.get("tags").and_then(|t| t.as_object()).is_some_and(|t| !t.is_empty()))
        .collect();
    if !tagged.is_empty() && !own {
        let names: Vec<String> = tagged.iter().map(|c| c.name().to_string()).collect();
        findings.push(
            Finding::new(
                object.clone(),
                format!(
                    "is EKS Auto Mode's cluster role with only AWS's managed policies, and NodeClasses set tags ({}): those policies do not let Auto Mode put tags of your own on its instances, so their NodeClaims launch nothing while pool and NodeClass report Ready",
                    names.join(", ")
                ),
            )
            .evidence("nodeClasses", names)
            .hint("add to the cluster role the tagging statements of the user guide's \"Custom AWS tags for EKS Auto resources\" (ec2:CreateFleet, ec2:RunInstances, ec2:CreateLaunchTemplate and the others with aws:RequestTag conditions)")
            .fix(format!(
                "aws iam put-role-policy --role-name {} --policy-name AutoModeCustomTags --policy-document file://auto-mode-tags.json",
                role.name
            )),
        );
    } else if !tagged.is_empty() {
        cx.note("NodeClasses set tags and the cluster role has policies of its own: whether they grant Auto Mode's tagging is not simulated");
    }
    Ok(findings)
}
