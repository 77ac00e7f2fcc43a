//! The EKS cluster under diagnosis: the cluster itself, its ARN and its Kubernetes version.

use crate::arn::Arn;
use crate::check::CheckCx;
use crate::facts::{EksCluster, FactError};

/// The EKS cluster under diagnosis, or why there is none to judge against.
pub async fn cluster(cx: &CheckCx) -> Result<EksCluster, FactError> {
    let Some(name) = cx.target().cluster else {
        // The name comes from --cluster or the controller's CLUSTER_NAME: when the controller
        // could not be read, that is the reason to give (with its missing permission).
        cx.controller().await?;
        return Err(name_unknown());
    };
    match cx.eks_cluster(&name).await?.as_ref() {
        Some(c) => Ok(c.clone()),
        None => Err(FactError::NotInstalled {
            what: format!("the EKS cluster {name}"),
        }),
    }
}

/// Why there is no cluster to judge: its name is neither given nor read from the controller.
pub fn name_unknown() -> FactError {
    FactError::NotFound {
        message: "the EKS cluster name is unknown (pass --cluster)".to_string(),
    }
}

/// The cluster's ARN, parsed (its partition, region and account name other resources).
pub fn cluster_arn(c: &EksCluster) -> Result<Arn<'_>, FactError> {
    Arn::parse(&c.arn).ok_or_else(|| FactError::Malformed {
        message: format!("the cluster ARN {:?} is not an ARN", c.arn),
    })
}

/// `1.33` from the cluster's version.
pub fn cluster_minor(c: &EksCluster) -> Result<String, FactError> {
    minor(&c.version).ok_or_else(|| FactError::Malformed {
        message: format!(
            "the cluster version {:?} is not a Kubernetes version",
            c.version
        ),
    })
}

/// `1.31` from `1.31` or `1.31.2`.
pub fn minor(version: &str) -> Option<String> {
    let mut parts = version.trim_start_matches('v').split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    (!major.is_empty() && !minor.is_empty()).then(|| format!("{major}.{minor}"))
}
