//! Where facts come from: the live APIs, or a recorded bundle. A closed enum, so adding a
//! fact means one new arm in each backend and the compiler lists the places.

pub mod live;
pub mod recorded;

use serde_json::Value;

use crate::facts::{FactError, FactKey};

pub enum Backend {
    Live(Box<live::Live>),
    Recorded(recorded::Recorded),
}

impl Backend {
    /// Reads one fact as JSON. Absent named objects are `null`; absent APIs and lack of
    /// access are errors.
    pub async fn fetch(&self, key: &FactKey) -> Result<Value, FactError> {
        match self {
            Backend::Live(live) => live.fetch(key).await,
            Backend::Recorded(rec) => rec.fetch(key),
        }
    }

    pub fn is_live(&self) -> bool {
        matches!(self, Backend::Live(_))
    }
}
