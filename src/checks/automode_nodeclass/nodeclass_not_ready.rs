//! KD3101: an EKS Auto Mode NodeClass that cannot launch: not Ready (its conditions quoted as
//! Auto Mode gives them, linked to their cause), its pod subnets leaving a node zone without
//! pod addresses, or the KMS key of its nodes' root volumes unusable by the cluster role EKS
//! launches as (docs/auto-mode.md §7.3).

use crate::automode::nodeclass::{NotReady, Selected, not_ready, select, zones_without_pod_subnets};
use crate::check::prelude::*;
use crate::checks::common::codes::{
    AUTOMODE_CLUSTER_ROLE_INVALID, AUTOMODE_NODE_ACCESS_MISSING, AUTOMODE_NODEPOOL_UNSERVED,
};
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::checks::common::kms::{
    allows, delegates_to_iam, key_use_denied, key_use_probe, simulate_key_use,
};
use crate::iam::policy::PolicyDocument;
use crate::model::{AutoNodeClass, Condition, NodePool};

declare_check! {
    pub static AUTOMODE_NODECLASS_NOT_READY = {
        code: "KD3101",
        slug: "automode-nodeclass-not-ready",
        title: "every EKS Auto Mode NodeClass is Ready, gives every node zone pod addresses, and encrypts with a key the cluster role may use",
        category: Nodeclass,
        severity: Error,
        needs: [AutoNodeClasses, NodePools, Ec2Subnets, Ec2SecurityGroups, EksCluster, EbsDefaults, KmsKey, Simulation],
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
        if !users.is_empty() {
            for key_ref in root_volume_keys(cx, class).await? {
                if let Some(f) = key_finding(cx, class, &key_ref, &users).await? {
                    findings.push(f);
                }
            }
        }
    }
    Ok(findings)
}

/// The customer managed key the NodeClass's root volumes are encrypted with: its own
/// `ephemeralStorage.kmsKeyID`, or else the account's default EBS key where the account
/// encrypts every volume (terraform-aws-eks#3401). The AWS managed `aws/ebs` key needs no
/// authorization (the user guide's auto-kms page) and is never returned.
async fn root_volume_keys(cx: &CheckCx, class: &AutoNodeClass) -> Result<Vec<String>, FactError> {
    let own = class
        .spec
        .get("ephemeralStorage")
        .and_then(|e| e.get("kmsKeyID"))
        .and_then(|k| k.as_str())
        .filter(|k| !k.is_empty());
    if let Some(key) = own {
        return Ok(vec![key.to_string()]);
    }
    let defaults = cx.ebs_defaults().await?;
    let key = defaults.default_kms_key_id.as_str();
    Ok(
        (defaults.encrypted_by_default && !key.is_empty() && !key.starts_with("alias/aws/"))
            .then(|| key.to_string())
            .into_iter()
            .collect(),
    )
}

/// Whether EKS, launching as the cluster role, may use the key: it exists and is enabled, and
/// the key policy names the role (the auto-kms page's statements) or hands use to IAM policies
/// that allow it (simulated with the reference data's `ebs-cmk` probe). EC2 checks the key only
/// after accepting the launch: the instance fails with "encrypted with an inaccessible AWS KMS
/// key".
async fn key_finding(
    cx: &CheckCx,
    class: &AutoNodeClass,
    key_ref: &str,
    users: &[String],
) -> Result<Option<Finding>, FactError> {
    let described = cluster(cx).await?;
    let arn = cluster_arn(&described)?;
    let Some(role) = described.role_arn.clone().filter(|r| !r.is_empty()) else {
        return Err(FactError::NotRecorded {
            fact: "the cluster's roleArn (a bundle from before it was kept)".to_string(),
        });
    };
    let base = |message: String| {
        Finding::new(class.object(), message)
            .evidence("kmsKey", key_ref.to_string())
            .evidence("clusterRole", role.clone())
            .evidence("nodePools", users.to_vec())
    };
    let Some(key) = cx.kms_key(key_ref).await?.as_ref().clone() else {
        return Ok(Some(
            base(format!("encrypts its nodes' root volumes with KMS key {key_ref}, which does not exist in {} (or is another account's and not visible): every instance fails to launch", arn.region))
                .hint("set ephemeralStorage.kmsKeyID to a key of this account and region, or leave it out for the AWS managed key"),
        ));
    };
    if key.key_manager == "AWS" {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if key.key_state != "Enabled" {
        problems.push(format!("the key is {}", key.key_state));
        fixes.push(format!("aws kms enable-key --key-id {}", key.arn));
    }
    let doc = PolicyDocument::parse(&key.policy).unwrap_or_default();
    let root = format!("arn:{}:iam::{}:root", arn.partition, arn.account);
    let named = doc
        .statements
        .iter()
        .any(|s| allows(s, &role, arn.account, arn.region));
    if !named {
        let unusable = if !delegates_to_iam(&doc, &root, arn.account) {
            Some(format!(
                "the key policy neither names the cluster role {role} nor lets IAM policies grant use of the key"
            ))
        } else {
            let probe = key_use_probe(&described, &arn, &key.arn)?;
            let denied = simulate_key_use(cx, &role, &probe).await?;
            (!denied.is_empty()).then(|| key_use_denied("cluster", &role, &denied))
        };
        if let Some(problem) = unusable {
            problems.push(problem);
            fixes.push(format!(
                "aws kms get-key-policy --key-id {} --policy-name default > key-policy.json   # add the user guide's two statements for {role}, then: aws kms put-key-policy --key-id {} --policy-name default --policy file://key-policy.json",
                key.arn, key.arn
            ));
        }
    }
    if problems.is_empty() {
        return Ok(None);
    }
    let mut f = base(format!(
            "encrypts its nodes' root volumes with KMS key {} that EKS Auto Mode, launching as the cluster role, cannot use: {}; every instance fails to launch (\"encrypted with an inaccessible AWS KMS key\")",
            key.arn,
            problems.join("; ")
        ))
        .evidence("keyState", key.key_state.clone())
        .hint("let the cluster role use the key in its key policy, as the user guide's \"Enable EBS Volume Encryption with Customer Managed KMS Keys for EKS Auto Mode\" shows (Encrypt, Decrypt, ReEncrypt*, GenerateDataKey*, DescribeKey; and CreateGrant, ListGrants, RevokeGrant when kms:GrantIsForAWSResource is true)");
    for fix in fixes {
        f = f.fix(fix);
    }
    Ok(Some(f))
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
