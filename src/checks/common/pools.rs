//! The NodePools as the schedulers see them, for the pending-pod analysis: each pool's
//! requirements, taints, headroom, instance types and readiness. Self-managed Karpenter serves
//! the pools of its EC2NodeClass, EKS Auto Mode those of its own NodeClass (kubernetes-sigs/
//! karpenter#1818); a pod is served when a pool of either kind takes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};

use crate::automode::nodeclass::not_ready as not_ready_class;
use crate::automode::pools::{auto_mode_launches, restricted_keys};
use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::checks::common::codes;
use crate::checks::common::nodeclaim::{pool_class, pool_of};
use crate::checks::common::nodeclass::{ami_arches, subnet_zones};
use crate::facts::{InstanceType, InstanceTypeOffering};
use crate::model::{AutoNodeClass, ControllerDeployment, Ec2NodeClass, NodeClaim, NodePool};
use crate::quantity::Quantity;
use crate::scheduling::allocatable::{NodeSettings, Resources, allocatable, capacity};
use crate::scheduling::pods;
use crate::scheduling::sets::{Requirements, ValueSet};
use crate::scheduling::{Candidate, Pool, untolerated};

/// What the NodePools' verdicts are built from.
pub struct PoolFacts {
    pub nodepools: Arc<Vec<NodePool>>,
    classes: Arc<Vec<Ec2NodeClass>>,
    claims: Arc<Vec<NodeClaim>>,
    daemonsets: Arc<Vec<DaemonSet>>,
    types: Arc<Vec<InstanceType>>,
    offerings: Arc<Vec<InstanceTypeOffering>>,
    overhead_env: Option<String>,
    enis_env: Option<String>,
    /// A self-managed controller runs (its Deployment was found).
    controller: bool,
    /// Read only where a NodePool names Auto Mode's NodeClass.
    auto: Option<AutoFacts>,
}

/// What EKS Auto Mode's pools are judged with.
struct AutoFacts {
    /// `computeConfig.enabled`: Auto Mode launches anything at all.
    compute: bool,
    classes: Arc<Vec<AutoNodeClass>>,
    now: jiff::Timestamp,
}

impl PoolFacts {
    /// Every pool's facts, Auto Mode's included (the pending-pod analysis).
    pub async fn read(
        cx: &CheckCx,
        controller: Option<&(Arc<Vec<Deployment>>, usize)>,
        claims: Arc<Vec<NodeClaim>>,
    ) -> Result<Self, FactError> {
        Self::read_for(cx, controller, claims, true).await
    }

    /// The self-managed controller's pools only, for a rule about that controller (its
    /// feature gates): Auto Mode's facts are not read, and its pools are not listed.
    pub async fn read_self_managed(
        cx: &CheckCx,
        controller: Option<&(Arc<Vec<Deployment>>, usize)>,
        claims: Arc<Vec<NodeClaim>>,
    ) -> Result<Self, FactError> {
        Self::read_for(cx, controller, claims, false).await
    }

    async fn read_for(
        cx: &CheckCx,
        controller: Option<&(Arc<Vec<Deployment>>, usize)>,
        claims: Arc<Vec<NodeClaim>>,
        with_auto_mode: bool,
    ) -> Result<Self, FactError> {
        let env = |name: &str| -> Option<String> {
            let (deployments, i) = controller?;
            ControllerDeployment::new(&deployments[*i])
                .env(name)
                .map(str::to_string)
        };
        let nodepools = cx.nodepools().await?;
        let auto = if with_auto_mode && nodepools.iter().any(NodePool::is_auto_mode) {
            let described = cluster(cx).await?;
            Some(AutoFacts {
                compute: described.auto_mode(),
                classes: cx.auto_nodeclasses().await?,
                now: cx.now(),
            })
        } else {
            None
        };
        let classes = match cx.ec2_nodeclasses().await {
            // EKS installs only the karpenter.sh CRDs: on Auto Mode alone there is no
            // EC2NodeClass API, and no pool of it is served (KD4201 says so).
            Err(FactError::NotInstalled { .. }) if auto.is_some() => Arc::new(Vec::new()),
            other => other?,
        };
        Ok(PoolFacts {
            nodepools,
            classes,
            claims,
            daemonsets: cx.daemonsets().await?,
            types: cx.instance_types().await?,
            offerings: cx.instance_type_offerings().await?,
            overhead_env: env("VM_MEMORY_OVERHEAD_PERCENT"),
            enis_env: env("RESERVED_ENIS"),
            controller: controller.is_some(),
            auto,
        })
    }

    /// The NodePools the schedulers try, those being deleted left out: the self-managed
    /// controller's, and EKS Auto Mode's (each serves only its own group's pools).
    pub fn pools(&self) -> Vec<Pool<'_>> {
        self.nodepools
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| self.auto.is_some() || !p.is_auto_mode())
            .map(|np| match &self.auto {
                // `auto` is read whenever a pool names Auto Mode's NodeClass.
                Some(auto) if np.is_auto_mode() => self.auto_pool(np, auto),
                _ => {
                    let mut pool = build_pool(
                        np,
                        &self.classes,
                        &self.claims,
                        &self.daemonsets,
                        &self.types,
                        &self.offerings,
                        self.overhead_env.as_deref(),
                        self.enis_env.as_deref(),
                    );
                    // Beside Auto Mode with no controller of its own, nothing serves the pool.
                    if self.auto.as_ref().is_some_and(|a| a.compute) && !self.controller {
                        pool.not_ready = Some((
                            "no self-managed Karpenter runs beside EKS Auto Mode to serve it"
                                .to_string(),
                            vec![codes::AUTOMODE_NODEPOOL_UNSERVED],
                        ));
                    }
                    pool
                }
            })
            .collect()
    }

    /// An EKS Auto Mode pool as Auto Mode's scheduler sees it (docs/auto-mode.md §2.4, §2.5):
    /// the region's types Auto Mode launches (more than 1 vCPU, no nano, micro or small), in
    /// every zone of the region (the NodeClass's subnets are not resolved here, so a zone is
    /// never ruled out on their account), with Auto Mode's node labels and the pool's own
    /// limits, taints and DaemonSets. What keeps the pool from launching is owned by Auto
    /// Mode's checks.
    fn auto_pool<'a>(&'a self, np: &NodePool, auto: &AutoFacts) -> Pool<'a> {
        let template = &np.spec.template;
        let class_name = np.class_name().unwrap_or_default().to_string();
        let (requirements, mut not_ready) = template_requirements(
            np,
            [
                ("eks.amazonaws.com/nodeclass", class_name.clone()),
                ("eks.amazonaws.com/compute-type", "auto".to_string()),
            ],
        );
        let class = auto.classes.iter().find(|c| c.name() == class_name);
        if not_ready.is_none() {
            not_ready = if !auto.compute {
                Some((
                    "EKS Auto Mode's compute is off".to_string(),
                    vec![codes::AUTOMODE_NODEPOOL_UNSERVED],
                ))
            } else if !restricted_keys(np).is_empty() {
                Some((
                    format!(
                        "EKS Auto Mode rejects its keys {}",
                        restricted_keys(np).join(", ")
                    ),
                    vec![codes::AUTOMODE_NODEPOOL_UNSERVED],
                ))
            } else {
                match class {
                    None => Some((
                        format!("its NodeClass {class_name} does not exist"),
                        vec![codes::AUTOMODE_NODEPOOL_UNSERVED],
                    )),
                    Some(c) if not_ready_class(c, auto.now).is_some() => Some((
                        format!("its NodeClass {class_name} is not Ready"),
                        vec![codes::AUTOMODE_NODECLASS_NOT_READY],
                    )),
                    Some(_) => np
                        .status
                        .condition("Ready")
                        .filter(|r| r.status == "False")
                        .map(|r| (r.describe(), vec![codes::NODEPOOL_NOT_READY])),
                }
            };
        }
        let settings = NodeSettings::default();
        let mut offered: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for o in self.offerings.iter() {
            offered
                .entry(o.instance_type.as_str())
                .or_default()
                .insert(o.zone.clone());
        }
        let types: Vec<Candidate<'a>> = self
            .types
            .iter()
            .filter(|t| auto_mode_launches(t))
            .filter_map(|t| {
                Some(Candidate {
                    it: t,
                    zones: offered.get(t.instance_type.as_str())?.clone(),
                    allocatable: allocatable(t, &settings),
                    capacity: capacity(t, &settings),
                })
            })
            .collect();
        let taints = template.spec.taints.clone();
        let daemon_overhead = overhead(&self.daemonsets, &requirements, &taints, true);
        Pool {
            name: np.name().to_string(),
            weight: np.spec.weight.unwrap_or(0),
            not_ready,
            requirements,
            taints,
            headroom: headroom(np, &self.claims),
            types,
            // Auto Mode picks its AMIs for both architectures.
            ami_arches: BTreeSet::new(),
            daemon_overhead,
            auto_mode: true,
        }
    }
}

/// A pool's requirements as its nodes carry them (its requirements, its template labels,
/// `karpenter.sh/nodepool` and the labels of its kind of NodeClass), and, when a requirement is
/// one the API would reject, why the pool is not ready.
fn template_requirements<const N: usize>(
    np: &NodePool,
    class_labels: [(&str, String); N],
) -> (Requirements, Option<(String, Vec<&'static str>)>) {
    let template = &np.spec.template;
    let (mut requirements, not_ready) = match Requirements::from_list(&template.spec.requirements) {
        Ok(r) => (r, None),
        Err(bad) => (
            Requirements::default(),
            Some((
                format!("a requirement the API would reject: {bad}"),
                vec![codes::NODEPOOL_NOT_READY],
            )),
        ),
    };
    for (k, v) in &template.metadata.labels {
        requirements.add(k, ValueSet::only([v.clone()]));
    }
    requirements.add(
        "karpenter.sh/nodepool",
        ValueSet::only([np.name().to_string()]),
    );
    for (k, v) in class_labels {
        requirements.add(k, ValueSet::only([v]));
    }
    (requirements, not_ready)
}

#[allow(clippy::too_many_arguments)]
fn build_pool<'a>(
    np: &NodePool,
    classes: &[Ec2NodeClass],
    claims: &[NodeClaim],
    daemonsets: &[DaemonSet],
    types: &'a [InstanceType],
    offerings: &[InstanceTypeOffering],
    overhead_env: Option<&str>,
    enis_env: Option<&str>,
) -> Pool<'a> {
    let template = &np.spec.template;
    let class_name = template
        .spec
        .node_class_ref
        .as_ref()
        .and_then(|r| r.name.clone())
        .unwrap_or_default();
    let class = pool_class(np, classes);
    let (requirements, mut not_ready) =
        template_requirements(np, [("karpenter.k8s.aws/ec2nodeclass", class_name.clone())]);
    let zones = class.map(subnet_zones).unwrap_or_default();
    if not_ready.is_none() {
        not_ready = match class {
            None => Some((
                format!("its EC2NodeClass {class_name} does not exist"),
                vec![codes::NODEPOOL_NODECLASSREF_INVALID],
            )),
            Some(c)
                if c.status
                    .condition("Ready")
                    .is_some_and(|r| r.status != "True") =>
            {
                Some((
                    format!(
                        "its EC2NodeClass {class_name} is not Ready ({})",
                        c.status
                            .condition("Ready")
                            .map(|r| r.describe())
                            .unwrap_or_default()
                    ),
                    vec![codes::NODECLASS_NOT_READY],
                ))
            }
            Some(_) if zones.is_empty() => Some((
                format!("its EC2NodeClass {class_name} has no resolved subnets"),
                vec![
                    codes::NODECLASS_SUBNETS_UNRESOLVED,
                    codes::NODECLASS_NOT_READY,
                ],
            )),
            Some(_) => np
                .status
                .condition("Ready")
                .filter(|r| r.status == "False")
                .map(|r| (r.describe(), vec![codes::NODEPOOL_NOT_READY])),
        };
    }
    let settings = class
        .map(|c| NodeSettings::from_class(&c.spec, overhead_env, enis_env))
        .unwrap_or_default();
    let mut offered: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for o in offerings.iter().filter(|o| zones.contains(&o.zone)) {
        offered
            .entry(o.instance_type.as_str())
            .or_default()
            .insert(o.zone.clone());
    }
    let candidates: Vec<Candidate<'a>> = types
        .iter()
        .filter_map(|t| {
            let zones = offered.get(t.instance_type.as_str())?.clone();
            Some(Candidate {
                it: t,
                zones,
                allocatable: allocatable(t, &settings),
                capacity: capacity(t, &settings),
            })
        })
        .collect();
    let taints = template.spec.taints.clone();
    let daemon_overhead = overhead(daemonsets, &requirements, &taints, false);
    Pool {
        name: np.name().to_string(),
        weight: np.spec.weight.unwrap_or(0),
        not_ready,
        requirements,
        taints,
        headroom: headroom(np, claims),
        types: candidates,
        ami_arches: class.map(ami_arches).unwrap_or_default(),
        daemon_overhead,
        auto_mode: false,
    }
}

/// The requests of the DaemonSet pods that would run on each node of a pool, summed.
fn overhead(
    daemonsets: &[DaemonSet],
    requirements: &Requirements,
    taints: &[k8s_openapi::api::core::v1::Taint],
    auto_mode: bool,
) -> Resources {
    daemonsets
        .iter()
        .filter(|ds| daemon_lands(ds, requirements, taints, auto_mode))
        .filter_map(|ds| ds.spec.as_ref()?.template.spec.as_ref())
        .map(pods::requests)
        .fold(Resources::new(), |mut acc, r| {
            for (k, v) in r {
                let total = acc.get(&k).and_then(|a| a.checked_add(v)).unwrap_or(v);
                acc.insert(k, total);
            }
            acc
        })
}

/// Whether a DaemonSet's pods would run on the pool's nodes: they tolerate its taints and
/// some required term of theirs is compatible with its requirements.
fn daemon_lands(
    ds: &DaemonSet,
    pool: &Requirements,
    taints: &[k8s_openapi::api::core::v1::Taint],
    auto_mode: bool,
) -> bool {
    let Some(spec) = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref()) else {
        return false;
    };
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    if untolerated(taints, &tolerations).is_some() {
        return false;
    }
    pods::alternatives(spec).is_ok_and(|alts| {
        alts.iter()
            .any(|a| pool.compatible_on(a, auto_mode).is_ok())
    })
}

/// What is left under each of the pool's limits: usage from `status.resources` (Karpenter's
/// own tally, with `nodes` from v1.11), else the pool's NodeClaims' capacity.
fn headroom(np: &NodePool, claims: &[NodeClaim]) -> Resources {
    let mine: Vec<&NodeClaim> = claims.iter().filter(|c| pool_of(c) == np.name()).collect();
    let status = np.status.rest.get("resources");
    let quantity = Quantity::from_json;
    let mut out = Resources::new();
    for (resource, limit) in &np.spec.limits {
        let Some(limit) = quantity(limit) else {
            continue;
        };
        let used = if resource == "nodes" {
            Some(Quantity::units(mine.len() as i64))
        } else {
            status
                .and_then(|s| s.get(resource))
                .and_then(quantity)
                .or_else(|| {
                    mine.iter()
                        .filter_map(|c| c.status.capacity.get(resource))
                        .filter_map(Quantity::parse)
                        .try_fold(Quantity::ZERO, |a, q| a.checked_add(q))
                })
        };
        if let Some(used) = used {
            out.insert(resource.clone(), limit.saturating_sub(used));
        }
    }
    out
}
