//! Reading the kubeconfig the way kubectl does: `--kubeconfig` or `KUBECONFIG`, the chosen or
//! current context, exec plugins such as `aws eks get-token`, and in a pod without one the
//! service account. Read once per run; every kube client of the run is built from it.

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::errors::root_cause;
use super::{KubeTarget, LiveOptions};
use crate::error::Error;

/// The run's kube configuration and what it names, with karpdoctor's timeouts applied.
/// `None` when no kubeconfig can be read and the run can do without (`kube_optional`).
pub async fn load(options: &LiveOptions) -> Result<Option<(kube::Config, KubeTarget)>, Error> {
    match read(options).await {
        Ok(found) => Ok(Some(found)),
        Err(_) if options.kube_optional => Ok(None),
        Err(e) => Err(e),
    }
}

async fn read(options: &LiveOptions) -> Result<(kube::Config, KubeTarget), Error> {
    let (mut config, target) = match kubeconfig_file(options)? {
        Some(kc) => from_kubeconfig(kc, options.context.clone()).await?,
        None => in_cluster_config()?,
    };
    config.connect_timeout = Some(Duration::from_secs(5).min(options.request_timeout));
    config.read_timeout = Some(options.request_timeout);
    config.write_timeout = Some(options.request_timeout);
    Ok((config, target))
}

/// Every context of the kubeconfig (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`), in the
/// file's order: the targets of `--all-contexts`.
pub fn context_names(kubeconfig: Option<&std::path::Path>) -> Result<Vec<String>, Error> {
    let options = LiveOptions {
        kubeconfig: kubeconfig.map(std::path::Path::to_path_buf),
        // A context is asked for: no falling back to the pod's service account.
        context: Some(String::new()),
        ..LiveOptions::default()
    };
    match kubeconfig_file(&options)? {
        Some(kc) => Ok(kc.contexts.into_iter().map(|c| c.name).collect()),
        None => Err(Error::Kubeconfig {
            reason: "--all-contexts needs a kubeconfig; pass --kubeconfig or set KUBECONFIG"
                .to_string(),
        }),
    }
}

/// The kubeconfig file; `None` in a pod that has none (the service account is used then).
fn kubeconfig_file(options: &LiveOptions) -> Result<Option<Kubeconfig>, Error> {
    if let Some(path) = &options.kubeconfig {
        return Kubeconfig::read_from(path)
            .map(Some)
            .map_err(|e| Error::Kubeconfig {
                reason: format!("cannot read {}: {}", path.display(), root_cause(&e)),
            });
    }
    match Kubeconfig::read() {
        Ok(kc) => Ok(Some(kc)),
        // No kubeconfig at all: in a pod, fall back to the service account.
        Err(_) if options.context.is_none() && in_cluster() => Ok(None),
        Err(e) => Err(Error::Kubeconfig {
            reason: format!(
                "no usable kubeconfig ({}); pass --kubeconfig or set KUBECONFIG",
                root_cause(&e)
            ),
        }),
    }
}

/// The configuration of `context` (or the current context) of a kubeconfig.
async fn from_kubeconfig(
    kc: Kubeconfig,
    context: Option<String>,
) -> Result<(kube::Config, KubeTarget), Error> {
    let Some(context) = context.or_else(|| kc.current_context.clone()) else {
        return Err(Error::Kubeconfig {
            reason: "the kubeconfig has no current context; pass --context".to_string(),
        });
    };
    let Some(named) = kc.contexts.iter().find(|c| c.name == context) else {
        let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(Error::Kubeconfig {
            reason: format!(
                "context \"{context}\" is not in the kubeconfig (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        });
    };
    let context_cluster = named.context.as_ref().map(|c| c.cluster.clone());
    let server = kc
        .clusters
        .iter()
        .find(|c| Some(&c.name) == context_cluster.as_ref())
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone());
    let opts = KubeConfigOptions {
        context: Some(context.clone()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| Error::Kubeconfig {
            reason: root_cause(&e),
        })?;
    let target = KubeTarget {
        context: Some(context),
        context_cluster,
        server,
    };
    Ok((config, target))
}

/// The pod's service account configuration.
fn in_cluster_config() -> Result<(kube::Config, KubeTarget), Error> {
    let config = kube::Config::incluster().map_err(|e| Error::Kubeconfig {
        reason: format!("in-cluster configuration: {}", root_cause(&e)),
    })?;
    let server = config.cluster_url.to_string();
    let target = KubeTarget {
        context: Some("in-cluster".to_string()),
        context_cluster: None,
        server: Some(server),
    };
    Ok((config, target))
}

fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}
