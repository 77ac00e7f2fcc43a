//! KD1007: webhook configurations left behind by old Karpenter releases. The API server calls
//! them on every create and update of the objects they match, so a Service that is gone (or
//! no longer serves webhooks) blocks every change of NodePools and EC2NodeClasses.

use serde_json::Value;

use crate::check::prelude::*;
use crate::checks::common::controller::controller;
use crate::iam::reference::Version;

declare_check! {
    pub static STALE_WEBHOOK_CONFIGURATIONS = {
        code: "KD1007",
        slug: "stale-webhook-configurations",
        title: "no admission webhook configuration points at a Karpenter service that is gone",
        category: Install,
        severity: Error,
        needs: [WebhookConfigurations, Service, ControllerDeployments, Pods],
        self_managed: true,
        run: stale_webhook_configurations,
    }
}

/// Webhooks of the v0.3x charts; the chart stopped creating them in v1.1.
const LEGACY: &[&str] = &[
    "validation.webhook.karpenter.sh",
    "validation.webhook.config.karpenter.sh",
    "defaulting.webhook.karpenter.k8s.aws",
    "validation.webhook.karpenter.k8s.aws",
];

async fn stale_webhook_configurations(cx: &CheckCx) -> CheckResult {
    let configs = cx.webhook_configurations().await?;
    let version = match controller(cx).await {
        Ok(c) => c.version(),
        Err(FactError::NotInstalled { .. }) => None,
        Err(e) => return Err(e),
    };
    let mut findings = Vec::new();
    for config in configs.iter() {
        let kind = config
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("ValidatingWebhookConfiguration");
        let name = config
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let resource = if kind.starts_with("Mutating") {
            "mutatingwebhookconfiguration"
        } else {
            "validatingwebhookconfiguration"
        };
        let delete = format!("kubectl delete {resource} {name}");
        for hook in config
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let hook_name = hook.get("name").and_then(Value::as_str).unwrap_or_default();
            let svc = hook.pointer("/clientConfig/service");
            let svc_ns = svc
                .and_then(|s| s.get("namespace"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let svc_name = svc
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let port = svc
                .and_then(|s| s.get("port"))
                .and_then(Value::as_i64)
                .unwrap_or(443);
            let karpenter = [name, hook_name, svc_name]
                .iter()
                .any(|s| s.contains("karpenter"));
            if !karpenter {
                continue;
            }
            let object = format!("{kind}/{name}");
            let service = if svc_name.is_empty() {
                None
            } else {
                Some(cx.service(svc_ns, svc_name).await?)
            };
            let exposes_port = service.as_ref().and_then(|s| s.as_ref().as_ref()).map(|s| {
                s.spec
                    .as_ref()
                    .and_then(|sp| sp.ports.as_ref())
                    .is_some_and(|ps| ps.iter().any(|p| i64::from(p.port) == port))
            });
            // 1.0 validates with CEL in the CRDs and serves only conversion (kubernetes-sigs/
            // karpenter v1.0 pkg/webhooks registers the certificate controller and
            // /conversion/karpenter.sh only), so a validating or defaulting configuration
            // of 0.3x is answered by nothing that understands it, even when its Service is
            // still there.
            if LEGACY.contains(&hook_name) && version.is_some_and(|v| v >= Version(1, 0, 0)) {
                findings.push(
                    Finding::new(
                        object,
                        format!("webhook {hook_name} is left over from a pre-1.0 release; the controller ({}) serves no validating or defaulting webhook, so calls fail and block changes to Karpenter objects", version.map(|v| v.to_string()).unwrap_or_default()),
                    )
                    .evidence("webhook", hook_name)
                    .evidence("service", format!("{svc_ns}/{svc_name}:{port}"))
                    .evidence("serviceExposesPort", exposes_port.unwrap_or(false))
                    .hint("delete the configuration: the v1 migration guide lists it for manual removal")
                    .fix(delete.clone()),
                );
                continue;
            }
            let message = match exposes_port {
                None if service.is_none() => continue,
                None => format!(
                    "webhook {hook_name} calls Service {svc_ns}/{svc_name}, which does not exist (\"service \\\"{svc_name}\\\" not found\")"
                ),
                Some(true) => continue,
                Some(false) => format!(
                    "webhook {hook_name} calls port {port} of Service {svc_ns}/{svc_name}, which does not expose it (\"no service port {port} found\")"
                ),
            };
            findings.push(
                Finding::new(object, message)
                    .evidence("webhook", hook_name)
                    .evidence("service", format!("{svc_ns}/{svc_name}:{port}"))
                    .hint("delete the stale configuration (current releases need none)")
                    .fix(delete.clone()),
            );
        }
    }
    Ok(findings)
}
