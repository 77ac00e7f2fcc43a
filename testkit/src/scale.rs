//! Large clusters for the scale benchmark, generated from a healthy bundle so that what grows is
//! the data, not the set of facts: at factor 1, 1,250 NodeClaims with their nodes, 12,500
//! NodeClaim events, 250 subnets, 250 security groups, and 5 NodePools with 5 EC2NodeClasses.
//! Everything generated is healthy: a run over it must conclude exactly what it concludes over
//! the base bundle. One NodeClaim in ten is drifted and waits its turn behind its NodePool's
//! budget (one node at a time, taken by a replacement in progress), with its pods under a
//! PodDisruptionBudget, so the disruption checks judge every one of them.

use serde_json::{Value, json};

/// Per unit of `factor`.
pub const NODECLAIMS: usize = 1_250;
pub const EVENTS: usize = 12_500;
pub const SUBNETS: usize = 250;
pub const SECURITY_GROUPS: usize = 250;
pub const NODEPOOLS: usize = 5;
/// Pending pods Karpenter could serve (Unschedulable for 10 minutes), 100 per Deployment: the
/// scheduling checks judge every one of them and conclude nothing is wrong.
pub const PENDING_PODS: usize = 1_250;
pub const PODS_PER_OWNER: usize = 100;
/// One NodeClaim in this many is a drifted candidate for replacement.
pub const DRIFTED_EVERY: usize = 10;

/// What one generated bundle holds, for the benchmark's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub nodeclaims: usize,
    pub events: usize,
    pub subnets: usize,
    pub security_groups: usize,
    pub nodepools: usize,
    pub pending_pods: usize,
}

impl Size {
    pub fn of(factor: usize) -> Size {
        Size {
            nodeclaims: NODECLAIMS * factor,
            events: EVENTS * factor,
            subnets: SUBNETS * factor,
            security_groups: SECURITY_GROUPS * factor,
            nodepools: NODEPOOLS * factor,
            pending_pods: PENDING_PODS * factor,
        }
    }
}

/// `base` (a bundle with one NodePool and one EC2NodeClass, as `fixtures/healthy`) grown by
/// `factor`. Facts other than the grown ones are kept as they are.
pub fn grow(base: &Value, factor: usize) -> Result<Value, String> {
    let size = Size::of(factor);
    let mut bundle = base.clone();
    let facts = bundle
        .get_mut("facts")
        .and_then(Value::as_array_mut)
        .ok_or("the base bundle has no facts")?;
    let template = |name: &str| -> Result<Value, String> {
        facts
            .iter()
            .find(|f| f["fact"] == name)
            .and_then(|f| f["value"].as_array())
            .and_then(|v| v.first())
            .cloned()
            .ok_or_else(|| format!("the base bundle has no {name}"))
    };
    let pool = template("nodePools")?;
    let class = template("ec2NodeClasses")?;
    let subnet = template("ec2Subnets")?;
    let group = template("ec2SecurityGroups")?;
    let zones: Vec<(String, String)> = facts
        .iter()
        .find(|f| f["fact"] == "ec2Subnets")
        .and_then(|f| f["value"].as_array())
        .map(|subnets| {
            subnets
                .iter()
                .map(|s| {
                    (
                        s["availabilityZone"]
                            .as_str()
                            .unwrap_or("us-west-2a")
                            .to_string(),
                        s["availabilityZoneId"]
                            .as_str()
                            .unwrap_or("usw2-az1")
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let zone = |i: usize| {
        zones
            .get(i % zones.len().max(1))
            .cloned()
            .unwrap_or_else(|| ("us-west-2a".to_string(), "usw2-az1".to_string()))
    };

    let pools: Vec<Value> = (0..size.nodepools)
        .map(|i| {
            let mut p = pool.clone();
            p["metadata"]["name"] = json!(format!("pool-{i}"));
            p["spec"]["template"]["spec"]["nodeClassRef"]["name"] = json!(format!("class-{i}"));
            // Room for every generated NodeClaim: a limit reached is a finding, not scale.
            p["spec"]["limits"] = json!({"cpu": "1000000", "memory": "100000Ti"});
            // Drift one node at a time: the drifted candidates wait behind the replacement in
            // progress, as intended.
            p["spec"]["disruption"]["budgets"] = json!([{"nodes": "1"}]);
            p
        })
        .collect();
    let classes: Vec<Value> = (0..size.nodepools)
        .map(|i| {
            let mut c = class.clone();
            c["metadata"]["name"] = json!(format!("class-{i}"));
            c
        })
        .collect();
    let subnets: Vec<Value> = (0..size.subnets)
        .map(|i| {
            let mut s = subnet.clone();
            let (az, az_id) = zone(i);
            s["subnetId"] = json!(format!("subnet-{i:08x}"));
            s["availabilityZone"] = json!(az);
            s["availabilityZoneId"] = json!(az_id);
            s["cidrBlock"] = json!(format!("10.{}.{}.0/24", i / 256, i % 256));
            s["availableIpAddressCount"] = json!(251);
            s["tags"]["Name"] = json!(format!("scale-{i}"));
            s
        })
        .collect();
    let groups: Vec<Value> = (0..size.security_groups)
        .map(|i| {
            let mut g = group.clone();
            g["groupId"] = json!(format!("sg-{i:017x}"));
            g["groupName"] = json!(format!("scale-{i}"));
            g
        })
        .collect();

    let mut claims = Vec::with_capacity(size.nodeclaims);
    let mut nodes = Vec::with_capacity(size.nodeclaims);
    let mut listed = Vec::with_capacity(size.nodeclaims);
    let mut node_pods = Vec::new();
    for i in 0..size.nodeclaims {
        let pool = format!("pool-{}", i % size.nodepools.max(1));
        let name = format!("{pool}-{i:06}");
        let node = format!(
            "ip-10-{}-{}-{}.us-west-2.compute.internal",
            i / 65_536,
            (i / 256) % 256,
            i % 256
        );
        let (az, az_id) = zone(i);
        let since = "2026-11-22T08:00:00Z";
        // Karpenter 1.x's conditions on a settled claim under WhenEmptyOrUnderutilized.
        let mut conditions: Vec<Value> = [
            "Launched",
            "Registered",
            "Initialized",
            "Ready",
            "ConsistentStateFound",
        ]
        .iter()
            .map(|t| json!({"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": since}))
            .collect();
        // The first NodeClaim of each pool is being replaced now (deleted five minutes ago);
        // one in ten of the others drifted three hours ago and waits.
        let replacing = i < size.nodepools;
        let drifted = !replacing && i % DRIFTED_EVERY == 0;
        if drifted {
            conditions.push(json!({"type": "Drifted", "status": "True", "reason": "AMIDrift", "message": "", "lastTransitionTime": "2026-11-23T07:00:00Z"}));
            let owner = format!("api-{:03}", i / DRIFTED_EVERY % 50);
            node_pods.push(json!({
                "fact": {"nodePods": {"node": node}},
                "value": [{
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": format!("{owner}-6d5c4b3a2-{i:05x}"),
                        "namespace": "shop",
                        "uid": format!("00000000-0000-4000-a000-{i:012x}"),
                        "labels": {"app": owner},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{owner}-6d5c4b3a2"), "uid": "2", "controller": true}],
                    },
                    "spec": {"nodeName": node},
                    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
                }],
            }));
        }
        let deleted = replacing.then_some("2026-11-23T09:55:00Z");
        let class = format!("class-{}", i % size.nodepools.max(1));
        // The labels Karpenter 1.x writes on a claim: the pool's requirements and every
        // well-known label of the launched instance type (21 on an m5.2xlarge), and its
        // annotations; a grown cluster weighs what a real one does.
        let claim_labels = json!({
            "karpenter.sh/nodepool": pool,
            "karpenter.sh/capacity-type": "on-demand",
            "karpenter.k8s.aws/ec2nodeclass": class,
            "karpenter.k8s.aws/instance-category": "m",
            "karpenter.k8s.aws/instance-cpu": "8",
            "karpenter.k8s.aws/instance-cpu-manufacturer": "intel",
            "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz": "3100",
            "karpenter.k8s.aws/instance-ebs-bandwidth": "4750",
            "karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
            "karpenter.k8s.aws/instance-family": "m5",
            "karpenter.k8s.aws/instance-generation": "5",
            "karpenter.k8s.aws/instance-hypervisor": "nitro",
            "karpenter.k8s.aws/instance-memory": "32768",
            "karpenter.k8s.aws/instance-network-bandwidth": "2500",
            "karpenter.k8s.aws/instance-size": "2xlarge",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m5.2xlarge",
            "topology.k8s.aws/zone-id": az_id,
            "topology.kubernetes.io/region": "us-west-2",
            "topology.kubernetes.io/zone": az,
        });
        let mut claim_meta = json!({
            "name": name,
            "labels": claim_labels,
            "annotations": {
                "compatibility.karpenter.k8s.aws/cluster-name-tagged": "true",
                "karpenter.k8s.aws/ec2nodeclass-hash": "15616957348189460630",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
                "karpenter.k8s.aws/tagged": "true",
                "karpenter.sh/nodepool-hash": "6821555240594823858",
                "karpenter.sh/nodepool-hash-version": "v3",
            },
            "creationTimestamp": since,
            "finalizers": ["karpenter.sh/termination"],
            "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": pool, "uid": format!("00000000-0000-4000-b000-{:012x}", i % size.nodepools.max(1)), "blockOwnerDeletion": true}],
            "uid": format!("00000000-0000-4000-c000-{i:012x}"),
            "resourceVersion": format!("{}", 100_000 + i),
            "generation": 1,
        });
        if let Some(at) = deleted {
            claim_meta["deletionTimestamp"] = json!(at);
        }
        // The Node carries the claim's labels and the kubelet's and cloud provider's own.
        let mut node_labels = claim_labels.clone();
        if let (Some(n), Some(more)) = (
            node_labels.as_object_mut(),
            json!({
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": "m5.2xlarge",
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "us-west-2",
                "failure-domain.beta.kubernetes.io/zone": az,
                "k8s.io/cloud-provider-aws": "a94967527effcefb5f5829f529c0a1b9",
                "kubernetes.io/hostname": node,
                "karpenter.sh/initialized": "true",
                "karpenter.sh/registered": "true",
                "topology.ebs.csi.aws.com/zone": az,
            })
            .as_object(),
        ) {
            n.extend(more.clone());
        }
        let mut node_meta = json!({"name": node, "labels": node_labels});
        if let Some(at) = deleted {
            node_meta["deletionTimestamp"] = json!(at);
        }
        // The Nodes list as karpdoctor cuts it (src/backend/live/kube.rs): name, uid, labels,
        // creation and deletion, taints, capacity, allocatable and readiness.
        let mut listed_meta = node_meta.clone();
        listed_meta["uid"] = json!(format!("00000000-0000-4000-d000-{i:012x}"));
        listed_meta["creationTimestamp"] = json!(since);
        listed.push(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": listed_meta,
            "spec": {},
            "status": {
                "capacity": {"cpu": "8", "ephemeral-storage": "20959212Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "33554432Ki", "pods": "58"},
                // What the claim estimated (31Gi), so that KD6006 has nothing to say.
                "allocatable": {"cpu": "7910m", "ephemeral-storage": "18242267924", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "32505856Ki", "pods": "58"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }));
        claims.push(json!({
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": claim_meta,
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": format!("class-{}", i % size.nodepools.max(1))},
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            },
            "status": {
                "providerID": format!("aws:///{az}/i-{i:017x}"),
                "nodeName": node,
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
                "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "58"},
                "conditions": conditions,
            },
        }));
        // A Node read on its own only where a check reads it (a node being deleted, for
        // KD4102): a recording holds only the facts the run read, and a healthy claim's node is
        // read through the list.
        if !replacing {
            continue;
        }
        nodes.push(json!({
            "fact": {"node": {"name": node}},
            "value": {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": node_meta,
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            },
        }));
    }
    // The routine events of a busy cluster, spread over the last day.
    const REASONS: [(&str, &str); 5] = [
        (
            "Launched",
            "Status condition transitioned, Type: Launched, Status: Unknown -> True",
        ),
        (
            "Registered",
            "Status condition transitioned, Type: Registered, Status: Unknown -> True",
        ),
        (
            "Initialized",
            "Status condition transitioned, Type: Initialized, Status: Unknown -> True",
        ),
        (
            "DisruptionBlocked",
            "Cannot disrupt NodeClaim: state node is nominated for a pending pod",
        ),
        ("Unconsolidatable", "Can't replace with a cheaper node"),
    ];
    let events: Vec<Value> = (0..size.events)
        .map(|i| {
            let claim = i % size.nodeclaims.max(1);
            let pool = claim % size.nodepools.max(1);
            let (reason, message) = REASONS[i % REASONS.len()];
            let seconds = 86_400 - (i * 86_400 / size.events.max(1));
            let at = format!(
                "2026-11-23T{:02}:{:02}:{:02}Z",
                (seconds / 3600) % 24,
                (seconds / 60) % 60,
                seconds % 60
            );
            json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": format!("pool-{pool}-{claim:06}.{i:016x}"), "namespace": "default", "uid": format!("00000000-0000-4000-8000-{i:012x}")},
                "involvedObject": {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": format!("pool-{pool}-{claim:06}")},
                "reason": reason,
                "message": message,
                "type": "Normal",
                "count": 1,
                "firstTimestamp": at,
                "lastTimestamp": at,
                "source": {"component": "karpenter"},
            })
        })
        .collect();

    let pending: Vec<Value> = (0..size.pending_pods)
        .map(|i| {
            let owner = format!("web-{:03}", i / PODS_PER_OWNER);
            let hash = "7c9d5f8b6a";
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("{owner}-{hash}-{i:05x}"),
                    "namespace": "shop",
                    "uid": format!("00000000-0000-4000-9000-{i:012x}"),
                    "labels": {"app": owner, "pod-template-hash": hash},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{owner}-{hash}"), "uid": "1", "controller": true}],
                },
                "spec": {
                    "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                    "nodeSelector": {"kubernetes.io/arch": "amd64"},
                },
                "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "2026-11-23T09:50:00Z"}]},
            })
        })
        .collect();

    // The drifted nodes' workloads, each under a PodDisruptionBudget allowing one eviction.
    let pdbs: Vec<Value> = (0..50)
        .map(|i| {
            json!({
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": format!("api-{i:03}"), "namespace": "shop", "uid": format!("00000000-0000-4000-b000-{i:012x}")},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": format!("api-{i:03}")}}},
                "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3},
            })
        })
        .collect();
    let events_key = json!({"events": {"kind": "NodeClaim", "namespace": null}});
    let pod_events_key = json!({"events": {"kind": "Pod", "namespace": null}});
    for (key, value) in [
        (json!("nodePools"), Value::Array(pools)),
        (json!("ec2NodeClasses"), Value::Array(classes)),
        (json!("ec2Subnets"), Value::Array(subnets)),
        (json!("ec2SecurityGroups"), Value::Array(groups)),
        (json!("nodeClaims"), Value::Array(claims)),
        (events_key, Value::Array(events)),
        (json!("pendingPods"), Value::Array(pending)),
        (json!("podDisruptionBudgets"), Value::Array(pdbs)),
        (pod_events_key, Value::Array(Vec::new())),
        (
            json!({"eventsByReason": {"kind": "Pod", "reason": "Nominated"}}),
            Value::Array(Vec::new()),
        ),
    ] {
        facts.retain(|f| f["fact"] != key);
        facts.push(json!({"fact": key, "value": value}));
    }
    facts.extend(nodes);
    facts.extend(node_pods);
    // The Nodes list keeps the base's own nodes (a managed node group's) beside the grown ones.
    let list_key = json!({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}});
    match facts.iter_mut().find(|f| f["fact"] == list_key) {
        Some(f) => match f["value"].as_array_mut() {
            Some(v) => v.extend(listed),
            None => f["value"] = Value::Array(listed),
        },
        None => facts.push(json!({"fact": list_key, "value": listed})),
    }
    if let Some(d) = bundle.get_mut("description") {
        *d = json!(format!(
            "fixtures/healthy grown {factor}×: {} NodeClaims and nodes, {} events, {} subnets, {} security groups, {} NodePools and EC2NodeClasses, {} pending pods of {} Deployments",
            size.nodeclaims,
            size.events,
            size.subnets,
            size.security_groups,
            size.nodepools,
            size.pending_pods,
            size.pending_pods / PODS_PER_OWNER
        ));
    }
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn base() -> Value {
        json!({
            "description": "base",
            "facts": [
                {"fact": "nodePools", "value": [{"metadata": {"name": "default"}, "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}}}]},
                {"fact": "ec2NodeClasses", "value": [{"metadata": {"name": "default"}}]},
                {"fact": "ec2Subnets", "value": [{"subnetId": "subnet-a", "availabilityZone": "us-west-2a", "availabilityZoneId": "usw2-az1", "tags": {}}]},
                {"fact": "ec2SecurityGroups", "value": [{"groupId": "sg-a", "tags": {}}]},
                {"fact": "nodeClaims", "value": []},
                {"fact": "kubeVersion", "value": {"major": "1", "minor": "33"}},
            ]
        })
    }

    fn count(bundle: &Value, key: &Value) -> usize {
        bundle["facts"]
            .as_array()
            .and_then(|f| f.iter().find(|f| &f["fact"] == key))
            .and_then(|f| f["value"].as_array())
            .map_or(0, Vec::len)
    }

    #[test]
    fn grows_each_dimension_linearly_and_keeps_other_facts() -> Result<(), String> {
        for factor in [1, 4] {
            let b = grow(&base(), factor)?;
            let size = Size::of(factor);
            assert_eq!(count(&b, &json!("nodeClaims")), size.nodeclaims);
            assert_eq!(count(&b, &json!("nodePools")), size.nodepools);
            assert_eq!(count(&b, &json!("ec2NodeClasses")), size.nodepools);
            assert_eq!(count(&b, &json!("ec2Subnets")), size.subnets);
            assert_eq!(count(&b, &json!("ec2SecurityGroups")), size.security_groups);
            let events = json!({"events": {"kind": "NodeClaim", "namespace": null}});
            assert_eq!(count(&b, &events), size.events);
            assert_eq!(count(&b, &json!("pendingPods")), size.pending_pods);
            let facts = b["facts"].as_array().map_or(0, Vec::len);
            // Ten grown facts (five of them new: the base has no Nodes list), one kept, the
            // (empty) Nominated events, the Node of each claim being replaced (one per pool),
            // the pods of each drifted node.
            let drifted = (size.nodepools..size.nodeclaims)
                .filter(|i| i % DRIFTED_EVERY == 0)
                .count();
            assert_eq!(facts, 12 + size.nodepools + drifted);
            assert_eq!(count(&b, &json!("podDisruptionBudgets")), 50);
            let list = json!({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}});
            assert_eq!(count(&b, &list), size.nodeclaims);
            // Each NodePool points at a class that exists, its own.
            let values = |key: &str| {
                b["facts"]
                    .as_array()
                    .and_then(|f| f.iter().find(|f| f["fact"] == key))
                    .and_then(|f| f["value"].as_array().cloned())
                    .unwrap_or_default()
            };
            let classes: BTreeSet<String> = values("ec2NodeClasses")
                .iter()
                .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string))
                .collect();
            let referenced: BTreeSet<String> = values("nodePools")
                .iter()
                .filter_map(|p| {
                    p["spec"]["template"]["spec"]["nodeClassRef"]["name"]
                        .as_str()
                        .map(str::to_string)
                })
                .collect();
            assert_eq!(classes.len(), size.nodepools);
            assert_eq!(referenced, classes);
            // Ids stay unique.
            let subnets: BTreeSet<String> = values("ec2Subnets")
                .iter()
                .filter_map(|s| s["subnetId"].as_str().map(str::to_string))
                .collect();
            assert_eq!(subnets.len(), size.subnets);
        }
        Ok(())
    }

    #[test]
    fn a_base_without_nodepools_is_an_error_not_a_panic() {
        assert!(grow(&json!({"facts": []}), 1).is_err());
        assert!(grow(&json!({}), 1).is_err());
    }
}
