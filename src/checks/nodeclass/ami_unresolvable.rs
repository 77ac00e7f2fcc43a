//! KD3003: an EC2NodeClass whose AMI selector resolves no image cannot launch anything. The
//! usual causes are a pinned alias that was never published for the cluster's Kubernetes
//! version, an AMI id copied from another region, and name or tag terms that match nothing.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::prelude::*;
use crate::checks::common::amis::{AmiResolution, Resolved, pool_arches, resolve_amis};
use crate::checks::common::cluster::{cluster, cluster_minor};
use crate::checks::common::nodeclass::object;
use crate::ec2::{self, AmiTerm};

declare_check! {
    pub static NODECLASS_AMI_UNRESOLVABLE = {
        code: "KD3003",
        slug: "nodeclass-ami-unresolvable",
        title: "every EC2NodeClass's AMI selector resolves images for the cluster's Kubernetes version and its NodePools' architectures",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, NodePools, EksCluster, SsmParameters, Ec2Images, ControllerDeployments],
        self_managed: true,
        run: ami_unresolvable,
    }
}

async fn ami_unresolvable(cx: &CheckCx) -> CheckResult {
    let (classes, pools, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.nodepools(), cluster(cx)).await;
    let (classes, pools, cluster) = (classes?, pools?, cluster?);
    let minor = cluster_minor(&cluster)?;
    let region = cx.target().region.unwrap_or_default();
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let res = resolve_amis(cx, nc, &classes, &minor).await?;
        if res.terms.is_empty() && nc.is_v1beta1() {
            // A v1beta1 family whose default AMIs karpdoctor cannot look up (Ubuntu).
            continue;
        }
        if res.terms.is_empty() {
            findings.push(
                Finding::new(
                    object(nc),
                    "spec.amiSelectorTerms is empty: no AMI can be chosen",
                )
                .hint("select an AMI, for example amiSelectorTerms: [{alias: al2023@latest}]"),
            );
            continue;
        }
        // The architectures each NodePool of this class may launch.
        let pools_arches: Vec<(String, BTreeSet<String>)> = pool_arches(nc, &pools)
            .into_iter()
            .map(|(p, a)| (p.name().to_string(), a))
            .collect();
        let wanted: BTreeSet<String> = pools_arches.iter().flat_map(|(_, a)| a.clone()).collect();
        let problems = term_problems(&res, &pools_arches, &region);
        let dead = problems.iter().filter(|p| p.dead).count();
        if problems.is_empty() {
            continue;
        }
        let all_dead = dead == res.terms.len();
        let mut f = Finding::new(
            object(nc),
            if all_dead {
                format!(
                    "no AMI resolves: {}",
                    problems
                        .iter()
                        .map(|p| p.text.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            } else {
                problems
                    .iter()
                    .map(|p| p.text.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        )
        .evidence("kubernetesVersion", minor.clone())
        .evidence("architectures", wanted.iter().cloned().collect::<Vec<_>>())
        .evidence(
            "amiSelectorTerms",
            res.terms
                .iter()
                .map(|(t, _)| t.describe())
                .collect::<Vec<_>>(),
        );
        for p in &problems {
            if let Some((k, v)) = &p.evidence {
                f = f.evidence(k, v.clone());
            }
        }
        if let Some(c) = nc
            .status
            .condition("AMIsReady")
            .filter(|c| c.status != "True")
        {
            f = f.evidence(
                "AMIsReady",
                format!("{} {}: {}", c.status, c.reason, c.message),
            );
        }
        let hint = problems
            .iter()
            .find_map(|p| p.hint.clone())
            .unwrap_or_else(|| "point amiSelectorTerms at images of this region".to_string());
        f = f.hint(hint);
        for p in &problems {
            if let Some(cmd) = &p.fix {
                f = f.fix(cmd.clone());
            }
        }
        // One dead term among working ones is ignored by Karpenter: worth fixing, not an outage.
        if !all_dead && problems.iter().all(|p| p.dead) {
            f = f.severity(Severity::Warning);
        }
        findings.push(f);
    }
    Ok(findings)
}

struct Problem {
    text: String,
    /// The term resolves nothing at all (as opposed to missing one architecture).
    dead: bool,
    evidence: Option<(String, serde_json::Value)>,
    hint: Option<String>,
    fix: Option<String>,
}

fn term_problems(
    res: &AmiResolution,
    pools: &[(String, BTreeSet<String>)],
    region: &str,
) -> Vec<Problem> {
    let minor = &res.minor;
    let mut out = Vec::new();
    for (term, resolved) in &res.terms {
        match (term, resolved) {
            (AmiTerm::Alias(alias), Resolved::Alias { known, by_arch, .. }) => {
                out.extend(alias_problem(alias, *known, by_arch, pools, minor, region));
            }
            (AmiTerm::Id(id), Resolved::Images(images)) => {
                if let Some(i) = images
                    .iter()
                    .find(|i| !i.state.is_empty() && i.state != "available")
                {
                    out.push(Problem {
                        text: format!("AMI {id} is {} and cannot be launched", i.state),
                        dead: true,
                        evidence: None,
                        hint: Some("select a current image (an alias such as al2023@latest keeps up by itself)".to_string()),
                        fix: None,
                    });
                } else if images.is_empty() {
                    out.push(Problem {
                        text: format!(
                            "AMI {id} does not exist in {region} (an id copied from another region, an image not shared with this account, or a deregistered one): \"AMISelector did not match any AMIs\""
                        ),
                        dead: true,
                        evidence: None,
                        hint: Some("AMI ids are regional: use this region's id, or an alias (al2023@…) that resolves in every region".to_string()),
                        fix: Some(format!(
                            "aws ssm get-parameter --region {region} --name /aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/x86_64/standard/recommended/image_id --query Parameter.Value --output text"
                        )),
                    });
                }
            }
            (AmiTerm::Query { .. }, Resolved::Images(images))
                if ec2::usable(images).next().is_none() =>
            {
                out.push(Problem {
                        text: format!(
                            "the term {} matches no available image in {region}{}",
                            term.describe(),
                            match term {
                                AmiTerm::Query { name: Some(_), owner: None, .. } =>
                                    " (a name term without owner only finds images owned by this account or Amazon)",
                                _ => "",
                            }
                        ),
                        dead: true,
                        evidence: None,
                        hint: Some("check the name pattern and owner against `aws ec2 describe-images`; add owner for images shared by another account".to_string()),
                        fix: None,
                    });
            }
            (AmiTerm::SsmParameter(p), Resolved::Parameter(v)) => match v {
                None => out.push(Problem {
                    text: format!("SSM parameter {p} does not exist in {region}"),
                    dead: true,
                    evidence: None,
                    hint: Some(
                        "create the parameter in this region, or select the AMI another way"
                            .to_string(),
                    ),
                    fix: None,
                }),
                Some(v) if !v.starts_with("ami-") => out.push(Problem {
                    text: format!("SSM parameter {p} holds {v:?}, not an AMI id"),
                    dead: true,
                    evidence: None,
                    hint: Some("the parameter must hold an ami-… id".to_string()),
                    fix: None,
                }),
                Some(_) => {}
            },
            _ => {}
        }
    }
    out
}

/// What is wrong with an alias term: an alias not published for the cluster's version, or
/// one without an image for the architectures a NodePool allows.
fn alias_problem(
    alias: &str,
    known: bool,
    by_arch: &BTreeMap<String, Vec<(String, Option<String>)>>,
    pools: &[(String, BTreeSet<String>)],
    minor: &str,
    region: &str,
) -> Option<Problem> {
    let family = alias.split('@').next().unwrap_or_default();
    if family == "al2" && minor_at_least(minor, 33) {
        return Some(Problem {
            text: format!(
                "alias {alias}: AL2 AMIs are not published for Kubernetes 1.33 and later (UnsupportedAlias)"
            ),
            dead: true,
            evidence: None,
            hint: Some(
                "move to al2023@… (or bottlerocket@…) before or with the upgrade to 1.33"
                    .to_string(),
            ),
            fix: None,
        });
    }
    if family == "windows2025" && !minor_at_least(minor, 35) {
        return Some(Problem {
            text: format!(
                "alias {alias}: Windows Server 2025 needs Kubernetes 1.35 or later, the cluster runs {minor}"
            ),
            dead: true,
            evidence: None,
            hint: Some("use windows2022@latest on this cluster version".to_string()),
            fix: None,
        });
    }
    if !known {
        return None;
    }
    let found = |arch: &str| {
        by_arch
            .get(arch)
            .is_some_and(|paths| paths.iter().any(|(_, v)| v.is_some()))
    };
    let any = by_arch.keys().any(|a| found(a));
    // A NodePool is stuck only when none of its architectures has an image: an alias
    // resolving one architecture for a pool that allows both is normal.
    let stuck: Vec<String> = pools
        .iter()
        .filter(|(_, arches)| !arches.iter().any(|a| found(a)))
        .map(|(name, arches)| {
            format!(
                "{name} ({})",
                arches.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    if any && stuck.is_empty() {
        return None;
    }
    let checked: Vec<String> = by_arch
        .values()
        .filter_map(|paths| paths.first().map(|(p, _)| p.clone()))
        .collect();
    let text = if any {
        format!(
            "alias {alias} has no AMI on Kubernetes {minor} for the architectures NodePool(s) {} allow (its SSM parameters do not exist)",
            stuck.join(", ")
        )
    } else {
        format!(
            "alias {alias} is not published for Kubernetes {minor}: none of its SSM parameters exist (\"failed to discover any AMIs for alias\")"
        )
    };
    let (hint, fix) = alias_fix(family, alias, minor, region);
    Some(Problem {
        text,
        dead: !any,
        evidence: Some(("missingParameters".to_string(), serde_json::json!(checked))),
        hint: Some(hint),
        fix,
    })
}

fn minor_at_least(minor: &str, want: u32) -> bool {
    minor
        .split('.')
        .nth(1)
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|m| m >= want)
}

/// What to do about an alias that resolves nothing: pin a version published for this minor.
fn alias_fix(family: &str, alias: &str, minor: &str, region: &str) -> (String, Option<String>) {
    let pinned = !alias.ends_with("@latest");
    let hint = if pinned {
        format!(
            "pin a version published for Kubernetes {minor} (or {family}@latest outside production), and upgrade the pin together with the control plane"
        )
    } else {
        format!(
            "{family} images are not published for Kubernetes {minor} in {region}; use another family or cluster version"
        )
    };
    let path = match family {
        "al2023" => Some(format!(
            "/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/x86_64/standard/"
        )),
        "al2" => Some(format!(
            "/aws/service/eks/optimized-ami/{minor}/amazon-linux-2/"
        )),
        "bottlerocket" => Some(format!("/aws/service/bottlerocket/aws-k8s-{minor}/x86_64/")),
        _ => None,
    };
    let fix = path.map(|p| {
        format!(
            "aws ssm get-parameters-by-path --region {region} --path {p} --recursive --query 'Parameters[].Name' --output text"
        )
    });
    (hint, fix)
}
