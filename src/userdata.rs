//! An EC2NodeClass's `spec.userData` read the way Karpenter and the node read it, per AMI
//! family: what would stop the node from joining (an error), and what the node ignores or runs
//! to no effect (a warning).
//!
//! Sources (facts, not code): Karpenter's AWS provider, `pkg/providers/amifamily/bootstrap`
//! (`nodeadm.go`: MIME when the text starts with `MIME-Version:` or `Content-Type:`, else a
//! YAML map is a NodeConfig, else a shell script; its own NodeConfig is appended last and wins;
//! `mime/mime.go`: a MIME archive must be `multipart/*`, or every launch fails with "parsing
//! custom UserData"; `bottlerocket.go`: TOML that does not parse fails launches); nodeadm's
//! API (`node.eks.aws/v1alpha1`, kind `NodeConfig`, decoded from `application/node.eks.aws`
//! parts); the AL2023 EKS AMIs, whose `/etc/eks/bootstrap.sh` is a stub that prints an error and
//! exits 1 (awslabs/amazon-eks-ami#2056).

use std::collections::BTreeMap;

// Error: launches fail or the node cannot join. Warning: the node joins, but part of the user
// data is ignored or fails.
pub use crate::finding::Severity;

/// One thing wrong with the user data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    pub message: String,
    pub fix: String,
    /// The line of the user data at fault, when one is (user data can hold secrets, so the
    /// rest is never quoted).
    pub line: Option<String>,
}

/// What the generated configuration says about the cluster, to compare a user NodeConfig with.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub name: String,
    pub endpoint: String,
}

/// The AMI families whose user data Karpenter treats differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Al2023,
    Al2,
    Bottlerocket,
    Windows,
    /// No merging: the user data must configure and join the node itself.
    Custom,
}

impl Family {
    /// From `amiFamily` or an alias's family, in any case; `None` for families karpdoctor does
    /// not judge (Ubuntu in old releases, anything new).
    pub fn parse(family: &str) -> Option<Family> {
        let f = family.to_ascii_lowercase();
        Some(match f.as_str() {
            "al2023" => Family::Al2023,
            "al2" => Family::Al2,
            "bottlerocket" => Family::Bottlerocket,
            "custom" => Family::Custom,
            _ if f.starts_with("windows") => Family::Windows,
            _ => return None,
        })
    }
}

/// The problems of `user_data` for `family`. `image_names` are the names of the AMIs the class
/// resolved (for `Custom`, whether they are AL2023 images).
pub fn judge(
    family: Family,
    user_data: &str,
    cluster: &Cluster,
    image_names: &[String],
) -> Vec<Problem> {
    if user_data.trim().is_empty() {
        return Vec::new();
    }
    match family {
        Family::Al2023 => nodeadm(user_data, cluster, false),
        Family::Custom if image_names.iter().any(|n| n.contains("al2023")) => {
            nodeadm(user_data, cluster, true)
        }
        Family::Custom => Vec::new(),
        Family::Al2 => al2(user_data),
        Family::Bottlerocket => bottlerocket(user_data, cluster),
        Family::Windows => windows(user_data),
    }
}

fn problem(severity: Severity, message: impl Into<String>, fix: impl Into<String>) -> Problem {
    Problem {
        severity,
        message: message.into(),
        fix: fix.into(),
        line: None,
    }
}

/// Whether Karpenter reads the text as a MIME archive.
fn looks_mime(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("MIME-Version:") || t.starts_with("Content-Type:")
}

/// One part of a MIME archive: its media type (lower case) and body.
struct Part {
    media_type: String,
    body: String,
}

/// The parts of a MIME multipart archive, or why Karpenter cannot read it.
fn mime_parts(text: &str) -> Result<Vec<Part>, String> {
    let mail = mailparse::parse_mail(text.as_bytes()).map_err(|e| e.to_string())?;
    let has_type = mail
        .headers
        .iter()
        .any(|h| h.get_key_ref().eq_ignore_ascii_case("Content-Type"));
    if !has_type {
        return Err(
            "it has no Content-Type header (is there a blank line before the headers?)".into(),
        );
    }
    if !mail.ctype.mimetype.starts_with("multipart/") {
        return Err(format!(
            "its Content-Type is {}, not multipart/*",
            mail.ctype.mimetype
        ));
    }
    let Some(boundary) = mail.ctype.params.get("boundary").filter(|b| !b.is_empty()) else {
        return Err("its multipart Content-Type has no boundary parameter".into());
    };
    // Go's multipart reader, which Karpenter uses, stops with "unexpected EOF" when the archive
    // ends inside a part: the closing `--BOUNDARY--` line is required.
    let closing = format!("--{boundary}--");
    if !text.lines().any(|l| l.trim_end() == closing) {
        return Err(format!(
            "it does not end with the closing boundary line {closing}"
        ));
    }
    Ok(mail
        .subparts
        .iter()
        .map(|p| Part {
            media_type: p.ctype.mimetype.to_ascii_lowercase(),
            body: p.get_body().unwrap_or_default(),
        })
        .collect())
}

/// A YAML document as Karpenter tests it (`yaml.Unmarshal` into a map): a mapping, or a
/// document with no value at all (only comments), which decodes as an empty map.
fn yaml_map(text: &str) -> Option<BTreeMap<String, serde_json::Value>> {
    match serde_norway::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(m)) => Some(m.into_iter().collect()),
        Ok(serde_json::Value::Null) => Some(BTreeMap::new()),
        _ => None,
    }
}

/// The first line of a shell script that runs `/etc/eks/bootstrap.sh` (not a comment).
fn bootstrap_sh_call(script: &str) -> Option<String> {
    script
        .lines()
        .map(str::trim)
        .find(|l| !l.starts_with('#') && l.contains("/etc/eks/bootstrap.sh"))
        .map(|l| l.chars().take(200).collect())
}

const NODECONFIG_FIX: &str = "give kubelet and containerd settings as a NodeConfig (apiVersion: node.eks.aws/v1alpha1, kind: NodeConfig) in an application/node.eks.aws MIME part, or as plain NodeConfig YAML; see Karpenter's EC2NodeClass docs, spec.userData for AL2023";

/// AL2023 (and `Custom` on AL2023 images): nodeadm reads NodeConfig parts; shell parts run
/// under cloud-init.
fn nodeadm(text: &str, cluster: &Cluster, custom: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let parts = if looks_mime(text) {
        match mime_parts(text) {
            Ok(parts) => parts,
            Err(why) => {
                out.push(problem(
                    Severity::Error,
                    format!("userData starts like a MIME archive but Karpenter cannot read it as one: {why}; every launch fails with \"parsing custom UserData\""),
                    "write a MIME multipart archive (MIME-Version: 1.0, Content-Type: multipart/mixed; boundary=\"//\", parts, and the closing --//-- line), or plain NodeConfig YAML, or a shell script without MIME headers",
                ));
                return out;
            }
        }
    } else if yaml_map(text).is_some() {
        vec![Part {
            media_type: "application/node.eks.aws".into(),
            body: text.to_string(),
        }]
    } else {
        vec![Part {
            media_type: "text/x-shellscript".into(),
            body: text.to_string(),
        }]
    };
    for part in &parts {
        if part.media_type == "application/node.eks.aws" {
            out.extend(node_config(&part.body, cluster, custom));
        } else if let Some(line) = part
            .media_type
            .starts_with("text/x-shellscript")
            .then(|| bootstrap_sh_call(&part.body))
            .flatten()
        {
            let mut p = if custom {
                problem(
                    Severity::Error,
                    "userData runs /etc/eks/bootstrap.sh, which AL2023 images do not have (a stub that prints an error and exits 1): with amiFamily Custom nothing else configures the node, so it never joins",
                    "configure the node with a NodeConfig for nodeadm (cluster name, apiServerEndpoint, certificateAuthority, cidr, and registerWithTaints karpenter.sh/unregistered:NoExecute), or use amiFamily AL2023 and let Karpenter generate it",
                )
            } else {
                problem(
                    Severity::Warning,
                    "userData runs /etc/eks/bootstrap.sh, which AL2023 images do not have (a stub that prints an error and exits 1): the node still joins with Karpenter's NodeConfig, but the script stops there under set -e and its bootstrap arguments are ignored",
                    NODECONFIG_FIX,
                )
            };
            p.line = Some(line);
            out.push(p);
        }
    }
    out
}

/// A NodeConfig part, as nodeadm decodes it.
fn node_config(body: &str, cluster: &Cluster, custom: bool) -> Vec<Problem> {
    let Some(map) = yaml_map(body) else {
        return vec![problem(
            Severity::Error,
            "an application/node.eks.aws part of userData is not a YAML object: nodeadm cannot decode it and the node never joins",
            NODECONFIG_FIX,
        )];
    };
    let text = |k: &str| map.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if !api_version.starts_with("node.eks.aws/") || kind != "NodeConfig" {
        let what = if map.is_empty() {
            "has no apiVersion or kind".to_string()
        } else {
            format!("is apiVersion {:?}, kind {:?}", api_version, kind)
        };
        return vec![problem(
            Severity::Error,
            format!(
                "userData is YAML, so Karpenter passes it to nodeadm as a NodeConfig, but it {what}: nodeadm rejects it and the node never joins (cloud-config and other YAML are not run on AL2023 this way)"
            ),
            NODECONFIG_FIX,
        )];
    }
    let spec_cluster = map
        .get("spec")
        .and_then(|s| s.get("cluster"))
        .and_then(|c| c.as_object());
    let mut out = Vec::new();
    let field = |k: &str| {
        spec_cluster
            .and_then(|c| c.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut mismatched = Vec::new();
    let name = field("name");
    if !name.is_empty() && !cluster.name.is_empty() && name != cluster.name {
        mismatched.push(format!("name {name} (the cluster is {})", cluster.name));
    }
    let endpoint = field("apiServerEndpoint");
    if !endpoint.is_empty()
        && !cluster.endpoint.is_empty()
        && endpoint.trim_end_matches('/') != cluster.endpoint.trim_end_matches('/')
    {
        mismatched.push(format!(
            "apiServerEndpoint {endpoint} (the cluster's is {})",
            cluster.endpoint
        ));
    }
    if !mismatched.is_empty() {
        out.push(if custom {
            problem(
                Severity::Error,
                format!("the NodeConfig in userData names another cluster: {}; with amiFamily Custom it is the only configuration, so nodes try to join that cluster", mismatched.join(", ")),
                "set spec.cluster in the NodeConfig to this cluster's name, endpoint, certificate authority and service CIDR (aws eks describe-cluster)",
            )
        } else {
            problem(
                Severity::Warning,
                format!("the NodeConfig in userData names another cluster: {}; Karpenter's own NodeConfig comes last and overrides it, so it has no effect but misleads", mismatched.join(", ")),
                "remove spec.cluster from the NodeConfig: Karpenter fills it in",
            )
        });
    }
    out
}

/// AL2: a shell script or MIME archive that cloud-init runs before Karpenter's bootstrap part.
fn al2(text: &str) -> Vec<Problem> {
    if looks_mime(text) {
        return match mime_parts(text) {
            Err(why) => vec![problem(
                Severity::Error,
                format!(
                    "userData starts like a MIME archive but Karpenter cannot read it as one: {why}; launches fail"
                ),
                "write a MIME multipart archive with the closing boundary line, or a plain shell script",
            )],
            Ok(parts)
                if parts
                    .iter()
                    .any(|p| p.media_type == "application/node.eks.aws") =>
            {
                vec![al2_nodeconfig()]
            }
            Ok(_) => Vec::new(),
        };
    }
    match yaml_map(text) {
        Some(m)
            if m.get("apiVersion")
                .and_then(|v| v.as_str())
                .is_some_and(|v| v.starts_with("node.eks.aws/")) =>
        {
            vec![al2_nodeconfig()]
        }
        _ => Vec::new(),
    }
}

fn al2_nodeconfig() -> Problem {
    problem(
        Severity::Warning,
        "userData holds a nodeadm NodeConfig, but AL2 images have no nodeadm: cloud-init ignores it (\"Unhandled unknown content-type\") and its settings never apply",
        "on AL2, pass settings through spec.kubelet or a shell script; or move the class to amiFamily AL2023 with AL2023 images",
    )
}

/// Bottlerocket: TOML settings merged with Karpenter's.
fn bottlerocket(text: &str, cluster: &Cluster) -> Vec<Problem> {
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let why = e.to_string();
            let first = why.lines().next().unwrap_or_default().to_string();
            return vec![problem(
                Severity::Error,
                format!(
                    "userData is not valid TOML ({first}): Karpenter cannot merge it with its Bottlerocket settings and launches fail"
                ),
                "fix the TOML (check it with a TOML parser); Bottlerocket settings go under [settings.*] tables",
            )];
        }
    };
    let kubernetes = table
        .get("settings")
        .and_then(|s| s.get("kubernetes"))
        .and_then(|k| k.as_table());
    let overridden: Vec<&str> = ["cluster-name", "api-server", "cluster-certificate"]
        .into_iter()
        .filter(|k| kubernetes.is_some_and(|t| t.contains_key(*k)))
        .collect();
    let foreign = kubernetes
        .and_then(|t| t.get("cluster-name"))
        .and_then(|v| v.as_str())
        .filter(|n| !cluster.name.is_empty() && *n != cluster.name);
    if overridden.is_empty() {
        return Vec::new();
    }
    vec![problem(
        Severity::Warning,
        format!(
            "userData sets settings.kubernetes {}{}: Karpenter overwrites these with the cluster's values, so they have no effect",
            overridden.join(", "),
            foreign
                .map(|n| format!(" (cluster-name {n}, the cluster is {})", cluster.name))
                .unwrap_or_default()
        ),
        "remove them from userData: Karpenter sets the cluster name, API server and certificate",
    )]
}

/// Windows: PowerShell that Karpenter wraps in its own `<powershell>` block before the EKS
/// bootstrap call.
fn windows(text: &str) -> Vec<Problem> {
    let lower = text.to_ascii_lowercase();
    if lower.contains("</powershell>") || lower.contains("<powershell>") {
        return vec![problem(
            Severity::Warning,
            "userData has its own <powershell> tags: Karpenter already wraps userData in a <powershell> block ahead of the EKS bootstrap call, so a closing tag in it ends that block early and the bootstrap may not run",
            "remove the <powershell> and </powershell> tags: give only the PowerShell commands",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        Cluster {
            name: "demo".into(),
            endpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com".into(),
        }
    }

    fn judge_al2023(text: &str) -> Vec<Problem> {
        judge(Family::Al2023, text, &cluster(), &[])
    }

    const MIME_OK: &str = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho hello\n--//--\n";

    #[test]
    fn al2023_accepts_mime_nodeconfig_yaml_and_plain_scripts() {
        assert!(judge_al2023(MIME_OK).is_empty());
        assert!(judge_al2023("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n").is_empty());
        assert!(judge_al2023("#!/bin/bash\necho \"$(date)\" > /tmp/booted\n").is_empty());
        assert!(judge_al2023("").is_empty());
    }

    #[test]
    fn al2023_mime_without_closing_boundary_or_multipart_fails_launches() {
        let open = MIME_OK.replace("--//--\n", "");
        let p = judge_al2023(&open);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].severity, Severity::Error);
        assert!(
            p[0].message.contains("closing boundary"),
            "{}",
            p[0].message
        );
        let single =
            "MIME-Version: 1.0\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n";
        let p = judge_al2023(single);
        assert!(p[0].message.contains("not multipart"), "{}", p[0].message);
    }

    #[test]
    fn al2023_bootstrap_sh_is_a_warning_and_fatal_only_for_custom() {
        let script = "#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--max-pods=110'\n";
        let p = judge_al2023(script);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].severity, Severity::Warning);
        let p = judge(
            Family::Custom,
            script,
            &cluster(),
            &["amazon-eks-node-al2023-x86_64-standard-1.33-v20251120".into()],
        );
        assert_eq!(p[0].severity, Severity::Error);
        // Custom on an image karpdoctor cannot place: not judged.
        assert!(judge(Family::Custom, script, &cluster(), &["golden-rhel9".into()]).is_empty());
        // A comment naming the script is not a call.
        assert!(
            judge_al2023("#!/bin/bash\n# no /etc/eks/bootstrap.sh on AL2023\necho ok\n").is_empty()
        );
    }

    #[test]
    fn al2023_yaml_that_is_not_a_nodeconfig_is_fatal() {
        let p = judge_al2023("#cloud-config\npackages:\n  - htop\n");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].severity, Severity::Error);
        assert!(p[0].message.contains("NodeConfig"));
    }

    #[test]
    fn nodeconfig_naming_another_cluster_warns_unless_custom() {
        let nc = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: staging\n    apiServerEndpoint: https://ABC.gr7.us-west-2.eks.amazonaws.com\n";
        let p = judge_al2023(nc);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].severity, Severity::Warning);
        assert!(p[0].message.contains("name staging"));
        let p = judge(
            Family::Custom,
            nc,
            &cluster(),
            &["amazon-eks-node-al2023-arm64-standard-1.33".into()],
        );
        assert_eq!(p[0].severity, Severity::Error);
    }

    #[test]
    fn al2_nodeconfig_is_ignored_and_scripts_are_fine() {
        assert!(
            judge(
                Family::Al2,
                "#!/bin/bash\n/etc/eks/bootstrap.sh demo\n",
                &cluster(),
                &[]
            )
            .is_empty()
        );
        let p = judge(
            Family::Al2,
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n",
            &cluster(),
            &[],
        );
        assert_eq!(p[0].severity, Severity::Warning);
    }

    #[test]
    fn bottlerocket_toml_must_parse() {
        let ok = "[settings.kubernetes]\nmax-pods = 110\n[settings.kernel.sysctl]\n\"net.ipv4.ip_local_port_range\" = \"1024 65535\"\n";
        assert!(judge(Family::Bottlerocket, ok, &cluster(), &[]).is_empty());
        let bad = "[settings.kubernetes]\nmax-pods = 110\neviction-hard = {\"memory.available\" = \"15%\"\n";
        let p = judge(Family::Bottlerocket, bad, &cluster(), &[]);
        assert_eq!(p[0].severity, Severity::Error);
        let foreign = "[settings.kubernetes]\ncluster-name = \"staging\"\n";
        let p = judge(Family::Bottlerocket, foreign, &cluster(), &[]);
        assert_eq!(p[0].severity, Severity::Warning);
        assert!(p[0].message.contains("staging"));
    }

    #[test]
    fn windows_tags_warn() {
        assert!(judge(Family::Windows, "Write-Host hello", &cluster(), &[]).is_empty());
        let p = judge(
            Family::Windows,
            "<powershell>\nWrite-Host hi\n</powershell>",
            &cluster(),
            &[],
        );
        assert_eq!(p[0].severity, Severity::Warning);
    }
}
