//! The controller's log: parsing (Karpenter logs JSON lines through zap, but a crashing Go
//! program prints plain `panic:` text, and sidecars or older releases print other formats)
//! and classification of error lines into known causes, each owned by a check.
//!
//! Nothing here trusts the log: lines may be huge, binary, half-written or hostile. Every
//! line is clipped, and a line that is not JSON is still read as text.

use serde_json::Value;

use crate::sanitize::clip;

/// Longest text kept from one log line.
const MAX_LINE: usize = 400;

/// One line of the log, as far as it could be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Lowercase level (`error`, `info`, …); empty when the line had none.
    pub level: String,
    /// The message and, when the line carried one, its error (`message: error`).
    pub text: String,
}

impl Entry {
    /// Error-level lines, and plain-text lines that end a Go program (`panic:`, `fatal`).
    pub fn is_error(&self) -> bool {
        matches!(self.level.as_str(), "error" | "dpanic" | "panic" | "fatal")
    }
}

/// Reads one line.
pub fn parse(line: &str) -> Option<Entry> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    if line.starts_with('{')
        && let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line)
    {
        let field = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| m.get(*k).and_then(Value::as_str))
                .unwrap_or_default()
        };
        let message = field(&["message", "msg"]);
        let error = field(&["error", "err"]);
        let text = match (message.is_empty(), error.is_empty()) {
            (_, true) => message.to_string(),
            (true, false) => error.to_string(),
            (false, false) => format!("{message}: {error}"),
        };
        return Some(Entry {
            level: field(&["level", "severity", "lvl"]).to_ascii_lowercase(),
            text: clip(&text, MAX_LINE),
        });
    }
    let lower = line.to_ascii_lowercase();
    let level = if lower.starts_with("panic:") || lower.starts_with("fatal") {
        "panic"
    } else if lower.contains("level=error")
        || klog_error(line)
        || lower
            .split_whitespace()
            .take(3)
            .any(|w| w == "error" || w == "\"error\"")
    {
        "error"
    } else {
        ""
    };
    Some(Entry {
        level: level.to_string(),
        text: clip(line, MAX_LINE),
    })
}

/// klog's error prefix: `E1123 09:58:01.123456 …`.
fn klog_error(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 5 && b[0] == b'E' && b[1..5].iter().all(u8::is_ascii_digit)
}

/// A known cause of controller errors, and the checks that judge it.
#[derive(Debug, PartialEq, Eq)]
pub struct Pattern {
    pub id: &'static str,
    pub summary: &'static str,
    /// Check codes that own the cause (the first is the most likely).
    pub owners: &'static [&'static str],
    /// Noise that needs no action (reported by KD9001, never by KD1009).
    pub benign: bool,
    /// Any of these (case-insensitive) identifies the pattern…
    any: &'static [&'static str],
    /// …together with any of these, when not empty.
    also: &'static [&'static str],
}

const DENIED: &[&str] = &["accessdenied", "unauthorizedoperation", "not authorized"];

/// The checks that own a failure of the controller's own AWS credentials: its identity
/// wiring (KD2001-KD2006) and, in a VPC without a way out, the STS or EKS Auth endpoint the
/// credentials come from (KD5005).
pub const CREDENTIAL_OWNERS: &[&str] = &[
    "KD2001", "KD2002", "KD2003", "KD2004", "KD2005", "KD2006", "KD5005",
];

/// Most specific first: the first match wins.
pub static PATTERNS: &[Pattern] = &[
    Pattern {
        id: "pricing-access-denied",
        summary: "pricing:GetProducts is denied; Karpenter uses its built-in prices",
        owners: &["KD9001"],
        benign: true,
        // On-demand prices only: a denied DescribeSpotPriceHistory is a real gap (spot
        // ordering degrades) and stays an error of KD1009.
        any: &["getproducts", "on-demand pricing"],
        also: DENIED,
    },
    Pattern {
        id: "credentials",
        summary: "the controller cannot get AWS credentials",
        owners: CREDENTIAL_OWNERS,
        benign: false,
        any: &[
            "webidentityerr",
            "invalididentitytoken",
            "assumerolewithwebidentity",
            "nocredentialproviders",
            "no valid credential sources",
            "failed to refresh cached credentials",
            "failed to retrieve credentials",
            "no ec2 imds role found",
            "get identity: get credentials",
            "eks-auth",
        ],
        also: &[],
    },
    Pattern {
        id: "crds",
        summary: "the controller's CRDs are missing or do not serve the API version it reads",
        // 1.x panics at start-up when its CRDs do not serve v1 (aws/karpenter-provider-aws#7992:
        // "no matches for kind \"NodeClaim\" in version \"karpenter.sh/v1\"", then "panic:
        // unable to retrieve the complete list of server APIs: karpenter.sh/v1").
        owners: &["KD1002"],
        benign: false,
        any: &[
            "no matches for kind",
            "no matches for karpenter.sh",
            "no matches for karpenter.k8s.aws",
            "if kind is a crd, it should be installed",
        ],
        also: &[],
    },
    Pattern {
        id: "region-unknown",
        summary: "the controller cannot tell its AWS region",
        // 0.3x on a node without instance metadata (Fargate) and no AWS_REGION panics with
        // "failed to get region from metadata server"; Pod Identity (KD2005) injects no
        // region there, IRSA's webhook does.
        owners: &["KD1004", "KD2005"],
        benign: false,
        any: &[
            "unable to determine region",
            "missingregion",
            "could not find region",
            "failed to get region from metadata",
        ],
        also: &[],
    },
    Pattern {
        id: "cluster-endpoint",
        summary: "the controller cannot discover the cluster endpoint (eks:DescribeCluster)",
        owners: &["KD2102", "KD2101", "KD1004"],
        benign: false,
        any: &[
            "failed detecting cluster endpoint",
            "describecluster",
            "cluster endpoint url is not valid",
        ],
        also: &[],
    },
    Pattern {
        id: "interruption-queue",
        summary: "the interruption queue does not exist or cannot be read",
        owners: &["KD7001"],
        benign: false,
        any: &[
            "nonexistentqueue",
            "queuedoesnotexist",
            "specified queue does not exist",
            "creating sqs provider",
            "getqueueurl",
        ],
        also: &[],
    },
    Pattern {
        id: "zonal-shift",
        summary: "zonal shift is enabled but the cluster or the policy is not set up for it",
        owners: &["KD2102", "KD2101"],
        benign: false,
        any: &["zonal shift", "zonalshift", "arc-zonal-shift"],
        also: &[],
    },
    Pattern {
        id: "webhook",
        summary: "an admission or conversion webhook call failed",
        owners: &["KD1007", "KD1003"],
        benign: false,
        any: &[
            "conversion webhook",
            "failed calling webhook",
            "x509:",
            "certificate signed by unknown authority",
            "no endpoints available for service",
        ],
        also: &[],
    },
    Pattern {
        id: "kubernetes-version",
        summary: "this Karpenter release does not support the cluster's Kubernetes version",
        owners: &["KD1008"],
        benign: false,
        any: &[
            "not compatible with kubernetes version",
            "validating kubernetes version",
        ],
        also: &[],
    },
    Pattern {
        id: "spot-service-linked-role",
        summary: "the Spot service-linked role is missing and cannot be created",
        owners: &["KD4004"],
        benign: false,
        any: &[
            "servicelinkedrolecreationnotpermitted",
            "awsserviceroleforec2spot",
            "spotslrcreationfailed",
        ],
        also: &[],
    },
    Pattern {
        id: "ami-discovery",
        summary: "no AMI could be resolved for an EC2NodeClass",
        owners: &["KD3003", "KD3004"],
        benign: false,
        any: &[
            "failed to discover any amis",
            "no amis exist",
            "parameternotfound",
            "invalidamiid",
            "no instance types satisfy requirements of amis",
        ],
        also: &[],
    },
    Pattern {
        id: "instance-profile",
        summary: "the instance profile cannot be found or managed",
        owners: &["KD3006", "KD2102"],
        benign: false,
        any: &["instance profile", "instanceprofile"],
        also: &[],
    },
    Pattern {
        id: "subnets-security-groups",
        summary: "subnets or security groups cannot be resolved",
        owners: &["KD3001", "KD3002"],
        benign: false,
        any: &[
            "no subnets",
            "no security groups",
            "securitygroupsubnetvpcmismatch",
            "subnetselector",
            "securitygroupselector",
        ],
        also: &[],
    },
    Pattern {
        id: "launch-denied",
        summary: "an AWS call of the controller is denied (identity policy, permissions boundary or SCP)",
        // The checks that simulate what the controller may do (KD3007 for iam:PassRole). When
        // they all pass, the denial is one a simulation cannot see, and the finding says so.
        // A controller without its own identity (KD2001, KD2006) is denied as the node role,
        // and those checks then have no role to simulate: the missing identity is the cause.
        owners: &["KD2101", "KD2102", "KD2103", "KD3007", "KD2001", "KD2006"],
        benign: false,
        any: DENIED,
        also: &[],
    },
    Pattern {
        id: "scheduling",
        summary: "pods cannot be scheduled on any NodePool",
        // The scheduling checks name the pods and the NodePool step that stops them.
        owners: &["KD8001", "KD8002", "KD8003", "KD4003", "KD4002", "KD4005"],
        benign: false,
        any: &[
            "could not schedule pod",
            "incompatible with nodepool",
            "no instance type met",
            "exceed limits for nodepool",
            "node limits have been exhausted",
        ],
        also: &[],
    },
    Pattern {
        id: "insufficient-capacity",
        summary: "EC2 has no capacity for the requested instance types right now",
        owners: &["KD6001"],
        benign: false,
        any: &[
            "insufficientinstancecapacity",
            "insufficient capacity",
            "unfulfillablecapacity",
        ],
        also: &[],
    },
];

/// The known cause of an error text, if any.
pub fn classify(text: &str) -> Option<&'static Pattern> {
    let lower = text.to_ascii_lowercase();
    PATTERNS.iter().find(|p| {
        p.any.iter().any(|n| lower.contains(n))
            && (p.also.is_empty() || p.also.iter().any(|n| lower.contains(n)))
    })
}

/// Error lines of one cause (or of one unknown message), across the logs read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub pattern: Option<&'static Pattern>,
    /// The most recent line of the group, clipped.
    pub example: String,
    pub count: usize,
}

/// Karpenter's `could not schedule pod` lines (the provisioner's ERROR with the pod as
/// `"Pod":{"name":…,"namespace":…}` and its reason as `error`), oldest first: the pod as
/// `namespace/name`, and the reason, clipped. Lines of other shapes are skipped.
pub fn unschedulable_pods(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter_map(|line| {
            let line = line.trim();
            if !line.starts_with('{') || !line.contains("could not schedule pod") {
                return None;
            }
            let v: Value = serde_json::from_str(line).ok()?;
            let message = v.get("message").or_else(|| v.get("msg"))?.as_str()?;
            if message != "could not schedule pod" {
                return None;
            }
            let pod = v.get("Pod").or_else(|| v.get("pod"))?;
            let name = pod.get("name")?.as_str()?;
            let namespace = pod.get("namespace")?.as_str()?;
            let error = v.get("error").and_then(Value::as_str).unwrap_or_default();
            Some((format!("{namespace}/{name}"), clip(error, MAX_LINE)))
        })
        .collect()
}

/// Groups the error lines of `logs` by known cause; unknown errors by their text with numbers
/// and ids blurred, so one error repeated with different request ids is one group. Known
/// causes come first, then unknown ones by frequency.
pub fn group_errors<'a>(logs: impl IntoIterator<Item = &'a str>) -> Vec<Group> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for log in logs {
        for entry in log.lines().filter_map(parse).filter(Entry::is_error) {
            let pattern = classify(&entry.text);
            let key = match pattern {
                Some(p) => format!("known:{}", p.id),
                None => format!("text:{}", blur(&entry.text)),
            };
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => {
                    g.count += 1;
                    g.example = entry.text;
                }
                None => groups.push((
                    key,
                    Group {
                        pattern,
                        example: entry.text,
                        count: 1,
                    },
                )),
            }
        }
    }
    let mut out: Vec<Group> = groups.into_iter().map(|(_, g)| g).collect();
    out.sort_by(|a, b| {
        b.pattern
            .is_some()
            .cmp(&a.pattern.is_some())
            .then_with(|| b.count.cmp(&a.count))
            .then_with(|| a.example.cmp(&b.example))
    });
    out
}

/// Replaces digit runs and long hex-like tokens with `#`, so ids and counters do not split
/// one error into many.
fn blur(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_inclusive(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
        let (token, sep) = word.split_at(
            word.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .len(),
        );
        let digits = token.chars().filter(char::is_ascii_digit).count();
        if digits > 0 && (digits * 3 >= token.len() || token.len() >= 16) {
            out.push('#');
        } else {
            out.push_str(token);
        }
        out.push_str(sep);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karpenters_could_not_schedule_lines_name_the_pod_and_reason() {
        let log = concat!(
            r#"{"level":"INFO","message":"found provisionable pod(s)","Pods":"shop/web-1"}"#,
            "\n",
            r#"{"level":"ERROR","time":"2025-04-29T20:27:30.356Z","logger":"controller","message":"could not schedule pod","controller":"provisioner","Pod":{"name":"inflate-848b57856-6sqd4","namespace":"workshop"},"error":"all available instance types exceed limits for nodepool: \"default-demo\""}"#,
            "\n",
            "could not schedule pod (plain text is not Karpenter's line)\n",
            r#"{"level":"ERROR","message":"could not schedule pod","error":"no Pod field"}"#,
        );
        assert_eq!(
            unschedulable_pods(log),
            vec![(
                "workshop/inflate-848b57856-6sqd4".to_string(),
                "all available instance types exceed limits for nodepool: \"default-demo\""
                    .to_string()
            )]
        );
    }

    #[test]
    fn json_lines_with_message_and_error() {
        let e = parse(r#"{"level":"ERROR","time":"2026-11-23T09:58:03.112Z","logger":"controller","message":"ec2 api connectivity check failed","commit":"5c1b8c3","error":"operation error EC2: DescribeInstanceTypes, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found"}"#).unwrap();
        assert!(e.is_error());
        assert_eq!(classify(&e.text).map(|p| p.id), Some("credentials"));
        let crds = parse(r#"panic: unable to retrieve the complete list of server APIs: karpenter.sh/v1: no matches for karpenter.sh/v1, Resource="#).unwrap();
        assert_eq!(
            classify(&crds.text).map(|p| p.owners),
            Some(&["KD1002"][..])
        );
    }

    #[test]
    fn plain_text_panics_and_klog() {
        let p = parse("panic: Unable to find Cluster demo in Zonal Shift. Please check that the cluster is enabled for Zonal Shift").unwrap();
        assert!(p.is_error());
        assert_eq!(classify(&p.text).map(|p| p.id), Some("zonal-shift"));
        assert!(
            parse("E1123 09:58:01.123456       1 reflector.go:158] failed to list")
                .unwrap()
                .is_error()
        );
        assert!(!parse("just some text").unwrap().is_error());
        assert_eq!(parse("   "), None);
    }

    #[test]
    fn pricing_denial_is_benign_and_not_a_launch_denial() {
        let text = "updating pricing, retreiving on-demand pricing data: operation error Pricing: GetProducts, https response error StatusCode: 400, api error AccessDeniedException: User is not authorized to perform: pricing:GetProducts";
        let p = classify(text).unwrap();
        assert!(p.benign);
        assert_eq!(p.owners, ["KD9001"]);
    }

    #[test]
    fn grouping_blurs_ids_and_puts_known_causes_first() {
        let log = [
            r#"{"level":"ERROR","message":"reconciling x, request id 8f14e45f-ceea-467e-a3f0-1d2b3c4d5e6f failed"}"#,
            r#"{"level":"ERROR","message":"reconciling x, request id 1a2b3c4d-0000-467e-a3f0-aaaaaaaaaaaa failed"}"#,
            r#"{"level":"ERROR","message":"creating sqs provider","error":"AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist"}"#,
            r#"{"level":"INFO","message":"discovered ssm parameter"}"#,
            "not json at all {",
        ]
        .join("\n");
        let groups = group_errors([log.as_str()]);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].pattern.map(|p| p.id), Some("interruption-queue"));
        assert_eq!(groups[1].pattern, None);
        assert_eq!(groups[1].count, 2);
    }

    #[test]
    fn huge_and_binary_lines_are_clipped() {
        let line = format!(
            "{{\"level\":\"error\",\"message\":\"{}\"}}",
            "x".repeat(100_000)
        );
        assert!(parse(&line).unwrap().text.chars().count() <= MAX_LINE + 1);
        let binary = "\u{0}\u{1}\u{fffd}ERROR \u{1b}[31m";
        assert!(parse(binary).is_some());
    }
}
