//! KD3006: with `spec.instanceProfile` Karpenter launches with a profile made outside it. A
//! profile that does not exist, is given as an ARN, or holds no role fails validation
//! (`InstanceProfileNotFound`) or every launch (`Invalid IAM Instance Profile name`).

use crate::check::prelude::*;
use crate::checks::common::nodeclass::{NodeRoleSource, node_role_source, object};

declare_check! {
    pub static NODECLASS_INSTANCE_PROFILE_INVALID = {
        code: "KD3006",
        slug: "nodeclass-instance-profile-invalid",
        title: "every EC2NodeClass's spec.instanceProfile names an existing instance profile that holds a role",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, IamInstanceProfile],
        self_managed: true,
        run: instance_profile_invalid,
    }
}

async fn instance_profile_invalid(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let NodeRoleSource::InstanceProfile(profile) = node_role_source(nc) else {
            continue;
        };
        if profile.starts_with("arn:") {
            let name = profile.rsplit('/').next().unwrap_or_default().to_string();
            findings.push(
                Finding::new(
                    object(nc),
                    format!("spec.instanceProfile is an ARN ({profile}); Karpenter expects the profile's name"),
                )
                .hint(format!("set spec.instanceProfile: {name}"))
                .fix(format!(
                    "kubectl patch ec2nodeclass {} --type merge -p '{{\"spec\":{{\"instanceProfile\":\"{name}\"}}}}'",
                    nc.name()
                )),
            );
            continue;
        }
        match cx.instance_profile(&profile).await?.as_ref() {
            None => findings.push(
                Finding::new(
                    object(nc),
                    format!("instance profile {profile} does not exist: \"Instance profile \\\"{profile}\\\" not found\" (InstanceProfileNotFound)"),
                )
                .hint("create the profile and add the node role to it, or use spec.role and let Karpenter manage the profile")
                .fix(format!("aws iam create-instance-profile --instance-profile-name {profile}"))
                .fix(format!("aws iam add-role-to-instance-profile --instance-profile-name {profile} --role-name <node role>")),
            ),
            Some(p) if p.roles.is_empty() => findings.push(
                Finding::new(
                    object(nc),
                    format!("instance profile {profile} holds no role: instances launched with it have no credentials and cannot join"),
                )
                .evidence("instanceProfile", p.arn.clone())
                .hint("add the node role to the profile")
                .fix(format!("aws iam add-role-to-instance-profile --instance-profile-name {profile} --role-name <node role>")),
            ),
            Some(_) => {}
        }
    }
    Ok(findings)
}
