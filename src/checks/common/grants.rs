//! What the controller role may do: the reference statements of the controller's release,
//! simulated with `iam:SimulatePrincipalPolicy` against this install's concrete resources
//! and request context. Shared by KD2101–KD2104 and the checks that simulate one more action
//! for the controller role, computed from memoized facts, so the simulations run once however
//! many checks read them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::cluster::{cluster_arn, minor};
use super::codes::{CONTROLLER_CREDENTIALS_MISSING, IRSA_ROLE_INVALID};
use super::nodeclass::NodeRoleSource;
use super::wiring;
use crate::arn::Arn;
use crate::check::CheckCx;
use crate::facts::{FactError, IamRole};
use crate::iam::reference::{
    self, Coverage, InstallInput, NodeClassInput, Probe, Version, alias_parameter_paths,
};
use crate::iam::simulation::{Attribution, Row, attribute};
use crate::model::{ControllerDeployment, Ec2NodeClass, NodePool};

/// One denied (or allowed) action on one resource, with the reference statements behind it.
#[derive(Clone, Debug)]
pub struct Decided {
    pub row: Row,
    pub attribution: Attribution,
    pub probe: usize,
}

pub struct Grants {
    pub role: IamRole,
    /// The controller's release as read from its image, and the release whose data is used.
    pub controller_version: String,
    pub version: Version,
    pub vars: BTreeMap<String, String>,
    pub probes: Vec<Probe>,
    pub rows: Vec<Decided>,
}

impl Grants {
    pub fn object(&self) -> String {
        format!("IAM role {}", self.role.name)
    }

    /// The rows stopped by `who`.
    pub fn denied_by(&self, who: Attribution) -> impl Iterator<Item = &Decided> {
        self.rows.iter().filter(move |d| d.attribution == who)
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

/// The reference statements of the controller's release, simulated for its role.
pub async fn controller_grants(cx: &CheckCx) -> Result<Grants, FactError> {
    let (w, role) = controller_role(cx).await?;
    let Some((deployments, index)) = cx.controller().await? else {
        return Err(skip("the Karpenter controller"));
    };
    let controller = ControllerDeployment::new(&deployments[index]);
    let controller_version = controller.version().unwrap_or_default();
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
    // statements are judged, so a queue that cannot be read leaves the verdict unknown.
    let configured_queue = controller
        .env("INTERRUPTION_QUEUE")
        .filter(|q| !q.is_empty());
    let queue_exists = match configured_queue {
        Some(queue) => cx.sqs_queue(queue).await?.is_some(),
        None => false,
    };
    if let Some(queue) = configured_queue.filter(|_| queue_exists) {
        flags.insert("interruptionQueue.set".to_string());
        vars.insert("interruptionQueue".into(), queue.to_string());
        vars.insert(
            "queueArn".into(),
            format!(
                "arn:{}:sqs:{}:{}:{queue}",
                cluster_arn.partition, cluster_arn.region, cluster_arn.account
            ),
        );
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
    let probes = reference::controller_probes(
        version,
        &InstallInput {
            vars: vars.clone(),
            flags,
            nodeclasses: inputs,
        },
    );
    let answers = futures::future::join_all(
        probes
            .iter()
            .map(|p| cx.simulate(&role.arn, &p.actions, &p.resources, &p.context)),
    )
    .await;
    let mut rows = Vec::new();
    for (i, answer) in answers.into_iter().enumerate() {
        for row in answer? {
            let attribution = attribute(&row);
            rows.push(Decided {
                row,
                attribution,
                probe: i,
            });
        }
    }
    Ok(Grants {
        role,
        controller_version,
        version,
        vars,
        probes,
        rows,
    })
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

fn ids(nc: &Ec2NodeClass, field: &str) -> Vec<String> {
    nc.status
        .rest
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
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
        image_arns: ids(nc, "amis")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}::image/{id}"))
            .collect(),
        subnet_arns: ids(nc, "subnets")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}:{account}:subnet/{id}"))
            .collect(),
        security_group_arns: ids(nc, "securityGroups")
            .into_iter()
            .map(|id| format!("arn:{partition}:ec2:{region}:{account}:security-group/{id}"))
            .collect(),
        ssm_parameter_arns: ssm
            .into_iter()
            .map(|p| format!("arn:{partition}:ssm:{region}::parameter{p}"))
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
