//! An EC2NodeClass's `spec.userData` read the way Karpenter and the node read it, per AMI
//! family: what would stop the node from joining (an error), and what the node ignores or runs
//! to no effect (a warning).
//!
//! Sources (facts, not code): Karpenter's AWS provider, `pkg/providers/amifamily/bootstrap`
//! (`nodeadm.go`: MIME when the text starts with `MIME-Version:` or `Content-Type:`, else a
//! YAML map is a NodeConfig, else a shell script; its own NodeConfig is appended last and wins;
//! `mime/mime.go`: the MIME archive is read with Go's `net/mail`, `mime` and `mime/multipart`,
//! and any error fails every launch with "parsing custom UserData"; `eksbootstrap.go`: the same
//! reading for AL2; `bottlerocket.go` and `bottlerocketsettings.go`: TOML that does not parse,
//! or does not decode into Karpenter's settings types, fails launches; `custom.go`: `Custom`
//! user data is passed on unchanged); nodeadm (awslabs/amazon-eks-ami,
//! `nodeadm/internal/configprovider/mime.go` and `encoding.go`: the same Go readers on the node,
//! NodeConfig parts `application/node.eks.aws`, base64 decoded when they decode); the AL2023 EKS
//! AMIs, whose `/etc/eks/bootstrap.sh` is a stub that prints an error and exits 1
//! (awslabs/amazon-eks-ami#2056).

use std::collections::BTreeMap;

use base64::Engine as _;

mod gomime;

use gomime::{MimeError, NODECONFIG_TYPE, Part, mime_parts, parse_media_type};

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

const MIME_FIX: &str = "write a MIME multipart archive (MIME-Version: 1.0, Content-Type: multipart/mixed; boundary=\"//\", a blank line, each part opened by a --// line with its own Content-Type and a blank line, and after the last part a --//-- line), or plain NodeConfig YAML, or a shell script without MIME headers";

/// A MIME archive that Karpenter reads without a single part: it adds nothing from it.
fn no_parts() -> Problem {
    problem(
        Severity::Warning,
        "userData is a MIME archive in which Karpenter finds no part (no line of two dashes and the Content-Type's boundary opens one): Karpenter accepts it but adds nothing from it, so none of it reaches the node",
        "open each part with a line of two dashes and the boundary of the Content-Type header (--// for boundary=\"//\"), after the blank line that ends the archive's header",
    )
}

/// A NodeConfig part's text as nodeadm reads it (`nodeadm/internal/configprovider/encoding.go`:
/// base64 is decoded when the whole part decodes, gzip is unpacked): `None` for gzip, which
/// karpdoctor does not open.
fn node_config_text(body: &str) -> Option<String> {
    // Go's base64 decoder skips line breaks.
    let compact: Vec<u8> = body
        .bytes()
        .filter(|c| !matches!(c, b'\r' | b'\n'))
        .collect();
    let data = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .unwrap_or_else(|_| body.as_bytes().to_vec());
    if data.starts_with(&[0x1f, 0x8b]) {
        return None;
    }
    Some(String::from_utf8_lossy(&data).into_owned())
}

/// AL2023 (and `Custom` on AL2023 images): nodeadm reads NodeConfig parts; shell parts run
/// under cloud-init.
fn nodeadm(text: &str, cluster: &Cluster, custom: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let parts = if looks_mime(text) {
        // Karpenter reads AL2023 user data itself (nodeadm.go, parseUserData); `Custom` user
        // data goes to the node unchanged (custom.go), where nodeadm reads it with the same Go
        // calls but stops at a wrapped io.EOF too (configprovider/mime.go, ParseMultipart).
        let read = match mime_parts(text) {
            Ok(archive) if custom && archive.unclosed => Err(MimeError::new(
                "it ends without its closing --BOUNDARY-- line, on a line that is not a whole --BOUNDARY line with its newline (Go: multipart: NextPart: EOF, which nodeadm does not take for the end of the archive)",
            )),
            read => read,
        };
        match read {
            Ok(archive) => {
                if archive.parts.is_empty() && !custom {
                    out.push(no_parts());
                }
                archive.parts
            }
            Err(e) => {
                out.push(Problem {
                    line: e.line,
                    ..problem(
                        Severity::Error,
                        if custom {
                            format!("userData starts like a MIME archive but nodeadm on the node cannot read it as one: {}; with amiFamily Custom, Karpenter passes userData on unchanged and the node never joins", e.why)
                        } else {
                            format!("userData starts like a MIME archive but Karpenter cannot read it as one: {}; every launch fails with \"parsing custom UserData\"", e.why)
                        },
                        MIME_FIX,
                    )
                });
                return out;
            }
        }
    } else if yaml_map(text).is_some() {
        vec![Part {
            content_type: NODECONFIG_TYPE.into(),
            body: text.to_string(),
        }]
    } else {
        vec![Part {
            content_type: "text/x-shellscript".into(),
            body: text.to_string(),
        }]
    };
    for part in &parts {
        // Karpenter copies each part's Content-Type into the archive it builds as written;
        // nodeadm parses every one and stops at one that does not parse (ParseMultipart).
        if !part.content_type.is_empty()
            && let Err(e) = parse_media_type(&part.content_type)
        {
            out.push(problem(
                Severity::Error,
                format!("a part of userData has a Content-Type that does not parse (Go: {e}): nodeadm on the node stops reading the user data there and the node never joins"),
                "give each part a Content-Type such as text/x-shellscript; charset=\"us-ascii\" or application/node.eks.aws, quoting parameter values that hold spaces or characters such as / or =",
            ));
            continue;
        }
        let media_type = part.media_type();
        if media_type == NODECONFIG_TYPE {
            if let Some(body) = node_config_text(&part.body) {
                out.extend(node_config(&body, cluster, custom));
            }
        } else if let Some(line) = (media_type == "text/x-shellscript")
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
        // eksbootstrap.go (mimeify, copyCustomUserDataParts): the same Go reading as AL2023's.
        return match mime_parts(text) {
            Err(e) => vec![Problem {
                line: e.line,
                ..problem(
                    Severity::Error,
                    format!(
                        "userData starts like a MIME archive but Karpenter cannot read it as one: {}; every launch fails with \"parsing custom user data input\"",
                        e.why
                    ),
                    "write a MIME multipart archive (Content-Type: multipart/mixed; boundary=\"//\", each part opened by a --// line, and after the last part a --//-- line), or a plain shell script",
                )
            }],
            Ok(archive) if archive.parts.is_empty() => vec![no_parts()],
            Ok(archive)
                if archive
                    .parts
                    .iter()
                    .any(|p| p.media_type() == NODECONFIG_TYPE) =>
            {
                vec![al2_nodeconfig(true)]
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
            vec![al2_nodeconfig(false)]
        }
        _ => Vec::new(),
    }
}

/// A NodeConfig on AL2: in an `application/node.eks.aws` MIME part (`in_mime`) cloud-init skips
/// it; as plain YAML, Karpenter wraps it as a `text/x-shellscript` part (eksbootstrap.go,
/// mimeify), which cloud-init tries to run.
fn al2_nodeconfig(in_mime: bool) -> Problem {
    problem(
        Severity::Warning,
        if in_mime {
            "userData holds a nodeadm NodeConfig, but AL2 images have no nodeadm: cloud-init ignores it (\"Unhandled unknown content-type\") and its settings never apply"
        } else {
            "userData is a nodeadm NodeConfig, but AL2 images have no nodeadm: Karpenter wraps user data that is not MIME as a text/x-shellscript part, so cloud-init tries to run the YAML as a script, which fails, and its settings never apply"
        },
        "on AL2, pass settings through spec.kubelet or a shell script; or move the class to amiFamily AL2023 with AL2023 images",
    )
}

/// The TOML type that Karpenter decodes a Bottlerocket setting into
/// (`bottlerocketsettings.go`): a value of another type fails the decode.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Int,
    U32,
    Bool,
    StrList,
    StrListList,
    StrMap,
    StrListMap,
    Table,
    TableMap,
}

impl Kind {
    /// Whether go-toml decodes `v` into this type. Dates and times are not judged (go-toml's
    /// handling of them into strings differs between its versions).
    fn fits(self, v: &toml::Value) -> bool {
        use toml::Value as V;
        match (self, v) {
            (_, V::Datetime(_)) => true,
            (Kind::Str, V::String(_))
            | (Kind::Int, V::Integer(_))
            | (Kind::Bool, V::Boolean(_))
            | (Kind::Table, V::Table(_)) => true,
            (Kind::U32, V::Integer(i)) => u32::try_from(*i).is_ok(),
            (Kind::StrList, V::Array(a)) => all_strings(a),
            (Kind::StrListList, V::Array(a)) => a
                .iter()
                .all(|x| matches!(x, V::Array(inner) if all_strings(inner))),
            (Kind::StrMap, V::Table(t)) => t.values().all(|x| matches!(x, V::String(_))),
            (Kind::StrListMap, V::Table(t)) => t
                .values()
                .all(|x| matches!(x, V::Array(inner) if all_strings(inner))),
            (Kind::TableMap, V::Table(t)) => t.values().all(|x| matches!(x, V::Table(_))),
            _ => false,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Int => "an integer",
            Kind::U32 => "an integer from 0 to 4294967295",
            Kind::Bool => "a boolean (true or false, unquoted)",
            Kind::StrList => "an array of strings",
            Kind::StrListList => "an array of arrays of strings",
            Kind::StrMap => "a table of strings",
            Kind::StrListMap => "a table of arrays of strings",
            Kind::Table => "a table",
            Kind::TableMap => "a table of tables",
        }
    }
}

fn all_strings(a: &[toml::Value]) -> bool {
    a.iter().all(|x| matches!(x, toml::Value::String(_)))
}

/// `settings.kubernetes` as Karpenter decodes it (`BottlerocketKubernetes`, by TOML key; go-toml
/// also matches a key in another case). Keys it does not know are ignored.
const KUBERNETES_KEYS: &[(&str, Kind)] = &[
    ("api-server", Kind::Str),
    ("cloud-provider", Kind::Str),
    ("cluster-certificate", Kind::Str),
    ("cluster-name", Kind::Str),
    ("cluster-dns-ip", Kind::Str),
    ("credential-providers", Kind::TableMap),
    ("node-labels", Kind::StrMap),
    ("node-taints", Kind::StrListMap),
    ("max-pods", Kind::Int),
    ("static-pods", Kind::TableMap),
    ("eviction-hard", Kind::StrMap),
    ("eviction-soft", Kind::StrMap),
    ("eviction-soft-grace-period", Kind::StrMap),
    ("eviction-max-pod-grace-period", Kind::Int),
    ("kube-reserved", Kind::StrMap),
    ("system-reserved", Kind::StrMap),
    ("allowed-unsafe-sysctls", Kind::StrList),
    ("server-tls-bootstrap", Kind::Bool),
    ("registry-qps", Kind::Int),
    ("registry-burst", Kind::Int),
    ("event-qps", Kind::Int),
    ("event-burst", Kind::Int),
    ("kube-api-qps", Kind::Int),
    ("kube-api-burst", Kind::Int),
    ("container-log-max-size", Kind::Str),
    ("container-log-max-files", Kind::Int),
    ("cpu-manager-policy", Kind::Str),
    ("cpu-manager-policy-options", Kind::StrList),
    ("cpu-manager-reconcile-period", Kind::Str),
    ("memory-manager-policy", Kind::Str),
    ("memory-manager-reserved-memory", Kind::TableMap),
    ("topology-manager-scope", Kind::Str),
    ("topology-manager-policy", Kind::Str),
    ("topology-manager-policy-options", Kind::Table),
    ("image-gc-high-threshold-percent", Kind::Str),
    ("image-gc-low-threshold-percent", Kind::Str),
    ("ids-per-pod", Kind::Int),
    ("cpu-cfs-quota-enforced", Kind::Bool),
    ("shutdown-grace-period", Kind::Str),
    ("shutdown-grace-period-for-critical-pods", Kind::Str),
    ("cluster-domain", Kind::Str),
    ("seccomp-default", Kind::Bool),
    ("pod-pids-limit", Kind::Int),
    ("device-ownership-from-security-context", Kind::Bool),
    ("single-process-oom-kill", Kind::Bool),
    ("container-log-max-workers", Kind::Int),
    ("container-log-monitor-interval", Kind::Str),
    ("hostname-override-source", Kind::Str),
    ("log-level", Kind::U32),
];

/// A setting whose TOML type Karpenter cannot decode (`UnmarshalTOML` into
/// `BottlerocketConfig`, then into its typed `settings`): `None` when every known one fits.
fn bottlerocket_types(table: &toml::Table) -> Option<Problem> {
    let settings = table.get("settings")?;
    let Some(settings) = settings.as_table() else {
        return Some(toml_type_problem("settings", settings, Kind::Table));
    };
    if let Some(value) = settings.get("kubernetes") {
        let Some(kubernetes) = value.as_table() else {
            return Some(toml_type_problem("settings.kubernetes", value, Kind::Table));
        };
        for (key, value) in kubernetes {
            let Some((_, kind)) = KUBERNETES_KEYS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key))
            else {
                continue;
            };
            if !kind.fits(value) {
                return Some(toml_type_problem(
                    &format!("settings.kubernetes.{key}"),
                    value,
                    *kind,
                ));
            }
        }
    }
    if let Some(value) = settings.get("bootstrap-commands") {
        let Some(commands) = value.as_table().filter(|_| Kind::TableMap.fits(value)) else {
            return Some(toml_type_problem(
                "settings.bootstrap-commands",
                value,
                Kind::TableMap,
            ));
        };
        for (name, command) in commands {
            for (field, kind) in [
                ("commands", Kind::StrListList),
                ("mode", Kind::Str),
                ("essential", Kind::Bool),
            ] {
                if let Some(v) = command.get(field).filter(|v| !kind.fits(v)) {
                    return Some(toml_type_problem(
                        &format!("settings.bootstrap-commands.{name}.{field}"),
                        v,
                        kind,
                    ));
                }
            }
        }
    }
    None
}

fn toml_type_problem(path: &str, value: &toml::Value, kind: Kind) -> Problem {
    problem(
        Severity::Error,
        format!(
            "userData sets {path} to a TOML {}, where Karpenter decodes {}: it cannot decode the settings (\"invalid UserData toml: cannot decode ...\") and launches for the class fail",
            value.type_str(),
            kind.describe()
        ),
        format!(
            "write {path} as {} (Bottlerocket's settings reference gives each setting's type)",
            kind.describe()
        ),
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
    if let Some(p) = bottlerocket_types(&table) {
        return vec![p];
    }
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
mod tests;
