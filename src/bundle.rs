//! The bundle: every fact (and fact error) of one run, plus the target it was resolved to.
//!
//! `--record FILE` writes one; `--replay FILE`, `karpdoctor demo` and the scenario fixtures
//! read one. Kubernetes facts hold objects exactly as the API server returned them, so a bundle
//! can also seed a test API server; AWS facts hold karpdoctor's own serde types.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::facts::{FactError, FactKey};
use crate::target::{Hints, Target};

/// Bumped when a reader of the previous version could not load a new bundle.
pub const BUNDLE_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    pub bundle_version: u32,
    #[serde(default)]
    pub karpdoctor_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the recording run started from; a replay resolves its target from these.
    #[serde(default)]
    pub hints: Hints,
    /// The target the recording run resolved (informational; a replay resolves it again).
    #[serde(default)]
    pub target: Target,
    #[serde(default)]
    pub facts: Vec<FactEntry>,
}

/// One fact: its key and either the value or the error the backend produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "EntryFields")]
pub struct FactEntry {
    pub fact: FactKey,
    #[serde(flatten)]
    pub outcome: FactOutcome,
}

/// How an entry is read. Not `#[serde(flatten)]`: serde reads a flattened field through an
/// intermediate copy of the whole value, and a fact can be 50,000 events.
#[derive(Deserialize)]
struct EntryFields {
    fact: FactKey,
    #[serde(default, deserialize_with = "present")]
    value: Option<Value>,
    #[serde(default)]
    error: Option<FactError>,
}

/// `Some` whenever the field is there, `null` included (a named object that does not exist).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl TryFrom<EntryFields> for FactEntry {
    type Error = String;
    fn try_from(f: EntryFields) -> Result<Self, String> {
        let outcome = match (f.value, f.error) {
            (Some(v), None) => FactOutcome::Value(v),
            (None, Some(e)) => FactOutcome::Error(e),
            (Some(_), Some(_)) => {
                return Err(format!("fact {}: both a value and an error", f.fact));
            }
            (None, None) => return Err(format!("fact {}: neither a value nor an error", f.fact)),
        };
        Ok(FactEntry {
            fact: f.fact,
            outcome,
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FactOutcome {
    Value(Value),
    Error(FactError),
}

impl From<Result<Value, FactError>> for FactOutcome {
    fn from(r: Result<Value, FactError>) -> Self {
        match r {
            Ok(v) => FactOutcome::Value(v),
            Err(e) => FactOutcome::Error(e),
        }
    }
}

impl FactOutcome {
    pub fn into_result(self) -> Result<Value, FactError> {
        match self {
            FactOutcome::Value(v) => Ok(v),
            FactOutcome::Error(e) => Err(e),
        }
    }
}

impl Bundle {
    /// The recording of a run: its hints and facts, stamped with the moment the facts
    /// describe (a recording of a replay keeps the original moment, so age-based judgements,
    /// such as conditions stuck for minutes, replay the same).
    pub fn of_run(context: &crate::context::Context, target: Target) -> Self {
        let mut bundle = Bundle::new(context.hints().clone(), target, context.recording());
        bundle.recorded_at = Some(context.now().to_string());
        bundle
    }

    pub fn new(
        hints: Hints,
        target: Target,
        facts: BTreeMap<FactKey, Result<Value, FactError>>,
    ) -> Self {
        Bundle {
            bundle_version: BUNDLE_VERSION,
            karpdoctor_version: crate::VERSION.to_string(),
            recorded_at: Some(jiff::Timestamp::now().to_string()),
            description: None,
            hints,
            target,
            facts: facts
                .into_iter()
                .map(|(fact, r)| FactEntry {
                    fact,
                    outcome: r.into(),
                })
                .collect(),
        }
    }

    /// Parses a bundle from JSON text; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let bundle: Bundle = serde_json::from_str(text).map_err(|e| Error::BadBundle {
            path: origin.to_string(),
            reason: e.to_string(),
        })?;
        if bundle.bundle_version != BUNDLE_VERSION {
            return Err(Error::BadBundle {
                path: origin.to_string(),
                reason: format!(
                    "bundle version {} is not supported (this karpdoctor reads version {BUNDLE_VERSION})",
                    bundle.bundle_version
                ),
            });
        }
        Ok(bundle)
    }

    pub fn read(path: &Path) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::BadBundle {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        Self::parse(&text, &shown)
    }

    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| Error::Internal {
            message: format!("serializing the bundle: {e}"),
        })?;
        text.push('\n');
        std::fs::write(path, text).map_err(|e| Error::Io {
            what: format!("writing {}", path.display()),
            reason: e.to_string(),
        })
    }

    /// The facts as a lookup table; a later entry for the same key wins.
    pub fn into_facts(self) -> BTreeMap<FactKey, Result<Value, FactError>> {
        self.facts
            .into_iter()
            .map(|e| (e.fact, e.outcome.into_result()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(facts: &str) -> Result<Bundle, Error> {
        Bundle::parse(
            &format!(r#"{{"bundleVersion": 1, "facts": [{facts}]}}"#),
            "test",
        )
    }

    #[test]
    fn an_entry_holds_a_value_null_included_or_an_error() {
        let bundle = parse(
            r#"{"fact": "nodePools", "value": []},
               {"fact": {"serviceAccount": {"namespace": "karpenter", "name": "karpenter"}}, "value": null},
               {"fact": "nodeClaims", "error": {"kind": "forbidden", "permission": "list nodeclaims", "message": "no"}}"#,
        )
        .unwrap();
        let outcomes: Vec<_> = bundle.facts.into_iter().map(|e| e.outcome).collect();
        assert!(matches!(&outcomes[0], FactOutcome::Value(Value::Array(a)) if a.is_empty()));
        assert!(matches!(&outcomes[1], FactOutcome::Value(Value::Null)));
        assert!(matches!(&outcomes[2], FactOutcome::Error(_)));
    }

    #[test]
    fn an_entry_with_both_or_neither_is_a_bad_bundle() {
        for facts in [
            r#"{"fact": "nodePools"}"#,
            r#"{"fact": "nodePools", "value": [], "error": {"kind": "forbidden", "permission": "list nodeclaims", "message": "no"}}"#,
        ] {
            let err = parse(facts).unwrap_err().to_string();
            assert!(err.to_lowercase().contains("nodepool"), "{err}");
        }
    }

    #[test]
    fn written_entries_read_back_the_same() {
        let bundle = parse(
            r#"{"fact": "nodePools", "value": [{"metadata": {"name": "a"}}]},
               {"fact": "nodeClaims", "error": {"kind": "forbidden", "permission": "list nodeclaims", "message": "no"}}"#,
        )
        .unwrap();
        let text = serde_json::to_string(&bundle).unwrap();
        let again = Bundle::parse(&text, "again").unwrap();
        assert_eq!(serde_json::to_string(&again).unwrap(), text);
    }
}
