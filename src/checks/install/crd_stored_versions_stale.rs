//! KD1003: after the v1 migration, CRDs that still list `v1beta1` in `status.storedVersions`
//! cannot be upgraded to releases that dropped it ("must appear in spec.versions"), and a
//! conversion webhook pointing at a Service that is gone breaks every read of the objects.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::check::prelude::*;
use crate::checks::common::crds::{REQUIRED_CRDS, fingerprint_crds, served_versions};
use crate::iam::reference::Version;
use crate::checks::common::controller::installed_release;

declare_check! {
    pub static CRD_STORED_VERSIONS_STALE = {
        code: "KD1003",
        slug: "crd-stored-versions-stale",
        title: "Karpenter's CRDs store only versions they serve and convert without a webhook",
        category: Install,
        severity: Error,
        needs: [Crd, Service, ControllerDeployments],
        self_managed: true,
        run: crd_stored_versions_stale,
    }
}

async fn crd_stored_versions_stale(cx: &CheckCx) -> CheckResult {
    let controller_version = installed_release(cx).await?;
    let names: Vec<&str> = REQUIRED_CRDS
        .iter()
        .copied()
        .chain(fingerprint_crds().filter(|n| n.ends_with(".karpenter.sh")))
        .collect();
    let mut findings = Vec::new();
    for name in names {
        let crd = cx.crd(name).await?;
        let Some(crd) = crd.as_ref() else { continue };
        if let Some(f) = stale_stored_versions(name, crd, controller_version) {
            findings.push(f);
        }
        if let Some(f) = conversion_webhook(cx, name, crd, controller_version).await? {
            findings.push(f);
        }
    }
    Ok(findings)
}

/// Stale stored versions: an error once the controller is 1.1 or later (the CRDs it needs
/// cannot be installed over them), a warning on 1.0.x, where `[v1beta1, v1]` is the expected
/// state until the migration is finished, a step to take before upgrading to 1.1.
fn stale_stored_versions(
    name: &str,
    crd: &CustomResourceDefinition,
    controller: Option<Version>,
) -> Option<Finding> {
    let served = served_versions(crd);
    let stored: Vec<String> = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    let stale: Vec<&String> = stored.iter().filter(|v| v.as_str() != "v1").collect();
    // Only v1 should remain once the migration is done; anything else blocks the next
    // upgrade of the CRDs. Before it (0.37's CRDs serve v1 but store v1beta1, converting with
    // the webhook) v1beta1 is where objects live, and listing it is how it should be.
    let stores_v1 = crd
        .spec
        .versions
        .iter()
        .any(|v| v.storage && v.name == "v1");
    if stale.is_empty() || !served.contains(&"v1") || !stores_v1 {
        return None;
    }
    let stale: Vec<String> = stale.into_iter().cloned().collect();
    let upgraded = controller.is_some_and(|v| v >= Version(1, 1, 0));
    let (message, severity) = if upgraded {
        (
            format!(
                "status.storedVersions still lists {} besides v1 under a 1.1+ controller: the CRDs of its release cannot be installed (\"status.storedVersions[0]: Invalid value: \\\"{}\\\": must appear in spec.versions\")",
                stale.join(", "),
                stale[0]
            ),
            Severity::Error,
        )
        } else {
        (
            format!(
                "status.storedVersions still lists {} besides v1: expected on 1.0.x until the v1 migration is finished, but the upgrade to 1.1 fails until it is (\"status.storedVersions[0]: Invalid value\")",
                stale.join(", ")
            ),
            Severity::Warning,
        )
    };
    Some(
        Finding::new(format!("CustomResourceDefinition/{name}"), message)
        .severity(severity)
        .evidence("storedVersions", stored)
        .evidence("servedVersions", served.iter().map(|v| v.to_string()).collect::<Vec<_>>())
        .hint(if upgraded {
            "finish the v1 migration by hand: write every object once so it is stored as v1, then drop the old version from storedVersions"
        } else {
            "before upgrading to 1.1, finish the v1 migration: run 1.0.6 or later until its migration controller has rewritten the stored objects and storedVersions is [\"v1\"]; `karpdoctor upgrade --to 1.1.0` says what else the upgrade would break"
        })
        .fix(format!(
            "kubectl patch crd {name} --subresource=status --type=merge -p '{{\"status\":{{\"storedVersions\":[\"v1\"]}}}}'"
        )),
    )
}

/// A `Webhook` conversion strategy whose Service is gone, or that releases from 1.1 on no
/// longer serve.
async fn conversion_webhook(
    cx: &CheckCx,
    name: &str,
    crd: &CustomResourceDefinition,
    controller: Option<Version>,
) -> Result<Option<Finding>, FactError> {
    let Some(conversion) = crd.spec.conversion.as_ref() else {
        return Ok(None);
    };
    if conversion.strategy != "Webhook" {
        return Ok(None);
    }
    let service = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.service.as_ref());
    let fix = format!(
        "kubectl patch crd {name} --type=json -p '[{{\"op\":\"remove\",\"path\":\"/spec/conversion\"}}]'"
    );
    let object = format!("CustomResourceDefinition/{name}");
    if let Some(svc) = service {
        let exists = cx.service(&svc.namespace, &svc.name).await?.is_some();
        if !exists {
            return Ok(Some(
                Finding::new(
                    object,
                    format!(
                        "the conversion webhook points at Service {}/{}, which does not exist: every read of the objects fails (\"service \\\"{}\\\" not found\")",
                        svc.namespace, svc.name, svc.name
                    ),
                )
                .evidence("conversionService", format!("{}/{}", svc.namespace, svc.name))
                .hint("v1.1+ needs no conversion webhook: remove spec.conversion (or upgrade the CRDs with the karpenter-crd chart)")
                .fix(fix),
            ));
        }
    }
    if controller.is_some_and(|v| v >= Version(1, 1, 0)) {
        return Ok(Some(
            Finding::new(
                object,
                "the CRD still converts through a webhook, which Karpenter 1.1+ no longer serves"
                    .to_string(),
            )
            .evidence("conversionStrategy", "Webhook")
            .hint("upgrade the CRDs with the karpenter-crd chart, or remove spec.conversion")
            .fix(fix),
        ));
    }
    Ok(None)
}
