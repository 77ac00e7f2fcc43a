//! KD2301: EKS Auto Mode's cluster IAM role. EKS acts as this role to run Auto Mode: its AWS
//! managed policies must be attached, its trust must let EKS tag its session (the policies
//! condition on the session's `eks:eks-cluster-name` tag), NodeClass `tags` need a grant
//! none of the managed policies gives (aws/containers-roadmap#2487), and no organization SCP may
//! deny what EKS does as the role to launch (simulated as EKS asks: #2583, #2624; docs/auto-mode.md
//! §3.1, §3.2, §3.4).

use crate::arn::Arn;
use crate::automode::role::{
    CLUSTER_POLICIES, EKS_SERVICE, Place, associate_public_ip, has_own_policies,
    launch_requests, missing_policies,
};
use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::iam::policy::PolicyDocument;
use crate::iam::simulation::{Attribution, Decision, Row, attribute};
use crate::iam::trust::check_service_trust;
use crate::model::{AutoNodeClass, NodePool};

declare_check! {
    pub static AUTOMODE_CLUSTER_ROLE_INVALID = {
        code: "KD2301",
        slug: "automode-cluster-role-invalid",
        title: "the cluster role of EKS Auto Mode has its policies, lets EKS tag its session, may set NodeClass tags, and no SCP blocks its launches",
        category: Identity,
        severity: Error,
        needs: [NodePools, AutoNodeClasses, EksCluster, IamRole, IamAttachedRolePolicies, IamRolePolicyNames, Simulation],
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
    {
        let cluster_arn = cluster_arn(&described)?;
        let at = Place {
            partition: cluster_arn.partition,
            region: cluster_arn.region,
            account: cluster_arn.account,
            cluster: &described.name,
        };
        for class in classes.iter() {
            let users: Vec<&NodePool> = auto
                .iter()
                .copied()
                .filter(|p| p.class_name() == Some(class.name()))
                .collect();
            if users.is_empty() {
                continue;
            }
            if let Some(f) = scp_denies(cx, &role.arn, class, &users, &at).await? {
                findings.push(f);
            }
        }
    }
    Ok(findings)
}

/// Rule 4: an organization SCP denies the cluster role something EKS asks for to launch from
/// `class`. Only the SCP's decision is read: the role's own grants are rules 1 to 3 (the
/// managed policies condition on the session's tags, which a simulation does not carry).
async fn scp_denies(
    cx: &CheckCx,
    role_arn: &str,
    class: &AutoNodeClass,
    pools: &[&NodePool],
    at: &Place<'_>,
) -> Result<Option<Finding>, FactError> {
    let mut names: Vec<String> = pools
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    // The request is the same for every pool but the pool-name tag: the first by name stands
    // (not the first listed: the API server and a bundle may list them in other orders).
    names.sort();
    let pool_name = names[0].as_str();
    let mut denied: Vec<(&'static str, String)> = Vec::new();
    for launch in launch_requests(class, pool_name, at) {
        let rows = cx
            .simulate(role_arn, &launch.actions, &launch.resources, &launch.context)
            .await?;
        let scp: Vec<_> = rows
            .iter()
            .filter(|r| attribute(r) == Attribution::Scp)
            .collect();
        // IAM reports an SCP's decision per action; where some of its resources are denied
        // explicitly and the others only not granted (the managed policies condition on the
        // session's tags, which a simulation lacks), the explicit ones are what the SCP hit.
        let explicit = |r: &&Row| r.decision == Decision::ExplicitDeny;
        for row in scp.iter().filter(|r| {
            explicit(r)
                || !scp
                    .iter()
                    .any(|o| o.action == r.action && explicit(o))
        }) {
            let what = format!("{} on {}", row.action, row.resource);
            if !denied.iter().any(|(_, w)| *w == what) {
                denied.push((launch.step, what));
            }
        }
    }
    if denied.is_empty() {
        return Ok(None);
    }
    let mut steps: Vec<&str> = denied.iter().map(|(s, _)| *s).collect();
    steps.dedup();
    let iam = denied.iter().any(|(_, w)| w.starts_with("iam:"));
    let interface = denied.iter().any(|(_, w)| w.contains(":network-interface/"));
    let public_unset = associate_public_ip(class).is_none();
    let mut f = Finding::new(
        class.object(),
        format!(
            "EKS Auto Mode cannot launch from it: an organization SCP denies the cluster role what it asks for when {} ({}), so {} {} {} no nodes",
            steps.join(" and "),
            denied.iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>().join(", "),
            if names.len() == 1 { "NodePool" } else { "NodePools" },
            names.join(", "),
            if names.len() == 1 { "gets" } else { "get" }
        ),
    )
    .evidence("clusterRole", role_arn.to_string())
    .evidence(
        "deniedBySCP",
        denied.iter().map(|(_, w)| w.clone()).collect::<Vec<_>>(),
    )
    .evidence("nodePools", names.clone());
    f = if interface && public_unset && class.eks_managed() {
        // EKS overwrites its own NodeClass: the setting goes on a NodeClass of one's own.
        f.hint("an SCP that forbids public addresses denies the launch unless the request says it asks for none, and the built-in default NodeClass cannot say so (EKS overwrites edits to it): create a NodeClass of your own with spec.advancedNetworking.associatePublicIPAddress: false (its role needs an EC2 access entry with AmazonEKSAutoNodePolicy), NodePools on it, and turn the built-in pools off")
    } else if interface && public_unset {
        // aws/containers-roadmap#2583: a Deny on network-interface/* when a public address is
        // asked for (BoolIfExists); unset, the request carries no answer and is denied.
        f.hint("an SCP that forbids public addresses denies the launch unless the request says it asks for none: set spec.advancedNetworking.associatePublicIPAddress: false on the NodeClass")
            .fix(format!(
                "kubectl patch nodeclass {} --type merge -p '{{\"spec\":{{\"advancedNetworking\":{{\"associatePublicIPAddress\":false}}}}}}'",
                class.name()
            ))
    } else if iam {
        // aws/containers-roadmap#2624: SCPs that keep IAM changes to a deployment account.
        f.hint("with spec.role, EKS adds the node role to an instance profile and passes it to EC2 as the cluster role; set spec.instanceProfile to a profile made beforehand with the node role in it, so EKS changes no IAM, or ask the SCP's owners for an exception for the cluster role")
    } else {
        f.hint("ask the SCP's owners for an exception for the cluster role, or give the NodeClass what the SCP requires of a launch (tags it requires go in spec.tags, with the cluster role allowed to set them)")
    };
    Ok(Some(f.fix(format!(
        "aws iam simulate-principal-policy --policy-source-arn {role_arn} --action-names {} --query 'EvaluationResults[].[EvalActionName,OrganizationsDecisionDetail]'",
        denied
            .iter()
            .filter_map(|(_, w)| w.split(' ').next())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(" ")
    ))))
}
