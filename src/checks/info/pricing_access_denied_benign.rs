//! KD9001: `pricing:GetProducts` denied is the most common scary-looking log line of a
//! healthy install (region allow-list SCPs, training accounts). Karpenter ships prices in the
//! binary and keeps working; saying so saves an escalation.

use crate::check::prelude::*;
use crate::checks::common::controller::{controller, log_groups};

declare_check! {
    pub static PRICING_ACCESS_DENIED_BENIGN = {
        code: "KD9001",
        slug: "pricing-access-denied-benign",
        title: "the controller can read AWS pricing",
        category: Info,
        severity: Info,
        needs: [ControllerDeployments, Pods, PodLogs],
        self_managed: true,
        run: pricing_access_denied_benign,
    }
}

async fn pricing_access_denied_benign(cx: &CheckCx) -> CheckResult {
    let groups = log_groups(cx).await?;
    let object = controller(cx).await?.deployment().object();
    Ok(groups
        .iter()
        .filter(|g| g.pattern.is_some_and(|p| p.id == "pricing-access-denied"))
        .map(|g| {
            Finding::new(
                object.clone(),
                format!("pricing:GetProducts is denied ({} log line(s)): Karpenter uses the prices built into its binary; no action is needed", g.count),
            )
            .evidence("count", g.count)
            .evidence("latest", g.example.clone())
            .hint("benign: only the price ranking of instance types newer than the release is affected; allow pricing:GetProducts in us-east-1 to silence it")
        })
        .collect())
}
