//! KD1009: the controller's recent ERROR lines, grouped by known cause and tied to the check
//! that owns it, so a log full of one repeated error reads as one finding with a next step.

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::controller::{controller, log_groups};

declare_check! {
    pub static CONTROLLER_LOG_ERRORS = {
        code: "KD1009",
        slug: "controller-log-errors",
        title: "the controller logs no errors",
        category: Install,
        severity: Warning,
        needs: [ControllerDeployments, Pods, PodLogs],
        self_managed: true,
        run: controller_log_errors,
    }
}

/// Unknown errors listed verbatim, at most: the rest are counted.
const MAX_UNKNOWN: usize = 5;

async fn controller_log_errors(cx: &CheckCx) -> CheckResult {
    let groups = log_groups(cx).await?;
    let object = controller(cx).await?.deployment().object();
    let logs = {
        let c = controller(cx).await?;
        format!(
            "kubectl -n {} logs deploy/{} -c {} --since=1h | grep '\"level\":\"ERROR\"'",
            c.deployment().namespace(),
            c.deployment().name(),
            c.container()
        )
    };
    let mut findings = Vec::new();
    let mut unknown = 0;
    for g in groups
        .iter()
        .filter(|g| !g.pattern.is_some_and(|p| p.benign))
    {
        match g.pattern {
            Some(p) => findings.push(
                Finding::new(
                    object.clone(),
                    format!("{} ({} error line(s))", p.summary, g.count),
                )
                .evidence("pattern", p.id)
                .evidence("count", g.count)
                .evidence("latest", g.example.clone())
                .evidence("ownedBy", p.owners.join(", "))
                .hint(format!(
                    "see {} for the cause and its fix",
                    p.owners.join(", ")
                ))
                .owned_by_checks(p.owners)
                .fix(logs.clone()),
            ),
            None if unknown < MAX_UNKNOWN => {
                unknown += 1;
                findings.push(
                    Finding::new(
                        object.clone(),
                        format!("unrecognised error ({} line(s)): {}", g.count, g.example),
                    )
                    .evidence("count", g.count)
                    .evidence("latest", g.example.clone())
                    .hint("karpdoctor does not know this error; read it in context")
                    .fix(logs.clone()),
                );
            }
            None => unknown += 1,
        }
    }
    if unknown > MAX_UNKNOWN {
        findings.push(
            Finding::new(
                object,
                format!(
                    "{} more unrecognised error message(s) not shown",
                    unknown - MAX_UNKNOWN
                ),
            )
            .fix(logs),
        );
    }
    Ok(findings)
}
