//! Errors that stop karpdoctor from doing its job: each is one line on stderr and exit code 2.
//! Problems *found* in the cluster are findings, never errors.

/// A fatal condition, worded for the person at the terminal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubeconfig: {reason}")]
    Kubeconfig { reason: String },
    #[error("cannot reach the Kubernetes API server{}: {reason}", server.as_deref().map(|s| format!(" at {s}")).unwrap_or_default())]
    KubeUnreachable {
        server: Option<String>,
        reason: String,
    },
    #[error("no AWS credentials: {reason}")]
    NoAwsCredentials { reason: String },
    #[error(
        "EKS cluster \"{cluster}\" was not found in region {region} (check --cluster and --region)"
    )]
    ClusterNotFound { cluster: String, region: String },
    #[error("{path}: not a usable karpdoctor bundle: {reason}")]
    BadBundle { path: String, reason: String },
    #[error("unknown check \"{query}\"{}", suggestion.as_deref().map(|s| format!(" (did you mean {s}?)")).unwrap_or_default())]
    UnknownCheck {
        query: String,
        suggestion: Option<String>,
    },
    #[error("{message}")]
    Usage { message: String },
    #[error("{what}: {reason}")]
    Io { what: String, reason: String },
    #[error("gave up after {seconds}s (--timeout) while {during}")]
    Timeout { seconds: u64, during: String },
    #[error("internal error: {message} (please report this)")]
    Internal { message: String },
}
