//! Repository invariants over the check registry and `checks/`: codes, slugs, titles, docs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::BTreeSet;
use std::path::Path;

use karpdoctor::docs::{SECTIONS, heading, sections};
use karpdoctor::registry::{CHECKS, RETIRED};

#[test]
fn codes_are_well_formed_unique_sorted_and_in_their_category_range() {
    let codes: Vec<&str> = CHECKS.iter().map(|c| c.code).collect();
    let mut sorted = codes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        codes, sorted,
        "CHECKS must be sorted by code, without duplicates"
    );
    for c in CHECKS {
        assert!(
            c.code.len() == 6
                && c.code.starts_with("KD")
                && c.code[2..].chars().all(|d| d.is_ascii_digit()),
            "{} is not KD + 4 digits",
            c.code
        );
        assert_eq!(
            c.code.chars().nth(2),
            Some(c.category.code_range()),
            "{} is outside the range of category {}",
            c.code,
            c.category.slug()
        );
    }
    let retired: BTreeSet<&str> = RETIRED.iter().map(|r| r.0).collect();
    assert!(
        codes.iter().all(|c| !retired.contains(c)),
        "a retired code is active again"
    );
}

#[test]
fn slugs_and_titles_follow_the_conventions() {
    let mut slugs = BTreeSet::new();
    for c in CHECKS {
        assert!(slugs.insert(c.slug), "duplicate slug {}", c.slug);
        assert!(
            !c.slug.is_empty()
                && c.slug.split('-').all(|w| !w.is_empty()
                    && w.chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit())),
            "{}: slug {} is not kebab-case",
            c.code,
            c.slug
        );
        let first = c.title.chars().next().expect("title");
        assert!(
            !first.is_uppercase() || c.title.starts_with("Karpenter"),
            "{}: title starts uppercase",
            c.code
        );
        assert!(
            !c.title.ends_with('.'),
            "{}: title ends with a period",
            c.code
        );
        assert!(!c.needs.is_empty(), "{}: declares no facts", c.code);
    }
}

#[test]
fn every_doc_has_the_heading_and_sections_in_order() {
    for c in CHECKS {
        assert_eq!(
            heading(c.doc),
            format!("# {} · {}", c.code, c.slug),
            "{}: first line",
            c.code
        );
        let found: Vec<String> = sections(c.doc).into_iter().map(|(h, _)| h).collect();
        let required: Vec<String> = found
            .iter()
            .filter(|h| h.as_str() != "Known false positives")
            .cloned()
            .collect();
        assert_eq!(required, SECTIONS, "{}: sections", c.code);
        let body = |name: &str| {
            sections(c.doc)
                .into_iter()
                .find(|(h, _)| h == name)
                .map(|(_, b)| b)
                .unwrap_or_default()
        };
        assert!(
            body("What it checks").starts_with("Checks that"),
            "{}: 'What it checks' must open with 'Checks that'",
            c.code
        );
        for s in SECTIONS {
            assert!(!body(s).is_empty(), "{}: section '{s}' is empty", c.code);
        }
    }
}

#[test]
fn every_file_in_checks_belongs_to_an_active_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("checks");
    let active: BTreeSet<&str> = CHECKS.iter().map(|c| c.code).collect();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(dir).expect("checks/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name == "README.md" {
            continue;
        }
        let code = name
            .strip_suffix(".md")
            .unwrap_or_else(|| panic!("checks/{name}: only KDxxxx.md files belong here"));
        assert!(
            active.contains(code),
            "checks/{name} has no active check (retired codes keep no doc)"
        );
        seen.insert(code.to_string());
    }
    assert_eq!(
        seen.len(),
        active.len(),
        "every active check has exactly one doc"
    );
}

#[test]
fn registry_listing_is_reviewed() {
    let listing: String = CHECKS
        .iter()
        .map(|c| {
            format!(
                "{}  {:<32} {:<12} {:<8} {}\n",
                c.code,
                c.slug,
                c.category.slug(),
                c.severity,
                c.title
            )
        })
        .collect();
    insta::assert_snapshot!(listing);
}

#[test]
fn readme_lists_every_check_and_every_permission() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    for c in CHECKS {
        assert!(
            readme.contains(&format!("| {} | {} |", c.code, c.slug)),
            "README's check table lacks {} {}",
            c.code,
            c.slug
        );
    }
    for op in karpdoctor::guard::declared_operations() {
        assert!(
            readme.contains(&format!("`{op}`")),
            "README's permissions lack `{op}`"
        );
    }
}

#[test]
fn changelog_mentions_every_code() {
    let changelog =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CHANGELOG.md"))
            .expect("CHANGELOG.md");
    for c in CHECKS {
        assert!(
            changelog.contains(c.code),
            "CHANGELOG.md never mentions {}",
            c.code
        );
    }
}

/// Checks judge; they never fetch. Every API request goes through the run's context, which
/// fetches each fact once and shares it (and whose keys the read-only guard allows). A check
/// that reached a client or the backend directly would bypass both, so none may name one.
#[test]
fn no_check_reaches_an_api_client_or_the_backend() {
    const FORBIDDEN: &[&str] = &[
        ".backend(",
        "Backend::",
        "backend::",
        "aws_sdk_",
        "aws_config",
        "kube::",
        "Api<",
        "hyper",
        "reqwest",
        "TcpStream",
        "std::process::Command",
    ];
    let mut offences = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src/checks")];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/checks is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files += 1;
                let text = std::fs::read_to_string(&path).expect("source is UTF-8");
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or_default();
                    for word in FORBIDDEN.iter().filter(|w| code.contains(*w)) {
                        offences.push(format!("{}:{}: {word}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(files > 40, "only {files} check sources found");
    assert!(
        offences.is_empty(),
        "checks must read facts only: {offences:#?}"
    );
}
