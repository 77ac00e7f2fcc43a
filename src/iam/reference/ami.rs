//! The SSM parameters behind EKS AMI aliases (`al2023@latest`, `bottlerocket@v1.20.0`, …).

use std::collections::BTreeMap;

use super::substitute;

/// The SSM parameters an `al2023@latest` alias reads for the standard variant of both
/// architectures (failure-modes §4.6); public parameters have no account in their ARN.
pub fn al2023_parameter_arns(vars: &BTreeMap<String, String>, k8s: &str) -> Vec<String> {
    ["x86_64", "arm64"]
        .iter()
        .filter_map(|arch| {
            substitute(
                &format!(
                    "arn:{{partition}}:ssm:{{region}}::parameter/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/standard/recommended/image_id"
                ),
                vars,
            )
        })
        .collect()
}

/// The SSM parameter paths an `amiSelectorTerms` alias resolves to, for a Kubernetes minor
/// version and the architectures the NodePools allow. `None` for an alias karpdoctor does
/// not know how to expand.
pub fn alias_parameter_paths(alias: &str, k8s: &str, arches: &[&str]) -> Option<Vec<String>> {
    let (family, version) = alias.split_once('@')?;
    let version = version.trim();
    let mut out = Vec::new();
    for &arch in arches {
        let arch = match arch {
            "amd64" | "x86_64" => "x86_64",
            "arm64" | "aarch64" => "arm64",
            _ => continue,
        };
        match family {
            "al2023" => {
                let variants: &[&str] = if arch == "x86_64" {
                    &["standard", "nvidia", "neuron"]
                } else {
                    &["standard", "nvidia"]
                };
                for variant in variants {
                    let leaf = if version == "latest" {
                        "recommended".to_string()
                    } else {
                        format!("amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}")
                    };
                    out.push(format!(
                        "/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
                    ));
                }
            }
            "al2" => {
                let (dirs, names): (&[&str], &[&str]) = if arch == "x86_64" {
                    (
                        &["amazon-linux-2", "amazon-linux-2-gpu"],
                        &["amazon-eks-node", "amazon-eks-gpu-node"],
                    )
                } else {
                    (&["amazon-linux-2-arm64"], &["amazon-eks-arm64-node"])
                };
                for (dir, name) in dirs.iter().zip(names) {
                    let leaf = if version == "latest" {
                        "recommended".to_string()
                    } else {
                        format!("{name}-{k8s}-{version}")
                    };
                    out.push(format!(
                        "/aws/service/eks/optimized-ami/{k8s}/{dir}/{leaf}/image_id"
                    ));
                }
            }
            "bottlerocket" => {
                let v = if version == "latest" {
                    "latest".to_string()
                } else {
                    version.trim_start_matches('v').to_string()
                };
                for flavour in ["", "-nvidia"] {
                    out.push(format!(
                        "/aws/service/bottlerocket/aws-k8s-{k8s}{flavour}/{arch}/{v}/image_id"
                    ));
                }
            }
            f if f.starts_with("windows") => {
                let year = f.trim_start_matches("windows");
                if arch == "x86_64" {
                    out.push(format!(
                        "/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"
                    ));
                }
            }
            _ => return None,
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}
