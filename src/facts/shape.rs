//! What a fact's JSON must look like before it is decoded.
//!
//! k8s-openapi and serde defaults fill missing fields, so garbage would decode into
//! plausible-looking empty values; a check must say "could not judge" about garbage instead
//! of judging an empty object. Each fact declares its shape in the facts table.

use serde_json::Value;

use super::{FactError, FactKey};

/// The JSON type of a required identity field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Str,
    Bool,
}

/// A fact's expected shape. `what` completes "expected …" in the error message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A list of Kubernetes objects, each with `metadata.name`.
    Objects,
    /// A list of JSON objects (checked further while decoding).
    Items,
    /// One Kubernetes object with `metadata.name`, or `null` when it does not exist.
    NamedOrNull,
    /// Text, or `null` when there is none (a log that does not exist).
    TextOrNull,
    /// A list whose items all carry the string field `field` (their identity).
    ListOf {
        field: &'static str,
        what: &'static str,
    },
    /// A list of strings.
    Strings { what: &'static str },
    /// An object of strings or `null`s by name.
    StringMap { what: &'static str },
    /// An object with the field `field` of type `ty`; with `nullable`, `null` is fine too.
    Field {
        field: &'static str,
        ty: FieldType,
        nullable: bool,
        what: &'static str,
    },
    /// Whatever decodes: the value type has no serde defaults, so decoding is the check.
    Decoded,
}

impl Shape {
    /// Checks `value` against the shape; the error names the fact.
    pub fn check(self, key: &FactKey, value: &Value) -> Result<(), FactError> {
        let named = |v: &Value| v.pointer("/metadata/name").is_some_and(Value::is_string);
        let problem = match self {
            Shape::Objects => match value.as_array() {
                None => Some("expected a list of objects".to_string()),
                Some(items) if !items.iter().all(named) => {
                    Some("a listed object has no metadata.name".to_string())
                }
                Some(_) => None,
            },
            Shape::Items => match value.as_array() {
                None => Some("expected a list of objects".to_string()),
                Some(items) if !items.iter().all(Value::is_object) => {
                    Some("a listed item is not an object".to_string())
                }
                Some(_) => None,
            },
            Shape::NamedOrNull => (!(value.is_null() || named(value)))
                .then(|| "expected an object with metadata.name".to_string()),
            Shape::TextOrNull => {
                (!(value.is_null() || value.is_string())).then(|| "expected log text".to_string())
            }
            Shape::ListOf { field, what } => {
                let fits = value.as_array().is_some_and(|items| {
                    items
                        .iter()
                        .all(|i| i.get(field).is_some_and(Value::is_string))
                });
                (!fits).then(|| format!("expected a list of {what}"))
            }
            Shape::Strings { what } => {
                let fits = value
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_string));
                (!fits).then(|| format!("expected {what}"))
            }
            Shape::StringMap { what } => {
                let fits = value
                    .as_object()
                    .is_some_and(|m| m.values().all(|v| v.is_null() || v.is_string()));
                (!fits).then(|| format!("expected {what}"))
            }
            Shape::Field {
                field,
                ty,
                nullable,
                what,
            } => {
                let typed = |v: &Value| match ty {
                    FieldType::Str => v.is_string(),
                    FieldType::Bool => v.is_boolean(),
                };
                let fits = (nullable && value.is_null()) || value.get(field).is_some_and(typed);
                (!fits).then(|| format!("expected {what}"))
            }
            Shape::Decoded => None,
        };
        match problem {
            None => Ok(()),
            Some(what) => Err(FactError::Malformed {
                message: format!("{key}: {what}"),
            }),
        }
    }
}
