//! Why a fact could not be read.

use serde::{Deserialize, Serialize};

/// Why a fact could not be read. Cloneable because one failed fetch is shared by every check
/// that needed it. `Forbidden` always means karpdoctor's *own* identity lacks a permission,
/// never that the cluster is misconfigured: checks turn it into `unknown`, not a verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum FactError {
    #[error("karpdoctor lacks permission {permission}: {message}")]
    Forbidden { permission: String, message: String },
    #[error("not found: {message}")]
    NotFound { message: String },
    #[error("{what} is not installed")]
    NotInstalled { what: String },
    #[error("throttled: {message}")]
    Throttled { message: String },
    #[error("timed out: {message}")]
    Timeout { message: String },
    #[error("unreachable: {message}")]
    Unreachable { message: String },
    #[error("no AWS credentials: {message}")]
    NoCredentials { message: String },
    #[error("API error: {message}")]
    Api { message: String },
    #[error("unexpected response: {message}")]
    Malformed { message: String },
    #[error("{fact} was not recorded in the bundle")]
    NotRecorded { fact: String },
}

impl FactError {
    /// The permission karpdoctor would need, when that is the cause.
    pub fn missing_permission(&self) -> Option<&str> {
        match self {
            FactError::Forbidden { permission, .. } => Some(permission),
            _ => None,
        }
    }

    /// A stable, short name for the error kind (used in JSON and tests).
    pub fn kind_name(&self) -> &'static str {
        match self {
            FactError::Forbidden { .. } => "forbidden",
            FactError::NotFound { .. } => "notFound",
            FactError::NotInstalled { .. } => "notInstalled",
            FactError::Throttled { .. } => "throttled",
            FactError::Timeout { .. } => "timeout",
            FactError::Unreachable { .. } => "unreachable",
            FactError::NoCredentials { .. } => "noCredentials",
            FactError::Api { .. } => "api",
            FactError::Malformed { .. } => "malformed",
            FactError::NotRecorded { .. } => "notRecorded",
        }
    }
}
