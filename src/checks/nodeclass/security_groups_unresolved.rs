//! KD3002: the security groups of a launch come only from `securityGroupSelectorTerms`. A
//! selector that matches nothing ("SecurityGroupSelector did not match any SecurityGroups")
//! stops every launch; groups of another VPC fail it with SecurityGroupSubnetVPCMismatch.

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::selection::{SECURITY_GROUPS, judge_all};
use crate::ec2;

declare_check! {
    pub static NODECLASS_SECURITY_GROUPS_UNRESOLVED = {
        code: "KD3002",
        slug: "nodeclass-security-groups-unresolved",
        title: "every EC2NodeClass selects security groups, all in the cluster VPC",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, Ec2SecurityGroups, EksCluster, ControllerDeployments],
        self_managed: true,
        run: security_groups_unresolved,
    }
}

async fn security_groups_unresolved(cx: &CheckCx) -> CheckResult {
    let (classes, groups, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.security_groups(), cluster(cx)).await;
    let (classes, groups, cluster) = (classes?, groups?, cluster?);
    let region = cx.target().region.unwrap_or_default();
    Ok(judge_all(
        &SECURITY_GROUPS,
        &classes,
        &groups,
        &cluster,
        &region,
        ec2::select_groups,
    ))
}
