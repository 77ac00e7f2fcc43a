//! KD7xxx: interruption handling: the SQS queue the controller reads, the EventBridge rules
//! that feed it, and whether it is configured at all.

pub mod handling_disabled;
pub mod queue_missing;
pub mod rules_missing;

use crate::check::prelude::*;
use crate::checks::install::controller;

/// The queue name the controller is configured with (`INTERRUPTION_QUEUE`); `None` when
/// interruption handling is off.
pub async fn configured_queue(cx: &CheckCx) -> Result<Option<String>, FactError> {
    let c = controller(cx).await?;
    Ok(c.deployment()
        .env("INTERRUPTION_QUEUE")
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string))
}

/// The `helm upgrade` that sets the interruption queue, pinned to the running release.
pub async fn set_queue_command(cx: &CheckCx, queue: &str) -> Result<String, FactError> {
    Ok(controller(cx)
        .await?
        .helm_upgrade(&format!("--set settings.interruptionQueue={queue}")))
}
