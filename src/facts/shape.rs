//! What a fact's JSON must look like before it is decoded.
//!
//! k8s-openapi and serde defaults fill missing fields, so garbage would decode into
//! plausible-looking empty values; a check must say "could not judge" about garbage instead
//! of judging an empty object. Each fact declares its shape in the facts table.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
        malformed(key, problem)
    }

    /// Whether [`Shape::check_text`] can judge this shape: the list shapes, which are the
    /// facts that grow with the cluster. The others are single small objects, judged as trees.
    pub fn is_list(self) -> bool {
        matches!(
            self,
            Shape::Objects | Shape::Items | Shape::ListOf { .. } | Shape::Strings { .. }
        )
    }

    /// The same judgement as [`Shape::check`] for a list shape, made in one pass over the JSON
    /// text with nothing kept but the verdict: a list of 20,000 NodeClaims parsed as a tree
    /// first takes about ten times its text. `None` for a shape that is not a list.
    pub fn check_text(self, key: &FactKey, text: &str) -> Option<Result<(), FactError>> {
        static STRING: Rule = Rule::String;
        static NAMED: Rule = Rule::Field("metadata", &Rule::Field("name", &Rule::String));
        let (item, when_bad, when_not_list) = match self {
            Shape::Objects => (
                NAMED,
                "a listed object has no metadata.name".to_string(),
                "expected a list of objects".to_string(),
            ),
            Shape::Items => (
                Rule::Object,
                "a listed item is not an object".to_string(),
                "expected a list of objects".to_string(),
            ),
            Shape::ListOf { field, what } => {
                let what = format!("expected a list of {what}");
                (Rule::Field(field, &STRING), what.clone(), what)
            }
            Shape::Strings { what } => (
                Rule::String,
                format!("expected {what}"),
                format!("expected {what}"),
            ),
            _ => return None,
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let verdict = match ListSeed(&item).deserialize(&mut de) {
            Ok(None) => Some(when_not_list),
            Ok(Some(false)) => Some(when_bad),
            Ok(Some(true)) => None,
            // The text is a stored value, already known to be JSON.
            Err(e) => Some(e.to_string()),
        };
        Some(malformed(key, verdict))
    }
}

fn malformed(key: &FactKey, problem: Option<String>) -> Result<(), FactError> {
    match problem {
        None => Ok(()),
        Some(what) => Err(FactError::Malformed {
            message: format!("{key}: {what}"),
        }),
    }
}

/// What one listed item must be, for the text walk.
#[derive(Clone, Copy)]
enum Rule {
    String,
    Object,
    /// An object whose field (the last of that name, as a parsed tree keeps it) fits the rule.
    Field(&'static str, &'static Rule),
}

/// A list whose items all fit the rule: `None` when the value is not a list.
struct ListSeed<'r>(&'r Rule);

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = Option<bool>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<bool>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = Option<bool>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<bool>, A::Error> {
        let mut all = true;
        while let Some(fits) = seq.next_element_seed(RuleSeed(self.0))? {
            all &= fits;
        }
        Ok(Some(all))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<bool>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<bool>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<bool>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<bool>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<bool>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<bool>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<bool>, E> {
        Ok(None)
    }
}

/// One value fits the rule.
struct RuleSeed<'r>(&'r Rule);

impl<'de> DeserializeSeed<'de> for RuleSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RuleSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut fits = false;
        while let Some(wanted) = map.next_key_seed(KeyIs(self.0))? {
            match (wanted, self.0) {
                (true, Rule::Field(_, inner)) => fits = map.next_value_seed(RuleSeed(inner))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fits || matches!(self.0, Rule::Object))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(matches!(self.0, Rule::String))
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// A map key: whether it is the field the rule looks for.
struct KeyIs<'r>(&'r Rule);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(matches!(self.0, Rule::Field(field, _) if *field == key))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const LISTS: [Shape; 4] = [
        Shape::Objects,
        Shape::Items,
        Shape::ListOf {
            field: "subnetId",
            what: "subnets with ids",
        },
        Shape::Strings { what: "names" },
    ];

    fn same_verdict(value: &Value) {
        for shape in LISTS {
            let key = FactKey::NodePools;
            let text = shape.check_text(&key, &value.to_string());
            assert_eq!(text, Some(shape.check(&key, value)), "{shape:?} on {value}");
        }
    }

    #[test]
    fn the_text_walk_judges_as_the_tree_does() {
        for value in [
            json!([]),
            json!({}),
            json!(null),
            json!("x"),
            json!(3),
            json!([{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "subnetId": "s"}]),
            json!([{"metadata": {"name": 1}}]),
            json!([{"metadata": {}}]),
            json!([{"metadata": "a"}]),
            json!([{"subnetId": "s"}, {"subnetId": null}]),
            json!([{"subnetId": "s"}]),
            json!(["a", "b"]),
            json!(["a", 1]),
            json!([[], {}]),
            json!([{"spec": {"metadata": {"name": "nested, not the item's"}}}]),
        ] {
            same_verdict(&value);
        }
    }

    #[test]
    fn a_repeated_field_counts_as_its_last_copy_as_a_tree_keeps_it() {
        let key = FactKey::NodePools;
        let last_bad = r#"[{"metadata": {"name": "a", "name": 1}}]"#;
        let last_good = r#"[{"metadata": {"name": 1, "name": "a"}}]"#;
        for text in [last_bad, last_good] {
            let tree: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                Shape::Objects.check_text(&key, text),
                Some(Shape::Objects.check(&key, &tree))
            );
        }
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            prop_oneof![Just("name"), Just("metadata"), Just("subnetId"), Just("x")]
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![Just("name"), Just("metadata"), Just("subnetId"), Just("a")],
                        inner
                    ),
                    0..4
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_text_walk_agrees_on_any_value(value in arbitrary_json()) {
            same_verdict(&value);
        }
    }
}
