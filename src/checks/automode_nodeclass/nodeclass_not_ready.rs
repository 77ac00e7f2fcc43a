//! KD3101: an EKS Auto Mode NodeClass that cannot launch: not Ready (its conditions quoted as
//! Auto Mode gives them, linked to their cause), or its pod subnets leaving a node zone without
//! pod addresses (docs/automode.md §7.3).

use crate::automode::nodeclass::{NotReady, Selected, not_ready, select, zones_without_pod_subnets};
use crate::check::prelude::*;
use crate::checks::common::codes::{
    AUTOMODE_CLUSTER_ROLE_INVALID, AUTOMODE_NODE_ACCESS_MISSING, AUTOMODE_NODEPOOL_UNSERVED,
};
use crate::model::{AutoNodeClass, Condition, NodePool};

declare_check! {
    pub static AUTOMODE_NODECLASS_NOT_READY = {
        code: "KD3101",
        slug: "automode-nodeclass-not-ready",
        title: "every EKS Auto Mode NodeClass is Ready and gives every node zone pod addresses",
        category: Nodeclass,
        severity: Error,
        needs: [AutoNodeClasses, NodePools, Ec2Subnets, Ec2SecurityGroups],
        run: nodeclass_not_ready,
    }
}

/// Auto Mode's reasons whose cause another check finds.
fn owners(conditions: &[Condition]) -> Vec<&'static str> {
    let mut out = Vec::new();
    if conditions.iter().any(|c| c.reason == "UnauthorizedNodeRole") {
        out.push(AUTOMODE_NODE_ACCESS_MISSING);
    }
    // EKS acts as the cluster role to add the node role to its instance profile and for the
    // DryRun launches of validation (Karpenter's reasons, which Auto Mode inherits): an SCP
    // or a missing grant on that role fails them (aws/containers-roadmap#2583, #2624).
    if conditions.iter().any(|c| {
        c.status == "False"
            && (c.reason == "InstanceProfileCreationFailed" || c.reason.ends_with("AuthCheckFailed"))
    }) {
        out.push(AUTOMODE_CLUSTER_ROLE_INVALID);
    }
    out
}

async fn nodeclass_not_ready(cx: &CheckCx) -> CheckResult {
    // Auto Mode's NodeClasses matter where a NodePool uses Auto Mode; elsewhere they are not
    // read at all (bundles from before they were kept judge the same).
    let pools = cx.nodepools().await?;
    if !pools.iter().any(|p| p.is_auto_mode()) {
        return Ok(Vec::new());
    }
    let classes = cx.auto_nodeclasses().await?;
    let (subnets, groups) = futures::future::join(cx.subnets(), cx.security_groups()).await;
    let (subnets, groups) = (subnets?, groups?);
    let now = cx.now();
    let mut findings = Vec::new();
    for class in classes.iter() {
        let users = users(class, &pools);
        // A NodeClass no pool uses launches nothing now: it breaks the first pool that names it.
        let severity = if users.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        };
        let selected = select(class, &subnets, &groups);
        let empty = match &selected {
            Ok(s) => unresolved(s),
            Err(_) => Vec::new(),
        };
        match not_ready(class, now) {
            Some(why) => findings.push(
                not_ready_finding(class, why, &empty, &selected, &users).severity(severity),
            ),
            // Auto Mode says Ready: an empty selection here is how this run reads the
            // selectors, not Auto Mode's verdict (§8.2), so it is said, not counted as broken.
            None if !empty.is_empty() => findings.push(
                Finding::new(
                    class.object(),
                    format!(
                        "is Ready, yet {} in this region: Auto Mode may read its selectors differently (they are run here as an EC2NodeClass's are); verify the NodeClass's status",
                        empty.join(" and ")
                    ),
                )
                .severity(Severity::Warning)
                .fix(format!("kubectl get nodeclass {} -o yaml", class.name())),
            ),
            None => {}
        }
        if let Ok(s) = &selected {
            let gaps = zones_without_pod_subnets(s);
            if !gaps.is_empty() {
                let gaps: Vec<String> = gaps.into_iter().collect();
                let pod_zones: Vec<String> = s
                    .pod_subnets
                    .iter()
                    .map(|p| format!("{} ({})", p.subnet_id, p.availability_zone))
                    .collect();
                findings.push(
                    Finding::new(
                        class.object(),
                        format!(
                            "selects node subnets in {} but no pod subnet there: a node's pods take addresses only from a pod subnet in its own zone, so pods on nodes in {} fail with \"failed to assign an IP address to container\"",
                            gaps.join(", "),
                            if gaps.len() == 1 { "that zone" } else { "those zones" }
                        ),
                    )
                    .severity(severity)
                    .evidence("zonesWithoutPodSubnets", gaps)
                    .evidence("podSubnets", pod_zones)
                    .evidence("nodePools", users.clone())
                    .hint("tag a pod subnet in every zone the node subnets cover, or narrow subnetSelectorTerms to the zones that have one")
                    .fix(format!("kubectl edit nodeclass {}", class.name())),
                );
            }
        }
    }
    Ok(findings)
}

/// The NodePools that name the NodeClass.
fn users(class: &AutoNodeClass, pools: &[NodePool]) -> Vec<String> {
    pools
        .iter()
        .filter(|p| p.is_auto_mode() && p.class_name() == Some(class.name()))
        .map(|p| p.name().to_string())
        .collect()
}

/// The selectors that pick nothing, in words.
fn unresolved(s: &Selected<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if !s.subnet_terms.is_empty() && s.subnets.is_empty() {
        out.push("its subnetSelectorTerms select no subnet".to_string());
    }
    if !s.group_terms.is_empty() && s.groups.is_empty() {
        out.push("its securityGroupSelectorTerms select no security group".to_string());
    }
    if !s.pod_subnet_terms.is_empty() && s.pod_subnets.is_empty() {
        out.push("its podSubnetSelectorTerms select no subnet".to_string());
    }
    out
}

fn not_ready_finding(
    class: &AutoNodeClass,
    why: NotReady,
    empty: &[String],
    selected: &Result<Selected<'_>, String>,
    users: &[String],
) -> Finding {
    let mut f = match why {
        NotReady::NeverReconciled => Finding::new(
            class.object(),
            "has no status: EKS Auto Mode never reconciled it, and the NodePools that name it launch nothing",
        )
        // Nothing reconciles NodeClasses while Auto Mode's compute is off: KD4201 says so.
        .owned_by([AUTOMODE_NODEPOOL_UNSERVED])
        .hint("check that Auto Mode's compute is on for the cluster (aws eks describe-cluster … computeConfig) and read the NodeClass's events"),
        NotReady::Conditions(conditions) => {
            let ready = conditions.last().map(Condition::describe).unwrap_or_default();
            let codes = owners(&conditions);
            let hint = if codes.is_empty() {
                "the conditions are Auto Mode's own words: fix what the first one names".to_string()
            } else {
                format!("see {}", codes.join(", "))
            };
            Finding::new(class.object(), format!("is not Ready: {ready}"))
                .owned_by(codes)
                .evidence(
                    "conditions",
                    conditions.iter().map(Condition::describe).collect::<Vec<_>>(),
                )
                .hint(hint)
        }
    };
    if !empty.is_empty() {
        f = f.evidence("selectors", empty.to_vec());
    }
    if let Err(e) = selected {
        f = f.evidence("selectorsMalformed", e.clone());
    }
    f.evidence("nodePools", users.to_vec())
        .fix(format!("kubectl describe nodeclass {}", class.name()))
}
