//! What `karpdoctor upgrade` compares: the installed release and Kubernetes minor, and the
//! targets given with `--to` and `--kubernetes` (each defaulting to what runs now).

use crate::check::prelude::*;
use crate::checks::common::controller::installed_release;
use crate::iam::reference::Version;
use crate::upgrade::releases::Minor;

/// The install now and where the upgrade takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Targets {
    /// The controller's release; `None` when no controller runs or its image has no release.
    pub from: Option<Version>,
    /// `--to`, or the installed release.
    pub to: Version,
    /// `--to` was given.
    pub to_given: bool,
    /// The cluster's Kubernetes minor now.
    pub minor_now: Minor,
    /// `--kubernetes`, or the cluster's minor.
    pub minor_to: Minor,
}

/// Reads the targets; `Err` when there is nothing to compare (no controller release and no
/// `--to`, or no readable Kubernetes minor).
pub async fn targets(cx: &CheckCx) -> Result<Targets, FactError> {
    let from = installed_release(cx).await?;
    let hints = cx.hints();
    let to_given = hints.upgrade_to.as_deref().and_then(Version::parse);
    let Some(to) = to_given.or(from) else {
        return Err(FactError::NotFound {
            message: "no Karpenter controller with a release runs here: give the release to judge with --to".to_string(),
        });
    };
    let kube = cx.kube_version().await?;
    // EKS reports minors like "33+".
    let Some(minor_now) = kube
        .minor
        .trim_end_matches('+')
        .parse::<u32>()
        .ok()
        .map(Minor)
    else {
        return Err(FactError::Malformed {
            message: format!(
                "the cluster's Kubernetes minor {:?} is not a number",
                kube.minor
            ),
        });
    };
    let minor_to = hints
        .upgrade_kubernetes
        .as_deref()
        .and_then(Minor::parse)
        .unwrap_or(minor_now);
    // A replayed bundle's hint is not checked by the command line: keep the minors a plan can
    // walk one at a time within reason.
    if minor_to.0 > minor_now.0 + 10 {
        return Err(FactError::Malformed {
            message: format!(
                "the target Kubernetes minor {minor_to} is more than ten minors past the cluster's {minor_now}"
            ),
        });
    }
    Ok(Targets {
        from,
        to,
        to_given: to_given.is_some(),
        minor_now,
        minor_to,
    })
}
