//! How nodes are let into the cluster: the authentication mode, the node roles of the
//! NodeClasses, the `aws-auth` mapRoles and the access entry type a node needs (KD5001–KD5003).

use super::nodeclass::{is_windows, node_role_arn};
use crate::awsauth::{self, MapRolesError, RoleMapping};
use crate::check::CheckCx;
use crate::facts::{EksCluster, FactError};
use crate::model::Ec2NodeClass;

/// `accessConfig.authenticationMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    ConfigMap,
    ApiAndConfigMap,
    Api,
}

impl Mode {
    /// Clusters created before access entries existed report no mode: they read aws-auth only.
    pub fn of(cluster: &EksCluster) -> Mode {
        match cluster.authentication_mode.as_deref() {
            Some("API") => Mode::Api,
            Some("API_AND_CONFIG_MAP") => Mode::ApiAndConfigMap,
            _ => Mode::ConfigMap,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ConfigMap => "CONFIG_MAP",
            Mode::ApiAndConfigMap => "API_AND_CONFIG_MAP",
            Mode::Api => "API",
        }
    }

    pub fn reads_aws_auth(self) -> bool {
        self != Mode::Api
    }

    pub fn reads_access_entries(self) -> bool {
        self != Mode::ConfigMap
    }
}

/// A NodeClass with the resolved ARN of its node role.
pub struct NodeRole<'a> {
    pub nodeclass: &'a Ec2NodeClass,
    /// With the role's path, as access entries and IAM name it.
    pub arn: String,
    pub windows: bool,
}

impl NodeRole<'_> {
    /// The ARN without path, the only form aws-auth matches
    /// (`arn:aws:iam::1:role/team/Node` → `arn:aws:iam::1:role/Node`).
    pub fn pathless(&self) -> String {
        pathless(&self.arn)
    }

    pub fn has_path(&self) -> bool {
        self.pathless() != self.arn
    }
}

pub use crate::arn::pathless_role as pathless;

/// The node roles of every NodeClass whose role can be resolved (a missing role or instance
/// profile is KD3005's and KD3006's).
pub async fn node_roles<'a>(
    cx: &CheckCx,
    classes: &'a [Ec2NodeClass],
) -> Result<Vec<NodeRole<'a>>, FactError> {
    let mut out = Vec::new();
    for nc in classes {
        if let Some(arn) = node_role_arn(cx, nc).await? {
            out.push(NodeRole {
                nodeclass: nc,
                arn,
                windows: is_windows(nc),
            });
        }
    }
    Ok(out)
}

/// `mapRoles` of the aws-auth ConfigMap: `Ok(None)` when there is no ConfigMap.
pub async fn map_roles(
    cx: &CheckCx,
) -> Result<Option<Result<Vec<RoleMapping>, MapRolesError>>, FactError> {
    Ok(cx
        .aws_auth()
        .await?
        .as_ref()
        .as_ref()
        .map(|cm| awsauth::parse_map_roles(awsauth::map_roles_text(cm))))
}

/// The access entry type a node of this NodeClass needs.
pub fn node_entry_type(role: &NodeRole) -> &'static str {
    if role.windows {
        "EC2_WINDOWS"
    } else {
        "EC2_LINUX"
    }
}
