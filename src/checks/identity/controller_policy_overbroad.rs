//! KD2104: the controller role may do far more than Karpenter ever asks for: IAM or EC2
//! administration, or everything. Install guides that grant `ec2:*` and `iam:*` "to get it
//! working" leave a controller that can create users or delete VPCs.

use crate::check::prelude::*;
use crate::checks::common::codes::CONTROLLER_PERMISSION_MISSING;
use crate::checks::common::grants;
use crate::iam::reference;
use crate::iam::simulation::Decision;

declare_check! {
    pub static CONTROLLER_POLICY_OVERBROAD = {
        code: "KD2104",
        slug: "controller-policy-overbroad",
        title: "the controller role grants no admin actions Karpenter never uses",
        category: Identity,
        severity: Warning,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole, Simulation],
        self_managed: true,
        run: controller_policy_overbroad,
    }
}

/// Actions no Karpenter release uses, one small set per wildcard they reveal. If the role
/// may do them on `*`, its policy grants that service wholesale (or everything).
const SENTINELS: &[(&str, &[&str])] = &[
    (
        "iam:*",
        &[
            "iam:CreateUser",
            "iam:AttachRolePolicy",
            "iam:CreateAccessKey",
        ],
    ),
    (
        "ec2:*",
        &[
            "ec2:DeleteVpc",
            "ec2:AuthorizeSecurityGroupIngress",
            "ec2:CreateVpc",
        ],
    ),
    ("*", &["s3:DeleteBucket", "kms:ScheduleKeyDeletion"]),
];

async fn controller_policy_overbroad(cx: &CheckCx) -> CheckResult {
    let (w, role) = grants::controller_role(cx).await?;
    let actions: Vec<String> = SENTINELS
        .iter()
        .flat_map(|(_, a)| a.iter().map(|s| s.to_string()))
        .collect();
    let rows = cx.simulate(&role.arn, &actions, &[], &[]).await?;
    let allowed = |a: &str| {
        rows.iter()
            .any(|r| r.action == a && r.decision == Decision::Allowed)
    };
    let granted: Vec<&str> = SENTINELS
        .iter()
        .filter(|(_, probes)| probes.iter().any(|a| allowed(a)))
        .map(|(wild, _)| *wild)
        .collect();
    if granted.is_empty() {
        return Ok(Vec::new());
    }
    let examples: Vec<String> = actions.iter().filter(|a| allowed(a)).cloned().collect();
    let mut policies: Vec<String> = rows
        .iter()
        .filter(|r| r.decision == Decision::Allowed)
        .flat_map(|r| r.matched_statements.iter().cloned())
        .collect();
    policies.sort();
    policies.dedup();
    let version = match cx.controller().await? {
        Some((deployments, i)) => {
            crate::model::ControllerDeployment::new(&deployments[i]).version()
        }
        None => None,
    }
    .or_else(|| reference::newest().map(|v| v.to_string()))
    .unwrap_or_default();
    let target = cx.target();
    let mut f = Finding::new(
        format!("IAM role {}", role.name),
        format!(
            "the controller role grants {} on any resource; Karpenter needs none of it",
            granted.join(", ")
        ),
    )
    .severity(Severity::Warning)
    .evidence("allowedOnAnyResource", examples)
    .evidence("role", role.arn.clone())
    .hint(format!("replace the broad statements with the reference controller policy of the installed release (least privilege); karpdoctor then checks nothing is missing ({CONTROLLER_PERMISSION_MISSING})"))
    .fix(format!(
        "karpdoctor reference-policy --karpenter-version {version} --cluster {} --region {} --account {} > controller-policy.json",
        w.cluster,
        target.region.as_deref().unwrap_or("<region>"),
        target.account.as_deref().unwrap_or("<account>"),
    ));
    if !policies.is_empty() {
        f = f.evidence("grantedBy", policies);
    }
    Ok(vec![f])
}
