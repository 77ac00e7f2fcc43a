//! Remediation docs (`checks/KDxxxx.md`): section parsing for `explain -o json` and the
//! filling of the getting-started shell variables from a run's target.

use serde::Serialize;

use crate::target::Target;

/// The sections every doc has, in order.
pub const SECTIONS: &[&str] = &[
    "What it checks",
    // Whether a finding is an error (broken now) or a warning (breaks on a named action).
    "Severity",
    "Why it matters",
    "How to fix",
    "How to verify",
    "References",
];

/// A doc split into its `## ` sections (heading, body), in file order.
pub fn sections(doc: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_fence = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence && let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), String::new()));
            continue;
        }
        if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (_, body) in &mut out {
        *body = body.trim().to_string();
    }
    out
}

/// The doc's first line, `# KD1001 · slug`.
pub fn heading(doc: &str) -> &str {
    doc.lines().next().unwrap_or("")
}

/// The variables of Karpenter's getting-started guide, with this run's values.
pub fn variables(target: &Target) -> Vec<(&'static str, Option<String>)> {
    vec![
        ("CLUSTER_NAME", target.cluster.clone()),
        ("AWS_REGION", target.region.clone()),
        ("AWS_ACCOUNT_ID", target.account.clone()),
        ("KARPENTER_NAMESPACE", target.karpenter_namespace.clone()),
        ("KARPENTER_VERSION", target.karpenter_version.clone()),
    ]
}

/// Replaces `${NAME}` with the run's value where one is known; unknown ones stay as written
/// so the text is still valid shell.
pub fn fill(text: &str, target: &Target) -> String {
    let mut out = text.to_string();
    for (name, value) in variables(target) {
        if let Some(v) = value {
            out = out.replace(&format!("${{{name}}}"), &v);
        }
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainJson<'a> {
    pub code: &'a str,
    pub slug: &'a str,
    pub title: &'a str,
    pub category: crate::check::Category,
    pub severity: crate::check::Severity,
    pub needs: Vec<crate::facts::FactKind>,
    pub permissions: Vec<String>,
    pub doc_url: String,
    pub source: &'a str,
    pub sections: serde_json::Map<String, serde_json::Value>,
    pub markdown: &'a str,
}

pub fn explain_json(info: &'static crate::check::CheckInfo) -> ExplainJson<'static> {
    let mut permissions: Vec<String> = info
        .needs
        .iter()
        .flat_map(|k| k.operations().iter().map(|op| op.to_string()))
        .collect();
    permissions.sort();
    permissions.dedup();
    ExplainJson {
        code: info.code,
        slug: info.slug,
        title: info.title,
        category: info.category,
        severity: info.severity,
        needs: info.needs.to_vec(),
        permissions,
        doc_url: crate::check::doc_url(info.code),
        source: info.location,
        sections: sections(info.doc)
            .into_iter()
            .map(|(h, b)| (h, serde_json::Value::String(b)))
            .collect(),
        markdown: info.doc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sections_ignoring_fenced_headings() {
        let doc = "# KD0 · x\n## What it checks\nChecks that a.\n```sh\n## not a heading\n```\n## Why it matters\nb\n";
        let s = sections(doc);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0, "What it checks");
        assert!(s[0].1.contains("## not a heading"));
        assert_eq!(s[1], ("Why it matters".to_string(), "b".to_string()));
    }

    #[test]
    fn fills_known_variables_only() {
        let target = Target {
            cluster: Some("prod".into()),
            ..Target::default()
        };
        assert_eq!(
            fill(
                "--set settings.clusterName=${CLUSTER_NAME} --region ${AWS_REGION}",
                &target
            ),
            "--set settings.clusterName=prod --region ${AWS_REGION}"
        );
    }
}
