//! Repository invariants over the check registry and `checks/`: codes, slugs, titles, docs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

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
        for k in c.evidence {
            assert!(
                c.needs.contains(k),
                "{}: reads {k:?} as evidence without declaring it a need",
                c.code
            );
        }
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
        // The crates, not the word (an instance's hypervisor is a fact checks read).
        "hyper::",
        "hyper_",
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

/// Codes written in `src/`, `checks/` or the README that are no check, on purpose:
/// `(file, code, why)`. Retired codes (`RETIRED`) are allowed too; placeholders such as
/// `KDnnnn`, `KDxxxx` and `KD1xxx` are not four digits and never match.
const NOT_CHECKS: &[(&str, &str, &str)] = &[
    (
        "src/registry.rs",
        "KD9999",
        "a test: no check has this code",
    ),
    (
        "src/registry.rs",
        "KD1010",
        "a test: a near miss that suggests KD1001",
    ),
    (
        "checks/README.md",
        "KD1234",
        "the example heading of a check's doc",
    ),
];

/// Every `KD` and four digits written in a file (as a whole word).
fn written_codes(text: &str) -> Vec<String> {
    let code = regex::Regex::new(r"\bKD[0-9]{4}\b").expect("pattern");
    code.find_iter(text)
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn every_code_written_in_code_and_docs_is_registered() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let registered: BTreeSet<&str> = CHECKS
        .iter()
        .map(|c| c.code)
        .chain(RETIRED.iter().map(|r| r.0))
        .collect();
    let mut files = support::files_under(&root.join("src"), "rs");
    files.extend(support::files_under(&root.join("checks"), "md"));
    files.push(root.join("README.md"));
    let mut unknown = Vec::new();
    let mut allowed_seen = BTreeSet::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .expect("under the repository")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).expect("UTF-8 text");
        for code in written_codes(&text) {
            if registered.contains(code.as_str()) {
                continue;
            }
            match NOT_CHECKS.iter().find(|(f, c, _)| *f == rel && *c == code) {
                Some(allowed) => {
                    allowed_seen.insert((allowed.0, allowed.1));
                }
                None => unknown.push(format!("{rel}: {code}")),
            }
        }
    }
    assert!(files.len() > 100, "only {} files read", files.len());
    assert!(
        unknown.is_empty(),
        "codes that name no registered check: {unknown:#?}"
    );
    for (file, code, _) in NOT_CHECKS {
        assert!(
            allowed_seen.contains(&(*file, *code)),
            "{file} no longer writes {code}: drop it from NOT_CHECKS"
        );
    }
}

#[test]
fn every_code_constant_names_the_check_of_its_name() {
    use karpdoctor::checks::common::codes::ALL;
    assert!(!ALL.is_empty());
    for (name, code) in ALL {
        let check = CHECKS
            .iter()
            .find(|c| c.code == *code)
            .unwrap_or_else(|| panic!("codes::{name} = {code} is not registered"));
        assert_eq!(
            check.slug.to_ascii_uppercase().replace('-', "_"),
            *name,
            "codes::{name} is {code}, whose slug is {}",
            check.slug
        );
    }
}

/// A check file imports what it shares from `checks::common` and from the modules below the
/// checks; never another check file or category. A category's `mod.rs` only declares its
/// checks, and `common` imports no check.
#[test]
fn checks_share_only_through_common() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/checks");
    let mut offences = Vec::new();
    for path in support::files_under(&dir, "rs") {
        let rel = path.strip_prefix(&dir).expect("under src/checks");
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let text = std::fs::read_to_string(&path).expect("UTF-8 source");
        let name = rel.display();
        match parts.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["mod.rs"] => continue,
            [_, "mod.rs"] if parts[0] != "common" => {
                for line in text.lines() {
                    let line = line.trim();
                    if !(line.is_empty() || line.starts_with("//") || line.starts_with("pub mod "))
                    {
                        offences.push(format!(
                            "{name}: a category's mod.rs only declares its checks: {line}"
                        ));
                    }
                }
                continue;
            }
            _ => {}
        }
        let in_common = parts[0] == "common";
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // A test module reads the file it is in.
            let code = code.replace("use super::*;", "");
            for reach in code
                .match_indices("crate::checks::")
                .map(|(i, _)| &code[i..])
            {
                if !reach.starts_with("crate::checks::common") {
                    offences.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
            if code.contains("super::") && !in_common {
                offences.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
            if code.contains("super::super") {
                offences.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "a check reaches another check: {offences:#?}"
    );
}
