//! The identity karpdoctor runs as, as the IAM policy simulator needs it (KD2201, KD7003).

use crate::arn::Arn;
use crate::check::CheckCx;
use crate::facts::FactError;

/// The IAM principal behind the caller: an assumed-role session resolves to its role's ARN
/// (path included, from `iam:GetRole`), since sessions cannot be simulated.
pub async fn principal_arn(cx: &CheckCx, caller: &str) -> Result<String, FactError> {
    let Some(arn) = Arn::parse(caller) else {
        return Err(FactError::Malformed {
            message: format!("the caller ARN {caller:?} is not an ARN"),
        });
    };
    if arn.service == "sts"
        && let Some(rest) = arn.resource.strip_prefix("assumed-role/")
    {
        let name = rest.split('/').next().unwrap_or_default();
        return match cx.iam_role(name).await?.as_ref() {
            Some(role) => Ok(role.arn.clone()),
            None => Ok(format!(
                "arn:{}:iam::{}:role/{name}",
                arn.partition, arn.account
            )),
        };
    }
    if arn.resource == "root" {
        return Err(FactError::NotInstalled {
            what: "an IAM principal to simulate (the account root user cannot be simulated; run as a role or user)".to_string(),
        });
    }
    Ok(caller.to_string())
}
