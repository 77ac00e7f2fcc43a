//! Facts: the only things checks may know about the cluster and the account.
//!
//! A fact is identified by a [`FactKey`] (what to read, with its parameters) and belongs to a
//! [`FactKind`] (the key without parameters). Every fact is declared once, in the table of
//! `table.rs`: its key, the type its value decodes to, the API operations that produce it
//! (the single source for the read-only guard and for the permissions karpdoctor asks for),
//! the shape its JSON must have, and how it is named in messages. Values travel as JSON
//! between the backend and the context so that a live run and a replay of its recording go
//! through the same decoding.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

mod error;
mod shape;
mod values;

pub use error::FactError;
pub use shape::{FieldType, Shape};
pub use values::*;

/// One `Filters` entry of an EC2 describe call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ec2Filter {
    pub name: String,
    pub values: Vec<String>,
}

/// One IAM simulation context entry (`ContextEntry`): a key, its type as IAM spells it
/// (`string`, `stringList`, `boolean`, …) and its values.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEntry {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub values: Vec<String>,
}

/// One API operation karpdoctor may issue. Kubernetes operations are a verb on a resource;
/// AWS operations are an IAM action (`service:Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiOp {
    Kube {
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        /// The one object the operation reads, when it is limited to one name (the
        /// ClusterRole then grants `resourceNames` instead of the whole resource).
        name: Option<&'static str>,
    },
    Aws {
        service: &'static str,
        action: &'static str,
    },
}

impl fmt::Display for ApiOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiOp::Kube {
                verb,
                group: "",
                resource,
                ..
            } => write!(f, "{verb} {resource}"),
            ApiOp::Kube {
                verb,
                group,
                resource,
                ..
            } => write!(f, "{verb} {resource}.{group}"),
            ApiOp::Aws { service, action } => write!(f, "{service}:{action}"),
        }
    }
}

const fn kube(verb: &'static str, group: &'static str, resource: &'static str) -> ApiOp {
    ApiOp::Kube {
        verb,
        group,
        resource,
        name: None,
    }
}

/// An operation limited to one object: the ClusterRole then names it in `resourceNames`.
const fn kube_named(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    name: &'static str,
) -> ApiOp {
    ApiOp::Kube {
        verb,
        group,
        resource,
        name: Some(name),
    }
}

const fn aws(service: &'static str, action: &'static str) -> ApiOp {
    ApiOp::Aws { service, action }
}

/// A `'static` slice of operations; `const` so the calls are evaluated at compile time.
macro_rules! ops {
    ($($op:expr),* $(,)?) => {{
        const OPS: &[ApiOp] = &[$($op),*];
        OPS
    }};
}

mod table;

pub use table::{FactKey, FactKind};

/// The service a fact's requests go to: each has its own concurrency limit, and facts that
/// need no parameter are prefetched per service as soon as the run can reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiService {
    Kubernetes,
    Sts,
    Eks,
    Iam,
    Ec2,
    Ssm,
    Kms,
    Sqs,
    Events,
}

impl ApiService {
    /// `kubernetes`, or the IAM prefix of the AWS service.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiService::Kubernetes => "kubernetes",
            ApiService::Sts => "sts",
            ApiService::Eks => "eks",
            ApiService::Iam => "iam",
            ApiService::Ec2 => "ec2",
            ApiService::Ssm => "ssm",
            ApiService::Kms => "kms",
            ApiService::Sqs => "sqs",
            ApiService::Events => "events",
        }
    }

    /// The service of an IAM prefix; `None` for one karpdoctor never calls.
    pub fn from_iam_prefix(prefix: &str) -> Option<ApiService> {
        [
            ApiService::Sts,
            ApiService::Eks,
            ApiService::Iam,
            ApiService::Ec2,
            ApiService::Ssm,
            ApiService::Kms,
            ApiService::Sqs,
            ApiService::Events,
        ]
        .into_iter()
        .find(|s| s.as_str() == prefix)
    }
}

impl fmt::Display for ApiService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FactKind {
    /// The service this kind's requests go to: Kubernetes, or the AWS service of its first
    /// operation.
    pub fn service(self) -> ApiService {
        match self.operations().first() {
            Some(ApiOp::Aws { service, .. }) => {
                ApiService::from_iam_prefix(service).unwrap_or(ApiService::Kubernetes)
            }
            _ => ApiService::Kubernetes,
        }
    }
}

/// A fact key that carries the type its value decodes to (made by the constructors the
/// table declares, such as `FactKey::nodepools()`), so a reader cannot ask for a fact as the
/// wrong type.
pub struct Typed<T> {
    key: FactKey,
    value: PhantomData<fn() -> T>,
}

impl<T> Typed<T> {
    fn new(key: FactKey) -> Self {
        Typed {
            key,
            value: PhantomData,
        }
    }

    pub fn key(&self) -> &FactKey {
        &self.key
    }

    pub fn into_key(self) -> FactKey {
        self.key
    }
}

/// A decoded fact value shared by every reader.
pub type Shared = Arc<dyn Any + Send + Sync>;

/// A fact's typed value from what the backend handed over, checked against its shape.
fn decode<T: DeserializeOwned + Send + Sync + 'static>(
    key: &FactKey,
    stored: Stored,
) -> Result<Shared, FactError> {
    let malformed = |e: serde_json::Error| FactError::Malformed {
        message: format!("{key}: {e}"),
    };
    let typed: T = match stored {
        // Events check their own shape while they decode (a list of objects) and keep the
        // newest 200 of however many: read straight from a bundle's text, the list is never
        // built as a tree (at 50,000 events that tree is most of a replay's memory).
        Stored::Text(text) if matches!(key.kind(), FactKind::Events | FactKind::EventsByReason) => {
            serde_json::from_str(text.get()).map_err(malformed)?
        }
        // A list judged on its text decodes straight into its type, never as a tree first.
        Stored::Text(text) if key.kind().shape().is_list() => {
            if let Some(verdict) = key.kind().shape().check_text(key, text.get()) {
                verdict?;
            }
            serde_json::from_str(text.get()).map_err(malformed)?
        }
        stored => {
            let value = stored.into_value().map_err(malformed)?;
            key.kind().shape().check(key, &value)?;
            serde_json::from_value(value).map_err(malformed)?
        }
    };
    Ok(Arc::new(typed))
}

/// A fact's value in a replay: the JSON text as the file had it, parsed when a check first asks
/// (text takes several times less memory than the tree parsed from it), or a tree already in memory.
#[derive(Clone, Debug)]
pub enum Stored {
    Text(Box<RawValue>),
    Tree(Value),
}

impl Stored {
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Stored::Text(raw) => serde_json::from_str(raw.get()),
            Stored::Tree(v) => Ok(v),
        }
    }
}

impl<'de> Deserialize<'de> for Stored {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(Stored::Text)
    }
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Stored::Text(raw) => raw.serialize(s),
            Stored::Tree(v) => v.serialize(s),
        }
    }
}
