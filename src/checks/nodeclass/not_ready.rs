//! KD3008: the EC2NodeClass status is Karpenter's own verdict. A NodePool whose NodeClass is
//! not Ready is skipped ("ignoring nodepool, not ready"), so nothing launches; a condition
//! stuck Unknown means the controller cannot finish discovery (permissions, network).

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::codes::{
    CONTROLLER_ACTION_BLOCKED_BY_SCP, CONTROLLER_NOT_RUNNING,
    CONTROLLER_PERMISSION_BOUNDARY_BLOCKS, CONTROLLER_PERMISSION_MISSING, NODECLASS_AMI_UNRESOLVABLE,
    NODECLASS_INSTANCE_PROFILE_INVALID, NODECLASS_NODE_ROLE_INVALID, NODECLASS_PASSROLE_DENIED,
    NODECLASS_SECURITY_GROUPS_UNRESOLVED, NODECLASS_SUBNETS_UNRESOLVED,
};
use crate::checks::common::nodeclass::object;
use crate::model::{Condition, Ec2NodeClass};

declare_check! {
    pub static NODECLASS_NOT_READY = {
        code: "KD3008",
        slug: "nodeclass-not-ready",
        title: "every EC2NodeClass is Ready",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses],
        self_managed: true,
        run: not_ready,
    }
}

/// The sub-conditions that roll up into Ready.
const SUB_CONDITIONS: &[&str] = &[
    "SubnetsReady",
    "SecurityGroupsReady",
    "AMIsReady",
    "InstanceProfileReady",
    "ValidationSucceeded",
    "PlacementGroupReady",
    "CapacityReservationsReady",
];

/// The checks that find the cause of a sub-condition, in words; `None` when none does.
fn owner(c: &Condition) -> Option<String> {
    match owner_codes(c) {
        [] => None,
        [one] => Some(one.to_string()),
        [rest @ .., last] => Some(format!("{} and {last}", rest.join(", "))),
    }
}

/// The checks whose failures explain a bad sub-condition (what `owner` names in words).
fn owner_codes(c: &Condition) -> &'static [&'static str] {
    match c.type_.as_str() {
        // The validation's dry-run RunInstances names the instance profile: one that does not
        // exist fails it (InstanceProfileNotFound), and one given as an ARN keeps it from ever
        // running (Unknown, AwaitingReconciliation: aws/karpenter-provider-aws#8072).
        "ValidationSucceeded" if c.reason.to_ascii_lowercase().contains("instanceprofile") => {
            &[NODECLASS_INSTANCE_PROFILE_INVALID]
        }
        "ValidationSucceeded" if c.status == "Unknown" => &[
            NODECLASS_INSTANCE_PROFILE_INVALID,
            NODECLASS_PASSROLE_DENIED,
            CONTROLLER_ACTION_BLOCKED_BY_SCP,
            CONTROLLER_PERMISSION_MISSING,
            CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
        ],
        "SubnetsReady" => &[NODECLASS_SUBNETS_UNRESOLVED],
        "SecurityGroupsReady" => &[NODECLASS_SECURITY_GROUPS_UNRESOLVED],
        "AMIsReady" => &[NODECLASS_AMI_UNRESOLVABLE],
        "InstanceProfileReady" => &[NODECLASS_INSTANCE_PROFILE_INVALID, NODECLASS_NODE_ROLE_INVALID],
        "ValidationSucceeded" => &[
            NODECLASS_PASSROLE_DENIED,
            CONTROLLER_ACTION_BLOCKED_BY_SCP,
            CONTROLLER_PERMISSION_MISSING,
            CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
        ],
        _ => &[],
    }
}

/// The checks that explain a status the controller never wrote or never settled.
const UNSETTLED_OWNERS: &[&str] = &[
    CONTROLLER_NOT_RUNNING,
    CONTROLLER_PERMISSION_MISSING,
    CONTROLLER_ACTION_BLOCKED_BY_SCP,
    CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
];

/// How long a condition may stay Unknown before it counts as stuck: discovery takes seconds.
const STUCK_MINUTES: i64 = 10;

async fn not_ready(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    let now = cx.now();
    // Before Karpenter 0.37 a (v1beta1) EC2NodeClass status had no conditions at all: such a
    // class cannot be judged here, and "not reconciled" would be false.
    let judged = |nc: &&Ec2NodeClass| !(nc.is_v1beta1() && nc.status.conditions.is_empty());
    if !classes.is_empty() && !classes.iter().any(|nc| judged(&nc)) {
        return Err(FactError::NotInstalled {
            what: "EC2NodeClass status conditions (Karpenter 0.37 and later; these v1beta1 classes have none)".to_string(),
        });
    }
    let mut findings = Vec::new();
    for nc in classes.iter().filter(judged) {
        let conditions = &nc.status.conditions;
        let stuck = |c: &Condition| c.status == "Unknown" && c.held_longer_than(now, STUCK_MINUTES);
        let bad: Vec<&Condition> = conditions
            .iter()
            .filter(|c| SUB_CONDITIONS.contains(&c.type_.as_str()))
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
            .filter_map(|c| owner(c).map(|o| format!("{}: see {o}", c.type_)))
            .collect();
        let message = match (ready, bad.first()) {
            (None, _) => format!(
                "has no status conditions: the controller has not reconciled it (is the controller running? see {CONTROLLER_NOT_RUNNING})"
            ),
            (Some(r), Some(first)) => format!(
                "is not Ready ({} {}): {}={} {}: {}",
                r.status, r.reason, first.type_, first.status, first.reason, first.message
            ),
            (Some(r), None) => format!("is not Ready ({} {}): {}", r.status, r.reason, r.message),
        };
        let mut codes: Vec<&str> = bad.iter().flat_map(|c| owner_codes(c)).copied().collect();
        // A status never written, or a condition the controller never settled, is the
        // controller's: it is down (KD1001, linked to its own cause), or cannot make the AWS
        // calls the condition waits on (an alias needs ssm:GetParameter: KD2102).
        let unsettled = ready.is_none()
            || bad.iter().any(|c| c.status == "Unknown")
            || ready.is_some_and(|r| r.status == "Unknown");
        if unsettled {
            codes.extend(UNSETTLED_OWNERS);
        }
        let mut f = Finding::new(object(nc), message)
            .evidence("conditions", described)
            .owned_by_checks(&codes);
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
