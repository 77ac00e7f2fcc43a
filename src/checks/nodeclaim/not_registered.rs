//! KD6002: instances that launch but never join ("Node not registered with cluster"). The
//! NodeClaim is deleted after 15 minutes and a new one launches, so the symptom is churn and
//! the cause is almost always node authentication (aws-auth, access entries) or the volume key.

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::codes::{
    ACCESS_ENTRY_WRONG_TYPE, AWS_AUTH_MALFORMED, CONTROLLER_SETTINGS_MISMATCH,
    NODE_ROLE_NOT_MAPPED, NODECLASS_EBS_KMS_UNUSABLE, NODECLASS_NODE_ROLE_INVALID,
};
use crate::checks::common::nodeclaim::{object, pool_of, stuck};

declare_check! {
    pub static NODECLAIM_NOT_REGISTERED = {
        code: "KD6002",
        slug: "nodeclaim-not-registered",
        title: "launched NodeClaims register their nodes",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Events],
        run: not_registered,
    }
}

/// The checks that find why a launched instance does not join.
const OWNERS: &[&str] = &[
    NODE_ROLE_NOT_MAPPED,
    AWS_AUTH_MALFORMED,
    ACCESS_ENTRY_WRONG_TYPE,
    NODECLASS_EBS_KMS_UNUSABLE,
    CONTROLLER_SETTINGS_MISMATCH,
    // A node role without the EKS node policies cannot register its node.
    NODECLASS_NODE_ROLE_INVALID,
];

async fn not_registered(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let now = cx.now();
    let mut findings = Vec::new();
    for claim in claims.iter() {
        if claim
            .status
            .condition("Launched")
            .is_none_or(|c| c.status != "True")
        {
            continue;
        }
        let Some(c) = stuck(claim, "Registered", now) else {
            continue;
        };
        let instance = claim
            .status
            .rest
            .get("providerID")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        findings.push(
            Finding::new(object(claim), format!("launched but its node never registered ({})", c.describe()))
                .evidence("nodePool", pool_of(claim))
                .evidence("condition", c.describe())
                .evidence("providerID", instance)
                .evidence("since", c.last_transition_time.clone().unwrap_or_default())
                .hint(format!("the instance runs but the API server refuses or never hears from its kubelet: see {}", OWNERS.join(", ")))
                .owned_by_checks(OWNERS)
                .fix(format!("kubectl describe nodeclaim {}", claim.metadata.name.as_deref().unwrap_or_default()))
                .fix(format!(
                    "aws ec2 get-console-output --instance-id {} --latest --output text",
                    instance.rsplit('/').next().unwrap_or("<instance-id>")
                )),
        );
    }
    let events = cx.events("NodeClaim", None).await?;
    for e in events
        .0
        .iter()
        .filter(|e| e.reason == "UnregisteredTaintMissing")
    {
        findings.push(
            Finding::new(format!("NodeClaim/{}", e.name), "the node registered without the karpenter.sh/unregistered taint: custom user data must register the kubelet with it (required since v1.0)")
                .evidence("event", e.message.clone())
                .evidence("count", e.count)
                .hint("add karpenter.sh/unregistered:NoExecute to the kubelet's registerWithTaints in the EC2NodeClass user data")
                .fix("kubectl get ec2nodeclass -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.amiFamily}{\"\\n\"}{end}'"),
        );
    }
    Ok(findings)
}
