//! KD4201: a NodePool nothing serves on a cluster where EKS Auto Mode runs compute. Auto Mode
//! serves only pools of its `eks.amazonaws.com` NodeClass, a self-managed Karpenter only those
//! of its EC2NodeClass; a pool of neither, or one Auto Mode rejects or cannot launch for, stays
//! empty, often with every condition `Ready` (docs/auto-mode.md §7.4).

use crate::automode::pools::{
    AUTO_MODE_RULE, Cluster, SELF_MANAGED_DOMAIN, Unserved, builtin_edits, narrow_auto_mode,
    unserved,
};
use crate::check::prelude::*;
use crate::checks::common::cluster::cluster;
use crate::model::{AUTO_MODE_GROUP, NodePool};
use crate::requirements::describe;

declare_check! {
    pub static AUTOMODE_NODEPOOL_UNSERVED = {
        code: "KD4201",
        slug: "automode-nodepool-unserved",
        title: "every NodePool is served: Auto Mode's by Auto Mode, EC2NodeClass pools by a self-managed Karpenter",
        category: Nodepool,
        severity: Error,
        needs: [NodePools, AutoNodeClasses, EksCluster, ControllerDeployments, Ec2InstanceTypes, Ec2InstanceTypeOfferings],
        run: nodepool_unserved,
    }
}

async fn nodepool_unserved(cx: &CheckCx) -> CheckResult {
    let pools = cx.nodepools().await?;
    let pools: Vec<&NodePool> = pools.iter().filter(|p| !p.is_v1beta1()).collect();
    let auto_pools = pools.iter().any(|p| p.is_auto_mode());
    let ec2_pools = pools.iter().any(|p| p.class_group() == Some(SELF_MANAGED_DOMAIN));
    if !auto_pools && !ec2_pools {
        return Ok(Vec::new());
    }
    // A pool of the EC2NodeClass is unserved only without a controller beside Auto Mode.
    let controller = if ec2_pools {
        cx.controller().await?.is_some()
    } else {
        true
    };
    if !auto_pools && controller {
        return Ok(Vec::new());
    }
    // Every verdict here rests on whether Auto Mode's compute is on: DescribeCluster's to say.
    let described = cluster(cx).await?;
    let compute = described.auto_mode();
    let classes = if auto_pools {
        cx.auto_nodeclasses().await?
    } else {
        Default::default()
    };
    let no_pools = Vec::new();
    let facts = Cluster {
        compute,
        builtin_pools: described
            .compute_config
            .as_ref()
            .map_or(&no_pools, |c| &c.node_pools),
        controller,
        nodeclasses: &classes,
    };
    let mut findings = Vec::new();
    for pool in &pools {
        match unserved(pool, &facts) {
            Some(why) => findings.push(explain(pool, why, &described.name)),
            None if pool.is_auto_mode() => findings.extend(launchable(cx, pool).await?),
            None => {}
        }
        let edits = builtin_edits(pool);
        if !edits.is_empty() {
            findings.push(edited_builtin(pool, edits));
        }
    }
    Ok(findings)
}

/// Sub-rule f: an edit to one of EKS's built-in pools works until EKS overwrites it, so it is a
/// warning naming what will be lost, with a pool of one's own as the way to keep it.
fn edited_builtin(pool: &NodePool, edits: Vec<String>) -> Finding {
    let name = pool.name();
    Finding::new(
        pool.object(),
        format!(
            "is EKS Auto Mode's built-in {name} pool, edited ({}): EKS overwrites edits to its built-in pools, so the change will be lost without notice",
            edits.join("; ")
        ),
    )
    .severity(Severity::Warning)
    .evidence("edits", edits)
    .hint("built-in pools can only be turned on or off: put the change in a NodePool of your own on the default NodeClass (or one of your own), and leave the built-in pool as EKS makes it")
    .fix(format!(
        "kubectl get nodepool {name} -o yaml > my-{name}.yaml   # rename it, drop the app.kubernetes.io/managed-by label, keep your change, then: kubectl apply -f my-{name}.yaml"
    ))
}

/// The pool's own condition that says the same, when it has one.
fn corroborate(f: Finding, pool: &NodePool, types: &[&str]) -> Finding {
    match types
        .iter()
        .filter_map(|t| pool.status.condition(t))
        .find(|c| c.status == "False")
    {
        Some(c) => f.evidence("condition", c.describe()),
        None => f,
    }
}

/// NodePool's `nodeClassRef.group` and `kind` are immutable (kubernetes-sigs/karpenter#1818):
/// moving a pool to the other controller means recreating it.
fn recreate(pool: &NodePool, group: &str, kind: &str, class: &str) -> [String; 2] {
    let name = pool.name();
    [
        format!("kubectl get nodepool {name} -o yaml > nodepool-{name}.yaml"),
        format!(
            "# set spec.template.spec.nodeClassRef to {{group: {group}, kind: {kind}, name: {class}}}, then: kubectl replace --force -f nodepool-{name}.yaml"
        ),
    ]
}

fn explain(pool: &NodePool, why: Unserved, cluster: &str) -> Finding {
    let class = pool.class_name().unwrap_or("");
    match why {
        Unserved::ComputeOff => {
            Finding::new(
                pool.object(),
                format!(
                    "names EKS Auto Mode's NodeClass \"{class}\", but Auto Mode's compute is off on this cluster (computeConfig.enabled is false): nothing serves the pool, and pods only it admits stay Pending"
                ),
            )
            .evidence("nodeClassRef", format!("{AUTO_MODE_GROUP}/NodeClass/{class}"))
            .evidence("computeConfig.enabled", false)
            .hint("turn on Auto Mode's compute, block storage and load balancing together (EKS takes them in one request), or move the pool to an EC2NodeClass of a self-managed Karpenter")
            .fix(format!(
                "aws eks update-cluster-config --name {cluster} --compute-config enabled=true --kubernetes-network-config '{{\"elasticLoadBalancing\":{{\"enabled\":true}}}}' --storage-config '{{\"blockStorage\":{{\"enabled\":true}}}}'"
            ))
        }
        Unserved::NoController => {
            let [get, replace] = recreate(pool, AUTO_MODE_GROUP, "NodeClass", "default");
            corroborate(
                Finding::new(
                    pool.object(),
                    format!(
                        "names the EC2NodeClass \"{class}\" ({SELF_MANAGED_DOMAIN}), but no self-managed Karpenter runs beside EKS Auto Mode: Auto Mode serves only pools of its own NodeClass ({AUTO_MODE_GROUP}), so this pool gets no status and launches nothing"
                    ),
                ),
                pool,
                &["Ready"],
            )
            .evidence("nodeClassRef", format!("{SELF_MANAGED_DOMAIN}/EC2NodeClass/{class}"))
            .evidence("controller", "none found")
            .hint("point the pool at an Auto Mode NodeClass (group and kind cannot be changed in place: recreate the pool), or install Karpenter 1.1 or later beside Auto Mode to serve it")
            .fix(get)
            .fix(replace)
        }
        Unserved::RestrictedKeys(keys) => {
            let renamed: Vec<String> = keys
                .iter()
                .map(|k| k.replacen(SELF_MANAGED_DOMAIN, AUTO_MODE_GROUP, 1))
                .collect();
            corroborate(
                Finding::new(
                    pool.object(),
                    format!(
                        "is an Auto Mode pool with labels of Karpenter's own AWS domain ({}): Auto Mode rejects that domain as restricted (NodePoolValidationFailed) and launches nothing for the pool",
                        keys.join(", ")
                    ),
                ),
                pool,
                &["ValidationSucceeded", "Ready"],
            )
            .evidence("restrictedKeys", keys.clone())
            .evidence("autoModeKeys", renamed.clone())
            .hint(format!(
                "Auto Mode names these labels {}: rename the requirement keys and template labels",
                renamed.join(", ")
            ))
            .fix(format!("kubectl edit nodepool {}", pool.name()))
        }
        Unserved::NodeClassMissing { name, builtin_off } => {
            let why = if builtin_off {
                " EKS creates the default NodeClass only while a built-in NodePool is enabled, and none is (computeConfig.nodePools is empty)"
            } else {
                ""
            };
            let mut f = corroborate(
                Finding::new(
                    pool.object(),
                    format!(
                        "names the Auto Mode NodeClass \"{name}\", which does not exist: the pool launches nothing.{why}"
                    ),
                ),
                pool,
                &["NodeClassReady", "Ready"],
            )
            .evidence("nodeClassRef", format!("{AUTO_MODE_GROUP}/NodeClass/{name}"))
            .fix("kubectl get nodeclasses.eks.amazonaws.com");
            f = if builtin_off {
                f.evidence("computeConfig.nodePools", Vec::<String>::new())
                    .hint("create a NodeClass of your own (its node role needs an access entry of type EC2 with AmazonEKSAutoNodePolicy) and point the pool at it, or enable a built-in pool with a node role, which makes EKS create the default NodeClass")
                    .fix(format!(
                        "aws eks update-cluster-config --name {cluster} --compute-config '{{\"enabled\":true,\"nodePools\":[\"general-purpose\",\"system\"],\"nodeRoleArn\":\"<node role ARN>\"}}' --kubernetes-network-config '{{\"elasticLoadBalancing\":{{\"enabled\":true}}}}' --storage-config '{{\"blockStorage\":{{\"enabled\":true}}}}'"
                    ))
            } else {
                f.hint("create the NodeClass, or point the pool at one that exists")
            };
            f
        }
    }
}

/// KD4201's instance rule: no type Auto Mode launches meets the requirements
/// (aws/containers-roadmap#2516: pool and NodeClass both Ready, nothing launched).
async fn launchable(cx: &CheckCx, pool: &NodePool) -> Result<Option<Finding>, FactError> {
    let types = cx.instance_types().await?;
    let offerings = cx.instance_type_offerings().await?;
    let n = narrow_auto_mode(pool, &types, &offerings);
    let Some(culprit) = n.emptied_by() else {
        return Ok(None);
    };
    let by_rule = culprit.what == AUTO_MODE_RULE;
    let message = if by_rule {
        "is an Auto Mode pool whose requirements allow only instance types Auto Mode never launches (1 vCPU, or a nano, micro or small size): it launches nothing, though the pool and its NodeClass may both report Ready".to_string()
    } else {
        format!(
            "is an Auto Mode pool whose requirements no instance type meets: {} leaves none",
            culprit.what
        )
    };
    let requirements: Vec<String> = pool
        .spec
        .template
        .spec
        .requirements
        .iter()
        .map(describe)
        .collect();
    Ok(Some(
        Finding::new(pool.object(), message)
            .evidence("requirements", requirements)
            .evidence(
                "narrowing",
                n.steps
                    .iter()
                    .map(|s| format!("{}: {} left", s.what, s.left))
                    .collect::<Vec<_>>(),
            )
            .hint(if by_rule {
                "Auto Mode launches only types of more than 1 vCPU and none of the nano, micro or small sizes: allow medium or larger types (e.g. eks.amazonaws.com/instance-cpu Gt \"1\" and no size limit below medium)"
            } else {
                "widen the requirement that leaves nothing"
            })
            .fix(format!("kubectl edit nodepool {}", pool.name())),
    ))
}
