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
pub struct FactEntry {
    pub fact: FactKey,
    #[serde(flatten)]
    pub outcome: FactOutcome,
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
