//! Reading IAM policy documents the way IAM does, leniently: documents may arrive
//! URL-encoded (the Rust SDK does not decode `AssumeRolePolicyDocument`), sometimes twice;
//! `Statement`, `Action`, `Resource` and condition values may be a string or a list;
//! `Principal` may be `"*"` or a map of string-or-list. Nothing here evaluates a whole policy
//! for a decision (the simulator does that); it answers the narrower questions checks ask of a
//! trust policy or an attached policy, and explains mismatches.

use serde_json::{Map, Value};

/// A parsed policy document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyDocument {
    pub statements: Vec<Statement>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Statement {
    pub sid: Option<String>,
    pub allow: bool,
    pub actions: Vec<String>,
    pub not_actions: Vec<String>,
    pub resources: Vec<String>,
    pub not_resources: Vec<String>,
    /// `(principal type, value)`: `("AWS", "arn:…")`, `("Service", "pods.eks.amazonaws.com")`,
    /// `("Federated", "arn:…:oidc-provider/…")`, `("*", "*")`.
    pub principals: Vec<(String, String)>,
    pub has_not_principal: bool,
    /// `(operator, key, values)`, operator as written (`StringEquals`, `ForAnyValue:StringLike`, …).
    pub conditions: Vec<Condition>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub operator: String,
    pub key: String,
    pub values: Vec<String>,
}

/// Why a document could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unreadable policy document: {0}")]
pub struct PolicyError(pub String);

/// Undoes URL encoding until the text is JSON (at most three rounds: AWS encodes once, some
/// tools encode again).
pub fn decode(raw: &str) -> String {
    let mut text = raw.trim().to_string();
    for _ in 0..3 {
        if text.starts_with('{') {
            break;
        }
        let decoded = percent_encoding::percent_decode_str(&text.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned();
        if decoded == text {
            break;
        }
        text = decoded.trim().to_string();
    }
    text
}

/// A string or a list of strings (other scalars are written as JSON).
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Null => Vec::new(),
        other => vec![other.to_string()],
    }
}

impl PolicyDocument {
    /// Parses a document, URL-encoded or not.
    pub fn parse(raw: &str) -> Result<PolicyDocument, PolicyError> {
        let text = decode(raw);
        let v: Value = serde_json::from_str(&text).map_err(|e| PolicyError(e.to_string()))?;
        Self::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<PolicyDocument, PolicyError> {
        let statements = match v.get("Statement") {
            Some(Value::Array(items)) => items.iter().collect::<Vec<_>>(),
            Some(single @ Value::Object(_)) => vec![single],
            Some(_) => {
                return Err(PolicyError(
                    "Statement is neither an object nor a list".into(),
                ));
            }
            None => return Err(PolicyError("no Statement".into())),
        };
        let statements = statements
            .into_iter()
            .map(|s| {
                let obj = s
                    .as_object()
                    .ok_or_else(|| PolicyError("a statement is not an object".into()))?;
                Ok(Statement::from_map(obj))
            })
            .collect::<Result<Vec<_>, PolicyError>>()?;
        Ok(PolicyDocument { statements })
    }
}

impl Statement {
    fn from_map(obj: &Map<String, Value>) -> Statement {
        let get = |k: &str| obj.get(k).map(strings).unwrap_or_default();
        let mut principals = Vec::new();
        match obj.get("Principal") {
            Some(Value::String(s)) => principals.push(("*".to_string(), s.clone())),
            Some(Value::Object(m)) => {
                for (kind, v) in m {
                    principals.extend(strings(v).into_iter().map(|p| (kind.clone(), p)));
                }
            }
            _ => {}
        }
        let mut conditions = Vec::new();
        if let Some(Value::Object(ops)) = obj.get("Condition") {
            for (op, keys) in ops {
                if let Value::Object(keys) = keys {
                    for (key, values) in keys {
                        conditions.push(Condition {
                            operator: op.clone(),
                            key: key.clone(),
                            values: strings(values),
                        });
                    }
                }
            }
        }
        Statement {
            sid: obj.get("Sid").and_then(Value::as_str).map(str::to_string),
            allow: obj.get("Effect").and_then(Value::as_str) == Some("Allow"),
            actions: get("Action"),
            not_actions: get("NotAction"),
            resources: get("Resource"),
            not_resources: get("NotResource"),
            principals,
            has_not_principal: obj.contains_key("NotPrincipal"),
            conditions,
        }
    }

    /// Whether the statement names `action` (case-insensitive, wildcards), honouring NotAction.
    pub fn covers_action(&self, action: &str) -> bool {
        if !self.not_actions.is_empty() {
            return !self.not_actions.iter().any(|p| wildcard(p, action, true));
        }
        self.actions.iter().any(|p| wildcard(p, action, true))
    }

    pub fn has_principal(&self, kind: &str, value: &str) -> bool {
        self.principals
            .iter()
            .any(|(k, v)| (k == kind || k == "*") && (v == value || v == "*"))
    }

    /// The conditions on `key` (keys compare case-insensitively, as IAM does).
    pub fn conditions_on(&self, key: &str) -> impl Iterator<Item = &Condition> {
        self.conditions
            .iter()
            .filter(move |c| c.key.eq_ignore_ascii_case(key))
    }
}

impl Condition {
    /// Whether this condition holds for a single request value. Operators karpdoctor meets
    /// in trust policies are evaluated; others are reported as not understood (`None`).
    pub fn matches(&self, actual: Option<&str>) -> Option<bool> {
        let (op, if_exists) = match self.operator.strip_suffix("IfExists") {
            Some(base) => (base, true),
            None => (self.operator.as_str(), false),
        };
        let op = op.rsplit(':').next().unwrap_or(op); // ForAnyValue:/ForAllValues: on one value
        let Some(actual) = actual else {
            return Some(if_exists || op == "Null");
        };
        let any = |f: &dyn Fn(&str) -> bool| self.values.iter().any(|v| f(v));
        Some(match op {
            "StringEquals" => any(&|v| v == actual),
            "StringNotEquals" => !any(&|v| v == actual),
            "StringEqualsIgnoreCase" => any(&|v| v.eq_ignore_ascii_case(actual)),
            "StringNotEqualsIgnoreCase" => !any(&|v| v.eq_ignore_ascii_case(actual)),
            "StringLike" | "ArnLike" => any(&|v| wildcard(v, actual, false)),
            "StringNotLike" | "ArnNotLike" => !any(&|v| wildcard(v, actual, false)),
            "ArnEquals" => any(&|v| v == actual),
            "ArnNotEquals" => !any(&|v| v == actual),
            "Null" => any(&|v| v == "false"),
            "Bool" => any(&|v| v.eq_ignore_ascii_case(actual)),
            _ => return None,
        })
    }
}

/// IAM wildcard matching: `*` any run, `?` one character.
pub fn wildcard(pattern: &str, text: &str, ignore_case: bool) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = if ignore_case {
        (
            pattern.to_lowercase().chars().collect(),
            text.to_lowercase().chars().collect(),
        )
    } else {
        (pattern.chars().collect(), text.chars().collect())
    };
    // Iterative matcher with backtracking on the last `*`: linear in practice, no recursion.
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_url_encoded_documents_once_or_twice() {
        let doc = r#"{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}}"#;
        let once: String =
            percent_encoding::utf8_percent_encode(doc, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let twice: String =
            percent_encoding::utf8_percent_encode(&once, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        for raw in [doc.to_string(), once, twice] {
            let p = PolicyDocument::parse(&raw).unwrap();
            assert_eq!(p.statements.len(), 1);
            assert!(p.statements[0].has_principal("Service", "ec2.amazonaws.com"));
            assert!(p.statements[0].covers_action("sts:AssumeRole"));
        }
    }

    #[test]
    fn strings_or_lists_everywhere() {
        let p = PolicyDocument::parse(
            r#"{"Statement":[{"Effect":"Allow","Principal":{"Service":["pods.eks.amazonaws.com"]},
               "Action":["sts:AssumeRole","sts:TagSession"],
               "Condition":{"StringEquals":{"k":["a","b"]},"StringLike":{"l":"x*"}}}]}"#,
        )
        .unwrap();
        let s = &p.statements[0];
        assert!(
            s.covers_action("STS:TagSession"),
            "actions are case-insensitive"
        );
        assert_eq!(s.conditions.len(), 2);
        let k = s.conditions_on("K").next().unwrap();
        assert_eq!(k.matches(Some("b")), Some(true));
        assert_eq!(k.matches(Some("c")), Some(false));
    }

    #[test]
    fn not_action_and_not_principal_are_read() {
        let p = PolicyDocument::parse(
            r#"{"Statement":[{"Effect":"Deny","NotAction":"iam:*","NotPrincipal":{"AWS":"arn:aws:iam::1:root"},"Resource":"*"}]}"#,
        )
        .unwrap();
        let s = &p.statements[0];
        assert!(!s.allow && s.has_not_principal);
        assert!(s.covers_action("ec2:RunInstances"));
        assert!(!s.covers_action("iam:PassRole"));
    }

    #[test]
    fn condition_operators() {
        let c = |op: &str, v: &[&str]| Condition {
            operator: op.into(),
            key: "k".into(),
            values: v.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            c("StringLike", &["system:serviceaccount:*:karpenter"])
                .matches(Some("system:serviceaccount:kube-system:karpenter")),
            Some(true)
        );
        assert_eq!(
            c("StringEquals", &["system:serviceaccount:*:karpenter"])
                .matches(Some("system:serviceaccount:kube-system:karpenter")),
            Some(false)
        );
        assert_eq!(c("StringEqualsIfExists", &["a"]).matches(None), Some(true));
        assert_eq!(c("StringEquals", &["a"]).matches(None), Some(false));
        assert_eq!(c("NumericLessThan", &["3"]).matches(Some("2")), None);
    }

    #[test]
    fn invalid_documents_are_errors_not_panics() {
        for raw in [
            "",
            "not json",
            "{\"Statement\": 3}",
            "{\"Statement\": [1]}",
            "%7B%22Statement%22",
        ] {
            assert!(PolicyDocument::parse(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("ec2:Describe*", "ec2:DescribeSubnets", false));
        assert!(wildcard("*", "", false));
        assert!(wildcard("a?c", "abc", false));
        assert!(!wildcard("a?c", "ac", false));
        assert!(wildcard("*:*:*", "a:b:c", false));
        assert!(!wildcard("ec2:*", "iam:PassRole", true));
    }
}
