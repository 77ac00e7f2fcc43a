//! KD4004: EC2 launches Spot instances through the `AWSServiceRoleForEC2Spot` service-linked
//! role, created on first use by whoever launches. Karpenter's policy (rightly) cannot create
//! it, so in an account that never ran Spot every spot launch fails with
//! AuthFailure.ServiceLinkedRoleCreationNotPermitted (SpotSLRCreationFailed).

use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::checks::common::grants;
use crate::checks::common::spot::{SPOT_ROLE, allows_spot, spot_role_arn};
use crate::facts::ContextEntry;
use crate::iam::simulation::{Attribution, attribute};
use crate::model::NodePool;

declare_check! {
    pub static SPOT_SERVICE_LINKED_ROLE_MISSING = {
        code: "KD4004",
        slug: "spot-service-linked-role-missing",
        title: "the Spot service-linked role exists when a NodePool allows spot",
        category: Nodepool,
        severity: Error,
        needs: [NodePools, IamRole, EksCluster, ControllerDeployments, ServiceAccount, PodIdentityAssociations, Pods, Simulation],
        self_managed: true,
        run: spot_service_linked_role_missing,
    }
}

const CREATE: &str = "iam:CreateServiceLinkedRole";

async fn spot_service_linked_role_missing(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let spot: Vec<&NodePool> = pools.iter().filter(|p| allows_spot(p)).collect();
    if spot.is_empty() {
        return Ok(Vec::new());
    }
    if cx.iam_role(SPOT_ROLE).await?.is_some() {
        return Ok(Vec::new());
    }
    let cluster = cluster(cx).await?;
    let arn = cluster_arn(&cluster)?;
    let role_arn = spot_role_arn(&arn);
    // Can the controller create it on first launch? Only then is this survivable.
    let creatable = match grants::optional_controller_role(cx).await? {
        Some(role) => {
            let rows = cx
                .simulate(
                    &role.arn,
                    &[CREATE.to_string()],
                    std::slice::from_ref(&role_arn),
                    &[ContextEntry {
                        key: "iam:AWSServiceName".to_string(),
                        kind: "string".to_string(),
                        values: vec!["spot.amazonaws.com".to_string()],
                    }],
                )
                .await?;
            Some(rows.iter().map(attribute).collect::<Vec<_>>())
        }
        None => None,
    };
    let names: Vec<String> = spot.iter().map(|p| p.name().to_string()).collect();
    let (severity, why) = match creatable.as_deref() {
        Some(a) if !a.is_empty() && a.iter().all(|x| *x == Attribution::Allowed) => (
            Severity::Warning,
            "the controller role may create it on the first spot launch, but that grant is broader than Karpenter needs".to_string(),
        ),
        Some(a) if a.contains(&Attribution::Scp) => (
            Severity::Error,
            "the controller cannot create it, and an organization SCP denies iam:CreateServiceLinkedRole: spot launches fail with AuthFailure.ServiceLinkedRoleCreationNotPermitted".to_string(),
        ),
        Some(_) => (
            Severity::Error,
            "the controller may not create it (iam:CreateServiceLinkedRole is not in its policy): spot launches fail with AuthFailure.ServiceLinkedRoleCreationNotPermitted".to_string(),
        ),
        None => (
            Severity::Error,
            "spot launches fail with AuthFailure.ServiceLinkedRoleCreationNotPermitted unless the launching identity may create it".to_string(),
        ),
    };
    Ok(vec![
        Finding::new(
            format!("IAM role {SPOT_ROLE}"),
            format!(
                "NodePool(s) {} allow spot but the Spot service-linked role {SPOT_ROLE} does not exist in account {}: {why}",
                names.join(", "),
                arn.account
            ),
        )
        .severity(severity)
        .evidence("spotNodePools", names)
        .evidence("role", role_arn)
        .hint("create the role once from an administrator identity (\"has been taken in this account\" means it exists), or restrict the NodePools to on-demand")
        .fix("aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"),
    ])
}
