//! Whether a launch may use a customer managed KMS key: the key policy's reading and the
//! simulation of the launching role's IAM policies, shared by the EC2NodeClass volume keys
//! (KD3010) and EKS Auto Mode's NodeClass keys (KD3101).

use crate::arn::Arn;
use crate::check::prelude::*;
use crate::checks::common::grants;
use crate::facts::EksCluster;
use crate::iam::policy::{PolicyDocument, Statement};
use crate::iam::reference::{self, Probe};
use crate::iam::simulation::{Attribution, attribute};

/// What creating an encrypted volume asks of `key_arn` (the reference data's `ebs-cmk` probe,
/// through EC2 in the cluster's region).
pub fn key_use_probe(cluster: &EksCluster, arn: &Arn, key_arn: &str) -> Result<Probe, FactError> {
    let mut vars = grants::base_vars(arn, &cluster.name, &cluster.arn);
    vars.insert("kmsKeyArn".into(), key_arn.to_string());
    reference::supplemental_probe("ebs-cmk", &vars).ok_or_else(|| FactError::NotInstalled {
        what: "karpdoctor's reference data for customer managed EBS keys".to_string(),
    })
}

/// `the <whose> role <arn> may not <actions> on it (<who denies it>)`, for a finding.
pub fn key_use_denied(whose: &str, role: &str, denied: &[(String, Attribution)]) -> String {
    format!(
        "the {whose} role {role} may not {} on it ({})",
        denied
            .iter()
            .map(|(a, _)| a.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        who(denied)
    )
}

/// Whether a key policy statement lets `principal` create grants on the key (what EC2 needs)
/// when a launch in `account` and `region` uses it. The statement names the principal, or any
/// principal (`"AWS": "*"`) held to such a launch by its conditions: Karpenter's
/// troubleshooting guide and the AWS managed `aws/ebs` key allow every principal of the
/// account that calls through EC2 (`kms:CallerAccount`, `kms:ViaService`), which covers the
/// controller role and the Spot service-linked role alike. A condition on any other key is not
/// taken to hold.
pub fn allows(s: &Statement, principal: &str, account: &str, region: &str) -> bool {
    if !s.allow || !s.covers_action("kms:CreateGrant") {
        return false;
    }
    if s.principals
        .iter()
        .any(|(k, v)| k == "AWS" && v == principal)
    {
        return true;
    }
    let anyone = s
        .principals
        .iter()
        .any(|(k, v)| (k == "AWS" || k == "*") && v == "*");
    let via = format!("ec2.{region}.amazonaws.com");
    let launch = |key: &str| -> Option<&str> {
        match key.to_ascii_lowercase().as_str() {
            "kms:calleraccount" | "aws:principalaccount" => Some(account),
            "kms:viaservice" => Some(via.as_str()),
            "kms:grantisforawsresource" => Some("true"),
            _ => None,
        }
    };
    anyone
        && s.conditions
            .iter()
            .all(|c| launch(&c.key).is_some() && c.matches(launch(&c.key)) == Some(true))
}

/// Whether the key policy hands the key's use to IAM policies: only a statement naming the
/// account itself (`root`, or the bare account id) that allows creating grants does.
pub fn delegates_to_iam(doc: &PolicyDocument, root: &str, account: &str) -> bool {
    doc.statements.iter().any(|s| {
        s.allow
            && s.covers_action("kms:CreateGrant")
            && s.principals
                .iter()
                .any(|(k, v)| k == "AWS" && (v == root || v == account))
    })
}

/// The key actions a role's IAM policies do not allow, with who denies them.
pub async fn simulate_key_use(
    cx: &CheckCx,
    role: &str,
    probe: &Probe,
) -> Result<Vec<(String, Attribution)>, FactError> {
    let rows = cx
        .simulate(role, &probe.actions, &probe.resources, &probe.context)
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.action.clone(), attribute(r)))
        .filter(|(_, a)| *a != Attribution::Allowed)
        .collect())
}

pub fn who(denied: &[(String, Attribution)]) -> &'static str {
    if denied.iter().any(|(_, a)| *a == Attribution::Scp) {
        "an organization SCP denies it"
    } else if denied.iter().any(|(_, a)| *a == Attribution::Boundary) {
        "its permissions boundary denies it"
    } else if denied.iter().any(|(_, a)| *a == Attribution::IdentityDeny) {
        "an explicit Deny in its policies"
    } else {
        "its policies do not grant it"
    }
}
