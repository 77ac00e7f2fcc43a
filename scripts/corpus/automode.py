# EKS Auto Mode (issue 32; docs/automode.md). Auto Mode's compute turned on for a cluster whose
# self-managed Karpenter keeps running, the first step of the migration AWS describes
# ("Migrate from Karpenter to EKS Auto Mode": Karpenter 1.1 or later, both running while the
# workloads move), before any built-in pool is enabled.
_am = bundle(
    "Healthy: EKS Auto Mode's compute, block storage and load balancing were enabled on a cluster that runs Karpenter 1.8.1 (the start of AWS's migration from Karpenter to Auto Mode), with no built-in NodePools yet; every NodePool still uses Karpenter's EC2NodeClass. The report's header names Auto Mode beside the self-managed controller.")
for _e in _am["facts"]:
    if isinstance(_e["fact"], dict) and "eksCluster" in _e["fact"]:
        _e["value"].update({"computeConfig": {"enabled": True, "nodePools": [], "nodeRoleArn": None},
                            "blockStorage": True, "elasticLoadBalancing": True})
write("healthy-auto-mode-beside-karpenter", _am, [])

# Healthy: a cluster on EKS Auto Mode alone, as AWS's "Create an Amazon EKS Auto Mode cluster"
# leaves it: compute, block storage and load balancing on, both built-in NodePools
# (general-purpose, system; their specs as EKS writes them, docs/automode.md §2.3) on the
# `default` NodeClass, access entries only (authenticationMode API). No Karpenter Deployment and
# no EC2NodeClass CRD: EKS runs Karpenter itself and installs only the karpenter.sh CRDs. Every
# check of a self-managed install skips; the NodePool, disruption and NodeClaim checks judge
# Auto Mode's own pools and claims and stay quiet. (Before issue 32 this cluster failed KD1001
# and KD1002.)
def _am_pool(name, arch, taints=()):
    p = nodepool(name, ref={"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}, arch=arch)
    p["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "eks"}
    spec = p["spec"]["template"]["spec"]
    spec["requirements"] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "eks.amazonaws.com/instance-category", "operator": "In", "values": ["c", "m", "r"]},
        {"key": "eks.amazonaws.com/instance-generation", "operator": "Gt", "values": ["4"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": list(arch)},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    spec["expireAfter"] = "336h"
    spec["terminationGracePeriod"] = "24h0m0s"
    if taints:
        spec["taints"] = list(taints)
    p["spec"]["limits"] = {}
    p["spec"]["disruption"] = {"budgets": [{"nodes": "10%"}], "consolidateAfter": "30s",
                               "consolidationPolicy": "WhenEmptyOrUnderutilized"}
    return p


_am_pools = [_am_pool("general-purpose", ("amd64",)),
             _am_pool("system", ("amd64", "arm64"), [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}])]
_am_node = "i-0a1b2c3d4e5f60811"  # Auto Mode names nodes by instance id
_am_claim = claim("system-x7k2p", pool="system", since="2026-11-23T09:30:00Z", node_name=_am_node)
_am_claim["spec"]["nodeClassRef"] = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
_am_claim["metadata"]["labels"].pop("karpenter.k8s.aws/ec2nodeclass")
_am_claim["metadata"]["labels"].update({"eks.amazonaws.com/nodeclass": "default", "node.kubernetes.io/instance-type": "c6g.large"})
_am_claim["status"]["providerID"] = "aws:///us-west-2a/" + _am_node
_am_nd = node(_am_node)
_am_nd["metadata"]["labels"] = {"kubernetes.io/hostname": _am_node, "kubernetes.io/arch": "arm64",
                                "topology.kubernetes.io/zone": "us-west-2a", "karpenter.sh/nodepool": "system",
                                "eks.amazonaws.com/nodeclass": "default", "eks.amazonaws.com/compute-type": "auto",
                                "node.kubernetes.io/instance-type": "c6g.large"}
_am_nd["metadata"]["creationTimestamp"] = "2026-11-23T09:31:00Z"
_am_nd["spec"] = {"providerID": "aws:///us-west-2a/" + _am_node,
                  "taints": [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}]}
_am = bundle(
    "Healthy: a cluster on EKS Auto Mode alone (compute, block storage and load balancing on; the built-in general-purpose and system NodePools on the default NodeClass; access entries only). There is no Karpenter Deployment and no EC2NodeClass CRD, because EKS runs Karpenter itself: every check of a self-managed install skips as not applicable, and the NodePool, disruption and NodeClaim checks stay quiet.",
    dep=[], nps=_am_pools,
    ncs={"error": {"kind": "notInstalled", "what": "the EC2NodeClass API (karpenter.k8s.aws/v1)"}},
    crds={"ec2nodeclasses.karpenter.k8s.aws": None, "nodeoverlays.karpenter.sh": None},
    overrides=[fact("nodeClaims", [_am_claim]), fact({"node": {"name": _am_node}}, _am_nd)])
for _e in _am["facts"]:
    if isinstance(_e["fact"], dict) and "eksCluster" in _e["fact"]:
        _e["value"].update({"authenticationMode": "API",
                            "computeConfig": {"enabled": True, "nodePools": ["general-purpose", "system"],
                                              "nodeRoleArn": "arn:aws:iam::111122223333:role/AmazonEKSAutoNodeRole"},
                            "blockStorage": True, "elasticLoadBalancing": True})
# docs/automode.md §9: the checks of a self-managed install, not applicable here.
_am_skipped = (["KD%d" % c for c in range(1001, 1010)] + ["KD%d" % c for c in range(2001, 2009)]
               + ["KD%d" % c for c in range(2101, 2105)] + ["KD%d" % c for c in range(3001, 3011)]
               + ["KD4001", "KD4003", "KD4004"] + ["KD%d" % c for c in range(5001, 5009)]
               + ["KD%d" % c for c in range(6004, 6009)] + ["KD7001", "KD7002", "KD7003"]
               + ["KD8001", "KD8002", "KD8003", "KD9001"])
write("healthy-auto-mode-only", _am, [], skipped=_am_skipped)

# Healthy, mixed: the next step of the migration. Auto Mode's built-in `system` pool is on
# beside the self-managed `default` pool: KD4001 judges only the pool of Karpenter's
# EC2NodeClass, and the `eks.amazonaws.com` pool is Auto Mode's.
_am = bundle(
    "Healthy: Karpenter 1.8.1 runs the default NodePool on its EC2NodeClass, and EKS Auto Mode runs its built-in system NodePool on the default NodeClass beside it (AWS's migration from Karpenter to Auto Mode, once the built-in pools are on). KD4001 leaves the Auto Mode pool alone: its NodeClass is EKS's, not an EC2NodeClass.",
    nps=[nodepool(), _am_pool("system", ("amd64", "arm64"), [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}])])
for _e in _am["facts"]:
    if isinstance(_e["fact"], dict) and "eksCluster" in _e["fact"]:
        _e["value"].update({"computeConfig": {"enabled": True, "nodePools": ["system"],
                                              "nodeRoleArn": "arn:aws:iam::111122223333:role/AmazonEKSAutoNodeRole"},
                            "blockStorage": True, "elasticLoadBalancing": True})
write("healthy-auto-mode-system-pool-beside-karpenter", _am, [])
