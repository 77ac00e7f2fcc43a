//! Where facts come from: the live APIs, or a recorded bundle. A closed enum, so adding a
//! fact means one new arm in each backend and the compiler lists the places.

pub mod live;
pub mod recorded;

use std::sync::Arc;

use crate::facts::Stored;
use crate::facts::{FactError, FactKey};

pub enum Backend {
    /// Shared with the run (app), which connects its AWS side once the target is resolved.
    Live(Arc<live::Live>),
    Recorded(recorded::Recorded),
}

impl Backend {
    /// Reads one fact as JSON: lists as text written while their pages arrive, other answers
    /// as trees, and from a bundle the recorded text. Absent
    /// named objects are `null`; absent APIs and lack of access are errors.
    pub async fn fetch(&self, key: &FactKey) -> Result<Stored, FactError> {
        match self {
            Backend::Live(live) => live.fetch(key).await,
            Backend::Recorded(rec) => rec.fetch(key),
        }
    }
}
