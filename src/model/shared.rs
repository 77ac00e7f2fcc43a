//! Strings held once for the whole run.
//!
//! A cluster of 20,000 nodes repeats a few hundred distinct label keys and values, condition
//! types, statuses and reasons millions of times: every claim carries the same twenty
//! well-known label keys, most of the same values, and the same five conditions. Held as
//! `String`s they were most of what karpdoctor kept of a large cluster (docs/performance.md,
//! "Memory"). A [`Shared`] is a pointer to the one copy; [`Labels`] is a sorted slice of them,
//! itself held once for all equal maps.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Every string shared so far. It only grows: what it holds is what the run's objects hold,
/// which live until the report is written.
static POOL: LazyLock<Mutex<HashSet<Arc<str>>>> = LazyLock::new(Mutex::default);

/// An immutable string, equal strings sharing one allocation.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shared(Arc<str>);

impl Shared {
    pub fn new(s: &str) -> Shared {
        // A poisoned lock only means another thread panicked while inserting; the set is
        // still a set.
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = pool.get(s) {
            return Shared(Arc::clone(held));
        }
        let new: Arc<str> = Arc::from(s);
        pool.insert(Arc::clone(&new));
        Shared(new)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new("")
    }
}

impl std::ops::Deref for Shared {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Shared {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Shared {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Shared {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Shared {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Shared {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl From<&str> for Shared {
    fn from(s: &str) -> Self {
        Shared::new(s)
    }
}

impl From<Shared> for String {
    fn from(s: Shared) -> Self {
        s.0.to_string()
    }
}

impl From<Shared> for serde_json::Value {
    fn from(s: Shared) -> Self {
        serde_json::Value::String(s.0.to_string())
    }
}

impl fmt::Display for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Shared {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Shared {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Shared;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Shared, E> {
                Ok(Shared::new(s))
            }
        }
        d.deserialize_str(V)
    }
}

/// Label sets seen so far, each held once: every claim of a NodePool launched on one instance
/// type in one zone carries the same twenty-odd labels, and every node of a type the same
/// capacity and allocatable.
static SETS: LazyLock<Mutex<HashSet<Pairs>>> = LazyLock::new(Mutex::default);

/// A map's entries, sorted by key, as held.
type Pairs = Arc<[(Shared, Shared)]>;

/// A label map (or any string map: annotations, quantities), sorted by key; equal maps share
/// one allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct Labels(Pairs);

impl Default for Labels {
    fn default() -> Self {
        Labels::shared(Vec::new())
    }
}

impl Labels {
    /// `pairs` sorted by key with the last of equal keys kept (as JSON decoding keeps it), held
    /// once with every equal map.
    fn shared(mut pairs: Vec<(Shared, Shared)>) -> Labels {
        // Stable: among equal keys the last one stays last, and is the one kept.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.reverse();
        pairs.dedup_by(|a, b| a.0 == b.0);
        pairs.reverse();
        let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = sets.get(pairs.as_slice()) {
            return Labels(Arc::clone(held));
        }
        let new: Pairs = Arc::from(pairs);
        sets.insert(Arc::clone(&new));
        Labels(new)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// As k8s-openapi's objects hold labels, for code that takes theirs.
    pub fn to_map(&self) -> std::collections::BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Labels {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(iter: I) -> Self {
        Labels::shared(
            iter.into_iter()
                .map(|(k, v)| (Shared::new(k), Shared::new(v)))
                .collect(),
        )
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Labels;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
                let mut pairs: Vec<(Shared, Shared)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<Shared, Text>()? {
                    pairs.push((k, v.0));
                }
                Ok(Labels::shared(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

/// A map's value: a string, or a number read as the text JSON wrote it. Quantities are strings
/// in the API, but a hand-written bundle may say `"pods": 110`, and `status.capacity` is read
/// either way.
struct Text(Shared);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Text, E> {
                Ok(Text(Shared::new(s)))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Text, E> {
                Ok(Text(Shared::new(&n.to_string())))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Text, E> {
                Ok(Text(Shared::new(&n.to_string())))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Text, E> {
                Ok(Text(Shared::new(&n.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn equal_strings_share_one_allocation() {
        let a = Shared::new("topology.kubernetes.io/zone");
        let b: Shared = serde_json::from_str("\"topology.kubernetes.io/zone\"").unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "topology.kubernetes.io/zone");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            "\"topology.kubernetes.io/zone\""
        );
    }

    #[test]
    fn labels_read_like_a_map_and_the_last_duplicate_wins() {
        let l: Labels = serde_json::from_str(r#"{"b": "2", "a": "1", "b": "3"}"#).unwrap();
        assert_eq!(l.get("a"), Some("1"));
        assert_eq!(l.get("b"), Some("3"));
        assert_eq!(l.get("c"), None);
        assert_eq!(l.len(), 2);
        assert_eq!(serde_json::to_string(&l).unwrap(), r#"{"a":"1","b":"3"}"#);
        let q: Labels = serde_json::from_str(r#"{"pods": 110, "cpu": "1930m"}"#).unwrap();
        assert_eq!(q.get("pods"), Some("110"));
        assert!(serde_json::from_str::<Labels>(r#"{"a": null}"#).is_err());
        let m: Labels = [("b", "2"), ("a", "1")].into_iter().collect();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
        // Equal maps, however written, are one allocation.
        let again: Labels = serde_json::from_str(r#"{"a": "1", "b": "2"}"#).unwrap();
        assert!(Arc::ptr_eq(&m.0, &again.0));
    }
}
