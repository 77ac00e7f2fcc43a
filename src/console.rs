//! What a stuck instance's serial console says about why its node never joined. EC2 keeps the
//! last output of the console (`ec2:GetConsoleOutput`): cloud-init, nodeadm and systemd print
//! there, the kubelet mostly does not (it logs to the journal), so a console without a known
//! line proves nothing. Pure: the live backend scrubs the text with [`scrub`] before it is
//! stored, and checks read it with [`classify`].

use std::sync::LazyLock;

use regex::Regex;

/// Lines kept from the end of the console: the boot's failure is near the end, and a bundle
/// stays small.
pub const TAIL_LINES: usize = 400;
/// Characters kept of one line.
pub const LINE_CHARS: usize = 300;
/// Matched lines given as evidence, at most.
pub const EVIDENCE_LINES: usize = 20;

static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // The cluster CA and other values nodeadm and bootstrap scripts echo.
        (
            r"(?i)(B64_CLUSTER_CA|certificate-authority-data|certificateAuthority)(\s*[=:]\s*)\S+",
            "$1$2<redacted>",
        ),
        (
            r"(?i)(token|password|secret)(\s*[=:]\s*)\S+",
            "$1$2<redacted>",
        ),
        // Long base64 runs: certificates, keys, user data echoed back.
        (r"[A-Za-z0-9+/]{40,}={0,2}", "<redacted>"),
    ]
    .into_iter()
    // The patterns are constant and covered by the tests below.
    .filter_map(|(re, with)| Regex::new(re).ok().map(|re| (re, with)))
    .collect()
});

/// The console's last [`TAIL_LINES`] lines, each cut to [`LINE_CHARS`], control characters
/// dropped and secrets redacted: what may be stored in a bundle.
pub fn scrub(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..]
        .iter()
        .map(|line| {
            let clean: String = line
                .chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .take(LINE_CHARS)
                .collect();
            SECRETS.iter().fold(clean, |l, (re, with)| {
                re.replace_all(&l, *with).into_owned()
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a console line shows, and the checks that own that cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sign {
    /// Short name of the failure, for messages.
    pub what: &'static str,
    pub owners: &'static [&'static str],
    /// The line, as stored (already scrubbed).
    pub line: String,
}

struct Rule {
    what: &'static str,
    owners: &'static [&'static str],
    matches: fn(&str) -> bool,
}

fn timeout(l: &str) -> bool {
    l.contains("i/o timeout")
        || l.contains("Client.Timeout exceeded")
        || l.contains("connection timed out")
}

fn to_cluster_endpoint(l: &str) -> bool {
    l.contains(".eks.amazonaws.com") || l.contains(".eks.amazonaws.com.cn")
}

fn to_aws_service(l: &str) -> bool {
    !to_cluster_endpoint(l) && (l.contains(".amazonaws.com") || l.contains("EC2/DescribeInstances"))
}

const RULES: &[Rule] = &[
    Rule {
        what: "nodeadm or user data failed",
        owners: &["KD5007"],
        matches: |l| {
            l.contains("bootstrap.sh has been removed")
                || l.contains("Failed to start nodeadm-config.service")
                || l.contains("Dependency failed for nodeadm-run.service")
                || l.contains("Unhandled unknown content-type")
                || l.contains("could not find NodeConfig within UserData")
                || l.contains("Error PATCHing '/settings")
        },
    },
    Rule {
        what: "the kubelet was refused (Unauthorized)",
        owners: &["KD5001", "KD5002", "KD5003"],
        matches: |l| {
            l.contains("Unauthorized") && (l.contains("register") || l.contains("failed to list"))
        },
    },
    Rule {
        what: "TLS to the endpoint failed (x509)",
        owners: &["KD5007", "KD1004"],
        matches: |l| l.contains("x509: certificate signed by unknown authority"),
    },
    Rule {
        what: "the cluster endpoint did not resolve",
        owners: &["KD5004"],
        matches: |l| {
            (l.contains("no such host") || (l.contains("lookup ") && timeout(l)))
                && to_cluster_endpoint(l)
        },
    },
    Rule {
        what: "an AWS API did not resolve",
        owners: &["KD5005"],
        matches: |l| {
            (l.contains("no such host") || (l.contains("lookup ") && timeout(l)))
                && to_aws_service(l)
        },
    },
    Rule {
        what: "image pull from ECR failed",
        owners: &["KD5005"],
        matches: |l| {
            l.contains("failed to pull and unpack image")
                || (l.contains("starport-layer-bucket") && timeout(l))
        },
    },
    Rule {
        what: "calls to AWS APIs time out",
        owners: &["KD5005", "KD5004"],
        matches: |l| {
            (timeout(l) && to_aws_service(l))
                || l.contains("retrying request EC2/DescribeInstances")
        },
    },
    Rule {
        what: "the cluster endpoint times out",
        owners: &["KD5004", "KD5006"],
        matches: |l| {
            timeout(l) && (to_cluster_endpoint(l) || (l.contains("dial tcp") && l.contains(":443")))
        },
    },
    Rule {
        what: "the CNI is not ready",
        owners: &["KD3005"],
        matches: |l| {
            l.contains("NetworkPluginNotReady") || l.contains("cni plugin not initialized")
        },
    },
];

/// The lines of a scrubbed console that show a known failure, first rule matched per line, at
/// most [`EVIDENCE_LINES`], in console order.
pub fn classify(console: &str) -> Vec<Sign> {
    console
        .lines()
        .filter_map(|line| {
            RULES.iter().find(|r| (r.matches)(line)).map(|r| Sign {
                what: r.what,
                owners: r.owners,
                line: line.trim().to_string(),
            })
        })
        .take(EVIDENCE_LINES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_keeps_the_tail_and_hides_secrets() {
        let mut text = String::new();
        for i in 0..500 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("B64_CLUSTER_CA=LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcw\n");
        text.push_str("token: abc.def\n");
        let out = scrub(&text);
        assert_eq!(out.lines().count(), TAIL_LINES);
        assert!(!out.contains("line 99\n"), "the head is cut");
        assert!(out.contains("B64_CLUSTER_CA=<redacted>"));
        assert!(!out.contains("LS0tLS1"));
        assert!(out.contains("token: <redacted>"));
    }

    #[test]
    fn classify_names_the_owner_of_each_failure() {
        let console = "\
[   12.1] cloud-init[1500]: Cloud-init v. 22.2.2 finished\n\
[  OK  ] Started nodeadm-config.service\n\
[FAILED] Failed to start nodeadm-config.service - EKS Nodeadm Config.\n\
[DEPEND] Dependency failed for nodeadm-run.service - EKS Nodeadm Run.\n\
nodeadm[1700]: retrying request EC2/DescribeInstances, attempt 7\n\
kubelet[2044]: E0507 failed to list *v1.CSIDriver: Unauthorized\n\
Get \"https://ABCDEF.gr7.us-west-2.eks.amazonaws.com/api\": dial tcp 192.168.70.12:443: i/o timeout\n\
lookup ec2.us-west-2.amazonaws.com on 192.168.0.2:53: no such host\n";
        let signs = classify(console);
        let owners: Vec<&[&str]> = signs.iter().map(|s| s.owners).collect();
        assert_eq!(
            owners,
            vec![
                &["KD5007"][..],
                &["KD5007"][..],
                &["KD5005", "KD5004"][..],
                &["KD5001", "KD5002", "KD5003"][..],
                &["KD5004", "KD5006"][..],
                &["KD5005"][..],
            ]
        );
        assert!(classify("Cloud-init v. 22.2.2 finished at boot\nRETBleed: WARNING\n").is_empty());
    }
}
