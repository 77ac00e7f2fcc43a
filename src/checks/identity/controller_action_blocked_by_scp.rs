//! KD2101: an organization SCP denies an action the controller needs. No allow in the
//! account overrides it, so the way out is an exception or a configuration that no longer
//! needs the action; findings are grouped by the feature the actions break.

use std::collections::BTreeMap;

use crate::check::prelude::*;
use crate::checks::common::evidence::capped;
use crate::checks::common::grants::{self, Decided};
use crate::iam::features;
use crate::iam::simulation::Attribution;

declare_check! {
    pub static CONTROLLER_ACTION_BLOCKED_BY_SCP = {
        code: "KD2101",
        slug: "controller-action-blocked-by-scp",
        title: "no action the controller needs is blocked by an organization SCP",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole, IamInstanceProfile, EksCluster, Ec2NodeClasses, NodePools, SqsQueue, Simulation, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        self_managed: true,
        run: controller_action_blocked_by_scp,
    }
}

async fn controller_action_blocked_by_scp(cx: &CheckCx) -> CheckResult {
    let g = grants::controller_grants(cx).await?;
    let mut by_feature: BTreeMap<&str, (features::Feature, Vec<&Decided>)> = BTreeMap::new();
    let mut partial = Vec::new();
    for d in g.denied_by(Attribution::Scp) {
        // Denied for some instance types only: the others launch (a warning of its own).
        if d.launch.as_ref().is_some_and(|l| l.partial()) {
            partial.push(d);
            continue;
        }
        let f = features::of(&d.row.action);
        by_feature.entry(f.id).or_insert((f, Vec::new())).1.push(d);
    }
    let partial = grants::partial_launch_finding(&g, &partial, "an organization SCP");
    Ok(by_feature
        .into_values()
        .map(|(feature, rows)| {
            let mut f = Finding::new(
                g.object(),
                format!(
                    "blocked by an organization SCP (the statement is not visible to the simulator): {}",
                    feature.breaks
                ),
            )
            .evidence("feature", feature.id)
            .evidence("blocked", capped(grants::describe(&rows), 8))
            .evidence("role", g.role.arn.clone())
            .evidence("karpenterVersion", g.version.to_string())
            .hint(format!("workaround: {}", feature.workaround));
            f = f.severity(
                rows.iter()
                    .map(|d| g.severity_of(&d.row.action))
                    .max()
                    .unwrap_or(Severity::Error),
            );
            // Asked again with what this install's launches carry: the block is real.
            f = grants::launch_evidence(f, &rows);
            if let Some(note) = g.version_note() {
                f = f.evidence("note", note);
            }
            f
        })
        .chain(partial)
        .collect())
}
