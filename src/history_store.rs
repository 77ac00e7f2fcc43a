//! Where `--history` keeps the last run: one ConfigMap in karpdoctor's own namespace.
//!
//! The only thing karpdoctor ever writes, so it lives above the read-only backend with a
//! Kubernetes client of its own, built from the run's kube configuration with the guard told
//! the one object it may get and update. The ConfigMap itself must exist
//! (`deploy/history-configmap.yaml`): creating it would need a permission that cannot be
//! limited to one name.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use crate::backend::live::errors::{kube_error, no_kubernetes_api};
use crate::error::Error;
use crate::guard::{ApiLog, WritableObject, kube_client};

/// The key in the ConfigMap's `data` that holds the document.
pub const DATA_KEY: &str = "last-run.json";

/// The history ConfigMap of one run.
pub struct HistoryStore {
    /// Absent in a run without a Kubernetes API (no kubeconfig could be read).
    client: Option<kube::Client>,
    namespace: String,
    name: String,
}

impl HistoryStore {
    /// A store for ConfigMap `namespace/name`, reached with the run's kube configuration
    /// (`None` when the run has none: reads then fail as unreachable).
    pub fn connect(
        config: Option<kube::Config>,
        namespace: String,
        name: &str,
        log: ApiLog,
    ) -> Result<Self, Error> {
        let name = name.to_string();
        let writable = WritableObject {
            namespace: namespace.clone(),
            name: name.clone(),
        };
        let client = config
            .map(|config| kube_client(config, log, Some(writable)))
            .transpose()?;
        Ok(HistoryStore {
            client,
            namespace,
            name,
        })
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn api(&self) -> Result<Api<ConfigMap>, String> {
        let client = self
            .client
            .clone()
            .ok_or_else(|| no_kubernetes_api().to_string())?;
        Ok(Api::namespaced(client, &self.namespace))
    }

    /// Reads the ConfigMap and the stored document; the document is `None` when there is
    /// none yet.
    pub async fn read(&self) -> Result<(ConfigMap, Option<String>), String> {
        let (namespace, name) = (&self.namespace, &self.name);
        match self.api()?.get_opt(name).await {
            Ok(Some(cm)) => {
                let doc = cm.data.as_ref().and_then(|d| d.get(DATA_KEY)).cloned();
                Ok((cm, doc))
            }
            Ok(None) => Err(format!(
                "history ConfigMap {namespace}/{name} does not exist (apply deploy/history-configmap.yaml)"
            )),
            Err(e) => Err(format!(
                "history ConfigMap {namespace}/{name}: {}",
                kube_error("get configmaps", e)
            )),
        }
    }

    /// Stores the document: an update of the ConfigMap [`HistoryStore::read`] returned, so a
    /// concurrent writer is detected by its resourceVersion.
    pub async fn write(&self, mut cm: ConfigMap, document: String) -> Result<(), String> {
        let (namespace, name) = (&self.namespace, &self.name);
        cm.data
            .get_or_insert_with(Default::default)
            .insert(DATA_KEY.to_string(), document);
        self.api()?
            .replace(name, &PostParams::default(), &cm)
            .await
            .map(drop)
            .map_err(|e| {
                format!(
                    "history ConfigMap {namespace}/{name}: {}",
                    kube_error("update configmaps", e)
                )
            })
    }
}
