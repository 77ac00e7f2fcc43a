//! The controller's credential wiring, resolved once for every identity check: its
//! ServiceAccount and IRSA annotation, the Pod Identity associations for that ServiceAccount,
//! and its running pods.

use k8s_openapi::api::core::v1::Pod;

use super::cluster::name_unknown;
use crate::check::CheckCx;
use crate::facts::{FactError, PodIdentityAssociation};
use crate::model::{ControllerDeployment, is_controller_image};

/// The annotation IRSA's webhook reads.
pub const IRSA_ANNOTATION: &str = "eks.amazonaws.com/role-arn";

/// The role a ServiceAccount's IRSA annotation names; `None` when absent or blank (the pod
/// identity webhook injects nothing for an empty value).
pub fn irsa_role(sa: &k8s_openapi::api::core::v1::ServiceAccount) -> Option<&str> {
    sa.metadata
        .annotations
        .as_ref()?
        .get(IRSA_ANNOTATION)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

pub struct Wiring {
    pub namespace: String,
    pub service_account: String,
    pub deployment: String,
    /// The IRSA role ARN annotated on the ServiceAccount.
    pub irsa_role_arn: Option<String>,
    pub associations: Vec<PodIdentityAssociation>,
    pub pods: Vec<Pod>,
    pub cluster: String,
    pub account: Option<String>,
}

impl Wiring {
    pub fn object(&self) -> String {
        format!("ServiceAccount/{}/{}", self.namespace, self.service_account)
    }

    pub fn restart(&self) -> String {
        format!(
            "kubectl -n {} rollout restart deployment/{}",
            self.namespace, self.deployment
        )
    }
}

/// Not applicable without a controller (KD1001 reports that) or a known cluster.
fn not_applicable(what: &str) -> FactError {
    FactError::NotInstalled {
        what: what.to_string(),
    }
}

pub async fn resolve(cx: &CheckCx) -> Result<Wiring, FactError> {
    let Some((deployments, index)) = cx.controller().await? else {
        return Err(not_applicable("the Karpenter controller"));
    };
    let controller = ControllerDeployment::new(&deployments[index]);
    let namespace = controller.namespace().to_string();
    let service_account = controller
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.service_account_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let target = cx.target();
    let Some(cluster) = target.cluster.clone() else {
        return Err(name_unknown());
    };
    let selector = controller.pod_selector();
    let (sa, associations, pods) = futures::future::join3(
        cx.service_account(&namespace, &service_account),
        cx.pod_identity_associations(&cluster, &namespace, &service_account),
        async {
            match &selector {
                Some(sel) => cx.pods(&namespace, sel).await.map(|p| p.to_vec()),
                None => Ok(Vec::new()),
            }
        },
    )
    .await;
    let irsa_role_arn = sa?
        .as_ref()
        .as_ref()
        .and_then(irsa_role)
        .map(str::to_string);
    Ok(Wiring {
        namespace,
        service_account,
        deployment: controller.name().to_string(),
        irsa_role_arn,
        associations: associations?.to_vec(),
        pods: pods?,
        cluster,
        account: target.account,
    })
}

/// A literal environment variable of a pod's controller container.
pub fn pod_env<'a>(pod: &'a Pod, name: &str) -> Option<&'a str> {
    let containers = &pod.spec.as_ref()?.containers;
    let c = containers
        .iter()
        .find(|c| c.image.as_deref().is_some_and(is_controller_image))
        .or_else(|| containers.iter().find(|c| c.name == "controller"))
        .or_else(|| containers.first())?;
    c.env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)?
        .value
        .as_deref()
}
