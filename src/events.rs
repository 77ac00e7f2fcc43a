//! Kubernetes events, read from both APIs (`v1` and `events.k8s.io/v1`) and folded into one
//! shape. The two APIs are views of the same objects, so an event listed through both is one
//! event (same uid). Counts and timestamps come from reporters karpdoctor does not control:
//! absurd values are clamped, unparsable ones dropped, never trusted to be sane.

use std::borrow::Borrow;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::sanitize::clip;

/// At most this many events are kept per fact, newest first.
pub const MAX_KEPT: usize = 200;

/// One event, whichever API it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub uid: String,
    pub namespace: String,
    /// The kind and name of the object the event is about.
    pub kind: String,
    pub name: String,
    pub reason: String,
    pub message: String,
    /// `Normal` or `Warning`.
    pub kind_of_event: String,
    /// How many times it happened (at least 1).
    pub count: u64,
    /// When it last happened, if the reporter said so in a form that parses.
    pub last_seen: Option<jiff::Timestamp>,
    /// The component that reported it (`karpenter`, `default-scheduler`, …).
    pub reporter: String,
    /// The host of the reporter: for the kubelet, the node the pod is on (`source.host`, which
    /// the events.k8s.io view shows as `deprecatedSource.host`; `reportingInstance` is read
    /// last, for reporters that set only that). Empty when not said.
    pub host: String,
}

impl Event {
    pub fn is_warning(&self) -> bool {
        self.kind_of_event == "Warning"
    }
}

/// The events of one fact: deduplicated, newest first, at most [`MAX_KEPT`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events(pub Vec<Event>);

impl Events {
    /// Events about one object.
    pub fn about<'a>(&'a self, kind: &'a str, name: &'a str) -> impl Iterator<Item = &'a Event> {
        self.0
            .iter()
            .filter(move |e| e.kind == kind && e.name == name)
    }

    /// Newest first, one per event, at most [`MAX_KEPT`]. Folding part of a list and then the
    /// rest with what was kept gives what folding it all at once does (what is dropped is
    /// below 200 others that stay), which is how a long list is read in bounded memory.
    fn fold<T: Borrow<Event>>(mut events: Vec<T>) -> Vec<T> {
        // Events without a usable time sort last, then by a stable key so the order never
        // depends on which API listed an event first.
        events.sort_by(|a, b| {
            let (a, b) = (a.borrow(), b.borrow());
            b.last_seen
                .cmp(&a.last_seen)
                .then_with(|| a.uid.cmp(&b.uid))
                .then_with(|| a.reason.cmp(&b.reason))
                .then_with(|| a.message.cmp(&b.message))
        });
        let mut seen = std::collections::HashSet::new();
        let mut kept = Vec::with_capacity(MAX_KEPT.min(events.len()));
        for item in events {
            if kept.len() == MAX_KEPT {
                break;
            }
            let e = item.borrow();
            let key = if e.uid.is_empty() {
                format!(
                    "{}\u{0}{}\u{0}{}\u{0}{}",
                    e.kind, e.name, e.reason, e.message
                )
            } else {
                e.uid.clone()
            };
            if seen.insert(key) {
                kept.push(item);
            }
        }
        kept
    }
}

impl From<Vec<Value>> for Events {
    fn from(raw: Vec<Value>) -> Self {
        Events(Events::fold(raw.iter().filter_map(normalise).collect()))
    }
}

/// A list is folded whenever this many events (or twice what the last fold kept) have been
/// read, so a fact of 200,000 events never holds more than a few thousand.
const FOLD_EVERY: usize = 2048;

/// Reads an events list element by element and folds it as it goes: each element keeps only
/// the fields [`normalise`] reads (`managedFields`, annotations and the rest are skipped, never
/// copied), and what the fold drops is dropped while reading, so 200,000 events cost a few
/// thousand small objects at a time, never the whole list.
fn read_events<'de, D: Deserializer<'de>>(
    d: D,
    fold: fn(Vec<Event>) -> Vec<Event>,
) -> Result<Vec<Event>, D::Error> {
    struct List(fn(Vec<Event>) -> Vec<Event>);
    impl<'de> Visitor<'de> for List {
        type Value = Vec<Event>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of events")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Event>, A::Error> {
            let mut events = Vec::new();
            let mut fold_at = FOLD_EVERY;
            while let Some(Element(e)) = seq.next_element()? {
                events.extend(e);
                if events.len() >= fold_at {
                    events = (self.0)(events);
                    fold_at = (2 * events.len()).max(FOLD_EVERY);
                }
            }
            Ok((self.0)(events))
        }
    }
    d.deserialize_seq(List(fold))
}

impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read_events(d, Events::fold::<Event>).map(Events)
    }
}

/// How an events fact is folded: the newest overall ([`Events`]) or the newest per object
/// ([`Latest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    Newest,
    PerObject,
}

/// An event with where its text is in the list.
struct Placed(Event, usize);

impl Borrow<Event> for Placed {
    fn borrow(&self) -> &Event {
        &self.0
    }
}

/// The text of only the events a fold keeps, in its order: decoding it gives what decoding the
/// whole list gives (a fold of what a fold kept changes nothing), so a replay holds 200 events
/// instead of a recording's 200,000 until a check reads them. `None` when the list does not
/// read as events, so that the decode reports it as it would have.
pub fn keep_only_folded(list: &RawValue, fold: Fold) -> Option<Box<RawValue>> {
    let fold = match fold {
        Fold::Newest => Events::fold::<Placed>,
        Fold::PerObject => Latest::fold::<Placed>,
    };
    let items: Vec<&RawValue> = serde_json::from_str(list.get()).ok()?;
    let mut placed = Vec::new();
    let mut fold_at = FOLD_EVERY;
    for (at, item) in items.iter().enumerate() {
        let Element(event) = serde_json::from_str(item.get()).ok()?;
        placed.extend(event.map(|e| Placed(e, at)));
        if placed.len() >= fold_at {
            placed = fold(placed);
            fold_at = (2 * placed.len()).max(FOLD_EVERY);
        }
    }
    let mut text = String::from("[");
    for (n, Placed(_, at)) in fold(placed).into_iter().enumerate() {
        if n > 0 {
            text.push(',');
        }
        text.push_str(items[at].get());
    }
    text.push(']');
    RawValue::from_string(text).ok()
}

/// Events of one reason: the newest about each object, with no cap on how many objects. One
/// reason can concern thousands of objects (Karpenter's `Nominated` for every pending pod),
/// and each object's latest must be kept, not only the newest 200 overall.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latest(pub Events);

impl Latest {
    /// The newest per object; like [`Events::fold`], folding in parts gives the same result.
    fn fold<T: Borrow<Event>>(mut events: Vec<T>) -> Vec<T> {
        events.sort_by(|a, b| {
            let (a, b) = (a.borrow(), b.borrow());
            b.last_seen
                .cmp(&a.last_seen)
                .then_with(|| a.uid.cmp(&b.uid))
        });
        let mut seen = std::collections::HashSet::new();
        events.retain(|e| {
            let e = e.borrow();
            seen.insert((e.kind.clone(), e.namespace.clone(), e.name.clone()))
        });
        events
    }
}

impl From<Vec<Value>> for Latest {
    fn from(raw: Vec<Value>) -> Self {
        Latest(Events(Latest::fold(
            raw.iter().filter_map(normalise).collect(),
        )))
    }
}

impl<'de> Deserialize<'de> for Latest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read_events(d, Latest::fold::<Event>).map(|e| Latest(Events(e)))
    }
}

/// The top-level fields of an event that [`normalise`] reads, in either API.
const READ: &[&str] = &[
    "apiVersion",
    "metadata",
    "regarding",
    "involvedObject",
    "note",
    "message",
    "reportingController",
    "reportingComponent",
    "reportingInstance",
    "deprecatedSource",
    "source",
    "reason",
    "series",
    "count",
    "deprecatedCount",
    "lastTimestamp",
    "deprecatedLastTimestamp",
    "eventTime",
    "firstTimestamp",
    "type",
];

/// One element of an events list: an event, or nothing for an object that is not one. Anything
/// but an object is an error, as the shape check of every other list fact makes it.
struct Element(Option<Event>);

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct One;
        impl<'de> Visitor<'de> for One {
            type Value = Element;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an event object (a listed item is not an object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Element, A::Error> {
                let mut kept = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if READ.contains(&key.as_str()) {
                        kept.insert(key, map.next_value()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Element(normalise(&Value::Object(kept))))
            }
        }
        d.deserialize_map(One)
    }
}

/// Longest message kept: events can carry whole error chains.
const MAX_MESSAGE: usize = 1000;

/// One raw event of either API; `None` for objects that are not events.
pub fn normalise(v: &Value) -> Option<Event> {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let newer = v.get("regarding").is_some_and(Value::is_object)
        || s("/apiVersion").starts_with("events.k8s.io/");
    let (kind, name, message, reporter) = if newer {
        (
            s("/regarding/kind"),
            s("/regarding/name"),
            s("/note"),
            first_non_empty(&[s("/reportingController"), s("/deprecatedSource/component")]),
        )
    } else {
        (
            s("/involvedObject/kind"),
            s("/involvedObject/name"),
            s("/message"),
            first_non_empty(&[s("/source/component"), s("/reportingComponent")]),
        )
    };
    if kind.is_empty() && name.is_empty() && s("/reason").is_empty() {
        return None;
    }
    let count = ["/series/count", "/count", "/deprecatedCount"]
        .iter()
        .filter_map(|p| v.pointer(p).and_then(Value::as_i64))
        .max()
        .unwrap_or(1)
        .max(1) as u64;
    let last_seen = [
        "/series/lastObservedTime",
        "/lastTimestamp",
        "/deprecatedLastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .filter_map(|p| v.pointer(p).and_then(Value::as_str))
    .find_map(|t| t.parse::<jiff::Timestamp>().ok());
    Some(Event {
        uid: s("/metadata/uid").to_string(),
        namespace: s("/metadata/namespace").to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        reason: s("/reason").to_string(),
        message: clip(message, MAX_MESSAGE),
        kind_of_event: s("/type").to_string(),
        count,
        last_seen,
        reporter: reporter.to_string(),
        host: first_non_empty(&[
            s("/source/host"),
            s("/deprecatedSource/host"),
            s("/reportingInstance"),
        ])
        .to_string(),
    })
}

fn first_non_empty<'a>(options: &[&'a str]) -> &'a str {
    options
        .iter()
        .copied()
        .find(|o| !o.is_empty())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn latest_keeps_the_newest_per_object_past_the_cap() {
        let nominated = |pod: &str, claim: &str, at: &str| {
            json!({"apiVersion":"v1","kind":"Event","metadata":{"uid":format!("{pod}{claim}"),"namespace":"shop"},
                "involvedObject":{"kind":"Pod","name":pod,"namespace":"shop"},"reason":"Nominated",
                "message":format!("Pod should schedule on: nodeclaim/{claim}"),"type":"Normal",
                "lastTimestamp":at,"source":{"component":"karpenter"}})
        };
        let mut raw: Vec<Value> = (0..MAX_KEPT + 50)
            .map(|i| nominated(&format!("web-{i}"), "default-a", "2026-11-23T09:00:00Z"))
            .collect();
        raw.push(nominated("web-0", "default-b", "2026-11-23T09:05:00Z"));
        let text = serde_json::to_string(&raw).unwrap();
        let latest: Latest = serde_json::from_str(&text).unwrap();
        assert_eq!(latest.0.0.len(), MAX_KEPT + 50, "one per pod, uncapped");
        let web0: Vec<&Event> = latest.0.about("Pod", "web-0").collect();
        assert_eq!(web0.len(), 1);
        assert!(web0[0].message.ends_with("nodeclaim/default-b"), "{web0:?}");
        assert_eq!(Latest::from(raw), latest);
    }

    #[test]
    fn both_apis_fold_into_one_event() {
        let core = json!({"apiVersion":"v1","kind":"Event","metadata":{"uid":"u1","namespace":"default"},
            "involvedObject":{"kind":"NodeClaim","name":"default-x"},"reason":"InsufficientCapacityError",
            "message":"NodeClaim default-x event: creating instance, insufficient capacity","type":"Warning","count":3,
            "lastTimestamp":"2026-11-23T09:00:00Z","source":{"component":"karpenter"}});
        let newer = json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"uid":"u1","namespace":"default"},
            "regarding":{"kind":"NodeClaim","name":"default-x"},"reason":"InsufficientCapacityError",
            "note":"NodeClaim default-x event: creating instance, insufficient capacity","type":"Warning",
            "deprecatedCount":3,"deprecatedLastTimestamp":"2026-11-23T09:00:00Z","reportingController":"karpenter"});
        let events = Events::from(vec![core, newer]);
        assert_eq!(events.0.len(), 1);
        let e = &events.0[0];
        assert_eq!(
            (e.kind.as_str(), e.name.as_str(), e.count),
            ("NodeClaim", "default-x", 3)
        );
        assert_eq!(e.reporter, "karpenter");
        assert!(e.is_warning());
    }

    #[test]
    fn the_kubelet_names_its_node_in_either_api() {
        let node = "ip-10-0-1-2.us-west-2.compute.internal";
        let core = json!({"apiVersion":"v1","kind":"Event","metadata":{"uid":"k1","namespace":"shop"},
            "involvedObject":{"kind":"Pod","name":"web-1"},"reason":"FailedCreatePodSandBox","message":"m","type":"Warning",
            "source":{"component":"kubelet","host":node}});
        let newer = json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"uid":"k2","namespace":"shop"},
            "regarding":{"kind":"Pod","name":"web-2"},"reason":"FailedCreatePodSandBox","note":"m","type":"Warning",
            "reportingController":"kubelet","reportingInstance":node});
        let events = Events::from(vec![core, newer]);
        assert!(events.0.iter().all(|e| e.host == node), "{events:?}");
    }

    #[test]
    fn newest_first_and_absurd_values_are_tamed() {
        let ev = |uid: &str, t: &str, count: i64| {
            json!({"metadata":{"uid":uid},"involvedObject":{"kind":"NodeClaim","name":"a"},
            "reason":"R","message":"m","count":count,"lastTimestamp":t})
        };
        let events = Events::from(vec![
            ev("old", "2026-11-23T08:00:00Z", -5),
            ev("garbage-time", "yesterday-ish", i64::MAX),
            ev("new", "2026-11-23T09:00:00Z", 2),
        ]);
        let uids: Vec<&str> = events.0.iter().map(|e| e.uid.as_str()).collect();
        assert_eq!(uids, ["new", "old", "garbage-time"]);
        assert_eq!(
            events.0[1].count, 1,
            "a negative count is at least one occurrence"
        );
        assert_eq!(events.0[2].count, i64::MAX as u64);
        assert_eq!(events.0[2].last_seen, None);
    }

    #[test]
    fn reading_the_list_directly_agrees_with_folding_values() {
        let raw = vec![
            json!({"apiVersion":"v1","metadata":{"uid":"u1","managedFields":[{"manager":"k"}]},
                "involvedObject":{"kind":"NodeClaim","name":"a"},"reason":"R","message":"m",
                "lastTimestamp":"2026-11-23T09:00:00Z","annotations":{"x":"y"}}),
            json!({"apiVersion":"events.k8s.io/v1","metadata":{"uid":"u1"},
                "regarding":{"kind":"NodeClaim","name":"a"},"reason":"R","note":"m",
                "deprecatedLastTimestamp":"2026-11-23T09:00:00Z"}),
            json!({"metadata":{"uid":"u2"},"involvedObject":{"kind":"Node","name":"n"},
                "reason":"S","count":"not a number"}),
            json!({"metadata":{"name":"not-an-event"}}),
        ];
        let direct: Events = serde_json::from_value(Value::Array(raw.clone())).unwrap();
        assert_eq!(direct, Events::from(raw.clone()));
        assert_eq!(direct.0.len(), 2);
        let text: Events = serde_json::from_str(&Value::Array(raw).to_string()).unwrap();
        assert_eq!(text, direct);
        for garbage in [r#"[{"reason": "R"}, 7]"#, r#"[null]"#, r#"{"items": []}"#] {
            assert!(
                serde_json::from_str::<Events>(garbage).is_err(),
                "{garbage}"
            );
        }
    }

    #[test]
    fn non_events_are_dropped_and_the_list_is_bounded() {
        let mut raw = vec![json!({"metadata":{"name":"x"}}), json!("not an object")];
        raw.extend((0..MAX_KEPT + 50).map(|i| {
            json!({"metadata":{"uid":format!("u{i}")},"involvedObject":{"kind":"Pod","name":"p"},"reason":"R"})
        }));
        let events = Events::from(raw);
        assert_eq!(events.0.len(), MAX_KEPT);
    }

    #[test]
    fn folding_while_reading_keeps_what_folding_everything_keeps() {
        // Several folds' worth of events, with duplicates across the fold boundaries (the same
        // uid listed through both APIs far apart), ties on the time, and times out of order.
        let n = 3 * FOLD_EVERY + 17;
        let raw: Vec<Value> = (0..n)
            .map(|i| {
                let uid = format!("u{}", i % (n / 2));
                let minute = (i * 7919) % 600;
                let pod = format!("p{}", i % 900);
                json!({"metadata":{"uid":uid},"involvedObject":{"kind":"Pod","name":pod,"namespace":"a"},
                    "reason":"R","message":format!("m{}", i % 3),
                    "lastTimestamp":format!("2026-11-23T{:02}:{:02}:00Z", minute / 60, minute % 60)})
            })
            .collect();
        let text = Value::Array(raw.clone()).to_string();
        let read: Events = serde_json::from_str(&text).unwrap();
        assert_eq!(read, Events::from(raw.clone()));
        assert_eq!(read.0.len(), MAX_KEPT);
        let latest: Latest = serde_json::from_str(&text).unwrap();
        assert_eq!(latest, Latest::from(raw));
        assert_eq!(latest.0.0.len(), 900);
    }

    #[test]
    fn a_list_kept_to_what_its_fold_keeps_decodes_the_same() {
        let n = 2 * FOLD_EVERY + 5;
        let raw: Vec<Value> = (0..n)
            .map(|i| {
                json!({"metadata":{"uid":format!("u{}", i % 1500),"managedFields":[]},
                    "involvedObject":{"kind":"NodeClaim","name":format!("c{}", i % 300)},
                    "reason":"R","message":"m","lastTimestamp":format!("2026-11-23T09:{:02}:00Z", (i * 31) % 60)})
            })
            .chain([json!({"metadata":{"name":"not an event"}})])
            .collect();
        let list = RawValue::from_string(Value::Array(raw).to_string()).unwrap();
        let kept = keep_only_folded(&list, Fold::Newest).unwrap();
        assert!(kept.get().len() < list.get().len() / 10);
        let all: Events = serde_json::from_str(list.get()).unwrap();
        assert_eq!(serde_json::from_str::<Events>(kept.get()).unwrap(), all);
        let kept = keep_only_folded(&list, Fold::PerObject).unwrap();
        let all: Latest = serde_json::from_str(list.get()).unwrap();
        assert_eq!(serde_json::from_str::<Latest>(kept.get()).unwrap(), all);
        assert_eq!(all.0.0.len(), 300);

        let garbage = RawValue::from_string(r#"[{"reason": "R"}, 7]"#.to_string()).unwrap();
        assert!(keep_only_folded(&garbage, Fold::Newest).is_none());
    }
}
