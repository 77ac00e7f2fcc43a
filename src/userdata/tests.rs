//! KD5007's user-data rules, each against Go's own outcome where a Go reader decides it.

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

/// Karpenter's documented AL2023 example, verbatim ("Passed-in UserData (MIME)" under
/// AL2023 in https://karpenter.sh/docs/concepts/nodeclasses/#specuserdata): its last line is
/// the boundary line `--//`, without a closing `--//--`.
const DOCUMENTED_AL2023_MIME: &str = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho \"Hello, AL2023!\"\n\n--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n--//\n";

#[test]
fn al2023_accepts_mime_nodeconfig_yaml_and_plain_scripts() {
    assert!(judge_al2023(MIME_OK).is_empty());
    assert!(judge_al2023("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n").is_empty());
    assert!(judge_al2023("#!/bin/bash\necho \"$(date)\" > /tmp/booted\n").is_empty());
    assert!(judge_al2023("").is_empty());
}

#[test]
fn al2023_accepts_karpenters_documented_mime_example() {
    assert!(judge_al2023(DOCUMENTED_AL2023_MIME).is_empty());
    // Without the last newline (a `|-` block scalar), and with CRLF line ends.
    assert!(judge_al2023(DOCUMENTED_AL2023_MIME.trim_end()).is_empty());
    assert!(judge_al2023(&DOCUMENTED_AL2023_MIME.replace('\n', "\r\n")).is_empty());
    // The parts Go's reader returns: bodies end before the newline of the boundary line.
    let Ok(archive) = mime_parts(DOCUMENTED_AL2023_MIME) else {
        panic!("Go reads the documented example");
    };
    assert!(!archive.unclosed);
    let types: Vec<String> = archive.parts.iter().map(Part::media_type).collect();
    assert_eq!(types, ["text/x-shellscript", "application/node.eks.aws"]);
    assert_eq!(
        archive.parts[0].body,
        "#!/bin/bash\necho \"Hello, AL2023!\"\n"
    );
    assert_eq!(
        archive.parts[1].body,
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42"
    );
}

#[test]
fn al2023_mime_ending_inside_a_part_or_not_multipart_fails_launches() {
    // No boundary line after the last part: Go's reader meets the end of the input in it.
    let open = MIME_OK.replace("--//--\n", "");
    let p = judge_al2023(&open);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Error);
    assert!(
        p[0].message.contains("ends inside its last part"),
        "{}",
        p[0].message
    );
    assert!(p[0].message.contains("unexpected EOF"), "{}", p[0].message);
    // A last line `--//`, with or without its newline, ends the archive for Karpenter.
    assert!(judge_al2023(&MIME_OK.replace("--//--\n", "--//\n")).is_empty());
    assert!(judge_al2023(&MIME_OK.replace("--//--\n", "--//")).is_empty());
    let single = "MIME-Version: 1.0\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n";
    let p = judge_al2023(single);
    assert!(p[0].message.contains("not multipart"), "{}", p[0].message);
    // A boundary with a tspecial must be quoted for mime.ParseMediaType.
    let p = judge_al2023(&MIME_OK.replace("boundary=\"//\"", "boundary=//"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].message.contains("mime: invalid media parameter"),
        "{}",
        p[0].message
    );
}

const HDR: &str = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n";
const P1: &str = "--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho one\n";
const P2: &str = "--B\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n";
const BODY: &str = "--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho one\n--B\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n";

/// Each archive with what Go 1.27's readers made of it, through the calls of Karpenter's
/// `mime/mime.go` (`NewArchive`) and nodeadm's `configprovider/mime.go`
/// (`ParseMultipart`): the number of parts Karpenter reads and whether nodeadm stops at a
/// wrapped io.EOF, or the error they stop with.
/// A case of the Go table: its name, the archive, and Go's outcome (parts read and whether the
/// input ended unclosed, or the error).
type GoCase = (&'static str, String, Result<(usize, bool), &'static str>);

#[test]
fn mime_reader_reads_what_go_reads() {
    let cases: Vec<GoCase> = vec![
        ("closing-B--", [HDR, BODY, "--B--\n"].concat(), Ok((2, false))),
        ("closing-B---no-newline", [HDR, BODY, "--B--"].concat(), Ok((2, false))),
        ("last-line-delim-B-newline", [HDR, BODY, "--B\n"].concat(), Ok((2, false))),
        ("last-line-delim-B-no-newline", [HDR, BODY, "--B"].concat(), Ok((2, true))),
        ("no-delim-after-last-part", [HDR, BODY].concat(), Err("unexpected EOF")),
        ("no-delim-after-last-part-no-final-newline", [HDR, P1, "--B\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig"].concat(), Err("unexpected EOF")),
        ("crlf-closed", [HDR, BODY, "--B--\n"].concat().replace('\n', "\r\n"), Ok((2, false))),
        ("crlf-last-delim", [HDR, BODY, "--B\n"].concat().replace('\n', "\r\n"), Ok((2, false))),
        ("crlf-no-delim-after-last", [HDR, BODY].concat().replace('\n', "\r\n"), Err("unexpected EOF")),
        ("crlf-headers-lf-body", [HDR.replace('\n', "\r\n").as_str(), BODY, "--B--\n"].concat(), Ok((2, false))),
        ("lf-first-delim-crlf-rest", [HDR, "--B\n", [&P1[4..], P2, "--B--\n"].concat().replace('\n', "\r\n").as_str()].concat(), Err("multipart: expecting a new Part")),
        ("unquoted-boundary-token", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("unquoted-boundary-slashes", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=//\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho \"Hello, AL2023!\"\n\n--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n--//\n".to_string(), Err("mime: invalid media parameter")),
        ("no-mime-version", ["Content-Type: multipart/mixed; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("no-boundary-param", ["MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n", BODY, "--B--\n"].concat(), Err("multipart: boundary is empty")),
        ("empty-boundary-param", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"\"\n\n", BODY, "--B--\n"].concat(), Err("multipart: boundary is empty")),
        ("not-multipart", "MIME-Version: 1.0\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hi\n".to_string(), Err("not multipart")),
        ("no-content-type", ["MIME-Version: 1.0\n\n", BODY, "--B--\n"].concat(), Err("mime: no media type")),
        ("preamble-before-first-delim", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\nThis is a preamble.\nmore preamble\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("space-after-delims", [HDR, "--B  \nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho one\n--B  \nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n--B--  \n"].concat(), Ok((2, false))),
        ("tab-after-delims", [HDR, "--B\t\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho one\n--B\t\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n--B--\t\n"].concat(), Ok((2, false))),
        ("empty-archive-only-closing", [HDR, "--B--\n"].concat(), Ok((0, true))),
        ("empty-archive-no-delims-at-all", HDR.to_string(), Ok((0, true))),
        ("body-text-no-delims", [HDR, "just text\nno boundary\n"].concat(), Ok((0, true))),
        ("part-without-content-type", [HDR, "--B\n\n#!/bin/bash\necho x\n--B--\n"].concat(), Ok((1, false))),
        ("part-without-content-type-no-blank", [HDR, "--B\n#!/bin/bash\necho x\n--B--\n"].concat(), Err("malformed MIME header: missing colon")),
        ("leading-newline-before-headers", ["\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Err("mime: no media type")),
        ("leading-spaces-before-headers", ["  MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Err("malformed initial line")),
        ("headers-only-no-blank-line", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n".to_string(), Ok((0, true))),
        ("no-blank-line-after-headers", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n", BODY, "--B--\n"].concat(), Err("malformed header line")),
        ("text-after-closing", [HDR, BODY, "--B--\nepilogue text\n"].concat(), Ok((2, false))),
        ("junk-line-between-part-and-delim", [HDR, P1, "\nnot a delim\n--B\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n--B--\n"].concat(), Ok((2, false))),
        ("delim-with-trailing-junk", [HDR, P1, "--Bxyz\nstuff\n--B--\n"].concat(), Ok((1, false))),
        ("malformed-ctype-param", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary\n\n", BODY, "--B--\n"].concat(), Err("mime: invalid media parameter")),
        ("boundary-mismatch", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"C\"\n\n", BODY, "--B--\n"].concat(), Ok((0, true))),
        ("only-content-type-header-start", ["Content-Type: multipart/mixed; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("multipart-alternative", ["MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("bad-header-in-part", [HDR, "--B\nthis is not a header\n\necho\n--B--\n"].concat(), Err("malformed MIME header: missing colon")),
        ("malformed-top-header", ["MIME-Version: 1.0\nnot a header line\nContent-Type: multipart/mixed; boundary=\"B\"\n\n", BODY, "--B--\n"].concat(), Err("malformed header line")),
        ("last-delim-then-blank-line", [HDR, BODY, "--B\n\n"].concat(), Err("unexpected EOF")),
        ("last-delim-then-header-no-body", [HDR, BODY, "--B\nContent-Type: text/x-shellscript\n"].concat(), Ok((2, false))),
        ("last-delim-then-header-blank", [HDR, BODY, "--B\nContent-Type: text/x-shellscript\n\n"].concat(), Err("unexpected EOF")),
        ("last-delim-then-header-body-eof", [HDR, BODY, "--B\nContent-Type: text/x-shellscript\n\necho x\n"].concat(), Err("unexpected EOF")),
        ("closing-no-newline-before-it-empty-part", [HDR, "--B\nContent-Type: text/plain\n\n--B--\n"].concat(), Ok((1, false))),
        ("delim-with-trailing-space-at-eof", [HDR, BODY, "--B  \n"].concat(), Ok((2, false))),
        ("delim-with-trailing-space-at-eof-nonl", [HDR, BODY, "--B  "].concat(), Ok((2, true))),
        ("closing-followed-by-blank-lines", [HDR, BODY, "--B--\n\n\n"].concat(), Ok((2, false))),
        ("delim-then-dash-at-eof", [HDR, BODY, "--B-"].concat(), Err("unexpected EOF")),
        ("delim-then-dash-newline-at-eof", [HDR, BODY, "--B-\n"].concat(), Err("unexpected EOF")),
        ("preamble-no-delims-leading-dashdash", [HDR, "--\n"].concat(), Ok((0, true))),
        ("ctype-with-extra-params", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"; charset=\"us-ascii\"\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("ctype-duplicate-boundary", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"; boundary=\"C\"\n\n", BODY, "--B--\n"].concat(), Err("mime: duplicate parameter name")),
        ("ctype-trailing-semicolon", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\";\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
        ("ctype-space-around-equals", ["MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary = \"B\"\n\n", BODY, "--B--\n"].concat(), Ok((2, false))),
    ];
    for (name, text, want) in &cases {
        match (mime_parts(text), want) {
            (Ok(archive), Ok((parts, unclosed))) => {
                assert_eq!(archive.parts.len(), *parts, "{name}");
                assert_eq!(archive.unclosed, *unclosed, "{name}");
            }
            (Err(e), Err(go)) => assert!(e.why.contains(go), "{name}: {}", e.why),
            (Ok(archive), Err(go)) => panic!(
                "{name}: Go stops with {go}, karpdoctor reads {} parts",
                archive.parts.len()
            ),
            (Err(e), Ok(_)) => panic!("{name}: Go reads it, karpdoctor says {}", e.why),
        }
    }
}

#[test]
fn mime_headers_in_another_case_are_not_mime_to_karpenter() {
    // nodeadm.go tests the prefixes `MIME-Version:` and `Content-Type:` as written.
    let lower = [HDR.to_lowercase().as_str(), BODY, "--B--\n"].concat();
    assert!(!looks_mime(&lower));
    assert!(judge_al2023(&lower).is_empty());
}

#[test]
fn mime_archive_without_parts_warns() {
    let other = [
        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"C\"\n\n",
        BODY,
        "--B--\n",
    ]
    .concat();
    let p = judge_al2023(&other);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Warning);
    assert!(p[0].message.contains("no part"), "{}", p[0].message);
    let p = judge(Family::Al2, &other, &cluster(), &[]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Warning);
}

#[test]
fn part_content_type_that_does_not_parse_stops_nodeadm() {
    let p = judge_al2023(&MIME_OK.replace("charset=\"us-ascii\"", "charset=us ascii"));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Error);
    assert!(
        p[0].message.contains("mime: invalid media parameter"),
        "{}",
        p[0].message
    );
}

#[test]
fn base64_nodeconfig_parts_are_decoded_as_nodeadm_does() {
    let archive = |body: &str| {
        format!(
            "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\n{body}\n--//--\n"
        )
    };
    let encode =
        |text: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text);
    let nodeconfig = encode(
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n",
    );
    assert!(judge_al2023(&archive(&nodeconfig)).is_empty());
    let p = judge_al2023(&archive(&encode("#cloud-config\npackages:\n  - htop\n")));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Error);
}

#[test]
fn custom_al2023_mime_must_end_the_way_nodeadm_reads_it() {
    let images = ["amazon-eks-node-al2023-x86_64-standard-1.33-v20251120".to_string()];
    assert!(judge(Family::Custom, DOCUMENTED_AL2023_MIME, &cluster(), &images).is_empty());
    // Without its last newline, `--//` is no boundary line: nodeadm's `err == io.EOF`
    // misses the wrapped EOF that Karpenter's `errors.Is` takes for the end.
    let p = judge(
        Family::Custom,
        DOCUMENTED_AL2023_MIME.trim_end(),
        &cluster(),
        &images,
    );
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].severity, Severity::Error);
    assert!(p[0].message.contains("NextPart: EOF"), "{}", p[0].message);
    assert!(p[0].message.contains("nodeadm"), "{}", p[0].message);
}

#[test]
fn al2023_bootstrap_sh_is_a_warning_and_fatal_only_for_custom() {
    let script =
        "#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--max-pods=110'\n";
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
    // Plain YAML is wrapped as a shell script part (eksbootstrap.go, mimeify).
    let p = judge(
        Family::Al2,
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n",
        &cluster(),
        &[],
    );
    assert_eq!(p[0].severity, Severity::Warning);
    assert!(
        p[0].message.contains("text/x-shellscript"),
        "{}",
        p[0].message
    );
    // In an application/node.eks.aws part, cloud-init skips it.
    let p = judge(Family::Al2, MIME_OK, &cluster(), &[]);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].message.contains("Unhandled unknown"),
        "{}",
        p[0].message
    );
    // Karpenter reads AL2 MIME user data as it reads AL2023's.
    let p = judge(
        Family::Al2,
        &MIME_OK.replace("--//--\n", ""),
        &cluster(),
        &[],
    );
    assert_eq!(p[0].severity, Severity::Error);
    assert!(p[0].message.contains("unexpected EOF"), "{}", p[0].message);
    assert!(judge(Family::Al2, DOCUMENTED_AL2023_MIME, &cluster(), &[]).len() == 1);
}

#[test]
fn bottlerocket_toml_must_parse() {
    let ok = "[settings.kubernetes]\nmax-pods = 110\n[settings.kernel.sysctl]\n\"net.ipv4.ip_local_port_range\" = \"1024 65535\"\n";
    assert!(judge(Family::Bottlerocket, ok, &cluster(), &[]).is_empty());
    let bad =
        "[settings.kubernetes]\nmax-pods = 110\neviction-hard = {\"memory.available\" = \"15%\"\n";
    let p = judge(Family::Bottlerocket, bad, &cluster(), &[]);
    assert_eq!(p[0].severity, Severity::Error);
    let foreign = "[settings.kubernetes]\ncluster-name = \"staging\"\n";
    let p = judge(Family::Bottlerocket, foreign, &cluster(), &[]);
    assert_eq!(p[0].severity, Severity::Warning);
    assert!(p[0].message.contains("staging"));
}

#[test]
fn bottlerocket_settings_must_decode_into_karpenters_types() {
    // Each fails go-toml's decode into Karpenter's settings types (bottlerocketsettings.go).
    for bad in [
        "[settings.kubernetes]\nmax-pods = \"110\"\n",
        "[settings.kubernetes]\nimage-gc-high-threshold-percent = 85\n",
        "[settings.kubernetes.node-labels]\nteam = 1\n",
        "settings = 1\n",
        "[settings.bootstrap-commands.setup]\ncommands = [\"echo\", \"hi\"]\n",
    ] {
        let p = judge(Family::Bottlerocket, bad, &cluster(), &[]);
        assert_eq!(p.len(), 1, "{bad}: {p:?}");
        assert_eq!(p[0].severity, Severity::Error, "{bad}");
    }
    let ok = "[settings.kubernetes]\nmax-pods = 110\nimage-gc-high-threshold-percent = \"85\"\n[settings.kubernetes.node-taints]\ndedicated = [\"gpu:NoSchedule\"]\n[settings.bootstrap-commands.setup]\ncommands = [[\"echo\", \"hi\"]]\nmode = \"always\"\nessential = false\n";
    assert!(judge(Family::Bottlerocket, ok, &cluster(), &[]).is_empty());
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
