//! Property tests of the parsers and matchers that read what a broken cluster holds: aws-auth
//! `mapRoles`, IAM policy documents, EC2NodeClass selectors and AMI names. Bounded (a few
//! hundred cases each) so the suite stays fast; the `fuzz/` targets run the same code for
//! millions of inputs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::BTreeMap;

use karpdoctor::awsauth::{NODE_USERNAME, node_mapping_problems, parse_map_roles};
use karpdoctor::ec2::{self, Term};
use karpdoctor::iam::policy::{PolicyDocument, wildcard};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

fn role_name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9+=,.@_-]{0,40}"
}

fn group() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("system:bootstrappers".to_string()),
        Just("system:nodes".to_string()),
        Just("eks:kube-proxy-windows".to_string()),
        // Plain scalars as people write them: a flow list item like `team:ops` stays a string.
        "[a-z][a-z0-9]{0,8}(:[a-z][a-z0-9]{0,8})?",
    ]
}

/// One mapping, written in one of the layouts people use (block or flow lists, any key order).
fn entry() -> impl Strategy<Value = (String, String, Vec<String>, bool, bool)> {
    (
        role_name(),
        prop_oneof![
            Just(NODE_USERNAME.to_string()),
            Just("system:node:{{SessionName}}".to_string())
        ],
        prop::collection::vec(group(), 0..4),
        any::<bool>(),
        any::<bool>(),
    )
}

fn render(entries: &[(String, String, Vec<String>, bool, bool)]) -> String {
    let mut out = String::new();
    for (name, user, groups, flow, groups_first) in entries {
        let arn = format!("arn:aws:iam::111122223333:role/{name}");
        let groups_text = if *flow {
            format!("  groups: [{}]\n", groups.join(", "))
        } else if groups.is_empty() {
            "  groups: []\n".to_string()
        } else {
            let items: String = groups.iter().map(|g| format!("  - {g}\n")).collect();
            format!("  groups:\n{items}")
        };
        let body = format!("  rolearn: {arn}\n  username: '{user}'\n");
        let (first, second) = if *groups_first {
            (groups_text, body)
        } else {
            (body, groups_text)
        };
        out.push('-');
        out.push_str(&first[1..]);
        out.push_str(&second);
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn map_roles_round_trips(entries in prop::collection::vec(entry(), 0..6)) {
        let text = render(&entries);
        let parsed = parse_map_roles(&text).unwrap();
        prop_assert_eq!(parsed.len(), entries.len());
        let lines: Vec<&str> = text.lines().collect();
        for (m, (name, user, groups, _, _)) in parsed.iter().zip(&entries) {
            prop_assert_eq!(&m.rolearn, &format!("arn:aws:iam::111122223333:role/{name}"));
            prop_assert_eq!(&m.username, user);
            prop_assert_eq!(&m.groups, groups);
            // The reported line is the entry's rolearn line.
            prop_assert!(lines[m.line - 1].contains(&m.rolearn));
            let ok = user == NODE_USERNAME
                && groups.iter().any(|g| g == "system:bootstrappers")
                && groups.iter().any(|g| g == "system:nodes");
            prop_assert_eq!(node_mapping_problems(m, false).is_empty(), ok);
        }
    }

    #[test]
    fn map_roles_never_panics_and_names_real_lines(text in "(?s).{0,400}") {
        let count = text.lines().count();
        match parse_map_roles(&text) {
            Ok(m) => prop_assert!(m.iter().all(|e| e.line <= count)),
            Err(e) => prop_assert!(e.line.is_none_or(|l| l <= count + 1)),
        }
    }

    #[test]
    fn a_tab_in_indentation_is_named_by_line(entries in prop::collection::vec(entry(), 1..4), pick in any::<prop::sample::Index>()) {
        let text = render(&entries);
        let lines: Vec<&str> = text.lines().collect();
        let i = pick.index(lines.len());
        let broken: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(n, l)| if n == i && l.starts_with("  ") { format!("\t{}", &l[2..]) } else { l.to_string() })
            .collect();
        if lines[i].starts_with("  ") {
            let err = parse_map_roles(&broken.join("\n")).unwrap_err();
            prop_assert_eq!(err.line, Some(i + 1));
        }
    }

    #[test]
    fn policy_documents_read_strings_and_lists_alike(
        actions in prop::collection::vec("[a-z0-9]{2,8}:[A-Za-z*]{1,12}", 1..4),
        as_list in any::<bool>(),
        encode in 0usize..3,
    ) {
        let action = if as_list || actions.len() > 1 {
            serde_json::json!(actions)
        } else {
            serde_json::json!(actions[0])
        };
        let mut text = serde_json::json!({"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Action": action, "Resource": "*"}}).to_string();
        for _ in 0..encode {
            text = percent_encode(&text);
        }
        let doc = PolicyDocument::parse(&text).unwrap();
        prop_assert_eq!(doc.statements.len(), 1);
        prop_assert_eq!(&doc.statements[0].actions, &actions);
        for a in &actions {
            prop_assert!(doc.statements[0].covers_action(a));
        }
    }

    #[test]
    fn policy_parsing_never_panics(text in "(?s).{0,300}") {
        let _ = PolicyDocument::parse(&text);
    }

    #[test]
    fn wildcards_agree_with_a_regex(pattern in "[a-c*?]{0,8}", text in "[a-c]{0,10}") {
        let regex = format!(
            "^{}$",
            pattern.chars().map(|c| match c { '*' => ".*".to_string(), '?' => ".".to_string(), c => c.to_string() }).collect::<String>()
        );
        let expected = regex::Regex::new(&regex).unwrap().is_match(&text);
        prop_assert_eq!(wildcard(&pattern, &text, false), expected);
    }

    #[test]
    fn selector_terms_are_ored_and_fields_anded(
        tags in prop::collection::btree_map("[a-c]", "[x-z]", 0..4),
        wanted in prop::collection::vec(prop::collection::btree_map("[a-c]", "[x-z*]", 1..3), 1..3),
    ) {
        let terms: Vec<Term> = wanted
            .iter()
            .map(|t| Term { tags: t.clone(), ..Term::default() })
            .collect();
        let field_match = |want: &BTreeMap<String, String>| {
            want.iter().all(|(k, v)| tags.get(k).is_some_and(|have| v == "*" || have == v))
        };
        let expected = wanted.iter().any(field_match);
        let got = terms.iter().any(|t| t.matches("subnet-1", "", &tags));
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn ami_names_give_their_minor(minor in 20u32..40, arch in "(x86_64|arm64)", variant in "(standard|nvidia|neuron)", date in "v2026[01][0-9][0-3][0-9]") {
        let name = format!("amazon-eks-node-al2023-{arch}-{variant}-1.{minor}-{date}");
        prop_assert_eq!(ec2::ami_name_minor(&name), Some(format!("1.{minor}")));
        prop_assert_eq!(ec2::ami_name_family(&name), Some("AL2023"));
    }
}

/// Percent-encodes everything but unreserved characters, as IAM returns documents.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

// ---- issue 5: quantities, requirement narrowing, controller logs, events --------------------

use karpdoctor::events::{Events, MAX_KEPT};
use karpdoctor::facts::{InstanceType, InstanceTypeOffering};
use karpdoctor::model::Requirement;
use karpdoctor::quantity::Quantity;
use karpdoctor::requirements::narrow;

const SUFFIXES: &[&str] = &["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti"];

fn quantity_text() -> impl Strategy<Value = (u64, usize, String)> {
    (0u64..1_000_000, 0..SUFFIXES.len()).prop_map(|(n, s)| (n, s, format!("{n}{}", SUFFIXES[s])))
}

proptest! {
    #![proptest_config(config())]

    /// Any text parses or is refused; never a panic, whatever the bytes.
    #[test]
    fn quantity_parse_never_panics(text in "\\PC{0,40}") {
        let _ = Quantity::parse(&text);
    }

    /// Exact arithmetic: a sum of parsed quantities equals the parse of the summed numbers
    /// with the same suffix, and percentages stay within bounds.
    #[test]
    fn quantity_sums_are_exact(items in prop::collection::vec(quantity_text(), 1..20), suffix in 0..SUFFIXES.len()) {
        let texts: Vec<String> = items.iter().map(|(n, _, _)| format!("{n}{}", SUFFIXES[suffix])).collect();
        let total: u64 = items.iter().map(|(n, _, _)| *n).sum();
        let sum = texts.iter().map(|t| Quantity::parse(t).unwrap()).try_fold(Quantity::ZERO, |a, q| a.checked_add(q)).unwrap();
        prop_assert_eq!(sum, Quantity::parse(&format!("{total}{}", SUFFIXES[suffix])).unwrap());
        let limit = Quantity::parse(&format!("{}{}", total.max(1), SUFFIXES[suffix])).unwrap();
        let percent = sum.percent_of(limit).unwrap();
        prop_assert!((0..=100).contains(&percent));
    }

    /// Binary and decimal spellings of the same amount agree.
    #[test]
    fn quantity_units_agree(n in 0u64..1_000_000) {
        prop_assert_eq!(Quantity::parse(&format!("{n}Ki")), Quantity::parse(&(n * 1024).to_string()));
        prop_assert_eq!(Quantity::parse(&format!("{n}")), Quantity::parse(&format!("{n}000m")));
    }

    /// Narrowing only ever removes instance types, step after step, and what survives meets
    /// every requirement on a well-known label.
    #[test]
    fn narrowing_is_monotonic(
        reqs in prop::collection::vec((0..4usize, 0..6usize, prop::collection::vec("[a-z0-9]{1,4}", 0..3)), 0..5),
        zones in prop::collection::btree_set(prop_oneof![Just("us-west-2a".to_string()), Just("us-west-2b".to_string()), Just("us-west-2c".to_string())], 0..3),
    ) {
        let keys = ["kubernetes.io/arch", "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-cpu", "example.com/team"];
        let ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
        let requirements: Vec<Requirement> = reqs
            .into_iter()
            .map(|(k, o, values)| Requirement { key: keys[k].to_string(), operator: ops[o].to_string(), values, min_values: None })
            .collect();
        let types: Vec<InstanceType> = ["m5.large", "m6g.xlarge", "t3.large", "t4g.2xlarge", "c7g.large"]
            .iter()
            .map(|n| InstanceType {
                instance_type: n.to_string(),
                architectures: vec![if n.contains('g') { "arm64" } else { "x86_64" }.to_string()],
                vcpus: 2,
                memory_mib: 8192,
                usage_classes: vec!["on-demand".to_string()],
                ..InstanceType::default()
            })
            .collect();
        let offerings: Vec<InstanceTypeOffering> = types
            .iter()
            .map(|t| InstanceTypeOffering { instance_type: t.instance_type.clone(), zone: "us-west-2a".to_string() })
            .collect();
        let n = narrow(&types, &offerings, &zones, &requirements, &Default::default());
        prop_assert_eq!(n.steps.len(), requirements.len() + 1);
        prop_assert!(n.steps.windows(2).all(|w| w[1].left <= w[0].left));
        prop_assert!(n.survivors.len() <= n.steps.last().unwrap().left);
        if let Some(first) = n.emptied_by() {
            prop_assert_eq!(first.left, 0);
            prop_assert!(n.survivors.is_empty());
        }
    }

    /// Controller logs of any shape (JSON, half-written JSON, binary, huge lines) group
    /// without panicking, and every group counts at least one line.
    #[test]
    fn log_grouping_survives_anything(lines in prop::collection::vec(prop_oneof![
        "\\PC{0,200}",
        "\\{\"level\":\"(ERROR|error|INFO)\",\"message\":\"\\PC{0,60}\"(,\"error\":\"\\PC{0,60}\")?\\}",
        "panic: \\PC{0,80}",
        "\\{\"level\":",
    ], 0..40)) {
        let text = lines.join("\n");
        let groups = karpdoctor::logs::group_errors([text.as_str()]);
        let errors = text.lines().filter_map(karpdoctor::logs::parse).filter(|e| e.is_error()).count();
        prop_assert_eq!(groups.iter().map(|g| g.count).sum::<usize>(), errors);
        prop_assert!(groups.iter().all(|g| g.count >= 1 && g.example.chars().count() <= 401));
    }

    /// Events with absurd counts, times and shapes: at most MAX_KEPT kept, newest first,
    /// counts at least one, no duplicate uids.
    #[test]
    fn events_are_tamed(raw in prop::collection::vec((
        prop::option::of("[a-c]{1,2}"),
        any::<i64>(),
        prop_oneof![Just("2026-11-23T09:00:00Z".to_string()), Just("2026-11-23T10:00:00Z".to_string()), "\\PC{0,20}"],
        any::<bool>(),
    ), 0..300)) {
        let values: Vec<serde_json::Value> = raw
            .iter()
            .map(|(uid, count, time, newer)| if *newer {
                serde_json::json!({"apiVersion":"events.k8s.io/v1","metadata":{"uid":uid},"regarding":{"kind":"NodeClaim","name":"a"},"reason":"R","note":"n","deprecatedCount":count,"eventTime":time})
            } else {
                serde_json::json!({"apiVersion":"v1","metadata":{"uid":uid},"involvedObject":{"kind":"NodeClaim","name":"a"},"reason":"R","message":"m","count":count,"lastTimestamp":time})
            })
            .collect();
        let events = Events::from(values);
        prop_assert!(events.0.len() <= MAX_KEPT);
        prop_assert!(events.0.iter().all(|e| e.count >= 1));
        prop_assert!(events.0.windows(2).all(|w| w[0].last_seen >= w[1].last_seen));
        let uids: Vec<&str> = events.0.iter().map(|e| e.uid.as_str()).filter(|u| !u.is_empty()).collect();
        let unique: std::collections::BTreeSet<&str> = uids.iter().copied().collect();
        prop_assert_eq!(uids.len(), unique.len());
    }
}
