//! How the APIs' errors become fact errors, and the helpers that turn "not found" into an
//! absent (`null`) fact.

use aws_sdk_sts::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::error::display::DisplayErrorContext;
use serde_json::Value;

use crate::facts::FactError;

/// A fact that needs the Kubernetes API in a run that has none (no kubeconfig could be read).
pub fn no_kubernetes_api() -> FactError {
    FactError::Unreachable {
        message: "no Kubernetes API configured (no kubeconfig could be read)".to_string(),
    }
}

/// An AWS fact asked for before the run's region is known.
pub(super) fn no_aws_region() -> FactError {
    FactError::NoCredentials {
        message: "no AWS region: pass --region or set AWS_REGION".to_string(),
    }
}

/// A value as a JSON tree; failing to serialise is a malformed answer.
pub(super) fn to_value(obj: impl serde::Serialize) -> Result<Value, FactError> {
    serde_json::to_value(obj).map_err(|e| FactError::Malformed {
        message: e.to_string(),
    })
}

/// The innermost message of an error chain: what a person needs on one line.
pub(super) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    let mut text = e.to_string();
    while let Some(next) = current.source() {
        let s = next.to_string();
        if !s.is_empty() && !text.contains(&s) {
            text = format!("{text}: {s}");
        }
        current = next;
    }
    text
}

/// Maps a kube error to a fact error. `op` is the RBAC form of the request, quoted in
/// `Forbidden` so the report can name the exact permission to grant.
pub fn kube_error(op: impl Into<String>, e: kube::Error) -> FactError {
    let op = op.into();
    match e {
        kube::Error::Api(s) => match s.code {
            401 => FactError::NoCredentials {
                message: format!(
                    "the API server rejected karpdoctor's credentials: {}",
                    s.message
                ),
            },
            403 => FactError::Forbidden {
                permission: op,
                message: s.message,
            },
            404 => FactError::NotFound { message: s.message },
            429 => FactError::Throttled { message: s.message },
            504 | 408 => FactError::Timeout { message: s.message },
            _ => FactError::Api {
                message: format!("{op}: HTTP {} {}", s.code, s.message),
            },
        },
        kube::Error::SerdeError(e) => FactError::Malformed {
            message: format!("{op}: {e}"),
        },
        kube::Error::Auth(e) => FactError::NoCredentials {
            message: root_cause(&e),
        },
        other => {
            let text = root_cause(&other);
            if text.contains("timed out") || text.contains("deadline") || text.contains("elapsed") {
                FactError::Timeout {
                    message: format!("{op}: {text}"),
                }
            } else {
                FactError::Unreachable {
                    message: format!("{op}: {text}"),
                }
            }
        }
    }
}

/// An AWS read whose "not found" error means the object is absent: `Ok(None)`, so the fact is
/// `null` rather than an error (a missing role is a finding, not a failure to look).
pub(super) fn absent_as_none<T, E, R>(
    action: &str,
    result: Result<T, SdkError<E, R>>,
    not_found: impl Fn(&E) -> bool,
) -> Result<Option<T>, FactError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(out) => Ok(Some(out)),
        Err(SdkError::ServiceError(e)) if not_found(e.err()) => Ok(None),
        Err(e) => Err(aws_error(action, e)),
    }
}

/// Maps an AWS SDK error to a fact error; `action` is the IAM action, quoted in `Forbidden`.
pub(super) fn aws_error<E, R>(action: &str, e: SdkError<E, R>) -> FactError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &e {
        SdkError::ServiceError(ctx) => {
            let err = ctx.err();
            let code = err.code().unwrap_or("Unknown");
            service_error(
                action,
                code,
                format!("{code}: {}", err.message().unwrap_or_default()),
            )
        }
        SdkError::TimeoutError(_) => FactError::Timeout {
            message: format!("{action}: no answer in time"),
        },
        SdkError::DispatchFailure(d) if d.is_timeout() => FactError::Timeout {
            message: format!("{action}: {}", DisplayErrorContext(&e)),
        },
        SdkError::ResponseError(_) => FactError::Malformed {
            message: format!("{action}: {}", DisplayErrorContext(&e)),
        },
        _ => {
            let text = DisplayErrorContext(&e).to_string();
            if text.contains("credentials") || text.contains("Credentials") {
                FactError::NoCredentials {
                    message: credentials_message(&text),
                }
            } else if text.contains("refused by karpdoctor") || text.contains("karpdoctor refused")
            {
                FactError::Api { message: text }
            } else {
                FactError::Unreachable {
                    message: format!("{action}: {text}"),
                }
            }
        }
    }
}

/// A service's error answer by its code: denied, throttled, bad credentials, not found, or
/// anything else as a plain API error.
fn service_error(action: &str, code: &str, message: String) -> FactError {
    match code {
        "AccessDenied"
        | "AccessDeniedException"
        | "UnauthorizedOperation"
        | "UnauthorizedAccess"
        | "AuthorizationError" => FactError::Forbidden {
            permission: action.to_string(),
            message,
        },
        "Throttling"
        | "ThrottlingException"
        | "RequestLimitExceeded"
        | "TooManyRequestsException" => FactError::Throttled { message },
        "ExpiredToken"
        | "ExpiredTokenException"
        | "InvalidClientTokenId"
        | "UnrecognizedClientException"
        | "SignatureDoesNotMatch"
        | "AuthFailure" => FactError::NoCredentials { message },
        "NoSuchEntity" | "ResourceNotFoundException" | "NotFoundException" => {
            FactError::NotFound { message }
        }
        _ => FactError::Api {
            message: format!("{action}: {message}"),
        },
    }
}

/// The SDK's credentials error is long and nested; keep the part a person can act on.
fn credentials_message(text: &str) -> String {
    if text.contains("no providers in chain provided credentials") {
        "no credentials found in the AWS default chain (environment, profile, SSO, web identity, instance metadata)".to_string()
    } else {
        text.to_string()
    }
}
