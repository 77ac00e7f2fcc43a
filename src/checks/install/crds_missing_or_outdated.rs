//! KD1002: the controller cannot start its informers, and users cannot create NodePools,
//! without Karpenter's CRDs serving the `v1` API.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

use crate::check::prelude::*;
use crate::checks::common::crds::{Added, FINGERPRINTS, REQUIRED_CRDS, served_versions};
use crate::iam::reference::Version;
use crate::model::ControllerDeployment;

declare_check! {
    pub static CRDS_MISSING_OR_OUTDATED = {
        code: "KD1002",
        slug: "crds-missing-or-outdated",
        title: "Karpenter's CRDs are installed and serve the v1 API",
        category: Install,
        severity: Error,
        needs: [Crd, ControllerDeployments],
        self_managed: true,
        run: crds_missing_or_outdated,
    }
}

async fn crds_missing_or_outdated(cx: &CheckCx) -> CheckResult {
    let target = cx.target();
    let ns = target
        .karpenter_namespace
        .clone()
        .unwrap_or_else(|| "kube-system".to_string());
    let version = target
        .karpenter_version
        .clone()
        .unwrap_or_else(|| "${KARPENTER_VERSION}".to_string());
    let upgrade = format!(
        "helm upgrade --install karpenter-crd oci://public.ecr.aws/karpenter/karpenter-crd --version {version} --namespace {ns}"
    );
    let crds = futures::future::join_all(REQUIRED_CRDS.iter().map(|name| cx.crd(name))).await;
    let mut findings = Vec::new();
    for (name, crd) in REQUIRED_CRDS.iter().zip(crds) {
        let Some(crd) = crd?.as_ref().clone() else {
            findings.push(
                Finding::new(
                    format!("CustomResourceDefinition/{name}"),
                    "the CRD is not installed",
                )
                .hint("install the karpenter-crd chart with the same version as the controller")
                .fix(upgrade.clone()),
            );
            continue;
        };
        let served = served_versions(&crd);
        // A 0.3x controller speaks v1beta1 and needs nothing more; v1 is what 1.0+ reads.
        let pre_v1_controller = target
            .karpenter_version
            .as_deref()
            .and_then(Version::parse)
            .is_some_and(|v| v < Version(1, 0, 0));
        let enough = served.contains(&"v1") || (pre_v1_controller && served.contains(&"v1beta1"));
        if !enough {
            findings.push(
                Finding::new(
                    format!("CustomResourceDefinition/{name}"),
                    format!("the CRD does not serve v1 (serves {})", if served.is_empty() { "nothing".to_string() } else { served.join(", ") }),
                )
                .evidence("servedVersions", served.join(","))
                .hint("the CRDs predate Karpenter v1: upgrade them with the karpenter-crd chart (Helm never upgrades CRDs of the main chart)")
                .fix(upgrade.clone()),
            );
        }
    }
    findings.extend(older_than_controller(cx, &upgrade).await?);
    Ok(findings)
}

async fn older_than_controller(cx: &CheckCx, upgrade: &str) -> Result<Vec<Finding>, FactError> {
    let Some((deployments, index)) = cx.controller().await? else {
        return Ok(Vec::new());
    };
    let Some(version) = ControllerDeployment::new(&deployments[index])
        .version()
        .as_deref()
        .and_then(Version::parse)
    else {
        return Ok(Vec::new());
    };
    let mut missing: Vec<(String, String)> = Vec::new();
    for (since, crd_name, added) in FINGERPRINTS
        .iter()
        .filter(|(since, _, _)| version >= *since)
    {
        let crd = cx.crd(crd_name).await?;
        match (added, crd.as_ref()) {
            (Added::Crd, None) => {
                missing.push((crd_name.to_string(), format!("the CRD (added in {since})")))
            }
            (Added::SpecField(field), Some(crd)) => {
                // Only a published schema can be judged: a CRD without one says nothing.
                let Some(spec) = v1_spec_properties(crd) else {
                    continue;
                };
                if !spec.contains_key(*field) {
                    missing.push((
                        crd_name.to_string(),
                        format!("spec.{field} (added in {since})"),
                    ));
                }
            }
            // A missing base CRD is reported above.
            _ => {}
        }
    }
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let described: Vec<String> = missing
        .iter()
        .map(|(crd, what)| format!("{crd}: {what}"))
        .collect();
    Ok(vec![
        Finding::new(
            "CustomResourceDefinition/karpenter",
            format!(
                "the CRDs are older than the controller ({version}): they lack {}",
                described.join("; ")
            ),
        )
        .evidence("controllerVersion", version.to_string())
        .evidence("missing", described)
        .hint("the karpenter chart installs CRDs only on first install: upgrade them with the karpenter-crd chart at the controller's version")
        .fix(upgrade.to_string()),
    ])
}

/// The properties of `spec` in the v1 schema of a CRD, when the CRD publishes them.
fn v1_spec_properties(
    crd: &CustomResourceDefinition,
) -> Option<&std::collections::BTreeMap<String, JSONSchemaProps>> {
    crd.spec
        .versions
        .iter()
        .find(|v| v.name == "v1")?
        .schema
        .as_ref()?
        .open_api_v3_schema
        .as_ref()?
        .properties
        .as_ref()?
        .get("spec")?
        .properties
        .as_ref()
}
