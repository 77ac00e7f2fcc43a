//! KD3004: AMIs that resolve but do not fit: no image for the architecture a NodePool needs
//! ("no instance types satisfy requirements of amis"), images built for another Kubernetes
//! minor than the cluster's, deprecated images, or an `amiFamily` that is not the image's.

use crate::check::prelude::*;
use crate::checks::common::amis::{Resolved, pool_arches, resolve_amis};
use crate::checks::common::cluster::{cluster, cluster_minor};
use crate::checks::common::nodeclass::object;
use crate::ec2::{self, AmiTerm};

declare_check! {
    pub static NODECLASS_AMI_MISMATCH = {
        code: "KD3004",
        slug: "nodeclass-ami-mismatch",
        title: "every EC2NodeClass's AMIs match its NodePools' architectures, the cluster's Kubernetes minor and its amiFamily",
        category: Nodeclass,
        severity: Error,
        needs: [Ec2NodeClasses, NodePools, EksCluster, SsmParameters, Ec2Images, ControllerDeployments],
        self_managed: true,
        run: ami_mismatch,
    }
}

async fn ami_mismatch(cx: &CheckCx) -> CheckResult {
    let (classes, pools, cluster) =
        futures::future::join3(cx.ec2_nodeclasses(), cx.nodepools(), cluster(cx)).await;
    let (classes, pools, cluster) = (classes?, pools?, cluster?);
    let minor = cluster_minor(&cluster)?;
    let mut findings = Vec::new();
    for nc in classes.iter() {
        let res = resolve_amis(cx, nc, &classes, &minor).await?;
        let uses_alias = res
            .terms
            .iter()
            .any(|(t, _)| matches!(t, AmiTerm::Alias(_)));
        // Architecture: with an alias, a missing architecture is an unpublished alias (KD3003).
        if let Some(have) = res.architectures().filter(|a| !a.is_empty() && !uses_alias) {
            for (pool, wants) in pool_arches(nc, &pools) {
                if wants.is_disjoint(&have) {
                    findings.push(
                        Finding::new(
                            object(nc),
                            format!(
                                "NodePool {} allows only {} but the EC2NodeClass resolves only {} AMIs: \"no instance types satisfy requirements of amis\"",
                                pool.name(),
                                wants.iter().cloned().collect::<Vec<_>>().join(", "),
                                have.iter().cloned().collect::<Vec<_>>().join(", ")
                            ),
                        )
                        .evidence("nodePool", pool.name().to_string())
                        .evidence("nodePoolArchitectures", wants.iter().cloned().collect::<Vec<_>>())
                        .evidence("amiArchitectures", have.iter().cloned().collect::<Vec<_>>())
                        .hint("add an AMI for the NodePool's architecture to amiSelectorTerms (or use an alias, which resolves both), or change the NodePool's kubernetes.io/arch requirement"),
                    );
                }
            }
        }
        // The rest concerns images chosen by id, name or tags: an alias follows the cluster.
        let images: Vec<&crate::facts::Image> = res
            .terms
            .iter()
            .filter_map(|(_, r)| match r {
                Resolved::Images(i) => Some(i),
                _ => None,
            })
            .flat_map(|i| ec2::usable(i))
            .collect();
        for image in &images {
            if let Some(image_minor) = ec2::ami_name_minor(&image.name)
                && image_minor != minor
            {
                let (image_key, cluster_key) = (version_key(&image_minor), version_key(&minor));
                let newer = image_key > cluster_key;
                // Kubernetes' version skew policy: a kubelet may be up to three minors older
                // than the API server (1.28+), never newer.
                let behind = if image_key.0 == cluster_key.0 {
                    cluster_key.1.saturating_sub(image_key.1)
                } else {
                    u32::MAX
                };
                let unsupported = !newer && behind > MAX_KUBELET_SKEW;
                let f = Finding::new(
                    object(nc),
                    format!(
                        "AMI {} ({}) is built for Kubernetes {image_minor}, the cluster runs {minor}{}",
                        image.image_id,
                        image.name,
                        if newer {
                            ": a kubelet newer than the API server cannot register".to_string()
                        } else if unsupported {
                            format!(": {behind} minors behind, beyond the {MAX_KUBELET_SKEW} Kubernetes supports between a kubelet and its API server")
                        } else {
                            String::new()
                        }
                    ),
                )
                .evidence("image", image.name.clone())
                .evidence("kubernetesVersion", minor.clone())
                .hint(format!(
                    "select images for {minor} (put the minor in the name pattern, or use an alias that follows the control plane)"
                ));
                findings.push(if newer || unsupported {
                    f
                } else {
                    f.severity(Severity::Warning)
                });
            }
            if let Some(family) = nc.spec.get("amiFamily").and_then(serde_json::Value::as_str)
                && family != "Custom"
                && let Some(image_family) = ec2::ami_name_family(&image.name)
                && !image_family.eq_ignore_ascii_case(family)
            {
                findings.push(
                    Finding::new(
                        object(nc),
                        format!(
                            "amiFamily is {family} but AMI {} ({}) is a {image_family} image: Karpenter generates {family} user data the image cannot run, so nodes never join",
                            image.image_id, image.name
                        ),
                    )
                    .evidence("amiFamily", family.to_string())
                    .evidence("image", image.name.clone())
                    .hint(format!("set amiFamily: {image_family}, or select {family} images")),
                );
            }
        }
        let now = cx.now();
        let deprecated: Vec<String> = images
            .iter()
            .filter(|i| {
                i.deprecation_time
                    .as_deref()
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .is_some_and(|t| t <= now)
            })
            .map(|i| format!("{} ({})", i.image_id, i.name))
            .chain(status_deprecated(nc))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !deprecated.is_empty() {
            findings.push(
                Finding::new(
                    object(nc),
                    format!("{} selected AMI(s) are deprecated: they get no security fixes, and are still used only because nothing newer matches", deprecated.len()),
                )
                .severity(Severity::Warning)
                .evidence("deprecated", deprecated)
                .hint("select a supported image (an alias such as al2023@latest, or a newer pinned version)"),
            );
        }
    }
    Ok(findings)
}

/// AMIs Karpenter itself marks deprecated in `status.amis` (v1.1+).
fn status_deprecated(nc: &crate::model::Ec2NodeClass) -> Vec<String> {
    nc.status
        .rest
        .get("amis")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("deprecated").and_then(serde_json::Value::as_bool) == Some(true))
        .map(|a| {
            format!(
                "{} ({})",
                a.get("id")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default(),
                a.get("name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// How many minors a kubelet may be older than the API server (Kubernetes version skew
/// policy, kubernetes.io/releases/version-skew-policy, since 1.28).
const MAX_KUBELET_SKEW: u32 = 3;

fn version_key(minor: &str) -> (u32, u32) {
    let mut it = minor.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}
