//! The values a launch of this install carries for the condition keys EC2 evaluates on it, so
//! a simulation that a guardrail denied can be asked again as the real launch would be.
//!
//! Organizations hold launches to IMDSv2, a hop limit, gp3 or encrypted volumes or a list of
//! instance types with SCPs (or boundaries) whose Deny uses a negated operator, as AWS's own
//! examples do (`StringNotEquals ec2:MetadataHttpTokens required` on `instance/*`). IAM applies
//! a negated operator to a key the request lacks, so a simulation without the key looks
//! blocked although Karpenter sends `required`. Which key is evaluated on which resource is
//! the EC2 Service Authorization Reference's (RunInstances; CreateFleet is judged as
//! RunInstances for what its launch template names); the values are what Karpenter puts in
//! its launch template: `spec.metadataOptions` (the CRD default when absent: hop limit 1 in
//! v1, 2 in v1beta1) and `spec.blockDeviceMappings` (each family's default volumes, encrypted
//! gp3, when absent; the AMI's own for Custom, which cannot be known here). Sources:
//! docs/iam-simulation.md, "Values a launch carries".

use std::collections::BTreeSet;

use serde_json::Value;

use super::spot::{allows_capacity, allows_spot};
use crate::facts::ContextEntry;
use crate::model::{Ec2NodeClass, NodePool};

/// The actions whose simulations are asked again with launch values.
pub const LAUNCH_ACTIONS: &[&str] = &["ec2:RunInstances", "ec2:CreateFleet"];

/// At most this many instance types (one per family) are tried when a guardrail depends on
/// the instance type: enough to tell "some families" from "none", one request each.
pub const TYPE_SAMPLE: usize = 8;

/// Which launch resource a simulated ARN is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchResource {
    Instance,
    Volume,
}

impl LaunchResource {
    pub fn of(arn: &str) -> Option<LaunchResource> {
        let resource = arn.splitn(6, ':').nth(5)?;
        if resource.starts_with("instance/") {
            Some(LaunchResource::Instance)
        } else if resource.starts_with("volume/") {
            Some(LaunchResource::Volume)
        } else {
            None
        }
    }
}

/// What one EC2NodeClass's launches carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchValues {
    /// `ec2:MetadataHttp*` and `ec2:InstanceMarketType`, evaluated on `instance/*`.
    pub instance: Vec<ContextEntry>,
    /// `ec2:VolumeType` and `ec2:Encrypted` of each distinct volume, evaluated on `volume/*`.
    /// Empty when the volumes are the AMI's own (Custom without mappings): not known here.
    pub volumes: Vec<Vec<ContextEntry>>,
}

impl LaunchValues {
    /// The context sets a launch carries on `resource`: one for an instance, one per distinct
    /// volume.
    pub fn for_resource(&self, resource: LaunchResource) -> Vec<Vec<ContextEntry>> {
        match resource {
            LaunchResource::Instance => vec![self.instance.clone()],
            LaunchResource::Volume => self.volumes.clone(),
        }
    }
}

/// `key=value` for evidence: the values a decision was asked with.
pub fn describe(context: &[ContextEntry]) -> Vec<String> {
    context
        .iter()
        .map(|e| format!("{}={}", e.key, e.values.join(",")))
        .collect()
}

pub fn entry(key: &str, kind: &str, value: impl Into<String>) -> ContextEntry {
    ContextEntry {
        key: key.to_string(),
        kind: kind.to_string(),
        values: vec![value.into()],
    }
}

/// What the launches of `nc` (for the NodePools that use it) carry.
pub fn launch_values(nc: &Ec2NodeClass, pools: &[&NodePool]) -> LaunchValues {
    let md = nc.spec.get("metadataOptions").and_then(Value::as_object);
    let text = |k: &str, default: &str| {
        md.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    let default_hops = if nc.is_v1beta1() { 2 } else { 1 };
    let hops = md
        .and_then(|m| m.get("httpPutResponseHopLimit"))
        .and_then(Value::as_i64)
        .unwrap_or(default_hops);
    // A NodePool that may launch on-demand is judged on-demand (the usual first choice); only
    // spot-only pools launch as spot.
    let market = if pools.is_empty() || pools.iter().any(|p| allows_capacity(p, "on-demand")) {
        "on-demand"
    } else if pools.iter().any(|p| allows_spot(p)) {
        "spot"
    } else {
        "on-demand"
    };
    let mut instance = vec![
        entry("ec2:InstanceMarketType", "string", market),
        entry(
            "ec2:MetadataHttpEndpoint",
            "string",
            text("httpEndpoint", "enabled"),
        ),
        entry(
            "ec2:MetadataHttpPutResponseHopLimit",
            "numeric",
            hops.to_string(),
        ),
        entry(
            "ec2:MetadataHttpTokens",
            "string",
            text("httpTokens", "required"),
        ),
    ];
    instance.sort();
    LaunchValues {
        instance,
        volumes: volumes(nc),
    }
}

/// The distinct (type, encryption) of the volumes a launch creates. A mapping that leaves a
/// value out does not carry the key (EC2 takes the AMI's, unknown here).
fn volumes(nc: &Ec2NodeClass) -> Vec<Vec<ContextEntry>> {
    let mappings = nc
        .spec
        .get("blockDeviceMappings")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty());
    let Some(mappings) = mappings else {
        // Karpenter's family defaults: encrypted gp3 (Bottlerocket's two volumes alike).
        return match super::nodeclass::ami_family(nc).as_str() {
            "custom" | "" => Vec::new(),
            _ => vec![vec![
                entry("ec2:Encrypted", "boolean", "true"),
                entry("ec2:VolumeType", "string", "gp3"),
            ]],
        };
    };
    let mut out: BTreeSet<Vec<ContextEntry>> = BTreeSet::new();
    for m in mappings {
        let Some(ebs) = m.get("ebs") else { continue };
        let mut context = Vec::new();
        if let Some(encrypted) = ebs.get("encrypted").and_then(Value::as_bool) {
            context.push(entry("ec2:Encrypted", "boolean", encrypted.to_string()));
        }
        if let Some(kind) = ebs.get("volumeType").and_then(Value::as_str) {
            context.push(entry("ec2:VolumeType", "string", kind));
        }
        context.sort();
        out.insert(context);
    }
    out.into_iter().collect()
}

/// Up to [`TYPE_SAMPLE`] instance types of `launchable`, the first of each family (`m5` of
/// `m5.large`), in the order given.
pub fn type_sample(launchable: &[String]) -> Vec<String> {
    let mut families = BTreeSet::new();
    launchable
        .iter()
        .filter(|t| families.insert(t.split('.').next().unwrap_or(t).to_string()))
        .take(TYPE_SAMPLE)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nc(api: &str, spec: Value) -> Ec2NodeClass {
        serde_json::from_value(
            json!({"apiVersion": api, "metadata": {"name": "default"}, "spec": spec}),
        )
        .unwrap()
    }

    fn value<'a>(c: &'a [ContextEntry], key: &str) -> Option<&'a str> {
        c.iter()
            .find(|e| e.key == key)
            .map(|e| e.values[0].as_str())
    }

    #[test]
    fn defaults_follow_the_crd_of_each_version() {
        let v1 = launch_values(
            &nc(
                "karpenter.k8s.aws/v1",
                json!({"amiSelectorTerms": [{"alias": "al2023@latest"}]}),
            ),
            &[],
        );
        assert_eq!(
            value(&v1.instance, "ec2:MetadataHttpTokens"),
            Some("required")
        );
        assert_eq!(
            value(&v1.instance, "ec2:MetadataHttpPutResponseHopLimit"),
            Some("1")
        );
        assert_eq!(
            value(&v1.instance, "ec2:InstanceMarketType"),
            Some("on-demand")
        );
        assert_eq!(v1.volumes.len(), 1);
        assert_eq!(value(&v1.volumes[0], "ec2:VolumeType"), Some("gp3"));
        assert_eq!(value(&v1.volumes[0], "ec2:Encrypted"), Some("true"));
        let beta = launch_values(
            &nc("karpenter.k8s.aws/v1beta1", json!({"amiFamily": "AL2"})),
            &[],
        );
        assert_eq!(
            value(&beta.instance, "ec2:MetadataHttpPutResponseHopLimit"),
            Some("2")
        );
    }

    #[test]
    fn what_the_class_sets_is_sent() {
        let v = launch_values(
            &nc(
                "karpenter.k8s.aws/v1",
                json!({
                    "amiFamily": "Custom",
                    "metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 3},
                    "blockDeviceMappings": [
                        {"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp2", "encrypted": false}},
                        {"deviceName": "/dev/xvdb", "ebs": {"volumeType": "gp2", "encrypted": false}},
                        {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "100Gi"}}
                    ]
                }),
            ),
            &[],
        );
        assert_eq!(
            value(&v.instance, "ec2:MetadataHttpTokens"),
            Some("optional")
        );
        assert_eq!(
            value(&v.instance, "ec2:MetadataHttpPutResponseHopLimit"),
            Some("3")
        );
        // Two distinct volumes: gp2 unencrypted, and one whose values are the AMI's.
        assert_eq!(v.volumes.len(), 2);
        assert!(v.volumes.contains(&Vec::new()));
        let custom = launch_values(
            &nc("karpenter.k8s.aws/v1", json!({"amiFamily": "Custom"})),
            &[],
        );
        assert!(custom.volumes.is_empty(), "the AMI's own volumes");
    }

    #[test]
    fn spot_only_pools_launch_spot() {
        let pool: NodePool = serde_json::from_value(json!({
            "metadata": {"name": "spot"},
            "spec": {"template": {"spec": {"requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
            ]}}}
        }))
        .unwrap();
        let v = launch_values(
            &nc("karpenter.k8s.aws/v1", json!({"amiFamily": "AL2023"})),
            &[&pool],
        );
        assert_eq!(value(&v.instance, "ec2:InstanceMarketType"), Some("spot"));
    }

    #[test]
    fn the_sample_takes_one_type_per_family() {
        let types: Vec<String> = [
            "c5.large",
            "c5.xlarge",
            "m5.large",
            "r5.large",
            "m5.2xlarge",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(type_sample(&types), ["c5.large", "m5.large", "r5.large"]);
        let many: Vec<String> = (0..20).map(|i| format!("x{i}.large")).collect();
        assert_eq!(type_sample(&many).len(), TYPE_SAMPLE);
    }

    #[test]
    fn resources_are_told_apart_by_their_arn() {
        assert_eq!(
            LaunchResource::of("arn:aws:ec2:us-west-2:111122223333:instance/*"),
            Some(LaunchResource::Instance)
        );
        assert_eq!(
            LaunchResource::of("arn:aws:ec2:us-west-2:111122223333:volume/*"),
            Some(LaunchResource::Volume)
        );
        assert_eq!(
            LaunchResource::of("arn:aws:ec2:us-west-2:111122223333:launch-template/*"),
            None
        );
    }
}
