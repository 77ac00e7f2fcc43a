//! Layers point one way. Every top-level module of `src/` has a rank (see
//! `docs/architecture.md`); a module may use only modules of a lower rank. With every edge
//! going strictly down there can be no circle, and no import runs back up. A new module must
//! be given its rank here, which is the moment to decide where it belongs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bottom to top. Modules on one line share a rank and may not use each other.
const LAYERS: &[&[&str]] = &[
    // Vocabulary: no I/O, nothing of ours below.
    &[
        "error", "arn", "sanitize", "quantity", "awsauth", "redact", "model", "finding",
    ],
    &["events", "logs", "target"],
    // Facts: what can be known, declared once.
    &["facts"],
    // Pure judgement over facts.
    &["iam", "requirements", "userdata", "network", "console"],
    // Karpenter's scheduler, over requirement sets and instance types.
    &["scheduling"],
    // Karpenter's releases: what each serves, accepts and asks of an upgrade.
    &["upgrade"],
    // What keeps a node that is up from taking pods, and what keeps one from going, over the
    // scheduler's matching.
    &["ec2", "nodecap", "disruption"],
    // EKS Auto Mode: which controller serves a pool, its node roles, its NodeClasses' selectors.
    &["automode"],
    // I/O: the read-only guard, the bundle format, the backends.
    &["guard", "bundle", "pushgateway"],
    &["backend"],
    // Facts fetched once; the one writable object.
    &["context", "history_store"],
    // Checks.
    &["check"],
    &["checks"],
    // Running checks and reporting.
    &["registry", "engine", "history", "docs", "permissions"],
    &["report"],
    // Commands.
    &["cli"],
    &["app"],
];

/// Items of the crate root every layer may name.
const ROOT_ITEMS: &[&str] = &["VERSION", "REPOSITORY", "declare_check"];

fn ranks() -> BTreeMap<&'static str, usize> {
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, modules)| modules.iter().map(move |m| (*m, rank)))
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a source file names as `crate::<module>`, outside comments and its
/// unit tests (which may reach anything to build their inputs).
fn used_modules(text: &str) -> Vec<String> {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
    let mut used = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let name: String = line[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            used.push(name);
        }
    }
    used
}

#[test]
fn every_module_uses_only_lower_layers() {
    let ranks = ranks();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(&rank) = ranks.get(module.as_str()) else {
            problems.push(format!("src/{module}: give it a rank in tests/layers.rs"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for used in used_modules(&text) {
            if used == module || ROOT_ITEMS.contains(&used.as_str()) {
                continue;
            }
            match ranks.get(used.as_str()) {
                Some(&r) if r < rank => {}
                Some(_) => problems.push(format!(
                    "{} uses crate::{used}, which is not below {module}",
                    rel.display()
                )),
                None => problems.push(format!(
                    "{} uses crate::{used}, which has no rank",
                    rel.display()
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_paths_but_not_comments_or_unit_tests() {
    let text = "use crate::facts::FactKey;\n// see crate::app\nfn f() { crate::model::x(); }\n\
                #[cfg(test)]\nmod tests { use crate::app; }\n";
    assert_eq!(used_modules(text), ["facts", "model"]);
}
