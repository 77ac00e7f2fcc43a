//! EC2NodeClass selectors, re-run the way Karpenter runs them: terms are OR'ed, the fields of
//! one term AND'ed; tag values and names use EC2 filter wildcards (`*`, `?`), and a tag value
//! of exactly `*` means "the key is present" (`tag-key`). Pure functions over fetched facts.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::facts::{Ec2Filter, Image, SecurityGroup, Subnet};
use crate::iam::policy::wildcard;
use crate::model::{Ec2NodeClass, NodePool};

/// One `subnetSelectorTerms` / `securityGroupSelectorTerms` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Term {
    pub id: Option<String>,
    /// Security groups only: the group name.
    pub name: Option<String>,
    pub tags: BTreeMap<String, String>,
}

impl Term {
    /// Whether a resource with this id, name and tags matches every field of the term.
    pub fn matches(&self, id: &str, name: &str, tags: &BTreeMap<String, String>) -> bool {
        self.id.as_deref().is_none_or(|want| want == id)
            && self
                .name
                .as_deref()
                .is_none_or(|want| wildcard(want, name, false))
            && self.tags.iter().all(|(k, want)| match tags.get(k) {
                Some(have) => want == "*" || wildcard(want, have, false),
                None => false,
            })
    }

    /// How the term reads in a message: `tags {karpenter.sh/discovery: demo}`, `id subnet-1`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(id) = &self.id {
            parts.push(format!("id {id}"));
        }
        if let Some(name) = &self.name {
            parts.push(format!("name {name}"));
        }
        if !self.tags.is_empty() {
            let tags: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            parts.push(format!("tags {{{}}}", tags.join(", ")));
        }
        if parts.is_empty() {
            "an empty term".to_string()
        } else {
            parts.join(" and ")
        }
    }

    /// A term with no field selects nothing useful (the CRD rejects it; old objects may hold it).
    pub fn is_empty(&self) -> bool {
        self.id.is_none() && self.name.is_none() && self.tags.is_empty()
    }
}

/// Reads `spec.<field>` selector terms. `Err` names what is wrong with the shape.
pub fn terms(nc: &Ec2NodeClass, field: &str) -> Result<Vec<Term>, String> {
    spec_terms(&nc.spec, field)
}

/// [`terms`] of any spec with the same selector shape (EKS Auto Mode's NodeClass has it too).
pub fn spec_terms(spec: &BTreeMap<String, Value>, field: &str) -> Result<Vec<Term>, String> {
    let Some(raw) = spec.get(field) else {
        return Ok(Vec::new());
    };
    let Some(items) = raw.as_array() else {
        return Err(format!("spec.{field} is not a list"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_string);
            let tags = match item.get("tags") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => Ok((k.clone(), s.clone())),
                        other => Err(format!(
                            "spec.{field}[{i}].tags.{k} is not a string ({other})"
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(format!("spec.{field}[{i}].tags is not a map")),
            };
            Ok(Term {
                id: text("id"),
                name: text("name"),
                tags,
            })
        })
        .collect()
}

/// The subnets `terms` select, in the order EC2 listed them.
pub fn select_subnets<'a>(terms: &[Term], subnets: &'a [Subnet]) -> Vec<&'a Subnet> {
    subnets
        .iter()
        .filter(|s| terms.iter().any(|t| t.matches(&s.subnet_id, "", &s.tags)))
        .collect()
}

/// The security groups `terms` select.
pub fn select_groups<'a>(terms: &[Term], groups: &'a [SecurityGroup]) -> Vec<&'a SecurityGroup> {
    groups
        .iter()
        .filter(|g| {
            terms
                .iter()
                .any(|t| t.matches(&g.group_id, &g.group_name, &g.tags))
        })
        .collect()
}

/// A resource that almost matched a term: it carries a tag key the term asks for, with
/// another value. Typos and copied cluster names look like this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearMiss {
    pub id: String,
    pub vpc_id: String,
    pub key: String,
    pub value: String,
}

/// Resources carrying a key of some term's tags with a different value.
pub fn near_misses<'a>(
    terms: &[Term],
    resources: impl Iterator<Item = (&'a str, &'a str, &'a BTreeMap<String, String>)>,
) -> Vec<NearMiss> {
    let mut out = Vec::new();
    for (id, vpc, tags) in resources {
        for term in terms {
            for (k, want) in &term.tags {
                if let Some(have) = tags.get(k)
                    && want != "*"
                    && !wildcard(want, have, false)
                {
                    out.push(NearMiss {
                        id: id.to_string(),
                        vpc_id: vpc.to_string(),
                        key: k.clone(),
                        value: have.clone(),
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.id, &a.key).cmp(&(&b.id, &b.key)));
    out.dedup();
    out
}

/// The tags a term asks for with concrete values (not `*`, no wildcard), which an
/// `aws ec2 create-tags` fix can set.
pub fn concrete_tags(terms: &[Term]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = terms
        .iter()
        .flat_map(|t| t.tags.iter())
        .filter(|(_, v)| !v.contains(['*', '?']))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `aws ec2 create-tags` for some resources and tags.
pub fn create_tags_command(ids: &[&str], tags: &[(String, String)], region: &str) -> String {
    let tags: Vec<String> = tags
        .iter()
        .map(|(k, v)| format!("Key={k},Value={v}"))
        .collect();
    format!(
        "aws ec2 create-tags --region {region} --resources {} --tags {}",
        ids.join(" "),
        tags.join(" ")
    )
}

// ---- AMIs ----------------------------------------------------------------------------------

/// One `amiSelectorTerms` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AmiTerm {
    /// `al2023@latest`, `bottlerocket@v1.40.0`, `windows2022@latest`.
    Alias(String),
    Id(String),
    /// An SSM parameter holding an AMI id (v1.4+).
    SsmParameter(String),
    /// `name`, `owner` and `tags`, AND'ed.
    Query {
        name: Option<String>,
        owner: Option<String>,
        tags: BTreeMap<String, String>,
    },
}

impl AmiTerm {
    pub fn describe(&self) -> String {
        match self {
            AmiTerm::Alias(a) => format!("alias {a}"),
            AmiTerm::Id(id) => format!("id {id}"),
            AmiTerm::SsmParameter(p) => format!("ssmParameter {p}"),
            AmiTerm::Query { name, owner, tags } => {
                let mut parts = Vec::new();
                if let Some(n) = name {
                    parts.push(format!("name {n}"));
                }
                if let Some(o) = owner {
                    parts.push(format!("owner {o}"));
                }
                if !tags.is_empty() {
                    let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    parts.push(format!("tags {{{}}}", t.join(", ")));
                }
                parts.join(" and ")
            }
        }
    }
}

/// `spec.amiSelectorTerms` as Karpenter applies them. A v1beta1 class may leave them out:
/// Karpenter then uses its family's default AMIs, read from the same SSM parameters as the
/// `<family>@latest` alias of v1, which is what this returns for it. For a family without such
/// an alias (Ubuntu: Canonical's parameters) it stays empty, and the AMI checks do not judge it.
pub fn ami_selector_terms(nc: &Ec2NodeClass) -> Vec<Value> {
    let terms = nc
        .spec
        .get("amiSelectorTerms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !terms.is_empty() || !nc.is_v1beta1() {
        return terms;
    }
    let family = nc
        .spec
        .get("amiFamily")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    match family.as_str() {
        "al2" | "al2023" | "bottlerocket" | "windows2019" | "windows2022" => {
            vec![serde_json::json!({ "alias": format!("{family}@latest") })]
        }
        _ => Vec::new(),
    }
}

pub fn ami_terms(nc: &Ec2NodeClass) -> Vec<AmiTerm> {
    let items = ami_selector_terms(nc);
    items
        .iter()
        .filter_map(|item| {
            let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_string);
            if let Some(a) = text("alias") {
                return Some(AmiTerm::Alias(a));
            }
            if let Some(id) = text("id") {
                return Some(AmiTerm::Id(id));
            }
            if let Some(p) = text("ssmParameter") {
                return Some(AmiTerm::SsmParameter(p));
            }
            let tags: BTreeMap<String, String> = item
                .get("tags")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let (name, owner) = (text("name"), text("owner"));
            (name.is_some() || owner.is_some() || !tags.is_empty()).then_some(AmiTerm::Query {
                name,
                owner,
                tags,
            })
        })
        .collect()
}

/// The `ec2:DescribeImages` filters and owners Karpenter sends for an id or query term. A
/// `name` without `owner` is limited to `self` and `amazon`, so that a public image with a
/// look-alike name is never picked up.
pub fn image_query(term: &AmiTerm) -> Option<(Vec<Ec2Filter>, Vec<String>)> {
    let filter = |name: &str, value: &str| Ec2Filter {
        name: name.to_string(),
        values: vec![value.to_string()],
    };
    match term {
        AmiTerm::Id(id) => Some((vec![filter("image-id", id)], Vec::new())),
        AmiTerm::Query { name, owner, tags } => {
            let mut filters = Vec::new();
            if let Some(n) = name {
                filters.push(filter("name", n));
            }
            for (k, v) in tags {
                if v == "*" {
                    filters.push(filter("tag-key", k));
                } else {
                    filters.push(filter(&format!("tag:{k}"), v));
                }
            }
            let owners = match (owner, name) {
                (Some(o), _) => vec![o.clone()],
                (None, Some(_)) => vec!["self".to_string(), "amazon".to_string()],
                (None, None) => Vec::new(),
            };
            Some((filters, owners))
        }
        AmiTerm::Alias(_) | AmiTerm::SsmParameter(_) => None,
    }
}

/// EC2's architecture name for a Kubernetes one (`amd64` → `x86_64`).
pub fn ec2_arch(kube_arch: &str) -> &str {
    match kube_arch {
        "amd64" => "x86_64",
        other => other,
    }
}

/// The architectures (Kubernetes names) a NodePool allows: its `kubernetes.io/arch`
/// requirements applied to {amd64, arm64}, Karpenter's default.
pub fn nodepool_arches(pool: &NodePool) -> BTreeSet<String> {
    let mut arches: BTreeSet<String> = ["amd64", "arm64"].map(String::from).into();
    for r in &pool.spec.template.spec.requirements {
        if r.key != "kubernetes.io/arch" {
            continue;
        }
        match r.operator.as_str() {
            "In" => arches.retain(|a| r.values.contains(a)),
            "NotIn" => arches.retain(|a| !r.values.contains(a)),
            "DoesNotExist" => arches.clear(),
            _ => {}
        }
    }
    arches
}

/// The NodePools that use an EC2NodeClass.
pub fn pools_of<'a>(nc: &Ec2NodeClass, pools: &'a [NodePool]) -> Vec<&'a NodePool> {
    pools
        .iter()
        .filter(|p| {
            p.spec
                .template
                .spec
                .node_class_ref
                .as_ref()
                .and_then(|r| r.name.as_deref())
                == Some(nc.name())
        })
        .collect()
}

/// The Kubernetes minor an EKS-optimized AMI name was built for:
/// `amazon-eks-node-al2023-x86_64-standard-1.33-v20250505` → `1.33`,
/// `amazon-eks-node-1.29-v20240227`, `bottlerocket-aws-k8s-1.31-x86_64-v1.26.0-…`.
/// `None` for names that do not follow those schemes (custom images).
pub fn ami_name_minor(name: &str) -> Option<String> {
    if !(name.starts_with("amazon-eks-") || name.starts_with("bottlerocket-aws-k8s-")) {
        return None;
    }
    name.split('-')
        .find(|part| {
            let mut it = part.split('.');
            matches!((it.next(), it.next(), it.next()), (Some("1"), Some(m), None)
                if !m.is_empty() && m.len() <= 2 && m.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// The AMI family an image name says it belongs to (`AL2023`, `AL2`, `Bottlerocket`,
/// `Windows2022`), for EKS-optimized names only.
pub fn ami_name_family(name: &str) -> Option<&'static str> {
    if name.starts_with("amazon-eks-node-al2023-") {
        Some("AL2023")
    } else if name.starts_with("amazon-eks-") {
        Some("AL2")
    } else if name.starts_with("bottlerocket-") {
        Some("Bottlerocket")
    } else if name.starts_with("Windows_Server-2019") {
        Some("Windows2019")
    } else if name.starts_with("Windows_Server-2022") {
        Some("Windows2022")
    } else if name.starts_with("Windows_Server-2025") {
        Some("Windows2025")
    } else {
        None
    }
}

/// The images of a query an EC2 launch can use: available ones.
pub fn usable(images: &[Image]) -> impl Iterator<Item = &Image> {
    images
        .iter()
        .filter(|i| i.state.is_empty() || i.state == "available")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn subnet(id: &str, vpc: &str, t: &[(&str, &str)]) -> Subnet {
        Subnet {
            subnet_id: id.into(),
            vpc_id: vpc.into(),
            tags: tags(t),
            ..Subnet::default()
        }
    }

    fn nodeclass(spec: Value) -> Ec2NodeClass {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "default"}, "spec": spec}))
            .unwrap()
    }

    #[test]
    fn terms_are_ored_and_fields_anded() {
        let subnets = [
            subnet(
                "subnet-a",
                "vpc-1",
                &[("karpenter.sh/discovery", "demo"), ("tier", "private")],
            ),
            subnet(
                "subnet-b",
                "vpc-1",
                &[("karpenter.sh/discovery", "demo"), ("tier", "public")],
            ),
            subnet("subnet-c", "vpc-1", &[("Name", "extra")]),
        ];
        let nc = nodeclass(serde_json::json!({"subnetSelectorTerms": [
            {"tags": {"karpenter.sh/discovery": "demo", "tier": "private"}},
            {"id": "subnet-c"}
        ]}));
        let t = terms(&nc, "subnetSelectorTerms").unwrap();
        let ids: Vec<&str> = select_subnets(&t, &subnets)
            .iter()
            .map(|s| s.subnet_id.as_str())
            .collect();
        assert_eq!(ids, ["subnet-a", "subnet-c"]);
    }

    #[test]
    fn wildcards_and_tag_key_presence() {
        let s = subnet("subnet-a", "vpc-1", &[("Name", "demo-private-us-west-2a")]);
        let any = Term {
            tags: tags(&[("Name", "*")]),
            ..Term::default()
        };
        let pattern = Term {
            tags: tags(&[("Name", "demo-private-*")]),
            ..Term::default()
        };
        let other = Term {
            tags: tags(&[("Name", "demo-public-*")]),
            ..Term::default()
        };
        assert!(any.matches(&s.subnet_id, "", &s.tags));
        assert!(pattern.matches(&s.subnet_id, "", &s.tags));
        assert!(!other.matches(&s.subnet_id, "", &s.tags));
    }

    #[test]
    fn security_groups_match_by_name_and_id() {
        let groups = [
            SecurityGroup {
                group_id: "sg-1".into(),
                group_name: "eks-cluster-sg-demo-123".into(),
                vpc_id: "vpc-1".into(),
                tags: BTreeMap::new(),
                ..SecurityGroup::default()
            },
            SecurityGroup {
                group_id: "sg-2".into(),
                group_name: "other".into(),
                vpc_id: "vpc-1".into(),
                tags: BTreeMap::new(),
                ..SecurityGroup::default()
            },
        ];
        let by_name = [Term {
            name: Some("eks-cluster-sg-demo-*".into()),
            ..Term::default()
        }];
        let by_id = [Term {
            id: Some("sg-2".into()),
            ..Term::default()
        }];
        assert_eq!(select_groups(&by_name, &groups)[0].group_id, "sg-1");
        assert_eq!(select_groups(&by_id, &groups)[0].group_id, "sg-2");
    }

    #[test]
    fn near_misses_are_same_key_other_value() {
        let subnets = [
            subnet(
                "subnet-a",
                "vpc-1",
                &[("karpenter.sh/discovery", "demo-old")],
            ),
            subnet("subnet-b", "vpc-1", &[("karpenter.sh/discovery", "demo")]),
        ];
        let t = [Term {
            tags: tags(&[("karpenter.sh/discovery", "demo")]),
            ..Term::default()
        }];
        let misses = near_misses(
            &t,
            subnets
                .iter()
                .map(|s| (s.subnet_id.as_str(), s.vpc_id.as_str(), &s.tags)),
        );
        assert_eq!(misses.len(), 1);
        assert_eq!(
            (misses[0].id.as_str(), misses[0].value.as_str()),
            ("subnet-a", "demo-old")
        );
    }

    #[test]
    fn malformed_terms_are_reported_not_guessed() {
        let nc = nodeclass(serde_json::json!({"subnetSelectorTerms": {"tags": {}}}));
        assert!(terms(&nc, "subnetSelectorTerms").is_err());
        let nc = nodeclass(serde_json::json!({"subnetSelectorTerms": [{"tags": {"a": 1}}]}));
        assert!(
            terms(&nc, "subnetSelectorTerms")
                .unwrap_err()
                .contains("tags.a")
        );
    }

    #[test]
    fn image_queries_follow_karpenter() {
        let (f, o) = image_query(&AmiTerm::Query {
            name: Some("my-ami-*".into()),
            owner: None,
            tags: tags(&[("team", "*")]),
        })
        .unwrap();
        assert_eq!(o, ["self", "amazon"]);
        assert_eq!(f[0].name, "name");
        assert_eq!(f[1].name, "tag-key");
        let (f, o) = image_query(&AmiTerm::Id("ami-1".into())).unwrap();
        assert!(o.is_empty());
        assert_eq!(
            (f[0].name.as_str(), f[0].values[0].as_str()),
            ("image-id", "ami-1")
        );
        let (_, o) = image_query(&AmiTerm::Query {
            name: Some("x".into()),
            owner: Some("123456789012".into()),
            tags: BTreeMap::new(),
        })
        .unwrap();
        assert_eq!(o, ["123456789012"]);
    }

    #[test]
    fn reads_kubernetes_minor_and_family_from_ami_names() {
        assert_eq!(
            ami_name_minor("amazon-eks-node-al2023-x86_64-standard-1.33-v20250505").as_deref(),
            Some("1.33")
        );
        assert_eq!(
            ami_name_minor("amazon-eks-node-1.29-v20240227").as_deref(),
            Some("1.29")
        );
        assert_eq!(
            ami_name_minor("bottlerocket-aws-k8s-1.31-x86_64-v1.26.0-abc").as_deref(),
            Some("1.31")
        );
        assert_eq!(ami_name_minor("my-golden-image-1.33"), None);
        assert_eq!(
            ami_name_family("amazon-eks-node-al2023-arm64-standard-1.33-v1"),
            Some("AL2023")
        );
        assert_eq!(ami_name_family("amazon-eks-gpu-node-1.29-v1"), Some("AL2"));
        assert_eq!(
            ami_name_family("bottlerocket-aws-k8s-1.31-x86_64-v1"),
            Some("Bottlerocket")
        );
    }

    #[test]
    fn nodepool_arch_requirements() {
        let pool: NodePool = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "arm"},
            "spec": {"template": {"spec": {"requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
            ]}}}
        }))
        .unwrap();
        assert_eq!(
            nodepool_arches(&pool),
            BTreeSet::from(["arm64".to_string()])
        );
        assert_eq!(nodepool_arches(&NodePool::default()).len(), 2);
    }
}
