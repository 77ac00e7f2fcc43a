//! KD1101: before `karpdoctor upgrade --to VERSION`, the controller role must grant what the
//! target release needs: its reference policy (`data/controller-policy.json` at the target),
//! simulated for this install's role, classes and queue as KD2102 simulates the installed
//! release's, with SCPs and the permissions boundary attributed as KD2101 and KD2103 do
//! (docs/upgrade.md §3.1). Releases add actions (1.3 `ec2:DescribeCapacityReservations`, 1.7
//! `iam:ListInstanceProfiles`, 1.11 `ec2:DescribePlacementGroups`, 1.12
//! `ec2:DescribeInstanceStatus`) and conditions (1.0's `eks:eks-cluster-name` tag). A role
//! attaching the getting-started stack's single controller policy by name is warned that the
//! stack's 1.9 template replaces it with five.

use crate::check::prelude::*;
use crate::checks::common::evidence::capped;
use crate::checks::common::grants::{self, Decided, Grants};
use crate::iam::reference::{Version, controller_policy_names};
use crate::checks::common::statements::{by_statement, put_statement};
use crate::checks::common::upgrade::targets;
use crate::iam::simulation::Attribution;

declare_check! {
    pub static UPGRADE_PERMISSIONS_MISSING = {
        code: "KD1101",
        slug: "upgrade-permissions-missing",
        title: "the controller role grants what the target release needs",
        category: Upgrade,
        severity: Error,
        needs: [ControllerDeployments, KubeVersion, ServiceAccount, PodIdentityAssociations, Pods, IamRole, IamAttachedRolePolicies, IamInstanceProfile, EksCluster, Ec2NodeClasses, NodePools, SqsQueue, Simulation, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        self_managed: true,
        run: upgrade_permissions_missing,
    }
}

async fn upgrade_permissions_missing(cx: &CheckCx) -> CheckResult {
    let t = targets(cx).await?;
    // Without a new release the policy the controller needs does not change.
    if !t.to_given || t.from == Some(t.to) {
        return Ok(Vec::new());
    }
    let g = grants::controller_grants_at(cx, t.to).await?;
    let denied = [
        Attribution::NotGranted,
        Attribution::IdentityDeny,
        Attribution::Boundary,
        Attribution::Scp,
    ];
    // Per reference statement: its rows the role may not do at the target, and who stops them.
    let per_statement = by_statement(&g, denied.into_iter().flat_map(|who| g.denied_by(who)));
    let from = t
        .from
        .map_or_else(|| "the installed release".to_string(), |v| v.to_string());
    let mut findings = Vec::new();
    for (sid, (statement, rows)) in per_statement {
        let by = stopped_by(&rows);
        // The gravest of its actions for this install: an optional feature alone is a warning.
        let severity = rows
            .iter()
            .map(|d| g.severity_of(&d.row.action))
            .max()
            .unwrap_or(Severity::Error);
        let after = if severity == Severity::Error {
            "those calls fail"
        } else {
            "the feature they serve stops working"
        };
        let mut f = Finding::new(
            g.object(),
            format!(
                "Karpenter {} needs {} ({sid}: {}), which the role {by}: after the upgrade from {from}, {after}",
                g.version,
                capped(grants::describe(&rows), 4).join(", "),
                statement.feature
            ),
        )
        .severity(severity)
        .evidence("missing", capped(grants::describe(&rows), 8))
        .evidence("statement", sid.clone())
        .evidence("to", g.version.to_string())
        .evidence("role", g.role.arn.clone())
        .hint(format!(
            "apply Karpenter {}'s controller policy before upgrading the controller (its CloudFormation template, or `karpdoctor reference-policy --karpenter-version {}`)",
            g.version, g.version
        ));
        if let Some(fix) = put_statement(&g, &statement) {
            f = f.fix(fix);
        }
        findings.push(f.in_step(PlanStep::Iam));
    }
    if let Some(f) = split_policies(cx, &g, t.from, t.to).await? {
        findings.push(f);
    }
    Ok(findings)
}

/// The 1.9 upgrade notes: the getting-started stack's single controller policy is split into
/// five (six from 1.12). A role that attaches a policy of the installed release's stack by name,
/// and not its replacements, keeps working until the stack is updated to the target's
/// template, which replaces it (docs/upgrade.md §3.1 rule a). A warning: it breaks on that
/// update, not before.
async fn split_policies(
    cx: &CheckCx,
    g: &Grants,
    from: Option<Version>,
    to: Version,
) -> Result<Option<Finding>, FactError> {
    let Some(from) = from else { return Ok(None) };
    let now = controller_policy_names(from, &g.vars);
    let then = controller_policy_names(to, &g.vars);
    let replaced: Vec<&String> = now.iter().filter(|n| !then.contains(n)).collect();
    if replaced.is_empty() {
        return Ok(None);
    }
    let attached = cx.attached_role_policies(&g.role.name).await?;
    let has = |name: &str| attached.iter().any(|p| p.policy_name == name);
    let held: Vec<String> = replaced
        .iter()
        .filter(|n| has(n))
        .map(|n| n.to_string())
        .collect();
    let missing: Vec<String> = then.iter().filter(|n| !has(n)).cloned().collect();
    if held.is_empty() || missing.is_empty() {
        return Ok(None);
    }
    let partition = g.vars.get("partition").map_or("aws", String::as_str);
    let account = g.vars.get("account").map_or("<account>", String::as_str);
    let mut f = Finding::new(
        g.object(),
        format!(
            "attaches {}, the controller policy of the getting-started CloudFormation stack, which the stack's template for {to} replaces with {} (the upgrade guide's 1.9 notes): once the stack is updated, the role is left without the controller's permissions",
            held.join(", "),
            missing.join(", ")
        ),
    )
    .severity(Severity::Warning)
    .evidence("attached", held)
    .evidence("replacedBy", missing.clone())
    .evidence("to", to.to_string())
    .hint("update the stack to the target's template, then attach its policies to the role (the permissions they grant are the same)");
    // The policies exist once the stack runs the target's template (the getting-started
    // guide's own commands), and only then can they be attached.
    let cluster = g.vars.get("cluster").map_or("<cluster>", String::as_str);
    f = f
        .fix(format!(
            "curl -fsSL https://raw.githubusercontent.com/aws/karpenter-provider-aws/v{to}/website/content/en/preview/getting-started/getting-started-with-karpenter/cloudformation.yaml > karpenter-{to}.yaml"
        ))
        .fix(format!(
            "aws cloudformation deploy --stack-name Karpenter-{cluster} --template-file karpenter-{to}.yaml --capabilities CAPABILITY_NAMED_IAM --parameter-overrides ClusterName={cluster}"
        ));
    for name in &missing {
        f = f.fix(format!(
            "aws iam attach-role-policy --role-name {} --policy-arn arn:{partition}:iam::{account}:policy/{name}",
            g.role.name
        ));
    }
    Ok(Some(f.in_step(PlanStep::Iam)))
}

/// Who stops the rows, gravest first: an SCP (no policy of the role can fix it), the
/// boundary, an explicit Deny, or a missing grant.
fn stopped_by(rows: &[&Decided]) -> &'static str {
    let has = |a: Attribution| rows.iter().any(|d| d.attribution == a);
    if has(Attribution::Scp) {
        "may not do under an organization SCP"
    } else if has(Attribution::Boundary) {
        "may not do under its permissions boundary"
    } else if has(Attribution::IdentityDeny) {
        "is explicitly denied by its own policies"
    } else {
        "is not granted by its policies"
    }
}
