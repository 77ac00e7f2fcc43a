# EKS Auto Mode (issue 32; docs/auto-mode.md). Auto Mode's compute turned on for a cluster whose
# self-managed Karpenter keeps running, the first step of the migration AWS describes
# ("Migrate from Karpenter to EKS Auto Mode": Karpenter 1.1 or later, both running while the
# workloads move), before any built-in pool is enabled; Karpenter runs without its interruption
# queue, as the migration's reference setup does (docs/auto-mode.md §4.4).
_am_first = bundle(
    "Healthy: EKS Auto Mode's compute, block storage and load balancing were enabled on a cluster that runs Karpenter 1.8.1 (the start of AWS's migration from Karpenter to Auto Mode), with no built-in NodePools yet; every NodePool still uses Karpenter's EC2NodeClass. The report's header names Auto Mode beside the self-managed controller.")

# Healthy: a cluster on EKS Auto Mode alone, as AWS's "Create an Amazon EKS Auto Mode cluster"
# leaves it: compute, block storage and load balancing on, both built-in NodePools
# (general-purpose, system; their specs as EKS writes them, docs/auto-mode.md §2.3) on the
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


def _am_class(name="default", role="AmazonEKSAutoNodeRole", conditions=None, eks=True):
    """An `eks.amazonaws.com/v1` NodeClass; `default` as EKS writes it (docs/auto-mode.md §2.2)."""
    meta = {"name": name, "uid": "5c0d9e1f-2a3b-4c4d-8e5f-6a7b8c9d0e1f", "creationTimestamp": "2026-11-20T07:55:00Z",
            "finalizers": ["eks.amazonaws.com/termination"]}
    if eks:
        meta["labels"] = {"app.kubernetes.io/managed-by": "eks"}
        meta["annotations"] = {"eks.amazonaws.com/nodeclass-hash": "6419850238744813017",
                               "eks.amazonaws.com/nodeclass-hash-version": "v2"}
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
             "lastTransitionTime": "2026-11-20T07:56:10Z", "observedGeneration": 1}
    return {"apiVersion": "eks.amazonaws.com/v1", "kind": "NodeClass", "metadata": meta,
            "spec": {"ephemeralStorage": {"iops": 3000, "size": "80Gi", "throughput": 125},
                     "networkPolicy": "DefaultAllow", "networkPolicyEventLogs": "Disabled", "role": role,
                     "securityGroupSelectorTerms": [{"id": CLUSTER_SG}], "snatPolicy": "Random",
                     "subnetSelectorTerms": [{"id": "subnet-0a1b2c3d"}, {"id": "subnet-0e4f5a6b"}]},
            "status": {"conditions": conditions if conditions is not None else [ready]}}


_AM_NODE_ROLE = "arn:aws:iam::111122223333:role/AmazonEKSAutoNodeRole"
_AM_CLUSTER_ROLE = "arn:aws:iam::111122223333:role/eks-cluster"
_AM_NODE_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAutoNodePolicy"
# What EKS associates with the cluster role's entry when Auto Mode is enabled (the access policy
# reference: "Amazon EKS automatically creates an access entry with this access policy for the
# cluster IAM role when Auto Mode is enabled").
_AM_CLUSTER_POLICIES = ["AmazonEKSBlockStorageClusterPolicy", "AmazonEKSBlockStoragePolicy", "AmazonEKSComputeClusterPolicy",
                        "AmazonEKSComputePolicy", "AmazonEKSLoadBalancingClusterPolicy", "AmazonEKSLoadBalancingPolicy",
                        "AmazonEKSNetworkingClusterPolicy", "AmazonEKSNetworkingPolicy"]
_NODE_MIN_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": ["sts:AssumeRole", "sts:TagSession"]}]})


def _set_fact(b, key, value):
    b["facts"] = [e for e in b["facts"] if e["fact"] != key] + [{"fact": key, "value": value}]


def _entries(b):
    return next(e["value"] for e in b["facts"] if isinstance(e["fact"], dict) and "eksAccessEntries" in e["fact"])


def _node_role(b, arn, policies=(_AM_NODE_POLICY,), kind="EC2"):
    """An Auto Mode node role: the IAM role, its access entry and that entry's policies."""
    name = arn.rsplit("/", 1)[1]
    _set_fact(b, {"iamRole": {"name": name}}, {"name": name, "arn": arn, "path": "/", "trustPolicy": _NODE_MIN_TRUST, "permissionsBoundaryArn": None})
    if kind is not None:
        _entries(b).append(access_entry(arn, kind))
    if kind == "EC2":
        _set_fact(b, {"eksAccessPolicies": {"cluster": "demo", "principal": arn}},
                  [{"policyArn": p, "scope": "cluster", "namespaces": []} for p in policies])


def _am_cluster(b, pools=("general-purpose", "system"), role=_AM_NODE_ROLE, mode="API"):
    """Auto Mode's compute, block storage and load balancing on, as DescribeCluster gives them,
    with the access entries EKS makes then: the node role's (with built-in pools) and the
    cluster role's."""
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"].update({"authenticationMode": mode,
                               "computeConfig": {"enabled": True, "nodePools": list(pools), "nodeRoleArn": role},
                               "blockStorage": True, "elasticLoadBalancing": True})
    _entries(b).append(access_entry(_AM_CLUSTER_ROLE, "STANDARD"))
    _cluster_role(b)
    if role:
        _node_role(b, role)


# The cluster role as AWS's "Amazon EKS Auto Mode cluster IAM role" page makes it.
_CLUSTER_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": ["sts:AssumeRole", "sts:TagSession"]}]})
_CLUSTER_POLICIES = ["AmazonEKSClusterPolicy", "AmazonEKSComputePolicy", "AmazonEKSBlockStoragePolicy", "AmazonEKSLoadBalancingPolicy", "AmazonEKSNetworkingPolicy"]


def _cluster_role(b, trust=_CLUSTER_TRUST, policies=_CLUSTER_POLICIES, inline=()):
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"]["roleArn"] = _AM_CLUSTER_ROLE
    _set_fact(b, {"iamRole": {"name": "eks-cluster"}}, {"name": "eks-cluster", "arn": _AM_CLUSTER_ROLE, "path": "/", "trustPolicy": trust, "permissionsBoundaryArn": None})
    _set_fact(b, {"iamAttachedRolePolicies": {"role": "eks-cluster"}}, [{"policyName": p, "policyArn": "arn:aws:iam::aws:policy/" + p} for p in policies])
    _set_fact(b, {"iamRolePolicyNames": {"role": "eks-cluster"}}, [n for n, _ in inline])
    if inline:
        b["emulator"] = default_emulator(b)
        b["emulator"]["rolePolicies"] += [{"role": "eks-cluster", "name": n, "document": d} for n, d in inline]


def _no_queue(b):
    """Karpenter without its interruption queue, as AWS's migration has it run beside Auto Mode
    (docs/auto-mode.md §4.4: Auto Mode handles its own instances' interruptions)."""
    set_env(b, "INTERRUPTION_QUEUE", None)
    b["facts"] = [e for e in b["facts"] if not (isinstance(e["fact"], dict) and ("sqsQueue" in e["fact"] or "eventRules" in e["fact"])) and e["fact"] != "sqsQueues"]


_no_queue(_am_first)
_am_cluster(_am_first, pools=(), role=None, mode="API_AND_CONFIG_MAP")
write("healthy-auto-mode-beside-karpenter", _am_first, [])

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
    overrides=[fact("nodeClaims", [_am_claim]), fact({"node": {"name": _am_node}}, _am_nd),
               fact("autoNodeClasses", [_am_class()])])
_am_cluster(_am)
# docs/auto-mode.md §9: the checks of a self-managed install, not applicable here.
_am_skipped = (["KD%d" % c for c in range(1001, 1010)] + ["KD%d" % c for c in range(2001, 2009)]
               + ["KD%d" % c for c in range(2101, 2105)] + ["KD%d" % c for c in range(3001, 3011)]
               + ["KD4001", "KD4003", "KD4004"] + ["KD%d" % c for c in range(5001, 5009)]
               + ["KD%d" % c for c in range(6004, 6009)] + ["KD7001", "KD7002", "KD7003"]
               + ["KD9001"])
write("healthy-auto-mode-only", _am, [], skipped=_am_skipped)

# Healthy, mixed: the next step of the migration. Auto Mode's built-in `system` pool is on
# beside the self-managed `default` pool: KD4001 judges only the pool of Karpenter's
# EC2NodeClass, and the `eks.amazonaws.com` pool is Auto Mode's.
_am = bundle(
    "Healthy: Karpenter 1.8.1 runs the default NodePool on its EC2NodeClass, and EKS Auto Mode runs its built-in system NodePool on the default NodeClass beside it (AWS's migration from Karpenter to Auto Mode, once the built-in pools are on). KD4001 leaves the Auto Mode pool alone: its NodeClass is EKS's, not an EC2NodeClass.",
    nps=[nodepool(), _am_pool("system", ("amd64", "arm64"), [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}])],
    overrides=[fact("autoNodeClasses", [_am_class()])])
_no_queue(_am)
_am_cluster(_am, pools=["system"], mode="API_AND_CONFIG_MAP")
write("healthy-auto-mode-system-pool-beside-karpenter", _am, [])


# --- KD4201: NodePools nothing serves (docs/auto-mode.md §7.4) ---------------------------------

def _am_alone(desc, pools, classes, builtin=("general-purpose", "system"), role="arn:aws:iam::111122223333:role/AmazonEKSAutoNodeRole", extra=()):
    """A cluster on Auto Mode alone: no Karpenter Deployment, no EC2NodeClass CRD."""
    b = bundle(desc, dep=[], nps=pools,
               ncs={"error": {"kind": "notInstalled", "what": "the EC2NodeClass API (karpenter.k8s.aws/v1)"}},
               crds={"ec2nodeclasses.karpenter.k8s.aws": None, "nodeoverlays.karpenter.sh": None},
               overrides=[fact("autoNodeClasses", classes)] + list(extra))
    _am_cluster(b, pools=builtin, role=role)
    return b


def _pool_status(p, *conditions):
    p["status"] = {"conditions": [dict(c, lastTransitionTime="2026-11-23T09:20:00Z", observedGeneration=1) for c in conditions]}
    return p


# The 3P troubleshooting page's first NodePool case (docs/auto-mode.md Appendix A13): on Auto Mode
# alone, a NodePool copied from a self-managed install keeps `group: karpenter.k8s.aws, kind:
# EC2NodeClass`. Auto Mode ignores it, so `kubectl get nodepools` shows it with empty READY and
# NODES columns: no status at all, and nothing launches.
_p = nodepool("apps")
_p.pop("status", None)
write("automode-ec2nodeclass-pool-without-karpenter", _am_alone(
    "On EKS Auto Mode alone (no Karpenter Deployment), the NodePool apps still names Karpenter's EC2NodeClass (group karpenter.k8s.aws), copied from a self-managed install. Auto Mode serves only pools of its own NodeClass, so apps has no status and launches nothing; the built-in pools are fine.",
    _am_pools + [_p], [_am_class()]), ["KD4201"], roots=["KD4201"], skipped=_am_skipped)

# terraform-aws-modules/terraform-aws-eks#3711 and #3578: `compute_config = {enabled = true}`
# with no built-in pools, so DescribeCluster has no nodeRoleArn and EKS never creates the
# `default` NodeClass; a NodePool applied from the docs names `default` and stays NotReady with
# NodeClassReady=False (NodeClassNotFound). KD4005 reports the condition, linked to KD4201.
_p = _pool_status(_am_pool("apps", ("amd64",)),
                  {"type": "NodeClassReady", "status": "False", "reason": "NodeClassNotFound", "message": "NodeClass not found on cluster"},
                  {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False"})
_p["metadata"].pop("labels", None)
write("automode-default-nodeclass-missing", _am_alone(
    "EKS Auto Mode was enabled with no built-in NodePools (Terraform's compute_config = {enabled = true}, terraform-aws-eks#3711), so EKS never created the default NodeClass; the NodePool apps names it and is NotReady with NodeClassNotFound.",
    [_p], [], builtin=(), role=None), ["KD4005", "KD4201"], roots=["KD4201"], skipped=_am_skipped)

# aws/containers-roadmap#2516: a NodePool limited to t3.small on Auto Mode. Pool and NodeClass
# both Ready, yet nothing launches: Auto Mode launches no 1-vCPU type and none of the nano, micro
# or small sizes. The region's types include t3.small and t3.micro (2 vCPUs each).
_small = [{"instanceType": n, "architectures": ["x86_64"], "vcpus": 2, "memoryMib": m, "gpus": 0,
           "usageClasses": ["on-demand", "spot"], "hypervisor": "nitro", "bareMetal": False, "maxEnis": 3, "ipv4PerEni": 4}
          for n, m in (("t3.micro", 1024), ("t3.small", 2048))]
_types = instance_types() + _small
_p = _pool_status(_am_pool("tiny", ("amd64",)), {"type": "Ready", "status": "True", "reason": "Ready", "message": ""})
_p["metadata"].pop("labels", None)
_p["spec"]["template"]["spec"]["requirements"] = [
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["t3.small"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
write("automode-pool-only-small-types", _am_alone(
    "An EKS Auto Mode NodePool tiny allows only t3.small (aws/containers-roadmap#2516). The pool and the default NodeClass both report Ready, yet nothing is ever launched: Auto Mode launches no instance type of 1 vCPU or of the nano, micro or small sizes.",
    _am_pools + [_p], [_am_class()],
    extra=[fact("ec2InstanceTypes", _types),
           fact("ec2InstanceTypeOfferings", [{"instanceType": t["instanceType"], "zone": z} for t in _types for z in ("us-west-2a", "us-west-2b")])]),
    ["KD4201"], roots=["KD4201"], skipped=_am_skipped)

# The 3P troubleshooting page's restricted-label case: an Auto Mode NodePool written with the
# self-managed provider's keys. Auto Mode rejects it: ValidationSucceeded=False,
# NodePoolValidationFailed, "label is restricted". KD4005 reports the condition, linked.
_p = _pool_status(_am_pool("batch", ("amd64",)),
                  {"type": "ValidationSucceeded", "status": "False", "reason": "NodePoolValidationFailed",
                   "message": "invalid value: label is restricted; specify a well known label or a custom label that does not use a restricted domain (label=karpenter.k8s.aws/instance-category, restricted-labels=[k8s.io karpenter.k8s.aws karpenter.sh kubernetes.io])"},
                  {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "ValidationSucceeded=False"})
_p["metadata"].pop("labels", None)
_p["spec"]["template"]["spec"]["requirements"][1] = {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}
write("automode-pool-restricted-label", _am_alone(
    "An EKS Auto Mode NodePool batch requires karpenter.k8s.aws/instance-category, the self-managed provider's key: Auto Mode rejects the domain as restricted (ValidationSucceeded=False, NodePoolValidationFailed) and launches nothing for it; its label is eks.amazonaws.com/instance-category.",
    _am_pools + [_p], [_am_class()]), ["KD4005", "KD4201"], roots=["KD4201"], skipped=_am_skipped)


# --- KD5101: Auto Mode node roles without their access entry (docs/auto-mode.md §7.5) ---------

def _custom_class(name, role, unauthorized=False):
    c = _am_class(name, role=role, eks=False)
    if unauthorized:
        # The event pair the 3P troubleshooting page shows for a role without an access entry.
        c["status"]["conditions"] = [
            {"type": "InstanceProfileReady", "status": "False", "reason": "UnauthorizedNodeRole",
             "message": "Role %s is unauthorized to join nodes to the cluster" % role,
             "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1},
            {"type": "Ready", "status": "False", "reason": "UnhealthyDependents",
             "message": "ValidationSucceeded=False, InstanceProfileReady=False",
             "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1}]
    return c


def _custom_pool(name, cls):
    p = _am_pool(name, ("amd64",))
    p["metadata"].pop("labels", None)
    p["spec"]["template"]["spec"]["nodeClassRef"]["name"] = cls
    return p


# terraform-aws-eks#3578 (and #3241): Auto Mode with the built-in pools, and a NodeClass of the
# team's own (applied by ArgoCD) whose role the module created without an access entry. EKS made
# the entry only for the built-in pools' role; the custom NodeClass reports
# UnauthorizedNodeRole, its pool's NodeClassReady is False, and KD4005 links that to KD5101.
_b = _am_alone(
    "EKS Auto Mode with the built-in pools, and a NodeClass of the team's own (role AutoModeCustomNodeRole) for the NodePool apps. EKS creates an access entry only for the built-in pools' role, and nobody created one for AutoModeCustomNodeRole (terraform-aws-eks#3578): the NodeClass reports UnauthorizedNodeRole and its nodes would never join.",
    _am_pools + [_pool_status(_custom_pool("apps", "custom"),
                              {"type": "NodeClassReady", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClass is not ready"},
                              {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False"})],
    [_am_class(), _custom_class("custom", "AutoModeCustomNodeRole", unauthorized=True)])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole", kind=None)
write("automode-custom-nodeclass-role-without-access-entry", _b, ["KD3101", "KD4005", "KD5101"], roots=["KD5101"], skipped=_am_skipped)

# The migration's common slip (docs/auto-mode.md A17): beside a self-managed Karpenter, an Auto
# Mode NodeClass reuses Karpenter's node role, whose entry terraform-aws-eks's Karpenter module
# made as EC2_LINUX. The type cannot be changed and the role has one entry.
_b = bundle(
    "Karpenter 1.8.1 runs beside EKS Auto Mode (compute on, no built-in pools yet), and the Auto Mode NodeClass migrate reuses Karpenter's node role KarpenterNodeRole-demo, whose access entry is EC2_LINUX (terraform-aws-eks's Karpenter module default). Auto Mode's nodes need an EC2 entry with AmazonEKSAutoNodePolicy; an entry's type cannot be changed, and the self-managed nodes still use the role.",
    nps=[nodepool(), _custom_pool("migrate", "migrate")],
    overrides=[fact("autoNodeClasses", [_custom_class("migrate", "KarpenterNodeRole-demo")])])
_no_queue(_b)
_am_cluster(_b, pools=(), role=None, mode="API_AND_CONFIG_MAP")
write("automode-nodeclass-reuses-karpenter-node-role", _b, ["KD5101"], roots=["KD5101"])

# aws/aws-cdk#34394: CDK's grantAccess made the Auto Mode node role's entry STANDARD (the type
# an entry gets when none is given), with no node policy; its nodes never join.
_b = _am_alone(
    "EKS Auto Mode with the built-in pools and a NodeClass gpu whose role AutoModeGpuNodeRole got its access entry from CDK's grantAccess (aws/aws-cdk#34394): type STANDARD, the default, which gives a node nothing. Auto Mode's nodes need an EC2 entry with AmazonEKSAutoNodePolicy.",
    _am_pools + [_custom_pool("gpu", "gpu")],
    [_am_class(), _custom_class("gpu", "AutoModeGpuNodeRole")])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeGpuNodeRole", kind="STANDARD")
write("automode-node-role-standard-entry", _b, ["KD5101"], roots=["KD5101"], skipped=_am_skipped)

# Healthy: a NodeClass of one's own beside the built-in pools, its role given an EC2 entry with
# AmazonEKSAutoNodePolicy at cluster scope, as the user guide says (terraform-aws-eks#3241's fix).
_b = _am_alone(
    "Healthy: EKS Auto Mode with the built-in pools and a NodeClass of the team's own for the NodePool apps; its role AutoModeCustomNodeRole has an access entry of type EC2 with AmazonEKSAutoNodePolicy at cluster scope, as EKS's user guide asks for a NodeClass's own role.",
    _am_pools + [_custom_pool("apps", "custom")],
    [_am_class(), _custom_class("custom", "AutoModeCustomNodeRole")])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole")
write("healthy-auto-mode-custom-nodeclass", _b, [], skipped=_am_skipped)

# Healthy, aws/containers-roadmap#2624's answer: where an SCP keeps Auto Mode from creating
# instance profiles, the NodeClass names one made beforehand (`spec.instanceProfile`, awsdocs
# PR #1123) instead of a role; its role has the EC2 entry with the node policy.
_c = _custom_class("locked", "AutoModeLockedNodeRole")
_c["spec"].pop("role")
_c["spec"]["instanceProfile"] = "eks-automode-locked"
# The thread's SCP kept IAM changes to a deployment role; its shape here is a Deny of the
# role-changing actions for every principal but that role.
_IAM_SCP = {"Version": "2012-10-17", "Statement": [
    {"Sid": "IamChangesFromDeploymentOnly", "Effect": "Deny",
     "Action": ["iam:AddRoleToInstanceProfile", "iam:CreateInstanceProfile", "iam:CreateRole"], "Resource": "*",
     "Condition": {"ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/cd-deployer"}}}]}
_b = _am_alone(
    "Healthy: in an account whose SCP keeps IAM changes (iam:AddRoleToInstanceProfile, iam:CreateInstanceProfile, iam:CreateRole) to a deployment role (aws/containers-roadmap#2624), the only Auto Mode NodeClass, locked, names an instance profile made beforehand (spec.instanceProfile) holding AutoModeLockedNodeRole, whose access entry is EC2 with AmazonEKSAutoNodePolicy: EKS changes no IAM to launch from it. No built-in pool is on.",
    [_custom_pool("batch", "locked")], [_c], builtin=(), role=None,
    extra=[profile_fact("eks-automode-locked", ("arn:aws:iam::111122223333:role/AutoModeLockedNodeRole",))])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeLockedNodeRole")
_b["emulator"] = {**default_emulator(_b), "scps": [{"name": "iam-from-deployment-only", "document": _IAM_SCP}]}
write("healthy-auto-mode-nodeclass-instance-profile", _b, [], skipped=_am_skipped)

# --- KD3101: Auto Mode NodeClasses that cannot launch (docs/auto-mode.md §7.3) -----------------

# aws/karpenter-provider-aws#9016: an Auto Mode NodeClass stuck on InstanceProfileCreationFailed,
# ValidationSucceeded never leaving AwaitingReconciliation; the role has its EC2 entry, so the
# cause is in what Auto Mode reports (the thread's CloudTrail showed the service-linked role's
# CreateInstanceProfile). The pool on it launches nothing; KD4005 links its condition here.
_c = _custom_class("apps", "AutoModeAppsNodeRole")
_c["status"]["conditions"] = [
    {"type": "InstanceProfileReady", "status": "False", "reason": "InstanceProfileCreationFailed",
     "message": "failed to create instance profile", "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1},
    {"type": "ValidationSucceeded", "status": "Unknown", "reason": "AwaitingReconciliation",
     "message": "object is awaiting reconciliation", "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1},
    {"type": "Ready", "status": "False", "reason": "UnhealthyDependents",
     "message": "InstanceProfileReady=False, ValidationSucceeded=Unknown", "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1}]
_b = _am_alone(
    "An EKS Auto Mode NodeClass apps is stuck: InstanceProfileReady=False with InstanceProfileCreationFailed and ValidationSucceeded Unknown (AwaitingReconciliation) for hours (aws/karpenter-provider-aws#9016); its role has the EC2 access entry with the node policy. The NodePool apps on it launches nothing.",
    _am_pools + [_pool_status(_custom_pool("apps", "apps"),
                              {"type": "NodeClassReady", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClass is not ready"},
                              {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False"})],
    [_am_class(), _c])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeAppsNodeRole")
write("automode-nodeclass-instance-profile-creation-failed", _b, ["KD3101", "KD4005"], roots=["KD3101"], skipped=_am_skipped)

# awsdocs/amazon-eks-user-guide#1088: pod subnets in one zone, node subnets in two. The NodeClass
# is Ready; pods on nodes in us-west-2a fail with "failed to assign an IP address to container".
_c = _custom_class("split", "AutoModeCustomNodeRole")
_c["spec"]["podSubnetSelectorTerms"] = [{"tags": {"kubernetes.io/role/pods": "1"}}]
_c["spec"]["podSecurityGroupSelectorTerms"] = [{"id": CLUSTER_SG}]
_pod_subnet = subnet("subnet-0b2c3d4e", "us-west-2b", "192.168.160.0/19", {"Name": "demo-pods-us-west-2b", "kubernetes.io/role/pods": "1"})
_b = _am_alone(
    "An EKS Auto Mode NodeClass split puts nodes in the private subnets of us-west-2a and us-west-2b and pods in a subnet tagged kubernetes.io/role/pods, which exists only in us-west-2b (awsdocs/amazon-eks-user-guide#1088). The NodeClass is Ready, and pods on its nodes in us-west-2a fail with \"failed to assign an IP address to container\".",
    _am_pools + [_custom_pool("apps", "split")], [_am_class(), _c],
    extra=[fact("ec2Subnets", subnets() + [_pod_subnet])])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole")
write("automode-pod-subnets-miss-a-zone", _b, ["KD3101"], roots=["KD3101"], skipped=_am_skipped)


# --- KD1201: a self-managed Karpenter beside Auto Mode (docs/auto-mode.md §4) --------------------

# kubernetes-sigs/karpenter#1818: Karpenter 1.0.8 still running when Auto Mode's compute and its
# built-in pools are turned on. Releases before 1.1 reconcile every NodePool and NodeClaim, Auto
# Mode's included. Kubernetes 1.30, which 1.0 supports.
_b = bundle(
    "EKS Auto Mode's compute and built-in pools were turned on beside a Karpenter 1.0.8 that still runs (kubernetes-sigs/karpenter#1818): releases before 1.1 reconcile every NodePool and NodeClaim, Auto Mode's built-in pools included, and AWS's migration to Auto Mode requires 1.1 or later.",
    dep=[deployment(image="public.ecr.aws/karpenter/controller:1.0.8@sha256:0e8b5f3a2c1d4e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f")],
    nps=[nodepool()] + _am_pools,
    overrides=[fact("autoNodeClasses", [_am_class()]),
               fact("kubeVersion", {"major": "1", "minor": "30", "gitVersion": "v1.30.14-eks-b707fbb"})])
for _e in _b["facts"]:
    if isinstance(_e["fact"], dict) and "controllerDeployments" in _e["fact"]:
        for _d in _e["value"]:
            _d["metadata"]["labels"].update({"app.kubernetes.io/version": "1.0.8", "helm.sh/chart": "karpenter-1.0.8"})
    if isinstance(_e["fact"], dict) and "eksCluster" in _e["fact"]:
        _e["value"]["version"] = "1.30"
_no_queue(_b)
_am_cluster(_b, mode="API_AND_CONFIG_MAP")
write("automode-beside-karpenter-1-0", _b, ["KD1201"], roots=["KD1201"])

# aws/karpenter-provider-aws#9557: Karpenter 1.8.1 beside Auto Mode keeps its interruption queue.
# Its handler looks NodeClaims up by instance id without asking whose they are: a spot or
# rebalance event for an Auto Mode instance deletes Auto Mode's NodeClaim. A warning: nothing
# is deleted until such an event comes.
_b = bundle(
    "Karpenter 1.8.1 runs beside EKS Auto Mode's built-in pools and keeps its interruption queue (aws/karpenter-provider-aws#9557): its handler finds NodeClaims by instance id without checking whose they are, so an interruption or rebalance event for one of Auto Mode's instances would delete Auto Mode's NodeClaim.",
    nps=[nodepool()] + _am_pools,
    overrides=[fact("autoNodeClasses", [_am_class()])])
_am_cluster(_b, mode="API_AND_CONFIG_MAP")
write("automode-beside-karpenter-interruption-queue", _b, ["KD1201"], exit_code=0, roots=[])


# --- KD2301: Auto Mode's cluster role (docs/auto-mode.md §3.1, §3.2, §7.2) -----------------------

# aws/containers-roadmap#2487: a NodeClass with tags of the team's own on a cluster role with only
# AWS's managed policies. Pool and NodeClass are Ready, a NodeClaim is made, no instance comes up:
# the managed policies do not allow tags of one's own. The thread's fix was the user guide's
# tagging statements on the cluster role (terraform-aws-eks PR #3242 moved them there).
# The thread's pod was nominated for a NodeClaim of the custom pool that never launched, with
# nothing in any log: KD6001 reports the claim, linked to the cluster role (one cause).
def _am_claim_of(name, pool, cls, launched=("True", "Launched", ""), since="2026-11-23T09:40:00Z"):
    """A NodeClaim Auto Mode made for `pool` from its NodeClass `cls`."""
    c = claim(name, pool=pool, launched=launched, since=since)
    c["spec"]["nodeClassRef"] = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": cls}
    c["metadata"]["labels"].pop("karpenter.k8s.aws/ec2nodeclass", None)
    c["metadata"]["labels"]["eks.amazonaws.com/nodeclass"] = cls
    return c


_c = _custom_class("tagged", "AutoModeCustomNodeRole")
_c["spec"]["tags"] = {"Environment": "production", "Team": "platform"}
_b = _am_alone(
    "An EKS Auto Mode NodeClass tagged sets tags {Environment: production, Team: platform}, and the cluster role carries only AWS's five managed policies for Auto Mode (aws/containers-roadmap#2487): pool and NodeClass report Ready and a NodeClaim is made for the pending pod, yet no instance comes up and nothing is logged, because none of those policies lets Auto Mode put tags of one's own on what it launches.",
    _am_pools + [_custom_pool("apps", "tagged")], [_am_class(), _c],
    extra=[fact("nodeClaims", [_am_claim_of("apps-q8x2m", "apps", "tagged",
                                            launched=("Unknown", "AwaitingReconciliation", "object is awaiting reconciliation"),
                                            since="2026-11-23T09:30:00Z")])])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole")
write("automode-nodeclass-tags-without-cluster-role-grant", _b, ["KD2301", "KD6001"], roots=["KD2301"], skipped=_am_skipped)

# Healthy: the same NodeClass, with the user guide's tagging statements on the cluster role
# (terraform-aws-eks's enable_auto_mode_custom_tags, on by default in v21).
_TAGS = {"Version": "2012-10-17", "Statement": [
    {"Sid": "Compute", "Effect": "Allow", "Action": ["ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate"], "Resource": "*",
     "Condition": {"StringEquals": {"aws:RequestTag/eks:eks-cluster-name": "${aws:PrincipalTag/eks:eks-cluster-name}"},
                   "StringLike": {"aws:RequestTag/eks:kubernetes-node-class-name": "*", "aws:RequestTag/eks:kubernetes-node-pool-name": "*"}}},
    {"Sid": "Storage", "Effect": "Allow", "Action": ["ec2:CreateVolume", "ec2:CreateSnapshot"], "Resource": ["arn:aws:ec2:*:*:volume/*", "arn:aws:ec2:*:*:snapshot/*"],
     "Condition": {"StringEquals": {"aws:RequestTag/eks:eks-cluster-name": "${aws:PrincipalTag/eks:eks-cluster-name}"}}},
    {"Sid": "Networking", "Effect": "Allow", "Action": "ec2:CreateNetworkInterface", "Resource": "*",
     "Condition": {"StringEquals": {"aws:RequestTag/eks:eks-cluster-name": "${aws:PrincipalTag/eks:eks-cluster-name}"},
                   "StringLike": {"aws:RequestTag/eks:kubernetes-cni-node-name": "*"}}}]}
_b = _am_alone(
    "Healthy: an EKS Auto Mode NodeClass tagged sets tags of the team's own, and the cluster role carries, beside AWS's five managed policies, the tagging statements of the user guide's \"Custom AWS tags for EKS Auto resources\" as an inline policy (terraform-aws-eks v21's enable_auto_mode_custom_tags).",
    _am_pools + [_custom_pool("apps", "tagged")], [_am_class(), _c])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole")
_cluster_role(_b, inline=[("AutoModeCustomTags", _TAGS)])
write("healthy-auto-mode-tagged-nodeclass", _b, [], skipped=_am_skipped)

# An existing cluster moved to Auto Mode without the trust update the user guide asks for ("The
# Cluster IAM Role must have an updated trust policy including the sts:TagSession action"): EKS
# cannot tag its session, and Auto Mode's policies grant only to sessions tagged with the
# cluster's name.
_b = _am_alone(
    "EKS Auto Mode was enabled on an existing cluster whose role still trusts eks.amazonaws.com for sts:AssumeRole only; the user guide asks for sts:TagSession too when enabling Auto Mode on an existing cluster, since Auto Mode's managed policies grant only to sessions tagged with the cluster's name.",
    _am_pools, [_am_class()])
_cluster_role(_b, trust=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
write("automode-cluster-role-trust-without-tagsession", _b, ["KD2301"], roots=["KD2301"], skipped=_am_skipped)

# aws-samples/appmod-blueprints PR #787: Karpenter installed with the chart's defaults on a cluster
# whose only nodes are EKS Auto Mode's. Every Auto Mode node carries karpenter.sh/nodepool, which
# the chart's required affinity excludes: both replicas stay Pending. The fix pinned the
# controller to Auto Mode's tainted system pool (karpenter.sh/nodepool In [system]).
def _am_node_labels(name, pool, zone, arch="amd64"):
    n = node(name)
    n["metadata"]["labels"] = {"kubernetes.io/hostname": name, "kubernetes.io/arch": arch, "kubernetes.io/os": "linux",
                               "topology.kubernetes.io/zone": zone, "karpenter.sh/nodepool": pool,
                               "eks.amazonaws.com/nodeclass": "default", "eks.amazonaws.com/compute-type": "auto"}
    if pool == "system":
        n["spec"] = {"taints": [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}]}
    return n


_am_nodes = [_am_node_labels("i-0b1c2d3e4f5a60701", "system", "us-west-2a"),
             _am_node_labels("i-0b1c2d3e4f5a60702", "system", "us-west-2b"),
             _am_node_labels("i-0b1c2d3e4f5a60703", "general-purpose", "us-west-2a")]
_msg = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
_b = bundle(
    "Karpenter 1.8.1 was installed with the chart's defaults beside EKS Auto Mode on a cluster whose only nodes are Auto Mode's (aws-samples/appmod-blueprints PR #787): the chart's required affinity karpenter.sh/nodepool DoesNotExist excludes every Auto Mode node, so both controller replicas stay Pending.",
    dep=[deployment(ready=0)],
    pods=[pending_pod("karpenter-6d9f7c8b5d-7xk2p", NS, _msg), pending_pod("karpenter-6d9f7c8b5d-q9w4n", NS, _msg)],
    nps=[nodepool()] + _am_pools,
    overrides=[fact("autoNodeClasses", [_am_class()]),
               fact({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}}, [slim_node(n) for n in _am_nodes]),
               fact({"eksFargateProfiles": {"cluster": "demo"}}, [])])
_no_queue(_b)
_am_cluster(_b, mode="API_AND_CONFIG_MAP")
write("automode-karpenter-affinity-matches-no-node", _b, ["KD1001", "KD1005", "KD1201"], roots=["KD1201"],
      skipped=["KD1009", "KD9001"])
