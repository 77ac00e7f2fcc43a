# KD4101 held by nominations. aws/karpenter-provider-aws#7521: a node past expireAfter is deleting,
# held by a StatefulSet's pod with a volume and karpenter.sh/do-not-disrupt; each provisioning pass
# places that pod on another node and nominates it, so that node shows "Node is nominated for a
# pending pod" again and again and its drift never goes ahead. One root cause (the stuck deletion,
# KD4102); the drifted node is its consequence. Named to sort after node_termination.py, whose
# helpers it uses.
_nom_exp = "ip-10-7-44-21.us-west-2.compute.internal"
_nom_dr = "ip-10-7-44-22.us-west-2.compute.internal"
_nom_since = "2026-11-23T06:40:00Z"
_nom_ledger = _nt_pod("ledger-0", "payments", _nom_exp, {"app": "ledger"}, owner=("StatefulSet", "ledger"),
                      annotations={"karpenter.sh/do-not-disrupt": "true"})
_nom_blocked = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": _nom_dr + ".18b0c1d2e3f47521", "namespace": "default", "uid": "0a1b2c3d-7521-4e5f-8a9b-0c1d2e3f4a5b"},
                "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": _nom_dr},
                "reason": "DisruptionBlocked", "type": "Normal", "count": 61,
                "message": "Node is nominated for a pending pod",
                "firstTimestamp": "2026-11-23T07:05:00Z", "lastTimestamp": "2026-11-23T09:58:00Z", "source": {"component": "karpenter"}}
_nom_nominated = {"apiVersion": "v1", "kind": "Event",
                  "metadata": {"name": "ledger-0.18b0c1d2e3f47522", "namespace": "payments", "uid": "0a1b2c3d-7522-4e5f-8a9b-0c1d2e3f4a5b"},
                  "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "ledger-0", "namespace": "payments"},
                  "reason": "Nominated", "type": "Normal", "count": 183,
                  "message": "Pod should schedule on: nodeclaim/default-nm22, node/" + _nom_dr,
                  "firstTimestamp": "2026-11-23T06:41:00Z", "lastTimestamp": "2026-11-23T09:59:30Z", "source": {"component": "karpenter"}}
_nom_pool = nodepool()
_nom_pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "10m",
                                   "budgets": [{"nodes": "5"}]}
write("drift-held-by-nominations-of-a-stuck-node", bundle(
    "A node drifted three hours ago is never replaced (aws/karpenter-provider-aws#7521): Karpenter's DisruptionBlocked event on it (x61) says it is nominated for a pending pod. The pod is payments/ledger-0, a StatefulSet's pod with karpenter.sh/do-not-disrupt on an expired node that has been deleting since 06:40 without a terminationGracePeriod; each pass places it on the drifted node again (Nominated x183), so the drifted node is always nominated. The NodePool's budget of 5 nodes is not what holds it. One cause: the stuck deletion.",
    nps=[_nom_pool],
    overrides=[fact("nodeClaims", [_nt_deleting(_nc_claim("default-nm21", _nom_exp), _nom_since, conditions=[("Drained", "Unknown", "Draining")]),
                                   _nt_wanted(_nc_claim("default-nm22", _nom_dr), drifted="2026-11-23T07:00:00Z")]),
               fact({"node": {"name": _nom_exp}}, _nt_node(_nom_exp, _nom_since)),
               fact({"node": {"name": _nom_dr}}, _nc_node(_nom_dr)),
               fact({"nodePods": {"node": _nom_exp}}, [_nom_ledger, _nt_ds_pod(_nom_exp, "n7m5a")]),
               fact({"nodePods": {"node": _nom_dr}}, [_nt_pod("web-7d9c8b6f5-nm01", "shop", _nom_dr, {"app": "web"}), _nt_ds_pod(_nom_dr, "n7m5b")]),
               fact({"eventsByReason": {"kind": "Node", "reason": "DisruptionBlocked"}}, [_nom_blocked]),
               fact({"eventsByReason": {"kind": "Pod", "reason": "Nominated"}}, [_nom_nominated])]),
    ["KD4101", "KD4102"], roots=["KD4102"])

# Healthy on Karpenter 1.12 (kubernetes-sigs/karpenter#2874 added durations): a node an AMI
# release drifted three hours ago still runs a batch coordinator whose pod template asks for
# karpenter.sh/do-not-disrupt: "2h". The pod started at 09:30, so it is protected until 11:30 and
# the drift goes ahead then: a wait that ends by itself, said under -v, not a finding.
_dur_n = "ip-10-7-45-31.us-west-2.compute.internal"
_dur_pod = _nt_pod("coordinator-6c9d7f8b5-q2w3e", "batch", _dur_n, {"app": "coordinator"},
                   owner=("ReplicaSet", "coordinator-6c9d7f8b5"), annotations={"karpenter.sh/do-not-disrupt": "2h"})
_dur_pod["status"]["startTime"] = "2026-11-23T09:30:00Z"
# The CRDs at 1.12: EC2NodeClass gained placementGroupSelector in 1.11.
_dur_crds = {n: crd(n, g, k, p, fields=SPEC_FIELDS.get(p, []) + (["placementGroupSelector"] if p == "ec2nodeclasses" else []))
             for n, g, k, p in CRDS + EXTRA_CRDS}
write("healthy-drift-waits-for-do-not-disrupt-duration", bundle(
    "Healthy on Karpenter 1.12: a node drifted three hours ago still runs a pod annotated karpenter.sh/do-not-disrupt: \"2h\" (a duration, which 1.12 added) that started at 09:30. It is protected until 11:30, and the drift goes ahead then.",
    crds=_dur_crds,
    dep=[deployment(image="public.ecr.aws/karpenter/controller:1.12.0@sha256:1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d")],
    overrides=[fact("nodeClaims", [_nt_wanted(_nc_claim("default-du31", _dur_n), drifted="2026-11-23T07:00:00Z")]),
               fact({"node": {"name": _dur_n}}, _nc_node(_dur_n)),
               fact({"nodePods": {"node": _dur_n}}, [_dur_pod, _nt_ds_pod(_dur_n, "d7u8r")])]),
    [])
