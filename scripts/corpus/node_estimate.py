# KD6006 (Karpenter's estimate above the node) and KD6007 (pod IPs), from the threads in
# docs/node-capacity.md's appendix (F10, F11, F13, F15, F16, H3, H4). Uses node_capacity.py's
# helpers (_nc_claim, _nc_node) and healthy_shapes.py's Bottlerocket pool and class.
import copy


def _ne_claim(name, node_name, itype, capacity, allocatable, pool="default", nc="default"):
    c = _nc_claim(name, node_name, pool=pool, itype=itype, capacity=capacity)
    c["status"]["allocatable"] = allocatable
    c["spec"]["nodeClassRef"]["name"] = nc
    c["metadata"]["labels"]["karpenter.k8s.aws/ec2nodeclass"] = nc
    return c


def _ne_node(name, itype, capacity, allocatable, pool="default"):
    n = _nc_node(name, pool=pool, itype=itype, allocatable=allocatable)
    n["status"]["capacity"] = capacity
    return n


def _ne_aws_node(**env):
    """aws-node with the VPC CNI settings the scenario sets (literal values, as karpdoctor keeps them)."""
    ds = copy.deepcopy(DAEMONSETS[0])
    ds["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return [ds] + DAEMONSETS[1:]


def _ne_sandbox_event(pod_name, ns, node_name, count, uid):
    """The kubelet's event for a pod the VPC CNI has no address for (Karpenter troubleshooting,
    "CNI is unable to allocate IPs to pods")."""
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.18a2b3c4d5e6f7%02d" % (pod_name, count), "namespace": ns, "uid": uid},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": ns},
            "reason": "FailedCreatePodSandBox", "type": "Warning", "count": count,
            "firstTimestamp": "2026-11-23T09:35:00Z", "lastTimestamp": "2026-11-23T09:58:00Z",
            "source": {"component": "kubelet", "host": node_name},
            "message": "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"0f46f3f1289eed7afab81b6945c49336ef556861fe5bb09a902a00772848b7cc\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container"}


def _ne_app_pod(name, ns, node_name, ready):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": "a9b8c7d6-%s" % name},
            "spec": {"nodeName": node_name, "containers": [{"name": "app"}]},
            "status": {"phase": "Running" if ready else "Pending",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-11-23T09:36:00Z"}],
                       "containerStatuses": [{"name": "app", "ready": ready, "restartCount": 0, "image": "", "imageID": "",
                                              **({} if ready else {"state": {"waiting": {"reason": "ContainerCreating"}}})}]}}


# ---------------------------------------------------------------------------------------------
# kubernetes-sigs/karpenter#1185 and aws/karpenter-provider-aws#4163: c5.large nodes come up with
# 3106640Ki allocatable memory while Karpenter planned 3114Mi (4096Mi less its 7.5% VM overhead,
# 574Mi kube-reserved and 100Mi eviction): the instance reports 80Mi less memory than assumed.
_ne_cap = {"cpu": "2", "memory": "3788Mi", "pods": "29", "ephemeral-storage": "17Gi"}
_ne_alloc = {"cpu": "1930m", "memory": "3114Mi", "pods": "29", "ephemeral-storage": "14191675904"}
_ne_ncap = {"cpu": "2", "memory": "3796816Ki", "pods": "29", "ephemeral-storage": "20959212Ki"}
_ne_nalloc = {"cpu": "1930m", "memory": "3106640Ki", "pods": "29", "ephemeral-storage": "18242267924"}
_ne_nodes = ["ip-10-4-21-%d.us-west-2.compute.internal" % i for i in (17, 58)]
write("estimate-above-node-vm-overhead", bundle(
    "Two c5.large nodes offer 3106640Ki of memory to pods while Karpenter planned 3114Mi when it launched them (kubernetes-sigs/karpenter#1185, aws/karpenter-provider-aws#4163): the instances report 80Mi less memory than Karpenter's 7.5% VM overhead assumes, so pods Karpenter sends to each new c5.large may not fit on it.",
    overrides=[fact("nodeClaims", [_ne_claim("default-c5k%d" % i, n, "c5.large", _ne_cap, _ne_alloc) for i, n in enumerate(_ne_nodes)])]
    + [fact({"node": {"name": n}}, _ne_node(n, "c5.large", _ne_ncap, _ne_nalloc)) for n in _ne_nodes]),
    ["KD6006"], exit_code=0, roots=[])

# aws/karpenter-provider-aws#5104: Bottlerocket user data sets
# [settings.kubernetes.eviction-hard] "memory.available" = "5%", which Karpenter does not read;
# m5.large nodes keep 5% of memory back where Karpenter counted 100Mi.
_ne_pool = copy.deepcopy(br_pool)
_ne_nc = copy.deepcopy(br_nc)
_ne_nc["spec"]["userData"] = "[settings.kubernetes.eviction-hard]\n\"memory.available\" = \"5%\"\n"
_ne_n = "ip-10-4-33-120.us-west-2.compute.internal"
write("estimate-above-node-userdata-eviction", bundle(
    "A Bottlerocket EC2NodeClass sets [settings.kubernetes.eviction-hard] \"memory.available\" = \"5%\" in its userData (aws/karpenter-provider-aws#5104). Karpenter does not read user data, so it planned 6903Mi for pods on each m5.large while the node keeps 5% of its memory back and offers 6789Mi: a pod sized to Karpenter's estimate does not fit on the new node.",
    nps=[_ne_pool], ncs=[_ne_nc],
    overrides=[fact("nodeClaims", [_ne_claim("default-br5x2", _ne_n, "m5.large",
                                             {"cpu": "2", "memory": "7577Mi", "pods": "29"},
                                             {"cpu": "1930m", "memory": "6903Mi", "pods": "29"}, nc="bottlerocket")]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "m5.large", {"cpu": "2", "memory": "7937024Ki", "pods": "29"},
                                                        {"cpu": "1930m", "memory": "6951936Ki", "pods": "29"}))]),
    ["KD6006"], exit_code=0, roots=[])

# aws/karpenter-provider-aws#6611 and #8449: the estimate at or below the node. The first m5.large
# was estimated from the overhead (7577Mi capacity), the second from the capacity Karpenter
# remembered from the first node (7751Mi); both are below what their nodes offer.
_ne_nodes = ["ip-10-4-40-%d.us-west-2.compute.internal" % i for i in (11, 12)]
_ne_ncap = {"cpu": "2", "memory": "7937024Ki", "pods": "29"}
_ne_nalloc = {"cpu": "1930m", "memory": "7246848Ki", "pods": "29"}
write("healthy-estimate-below-node", bundle(
    "Healthy: two m5.large NodeClaims whose estimates are at or below their nodes (aws/karpenter-provider-aws#6611, #8449): the first from Karpenter's 7.5% VM overhead (6903Mi), the second from the memory it remembered from the first node (7077Mi); each node offers 7077Mi.",
    overrides=[fact("nodeClaims", [
        _ne_claim("default-m5a1", _ne_nodes[0], "m5.large", {"cpu": "2", "memory": "7577Mi", "pods": "29"}, {"cpu": "1930m", "memory": "6903Mi", "pods": "29"}),
        _ne_claim("default-m5a2", _ne_nodes[1], "m5.large", {"cpu": "2", "memory": "7751Mi", "pods": "29"}, {"cpu": "1930m", "memory": "7077Mi", "pods": "29"})])]
    + [fact({"node": {"name": n}}, _ne_node(n, "m5.large", _ne_ncap, _ne_nalloc)) for n in _ne_nodes]),
    [])

# ---------------------------------------------------------------------------------------------
# aws/karpenter-provider-aws#3903 (and Karpenter troubleshooting, "maxPods is greater than the
# node's supported pod density"): the EC2NodeClass sets kubelet.maxPods 110; a t3.large has 3 ENIs
# of 12 addresses, 33 for pods, so pods past that stay in ContainerCreating.
_ne_nc = custom_nc({"kubelet": {"maxPods": 110}})
_ne_n = "ip-10-4-52-9.us-west-2.compute.internal"
_ne_failed = ["web-7d9c8b6f5-%s" % s for s in ("k2x4p", "m7q1z", "t9w3e")]
write("max-pods-above-eni-limit", bundle(
    "The EC2NodeClass sets spec.kubelet.maxPods: 110 (aws/karpenter-provider-aws#3903). Its t3.large nodes admit 110 pods, but the VPC CNI can address only 33 (3 ENIs of 12 addresses, one each for the ENI itself): pods past that stay in ContainerCreating with FailedCreatePodSandBox \"failed to assign an IP address to container\".",
    ncs=[_ne_nc],
    overrides=[fact("nodeClaims", [_ne_claim("default-t3l9", _ne_n, "t3.large", {"cpu": "2", "memory": "7577Mi", "pods": "110"},
                                             {"cpu": "1930m", "memory": "6903Mi", "pods": "110"})]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "t3.large", {"cpu": "2", "memory": "7937024Ki", "pods": "110"},
                                                        {"cpu": "1930m", "memory": "7068672Ki", "pods": "110"})),
               fact({"eventsByReason": {"kind": "Pod", "reason": "FailedCreatePodSandBox"}},
                    [_ne_sandbox_event(p, "shop", _ne_n, 14 + i, "e5f6a7b8-c9d0-4e1f-8a2b-3c4d5e6f70%02d" % i) for i, p in enumerate(_ne_failed)]),
               fact({"nodePods": {"node": _ne_n}}, [_ne_app_pod(p, "shop", _ne_n, False) for p in _ne_failed])]),
    ["KD6007"], roots=["KD6007"])

# aws/karpenter-provider-aws#6102 (and #7505): prefix delegation is on in aws-node, but the
# EC2NodeClass sets no maxPods, so Karpenter passes each c7g.large the single-address count, 29,
# where EKS's max-pods calculator gives 110.
_ne_n = "ip-10-4-60-31.us-west-2.compute.internal"
write("prefix-delegation-default-max-pods", bundle(
    "aws-node runs with ENABLE_PREFIX_DELEGATION=true, but the EC2NodeClass sets no spec.kubelet.maxPods (aws/karpenter-provider-aws#6102): Karpenter does not model prefix delegation and gives each c7g.large node 29 pods, the single-address figure, where prefixes allow 110. Pods run, but Karpenter launches about four times the nodes it needs.",
    overrides=[fact("daemonSets", _ne_aws_node(ENABLE_PREFIX_DELEGATION="true", WARM_PREFIX_TARGET="1")),
               fact("nodeClaims", [_ne_claim("default-c7g1", _ne_n, "c7g.large", {"cpu": "2", "memory": "3729Mi", "pods": "29"},
                                             {"cpu": "1930m", "memory": "3055Mi", "pods": "29"})]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "c7g.large", {"cpu": "2", "memory": "3878912Ki", "pods": "29"},
                                                        {"cpu": "1930m", "memory": "3188736Ki", "pods": "29"}))]),
    ["KD6007"], exit_code=0, roots=[])

# aws/amazon-vpc-cni-k8s#2749: prefix delegation on with WARM_PREFIX_TARGET=1 and maxPods 110 on
# m5.large (432 addresses with prefixes, so the count fits); new pods fail "failed to assign an IP
# address" while the subnets still show free addresses: no aligned /28 is left. The subnets are
# /26 with 59 free each, which KD3009 reports; this finding is linked to it.
_ne_nc = custom_nc({"kubelet": {"maxPods": 110}})
_ne_n = "ip-192-168-64-77.us-west-2.compute.internal"
_ne_failed = ["api-5f6b7c8d9-%s" % s for s in ("a1b2c", "d3e4f")]
write("prefix-delegation-no-free-prefix", bundle(
    "aws-node runs with ENABLE_PREFIX_DELEGATION=true and WARM_PREFIX_TARGET=1, the EC2NodeClass sets maxPods 110 (aws/amazon-vpc-cni-k8s#2749). On a new m5.large, whose ENIs could address 432 pods with prefixes, pods fail \"failed to assign an IP address to container\": the /26 subnets have 59 free addresses each, but no free aligned /28 for another prefix.",
    ncs=[_ne_nc],
    overrides=[fact("ec2Subnets", subnets(prefix=26)),
               fact("daemonSets", _ne_aws_node(ENABLE_PREFIX_DELEGATION="true", WARM_PREFIX_TARGET="1")),
               fact("nodeClaims", [_ne_claim("default-pd77", _ne_n, "m5.large", {"cpu": "2", "memory": "7577Mi", "pods": "110"},
                                             {"cpu": "1930m", "memory": "6903Mi", "pods": "110"})]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "m5.large", {"cpu": "2", "memory": "7937024Ki", "pods": "110"},
                                                        {"cpu": "1930m", "memory": "7246848Ki", "pods": "110"})),
               fact({"eventsByReason": {"kind": "Pod", "reason": "FailedCreatePodSandBox"}},
                    [_ne_sandbox_event(p, "api", _ne_n, 9 + i, "f6a7b8c9-d0e1-4f2a-9b3c-4d5e6f7a80%02d" % i) for i, p in enumerate(_ne_failed)]),
               fact({"nodePods": {"node": _ne_n}}, [_ne_app_pod(p, "api", _ne_n, False) for p in _ne_failed])]),
    ["KD3009", "KD6007"], roots=[])

# Healthy (docs/node-capacity.md H3): prefix delegation with a matching maxPods of 110 on m5.large;
# one pod failed twice while the warm prefix was attached and now runs (aws#4202: transient).
_ne_nc = custom_nc({"kubelet": {"maxPods": 110}})
_ne_n = "ip-10-4-70-5.us-west-2.compute.internal"
write("healthy-prefix-delegation-max-pods", bundle(
    "Healthy: aws-node runs with ENABLE_PREFIX_DELEGATION=true and WARM_PREFIX_TARGET=1, the EC2NodeClass sets maxPods 110, and the m5.large node admits 110 pods (its ENIs address 432 with prefixes). One pod failed to get an address twice while the node's first prefix was attached, and now runs (aws/karpenter-provider-aws#4202): not a fault.",
    ncs=[_ne_nc],
    overrides=[fact("daemonSets", _ne_aws_node(ENABLE_PREFIX_DELEGATION="true", WARM_PREFIX_TARGET="1")),
               fact("nodeClaims", [_ne_claim("default-pd05", _ne_n, "m5.large", {"cpu": "2", "memory": "7577Mi", "pods": "110"},
                                             {"cpu": "1930m", "memory": "6903Mi", "pods": "110"})]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "m5.large", {"cpu": "2", "memory": "7937024Ki", "pods": "110"},
                                                        {"cpu": "1930m", "memory": "7246848Ki", "pods": "110"})),
               fact({"eventsByReason": {"kind": "Pod", "reason": "FailedCreatePodSandBox"}},
                    [_ne_sandbox_event("web-6c7d8e9f0-q1r2s", "shop", _ne_n, 2, "a7b8c9d0-e1f2-4a3b-8c4d-5e6f7a8b9c01")]),
               fact({"nodePods": {"node": _ne_n}}, [_ne_app_pod("web-6c7d8e9f0-q1r2s", "shop", _ne_n, True)])]),
    [])

# Karpenter troubleshooting, "CNI is unable to allocate IPs to pods" (Security Groups for Pods):
# the trunk ENI takes one of an m5.large's three ENIs from pods, Karpenter "is not aware" and
# still passes the kubelet 29 pods; with 18 addresses left, pods past that fail. The fix the page
# gives is RESERVED_ENIS=1.
_ne_n = "ip-10-4-81-66.us-west-2.compute.internal"
_ne_failed = ["orders-6b8c9d7e5-%s" % s for s in ("p4s7w", "r2t5y")]
write("pod-eni-without-reserved-enis", bundle(
    "aws-node runs with ENABLE_POD_ENI=true (security groups for pods), so one of each m5.large's three ENIs is the trunk and 18 addresses are left for pods, while Karpenter, which does not know, gives each node 29 pods (Karpenter troubleshooting, \"CNI is unable to allocate IPs to pods\"): pods past the addresses stay in ContainerCreating. RESERVED_ENIS is not set.",
    overrides=[fact("daemonSets", _ne_aws_node(ENABLE_POD_ENI="true")),
               fact("nodeClaims", [_ne_claim("default-sgp3", _ne_n, "m5.large", {"cpu": "2", "memory": "7577Mi", "pods": "29"},
                                             {"cpu": "1930m", "memory": "6903Mi", "pods": "29"})]),
               fact({"node": {"name": _ne_n}}, _ne_node(_ne_n, "m5.large", {"cpu": "2", "memory": "7937024Ki", "pods": "29"},
                                                        {"cpu": "1930m", "memory": "7246848Ki", "pods": "29"})),
               fact({"eventsByReason": {"kind": "Pod", "reason": "FailedCreatePodSandBox"}},
                    [_ne_sandbox_event(p, "orders", _ne_n, 6 + i, "b8c9d0e1-f2a3-4b4c-9d5e-6f7a8b9c0d%02d" % i) for i, p in enumerate(_ne_failed)]),
               fact({"nodePods": {"node": _ne_n}}, [_ne_app_pod(p, "orders", _ne_n, False) for p in _ne_failed])]),
    ["KD6007"], roots=["KD6007"])
