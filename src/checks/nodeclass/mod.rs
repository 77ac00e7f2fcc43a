//! KD3xxx: whether each EC2NodeClass resolves to things EC2 can launch with: subnets,
//! security groups, AMIs, a node role and instance profile the controller may pass. Shared
//! here: the cluster being diagnosed, selector judgement for subnets and security groups, AMI
//! resolution and the node role of a NodeClass. All of it is computed from memoized facts, so
//! checks that share a step share its API calls.

pub mod ami_mismatch;
pub mod ami_unresolvable;
pub mod ebs_kms_unusable;
pub mod instance_profile_invalid;
pub mod node_role_invalid;
pub mod not_ready;
pub mod passrole_denied;
pub mod security_groups_unresolved;
pub mod subnet_ips_low;
pub mod subnets_unresolved;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::arn::Arn;
use crate::check::{CheckCx, Finding};
pub use crate::checks::identity::grants;
use crate::ec2::{self, AmiTerm, Term};
use crate::facts::{EksCluster, FactError, Image, SecurityGroup, Subnet};
use crate::iam::reference::alias_parameter_paths;
use crate::model::{Ec2NodeClass, NodePool, object_ref};

/// The EKS cluster under diagnosis, or why there is none to judge against.
pub async fn cluster(cx: &CheckCx) -> Result<EksCluster, FactError> {
    let Some(name) = cx.target().cluster else {
        // The name comes from --cluster or the controller's CLUSTER_NAME: when the controller
        // could not be read, that is the reason to give (with its missing permission).
        cx.controller().await?;
        return Err(FactError::NotFound {
            message: "the EKS cluster name is unknown (pass --cluster)".to_string(),
        });
    };
    match cx.eks_cluster(&name).await?.as_ref() {
        Some(c) => Ok(c.clone()),
        None => Err(FactError::NotInstalled {
            what: format!("the EKS cluster {name}"),
        }),
    }
}

/// The cluster's ARN, parsed (its partition, region and account name other resources).
pub fn cluster_arn(c: &EksCluster) -> Result<Arn<'_>, FactError> {
    Arn::parse(&c.arn).ok_or_else(|| FactError::Malformed {
        message: format!("the cluster ARN {:?} is not an ARN", c.arn),
    })
}

pub fn object(nc: &Ec2NodeClass) -> String {
    object_ref("EC2NodeClass", &nc.metadata)
}

/// A subnet or security group, as selector judgement sees it.
pub trait Discoverable {
    fn id(&self) -> &str;
    fn vpc(&self) -> &str;
    fn tags(&self) -> &BTreeMap<String, String>;
}

impl Discoverable for Subnet {
    fn id(&self) -> &str {
        &self.subnet_id
    }
    fn vpc(&self) -> &str {
        &self.vpc_id
    }
    fn tags(&self) -> &BTreeMap<String, String> {
        &self.tags
    }
}

impl Discoverable for SecurityGroup {
    fn id(&self) -> &str {
        &self.group_id
    }
    fn vpc(&self) -> &str {
        &self.vpc_id
    }
    fn tags(&self) -> &BTreeMap<String, String> {
        &self.tags
    }
}

/// What one kind of selector is called, for messages and fixes.
pub struct SelectorKind {
    /// `subnetSelectorTerms`.
    pub field: &'static str,
    /// `subnet`, `security group`.
    pub noun: &'static str,
    /// Karpenter's own wording when nothing matches.
    pub karpenter_message: &'static str,
    /// The status condition that reports it.
    pub condition: &'static str,
}

/// Judges one NodeClass's selector over every resource of its kind in the region: nothing
/// selected (with near misses and the tagging fix), or resources outside the cluster VPC.
pub fn judge_selection<R: Discoverable>(
    kind: &SelectorKind,
    nc: &Ec2NodeClass,
    resources: &[R],
    selected: &[&R],
    terms: &[Term],
    cluster: &EksCluster,
    region: &str,
) -> Option<Finding> {
    let vpc = cluster.vpc_id.as_deref().unwrap_or_default();
    let term_text: Vec<String> = terms.iter().map(Term::describe).collect();
    let condition = nc.status.condition(kind.condition).map(
        |c| json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message}),
    );
    if terms.is_empty() || terms.iter().all(Term::is_empty) {
        return Some(
            Finding::new(
                object(nc),
                format!(
                    "spec.{} is empty: Karpenter has no {} to launch into",
                    kind.field, kind.noun
                ),
            )
            .hint(format!(
                "select the cluster's {}s, for example by the tag karpenter.sh/discovery: {}",
                kind.noun, cluster.name
            )),
        );
    }
    if selected.is_empty() {
        let in_vpc = resources
            .iter()
            .filter(|r| vpc.is_empty() || r.vpc() == vpc);
        let misses = ec2::near_misses(terms, in_vpc.map(|r| (r.id(), r.vpc(), r.tags())));
        let tags = ec2::concrete_tags(terms);
        let miss_ids: Vec<&str> = misses.iter().map(|m| m.id.as_str()).collect();
        let mut f = Finding::new(
            object(nc),
            format!(
                "spec.{} match no {} ({}): \"{}\"",
                kind.field,
                kind.noun,
                term_text.join(" or "),
                kind.karpenter_message
            ),
        )
        .evidence("selectorTerms", term_text.clone())
        .evidence("clusterVpc", vpc.to_string());
        if !misses.is_empty() {
            f = f.evidence(
                "nearMisses",
                misses
                    .iter()
                    .map(|m| format!("{} has {}={}", m.id, m.key, m.value))
                    .collect::<Vec<_>>(),
            );
        }
        if let Some(c) = condition {
            f = f.evidence("condition", c);
        }
        if tags.is_empty() {
            return Some(f.hint(format!(
                "change spec.{} to match {}s of the cluster VPC {vpc}",
                kind.field, kind.noun
            )));
        }
        let ids: Vec<&str> = if miss_ids.is_empty() {
            vec![match kind.noun {
                "subnet" => "<private subnet ids of the cluster VPC>",
                _ => "<node security group id>",
            }]
        } else {
            miss_ids
        };
        // The cluster's resources carry the discovery tag with the cluster's own name: the
        // selector is what is wrong (a copied or mistyped value), so fix it, not the tags.
        if let Some(m) = misses.iter().find(|m| m.value == cluster.name) {
            let corrected: Vec<Value> = terms
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    if let Some(v) = t.tags.get_mut(&m.key) {
                        *v = m.value.clone();
                    }
                    term_json(&t)
                })
                .collect();
            f = f
                .hint(format!(
                    "the cluster's {}s are tagged {}={}: point spec.{} at that value",
                    kind.noun, m.key, m.value, kind.field
                ))
                .fix(format!(
                    "kubectl patch ec2nodeclass {} --type merge -p '{}'",
                    nc.name(),
                    json!({"spec": {kind.field: corrected}})
                ));
        } else {
            f = f
                .hint(format!(
                    "tag the cluster's {}s with {}, or change spec.{} to match the tags they have",
                    kind.noun,
                    tags.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    kind.field
                ))
                .fix(ec2::create_tags_command(&ids, &tags, region));
        }
        if vpc.is_empty() {
            return Some(f);
        }
        let describe = match kind.noun {
            "subnet" => "describe-subnets",
            _ => "describe-security-groups",
        };
        return Some(f.fix(format!(
            "aws ec2 {describe} --region {region} --filters Name=vpc-id,Values={vpc} --query '{}'",
            match kind.noun {
                "subnet" => "Subnets[].[SubnetId,AvailabilityZone,Tags[?Key==`Name`].Value|[0]]",
                _ => "SecurityGroups[].[GroupId,GroupName]",
            }
        )));
    }
    let outside: Vec<String> = selected
        .iter()
        .filter(|r| !vpc.is_empty() && r.vpc() != vpc)
        .map(|r| format!("{} ({})", r.id(), r.vpc()))
        .collect();
    if outside.is_empty() {
        return None;
    }
    Some(
        Finding::new(
            object(nc),
            format!(
                "spec.{} select {} {}(s) outside the cluster VPC {vpc}: launches fail with SecurityGroupSubnetVPCMismatch or nodes cannot reach the cluster",
                kind.field,
                outside.len(),
                kind.noun
            ),
        )
        .evidence("selectorTerms", term_text)
        .evidence("clusterVpc", vpc.to_string())
        .evidence("outsideClusterVpc", grants::capped(outside, 10))
        .hint(format!(
            "narrow spec.{} to the cluster VPC (a per-cluster tag such as karpenter.sh/discovery: {} instead of a shared one)",
            kind.field, cluster.name
        )),
    )
}

/// Judges the selector of every NodeClass (KD3001, KD3002): a NodeClass whose terms cannot be
/// read gets one finding naming the problem.
pub fn judge_all<R: Discoverable>(
    kind: &SelectorKind,
    classes: &[Ec2NodeClass],
    resources: &[R],
    cluster: &EksCluster,
    region: &str,
    select: for<'a> fn(&[Term], &'a [R]) -> Vec<&'a R>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for nc in classes {
        match ec2::terms(nc, kind.field) {
            Ok(terms) => findings.extend(judge_selection(
                kind,
                nc,
                resources,
                &select(&terms, resources),
                &terms,
                cluster,
                region,
            )),
            Err(problem) => findings.push(malformed_terms(nc, problem)),
        }
    }
    findings
}

/// A selector term as the EC2NodeClass spec writes it.
fn term_json(t: &Term) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(id) = &t.id {
        out.insert("id".into(), json!(id));
    }
    if let Some(name) = &t.name {
        out.insert("name".into(), json!(name));
    }
    if !t.tags.is_empty() {
        out.insert("tags".into(), json!(t.tags));
    }
    Value::Object(out)
}

/// A NodeClass whose selector terms cannot be read: one finding naming the problem.
pub fn malformed_terms(nc: &Ec2NodeClass, problem: String) -> Finding {
    Finding::new(object(nc), format!("cannot read the selector: {problem}"))
        .hint("fix the EC2NodeClass spec (kubectl explain ec2nodeclass.spec)")
}

// ---- AMIs --------------------------------------------------------------------------------

/// What one AMI selector term resolves to.
pub enum Resolved {
    /// Per EC2 architecture: the alias's SSM parameters and their values (`None`: absent).
    Alias {
        alias: String,
        /// `false` when karpdoctor does not know the alias's family.
        known: bool,
        by_arch: BTreeMap<String, Vec<(String, Option<String>)>>,
    },
    Images(Vec<Image>),
    /// An `ssmParameter` term: its value, `None` when absent.
    Parameter(Option<String>),
}

pub struct AmiResolution {
    pub terms: Vec<(AmiTerm, Resolved)>,
    pub minor: String,
}

impl AmiResolution {
    /// The EC2 architectures the NodeClass resolves at least one AMI for; `None` when some
    /// term's architecture cannot be told (an SSM parameter term).
    pub fn architectures(&self) -> Option<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for (_, r) in &self.terms {
            match r {
                Resolved::Alias { by_arch, .. } => out.extend(
                    by_arch
                        .iter()
                        .filter(|(_, paths)| paths.iter().any(|(_, v)| v.is_some()))
                        .map(|(a, _)| a.clone()),
                ),
                Resolved::Images(images) => {
                    out.extend(ec2::usable(images).map(|i| i.architecture.clone()))
                }
                Resolved::Parameter(_) => return None,
            }
        }
        Some(out)
    }
}

/// Every SSM parameter an alias of any NodeClass names, for both architectures: one
/// `ssm:GetParameters` fact for the whole run, shared by KD3003 and KD3004.
fn alias_paths(classes: &[Ec2NodeClass], minor: &str) -> Vec<String> {
    let mut all = BTreeSet::new();
    for nc in classes {
        for t in ec2::ami_terms(nc) {
            match t {
                AmiTerm::Alias(a) => all.extend(
                    alias_parameter_paths(&a, minor, &["amd64", "arm64"]).unwrap_or_default(),
                ),
                AmiTerm::SsmParameter(p) => {
                    all.insert(p);
                }
                _ => {}
            }
        }
    }
    all.into_iter().collect()
}

/// Resolves a NodeClass's AMI selector terms the way Karpenter does.
pub async fn resolve_amis(
    cx: &CheckCx,
    nc: &Ec2NodeClass,
    classes: &[Ec2NodeClass],
    minor: &str,
) -> Result<AmiResolution, FactError> {
    let paths = alias_paths(classes, minor);
    let values = if paths.is_empty() {
        std::sync::Arc::new(BTreeMap::new())
    } else {
        cx.ssm_parameters(&paths).await?
    };
    let value = |p: &str| values.get(p).cloned().flatten();
    let mut terms = Vec::new();
    for t in ec2::ami_terms(nc) {
        let r = match &t {
            AmiTerm::Alias(a) => {
                let mut by_arch: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
                let known = alias_parameter_paths(a, minor, &["amd64"]).is_some();
                for arch in ["amd64", "arm64"] {
                    for p in alias_parameter_paths(a, minor, &[arch]).unwrap_or_default() {
                        let v = value(&p);
                        by_arch
                            .entry(ec2::ec2_arch(arch).to_string())
                            .or_default()
                            .push((p, v));
                    }
                }
                Resolved::Alias {
                    alias: a.clone(),
                    known,
                    by_arch,
                }
            }
            AmiTerm::SsmParameter(p) => Resolved::Parameter(value(p)),
            other => {
                let Some((filters, owners)) = ec2::image_query(other) else {
                    continue;
                };
                Resolved::Images(cx.images(filters, owners).await?.to_vec())
            }
        };
        terms.push((t, r));
    }
    Ok(AmiResolution {
        terms,
        minor: minor.to_string(),
    })
}

/// The NodePools of a NodeClass and the architectures each allows.
pub fn pool_arches<'a>(
    nc: &Ec2NodeClass,
    pools: &'a [NodePool],
) -> Vec<(&'a NodePool, BTreeSet<String>)> {
    ec2::pools_of(nc, pools)
        .into_iter()
        .map(|p| {
            let arches = ec2::nodepool_arches(p)
                .iter()
                .map(|a| ec2::ec2_arch(a).to_string())
                .collect();
            (p, arches)
        })
        .collect()
}

// ---- node role ---------------------------------------------------------------------------

/// Where a NodeClass's node role comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeRoleSource {
    /// `spec.role`: Karpenter manages an instance profile for it.
    Role(String),
    /// `spec.instanceProfile`: a profile made outside Karpenter.
    InstanceProfile(String),
    None,
}

pub fn node_role_source(nc: &Ec2NodeClass) -> NodeRoleSource {
    let text = |k: &str| {
        nc.spec
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (text("role"), text("instanceProfile")) {
        (Some(r), _) => NodeRoleSource::Role(r),
        (None, Some(p)) => NodeRoleSource::InstanceProfile(p),
        (None, None) => NodeRoleSource::None,
    }
}

/// The node role's ARN (with its path) of a NodeClass, when it can be resolved: from
/// `spec.role` (a role that exists) or the role inside `spec.instanceProfile`. `Ok(None)` when
/// there is none to judge (other checks report a missing role or profile).
pub async fn node_role_arn(cx: &CheckCx, nc: &Ec2NodeClass) -> Result<Option<String>, FactError> {
    Ok(match node_role_source(nc) {
        NodeRoleSource::Role(name) => {
            // `spec.role` may be given as an ARN too; IAM looks roles up by name.
            let name = Arn::parse(&name)
                .and_then(|a| a.role_name().map(str::to_string))
                .unwrap_or(name);
            cx.iam_role(&name)
                .await?
                .as_ref()
                .as_ref()
                .map(|r| r.arn.clone())
        }
        NodeRoleSource::InstanceProfile(p) if !p.starts_with("arn:") => cx
            .instance_profile(&p)
            .await?
            .as_ref()
            .as_ref()
            .and_then(|ip| ip.roles.first().cloned()),
        _ => None,
    })
}

/// The Windows AMI families (their nodes need `EC2_WINDOWS` entries and the kube-proxy group).
pub fn is_windows(nc: &Ec2NodeClass) -> bool {
    let family = nc
        .spec
        .get("amiFamily")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    family.starts_with("windows")
        || ec2::ami_terms(nc)
            .iter()
            .any(|t| matches!(t, AmiTerm::Alias(a) if a.starts_with("windows")))
}

/// `1.33` from the cluster's version.
pub fn cluster_minor(c: &EksCluster) -> Result<String, FactError> {
    grants::minor(&c.version).ok_or_else(|| FactError::Malformed {
        message: format!(
            "the cluster version {:?} is not a Kubernetes version",
            c.version
        ),
    })
}
