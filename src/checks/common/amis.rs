//! AMI resolution of an EC2NodeClass, the way Karpenter resolves its `amiSelectorTerms`
//! (aliases through SSM parameters, ids, names and tags through `ec2:DescribeImages`), and the
//! architectures its NodePools allow. Shared by KD3003 and KD3004.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::CheckCx;
use crate::ec2::{self, AmiTerm};
use crate::facts::{FactError, Image};
use crate::iam::reference::alias_parameter_paths;
use crate::model::{Ec2NodeClass, NodePool};

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
