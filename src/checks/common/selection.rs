//! Selector judgement for subnets and security groups (KD3001, KD3002, KD3009): what an
//! EC2NodeClass's selector terms match among the region's resources, near misses when they
//! match nothing, and resources outside the cluster VPC.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::evidence::capped;
use super::nodeclass::object;
use crate::check::Finding;
use crate::ec2::{self, NearMiss, Term};
use crate::facts::{EksCluster, SecurityGroup, Subnet};
use crate::model::Ec2NodeClass;

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

/// The subnet selector (KD3001, read by KD3009 too).
pub const SUBNETS: SelectorKind = SelectorKind {
    field: "subnetSelectorTerms",
    noun: "subnet",
    karpenter_message: "SubnetSelector did not match any Subnets",
    condition: "SubnetsReady",
};

/// The security group selector (KD3002).
pub const SECURITY_GROUPS: SelectorKind = SelectorKind {
    field: "securityGroupSelectorTerms",
    noun: "security group",
    karpenter_message: "SecurityGroupSelector did not match any SecurityGroups",
    condition: "SecurityGroupsReady",
};

/// Judges one NodeClass's selector over every resource of its kind in the region: nothing
/// selected (with near misses and the tagging fix), or resources outside the cluster VPC.
fn judge_selection<R: Discoverable>(
    kind: &SelectorKind,
    nc: &Ec2NodeClass,
    resources: &[R],
    selected: &[&R],
    terms: &[Term],
    cluster: &EksCluster,
    region: &str,
) -> Option<Finding> {
    if terms.is_empty() || terms.iter().all(Term::is_empty) {
        return Some(empty_selector(kind, nc, cluster));
    }
    if selected.is_empty() {
        return Some(nothing_selected(
            kind, nc, resources, terms, cluster, region,
        ));
    }
    outside_cluster_vpc(kind, nc, selected, terms, cluster)
}

/// The cluster's VPC; empty when EKS did not say.
fn cluster_vpc(cluster: &EksCluster) -> &str {
    cluster.vpc_id.as_deref().unwrap_or_default()
}

fn empty_selector(kind: &SelectorKind, nc: &Ec2NodeClass, cluster: &EksCluster) -> Finding {
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
    ))
}

/// A selector that matches nothing: its near misses in the cluster VPC, and the fix (the
/// selector's value when the cluster's resources are tagged for it, otherwise the tags).
fn nothing_selected<R: Discoverable>(
    kind: &SelectorKind,
    nc: &Ec2NodeClass,
    resources: &[R],
    terms: &[Term],
    cluster: &EksCluster,
    region: &str,
) -> Finding {
    let vpc = cluster_vpc(cluster);
    let term_text: Vec<String> = terms.iter().map(Term::describe).collect();
    let in_vpc = resources
        .iter()
        .filter(|r| vpc.is_empty() || r.vpc() == vpc);
    let misses = ec2::near_misses(terms, in_vpc.map(|r| (r.id(), r.vpc(), r.tags())));
    let tags = ec2::concrete_tags(terms);
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
    .evidence("selectorTerms", term_text)
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
    if let Some(c) = nc.status.condition(kind.condition) {
        f = f.evidence(
            "condition",
            json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message}),
        );
    }
    if tags.is_empty() {
        return f.hint(format!(
            "change spec.{} to match {}s of the cluster VPC {vpc}",
            kind.field, kind.noun
        ));
    }
    // The cluster's resources carry the discovery tag with the cluster's own name: the
    // selector is what is wrong (a copied or mistyped value), so fix it, not the tags.
    f = match misses.iter().find(|m| m.value == cluster.name) {
        Some(m) => point_selector_at(f, kind, nc, terms, m),
        None => tag_resources(f, kind, &misses, &tags, region),
    };
    if vpc.is_empty() {
        return f;
    }
    let describe = match kind.noun {
        "subnet" => "describe-subnets",
        _ => "describe-security-groups",
    };
    f.fix(format!(
        "aws ec2 {describe} --region {region} --filters Name=vpc-id,Values={vpc} --query '{}'",
        match kind.noun {
            "subnet" => "Subnets[].[SubnetId,AvailabilityZone,Tags[?Key==`Name`].Value|[0]]",
            _ => "SecurityGroups[].[GroupId,GroupName]",
        }
    ))
}

/// The fix that gives the selector the tag value the cluster's resources carry.
fn point_selector_at(
    f: Finding,
    kind: &SelectorKind,
    nc: &Ec2NodeClass,
    terms: &[Term],
    m: &NearMiss,
) -> Finding {
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
    f.hint(format!(
        "the cluster's {}s are tagged {}={}: point spec.{} at that value",
        kind.noun, m.key, m.value, kind.field
    ))
    .fix(format!(
        "kubectl patch ec2nodeclass {} --type merge -p '{}'",
        nc.name(),
        json!({"spec": {kind.field: corrected}})
    ))
}

/// The fix that tags the near misses (or a placeholder for the resources to tag) the way the
/// selector asks.
fn tag_resources(
    f: Finding,
    kind: &SelectorKind,
    misses: &[NearMiss],
    tags: &[(String, String)],
    region: &str,
) -> Finding {
    let ids: Vec<&str> = if misses.is_empty() {
        vec![match kind.noun {
            "subnet" => "<private subnet ids of the cluster VPC>",
            _ => "<node security group id>",
        }]
    } else {
        misses.iter().map(|m| m.id.as_str()).collect()
    };
    f.hint(format!(
        "tag the cluster's {}s with {}, or change spec.{} to match the tags they have",
        kind.noun,
        tags.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        kind.field
    ))
    .fix(ec2::create_tags_command(&ids, tags, region))
}

/// Selected resources outside the cluster VPC, if any.
fn outside_cluster_vpc<R: Discoverable>(
    kind: &SelectorKind,
    nc: &Ec2NodeClass,
    selected: &[&R],
    terms: &[Term],
    cluster: &EksCluster,
) -> Option<Finding> {
    let vpc = cluster_vpc(cluster);
    let outside: Vec<String> = selected
        .iter()
        .filter(|r| !vpc.is_empty() && r.vpc() != vpc)
        .map(|r| format!("{} ({})", r.id(), r.vpc()))
        .collect();
    if outside.is_empty() {
        return None;
    }
    let term_text: Vec<String> = terms.iter().map(Term::describe).collect();
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
        .evidence("outsideClusterVpc", capped(outside, 10))
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
