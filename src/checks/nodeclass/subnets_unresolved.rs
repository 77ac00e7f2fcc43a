//! KD3001: Karpenter picks subnets only through `subnetSelectorTerms`. A selector that matches
//! nothing leaves `SubnetsReady=False` and no node can launch; one that matches subnets of
//! another VPC launches nodes that cannot join.

use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::selection::{SUBNETS, judge_all};
use crate::ec2;

declare_check! {
    pub static NODECLASS_SUBNETS_UNRESOLVED = {
        code: "KD3001",
        slug: "nodeclass-subnets-unresolved",
        title: "every EC2NodeClass selects subnets, all in the cluster VPC",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, Ec2Subnets, EksCluster, ControllerDeployments],
        self_managed: true,
        run: subnets_unresolved,
    }
}

async fn subnets_unresolved(cx: &CheckCx) -> CheckResult {
    let (classes, subnets, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.subnets(), cluster(cx)).await;
    let (classes, subnets, cluster) = (classes?, subnets?, cluster?);
    let region = cx.target().region.unwrap_or_default();
    Ok(judge_all(
        &SUBNETS,
        &classes,
        &subnets,
        &cluster,
        &region,
        ec2::select_subnets,
    ))
}
