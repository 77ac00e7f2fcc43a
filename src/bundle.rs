//! The bundle: every fact (and fact error) of one run, plus the target it was resolved to.
//!
//! `--record FILE` writes one; `--replay FILE`, `karpdoctor demo` and the scenario fixtures
//! read one. Kubernetes facts hold objects exactly as the API server returned them, so a bundle
//! can also seed a test API server; AWS facts hold karpdoctor's own serde types.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::events::{Fold, keep_only_folded};
use crate::facts::{FactError, FactKey, FactKind, Stored};
use crate::target::{Hints, Target};

/// Bumped when a reader of the previous version could not load a new bundle.
pub const BUNDLE_VERSION: u32 = 1;

/// `V` is how a fact's value is held: a JSON tree (the default: recording, tests, seeding the
/// emulators) or [`Stored`] (a replay, which parses a fact only when a check asks for it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(bound(deserialize = "V: Deserialize<'de>"))]
pub struct Bundle<V = Value> {
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
    pub facts: Vec<FactEntry<V>>,
}

/// One fact: its key and either the value or the error the backend produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "EntryFields<V>")]
#[serde(bound(deserialize = "V: Deserialize<'de>"))]
pub struct FactEntry<V = Value> {
    pub fact: FactKey,
    #[serde(flatten)]
    pub outcome: FactOutcome<V>,
}

/// How an entry is read. Not `#[serde(flatten)]`: serde reads a flattened field through an
/// intermediate copy of the whole value, and a fact can be 50,000 events.
#[derive(Deserialize)]
#[serde(bound(deserialize = "V: Deserialize<'de>"))]
struct EntryFields<V> {
    fact: FactKey,
    #[serde(default = "none", deserialize_with = "present")]
    value: Option<V>,
    #[serde(default)]
    error: Option<FactError>,
}

fn none<V>() -> Option<V> {
    None
}

/// `Some` whenever the field is there, `null` included (a named object that does not exist).
fn present<'de, D: serde::Deserializer<'de>, V: Deserialize<'de>>(
    d: D,
) -> Result<Option<V>, D::Error> {
    V::deserialize(d).map(Some)
}

impl<V> TryFrom<EntryFields<V>> for FactEntry<V> {
    type Error = String;
    fn try_from(f: EntryFields<V>) -> Result<Self, String> {
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
pub enum FactOutcome<V = Value> {
    Value(V),
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

impl<V> FactOutcome<V> {
    pub fn into_result(self) -> Result<V, FactError> {
        match self {
            FactOutcome::Value(v) => Ok(v),
            FactOutcome::Error(e) => Err(e),
        }
    }
}

impl Bundle {
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
        parse_as(text, origin)
    }

    pub fn read(path: &Path) -> Result<Self, Error> {
        parse_as(&read_text(path)?, &path.display().to_string())
    }

    /// Reads a bundle for replay: each fact stays JSON text until a check asks for it, so a
    /// large bundle never sits in memory as one tree. The file is read as a stream (never held
    /// whole beside the facts' text), and an events fact keeps only the events its fold keeps.
    pub fn read_for_replay(path: &Path) -> Result<Bundle<Stored>, Error> {
        let origin = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Error::BadBundle {
            path: origin.clone(),
            reason: e.to_string(),
        })?;
        let reader = std::io::BufReader::with_capacity(1 << 20, file);
        let bundle: Bundle<Stored> = checked(serde_json::from_reader(reader), &origin)?;
        Ok(bundle.with_events_folded())
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

    /// The same bundle with its values held as [`Stored`] trees, ready to replay.
    pub fn into_stored(self) -> Bundle<Stored> {
        Bundle {
            bundle_version: self.bundle_version,
            karpdoctor_version: self.karpdoctor_version,
            recorded_at: self.recorded_at,
            description: self.description,
            hints: self.hints,
            target: self.target,
            facts: self
                .facts
                .into_iter()
                .map(|e| FactEntry {
                    fact: e.fact,
                    outcome: match e.outcome {
                        FactOutcome::Value(v) => FactOutcome::Value(Stored::Tree(v)),
                        FactOutcome::Error(err) => FactOutcome::Error(err),
                    },
                })
                .collect(),
        }
    }
}

impl Bundle<Stored> {
    /// Events facts held as only the events their fold keeps (see
    /// [`crate::events::keep_only_folded`]); a list that does not read as events stays whole,
    /// so that its decode reports why.
    fn with_events_folded(mut self) -> Self {
        for entry in &mut self.facts {
            let fold = match entry.fact.kind() {
                FactKind::Events => Fold::Newest,
                FactKind::EventsByReason => Fold::PerObject,
                _ => continue,
            };
            if let FactOutcome::Value(Stored::Text(list)) = &mut entry.outcome
                && let Some(kept) = keep_only_folded(list, fold)
            {
                *list = kept;
            }
        }
        self
    }
}

impl<V> Bundle<V> {
    /// The facts as a lookup table; a later entry for the same key wins.
    pub fn into_facts(self) -> BTreeMap<FactKey, Result<V, FactError>> {
        self.facts
            .into_iter()
            .map(|e| (e.fact, e.outcome.into_result()))
            .collect()
    }
}

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::BadBundle {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn parse_as<V: DeserializeOwned>(text: &str, origin: &str) -> Result<Bundle<V>, Error> {
    checked(serde_json::from_str(text), origin)
}

fn checked<V>(
    parsed: Result<Bundle<V>, serde_json::Error>,
    origin: &str,
) -> Result<Bundle<V>, Error> {
    let bundle = parsed.map_err(|e| Error::BadBundle {
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

    #[test]
    fn a_replayed_fact_stays_text_until_read_and_reads_the_same() {
        let text = r#"{"bundleVersion": 1, "facts": [
            {"fact": "nodePools", "value": [{"metadata": {"name": "a"}}]},
            {"fact": {"serviceAccount": {"namespace": "karpenter", "name": "karpenter"}}, "value": null},
            {"fact": "nodeClaims", "error": {"kind": "forbidden", "permission": "list nodeclaims", "message": "no"}}]}"#;
        let lazy: Bundle<Stored> = parse_as(text, "test").unwrap();
        let eager = Bundle::parse(text, "test").unwrap();
        for (l, e) in lazy.facts.into_iter().zip(eager.facts) {
            assert_eq!(l.fact, e.fact);
            match (l.outcome, e.outcome) {
                (FactOutcome::Value(Stored::Text(raw)), FactOutcome::Value(v)) => {
                    assert_eq!(Stored::Text(raw).into_value().unwrap(), v);
                }
                (FactOutcome::Error(a), FactOutcome::Error(b)) => assert_eq!(a, b),
                other => panic!("{other:?}"),
            }
        }
    }
}
