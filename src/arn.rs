//! Amazon Resource Names. Every check that compares roles, clusters or queues goes through
//! this one parser, so path handling (`role/service-role/Name`) is decided in one place.

use std::fmt;

/// A parsed ARN, borrowing from the input: `arn:partition:service:region:account:resource`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arn<'a> {
    pub partition: &'a str,
    pub service: &'a str,
    pub region: &'a str,
    pub account: &'a str,
    pub resource: &'a str,
}

impl<'a> Arn<'a> {
    /// Parses an ARN; `None` when the text is not one (wrong prefix or too few fields).
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.splitn(6, ':');
        if parts.next()? != "arn" {
            return None;
        }
        let arn = Arn {
            partition: parts.next()?,
            service: parts.next()?,
            region: parts.next()?,
            account: parts.next()?,
            resource: parts.next()?,
        };
        (!arn.partition.is_empty() && !arn.service.is_empty() && !arn.resource.is_empty())
            .then_some(arn)
    }

    /// For IAM `role/…` ARNs: the role name (last path segment).
    pub fn role_name(&self) -> Option<&'a str> {
        let rest = self.resource.strip_prefix("role/")?;
        rest.rsplit('/').next().filter(|n| !n.is_empty())
    }

    /// For IAM `role/…` ARNs: the path, `/` when there is none.
    pub fn role_path(&self) -> Option<String> {
        let rest = self.resource.strip_prefix("role/")?;
        Some(match rest.rsplit_once('/') {
            Some((path, _)) => format!("/{path}/"),
            None => "/".to_string(),
        })
    }
}

/// A role ARN without its IAM path (`role/a/b/Name` → `role/Name`): how aws-auth must name a
/// role, and one of the two ways an access entry may. Anything else is returned as given.
pub fn pathless_role(arn: &str) -> String {
    match Arn::parse(arn).and_then(|a| a.role_name().map(|n| (a, n))) {
        Some((a, name)) => format!("arn:{}:iam::{}:role/{name}", a.partition, a.account),
        None => arn.to_string(),
    }
}

impl fmt::Display for Arn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "arn:{}:{}:{}:{}:{}",
            self.partition, self.service, self.region, self.account, self.resource
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_role_with_path() {
        let arn = Arn::parse("arn:aws:iam::111122223333:role/service-role/KarpenterNode").unwrap();
        assert_eq!(arn.service, "iam");
        assert_eq!(arn.account, "111122223333");
        assert_eq!(arn.role_name(), Some("KarpenterNode"));
        assert_eq!(arn.role_path().as_deref(), Some("/service-role/"));
    }

    #[test]
    fn role_without_path() {
        let arn = Arn::parse("arn:aws-cn:iam::111122223333:role/Plain").unwrap();
        assert_eq!(arn.partition, "aws-cn");
        assert_eq!(arn.role_name(), Some("Plain"));
        assert_eq!(arn.role_path().as_deref(), Some("/"));
    }

    #[test]
    fn resource_may_contain_colons() {
        let arn = Arn::parse("arn:aws:logs:us-east-1:1:log-group:a:b").unwrap();
        assert_eq!(arn.resource, "log-group:a:b");
    }

    #[test]
    fn rejects_non_arns() {
        assert_eq!(Arn::parse("role/x"), None);
        assert_eq!(Arn::parse("arn:aws:iam"), None);
        assert_eq!(Arn::parse("arn:::::"), None);
    }
}
