//! KD3010: an EBS volume encrypted with a customer managed KMS key can only be created when the
//! launching principal may use the key. When it may not, EC2 accepts the launch and then
//! terminates the instance with `Client.InternalError`: the NodeClaim disappears with no
//! useful error. Spot launches also need the Spot service-linked role to be allowed on the key.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::check::prelude::*;
use crate::checks::common::cluster::{cluster, cluster_arn};
use crate::checks::common::grants;
use crate::checks::common::kms::{
    allows, delegates_to_iam, key_use_denied, key_use_probe, simulate_key_use,
};
use crate::checks::common::nodeclass::{object, resolved_amis};
use crate::checks::common::spot::{SPOT_ROLE, allows_spot, spot_role_arn};
use crate::ec2::{self, AmiTerm};
use crate::facts::KmsGrant;
use crate::iam::policy::PolicyDocument;
use crate::model::Ec2NodeClass;

declare_check! {
    pub static NODECLASS_EBS_KMS_UNUSABLE = {
        code: "KD3010",
        slug: "nodeclass-ebs-kms-unusable",
        title: "the KMS keys of every EC2NodeClass's volumes are enabled and usable by the controller (and by Spot)",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, NodePools, EksCluster, ControllerDeployments, EbsDefaults, KmsKey, KmsGrants, Ec2Images, Ec2Snapshots, ServiceAccount, PodIdentityAssociations, Pods, IamRole, Simulation],
        self_managed: true,
        run: ebs_kms_unusable,
    }
}

async fn ebs_kms_unusable(cx: &CheckCx) -> CheckResult {
    let (classes, pools, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.nodepools(), cluster(cx)).await;
    let (classes, pools, cluster) = (classes?, pools?, cluster?);
    let arn = cluster_arn(&cluster)?;
    let defaults = cx.ebs_defaults().await?;
    let spot_role = spot_role_arn(&arn);
    let root = format!("arn:{}:iam::{}:root", arn.partition, arn.account);
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let mut keys = volume_keys(
            nc,
            defaults.encrypted_by_default,
            &defaults.default_kms_key_id,
        );
        let from_snapshots = ami_snapshot_keys(cx, nc, arn.account).await?;
        keys.extend(from_snapshots.keys().cloned());
        let spot = ec2::pools_of(nc, &pools).into_iter().any(allows_spot);
        for key_ref in keys {
            // Where the key comes from, when it is an AMI's own snapshot's.
            let origin = from_snapshots.get(&key_ref);
            let Some(key) = cx.kms_key(&key_ref).await?.as_ref().clone() else {
                findings.push(
                    Finding::new(
                        object(nc),
                        format!("the EBS KMS key {key_ref} does not exist in {} (or is in another account and not visible): instances terminate at launch with Client.InternalError", arn.region),
                    )
                    .evidence("kmsKey", key_ref.clone())
                    .hint("use a key of this account and region in blockDeviceMappings[].ebs.kmsKeyID (or the account's EBS default)"),
                );
                continue;
            };
            // AWS managed keys (aws/ebs) are always usable by launches in their own account.
            if key.key_manager == "AWS" {
                continue;
            }
            let mut problems = Vec::new();
            let mut fixes = Vec::new();
            if key.key_state != "Enabled" {
                problems.push(format!("the key is {}", key.key_state));
                fixes.push(format!("aws kms enable-key --key-id {}", key.arn));
            }
            let doc = PolicyDocument::parse(&key.policy).unwrap_or_default();
            let named = |principal: &str| {
                doc.statements
                    .iter()
                    .any(|s| allows(s, principal, arn.account, arn.region))
            };
            let delegates_to_iam = delegates_to_iam(&doc, &root, arn.account);
            let probe = key_use_probe(&cluster, &arn, &key.arn)?;
            if let Some(role) = grants::optional_controller_role(cx).await?.map(|r| r.arn) {
                if named(&role) {
                    // The key policy itself lets the controller use the key.
                } else if !delegates_to_iam {
                    problems.push(format!("the key policy neither names the controller role {role} nor lets IAM policies grant use of the key"));
                } else {
                    let denied = simulate_key_use(cx, &role, &probe).await?;
                    if !denied.is_empty() {
                        problems.push(key_use_denied("controller", &role, &denied));
                        fixes.push(format!(
                            "aws iam put-role-policy --role-name {} --policy-name karpenter-ebs-kms --policy-document '{}'",
                            role.rsplit('/').next().unwrap_or_default(),
                            json!({"Version": "2012-10-17", "Statement": [{
                                "Effect": "Allow",
                                "Action": probe.actions,
                                "Resource": key.arn,
                                "Condition": {"StringEquals": {"kms:ViaService": format!("ec2.{}.amazonaws.com", arn.region)}}
                            }]})
                        ));
                    }
                }
            }
            if spot && !named(&spot_role) {
                // The EC2 Spot guide shares the key with a grant as readily as with the key
                // policy; only a grant covering what a volume needs, unconstrained, counts.
                let grants = cx.kms_grants(&key.arn, &spot_role).await?;
                match spot_grant(&grants) {
                    SpotGrant::Covers => {}
                    gap => {
                        problems.push(format!(
                            "NodePools of this class allow spot, and {SPOT_ROLE} may not use the key (spot launches): the key policy does not let it{}",
                            gap.describe()
                        ));
                        fixes.push(format!(
                            "aws kms create-grant --key-id {} --grantee-principal {spot_role} --operations {}",
                            key.arn,
                            SPOT_GRANT_OPERATIONS.join(" ")
                        ));
                    }
                }
            }
            if problems.is_empty() {
                continue;
            }
            let mut f = Finding::new(
                object(nc),
                format!(
                    "EBS volumes are encrypted with KMS key {} that the launch cannot use: {}; instances terminate at launch with Client.InternalError",
                    key.arn,
                    problems.join("; ")
                ),
            )
            .evidence("kmsKey", key.arn.clone())
            .evidence("keyState", key.key_state.clone())
            .evidence(
                "keyOf",
                origin
                    .cloned()
                    .unwrap_or_else(|| "the EC2NodeClass's volumes".to_string()),
            )
            .evidence("keyPolicyDelegatesToIam", delegates_to_iam)
            .hint("let the controller role (and, for spot, the Spot service-linked role) use the key, in the key policy or with IAM policy plus a key policy that delegates to IAM");
            for fix in fixes {
                f = f.fix(fix);
            }
            findings.push(f);
        }
    }
    Ok(findings)
}

/// The customer managed keys of the AMIs' own encrypted snapshots, each with where it comes
/// from. A volume made from an encrypted snapshot the account owns keeps the snapshot's key
/// when its mapping names none (EC2 user guide, "Use encryption with EBS-backed AMIs"), so the
/// launch must be able to use that key, whatever the account's default. Only AMIs chosen by
/// id, name or tags are read (the EKS-optimized AMIs of aliases are not encrypted), only the
/// ones the class resolved, and only snapshots the image says are encrypted; a key of another
/// account is its owner's to share and is not judged here.
async fn ami_snapshot_keys(
    cx: &CheckCx,
    nc: &Ec2NodeClass,
    account: &str,
) -> Result<BTreeMap<String, String>, FactError> {
    let explicit: BTreeSet<&str> = nc
        .spec
        .get("blockDeviceMappings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("ebs")
                .and_then(|e| e.get("kmsKeyID"))
                .and_then(Value::as_str)
                .is_some_and(|k| !k.is_empty())
        })
        .filter_map(|m| m.get("deviceName").and_then(Value::as_str))
        .collect();
    let resolved: BTreeSet<&str> = resolved_amis(nc)
        .filter_map(|a| a.get("id").and_then(Value::as_str))
        .collect();
    let mut encrypted = Vec::new();
    for term in ec2::ami_terms(nc) {
        if matches!(term, AmiTerm::Alias(_) | AmiTerm::SsmParameter(_)) {
            continue;
        }
        let Some((filters, owners)) = ec2::image_query(&term) else {
            continue;
        };
        for image in ec2::usable(&cx.images(filters, owners).await?) {
            if !resolved.is_empty() && !resolved.contains(image.image_id.as_str()) {
                continue;
            }
            for d in &image.block_devices {
                let device = d.device_name.clone().unwrap_or_default();
                if d.encrypted == Some(true)
                    && !explicit.contains(device.as_str())
                    && let Some(id) = &d.snapshot_id
                {
                    encrypted.push((image.image_id.clone(), device, id.clone()));
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    if encrypted.is_empty() {
        return Ok(out);
    }
    let mut ids: Vec<String> = encrypted.iter().map(|(_, _, s)| s.clone()).collect();
    ids.sort();
    ids.dedup();
    let snapshots = cx.ec2_snapshots(&ids).await?;
    for (image, device, id) in encrypted {
        let Some(key) = snapshots
            .iter()
            .find(|s| s.snapshot_id == id && s.encrypted)
            .and_then(|s| s.kms_key_id.clone())
        else {
            continue;
        };
        if crate::arn::Arn::parse(&key).is_some_and(|a| a.account == account) {
            out.entry(key)
                .or_insert_with(|| format!("AMI {image}: snapshot {id} of {device}"));
        }
    }
    Ok(out)
}

/// The keys a NodeClass's volumes are encrypted with: explicit `kmsKeyID`s, and the account's
/// default key for volumes that are encrypted without one (Karpenter's default mapping is
/// encrypted). The AWS managed default `alias/aws/ebs` needs no check.
pub fn volume_keys(nc: &Ec2NodeClass, by_default: bool, default_key: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut uses_default = false;
    match nc.spec.get("blockDeviceMappings").and_then(Value::as_array) {
        None => uses_default = true,
        Some(mappings) => {
            for m in mappings {
                let ebs = m.get("ebs");
                let key = ebs
                    .and_then(|e| e.get("kmsKeyID"))
                    .and_then(Value::as_str)
                    .filter(|k| !k.is_empty());
                let encrypted = ebs
                    .and_then(|e| e.get("encrypted"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                match key {
                    Some(k) => {
                        keys.insert(k.to_string());
                    }
                    None if encrypted || by_default => uses_default = true,
                    None => {}
                }
            }
        }
    }
    if uses_default && !default_key.is_empty() && !default_key.starts_with("alias/aws/") {
        keys.insert(default_key.to_string());
    }
    keys
}

/// The operations the EC2 Spot guide grants `AWSServiceRoleForEC2Spot` on a customer managed
/// key ("Service-linked role for Spot Instance requests", granting access to CMKs).
const SPOT_GRANT_OPERATIONS: &[&str] = &[
    "Decrypt",
    "Encrypt",
    "GenerateDataKey",
    "GenerateDataKeyWithoutPlaintext",
    "ReEncryptFrom",
    "ReEncryptTo",
    "CreateGrant",
    "DescribeKey",
];

/// What creating and attaching an encrypted volume asks of the key (EBS encryption: the data
/// key is generated without plaintext and granted to EC2 at creation, decrypted at attach,
/// re-encrypted when the key changes). `Encrypt` and `GenerateDataKey` of the guide's list are
/// not among them.
const SPOT_NEEDS: &[&str] = &[
    "Decrypt",
    "GenerateDataKeyWithoutPlaintext",
    "ReEncryptFrom",
    "ReEncryptTo",
    "CreateGrant",
    "DescribeKey",
];

enum SpotGrant {
    Covers,
    None,
    /// The best grant lacks these operations.
    Lacks(Vec<&'static str>),
    /// A grant covers it only under an encryption context, which EBS's requests may not carry.
    Constrained(String),
}

impl SpotGrant {
    fn describe(&self) -> String {
        match self {
            SpotGrant::Covers => String::new(),
            SpotGrant::None => " and no grant is made to it".to_string(),
            SpotGrant::Lacks(ops) => {
                format!(", and its grant lacks {}", ops.join(", "))
            }
            SpotGrant::Constrained(id) => format!(
                ", and its grant {id} holds only under an encryption context (verify that EBS's requests carry it)"
            ),
        }
    }
}

/// Whether a grant lets the Spot service-linked role use the key for a volume.
fn spot_grant(grants: &[KmsGrant]) -> SpotGrant {
    let mut best: Option<Vec<&'static str>> = None;
    let mut constrained = None;
    for g in grants {
        let lacks: Vec<&'static str> = SPOT_NEEDS
            .iter()
            .copied()
            .filter(|op| !g.operations.iter().any(|have| have == op))
            .collect();
        if lacks.is_empty() && !g.constrained {
            return SpotGrant::Covers;
        }
        if lacks.is_empty() {
            constrained = Some(g.grant_id.clone());
        } else if best.as_ref().is_none_or(|b| lacks.len() < b.len()) {
            best = Some(lacks);
        }
    }
    match (constrained, best) {
        (Some(id), _) => SpotGrant::Constrained(id),
        (None, Some(lacks)) => SpotGrant::Lacks(lacks),
        (None, None) => SpotGrant::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nc(spec: Value) -> Ec2NodeClass {
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": spec})).unwrap()
    }

    #[test]
    fn volume_keys_follow_mappings_and_account_defaults() {
        let cmk = "arn:aws:kms:us-west-2:1:key/k";
        // No mappings: Karpenter's default volume is encrypted with the account default.
        assert!(volume_keys(&nc(json!({})), false, "alias/aws/ebs").is_empty());
        assert_eq!(volume_keys(&nc(json!({})), false, cmk).len(), 1);
        let explicit = nc(
            json!({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": true, "kmsKeyID": "alias/nodes"}}]}),
        );
        assert_eq!(
            volume_keys(&explicit, false, cmk)
                .into_iter()
                .collect::<Vec<_>>(),
            ["alias/nodes"]
        );
        let unencrypted = nc(json!({"blockDeviceMappings": [{"ebs": {"volumeSize": "20Gi"}}]}));
        assert!(volume_keys(&unencrypted, false, cmk).is_empty());
        assert_eq!(volume_keys(&unencrypted, true, cmk).len(), 1);
    }
}
