//! Facts from a bundle: `--replay`, `demo` and the scenario fixtures.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::bundle::Bundle;
use crate::facts::Stored;
use crate::facts::{FactError, FactKey};

pub struct Recorded {
    facts: Mutex<BTreeMap<FactKey, Result<Stored, FactError>>>,
}

impl Recorded {
    pub fn new(facts: BTreeMap<FactKey, Result<Stored, FactError>>) -> Self {
        Recorded {
            facts: Mutex::new(facts),
        }
    }

    pub fn from_bundle(bundle: Bundle<Stored>) -> Self {
        Recorded::new(bundle.into_facts())
    }

    /// Hands a fact over to the run, as text if the bundle was read for replay (the context
    /// decodes it). The context asks the backend at most once per key (one cell per fact), so
    /// the value is moved out rather than copied: at scale a deep copy of 50,000 events costs
    /// more than judging them.
    ///
    /// A fact the recording run never fetched cannot be judged offline: `NotRecorded`, which
    /// makes the checks that need it `unknown` (a bundle from an older karpdoctor, say).
    pub fn fetch(&self, key: &FactKey) -> Result<Stored, FactError> {
        let mut facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        facts.remove(key).unwrap_or_else(|| {
            Err(FactError::NotRecorded {
                fact: key.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_is_handed_over_once_and_an_unrecorded_one_is_not_recorded() {
        let rec = Recorded::new(BTreeMap::from([(
            FactKey::NodePools,
            Ok(Stored::Tree(serde_json::json!([]))),
        )]));
        assert!(matches!(
            rec.fetch(&FactKey::NodePools),
            Ok(Stored::Tree(v)) if v == serde_json::json!([])
        ));
        assert!(matches!(
            rec.fetch(&FactKey::NodeClaims),
            Err(FactError::NotRecorded { .. })
        ));
    }
}
