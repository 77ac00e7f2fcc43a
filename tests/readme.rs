//! The README's table of checks ("What it checks") says what the registry says: one row per
//! registered check, in registry order, with its code, slug, category and (when it is not
//! `error`) its severity. The last column is the README's own prose and is only required to be
//! there. On a mismatch the test prints the rows to paste.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::collections::BTreeMap;
use std::path::Path;

use karpdoctor::check::{CheckInfo, Severity};
use karpdoctor::registry::CHECKS;

const HEADER: &str = "| code | slug | category | checks that |";

/// One row of the table: the cells the registry decides, and the prose.
#[derive(Debug, PartialEq)]
struct Row {
    code: String,
    slug: String,
    category: String,
    prose: String,
}

/// The rows of the table under `HEADER`, up to the first line that is not a table row.
fn readme_rows(readme: &str) -> Vec<Row> {
    let mut lines = readme.lines().skip_while(|l| l.trim() != HEADER).skip(1);
    assert!(
        lines.next().is_some_and(|l| l.starts_with("|---")),
        "README.md has no table headed `{HEADER}`"
    );
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            let inner = line
                .strip_prefix("| ")
                .and_then(|l| l.strip_suffix(" |"))
                .unwrap_or_else(|| panic!("malformed row: {line}"));
            let cells: Vec<&str> = inner.splitn(4, " | ").collect();
            assert_eq!(cells.len(), 4, "a row has four cells: {line}");
            Row {
                code: cells[0].to_string(),
                slug: cells[1].to_string(),
                category: cells[2].to_string(),
                prose: cells[3].to_string(),
            }
        })
        .collect()
}

/// The category cell: the category's slug, with the severity when it is not `error` (and
/// not already said by the category, as in `info`).
fn category_cell(c: &CheckInfo) -> String {
    let category = c.category.slug();
    if c.severity == Severity::Error || c.severity.as_str() == category {
        category.to_string()
    } else {
        format!("{category} ({})", c.severity)
    }
}

/// The row the registry calls for, keeping the README's prose for the code when it has some
/// (the check's title otherwise, as a start).
fn expected_row(c: &CheckInfo, prose: &BTreeMap<String, String>) -> Row {
    Row {
        code: c.code.to_string(),
        slug: c.slug.to_string(),
        category: category_cell(c),
        prose: prose
            .get(c.code)
            .filter(|p| !p.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| c.title.to_string()),
    }
}

/// The README with the table's rows replaced by `rows` (header and separator kept).
fn with_rows(readme: &str, rows: &[String]) -> String {
    let lines: Vec<&str> = readme.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.trim() == HEADER)
        .expect("README.md has the table");
    let first = header + 2;
    let end = first
        + lines[first..]
            .iter()
            .take_while(|l| l.starts_with('|'))
            .count();
    let mut out: Vec<&str> = lines[..first].to_vec();
    out.extend(rows.iter().map(String::as_str));
    out.extend_from_slice(&lines[end..]);
    let mut text = out.join("\n");
    if readme.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn markdown(row: &Row) -> String {
    format!(
        "| {} | {} | {} | {} |",
        row.code, row.slug, row.category, row.prose
    )
}

#[test]
fn readme_check_table_matches_the_registry() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let rows = readme_rows(&readme);
    let prose: BTreeMap<String, String> = rows
        .iter()
        .map(|r| (r.code.clone(), r.prose.clone()))
        .collect();
    let expected: Vec<Row> = CHECKS.iter().map(|c| expected_row(c, &prose)).collect();
    if rows != expected {
        let paste: Vec<String> = expected.iter().map(markdown).collect();
        // Like insta's INSTA_UPDATE: a new check's row is written, not typed by hand.
        if std::env::var("UPDATE_README").is_ok_and(|v| v == "1") {
            std::fs::write(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
                with_rows(&readme, &paste),
            )
            .expect("README.md is writable");
            return;
        }
        panic!(
            "README.md's table of checks differs from the registry (src/registry.rs). \
             Run `UPDATE_README=1 cargo test --test readme` or replace its rows with these \
             (then describe any new check in the last column):\n\n\
             {HEADER}\n|---|---|---|---|\n{}\n",
            paste.join("\n")
        );
    }
}

#[test]
fn rewriting_the_rows_keeps_the_rest_of_the_readme() {
    let readme = format!("intro\n\n{HEADER}\n|---|---|---|---|\n| KD1 | a | b | c |\n\nafter\n");
    let rows = vec![
        "| KD1 | a | b | c |".to_string(),
        "| KD2 | d | e | f |".to_string(),
    ];
    let written = with_rows(&readme, &rows);
    assert_eq!(
        written,
        format!(
            "intro\n\n{HEADER}\n|---|---|---|---|\n{}\n\nafter\n",
            rows.join("\n")
        )
    );
    assert_eq!(readme_rows(&written).len(), 2);
}

#[test]
fn the_table_reader_sees_rows_and_their_cells() {
    let text = format!(
        "intro\n\n{HEADER}\n|---|---|---|---|\n| KD1 | a-b | install (warning) | x \\| y |\n\nafter\n| KD2 | not | in | table |\n"
    );
    let rows = readme_rows(&text);
    assert_eq!(
        rows,
        vec![Row {
            code: "KD1".into(),
            slug: "a-b".into(),
            category: "install (warning)".into(),
            prose: "x \\| y".into(),
        }]
    );
}
