//! Trust policies of the controller role: can this ServiceAccount assume it through IRSA, and
//! does EKS Pod Identity's service principal have what it needs? Local evaluation, no
//! simulator (the simulator cannot evaluate federated web-identity trust), and a diagnosis of
//! the part that is wrong, with the statement that would be right.

use serde_json::{Value, json};

use super::policy::{PolicyDocument, Statement};

/// The audience EKS puts in projected service account tokens.
pub const IRSA_AUDIENCE: &str = "sts.amazonaws.com";
/// The service principal of EKS Pod Identity.
pub const POD_IDENTITY_PRINCIPAL: &str = "pods.eks.amazonaws.com";

/// What the trust policy must accept for the controller to assume the role through IRSA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrsaExpectation {
    /// `arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC`
    pub provider_arn: String,
    /// The issuer without `https://`: the prefix of the condition keys.
    pub issuer: String,
    pub namespace: String,
    pub service_account: String,
}

impl IrsaExpectation {
    /// From the cluster's issuer URL, the account and partition of the role.
    pub fn new(
        partition: &str,
        account: &str,
        issuer_url: &str,
        namespace: &str,
        service_account: &str,
    ) -> Self {
        let issuer = issuer_url
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_string();
        IrsaExpectation {
            provider_arn: format!("arn:{partition}:iam::{account}:oidc-provider/{issuer}"),
            issuer,
            namespace: namespace.to_string(),
            service_account: service_account.to_string(),
        }
    }

    pub fn subject(&self) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace, self.service_account
        )
    }

    /// The statement that lets exactly this ServiceAccount assume the role.
    pub fn statement(&self) -> Value {
        json!({
            "Effect": "Allow",
            "Principal": { "Federated": self.provider_arn },
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    format!("{}:aud", self.issuer): IRSA_AUDIENCE,
                    format!("{}:sub", self.issuer): self.subject(),
                }
            }
        })
    }
}

/// One thing wrong with an IRSA trust policy, in the words a finding uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustProblem {
    /// No statement allows web identity at all.
    NoWebIdentityStatement,
    /// Only EKS Pod Identity may assume the role.
    OnlyPodIdentity,
    /// The federated principal is another OIDC provider (another cluster, or a deleted one).
    WrongProvider { found: Vec<String> },
    /// The statement trusts the right provider with another action.
    WrongAction { found: Vec<String> },
    /// `:sub` names another namespace or ServiceAccount.
    SubjectMismatch { found: Vec<String> },
    /// `:sub` has a wildcard under `StringEquals`, where it is literal.
    WildcardNeedsStringLike { value: String },
    /// A condition key written with `https://` or the provider ARN prefix never matches.
    MalformedKey { key: String },
    /// `:aud` is not `sts.amazonaws.com`.
    AudienceMismatch { found: Vec<String> },
    /// No `:aud` condition (works, but any audience is accepted).
    AudienceMissing,
}

impl std::fmt::Display for TrustProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustProblem::NoWebIdentityStatement => {
                f.write_str("no statement allows sts:AssumeRoleWithWebIdentity")
            }
            TrustProblem::OnlyPodIdentity => f.write_str(
                "the trust allows only EKS Pod Identity (pods.eks.amazonaws.com), not IRSA",
            ),
            TrustProblem::WrongProvider { found } => write!(
                f,
                "the Federated principal is {}, not this cluster's OIDC provider",
                found.join(", ")
            ),
            TrustProblem::WrongAction { found } => write!(
                f,
                "the statement allows {}, not sts:AssumeRoleWithWebIdentity",
                found.join(", ")
            ),
            TrustProblem::SubjectMismatch { found } => {
                write!(f, "the :sub condition names {}", found.join(", "))
            }
            TrustProblem::WildcardNeedsStringLike { value } => write!(
                f,
                "the :sub value {value} has a wildcard under StringEquals (use StringLike)"
            ),
            TrustProblem::MalformedKey { key } => write!(
                f,
                "the condition key {key} carries a prefix and never matches (write <issuer>:sub without https://)"
            ),
            TrustProblem::AudienceMismatch { found } => write!(
                f,
                "the :aud condition names {}, not {IRSA_AUDIENCE}",
                found.join(", ")
            ),
            TrustProblem::AudienceMissing => {
                write!(f, "there is no :aud condition ({IRSA_AUDIENCE})")
            }
        }
    }
}

impl TrustProblem {
    /// Whether the problem stops the controller from assuming the role (as opposed to a
    /// weakness of an otherwise working trust).
    pub fn blocks(&self) -> bool {
        !matches!(self, TrustProblem::AudienceMissing)
    }
}

/// Does the trust let the expected ServiceAccount assume the role through IRSA? Returns the
/// problems of the statement closest to working (empty: it works).
pub fn check_irsa(doc: &PolicyDocument, exp: &IrsaExpectation) -> Vec<TrustProblem> {
    let allows: Vec<&Statement> = doc
        .statements
        .iter()
        .filter(|s| s.allow && !s.has_not_principal)
        .collect();
    let federated: Vec<&Statement> = allows
        .iter()
        .copied()
        .filter(|s| s.principals.iter().any(|(k, _)| k == "Federated"))
        .collect();
    if federated.is_empty() {
        let pod_identity_only = allows
            .iter()
            .any(|s| s.has_principal("Service", POD_IDENTITY_PRINCIPAL));
        return vec![if pod_identity_only {
            TrustProblem::OnlyPodIdentity
        } else {
            TrustProblem::NoWebIdentityStatement
        }];
    }
    // The closest statement is the one with the fewest blocking problems.
    federated
        .iter()
        .map(|s| problems_of(s, exp))
        .min_by_key(|p| (p.iter().filter(|x| x.blocks()).count(), p.len()))
        .unwrap_or_default()
}

fn problems_of(s: &Statement, exp: &IrsaExpectation) -> Vec<TrustProblem> {
    let mut out = Vec::new();
    if !s.has_principal("Federated", &exp.provider_arn) {
        out.push(TrustProblem::WrongProvider {
            found: s
                .principals
                .iter()
                .filter(|(k, _)| k == "Federated")
                .map(|(_, v)| v.clone())
                .collect(),
        });
    }
    if !s.covers_action("sts:AssumeRoleWithWebIdentity") {
        out.push(TrustProblem::WrongAction {
            found: s.actions.clone(),
        });
    }
    let sub_key = format!("{}:sub", exp.issuer);
    let aud_key = format!("{}:aud", exp.issuer);
    let mut saw_aud = false;
    for c in &s.conditions {
        let lower = c.key.to_ascii_lowercase();
        let is_sub = lower.ends_with(":sub");
        let is_aud = lower.ends_with(":aud");
        if !(is_sub || is_aud) {
            continue;
        }
        let expected_key = if is_sub { &sub_key } else { &aud_key };
        if !c.key.eq_ignore_ascii_case(expected_key) {
            if lower.contains("https://") || lower.contains(":oidc-provider/") {
                out.push(TrustProblem::MalformedKey { key: c.key.clone() });
            } else if !out
                .iter()
                .any(|p| matches!(p, TrustProblem::WrongProvider { .. }))
            {
                // Keys of another issuer: the statement was written for another cluster.
                out.push(TrustProblem::WrongProvider {
                    found: vec![
                        c.key
                            .rsplit_once(':')
                            .map(|(i, _)| i.to_string())
                            .unwrap_or_default(),
                    ],
                });
            }
            continue;
        }
        if is_aud {
            saw_aud = true;
            if c.matches(Some(IRSA_AUDIENCE)) != Some(true) {
                out.push(TrustProblem::AudienceMismatch {
                    found: c.values.clone(),
                });
            }
        } else if c.matches(Some(&exp.subject())) != Some(true) {
            let base = c.operator.rsplit(':').next().unwrap_or(&c.operator);
            match c.values.iter().find(|v| v.contains('*') || v.contains('?')) {
                Some(v)
                    if base.starts_with("StringEquals")
                        && super::policy::wildcard(v, &exp.subject(), false) =>
                {
                    out.push(TrustProblem::WildcardNeedsStringLike { value: v.clone() })
                }
                _ => out.push(TrustProblem::SubjectMismatch {
                    found: c.values.clone(),
                }),
            }
        }
    }
    if !saw_aud && !out.iter().any(|p| matches!(p, TrustProblem::MalformedKey { key } if key.to_ascii_lowercase().ends_with(":aud"))) {
        out.push(TrustProblem::AudienceMissing);
    }
    out
}

/// What a Pod Identity role trust lacks: the `pods.eks.amazonaws.com` principal with both
/// `sts:AssumeRole` and `sts:TagSession` (in one or more Allow statements).
pub fn check_pod_identity(doc: &PolicyDocument) -> Vec<String> {
    check_service_trust(doc, POD_IDENTITY_PRINCIPAL)
}

/// What a trust policy lacks for AWS service `service` to assume the role with session tags:
/// an Allow statement naming it, covering `sts:AssumeRole` and `sts:TagSession` (Pod Identity,
/// and EKS Auto Mode's cluster role).
pub fn check_service_trust(doc: &PolicyDocument, service: &str) -> Vec<String> {
    let statements: Vec<&Statement> = doc
        .statements
        .iter()
        .filter(|s| s.allow && s.has_principal("Service", service))
        .collect();
    if statements.is_empty() {
        return vec![format!("no statement trusts {service}")];
    }
    ["sts:AssumeRole", "sts:TagSession"]
        .iter()
        .filter(|a| !statements.iter().any(|s| s.covers_action(a)))
        .map(|a| format!("{service} is not allowed {a}"))
        .collect()
}

/// The trust statement EKS Pod Identity needs.
pub fn pod_identity_statement() -> Value {
    json!({
        "Effect": "Allow",
        "Principal": { "Service": POD_IDENTITY_PRINCIPAL },
        "Action": ["sts:AssumeRole", "sts:TagSession"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(ns: &str) -> IrsaExpectation {
        IrsaExpectation::new(
            "aws",
            "111122223333",
            "https://oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123",
            ns,
            "karpenter",
        )
    }

    fn trust(statement: Value) -> PolicyDocument {
        PolicyDocument::from_value(&json!({"Version": "2012-10-17", "Statement": [statement]}))
            .unwrap()
    }

    #[test]
    fn the_corrected_statement_works() {
        let e = exp("kube-system");
        assert_eq!(check_irsa(&trust(e.statement()), &e), []);
    }

    #[test]
    fn the_classic_namespace_mismatch_is_named() {
        let wrong = exp("karpenter").statement();
        let problems = check_irsa(&trust(wrong), &exp("kube-system"));
        assert_eq!(
            problems,
            [TrustProblem::SubjectMismatch {
                found: vec!["system:serviceaccount:karpenter:karpenter".into()]
            }]
        );
        assert!(problems[0].to_string().contains("karpenter:karpenter"));
    }

    #[test]
    fn string_like_wildcards_work_and_string_equals_wildcards_do_not() {
        let e = exp("kube-system");
        let like = json!({"Effect": "Allow", "Principal": {"Federated": e.provider_arn}, "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringLike": {format!("{}:sub", e.issuer): "system:serviceaccount:*:karpenter"},
                          "StringEquals": {format!("{}:aud", e.issuer): "sts.amazonaws.com"}}});
        assert_eq!(check_irsa(&trust(like.clone()), &e), []);
        let mut equals = like;
        let sub = equals["Condition"]["StringLike"].take();
        equals["Condition"]["StringEquals"][format!("{}:sub", e.issuer)] =
            sub[format!("{}:sub", e.issuer)].clone();
        assert_eq!(
            check_irsa(&trust(equals), &e),
            [TrustProblem::WildcardNeedsStringLike {
                value: "system:serviceaccount:*:karpenter".into()
            }]
        );
    }

    #[test]
    fn provider_of_another_cluster_and_prefixed_keys() {
        let e = exp("kube-system");
        let other = IrsaExpectation::new(
            "aws",
            "111122223333",
            "https://oidc.eks.us-west-2.amazonaws.com/id/OLDCLUSTER1",
            "kube-system",
            "karpenter",
        );
        let problems = check_irsa(&trust(other.statement()), &e);
        assert!(
            matches!(problems.first(), Some(TrustProblem::WrongProvider { .. })),
            "{problems:?}"
        );

        let prefixed = json!({"Effect": "Allow", "Principal": {"Federated": e.provider_arn}, "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringEquals": {format!("https://{}:sub", e.issuer): e.subject(), format!("{}:aud", e.issuer): "sts.amazonaws.com"}}});
        assert_eq!(
            check_irsa(&trust(prefixed), &e),
            [TrustProblem::MalformedKey {
                key: format!("https://{}:sub", e.issuer)
            }]
        );
    }

    #[test]
    fn wrong_action_wrong_audience_missing_audience() {
        let e = exp("kube-system");
        let mut s = e.statement();
        s["Action"] = json!("sts:AssumeRole");
        assert_eq!(
            check_irsa(&trust(s), &e),
            [TrustProblem::WrongAction {
                found: vec!["sts:AssumeRole".into()]
            }]
        );
        let mut s = e.statement();
        s["Condition"]["StringEquals"][format!("{}:aud", e.issuer)] = json!("sts.amazonaws.com.cn");
        assert_eq!(
            check_irsa(&trust(s), &e),
            [TrustProblem::AudienceMismatch {
                found: vec!["sts.amazonaws.com.cn".into()]
            }]
        );
        let mut s = e.statement();
        s["Condition"]["StringEquals"]
            .as_object_mut()
            .unwrap()
            .remove(&format!("{}:aud", e.issuer));
        let p = check_irsa(&trust(s), &e);
        assert_eq!(p, [TrustProblem::AudienceMissing]);
        assert!(
            !p[0].blocks(),
            "a missing audience weakens but does not block"
        );
    }

    #[test]
    fn pod_identity_only_trust_is_not_irsa() {
        let doc = trust(pod_identity_statement());
        assert_eq!(
            check_irsa(&doc, &exp("kube-system")),
            [TrustProblem::OnlyPodIdentity]
        );
        assert_eq!(check_pod_identity(&doc), Vec::<String>::new());
    }

    #[test]
    fn pod_identity_needs_tag_session() {
        let doc = trust(
            json!({"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"}, "Action": "sts:AssumeRole"}),
        );
        assert_eq!(
            check_pod_identity(&doc),
            ["pods.eks.amazonaws.com is not allowed sts:TagSession"]
        );
        let ec2 = trust(
            json!({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}),
        );
        assert_eq!(
            check_pod_identity(&ec2),
            ["no statement trusts pods.eks.amazonaws.com"]
        );
    }

    #[test]
    fn url_encoded_trust_as_iam_returns_it() {
        let e = exp("kube-system");
        let doc = json!({"Version": "2012-10-17", "Statement": [e.statement()]}).to_string();
        let encoded =
            percent_encoding::utf8_percent_encode(&doc, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        assert_eq!(
            check_irsa(&PolicyDocument::parse(&encoded).unwrap(), &e),
            []
        );
    }
}
