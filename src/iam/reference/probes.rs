//! The controller's simulation requests: the reference statements in effect for a release,
//! filled in with one install's resources and request context, batched into as few
//! `iam:SimulatePrincipalPolicy` requests as the differing resources and contexts allow.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::data::{SimContext, Statement, data};
use super::substitute;
use super::version::{Version, in_effect};
use crate::facts::ContextEntry;

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
    /// Index into the data's statements, for [`statement_document`](super::statement_document).
    pub(super) index: usize,
}

/// One `iam:SimulatePrincipalPolicy` request and the reference statements it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub statements: Vec<StatementRef>,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
    pub context: Vec<ContextEntry>,
    /// The EC2NodeClasses whose launches this request stands for (empty when it is not about
    /// one): a re-asked launch carries their values.
    pub nodeclasses: Vec<String>,
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
        nodeclasses: Vec::new(),
    })
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
pub(super) fn contexts(
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
    // (resources, context) → (statements, the NodeClasses they were rendered for)
    type Slot = (BTreeMap<String, StatementRef>, BTreeSet<String>);
    let mut grouped: BTreeMap<(Vec<String>, Vec<ContextEntry>), Slot> = BTreeMap::new();
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
                let (slot, classes) = grouped.entry((resources.clone(), context)).or_default();
                classes.extend(nc.map(|n| n.name.clone()));
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
        .map(|((resources, context), (statements, classes))| {
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
                nodeclasses: classes.into_iter().collect(),
            }
        })
        .collect()
}
