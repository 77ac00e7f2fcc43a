//! KD2102: the controller role's own policies do not grant an action of the reference policy
//! for the controller's release (an implicit deny, or an explicit deny in the role's
//! policies). The usual cause is a policy written for another release or a hand-trimmed copy.

use crate::check::prelude::*;
use crate::checks::common::evidence::capped;
use crate::checks::common::grants;
use crate::checks::common::statements::{by_statement, put_statement};
use crate::iam::simulation::Attribution;

declare_check! {
    pub static CONTROLLER_PERMISSION_MISSING = {
        code: "KD2102",
        slug: "controller-permission-missing",
        title: "the controller role grants every action of the reference policy for its release",
        category: Identity,
        severity: Error,
        needs: [ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, IamRole, IamInstanceProfile, EksCluster, Ec2NodeClasses, NodePools, SqsQueue, Simulation, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        self_managed: true,
        run: controller_permission_missing,
    }
}

async fn controller_permission_missing(cx: &CheckCx) -> CheckResult {
    let g = grants::controller_grants(cx).await?;
    // Per reference statement: the rows it covers that the role's policies do not allow.
    let per_statement = by_statement(
        &g,
        g.denied_by(Attribution::NotGranted)
            .chain(g.denied_by(Attribution::IdentityDeny)),
    );
    let mut findings = Vec::new();
    for (sid, (statement, rows)) in per_statement {
        let explicit = rows
            .iter()
            .any(|d| d.attribution == Attribution::IdentityDeny);
        let missing_context: Vec<String> = {
            let mut keys: Vec<String> = rows
                .iter()
                .flat_map(|d| d.row.missing_context_values.iter().cloned())
                .collect();
            keys.sort();
            keys.dedup();
            keys
        };
        let mut f = Finding::new(
            g.object(),
            format!(
                "{} by the role's policies ({} of Karpenter {}): {}",
                if explicit {
                    "explicitly denied"
                } else {
                    "not granted"
                },
                sid,
                g.version,
                statement.feature
            ),
        )
        // The gravest of its actions: an optional feature's action alone is a warning.
        .severity(
            rows.iter()
                .map(|d| g.severity_of(&d.row.action))
                .max()
                .unwrap_or(Severity::Error),
        )
        .evidence("missing", capped(grants::describe(&rows), 8))
        .evidence("statement", sid.clone())
        .evidence("role", g.role.arn.clone());
        if !missing_context.is_empty() {
            // Keys the role's policy tests that karpdoctor did not supply: its conditions
            // differ from the reference, which is often the whole problem.
            f = f.evidence("contextKeysNotSupplied", missing_context);
        }
        if let Some(note) = g.version_note() {
            f = f.evidence("note", note);
        }
        if explicit {
            f = f.hint("a Deny statement in the role's own policies matches; remove or narrow it (matched statements are listed by `aws iam simulate-principal-policy`)");
        } else {
            f = f.hint(format!(
                "add the reference statement for Karpenter {} (or re-apply the release's controller policy)",
                g.version
            ));
        }
        if let Some(fix) = put_statement(&g, &statement) {
            f = f.fix(fix);
        }
        findings.push(f);
    }
    Ok(findings)
}
