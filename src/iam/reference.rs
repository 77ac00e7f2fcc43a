//! What the Karpenter controller role must be allowed to do, per release, read from
//! `data/controller-policy.json` (the one place that knows it), and the simulation requests
//! that ask IAM whether a role is allowed to.
//!
//! A release's requirements are statements; each statement has its actions, the resources
//! and condition of the reference policy, and how to simulate it: concrete resource ARNs
//! (subnets, AMIs, the node role with its path, …) and the context entries its conditions
//! test (request tags, region, `iam:PassedToService`). [`controller_probes`] turns them into
//! as few `iam:SimulatePrincipalPolicy` requests as the differing resources and contexts
//! allow; [`statement_document`] prints the statement to add.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::facts::ContextEntry;

const DATA: &str = include_str!("../../data/controller-policy.json");

/// The parsed data file. It is compiled in and covered by tests, so a parse failure is a
/// build defect; it still degrades to "no data" rather than a panic.
static REFERENCE: LazyLock<Option<Data>> = LazyLock::new(|| serde_json::from_str(DATA).ok());

fn data() -> Option<&'static Data> {
    REFERENCE.as_ref()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    versions: Versions,
    statements: Vec<Statement>,
    install_actions: Vec<InstallAction>,
    #[serde(default)]
    supplemental_simulations: Vec<Supplemental>,
}

/// A simulation outside the reference policy (what a configuration choice, such as a
/// customer managed EBS key, asks of the controller role).
#[derive(Deserialize)]
struct Supplemental {
    id: String,
    actions: Vec<String>,
    simulation: Simulation,
}

#[derive(Deserialize)]
struct Versions {
    minimum: String,
    newest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    sid: Option<String>,
    feature: String,
    since: String,
    until: Option<String>,
    when: Option<String>,
    actions: Vec<ActionItem>,
    resources: Vec<ResourceItem>,
    conditions: Vec<ConditionVariant>,
    simulation: Simulation,
}

#[derive(Deserialize)]
struct ActionItem {
    action: String,
    since: Option<String>,
    until: Option<String>,
}

#[derive(Deserialize)]
struct ResourceItem {
    arn: String,
    since: Option<String>,
    until: Option<String>,
}

#[derive(Deserialize)]
struct ConditionVariant {
    since: Option<String>,
    until: Option<String>,
    condition: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Simulation {
    resource_arns: Vec<SimArn>,
    context_entries: Vec<SimContext>,
}

#[derive(Deserialize)]
struct SimArn {
    arn: String,
    since: Option<String>,
    until: Option<String>,
    when: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SimContext {
    key: String,
    #[serde(rename = "type")]
    kind: String,
    value: Option<Value>,
    simulate_each: Option<Vec<String>>,
    for_each: Option<String>,
    since: Option<String>,
    until: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstallAction {
    action: String,
    principal: String,
    purpose: String,
    disables_when_blocked: String,
    workaround: Workaround,
    simulation: Simulation,
}

#[derive(Deserialize)]
struct Workaround {
    text: String,
}

/// A Karpenter release, `MAJOR.MINOR.PATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// Reads `1.8.1`, `v1.8.1` or `1.8.1-rc.1` (pre-release suffixes are ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim().trim_start_matches('v');
        let core = text.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(str::parse::<u32>);
        let v = Version(
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        parts.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// `since <= v <= until`, where an `until` of `1.8.x` covers every patch of 1.8.
fn in_effect(v: Version, since: Option<&str>, until: Option<&str>) -> bool {
    let after = since.and_then(Version::parse).is_none_or(|s| v >= s);
    let before = match until {
        None => true,
        Some(u) => match u.strip_suffix(".x") {
            Some(minor) => {
                let mut p = minor.split('.').map(str::parse::<u32>);
                match (p.next(), p.next()) {
                    (Some(Ok(maj)), Some(Ok(min))) => (v.0, v.1) <= (maj, min),
                    _ => true,
                }
            }
            None => Version::parse(u).is_none_or(|u| v <= u),
        },
    };
    after && before
}

/// Which release's requirements apply to a controller version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The data covers it.
    Covered(Version),
    /// Newer than the data: the newest release's requirements are used.
    Newer { used: Version },
    /// Older than the data: nothing to compare with.
    Older { minimum: Version },
}

pub fn coverage(v: Version) -> Option<Coverage> {
    let d = data()?;
    let minimum = Version::parse(&d.versions.minimum)?;
    let newest = Version::parse(&d.versions.newest)?;
    Some(if v < minimum {
        Coverage::Older { minimum }
    } else if v > newest {
        Coverage::Newer { used: newest }
    } else {
        Coverage::Covered(v)
    })
}

/// The newest release the data covers.
pub fn newest() -> Option<Version> {
    Version::parse(&data()?.versions.newest)
}

/// One EC2NodeClass, as the simulation needs it.
#[derive(Clone, Debug, Default)]
pub struct NodeClassInput {
    pub name: String,
    pub uid: String,
    /// A NodePool that uses it (request tags carry a NodePool name).
    pub nodepool: Option<String>,
    pub spec_tags: BTreeMap<String, String>,
    pub image_arns: Vec<String>,
    pub subnet_arns: Vec<String>,
    pub security_group_arns: Vec<String>,
    pub ssm_parameter_arns: Vec<String>,
    pub instance_profile_arn: Option<String>,
    pub node_role_arn: Option<String>,
    /// `spec.role` (Karpenter manages the instance profile) rather than `spec.instanceProfile`.
    pub uses_role: bool,
    pub uses_alias: bool,
    pub capacity_reservations: bool,
    pub placement_group: bool,
}

/// What the running install looks like.
#[derive(Clone, Debug, Default)]
pub struct InstallInput {
    /// `partition`, `region`, `account`, `cluster`, `clusterArn`, `queueArn`, … (the
    /// placeholders of the data file).
    pub vars: BTreeMap<String, String>,
    /// `whenConditions` that hold for the whole install (`interruptionQueue.set`, …).
    pub flags: BTreeSet<String>,
    pub nodeclasses: Vec<NodeClassInput>,
}

/// Which reference statement an action of a probe stands for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StatementRef {
    /// The statement's Sid, or `statement-N` for the one the data leaves unnamed.
    pub sid: String,
    pub feature: String,
    pub actions: Vec<String>,
    /// Index into the data's statements, for [`statement_document`].
    index: usize,
}

/// One `iam:SimulatePrincipalPolicy` request and the reference statements it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub statements: Vec<StatementRef>,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
    pub context: Vec<ContextEntry>,
}

impl Probe {
    /// The statements of this probe that need `action`.
    pub fn statements_for<'a>(&'a self, action: &'a str) -> impl Iterator<Item = &'a StatementRef> {
        self.statements
            .iter()
            .filter(move |s| s.actions.iter().any(|a| a == action))
    }
}

/// The supplemental simulation `id` of the reference data (`ebs-cmk`), rendered with `vars`:
/// its actions, resources and context. `None` when the data lacks it or a placeholder has no
/// value.
pub fn supplemental_probe(id: &str, vars: &BTreeMap<String, String>) -> Option<Probe> {
    let s = data()?
        .supplemental_simulations
        .iter()
        .find(|s| s.id == id)?;
    let resources = s
        .simulation
        .resource_arns
        .iter()
        .map(|r| substitute(&r.arn, vars))
        .collect::<Option<Vec<_>>>()?;
    let context = s
        .simulation
        .context_entries
        .iter()
        .map(|c| {
            let value = c.value.as_ref()?.as_str()?;
            Some(ContextEntry {
                key: c.key.clone(),
                kind: c.kind.clone(),
                values: vec![substitute(value, vars)?],
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Probe {
        statements: Vec::new(),
        actions: s.actions.clone(),
        resources,
        context,
    })
}

/// Replaces `{name}` placeholders; `None` if one has no value.
pub fn substitute(template: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}')? + start;
        out.push_str(vars.get(&rest[start + 1..end])?);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The list placeholders that stand for one ARN per resolved resource.
fn list_placeholder(arn: &str, nc: Option<&NodeClassInput>) -> Option<Vec<String>> {
    let nc = nc?;
    let list = match arn {
        "{imageArns}" => &nc.image_arns,
        "{subnetArns}" => &nc.subnet_arns,
        "{securityGroupArns}" => &nc.security_group_arns,
        "{ssmParameterArns}" => &nc.ssm_parameter_arns,
        _ => return None,
    };
    Some(list.clone())
}

fn nodeclass_flag(when: &str, nc: Option<&NodeClassInput>) -> Option<bool> {
    let nc = nc?;
    Some(match when {
        "nodeclass.role" => nc.uses_role,
        "nodeclass.alias" => nc.uses_alias,
        "nodeclass.capacityReservations" => nc.capacity_reservations,
        "nodeclass.placementGroup" => nc.placement_group,
        _ => return None,
    })
}

fn applies(when: Option<&str>, input: &InstallInput, nc: Option<&NodeClassInput>) -> bool {
    match when {
        None => true,
        Some(w) if w.starts_with("nodeclass.") => nodeclass_flag(w, nc).unwrap_or(false),
        Some(w) => input.flags.contains(w),
    }
}

/// The placeholder values for one NodeClass (or none) on top of the install's.
fn vars_for(input: &InstallInput, nc: Option<&NodeClassInput>) -> BTreeMap<String, String> {
    let mut vars = input.vars.clone();
    if let Some(nc) = nc {
        vars.insert("nodeclass".into(), nc.name.clone());
        vars.insert("nodeclassUid".into(), nc.uid.clone());
        if let Some(np) = &nc.nodepool {
            vars.insert("nodepool".into(), np.clone());
        }
        if let Some(ip) = &nc.instance_profile_arn {
            vars.insert("instanceProfileArn".into(), ip.clone());
        }
        if let Some(role) = &nc.node_role_arn {
            vars.insert("nodeRoleArn".into(), role.clone());
        }
    }
    vars
}

/// Context entries of a statement for a release; `simulateEach` entries multiply the
/// variants (one simulation per value). `None` when a value is unknown (no NodePool to name,
/// say): simulating without it would report a denial the real call would not meet.
fn contexts(
    entries: &[SimContext],
    v: Version,
    vars: &BTreeMap<String, String>,
    nc: Option<&NodeClassInput>,
) -> Option<Vec<Vec<ContextEntry>>> {
    let mut variants: Vec<Vec<ContextEntry>> = vec![Vec::new()];
    for e in entries {
        if !in_effect(v, e.since.as_deref(), e.until.as_deref()) {
            continue;
        }
        if e.for_each.as_deref() == Some("specTags") {
            let tags = nc.map(|n| n.spec_tags.clone()).unwrap_or_default();
            for (k, val) in tags {
                let mut vars = vars.clone();
                vars.insert("specTagKey".into(), k);
                vars.insert("specTagValue".into(), val);
                let entry = entry(e, &vars, nc)?;
                variants.iter_mut().for_each(|c| c.push(entry.clone()));
            }
            continue;
        }
        if let Some(each) = &e.simulate_each {
            let key = substitute(&e.key, vars)?;
            variants = variants
                .into_iter()
                .flat_map(|c| {
                    let key = key.clone();
                    each.iter().map(move |value| {
                        let mut c = c.clone();
                        c.push(ContextEntry {
                            key: key.clone(),
                            kind: e.kind.clone(),
                            values: vec![value.clone()],
                        });
                        c
                    })
                })
                .collect();
            continue;
        }
        let entry = entry(e, vars, nc)?;
        variants.iter_mut().for_each(|c| c.push(entry.clone()));
    }
    for c in &mut variants {
        c.sort();
        c.dedup_by(|a, b| a.key.eq_ignore_ascii_case(&b.key));
    }
    Some(variants)
}

/// One context entry with its placeholders filled in; `None` when a value is unknown.
fn entry(
    e: &SimContext,
    vars: &BTreeMap<String, String>,
    nc: Option<&NodeClassInput>,
) -> Option<ContextEntry> {
    let key = substitute(&e.key, vars)?;
    let values = match e.value.as_ref()? {
        Value::String(s) => vec![substitute(s, vars)?],
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items.iter().filter_map(Value::as_str) {
                if item == "{specTagKeys}" {
                    out.extend(
                        nc.map(|n| n.spec_tags.keys().cloned())
                            .into_iter()
                            .flatten(),
                    );
                } else {
                    out.push(substitute(item, vars)?);
                }
            }
            out
        }
        other => vec![other.to_string()],
    };
    Some(ContextEntry {
        key,
        kind: e.kind.clone(),
        values,
    })
}

fn sid_of(index: usize, s: &Statement) -> String {
    s.sid
        .clone()
        .unwrap_or_else(|| format!("statement-{}", index + 1))
}

/// The simulation requests for a controller release and install: one per distinct
/// (resources, context), each batching every action that shares them.
pub fn controller_probes(version: Version, input: &InstallInput) -> Vec<Probe> {
    let Some(d) = data() else {
        return Vec::new();
    };
    // (resources, context) → (actions, statements)
    let mut grouped: BTreeMap<(Vec<String>, Vec<ContextEntry>), BTreeMap<String, StatementRef>> =
        BTreeMap::new();
    let nodeclasses: Vec<Option<&NodeClassInput>> = if input.nodeclasses.is_empty() {
        vec![None]
    } else {
        input.nodeclasses.iter().map(Some).collect()
    };
    for (index, s) in d.statements.iter().enumerate() {
        if !in_effect(version, Some(&s.since), s.until.as_deref()) {
            continue;
        }
        let actions: Vec<String> = s
            .actions
            .iter()
            .filter(|a| in_effect(version, a.since.as_deref(), a.until.as_deref()))
            .map(|a| a.action.clone())
            .collect();
        if actions.is_empty() {
            continue;
        }
        for &nc in &nodeclasses {
            if !applies(s.when.as_deref(), input, nc) {
                continue;
            }
            let vars = vars_for(input, nc);
            let mut resources = BTreeSet::new();
            for r in &s.simulation.resource_arns {
                if !in_effect(version, r.since.as_deref(), r.until.as_deref())
                    || !applies(r.when.as_deref(), input, nc)
                {
                    continue;
                }
                match list_placeholder(&r.arn, nc) {
                    Some(list) => resources.extend(list),
                    None => resources.extend(substitute(&r.arn, &vars)),
                }
            }
            // Nothing concrete to ask about (no NodeClass resolved any subnet, say): the
            // statement is not simulated rather than reported as allowed.
            if resources.is_empty() {
                continue;
            }
            let resources: Vec<String> = resources.into_iter().collect();
            let Some(variants) = contexts(&s.simulation.context_entries, version, &vars, nc) else {
                continue;
            };
            for context in variants {
                let slot = grouped.entry((resources.clone(), context)).or_default();
                slot.entry(sid_of(index, s))
                    .or_insert_with(|| StatementRef {
                        sid: sid_of(index, s),
                        feature: s.feature.clone(),
                        actions: actions.clone(),
                        index,
                    });
            }
        }
    }
    grouped
        .into_iter()
        .map(|((resources, context), statements)| {
            let statements: Vec<StatementRef> = statements.into_values().collect();
            let actions: BTreeSet<String> = statements
                .iter()
                .flat_map(|s| s.actions.iter().cloned())
                .collect();
            Probe {
                statements,
                actions: actions.into_iter().collect(),
                resources,
                context,
            }
        })
        .collect()
}

/// The reference statement as it should appear in the controller's policy for `version`,
/// placeholders filled in (`{nodeRoleArn}` and the like from `vars`).
pub fn statement_document(
    statement: &StatementRef,
    version: Version,
    vars: &BTreeMap<String, String>,
) -> Option<Value> {
    let s = data()?.statements.get(statement.index)?;
    render_statement(s, version, vars)
}

fn render_statement(s: &Statement, v: Version, vars: &BTreeMap<String, String>) -> Option<Value> {
    let actions: Vec<Value> = s
        .actions
        .iter()
        .filter(|a| in_effect(v, a.since.as_deref(), a.until.as_deref()))
        .map(|a| Value::String(a.action.clone()))
        .collect();
    let resources: Vec<Value> = s
        .resources
        .iter()
        .filter(|r| in_effect(v, r.since.as_deref(), r.until.as_deref()))
        .filter_map(|r| substitute(&r.arn, vars).map(Value::String))
        .collect();
    if actions.is_empty() || resources.is_empty() {
        return None;
    }
    let mut doc = Map::new();
    if let Some(sid) = &s.sid {
        doc.insert("Sid".into(), json!(sid));
    }
    doc.insert("Effect".into(), json!("Allow"));
    doc.insert("Action".into(), one_or_many(actions));
    doc.insert("Resource".into(), one_or_many(resources));
    if let Some(c) = s
        .conditions
        .iter()
        .find(|c| in_effect(v, c.since.as_deref(), c.until.as_deref()))
    {
        doc.insert("Condition".into(), substitute_json(&c.condition, vars));
    }
    Some(Value::Object(doc))
}

fn one_or_many(mut items: Vec<Value>) -> Value {
    if items.len() == 1 {
        items.remove(0)
    } else {
        Value::Array(items)
    }
}

/// Substitutes placeholders in every key and string of a JSON value; an unknown placeholder
/// is left as written so the statement still shows what to fill in.
fn substitute_json(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    let s = |t: &str| substitute(t, vars).unwrap_or_else(|| t.to_string());
    match value {
        Value::String(t) => Value::String(s(t)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| substitute_json(i, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (s(k), substitute_json(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The whole reference policy document of a release, for the placeholders given (statements
/// whose resources cannot be filled in are left out).
pub fn policy_document(version: Version, vars: &BTreeMap<String, String>) -> Value {
    let statements: Vec<Value> = data()
        .map(|d| {
            d.statements
                .iter()
                .filter(|s| in_effect(version, Some(&s.since), s.until.as_deref()))
                .filter_map(|s| render_statement(s, version, vars))
                .collect()
        })
        .unwrap_or_default();
    json!({"Version": "2012-10-17", "Statement": statements})
}

/// One action an installer (or a role of the account) must be allowed during an install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallStep {
    pub action: String,
    /// `installer`, `controllerHostNodeRole` or `anyInAccount`: only for `installer` does the
    /// caller's own identity policy matter; for the others only the SCP decision does.
    pub principal: String,
    pub purpose: String,
    pub disables: String,
    pub workaround: String,
    pub resources: Vec<String>,
    pub context: Vec<ContextEntry>,
}

/// What `karpdoctor pre-install` simulates, placeholders filled in.
pub fn install_steps(version: Version, vars: &BTreeMap<String, String>) -> Vec<InstallStep> {
    let Some(d) = data() else {
        return Vec::new();
    };
    // "As sqs:CreateQueue." in the data points at another action's workaround.
    let workaround_of = |a: &InstallAction| -> String {
        let text = a.workaround.text.trim();
        text.strip_prefix("As ")
            .and_then(|rest| rest.strip_suffix('.'))
            .and_then(|other| d.install_actions.iter().find(|o| o.action == other))
            .map_or_else(|| text.to_string(), |o| o.workaround.text.clone())
    };
    d.install_actions
        .iter()
        .filter_map(|a| {
            let resources: BTreeSet<String> = a
                .simulation
                .resource_arns
                .iter()
                .filter(|r| in_effect(version, r.since.as_deref(), r.until.as_deref()))
                .flat_map(|r| {
                    if r.arn == "{ssmParameterArns}" {
                        // The alias paths the getting-started guide's default (al2023) reads.
                        vars.get("k8sVersion")
                            .map(|k| al2023_parameter_arns(vars, k))
                            .unwrap_or_default()
                    } else if r.arn.contains("{controllerPolicyName}") {
                        controller_policy_names(version, vars)
                            .iter()
                            .filter_map(|name| {
                                let mut vars = vars.clone();
                                vars.insert("controllerPolicyName".into(), name.clone());
                                substitute(&r.arn, &vars)
                            })
                            .collect()
                    } else {
                        substitute(&r.arn, vars).into_iter().collect()
                    }
                })
                .collect();
            if resources.is_empty() {
                return None;
            }
            let context = contexts(&a.simulation.context_entries, version, vars, None)?
                .into_iter()
                .next()
                .unwrap_or_default();
            Some(InstallStep {
                action: a.action.clone(),
                principal: a.principal.clone(),
                purpose: substitute_json(&json!(a.purpose), vars)
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                disables: a.disables_when_blocked.clone(),
                workaround: substitute_json(&json!(workaround_of(a)), vars)
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                resources: resources.into_iter().collect(),
                context,
            })
        })
        .collect()
}

/// Names of the controller's managed policies for a release (one before 1.9, more after).
fn controller_policy_names(v: Version, vars: &BTreeMap<String, String>) -> Vec<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Named {
        controller_managed_policies: Vec<Policy>,
    }
    #[derive(Deserialize)]
    struct Policy {
        name: String,
        since: Option<String>,
        until: Option<String>,
    }
    let Ok(named) = serde_json::from_str::<Named>(DATA) else {
        return Vec::new();
    };
    named
        .controller_managed_policies
        .iter()
        .filter(|p| in_effect(v, p.since.as_deref(), p.until.as_deref()))
        .filter_map(|p| substitute(&p.name, vars))
        .collect()
}

/// The SSM parameters an `al2023@latest` alias reads for the standard variant of both
/// architectures (failure-modes §4.6); public parameters have no account in their ARN.
pub fn al2023_parameter_arns(vars: &BTreeMap<String, String>, k8s: &str) -> Vec<String> {
    ["x86_64", "arm64"]
        .iter()
        .filter_map(|arch| {
            substitute(
                &format!(
                    "arn:{{partition}}:ssm:{{region}}::parameter/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/standard/recommended/image_id"
                ),
                vars,
            )
        })
        .collect()
}

/// The SSM parameter paths an `amiSelectorTerms` alias resolves to, for a Kubernetes minor
/// version and the architectures the NodePools allow. `None` for an alias karpdoctor does
/// not know how to expand.
pub fn alias_parameter_paths(alias: &str, k8s: &str, arches: &[&str]) -> Option<Vec<String>> {
    let (family, version) = alias.split_once('@')?;
    let version = version.trim();
    let mut out = Vec::new();
    for &arch in arches {
        let arch = match arch {
            "amd64" | "x86_64" => "x86_64",
            "arm64" | "aarch64" => "arm64",
            _ => continue,
        };
        match family {
            "al2023" => {
                let variants: &[&str] = if arch == "x86_64" {
                    &["standard", "nvidia", "neuron"]
                } else {
                    &["standard", "nvidia"]
                };
                for variant in variants {
                    let leaf = if version == "latest" {
                        "recommended".to_string()
                    } else {
                        format!("amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}")
                    };
                    out.push(format!(
                        "/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
                    ));
                }
            }
            "al2" => {
                let (dirs, names): (&[&str], &[&str]) = if arch == "x86_64" {
                    (
                        &["amazon-linux-2", "amazon-linux-2-gpu"],
                        &["amazon-eks-node", "amazon-eks-gpu-node"],
                    )
                } else {
                    (&["amazon-linux-2-arm64"], &["amazon-eks-arm64-node"])
                };
                for (dir, name) in dirs.iter().zip(names) {
                    let leaf = if version == "latest" {
                        "recommended".to_string()
                    } else {
                        format!("{name}-{k8s}-{version}")
                    };
                    out.push(format!(
                        "/aws/service/eks/optimized-ami/{k8s}/{dir}/{leaf}/image_id"
                    ));
                }
            }
            "bottlerocket" => {
                let v = if version == "latest" {
                    "latest".to_string()
                } else {
                    version.trim_start_matches('v').to_string()
                };
                for flavour in ["", "-nvidia"] {
                    out.push(format!(
                        "/aws/service/bottlerocket/aws-k8s-{k8s}{flavour}/{arch}/{v}/image_id"
                    ));
                }
            }
            f if f.starts_with("windows") => {
                let year = f.trim_start_matches("windows");
                if arch == "x86_64" {
                    out.push(format!(
                        "/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"
                    ));
                }
            }
            _ => return None,
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [
            ("partition", "aws"),
            ("region", "us-west-2"),
            ("account", "111122223333"),
            ("cluster", "demo"),
            (
                "clusterArn",
                "arn:aws:eks:us-west-2:111122223333:cluster/demo",
            ),
            ("queueArn", "arn:aws:sqs:us-west-2:111122223333:demo"),
            ("ec2ServicePrincipal", "ec2.amazonaws.com"),
            ("pricingRegion", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn nodeclass() -> NodeClassInput {
        NodeClassInput {
            name: "default".into(),
            uid: "uid-1".into(),
            nodepool: Some("default".into()),
            spec_tags: [("team".to_string(), "platform".to_string())].into(),
            image_arns: vec!["arn:aws:ec2:us-west-2::image/ami-1".into()],
            subnet_arns: vec!["arn:aws:ec2:us-west-2:111122223333:subnet/subnet-1".into()],
            security_group_arns: vec![
                "arn:aws:ec2:us-west-2:111122223333:security-group/sg-1".into(),
            ],
            ssm_parameter_arns: vec![
                "arn:aws:ssm:us-west-2::parameter/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id".into(),
            ],
            instance_profile_arn: Some("arn:aws:iam::111122223333:instance-profile/demo_1".into()),
            node_role_arn: Some("arn:aws:iam::111122223333:role/nodes/KarpenterNodeRole-demo".into()),
            uses_role: true,
            uses_alias: true,
            ..NodeClassInput::default()
        }
    }

    fn input() -> InstallInput {
        InstallInput {
            vars: vars(),
            flags: ["interruptionQueue.set".to_string()].into(),
            nodeclasses: vec![nodeclass()],
        }
    }

    #[test]
    fn the_data_file_parses_and_covers_v1() {
        assert!(data().is_some());
        assert_eq!(
            coverage(Version(1, 8, 1)),
            Some(Coverage::Covered(Version(1, 8, 1)))
        );
        assert!(matches!(
            coverage(Version(0, 30, 0)),
            Some(Coverage::Older { .. })
        ));
        assert!(matches!(
            coverage(Version(9, 0, 0)),
            Some(Coverage::Newer { .. })
        ));
    }

    #[test]
    fn versions_and_ranges() {
        assert_eq!(Version::parse("v1.8.1"), Some(Version(1, 8, 1)));
        assert_eq!(Version::parse("1.8.1-rc.1"), Some(Version(1, 8, 1)));
        assert_eq!(Version::parse("1.8"), None);
        assert!(in_effect(Version(1, 8, 9), Some("1.0.0"), Some("1.8.x")));
        assert!(!in_effect(Version(1, 9, 0), Some("1.0.0"), Some("1.8.x")));
        assert!(!in_effect(Version(0, 37, 7), Some("1.0.0"), None));
    }

    #[test]
    fn probes_batch_actions_and_carry_concrete_resources_and_context() {
        let probes = controller_probes(Version(1, 8, 1), &input());
        // Far fewer requests than actions: batching is the point.
        let actions: usize = probes.iter().map(|p| p.actions.len()).sum();
        assert!(
            probes.len() < actions,
            "{} probes for {actions} actions",
            probes.len()
        );
        let pass = probes
            .iter()
            .find(|p| p.actions == ["iam:PassRole"])
            .expect("a PassRole probe");
        assert_eq!(
            pass.resources,
            ["arn:aws:iam::111122223333:role/nodes/KarpenterNodeRole-demo"]
        );
        assert!(
            pass.context
                .iter()
                .any(|c| c.key == "iam:PassedToService" && c.values == ["ec2.amazonaws.com"])
        );
        let fleet = probes
            .iter()
            .find(|p| {
                p.actions.contains(&"ec2:CreateFleet".to_string())
                    && p.resources.iter().any(|r| r.ends_with("subnet/subnet-1"))
            })
            .expect("CreateFleet on the resolved subnet");
        assert!(fleet.resources.iter().any(|r| r.ends_with("image/ami-1")));
        let tagging = probes
            .iter()
            .find(|p| p.context.iter().any(|c| c.key == "aws:RequestTag/team"))
            .expect("spec.tags become request tags");
        assert!(
            tagging
                .context
                .iter()
                .any(|c| c.key == "aws:RequestTag/eks:eks-cluster-name" && c.values == ["demo"])
        );
        // The interruption queue is simulated only when one is configured.
        assert!(
            probes
                .iter()
                .any(|p| p.resources == ["arn:aws:sqs:us-west-2:111122223333:demo"])
        );
        let mut no_queue = input();
        no_queue.flags.clear();
        assert!(
            !controller_probes(Version(1, 8, 1), &no_queue)
                .iter()
                .any(|p| p.actions.iter().any(|a| a.starts_with("sqs:")))
        );
    }

    #[test]
    fn release_differences_reach_the_probes() {
        let has = |v: Version, action: &str| {
            controller_probes(v, &input())
                .iter()
                .any(|p| p.actions.iter().any(|a| a == action))
        };
        // ListInstanceProfiles arrived with 1.7 (instance profile garbage collection).
        assert!(has(Version(1, 8, 1), "iam:ListInstanceProfiles"));
        assert!(!has(Version(1, 0, 0), "iam:ListInstanceProfiles"));
    }

    #[test]
    fn without_nodeclasses_list_resources_are_not_simulated() {
        let mut i = input();
        i.nodeclasses.clear();
        let probes = controller_probes(Version(1, 8, 1), &i);
        assert!(
            !probes
                .iter()
                .any(|p| p.actions.iter().any(|a| a == "iam:PassRole"))
        );
        assert!(probes.iter().all(|p| !p.resources.is_empty()));
    }

    #[test]
    fn statements_render_with_placeholders_filled() {
        let probes = controller_probes(Version(1, 8, 1), &input());
        let s = probes
            .iter()
            .flat_map(|p| p.statements.iter())
            .find(|s| s.sid == "AllowAPIServerEndpointDiscovery")
            .expect("statement");
        let doc = statement_document(s, Version(1, 8, 1), &vars()).unwrap();
        assert_eq!(doc["Action"], "eks:DescribeCluster");
        assert_eq!(
            doc["Resource"],
            "arn:aws:eks:us-west-2:111122223333:cluster/demo"
        );
        let policy = policy_document(Version(1, 8, 1), &vars());
        assert!(!policy.to_string().contains("{cluster}"));
    }

    #[test]
    fn aliases_expand_to_their_ssm_parameters() {
        let p = alias_parameter_paths("al2023@latest", "1.31", &["amd64"]).unwrap();
        assert!(p.contains(&"/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id".to_string()));
        assert_eq!(p.len(), 3);
        let b = alias_parameter_paths("bottlerocket@v1.20.0", "1.31", &["arm64"]).unwrap();
        assert!(
            b.contains(&"/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.20.0/image_id".to_string())
        );
        let pinned = alias_parameter_paths("al2023@v20250505", "1.31", &["arm64"]).unwrap();
        assert!(pinned[0].ends_with("amazon-eks-node-al2023-arm64-nvidia-1.31-v20250505/image_id"));
        assert_eq!(
            alias_parameter_paths("ubuntu@latest", "1.31", &["amd64"]),
            None
        );
    }

    #[test]
    fn install_steps_cover_the_documented_blockers() {
        let mut v = vars();
        v.insert(
            "controllerRoleArn".into(),
            "arn:aws:iam::111122223333:role/KarpenterControllerRole-demo".into(),
        );
        v.insert("k8sVersion".into(), "1.31".into());
        v.insert(
            "oidcIssuerHostPath".into(),
            "oidc.eks.us-west-2.amazonaws.com/id/ABC".into(),
        );
        let steps = install_steps(Version(1, 8, 1), &v);
        for action in [
            "sqs:CreateQueue",
            "events:PutRule",
            "eks-auth:AssumeRoleForPodIdentity",
            "ssm:GetParameter",
            "kms:CreateKey",
            "iam:CreateServiceLinkedRole",
        ] {
            assert!(steps.iter().any(|s| s.action == action), "{action}");
        }
        let policy = steps
            .iter()
            .find(|s| s.action == "iam:CreatePolicy")
            .unwrap();
        assert_eq!(
            policy.resources,
            ["arn:aws:iam::111122223333:policy/KarpenterControllerPolicy-demo"]
        );
    }
}
