//! KD7xxx: interruption handling: the SQS queue the controller reads, the EventBridge rules
//! that feed it, and whether it is configured at all.

pub mod handling_disabled;
pub mod queue_missing;
pub mod rules_missing;
