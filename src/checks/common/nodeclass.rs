//! What an EC2NodeClass says about itself: its name in findings, where its node role comes
//! from, whether it launches Windows nodes, and the zones and architectures it resolved.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::arn::Arn;
use crate::check::CheckCx;
use crate::ec2::{self, AmiTerm};
use crate::facts::{FactError, IamRole};
use crate::iam::policy::PolicyDocument;
use crate::model::{Ec2NodeClass, object_ref};
use crate::network::{Egress, Routing};

pub fn object(nc: &Ec2NodeClass) -> String {
    object_ref("EC2NodeClass", &nc.metadata)
}

/// Where a NodeClass's node role comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeRoleSource {
    /// `spec.role`: Karpenter manages an instance profile for it.
    Role(String),
    /// `spec.instanceProfile`: a profile made outside Karpenter.
    InstanceProfile(String),
    None,
}

pub fn node_role_source(nc: &Ec2NodeClass) -> NodeRoleSource {
    let text = |k: &str| {
        nc.spec
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (text("role"), text("instanceProfile")) {
        (Some(r), _) => NodeRoleSource::Role(r),
        (None, Some(p)) => NodeRoleSource::InstanceProfile(p),
        (None, None) => NodeRoleSource::None,
    }
}

/// The node role's ARN (with its path) of a NodeClass, when it can be resolved: from
/// `spec.role` (a role that exists) or the role inside `spec.instanceProfile`. `Ok(None)` when
/// there is none to judge (other checks report a missing role or profile).
pub async fn node_role_arn(cx: &CheckCx, nc: &Ec2NodeClass) -> Result<Option<String>, FactError> {
    Ok(match node_role_source(nc) {
        NodeRoleSource::Role(name) => {
            // `spec.role` may be given as an ARN too; IAM looks roles up by name.
            let name = Arn::parse(&name)
                .and_then(|a| a.role_name().map(str::to_string))
                .unwrap_or(name);
            cx.iam_role(&name)
                .await?
                .as_ref()
                .as_ref()
                .map(|r| r.arn.clone())
        }
        NodeRoleSource::InstanceProfile(p) if !p.starts_with("arn:") => cx
            .instance_profile(&p)
            .await?
            .as_ref()
            .as_ref()
            .and_then(|ip| ip.roles.first().cloned()),
        _ => None,
    })
}

/// Whether a role lets EC2 assume it (`sts:AssumeRole` for `principal`, EC2's service
/// principal in the cluster's partition): without that, instances get no credentials.
pub fn trusts_ec2(role: &IamRole, principal: &str) -> bool {
    PolicyDocument::parse(&role.trust_policy).is_ok_and(|doc| {
        doc.statements.iter().any(|s| {
            s.allow && s.has_principal("Service", principal) && s.covers_action("sts:AssumeRole")
        })
    })
}

/// Whether the existing role `arn` is no node role at all: EC2 may not assume it (KD3005's
/// finding, e.g. the controller's own role or a Fargate pod execution role named by mistake).
/// What follows from naming such a role (its missing mapping or access entry, the controller
/// not allowed to pass it) is a consequence of that one choice, so those checks link to
/// KD3005 instead of standing as causes of their own.
pub async fn not_a_node_role(cx: &CheckCx, arn: &str) -> Result<bool, FactError> {
    let Some(name) = Arn::parse(arn).and_then(|a| a.role_name().map(str::to_string)) else {
        return Ok(false);
    };
    Ok(cx
        .iam_role(&name)
        .await?
        .as_ref()
        .as_ref()
        .is_some_and(|r| {
            !trusts_ec2(r, "ec2.amazonaws.com") && !trusts_ec2(r, "ec2.amazonaws.com.cn")
        }))
}

/// The AMI family in lower case: `amiFamily`, else the alias's (`al2023@latest`); empty
/// when neither says.
pub fn ami_family(nc: &Ec2NodeClass) -> String {
    if let Some(f) = nc.spec.get("amiFamily").and_then(Value::as_str) {
        return f.to_ascii_lowercase();
    }
    ec2::ami_selector_terms(nc)
        .iter()
        .find_map(|t| t.get("alias").and_then(Value::as_str))
        .and_then(|a| a.split('@').next())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The Windows AMI families (their nodes need `EC2_WINDOWS` entries and the kube-proxy group).
pub fn is_windows(nc: &Ec2NodeClass) -> bool {
    let family = nc
        .spec
        .get("amiFamily")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    family.starts_with("windows")
        || ec2::ami_terms(nc)
            .iter()
            .any(|t| matches!(t, AmiTerm::Alias(a) if a.starts_with("windows")))
}

/// The ids of a resolved list in the EC2NodeClass's status (`amis`, `subnets`,
/// `securityGroups`), in status order.
pub fn status_ids(nc: &Ec2NodeClass, field: &str) -> Vec<String> {
    nc.status
        .rest
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Each resolved subnet of the class in the cluster VPC, with its way out as a node launched
/// there gets it (the class's `associatePublicIPAddress`, else the subnet's default). A subnet
/// outside the cluster VPC is KD3001's finding; its routes are another VPC's and say nothing
/// about this one, so it is left out.
pub fn subnet_egress<'s>(
    nc: &Ec2NodeClass,
    subnets: &'s [crate::facts::Subnet],
    routing: &Routing<'_>,
) -> Vec<(&'s crate::facts::Subnet, Egress)> {
    let associate = nc
        .spec
        .get("associatePublicIPAddress")
        .and_then(Value::as_bool);
    status_ids(nc, "subnets")
        .iter()
        .filter_map(|id| {
            subnets
                .iter()
                .find(|s| &s.subnet_id == id && s.vpc_id == routing.vpc_id)
        })
        .map(|s| {
            (
                s,
                routing.egress(&s.subnet_id, associate.or(s.map_public_ip_on_launch)),
            )
        })
        .collect()
}

/// Zones of the EC2NodeClass's resolved subnets.
pub fn subnet_zones(nc: &Ec2NodeClass) -> BTreeSet<String> {
    nc.status
        .rest
        .get("subnets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("zone").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The AMIs the EC2NodeClass resolved (`status.amis`).
pub fn resolved_amis(nc: &Ec2NodeClass) -> impl Iterator<Item = &Value> {
    nc.status
        .rest
        .get("amis")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `kubernetes.io/arch` values of the resolved AMIs (empty when not resolved: no filter).
pub fn ami_arches(nc: &Ec2NodeClass) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for ami in resolved_amis(nc) {
        for r in ami
            .get("requirements")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if r.get("key").and_then(Value::as_str) == Some("kubernetes.io/arch")
                && r.get("operator").and_then(Value::as_str) == Some("In")
            {
                out.extend(
                    r.get("values")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string),
                );
            }
        }
    }
    out
}
