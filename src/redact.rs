//! `--redact`: stable pseudonyms for the identifiers a support ticket should not carry.
//!
//! Account ids (alone or inside ARNs), IPv4 addresses, EC2 and EKS hostnames and OIDC issuer
//! ids are replaced in every string of the report and of a `--record` bundle. The same input
//! always gets the same token within a run (`ACCOUNT-1`, `IP-3`, `HOST-2`, `OIDC-1`), so the
//! output still reads coherently; the mapping lives only in memory and is never written.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

struct Pattern {
    prefix: &'static str,
    regex: Regex,
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    // Order matters: hostnames embed IP-like parts and must be replaced as a whole first.
    let specs: [(&'static str, &str); 5] = [
        // EKS API endpoints: ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com
        (
            "HOST",
            r"\b[A-Za-z0-9]{8,}\.[a-z0-9]+\.[a-z0-9-]+\.eks\.amazonaws\.com\b",
        ),
        // EC2 private DNS names: ip-192-168-1-2.us-west-2.compute.internal, ip-10-0-0-1.ec2.internal
        (
            "HOST",
            r"\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[a-z0-9-]+)*\b",
        ),
        // OIDC issuer ids: oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE
        ("OIDC", r"/id/[A-Za-z0-9]{8,}\b"),
        (
            "IP",
            r"\b(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}\b",
        ),
        ("ACCOUNT", r"\b\d{12}\b"),
    ];
    specs
        .into_iter()
        .filter_map(|(prefix, re)| Regex::new(re).ok().map(|regex| Pattern { prefix, regex }))
        .collect()
});

/// Replaces identifiers with pseudonyms, remembering them for the run.
#[derive(Default)]
pub struct Redactor {
    tokens: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
}

impl Redactor {
    pub fn new() -> Self {
        Redactor::default()
    }

    pub fn string(&mut self, s: &str) -> String {
        let mut text = s.to_string();
        for p in PATTERNS.iter() {
            if !p.regex.is_match(&text) {
                continue;
            }
            let mut out = String::with_capacity(text.len());
            let mut last = 0;
            for m in p.regex.find_iter(&text) {
                out.push_str(&text[last..m.start()]);
                // Keep the `/id/` of an issuer URL; pseudonymise what follows.
                let (keep, secret) = match m.as_str().strip_prefix("/id/") {
                    Some(rest) => ("/id/", rest),
                    None => ("", m.as_str()),
                };
                out.push_str(keep);
                out.push_str(&self.token(p.prefix, secret));
                last = m.end();
            }
            out.push_str(&text[last..]);
            text = out;
        }
        text
    }

    fn token(&mut self, prefix: &'static str, secret: &str) -> String {
        if let Some(t) = self.tokens.get(secret) {
            return t.clone();
        }
        let n = self.counts.entry(prefix).or_default();
        *n += 1;
        let token = format!("{prefix}-{n}");
        self.tokens.insert(secret.to_string(), token.clone());
        token
    }

    /// Redacts every string value (object keys are names chosen by karpdoctor or Kubernetes
    /// label keys, and stay).
    pub fn value(&mut self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.string(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.value(i)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redacts a serializable document by round-tripping it through JSON.
    pub fn document<T: serde::Serialize + serde::de::DeserializeOwned>(
        &mut self,
        doc: &T,
    ) -> Option<T> {
        let mut v = serde_json::to_value(doc).ok()?;
        self.value(&mut v);
        serde_json::from_value(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_input_same_token() {
        let mut r = Redactor::new();
        let a = r.string("arn:aws:iam::111122223333:role/KarpenterNodeRole and 111122223333");
        assert_eq!(
            a,
            "arn:aws:iam::ACCOUNT-1:role/KarpenterNodeRole and ACCOUNT-1"
        );
        assert_eq!(r.string("444455556666"), "ACCOUNT-2");
        assert_eq!(r.string("111122223333"), "ACCOUNT-1");
    }

    #[test]
    fn hostnames_ips_and_issuers() {
        let mut r = Redactor::new();
        let s = r.string(
            "node ip-192-168-12-34.us-west-2.compute.internal at 192.168.12.34 behind 10.0.0.0/16",
        );
        assert_eq!(s, "node HOST-1 at IP-1 behind IP-2/16");
        let e = r.string("https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com");
        assert_eq!(e, "https://HOST-2");
        let i = r
            .string("https://oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE");
        assert_eq!(i, "https://oidc.eks.us-west-2.amazonaws.com/id/OIDC-1");
    }

    #[test]
    fn leaves_versions_and_names_alone() {
        let mut r = Redactor::new();
        for s in [
            "v1.33.5-eks-3025e55",
            "karpenter-6d9f7c8b5d-7xk2p",
            "1.8.1",
            "2026-11-23T09:58:04Z",
        ] {
            assert_eq!(r.string(s), s);
        }
    }
}
