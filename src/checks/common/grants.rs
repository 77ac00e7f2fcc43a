//! What the controller role may do: the reference statements of the controller's release,
//! simulated with `iam:SimulatePrincipalPolicy` against this install's concrete resources
//! and request context. Shared by KD2101–KD2104 and the checks that simulate one more action
//! for the controller role, computed from memoized facts, so the simulations run once however
//! many checks read them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::cluster::{cluster_arn, minor};
use super::codes::{CONTROLLER_CREDENTIALS_MISSING, IRSA_ROLE_INVALID};
use super::launch_values::{
    self as launch, LAUNCH_ACTIONS, LaunchResource, launch_values, type_sample,
};
use super::nodeclass::NodeRoleSource;
use super::nodeclass::{ami_arches, status_ids, subnet_zones};
use super::wiring;
use crate::arn::Arn;
use crate::check::{CheckCx, Severity};
use crate::facts::{ContextEntry, FactError, IamRole};
use crate::iam::features;
use crate::iam::reference::{
    self, Coverage, InstallInput, NodeClassInput, Probe, Version, alias_parameter_paths,
};
use crate::iam::simulation::{Attribution, Decision, Row, attribute};
use crate::model::{ControllerDeployment, Ec2NodeClass, NodePool};

/// One denied (or allowed) action on one resource, with the reference statements behind it.
#[derive(Clone, Debug)]
pub struct Decided {
    pub row: Row,
    pub attribution: Attribution,
    pub probe: usize,
    /// Set when a guardrail denied a launch asked without the values a launch carries, and it
    /// was asked again with this install's values ([`launch_values`]).
    pub launch: Option<LaunchDecision>,
}

/// How a launch fared when asked with this install's values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchDecision {
    /// `key=value` of the values the verdict rests on (the denied ones, else those allowed).
    pub values: Vec<String>,
    /// The EC2NodeClasses whose launches stay denied.
    pub nodeclasses: Vec<String>,
    /// Instance types denied while others the NodePools allow pass (a guardrail on
    /// `ec2:InstanceType`): the launch is blocked only for these.
    pub denied_types: Vec<String>,
    pub allowed_types: Vec<String>,
    /// EC2NodeClasses whose volumes are the AMI's own, so their volume values are unknown.
    pub unknown_volumes: Vec<String>,
    /// Some EC2NodeClass launches nothing at all (no type it tried passed): the block is not
    /// partial, whatever other classes may launch.
    pub class_blocked: bool,
}

impl LaunchDecision {
    /// Denied for some instance types only, and every class keeps some it may launch.
    pub fn partial(&self) -> bool {
        !self.class_blocked && !self.denied_types.is_empty() && !self.allowed_types.is_empty()
    }
}

pub struct Grants {
    pub role: IamRole,
    /// The controller's release as read from its image, and the release whose data is used.
    pub controller_version: String,
    pub version: Version,
    pub vars: BTreeMap<String, String>,
    pub probes: Vec<Probe>,
    pub rows: Vec<Decided>,
    /// The node roles of the EC2NodeClasses (a profile's role included): passing them is
    /// KD3007's to judge, per class.
    pub node_roles: BTreeSet<String>,
    /// The `spec` fields some EC2NodeClass sets: whether an optional feature is in use.
    pub nodeclass_fields: BTreeSet<String>,
}

impl Grants {
    pub fn object(&self) -> String {
        format!("IAM role {}", self.role.name)
    }

    /// The rows stopped by `who`, but for `iam:PassRole` of an EC2NodeClass's node role: one
    /// missing permission is one error, and KD3007 reports that one per class, naming the
    /// class and the role (whoever denies it), so the checks of the controller's policy leave
    /// it to KD3007 instead of reporting it a second time.
    pub fn denied_by(&self, who: Attribution) -> impl Iterator<Item = &Decided> {
        self.rows
            .iter()
            .filter(move |d| d.attribution == who && !self.passes_node_role(d))
    }

    /// How grave a denied action is for this install (`features::severity`).
    pub fn severity_of(&self, action: &str) -> Severity {
        features::severity(action, &|field| self.nodeclass_fields.contains(field))
    }

    /// Whether a row is the controller passing a node role to EC2.
    pub fn passes_node_role(&self, d: &Decided) -> bool {
        d.row.action.eq_ignore_ascii_case("iam:PassRole")
            && self.node_roles.contains(&d.row.resource)
    }

    /// A note when the data does not cover the controller's release exactly.
    pub fn version_note(&self) -> Option<String> {
        (self.controller_version != self.version.to_string()).then(|| {
            format!(
                "the controller runs {}; karpdoctor's reference data ends at {}, whose requirements are used",
                self.controller_version, self.version
            )
        })
    }
}

fn skip(what: impl Into<String>) -> FactError {
    FactError::NotInstalled { what: what.into() }
}

/// The controller role's ARN and its IAM role, or why there is nothing to simulate (another
/// check owns that: KD2001 no identity, KD2004 no such role).
pub async fn controller_role(cx: &CheckCx) -> Result<(wiring::Wiring, IamRole), FactError> {
    let w = wiring::resolve(cx).await?;
    // IRSA wins when both are set (KD2008), so its role is the one the controller uses.
    let Some(arn) = w
        .irsa_role_arn
        .clone()
        .or_else(|| w.associations.first().map(|a| a.role_arn.clone()))
    else {
        return Err(skip(format!(
            "a controller identity ({CONTROLLER_CREDENTIALS_MISSING})"
        )));
    };
    let Some((account, name)) = Arn::parse(&arn)
        .filter(|a| a.service == "iam")
        .and_then(|a| {
            a.role_name()
                .map(|n| (a.account.to_string(), n.to_string()))
        })
    else {
        return Err(skip(format!(
            "a valid controller role ARN ({IRSA_ROLE_INVALID})"
        )));
    };
    if w.account.as_deref().is_some_and(|a| a != account) {
        return Err(skip(
            "a controller role in this account (simulating another account's role is not possible from here)",
        ));
    }
    match cx.iam_role(&name).await?.as_ref() {
        Some(role) => Ok((w, role.clone())),
        None => Err(skip(format!("the controller role ({IRSA_ROLE_INVALID})"))),
    }
}

/// The controller role when there is one; `None` when the controller has no identity or its
/// role does not exist (KD2001/KD2004 report that), so other checks can do without it.
pub async fn optional_controller_role(cx: &CheckCx) -> Result<Option<IamRole>, FactError> {
    match controller_role(cx).await {
        Ok((_, role)) => Ok(Some(role)),
        Err(FactError::NotInstalled { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The reference statements of the controller's release, simulated for its role: derived once
/// per run and shared by the checks that judge them (most of their evaluation time).
pub async fn controller_grants(cx: &CheckCx) -> Result<std::sync::Arc<Grants>, FactError> {
    cx.derived("controller grants", derive_controller_grants(cx, None))
        .await
}

/// The same at `release`, the target of `karpdoctor upgrade --to` (one per run).
pub async fn controller_grants_at(
    cx: &CheckCx,
    release: Version,
) -> Result<std::sync::Arc<Grants>, FactError> {
    cx.derived(
        "controller grants at the upgrade target",
        derive_controller_grants(cx, Some(release)),
    )
    .await
}

async fn derive_controller_grants(
    cx: &CheckCx,
    release: Option<Version>,
) -> Result<Grants, FactError> {
    let (w, role) = controller_role(cx).await?;
    let Some((deployments, index)) = cx.controller().await? else {
        return Err(skip("the Karpenter controller"));
    };
    let controller = ControllerDeployment::new(&deployments[index]);
    let controller_version = release
        .map(|v| v.to_string())
        .or_else(|| controller.version())
        .unwrap_or_default();
    let version = match Version::parse(&controller_version).and_then(reference::coverage) {
        Some(Coverage::Covered(v)) => v,
        Some(Coverage::Newer { used }) => used,
        Some(Coverage::Older { minimum }) => {
            return Err(skip(format!(
                "reference policy data for Karpenter {controller_version} (karpdoctor covers {minimum} and later)"
            )));
        }
        None => {
            return Err(skip(
                "a Karpenter version in the controller image tag (cannot tell which policy it needs)",
            ));
        }
    };
    let cluster = cx.eks_cluster(&w.cluster).await?;
    let Some(cluster) = cluster.as_ref() else {
        return Err(skip(format!("the EKS cluster {}", w.cluster)));
    };
    let cluster_arn = cluster_arn(cluster)?;
    let mut vars = base_vars(&cluster_arn, &w.cluster, &cluster.arn);
    vars.insert("controllerRoleArn".into(), role.arn.clone());
    let k8s = minor(&cluster.version);
    if let Some(k) = &k8s {
        vars.insert("k8sVersion".into(), k.clone());
    }
    let mut flags = BTreeSet::new();
    // One root cause, one error: a queue that does not exist is KD7001's finding (fix the
    // name or create the queue). Judging the role's grant on it would ask for a grant on a
    // queue nobody created, a fix that contradicts KD7001's. Whether it exists decides which
    // statements are judged, so a queue that cannot be read leaves the verdict unknown. The
    // queue is read while the simulations run (its statement is asked with the rest and
    // dropped if the queue is missing): waiting for it first put two SQS rounds in front of
    // every simulation.
    let configured_queue = controller
        .env("INTERRUPTION_QUEUE")
        .filter(|q| !q.is_empty());
    let queue_arn = configured_queue.map(|queue| {
        format!(
            "arn:{}:sqs:{}:{}:{queue}",
            cluster_arn.partition, cluster_arn.region, cluster_arn.account
        )
    });
    if let (Some(queue), Some(arn)) = (configured_queue, &queue_arn) {
        flags.insert("interruptionQueue.set".to_string());
        vars.insert("interruptionQueue".into(), queue.to_string());
        vars.insert("queueArn".into(), arn.clone());
    }
    let (nodeclasses, nodepools) =
        futures::future::join(cx.ec2_nodeclasses(), cx.nodepools()).await;
    // Without the v1 APIs (old CRDs: KD1002) the NodeClass-independent statements are still
    // worth simulating; a permission error stays an error (unknown, not a guess).
    let absent_as_empty = |r: Result<std::sync::Arc<Vec<_>>, FactError>| match r {
        Err(FactError::NotInstalled { .. }) => Ok(std::sync::Arc::new(Vec::new())),
        other => other,
    };
    let nodeclasses: std::sync::Arc<Vec<Ec2NodeClass>> = absent_as_empty(nodeclasses)?;
    let nodepools: std::sync::Arc<Vec<NodePool>> = match nodepools {
        Err(FactError::NotInstalled { .. }) => std::sync::Arc::new(Vec::new()),
        other => other?,
    };
    let mut inputs = Vec::new();
    for nc in nodeclasses.iter() {
        let mut input = nodeclass_input(nc, &nodepools, &vars, k8s.as_deref());
        input.node_role_arn = match super::nodeclass::node_role_source(nc) {
            NodeRoleSource::Role(name) => Some(role_arn(cx, &name, &cluster_arn).await?),
            // Launching with a profile made outside Karpenter passes the profile's role to EC2
            // just the same: the controller needs iam:PassRole on it (judged like any node
            // role). A profile that does not exist or holds no role is KD3006's finding.
            NodeRoleSource::InstanceProfile(_) => super::nodeclass::node_role_arn(cx, nc).await?,
            NodeRoleSource::None => None,
        };
        inputs.push(input);
    }
    let nodeclass_fields: BTreeSet<String> = nodeclasses
        .iter()
        .flat_map(|nc| nc.spec.iter())
        .filter(|(_, v)| !(v.is_null() || v.as_array().is_some_and(Vec::is_empty)))
        .map(|(k, _)| k.clone())
        .collect();
    let node_roles: BTreeSet<String> = inputs
        .iter()
        .filter_map(|i| i.node_role_arn.clone())
        .collect();
    let probes = reference::controller_probes(
        version,
        &InstallInput {
            vars: vars.clone(),
            flags,
            nodeclasses: inputs,
        },
    );
    // Probes with the same request context are asked in one request: the simulator answers
    // for every action on every resource of a request, and each probe keeps only its own
    // pairs. Fewer requests, and fewer rounds of them under IAM's concurrency limit.
    let mut requests: Vec<Batch> = Vec::new();
    for (i, p) in probes.iter().enumerate() {
        match requests.iter_mut().find(|b| b.context == p.context) {
            Some(b) => {
                b.actions.extend(p.actions.iter().cloned());
                b.resources.extend(p.resources.iter().cloned());
                b.probes.push(i);
            }
            None => requests.push(Batch {
                context: p.context.clone(),
                actions: p.actions.iter().cloned().collect(),
                resources: p.resources.iter().cloned().collect(),
                probes: vec![i],
            }),
        }
    }
    let principal = role.arn.as_str();
    let (answers, queue_exists) = futures::future::join(
        futures::future::join_all(requests.iter().map(|b| {
            let actions: Vec<String> = b.actions.iter().cloned().collect();
            let resources: Vec<String> = b.resources.iter().cloned().collect();
            async move {
                cx.simulate(principal, &actions, &resources, &b.context)
                    .await
            }
        })),
        async {
            match configured_queue {
                Some(queue) => cx.sqs_queue(queue).await.map(|q| q.is_some()),
                None => Ok(false),
            }
        },
    )
    .await;
    // The queue's statement is the one probe on the queue's ARN; without the queue it is not
    // judged (the probes keep their order, so the others' indices shift down).
    let mut kept: Vec<Option<usize>> = (0..probes.len()).map(Some).collect();
    if let Some(arn) = queue_arn
        .as_ref()
        .filter(|_| !matches!(queue_exists, Ok(true)))
    {
        queue_exists?;
        let mut next = 0;
        for (i, p) in probes.iter().enumerate() {
            kept[i] = if p.resources.contains(arn) {
                None
            } else {
                next += 1;
                Some(next - 1)
            };
        }
        vars.remove("interruptionQueue");
        vars.remove("queueArn");
    }
    let mut rows = Vec::new();
    for (batch, answer) in requests.iter().zip(answers) {
        let answer = answer?;
        for &i in &batch.probes {
            let p = &probes[i];
            let Some(probe) = kept[i] else {
                continue;
            };
            for row in answer
                .iter()
                .filter(|r| p.actions.contains(&r.action) && p.resources.contains(&r.resource))
            {
                rows.push(Decided {
                    row: row.clone(),
                    attribution: attribute(row),
                    probe,
                    launch: None,
                });
            }
        }
    }
    let probes: Vec<Probe> = probes
        .into_iter()
        .zip(&kept)
        .filter_map(|(p, k)| k.map(|_| p))
        .collect();
    let rows = with_launch_values(cx, &role.arn, &probes, rows, &nodeclasses, &nodepools).await?;
    Ok(Grants {
        role,
        controller_version,
        version,
        vars,
        probes,
        rows,
        node_roles,
        nodeclass_fields,
    })
}

/// Launches an SCP or boundary denied are asked again with the values this install's launches
/// carry (a guardrail on IMDS options, volumes or instance types uses keys a plain simulation
/// lacks, and IAM applies its negated operator to them): per EC2NodeClass the request stands
/// for, on `instance/*` its metadata options and market type, then, when still denied, one
/// instance type per family its NodePools allow; on `volume/*` each distinct volume's type and
/// encryption. Every other row is kept as it was. Healthy installs ask nothing more.
async fn with_launch_values(
    cx: &CheckCx,
    role: &str,
    probes: &[Probe],
    rows: Vec<Decided>,
    classes: &[Ec2NodeClass],
    pools: &[NodePool],
) -> Result<Vec<Decided>, FactError> {
    let guarded = |d: &Decided| {
        matches!(d.attribution, Attribution::Scp | Attribution::Boundary)
            && LAUNCH_ACTIONS.contains(&d.row.action.as_str())
            && LaunchResource::of(&d.row.resource).is_some()
    };
    // (probe, resource) → the actions denied there: one request asks for them all.
    let mut groups: BTreeMap<(usize, String), BTreeSet<String>> = BTreeMap::new();
    for d in rows.iter().filter(|d| guarded(d)) {
        groups
            .entry((d.probe, d.row.resource.clone()))
            .or_default()
            .insert(d.row.action.clone());
    }
    if groups.is_empty() {
        return Ok(rows);
    }
    let mut types = None;
    // (probe, resource, action) → how the launch fared.
    let mut decided: BTreeMap<(usize, String, String), (Attribution, LaunchDecision)> =
        BTreeMap::new();
    for ((probe, resource), actions) in groups {
        let p = &probes[probe];
        let kind = LaunchResource::of(&resource).unwrap_or(LaunchResource::Instance);
        let actions: Vec<String> = actions.into_iter().collect();
        let mine = classes
            .iter()
            .filter(|c| p.nodeclasses.is_empty() || p.nodeclasses.iter().any(|n| n == c.name()));
        // Per action: the worst attribution met and what it rests on.
        let mut acc: BTreeMap<String, (Attribution, LaunchDecision)> = actions
            .iter()
            .map(|a| (a.clone(), (Attribution::Allowed, LaunchDecision::default())))
            .collect();
        for nc in mine {
            let users = crate::ec2::pools_of(nc, pools);
            let values = launch_values(nc, &users);
            let sets = values.for_resource(kind);
            if sets.is_empty() {
                // The AMI's own volumes: nothing better to ask with; the denial stands.
                for (a, (who, l)) in acc.iter_mut() {
                    let original = rows
                        .iter()
                        .find(|d| {
                            d.probe == probe && d.row.resource == resource && &d.row.action == a
                        })
                        .map_or(Attribution::Scp, |d| d.attribution);
                    *who = original;
                    l.nodeclasses.push(nc.name().to_string());
                    l.unknown_volumes.push(nc.name().to_string());
                    l.class_blocked = true;
                }
                continue;
            }
            for set in sets {
                let context = merged(&p.context, &set);
                let answer = cx
                    .simulate(role, &actions, std::slice::from_ref(&resource), &context)
                    .await?;
                // Still denied on an instance: try the instance types the NodePools allow,
                // one per family, in case the guardrail holds launches to some of them.
                let mut tried: Vec<(String, Vec<Row>)> = Vec::new();
                if kind == LaunchResource::Instance && answer.iter().any(|r| !allowed(r)) {
                    let (t, o) = match &types {
                        Some(read) => read,
                        None => types.insert((
                            cx.instance_types().await?,
                            cx.instance_type_offerings().await?,
                        )),
                    };
                    for it in launchable_sample(nc, &users, t, o) {
                        let mut with_type = set.clone();
                        with_type.push(launch::entry("ec2:InstanceType", "string", it.clone()));
                        let context = merged(&p.context, &with_type);
                        let rows = cx
                            .simulate(role, &actions, std::slice::from_ref(&resource), &context)
                            .await?;
                        tried.push((it, rows));
                    }
                }
                for row in &answer {
                    let Some((who, l)) = acc.get_mut(&row.action) else {
                        continue;
                    };
                    if allowed(row) {
                        if *who == Attribution::Allowed {
                            l.values = launch::describe(&set);
                        }
                        continue;
                    }
                    let with = |ok: bool| -> Vec<String> {
                        tried
                            .iter()
                            .filter(|(_, rs)| {
                                rs.iter()
                                    .any(|r| r.action == row.action && allowed(r) == ok)
                            })
                            .map(|(t, _)| t.clone())
                            .collect()
                    };
                    let (passed, denied) = (with(true), with(false));
                    if !passed.is_empty() && denied.is_empty() {
                        // Every type tried passes: the guardrail holds launches to types this
                        // install keeps to.
                        l.allowed_types.extend(passed);
                        if *who == Attribution::Allowed {
                            l.values = launch::describe(&set);
                        }
                        continue;
                    }
                    *who = (*who).max(attribute(row));
                    l.values = launch::describe(&set);
                    if !l.nodeclasses.iter().any(|n| n == nc.name()) {
                        l.nodeclasses.push(nc.name().to_string());
                    }
                    l.class_blocked |= passed.is_empty();
                    l.denied_types.extend(denied);
                    l.allowed_types.extend(passed);
                }
            }
        }
        for (action, outcome) in acc {
            decided.insert((probe, resource.clone(), action), outcome);
        }
    }
    Ok(rows
        .into_iter()
        .map(|mut d| {
            if let Some((who, launch)) =
                decided.remove(&(d.probe, d.row.resource.clone(), d.row.action.clone()))
            {
                // A partial block keeps the guardrail's name (KD2101 and KD2103 report it as
                // such); a launch this install's values pass is allowed.
                d.attribution = who;
                if who == Attribution::Allowed {
                    d.row.decision = Decision::Allowed;
                    d.row.allowed_by_organizations = Some(true);
                    d.row.allowed_by_boundary = d.row.allowed_by_boundary.map(|_| true);
                }
                let mut launch = launch;
                for list in [&mut launch.denied_types, &mut launch.allowed_types] {
                    list.sort();
                    list.dedup();
                }
                d.launch = Some(launch);
            }
            d
        })
        .collect())
}

fn allowed(row: &Row) -> bool {
    attribute(row) == Attribution::Allowed
}

/// A request's context with launch values added (a value given twice keeps the launch's).
fn merged(base: &[ContextEntry], extra: &[ContextEntry]) -> Vec<ContextEntry> {
    let mut out: Vec<ContextEntry> = base
        .iter()
        .filter(|e| !extra.iter().any(|x| x.key.eq_ignore_ascii_case(&e.key)))
        .cloned()
        .collect();
    out.extend(extra.iter().cloned());
    out.sort();
    out
}

/// One instance type per family that a NodePool of `nc` can launch in its subnets' zones.
fn launchable_sample(
    nc: &Ec2NodeClass,
    pools: &[&NodePool],
    types: &[crate::facts::InstanceType],
    offerings: &[crate::facts::InstanceTypeOffering],
) -> Vec<String> {
    let zones = subnet_zones(nc);
    let mut launchable = Vec::new();
    for pool in pools {
        let n = crate::requirements::narrow(
            types,
            offerings,
            &zones,
            &pool.spec.template.spec.requirements,
            &ami_arches(nc),
        );
        launchable.extend(n.launchable);
    }
    // The smallest size of each family first, by name within a size: the same sample whatever
    // order the catalogue was read in.
    let vcpus: BTreeMap<&str, i64> = types
        .iter()
        .map(|t| (t.instance_type.as_str(), t.vcpus))
        .collect();
    launchable.sort_by_key(|t| {
        let family = t.split('.').next().unwrap_or(t).to_string();
        (
            family,
            vcpus.get(t.as_str()).copied().unwrap_or(i64::MAX),
            t.clone(),
        )
    });
    launchable.dedup();
    type_sample(&launchable)
}

/// A role's ARN by name, path included (PassRole and the simulator match it exactly); for a
/// role that does not exist (another check reports that), the path-less ARN in the cluster's
/// account.
pub async fn role_arn(
    cx: &CheckCx,
    name: &str,
    cluster_arn: &Arn<'_>,
) -> Result<String, FactError> {
    Ok(match cx.iam_role(name).await?.as_ref() {
        Some(r) => r.arn.clone(),
        None => format!(
            "arn:{}:iam::{}:role/{name}",
            cluster_arn.partition, cluster_arn.account
        ),
    })
}

/// The placeholders every simulation needs, from the cluster's ARN.
pub fn base_vars(cluster_arn: &Arn, cluster: &str, arn: &str) -> BTreeMap<String, String> {
    let partition = cluster_arn.partition.to_string();
    let region = cluster_arn.region.to_string();
    let pricing = crate::iam::request::pricing_region(&region);
    let ec2 = if partition == "aws-cn" {
        "ec2.amazonaws.com.cn"
    } else {
        "ec2.amazonaws.com"
    };
    [
        ("partition", partition.as_str()),
        ("region", region.as_str()),
        ("account", cluster_arn.account),
        ("cluster", cluster),
        ("clusterArn", arn),
        ("pricingRegion", pricing),
        ("ec2ServicePrincipal", ec2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn nodeclass_input(
    nc: &Ec2NodeClass,
    nodepools: &[NodePool],
    vars: &BTreeMap<String, String>,
    k8s: Option<&str>,
) -> NodeClassInput {
    let v = |k: &str| vars.get(k).cloned().unwrap_or_default();
    let (partition, region, account) = (v("partition"), v("region"), v("account"));
    let users = crate::ec2::pools_of(nc, nodepools);
    let mut arches: BTreeSet<&str> = BTreeSet::new();
    for np in &users {
        for r in &np.spec.template.spec.requirements {
            if r.key == "kubernetes.io/arch" && r.operator == "In" {
                arches.extend(r.values.iter().map(String::as_str));
            }
        }
    }
    if arches.is_empty() {
        // Karpenter's default: both architectures are possible.
        arches.extend(["amd64", "arm64"]);
    }
    let arches: Vec<&str> = arches.into_iter().collect();
    // A v1beta1 class without terms reads its family's default AMIs from SSM too.
    let terms = crate::ec2::ami_selector_terms(nc);
    let mut ssm = BTreeSet::new();
    let mut uses_alias = false;
    for t in &terms {
        if let (Some(alias), Some(k)) = (t.get("alias").and_then(Value::as_str), k8s) {
            uses_alias = true;
            ssm.extend(alias_parameter_paths(alias, k, &arches).unwrap_or_default());
        }
        if let Some(p) = t.get("ssmParameter").and_then(Value::as_str) {
            uses_alias = true;
            ssm.insert(p.to_string());
        }
    }
    let tags: BTreeMap<String, String> = nc
        .spec
        .get("tags")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let profile = nc
        .status
        .rest
        .get("instanceProfile")
        .and_then(Value::as_str)
        .or_else(|| nc.spec.get("instanceProfile").and_then(Value::as_str));
    NodeClassInput {
        name: nc.name().to_string(),
        uid: nc.metadata.uid.clone().unwrap_or_default(),
        nodepool: users.first().map(|np| np.name().to_string()),
        spec_tags: tags,
        image_arns: status_ids(nc, "amis")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}::image/{id}"))
            .collect(),
        subnet_arns: status_ids(nc, "subnets")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}:{account}:subnet/{id}"))
            .collect(),
        security_group_arns: status_ids(nc, "securityGroups")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}:{account}:security-group/{id}"))
            .collect(),
        ssm_parameter_arns: ssm
            .into_iter()
            .map(|p| ssm_parameter_arn(&p, &partition, &region, &account))
            .collect(),
        instance_profile_arn: profile
            .map(|p| format!("arn:{partition}:iam::{account}:instance-profile/{p}")),
        node_role_arn: None,
        uses_role: nc.spec.contains_key("role"),
        uses_alias,
        capacity_reservations: nc.spec.contains_key("capacityReservationSelectorTerms"),
        placement_group: nc.spec.contains_key("placementGroupSelector"),
    }
}

/// One simulation request standing for the probes that share its context.
struct Batch {
    context: Vec<ContextEntry>,
    actions: BTreeSet<String>,
    resources: BTreeSet<String>,
    probes: Vec<usize>,
}

/// A launch a guardrail (`who`: "an organization SCP", "the permissions boundary …") denies
/// for some of the instance types the NodePools allow while others pass: a warning, because
/// Karpenter still launches the allowed types, but each launch it tries with a denied one
/// fails, and so does EC2NodeClass validation when the type it tries is denied.
pub fn partial_launch_finding(
    g: &Grants,
    rows: &[&Decided],
    who: &str,
) -> Option<crate::finding::Finding> {
    let mut denied = BTreeSet::new();
    let mut passed = BTreeSet::new();
    let mut classes = BTreeSet::new();
    let mut values = BTreeSet::new();
    for d in rows {
        let Some(l) = d.launch.as_ref().filter(|l| l.partial()) else {
            continue;
        };
        denied.extend(l.denied_types.iter().cloned());
        passed.extend(l.allowed_types.iter().cloned());
        classes.extend(l.nodeclasses.iter().cloned());
        values.extend(l.values.iter().cloned());
    }
    if denied.is_empty() {
        return None;
    }
    let families = |types: &BTreeSet<String>| -> Vec<String> {
        types
            .iter()
            .map(|t| t.split('.').next().unwrap_or(t).to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let list = |t: &BTreeSet<String>| t.iter().cloned().collect::<Vec<_>>().join(", ");
    let allowed_families = families(&passed);
    let mut f = crate::finding::Finding::new(
        g.object(),
        format!(
            "{who} denies launching some of the instance types the NodePools of {} allow: tried {} (denied), {} (allowed); launches Karpenter tries with a denied type fail",
            classes.iter().cloned().collect::<Vec<_>>().join(", "),
            list(&denied),
            list(&passed)
        ),
    )
    .severity(crate::finding::Severity::Warning)
    .evidence("deniedInstanceTypes", denied.iter().cloned().collect::<Vec<_>>())
    .evidence("allowedInstanceTypes", passed.iter().cloned().collect::<Vec<_>>())
    .evidence("askedWith", values.into_iter().collect::<Vec<_>>())
    .evidence("role", g.role.arn.clone())
    .hint(format!(
        "keep the NodePools to instance types the guardrail allows, e.g. the requirement {{\"key\": \"karpenter.k8s.aws/instance-family\", \"operator\": \"In\", \"values\": [{}]}}; EC2NodeClass validation launches one compatible type as a DryRun (m5.large for Windows) and fails when that type is denied",
        allowed_families.iter().map(|f| format!("\"{f}\"")).collect::<Vec<_>>().join(", ")
    ));
    if let Some(note) = g.version_note() {
        f = f.evidence("note", note);
    }
    Some(f)
}

/// Evidence of a launch denial asked again with this install's values: the values sent, the
/// EC2NodeClasses whose launches stay denied, and the instance types tried (nothing is added
/// when the denial was not asked again).
pub fn launch_evidence(
    mut f: crate::finding::Finding,
    rows: &[&Decided],
) -> crate::finding::Finding {
    let (mut values, mut classes) = (BTreeSet::new(), BTreeSet::new());
    let (mut denied, mut passed) = (BTreeSet::new(), BTreeSet::new());
    for l in rows.iter().filter_map(|d| d.launch.as_ref()) {
        values.extend(l.values.iter().cloned());
        values.extend(
            l.unknown_volumes
                .iter()
                .map(|c| format!("{c}: volumes are the AMI's own (values unknown)")),
        );
        classes.extend(l.nodeclasses.iter().cloned());
        denied.extend(l.denied_types.iter().cloned());
        passed.extend(l.allowed_types.iter().cloned());
    }
    let list = |s: BTreeSet<String>| s.into_iter().collect::<Vec<_>>();
    if !values.is_empty() {
        f = f.evidence("askedWith", list(values));
    }
    if !classes.is_empty() {
        f = f.evidence("deniedFor", list(classes));
    }
    if !denied.is_empty() {
        f = f.evidence("deniedInstanceTypes", list(denied));
    }
    if !passed.is_empty() {
        f = f.evidence("allowedInstanceTypes", list(passed));
    }
    f
}

/// The ARN of an SSM parameter Karpenter reads for an AMI. AWS's public parameters
/// (`/aws/service/…`) carry no account in their ARN; a parameter of the account does (the
/// custom `ssmParameter` of an AMI selector term, which Karpenter's docs say to add to the
/// controller's `ssm:GetParameter` grant). A name without a leading slash is still
/// `parameter/NAME` in its ARN, and a term that gives an ARN is taken as it is.
fn ssm_parameter_arn(name: &str, partition: &str, region: &str, account: &str) -> String {
    if name.starts_with("arn:") {
        return name.to_string();
    }
    let path = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    };
    let owner = if path.starts_with("/aws/service/") {
        ""
    } else {
        account
    };
    format!("arn:{partition}:ssm:{region}:{owner}:parameter{path}")
}

/// `action on resource` lines of some rows, grouped per action.
pub fn describe(rows: &[&Decided]) -> Vec<String> {
    let mut per_action: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for d in rows {
        per_action
            .entry(d.row.action.as_str())
            .or_default()
            .push(d.row.resource.as_str());
    }
    per_action
        .into_iter()
        .map(|(action, resources)| match resources.as_slice() {
            [one] => format!("{action} on {one}"),
            many => format!("{action} on {} resources ({}, …)", many.len(), many[0]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ssm_parameter_arn;

    #[test]
    fn ssm_parameter_arns_carry_the_owner_aws_gives_them() {
        assert_eq!(
            ssm_parameter_arn(
                "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
                "aws",
                "us-west-2",
                "111122223333"
            ),
            "arn:aws:ssm:us-west-2::parameter/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
        );
        assert_eq!(
            ssm_parameter_arn("/platform/golden-ami", "aws", "us-west-2", "111122223333"),
            "arn:aws:ssm:us-west-2:111122223333:parameter/platform/golden-ami"
        );
        assert_eq!(
            ssm_parameter_arn("my-custom-parameter", "aws", "us-west-2", "111122223333"),
            "arn:aws:ssm:us-west-2:111122223333:parameter/my-custom-parameter"
        );
        let arn = "arn:aws:ssm:us-west-2:444455556666:parameter/shared/ami";
        assert_eq!(
            ssm_parameter_arn(arn, "aws", "us-west-2", "111122223333"),
            arn
        );
    }
}
