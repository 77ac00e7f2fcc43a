//! EKS facts: the cluster, its add-ons and node groups, access entries, Pod Identity
//! associations and Fargate profiles.

use aws_sdk_eks::Client;
use aws_sdk_sts::error::SdkError;
use serde_json::{Value, json};

use super::FAN_OUT;
use super::errors::{absent_as_none, aws_error};
use crate::facts::FactError;

/// `eks:DescribeCluster`; `null` when the cluster does not exist.
pub(super) async fn cluster(eks: &Client, name: &str) -> Result<Value, FactError> {
    let res = eks.describe_cluster().name(name).send().await;
    let Some(out) = absent_as_none("eks:DescribeCluster", res, |e| {
        e.is_resource_not_found_exception()
    })?
    else {
        return Ok(Value::Null);
    };
    let Some(c) = out.cluster() else {
        return Ok(Value::Null);
    };
    Ok(json!({
        "name": c.name().unwrap_or_default(),
        "arn": c.arn().unwrap_or_default(),
        "version": c.version().unwrap_or_default(),
        "roleArn": c.role_arn(),
        "endpoint": c.endpoint().unwrap_or_default(),
        "status": c.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
        "oidcIssuer": c.identity().and_then(|i| i.oidc()).and_then(|o| o.issuer()),
        "authenticationMode": c.access_config().and_then(|a| a.authentication_mode()).map(|m| m.as_str().to_string()),
        "vpcId": c.resources_vpc_config().and_then(|v| v.vpc_id()),
        "clusterSecurityGroupId": c.resources_vpc_config().and_then(|v| v.cluster_security_group_id()),
        "endpointPublicAccess": c.resources_vpc_config().map(|v| v.endpoint_public_access()),
        "endpointPrivateAccess": c.resources_vpc_config().map(|v| v.endpoint_private_access()),
        "publicAccessCidrs": c.resources_vpc_config().map(|v| v.public_access_cidrs()),
        "securityGroupIds": c.resources_vpc_config().map(|v| v.security_group_ids()).unwrap_or_default(),
        "subnetIds": c.resources_vpc_config().map(|v| v.subnet_ids()).unwrap_or_default(),
        "serviceIpv4Cidr": c.kubernetes_network_config().and_then(|n| n.service_ipv4_cidr()),
        "ipFamily": c.kubernetes_network_config().and_then(|n| n.ip_family()).map(|f| f.as_str().to_string()),
        "computeConfig": c.compute_config().map(|cc| json!({
            "enabled": cc.enabled().unwrap_or(false),
            "nodePools": cc.node_pools(),
            "nodeRoleArn": cc.node_role_arn(),
        })),
        "blockStorage": c.storage_config().and_then(|s| s.block_storage()).and_then(|b| b.enabled()),
        "elasticLoadBalancing": c.kubernetes_network_config().and_then(|n| n.elastic_load_balancing()).and_then(|e| e.enabled()),
    }))
}

/// `eks:DescribeAddon`; `null` when the add-on is not installed.
pub(super) async fn addon(eks: &Client, cluster: &str, name: &str) -> Result<Value, FactError> {
    let res = eks
        .describe_addon()
        .cluster_name(cluster)
        .addon_name(name)
        .send()
        .await;
    let Some(out) = absent_as_none("eks:DescribeAddon", res, |e| {
        e.is_resource_not_found_exception()
    })?
    else {
        return Ok(Value::Null);
    };
    Ok(match out.addon() {
        Some(a) => json!({
            "name": a.addon_name().unwrap_or_default(),
            "status": a.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
            "version": a.addon_version().unwrap_or_default(),
        }),
        None => Value::Null,
    })
}

/// `eks:DescribeNodegroup`; `null` when the node group does not exist.
pub(super) async fn nodegroup(eks: &Client, cluster: &str, name: &str) -> Result<Value, FactError> {
    let res = eks
        .describe_nodegroup()
        .cluster_name(cluster)
        .nodegroup_name(name)
        .send()
        .await;
    let Some(out) = absent_as_none("eks:DescribeNodegroup", res, |e| {
        e.is_resource_not_found_exception()
    })?
    else {
        return Ok(Value::Null);
    };
    Ok(match out.nodegroup() {
        Some(n) => json!({
            "name": n.nodegroup_name().unwrap_or_default(),
            "nodeRole": n.node_role().unwrap_or_default(),
            "status": n.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
        }),
        None => Value::Null,
    })
}

/// The Pod Identity associations of one ServiceAccount: listed, then each described for its
/// role.
pub(super) async fn pod_identity_associations(
    eks: &Client,
    cluster: &str,
    namespace: &str,
    service_account: &str,
) -> Result<Value, FactError> {
    let mut ids = Vec::new();
    let mut pages = eks
        .list_pod_identity_associations()
        .cluster_name(cluster)
        .namespace(namespace)
        .service_account(service_account)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("eks:ListPodIdentityAssociations", e))?;
        ids.extend(
            page.associations()
                .iter()
                .filter_map(|a| a.association_id().map(str::to_string)),
        );
    }
    let described = futures::future::join_all(ids.iter().map(|id| {
        eks.describe_pod_identity_association()
            .cluster_name(cluster)
            .association_id(id)
            .send()
    }))
    .await;
    let mut out = Vec::new();
    for d in described {
        let d = d.map_err(|e| aws_error("eks:DescribePodIdentityAssociation", e))?;
        if let Some(a) = d.association() {
            out.push(json!({
                "associationId": a.association_id().unwrap_or_default(),
                "namespace": a.namespace().unwrap_or_default(),
                "serviceAccount": a.service_account().unwrap_or_default(),
                "roleArn": a.role_arn().unwrap_or_default(),
            }));
        }
    }
    Ok(Value::Array(out))
}

/// The cluster's access entries: listed, then each described for its type and username.
pub(super) async fn access_entries(eks: &Client, cluster: &str) -> Result<Value, FactError> {
    let mut principals = Vec::new();
    let mut pages = eks
        .list_access_entries()
        .cluster_name(cluster)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("eks:ListAccessEntries", e))?;
        principals.extend(page.access_entries().iter().cloned());
    }
    // Bounded fan-out: FAN_OUT describes in flight, batch after batch.
    let mut described = Vec::new();
    for batch in principals.chunks(FAN_OUT) {
        described.extend(
            futures::future::join_all(batch.iter().map(|p| {
                eks.describe_access_entry()
                    .cluster_name(cluster)
                    .principal_arn(p)
                    .send()
            }))
            .await,
        );
    }
    let mut out = Vec::new();
    for d in described {
        let d = d.map_err(|e| aws_error("eks:DescribeAccessEntry", e))?;
        if let Some(a) = d.access_entry() {
            out.push(json!({
                "principalArn": a.principal_arn().unwrap_or_default(),
                "type": a.r#type().unwrap_or_default(),
                "username": a.username().unwrap_or_default(),
                "kubernetesGroups": a.kubernetes_groups(),
            }));
        }
    }
    Ok(Value::Array(out))
}

/// The access policies associated with one access entry (paged).
pub(super) async fn access_policies(
    eks: &Client,
    cluster: &str,
    principal: &str,
) -> Result<Value, FactError> {
    let mut out = Vec::new();
    let mut pages = eks
        .list_associated_access_policies()
        .cluster_name(cluster)
        .principal_arn(principal)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("eks:ListAssociatedAccessPolicies", e))?;
        for p in page.associated_access_policies() {
            let scope = p.access_scope();
            out.push(json!({
                "policyArn": p.policy_arn().unwrap_or_default(),
                "scope": scope.and_then(|s| s.r#type()).map(|t| t.as_str()).unwrap_or_default(),
                "namespaces": scope.map(|s| s.namespaces()).unwrap_or_default(),
            }));
        }
    }
    Ok(Value::Array(out))
}

/// The cluster's Fargate profiles: listed, then each described for its selectors. A cluster
/// that does not exist has none.
pub(super) async fn fargate_profiles(eks: &Client, cluster: &str) -> Result<Value, FactError> {
    let mut names = Vec::new();
    let mut pages = eks
        .list_fargate_profiles()
        .cluster_name(cluster)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        match page {
            Ok(page) => names.extend(page.fargate_profile_names().iter().cloned()),
            Err(SdkError::ServiceError(e)) if e.err().is_resource_not_found_exception() => {
                return Ok(Value::Array(Vec::new()));
            }
            Err(e) => return Err(aws_error("eks:ListFargateProfiles", e)),
        }
    }
    let mut described = Vec::new();
    for batch in names.chunks(FAN_OUT) {
        described.extend(
            futures::future::join_all(batch.iter().map(|n| {
                eks.describe_fargate_profile()
                    .cluster_name(cluster)
                    .fargate_profile_name(n)
                    .send()
            }))
            .await,
        );
    }
    let mut out = Vec::new();
    for d in described {
        let d = d.map_err(|e| aws_error("eks:DescribeFargateProfile", e))?;
        out.extend(d.fargate_profile().map(fargate_profile_json));
    }
    Ok(Value::Array(out))
}

/// The fields of one Fargate profile that karpdoctor reads.
fn fargate_profile_json(p: &aws_sdk_eks::types::FargateProfile) -> Value {
    let selectors: Vec<Value> = p
        .selectors()
        .iter()
        .map(|s| {
            json!({
                "namespace": s.namespace().unwrap_or_default(),
                "labels": s.labels().cloned().unwrap_or_default()
                    .into_iter().collect::<std::collections::BTreeMap<_, _>>(),
            })
        })
        .collect();
    json!({
        "name": p.fargate_profile_name().unwrap_or_default(),
        "status": p.status().map(|s| s.as_str().to_string()).unwrap_or_default(),
        "podExecutionRoleArn": p.pod_execution_role_arn().unwrap_or_default(),
        "subnets": p.subnets(),
        "selectors": selectors,
    })
}
