//! KD3008: the EC2NodeClass status is Karpenter's own verdict. A NodePool whose NodeClass is
//! not Ready is skipped ("ignoring nodepool, not ready"), so nothing launches; a condition
//! stuck Unknown means the controller cannot finish discovery (permissions, network).

use super::object;
use crate::check::prelude::*;
use crate::model::Condition;

declare_check! {
    pub static NODECLASS_NOT_READY = {
        code: "KD3008",
        slug: "nodeclass-not-ready",
        title: "every EC2NodeClass is Ready",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses],
        run: not_ready,
    }
}

/// The sub-conditions that roll up into Ready, and the check that finds each one's cause.
const SUB_CONDITIONS: &[(&str, &str)] = &[
    ("SubnetsReady", "KD3001"),
    ("SecurityGroupsReady", "KD3002"),
    ("AMIsReady", "KD3003"),
    ("InstanceProfileReady", "KD3006 and KD3005"),
    ("ValidationSucceeded", "KD3007 and KD2101-KD2103"),
    ("PlacementGroupReady", ""),
    ("CapacityReservationsReady", ""),
];

/// How long a condition may stay Unknown before it counts as stuck: discovery takes seconds.
const STUCK_MINUTES: i64 = 10;

async fn not_ready(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    let now = cx.now();
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let conditions = &nc.status.conditions;
        let stuck = |c: &Condition| c.status == "Unknown" && c.held_longer_than(now, STUCK_MINUTES);
        let bad: Vec<&Condition> = conditions
            .iter()
            .filter(|c| SUB_CONDITIONS.iter().any(|(t, _)| *t == c.type_))
            .filter(|c| c.status == "False" || stuck(c))
            .collect();
        let ready = nc.status.condition("Ready");
        let ready_bad = match ready {
            None => conditions.is_empty(),
            Some(c) => c.status == "False" || stuck(c),
        };
        if bad.is_empty() && !ready_bad {
            continue;
        }
        let described: Vec<String> = bad
            .iter()
            .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
            .collect();
        let owners: Vec<String> = bad
            .iter()
            .filter_map(|c| SUB_CONDITIONS.iter().find(|(t, _)| *t == c.type_))
            .filter(|(_, owner)| !owner.is_empty())
            .map(|(t, owner)| format!("{t}: see {owner}"))
            .collect();
        let message = match (ready, bad.first()) {
            (None, _) => "has no status conditions: the controller has not reconciled it (is the controller running? see KD1001)".to_string(),
            (Some(r), Some(first)) => format!(
                "is not Ready ({} {}): {}={} {}: {}",
                r.status, r.reason, first.type_, first.status, first.reason, first.message
            ),
            (Some(r), None) => format!("is not Ready ({} {}): {}", r.status, r.reason, r.message),
        };
        let mut f = Finding::new(object(nc), message).evidence("conditions", described);
        if let Some(r) = ready {
            f = f.evidence("Ready", format!("{} {}: {}", r.status, r.reason, r.message));
        }
        f = if owners.is_empty() {
            f.hint("read the controller's log for the nodeclass controller's errors")
        } else {
            f.evidence("rootCauseChecks", owners.clone()).hint(format!(
                "the controller's reason points at {}",
                owners.join("; ")
            ))
        };
        findings.push(f.fix(format!(
            "kubectl get ec2nodeclass {} -o jsonpath='{{range .status.conditions[*]}}{{.type}}={{.status}} {{.reason}}: {{.message}}{{\"\\n\"}}{{end}}'",
            nc.name()
        )));
    }
    Ok(findings)
}
