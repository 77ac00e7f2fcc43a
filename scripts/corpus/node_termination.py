# KD4102 nodes-stuck-terminating, from the threads in docs/disruption.md's appendix (KD4102 1
# and 2, and its quiet shapes). Uses node_capacity.py's _nc_claim and _nc_node.
import copy

_NT_DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


def _nt_deleting(c, since, tgp=None, forced_at=None, conditions=()):
    c = copy.deepcopy(c)
    c["metadata"]["deletionTimestamp"] = since
    c["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    if tgp:
        c["spec"]["terminationGracePeriod"] = tgp
    if forced_at:
        c["metadata"]["annotations"] = {"karpenter.sh/nodeclaim-termination-timestamp": forced_at}
    c["status"]["conditions"] += [{"type": t, "status": s, "reason": r, "message": "", "lastTransitionTime": since}
                                  for t, s, r in conditions]
    return c


def _nt_node(name, since):
    n = _nc_node(name, taints=[_NT_DISRUPTED])
    n["metadata"]["deletionTimestamp"] = since
    n["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    return n


def _nt_pod(name, ns, node_name, labels, owner=("ReplicaSet", "web-7d9c8b6f5"), annotations=None):
    meta = {"name": name, "namespace": ns, "uid": "b1c2d3e4-%s" % name, "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "c2d3e4f5-%s" % owner[1], "controller": True}]}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-09-07T08:00:00Z"}],
                       "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0}]}}


def _nt_pdb(name, ns, selector, min_available, healthy, expected, allowed):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns, "uid": "d3e4f5a6-%s" % name},
            "spec": {"selector": {"matchLabels": selector}, "minAvailable": min_available},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": min_available, "expectedPods": expected}}


# ---------------------------------------------------------------------------------------------
# kubernetes-sigs/karpenter#1789: a node past expireAfter (720h) has been draining for two days,
# "Failed to drain node, 8 pods are waiting to be evicted" (x1561); the NodePool sets no
# terminationGracePeriod. Here the pods are a Deployment's three replicas under a PDB with
# minAvailable 3: it never allows an eviction.
_nt_n = "ip-10-6-14-201.us-west-2.compute.internal"
_nt_since = "2026-11-21T09:12:00Z"
_nt_web = [_nt_pod("web-7d9c8b6f5-%s" % s, "shop", _nt_n, {"app": "web"}) for s in ("b4n2x", "h8k1q", "z3m7c")]
_nt_ds = _nt_pod("aws-node-9xq2w", "kube-system", _nt_n, {"k8s-app": "aws-node"}, owner=("DaemonSet", "aws-node"))
write("expired-node-drain-blocked-by-pdb", bundle(
    "A Karpenter node past its NodePool's expireAfter has been deleting for two days (kubernetes-sigs/karpenter#1789: FailedDraining \"pods are waiting to be evicted\" x1561). The NodePool sets no terminationGracePeriod, and the node's pods are the three replicas of shop/web, whose PodDisruptionBudget requires all three (minAvailable 3): the eviction API refuses each eviction, and the drain never ends.",
    overrides=[fact("nodeClaims", [_nt_deleting(_nc_claim("default-exp77", _nt_n), _nt_since,
                                                conditions=[("Drained", "Unknown", "Draining")])]),
               fact({"node": {"name": _nt_n}}, _nt_node(_nt_n, _nt_since)),
               fact({"nodePods": {"node": _nt_n}}, _nt_web + [_nt_ds]),
               fact("podDisruptionBudgets", [_nt_pdb("web", "shop", {"app": "web"}, 3, 3, 3, 0)]),
               fact({"scheduledPods": {"namespace": "shop", "labelSelector": "app=web"}}, _nt_web)]),
    # One root: the PDB that can never allow a disruption (KD4104, a setting); the node stuck
    # behind it (KD4102) is its consequence.
    ["KD4102", "KD4104"], roots=[])

# aws/karpenter-provider-aws#9238: an underutilized node's NodeClaim is deleting, the drain is
# done, and VolumesDetached stays Unknown (AwaitingVolumeDetachment): a VolumeAttachment whose
# claim was deleted with its pod is still bound to the node, and no terminationGracePeriod ends
# the wait.
_nt_n = "ip-10-6-22-48.us-west-2.compute.internal"
_nt_since = "2026-11-23T07:27:08Z"
_nt_va = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
          "metadata": {"name": "csi-4f1c2e9a7b3d5c8e6f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5", "uid": "e4f5a6b7-va"},
          "spec": {"attacher": "ebs.csi.aws.com", "nodeName": _nt_n, "source": {"persistentVolumeName": "pvc-0b6e2a4c-93d1-4f7e-8a25-6c1d9e3f7b20"}},
          "status": {"attached": True}}
write("leaked-volume-attachment-blocks-termination", bundle(
    "A consolidated node's NodeClaim has been deleting for over two hours (aws/karpenter-provider-aws#9238): its pods are gone (Drained=True), but VolumesDetached stays Unknown (AwaitingVolumeDetachment) because a VolumeAttachment whose claim was deleted is still bound to the node. The NodePool sets no terminationGracePeriod, so Karpenter waits for it forever.",
    overrides=[fact("nodeClaims", [_nt_deleting(_nc_claim("default-vol42", _nt_n), _nt_since,
                                                conditions=[("Drained", "True", "Drained"), ("VolumesDetached", "Unknown", "AwaitingVolumeDetachment")])]),
               fact({"node": {"name": _nt_n}}, _nt_node(_nt_n, _nt_since)),
               fact({"nodePods": {"node": _nt_n}}, [_nt_pod("aws-node-k2w8p", "kube-system", _nt_n, {"k8s-app": "aws-node"}, owner=("DaemonSet", "aws-node"))]),
               fact("volumeAttachments", [_nt_va])]),
    ["KD4102"], roots=["KD4102"])

# Quiet (docs/disruption.md, KD4102's quiet shapes): a node deleting for 40 minutes under a
# terminationGracePeriod of 1h, whose forced deletion time (10:20) has not come, held by a pod
# annotated do-not-disrupt; and a node deleting for 5 minutes, still draining; and a PDB that
# allows a disruption (aws/karpenter-provider-aws#7586's negative control).
_nt_n1 = "ip-10-6-30-9.us-west-2.compute.internal"
_nt_n2 = "ip-10-6-30-10.us-west-2.compute.internal"
write("healthy-nodes-draining-within-bounds", bundle(
    "Healthy: one node has been deleting for 40 minutes under the NodePool's terminationGracePeriod of 1h, held by a batch pod annotated karpenter.sh/do-not-disrupt, and Karpenter will delete what is left at 10:20; another has been draining for 5 minutes, its PodDisruptionBudget allowing one eviction at a time.",
    overrides=[fact("nodeClaims", [
        _nt_deleting(_nc_claim("default-tgp01", _nt_n1), "2026-11-23T09:20:00Z", tgp="1h0m0s", forced_at="2026-11-23T10:20:00Z",
                     conditions=[("Drained", "Unknown", "Draining")]),
        _nt_deleting(_nc_claim("default-drn02", _nt_n2), "2026-11-23T09:55:00Z", conditions=[("Drained", "Unknown", "Draining")])]),
        fact({"node": {"name": _nt_n1}}, _nt_node(_nt_n1, "2026-11-23T09:20:00Z")),
        fact({"node": {"name": _nt_n2}}, _nt_node(_nt_n2, "2026-11-23T09:55:00Z")),
        fact({"nodePods": {"node": _nt_n1}}, [_nt_pod("report-29371-x8k2d", "batch", _nt_n1, {"job-name": "report-29371"}, owner=("Job", "report-29371"),
                                                      annotations={"karpenter.sh/do-not-disrupt": "true"})]),
        fact({"nodePods": {"node": _nt_n2}}, [_nt_pod("web-7d9c8b6f5-q5r6s", "shop", _nt_n2, {"app": "web"})]),
        fact("podDisruptionBudgets", [_nt_pdb("web", "shop", {"app": "web"}, 2, 3, 3, 1)])]),
    [])

# ---------------------------------------------------------------------------------------------
# KD4104. aws/karpenter-provider-aws#7842: a budget {nodes: 20%, reasons: [Drifted], schedule:
# "0 7 * * *", duration: 7h} written to allow drift only from 07:00 to 14:00 UTC; it is the only
# budget for Drifted, so outside the window drift is unlimited (the thread's nodes drifted all
# at once). consolidateAfter 0s with WhenEmptyOrUnderutilized, as in the thread; consolidation
# keeps its own always-active budget.
_nt_pool = nodepool()
_nt_pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s",
                                  "budgets": [{"nodes": "20%", "reasons": ["Drifted"], "schedule": "0 7 * * *", "duration": "7h"},
                                              {"nodes": "10%", "reasons": ["Empty", "Underutilized"]}]}
write("budget-window-leaves-drift-unlimited", bundle(
    "The NodePool's only budget for Drifted is {nodes: 20%, schedule: \"0 7 * * *\", duration: 7h} (aws/karpenter-provider-aws#7842), written to allow drift from 07:00 to 14:00 UTC. A budget limits only while its schedule is active, so for the other 17 hours drift is unlimited: every node drifted by an AMI release can be replaced at once.",
    nps=[_nt_pool]),
    ["KD4104"], exit_code=0, roots=[])

# Healthy: Karpenter's documented business-hours freeze ({nodes: "0", schedule: "0 9 * * mon-fri",
# duration: 8h}) beside an always-active {nodes: 10%}, and a second pool frozen on weekends only.
_nt_pool = nodepool()
_nt_pool["spec"]["disruption"]["budgets"] = [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}, {"nodes": "10%"}]
_nt_pool2 = nodepool("batch")
_nt_pool2["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m",
                                   "budgets": [{"nodes": "0", "schedule": "0 0 * * sat", "duration": "48h"}]}
write("healthy-budgets-freeze-windows", bundle(
    "Healthy: the default NodePool freezes disruption during business hours with a scheduled nodes: \"0\" budget beside an always-active nodes: 10% (Karpenter's documented example); a batch pool is frozen on weekends only, by design unlimited otherwise.",
    nps=[_nt_pool2, _nt_pool]),  # listed by name, as the API server lists them
    [])
