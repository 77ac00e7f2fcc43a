//! KD2103: the controller role's permissions boundary does not allow an action the
//! controller needs, whatever the role's own policies grant.

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::evidence::capped;
use crate::checks::common::grants::{self, Decided};
use crate::iam::features;
use crate::iam::simulation::Attribution;

declare_check! {
    pub static CONTROLLER_PERMISSION_BOUNDARY_BLOCKS = {
        code: "KD2103",
        slug: "controller-permission-boundary-blocks",
        title: "the controller role's permissions boundary allows what the controller needs",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole, IamInstanceProfile, EksCluster, Ec2NodeClasses, NodePools, SqsQueue, Simulation, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        self_managed: true,
        run: controller_permission_boundary_blocks,
    }
}

async fn controller_permission_boundary_blocks(cx: &CheckCx) -> CheckResult {
    let g = grants::controller_grants(cx).await?;
    let (partial, blocked): (Vec<&Decided>, Vec<&Decided>) = g
        .denied_by(Attribution::Boundary)
        .partition(|d| d.launch.as_ref().is_some_and(|l| l.partial()));
    let boundary = g
        .role
        .permissions_boundary_arn
        .clone()
        .unwrap_or_else(|| "(the role's permissions boundary)".to_string());
    // Denied for some instance types only: the others launch (a warning of its own).
    let partial =
        grants::partial_launch_finding(&g, &partial, &format!("the permissions boundary {boundary}"));
    if blocked.is_empty() {
        return Ok(partial.into_iter().collect());
    }
    let mut per_feature: BTreeMap<&str, Vec<&Decided>> = BTreeMap::new();
    for d in &blocked {
        per_feature
            .entry(features::of(&d.row.action).id)
            .or_default()
            .push(d);
    }
    let breaks: Vec<String> = per_feature
        .iter()
        .map(|(id, rows)| format!("{id}: {}", grants::describe(rows).join("; ")))
        .collect();
    let mut f = Finding::new(
        g.object(),
        format!(
            "the permissions boundary {boundary} does not allow {} action(s) the controller needs",
            grants::describe(&blocked).len()
        ),
    )
    .severity(
        blocked
            .iter()
            .map(|d| g.severity_of(&d.row.action))
            .max()
            .unwrap_or(Severity::Error),
    )
    .evidence("boundary", boundary.clone())
    .evidence("blocked", capped(breaks, 10))
    .evidence("role", g.role.arn.clone())
    .hint("add the actions to the boundary policy (a boundary only limits; the role's own policy still has to grant them), or attach a boundary that allows the reference policy")
    .fix(format!(
        "aws iam get-policy-version --policy-arn {boundary} --version-id $(aws iam get-policy --policy-arn {boundary} --query Policy.DefaultVersionId --output text)"
    ));
    f = grants::launch_evidence(f, &blocked);
    if let Some(note) = g.version_note() {
        f = f.evidence("note", note);
    }
    Ok(std::iter::once(f).chain(partial).collect())
}
