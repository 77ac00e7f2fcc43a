//! The single list of checks. `list`, `explain`, `--only`/`--skip`, the JSON report and the
//! docs index all derive from [`CHECKS`]; nothing keeps a second list.

use crate::check::{Category, CheckInfo};

/// Every active check, sorted by code: declared, one line each, in `crate::checks`.
pub use crate::checks::CHECKS;

/// Codes that were used once and are retired: never reuse them.
/// `(code, version retired in, reason)`. Keep sorted by code.
pub static RETIRED: &[(&str, &str, &str)] = &[];

/// Finds a check by code (`KD1001`, case-insensitive) or slug.
pub fn find(query: &str) -> Option<&'static CheckInfo> {
    CHECKS
        .iter()
        .copied()
        .find(|c| c.code.eq_ignore_ascii_case(query) || c.slug == query)
}

/// The closest code or slug to an unknown query, for "did you mean".
pub fn suggest(query: &str) -> Option<String> {
    let q = query.to_ascii_lowercase();
    let mut best: Option<(f64, String)> = None;
    for c in CHECKS {
        for candidate in [c.code.to_ascii_lowercase(), c.slug.to_string()] {
            let score = strsim::jaro_winkler(&q, &candidate);
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                let shown = if candidate == c.slug { c.slug } else { c.code };
                best = Some((score, shown.to_string()));
            }
        }
    }
    best.filter(|(s, _)| *s >= 0.7).map(|(_, c)| c)
}

/// One `--only`/`--skip` token: a code, a slug or a category.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Check(&'static str),
    Category(Category),
}

impl Selector {
    pub fn parse(token: &str) -> Result<Selector, crate::error::Error> {
        if let Some(c) = find(token) {
            return Ok(Selector::Check(c.code));
        }
        if let Some(cat) = Category::ALL.iter().find(|c| c.slug() == token) {
            return Ok(Selector::Category(*cat));
        }
        Err(crate::error::Error::UnknownCheck {
            query: token.to_string(),
            suggestion: suggest(token).or_else(|| {
                Category::ALL
                    .iter()
                    .map(|c| (strsim::jaro_winkler(token, c.slug()), c.slug()))
                    .filter(|(s, _)| *s >= 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, s)| s.to_string())
            }),
        })
    }

    fn matches(&self, info: &CheckInfo) -> bool {
        match self {
            Selector::Check(code) => info.code == *code,
            Selector::Category(cat) => info.category == *cat,
        }
    }
}

/// The checks a run executes: all, or those matching `only`, minus those matching `skip`.
pub fn select(only: &[Selector], skip: &[Selector]) -> Vec<&'static CheckInfo> {
    CHECKS
        .iter()
        .copied()
        .filter(|c| only.is_empty() || only.iter().any(|s| s.matches(c)))
        .filter(|c| !skip.iter().any(|s| s.matches(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_code_and_slug() {
        assert_eq!(find("kd1001").map(|c| c.code), Some("KD1001"));
        assert_eq!(
            find("controller-not-running").map(|c| c.code),
            Some("KD1001")
        );
        assert!(find("KD9999").is_none());
    }

    #[test]
    fn suggests_close_codes() {
        assert_eq!(suggest("KD1010").as_deref(), Some("KD1001"));
        assert_eq!(
            suggest("controller-not-runing").as_deref(),
            Some("controller-not-running")
        );
        assert_eq!(suggest("zzzzzzzz"), None);
    }

    #[test]
    fn selects_by_category_and_skips() {
        let only = [Selector::parse("install").unwrap()];
        let skip = [Selector::parse("KD1002").unwrap()];
        let codes: Vec<_> = select(&only, &skip).iter().map(|c| c.code).collect();
        assert_eq!(
            codes,
            [
                "KD1001", "KD1003", "KD1004", "KD1005", "KD1006", "KD1007", "KD1008", "KD1009",
                "KD1201"
            ]
        );
    }

    #[test]
    fn unknown_selector_suggests() {
        let err = Selector::parse("instal").unwrap_err().to_string();
        assert!(err.contains("did you mean install"), "{err}");
    }
}
