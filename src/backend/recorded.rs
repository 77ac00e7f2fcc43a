//! Facts from a bundle: `--replay`, `demo` and the scenario fixtures.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::bundle::Bundle;
use crate::facts::{FactError, FactKey};

pub struct Recorded {
    facts: BTreeMap<FactKey, Result<Value, FactError>>,
}

impl Recorded {
    pub fn new(facts: BTreeMap<FactKey, Result<Value, FactError>>) -> Self {
        Recorded { facts }
    }

    pub fn from_bundle(bundle: Bundle) -> Self {
        Recorded::new(bundle.into_facts())
    }

    /// A fact the recording run never fetched cannot be judged offline: `NotRecorded`, which
    /// makes the checks that need it `unknown` (a bundle from an older karpdoctor, say).
    pub fn fetch(&self, key: &FactKey) -> Result<Value, FactError> {
        self.facts.get(key).cloned().unwrap_or_else(|| {
            Err(FactError::NotRecorded {
                fact: key.to_string(),
            })
        })
    }
}
