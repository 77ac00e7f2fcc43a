//! KD3007: to launch an instance with the node role, the controller must be allowed
//! `iam:PassRole` on that exact role (path included) for `ec2.amazonaws.com`. Without it
//! every launch fails with UnauthorizedOperation and instance profiles cannot take the role.
//! The simulation is the one KD2101–KD2103 already run; this check names the NodeClass.
//! A class with `spec.instanceProfile` is judged on the profile's role: EC2 checks PassRole
//! on the role inside whichever profile the launch names.

use crate::check::prelude::*;
use crate::checks::common::grants;
use crate::checks::common::codes::NODECLASS_NODE_ROLE_INVALID;
use crate::checks::common::nodeclass::{
    NodeRoleSource, node_role_arn, node_role_source, not_a_node_role, object,
};
use crate::iam::simulation::Attribution;

declare_check! {
    pub static NODECLASS_PASSROLE_DENIED = {
        code: "KD3007",
        slug: "nodeclass-passrole-denied",
        title: "the controller may pass every EC2NodeClass's node role to EC2",
        category: Nodeclass,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole, IamInstanceProfile, EksCluster, Ec2NodeClasses, NodePools, SqsQueue, Simulation, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        self_managed: true,
        run: passrole_denied,
    }
}

const PASS_ROLE: &str = "iam:PassRole";

async fn passrole_denied(cx: &CheckCx) -> CheckResult {
    let g = grants::controller_grants(cx).await?;
    let classes = cx.ec2_nodeclasses().await?;
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let Some(role) = node_role_arn(cx, nc).await? else {
            continue;
        };
        let denied = g.rows.iter().find(|d| {
            d.row.action.eq_ignore_ascii_case(PASS_ROLE)
                && d.row.resource == role
                && d.attribution != Attribution::Allowed
        });
        let Some(d) = denied else {
            continue;
        };
        let (who, hint) = match d.attribution {
            Attribution::Scp => (
                "an organization SCP",
                "ask the SCP owners to allow iam:PassRole of the node role to ec2.amazonaws.com",
            ),
            Attribution::Boundary => (
                "the controller role's permissions boundary",
                "allow iam:PassRole on the node role in the boundary policy",
            ),
            Attribution::IdentityDeny => (
                "an explicit Deny in the controller role's policies",
                "remove the Deny, or narrow it so it spares the node role",
            ),
            _ => (
                "the controller role's policy, which grants it on no matching resource",
                "add the node role's exact ARN (with its path) to the AllowPassingInstanceRole statement",
            ),
        };
        let statement = serde_json::json!({
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": PASS_ROLE,
            "Resource": role,
            "Condition": {"StringEquals": {"iam:PassedToService": g.vars.get("ec2ServicePrincipal").cloned().unwrap_or_else(|| "ec2.amazonaws.com".to_string())}},
        });
        // A class with spec.instanceProfile passes the role inside that profile: say which
        // profile, since the role appears nowhere in the class.
        let profile = match node_role_source(nc) {
            NodeRoleSource::InstanceProfile(p) => Some(p),
            _ => None,
        };
        let via = profile
            .as_ref()
            .map(|p| format!(" (the role of spec.instanceProfile {p})"))
            .unwrap_or_default();
        let mut f = Finding::new(
            object(nc),
            format!("the controller may not iam:PassRole the node role {role}{via}: denied by {who}; launches fail with UnauthorizedOperation"),
        )
        .evidence("controllerRole", g.role.arn.clone())
        .evidence("nodeRole", role.clone())
        .evidence("decision", format!("{:?}", d.row.decision));
        if let Some(p) = profile {
            f = f.evidence("instanceProfile", p);
        }
        f = f.hint(hint);
        // Passing a role that is no node role at all is moot: the class names the wrong role
        // (KD3005), and the fix there (the node role) is what the controller may pass.
        if not_a_node_role(cx, &role).await? {
            f = f.owned_by([NODECLASS_NODE_ROLE_INVALID]);
        }
        if d.attribution == Attribution::NotGranted {
            f = f
                .evidence("statement", statement.clone())
                .fix(format!(
                    "aws iam put-role-policy --role-name {} --policy-name karpenter-pass-node-role --policy-document '{}'",
                    g.role.name,
                    serde_json::json!({"Version": "2012-10-17", "Statement": [statement]})
                ));
        }
        findings.push(f);
    }
    Ok(findings)
}
