//! `data/karpenter-releases.json`, as serde reads it, and the questions an upgrade asks of it:
//! which Kubernetes minors a release accepts, which CRD versions it serves, which releases an
//! upgrade must pass through, and which to avoid. The file is recomputed from the tags by
//! `scripts/check_release_data.py`; every item applies to the releases `since..=until`.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::iam::reference::Version;

const DATA: &str = include_str!("../../data/karpenter-releases.json");

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    releases: Vec<String>,
    kubernetes: Vec<KubeRange>,
    crds: Vec<CrdState>,
    crd_chart_conversion: Vec<ChartConversion>,
    hops: Vec<Hop>,
    avoid: Vec<Avoid>,
    env: Vec<Named>,
    controller_env: Vec<Named>,
    feature_gates: Vec<Gate>,
}

/// How the karpenter-crd chart of a range of releases renders a CRD's conversion.
#[derive(Clone, Debug, Deserialize)]
struct ChartConversion {
    conversion: String,
    #[serde(flatten)]
    span: Span,
}

/// An environment variable the chart sets, or the controller reads, over a range of releases.
#[derive(Clone, Debug, Deserialize)]
struct Named {
    name: String,
    #[serde(flatten)]
    span: Span,
}

/// A feature gate and its default over a range of releases.
#[derive(Clone, Debug, Deserialize)]
struct Gate {
    name: String,
    #[serde(flatten)]
    span: Span,
    defaults: Vec<GateDefault>,
    /// The values key the chart renders the gate from, over the releases that render it.
    #[serde(default)]
    chart: Vec<Span>,
}

#[derive(Clone, Debug, Deserialize)]
struct GateDefault {
    since: String,
    value: bool,
}

/// A range of releases, both ends inclusive; no `until` runs to the newest release.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Span {
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
}

impl Span {
    fn holds(&self, v: Version) -> bool {
        let ok = |bound: &Option<String>, f: fn(Version, Version) -> bool| {
            bound
                .as_deref()
                .and_then(Version::parse)
                .is_none_or(|b| f(v, b))
        };
        ok(&self.since, |v, b| v >= b) && ok(&self.until, |v, b| v <= b)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KubeRange {
    #[serde(flatten)]
    span: Span,
    code: MinMax,
    #[serde(default)]
    docs: Option<MinMax>,
    #[serde(default)]
    out_of_range: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
struct MinMax {
    min: String,
    max: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrdState {
    crd: String,
    served: Vec<String>,
    #[serde(flatten)]
    span: Span,
}

/// An upgrade that must (or should) pass through a release on the way.
#[derive(Clone, Debug, Deserialize)]
pub struct Hop {
    pub from: Span,
    pub to: Span,
    pub via: Span,
    pub required: bool,
    pub reason: String,
    pub why: String,
}

/// A release the upstream guide or a known defect says not to run.
#[derive(Clone, Debug, Deserialize)]
pub struct Avoid {
    pub version: String,
    /// `upgrade-guide` (the guide says to skip it) or the defect's kind.
    pub reason: String,
    pub why: String,
}

fn data() -> &'static Data {
    static DATA_PARSED: OnceLock<Data> = OnceLock::new();
    // The file is compiled in and checked by the unit tests below: a parse failure is a
    // build defect, caught before release.
    DATA_PARSED.get_or_init(|| match serde_json::from_str(DATA) {
        Ok(d) => d,
        Err(_) => Data {
            releases: Vec::new(),
            kubernetes: Vec::new(),
            crds: Vec::new(),
            crd_chart_conversion: Vec::new(),
            hops: Vec::new(),
            avoid: Vec::new(),
            env: Vec::new(),
            controller_env: Vec::new(),
            feature_gates: Vec::new(),
        },
    })
}

/// The newest release the data covers.
pub fn newest() -> Option<Version> {
    data()
        .releases
        .iter()
        .filter_map(|r| Version::parse(r))
        .max()
}

/// The oldest release the data covers.
pub fn oldest() -> Option<Version> {
    data()
        .releases
        .iter()
        .filter_map(|r| Version::parse(r))
        .min()
}

/// Whether `v` is a release of the data (a tag that exists).
pub fn knows(v: Version) -> bool {
    data().releases.iter().any(|r| Version::parse(r) == Some(v))
}

/// The Kubernetes minors release `v`'s code accepts (`MinK8sVersion`..`MaxK8sVersion`), the
/// docs matrix's when it says otherwise, and what the controller does outside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeSupport {
    pub min: Minor,
    pub max: Minor,
    pub docs: Option<(Minor, Minor)>,
    /// `panic-at-start`, `reconcile-error` or `error-log`.
    pub out_of_range: String,
}

/// A Kubernetes minor of major 1, as `1.33`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Minor(pub u32);

impl Minor {
    /// Reads `1.33`, `v1.33`, `1.33.5-eks-…`.
    pub fn parse(text: &str) -> Option<Minor> {
        let mut parts = text.trim().trim_start_matches('v').split('.');
        (parts.next()? == "1").then_some(())?;
        let minor = parts.next()?;
        let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().map(Minor)
    }
}

impl std::fmt::Display for Minor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "1.{}", self.0)
    }
}

impl KubeSupport {
    pub fn accepts(&self, m: Minor) -> bool {
        self.min <= m && m <= self.max
    }
}

pub fn kubernetes(v: Version) -> Option<KubeSupport> {
    let r = data().kubernetes.iter().find(|r| r.span.holds(v))?;
    let docs = r
        .docs
        .as_ref()
        .and_then(|d| Some((Minor::parse(&d.min)?, Minor::parse(&d.max)?)));
    Some(KubeSupport {
        min: Minor::parse(&r.code.min)?,
        max: Minor::parse(&r.code.max)?,
        docs: docs.filter(|(lo, hi)| {
            Some(*lo) != Minor::parse(&r.code.min) || Some(*hi) != Minor::parse(&r.code.max)
        }),
        out_of_range: r.out_of_range.clone().unwrap_or_default(),
    })
}

/// The oldest release at or after `from` whose code accepts `minor`; `None` when none does.
pub fn first_supporting(from: Version, minor: Minor) -> Option<Version> {
    let mut releases: Vec<Version> = data()
        .releases
        .iter()
        .filter_map(|r| Version::parse(r))
        .filter(|r| *r >= from)
        .collect();
    releases.sort();
    releases
        .into_iter()
        .find(|r| kubernetes(*r).is_some_and(|k| k.accepts(minor)))
}

/// The API versions release `v` serves for `crd`; `None` when the release does not ship it.
pub fn served(crd: &str, v: Version) -> Option<Vec<String>> {
    data()
        .crds
        .iter()
        .find(|c| c.crd == crd && c.span.holds(v))
        .map(|c| c.served.clone())
}

/// The feature gates whose chart rendering starts after `from` and by `to`: values reused
/// from `from`'s chart lack them, and the chart at `to` renders them empty (`NodeOverlay=`),
/// which the controller refuses at start (docs/upgrade.md §2.3).
pub fn chart_gates_added(from: Version, to: Version) -> Vec<String> {
    data()
        .feature_gates
        .iter()
        .filter(|g| {
            g.chart.iter().any(|c| {
                c.since
                    .as_deref()
                    .and_then(Version::parse)
                    .is_some_and(|since| from < since && since <= to)
            })
        })
        .map(|g| g.name.clone())
        .collect()
}

/// Whether release `v`'s karpenter-crd chart renders a conversion webhook: its `webhook.*`
/// values must then name the controller's Service (0.37.1–1.0.14).
pub fn crd_chart_webhook(v: Version) -> bool {
    data()
        .crd_chart_conversion
        .iter()
        .any(|c| c.conversion == "Webhook" && c.span.holds(v))
}

/// The hops an upgrade from `from` to `to` passes through.
pub fn hops(from: Version, to: Version) -> Vec<&'static Hop> {
    data()
        .hops
        .iter()
        .filter(|h| h.from.holds(from) && h.to.holds(to))
        .collect()
}

/// The newest release of a hop's `via` range.
pub fn via_target(h: &Hop) -> Option<Version> {
    data()
        .releases
        .iter()
        .filter_map(|r| Version::parse(r))
        .filter(|r| h.via.holds(*r))
        .max()
}

/// Why not to run `v`, when the data says so.
pub fn avoid(v: Version) -> Option<&'static Avoid> {
    data()
        .avoid
        .iter()
        .find(|a| Version::parse(&a.version) == Some(v))
}

/// The first release after `v` in the same minor that is not to be avoided: what to take
/// instead of an avoided release.
pub fn next_good(v: Version) -> Option<Version> {
    let mut later: Vec<Version> = data()
        .releases
        .iter()
        .filter_map(|r| Version::parse(r))
        .filter(|r| *r > v && r.0 == v.0 && r.1 == v.1 && avoid(*r).is_none())
        .collect();
    later.sort();
    later.first().copied()
}

/// Whether release `v` sets (its chart) or reads (its controller) the environment variable.
pub fn knows_env(name: &str, v: Version) -> bool {
    data()
        .env
        .iter()
        .chain(data().controller_env.iter())
        .any(|e| e.name == name && e.span.holds(v))
}

/// The default of feature gate `name` at release `v`; `None` when `v` has no such gate (it
/// then ignores the gate: the parser of 1.0 and later reads only the gates it knows).
pub fn gate_default(name: &str, v: Version) -> Option<bool> {
    let gate = data()
        .feature_gates
        .iter()
        .find(|g| g.name == name && g.span.holds(v))?;
    gate.defaults
        .iter()
        .rfind(|d| Version::parse(&d.since).is_some_and(|s| s <= v))
        .map(|d| d.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn the_data_parses_and_covers_every_release_from_0_37() {
        let d: Data = serde_json::from_str(DATA).expect("data/karpenter-releases.json parses");
        assert!(d.releases.len() > 100);
        assert_eq!(oldest(), Some(v("0.37.0")));
        assert!(newest() >= Some(v("1.14.1")));
        // Every release has its Kubernetes range.
        for r in &d.releases {
            assert!(kubernetes(v(r)).is_some(), "no Kubernetes range for {r}");
        }
    }

    #[test]
    fn kubernetes_ranges_follow_the_code_within_a_minor() {
        // 1.6.0-1.6.5 accept 1.33 at most, though the docs matrix says 1.34; 1.6.6 takes 1.34.
        let early = kubernetes(v("1.6.5")).unwrap();
        assert_eq!(early.max, Minor(33));
        assert_eq!(early.docs.map(|d| d.1), Some(Minor(34)));
        assert!(kubernetes(v("1.6.6")).unwrap().accepts(Minor(34)));
        assert_eq!(first_supporting(v("1.5.0"), Minor(34)), Some(v("1.6.6")));
        assert_eq!(Minor::parse("v1.33.5-eks-3025e55"), Some(Minor(33)));
    }

    #[test]
    fn v1_needs_its_hop_and_1_1_serves_only_v1() {
        let h = hops(v("1.0.2"), v("1.1.0"));
        assert!(
            h.iter()
                .any(|h| h.required && h.reason == "stored-versions")
        );
        assert_eq!(via_target(h[0]).map(|x| x.1), Some(0));
        assert!(hops(v("1.0.8"), v("1.2.0")).iter().all(|h| !h.required));
        assert_eq!(
            served("nodepools.karpenter.sh", v("1.1.0")),
            Some(vec!["v1".to_string()])
        );
        assert!(
            served("nodepools.karpenter.sh", v("1.0.8"))
                .unwrap()
                .contains(&"v1beta1".to_string())
        );
        assert!(avoid(v("1.8.4")).is_some() && avoid(v("1.8.5")).is_none());
        // In place of an avoided release, the next patch that is not avoided.
        assert_eq!(next_good(v("1.8.0")), Some(v("1.8.1")));
        assert_eq!(next_good(v("1.8.4")), Some(v("1.8.5")));
    }

    #[test]
    fn the_crd_chart_has_a_conversion_webhook_only_from_0_37_1_to_1_0() {
        assert!(!crd_chart_webhook(v("0.37.0")));
        assert!(crd_chart_webhook(v("0.37.1")));
        assert!(crd_chart_webhook(v("1.0.14")));
        assert!(!crd_chart_webhook(v("1.1.0")));
    }

    #[test]
    fn settings_come_and_go_with_their_releases() {
        assert!(knows_env("ASSUME_ROLE_ARN", v("0.37.7")));
        assert!(!knows_env("ASSUME_ROLE_ARN", v("1.0.0")));
        assert!(knows_env("CLUSTER_NAME", v("1.9.0")));
        // ReservedCapacity: off from 1.3, on from 1.6; Drift is gone at 1.0.
        assert_eq!(gate_default("ReservedCapacity", v("1.5.0")), Some(false));
        assert_eq!(gate_default("ReservedCapacity", v("1.6.0")), Some(true));
        assert_eq!(gate_default("Drift", v("1.0.0")), None);
        assert_eq!(gate_default("Drift", v("0.37.7")), Some(true));
        // The chart renders StaticCapacity from 1.8.0, though the gate exists from 1.7.0.
        assert_eq!(
            chart_gates_added(v("1.6.0"), v("1.12.0")),
            ["NodeOverlay", "StaticCapacity"]
        );
        assert!(chart_gates_added(v("1.8.1"), v("1.9.0")).is_empty());
    }
}
