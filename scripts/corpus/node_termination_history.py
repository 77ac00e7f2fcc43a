# KD4103 over days: runs with --history keep a churn record (one sample per scheduled run: per
# NodePool, the NodeClaims that exist and how many were created since the run before), and the
# check judges how often each pool's nodes were replaced. Named to sort after
# node_termination.py, whose helpers (_nt_launched) it uses.

HISTORY_CM = "karpdoctor/karpdoctor-history"


def _hist_at(hours_before):
    """FIXTURE_TIME (2026-11-23T10:00:00Z) minus whole or half hours, as RFC 3339."""
    total = int(hours_before * 60)
    day, minute = 23, 10 * 60 - total
    while minute < 0:
        day, minute = day - 1, minute + 24 * 60
    return "2026-11-%02dT%02d:%02d:00Z" % (day, minute // 60, minute % 60)


def _hist_bundle(desc, pool, claims, samples, names):
    b = bundle(desc, nps=[pool],
               overrides=[fact("nodeClaims", claims),
                          fact({"churnHistory": {"configmap": HISTORY_CM}}, samples)]
               + [fact({"node": {"name": n}}, _nc_node(n)) for n in names])
    b["hints"]["history"] = HISTORY_CM
    return b


# kubernetes-sigs/karpenter#2388: a steady NodePool (expireAfter of 25 days, nodes ~90% full,
# no scaling) whose nodes Karpenter keeps replacing by consolidation with the same instance type:
# a node 3 days old replaced, thousands of pod evictions a day. Here the CronJob has run hourly
# for two days: the pool stays at 12 nodes, one NodeClaim is created and one goes every hour, and
# a third of the runs caught a node marked Underutilized. Two replacements per node per day,
# against one per 25 days that expireAfter asks for. The snapshot alone shows nothing wrong:
# consolidateAfter is 5m, and no node was consolidated minutes after its launch.
_hist_pool = nodepool()
_hist_pool["spec"]["template"]["spec"]["expireAfter"] = "600h"
_hist_pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m"}
_hist_names = ["ip-10-8-%d-%d.us-west-2.compute.internal" % (70 + i, 10 + i) for i in range(12)]
_hist_claims = []
for _i, _n in enumerate(_hist_names):
    _c = _nt_launched(_nc_claim("default-c%02d" % _i, _n), _hist_at(_i + 0.5))
    _c["spec"]["expireAfter"] = "600h"
    _hist_claims.append(_c)
_hist_samples = []
for _h in range(48, 0, -1):
    _p = {"size": 12}
    if _h != 48:
        _p["created"] = 1
    if _h % 3 == 0:
        _p["marked"] = {"Underutilized": 1}
    _hist_samples.append({"at": _hist_at(_h), "pools": {"default": _p}})
write("consolidation-churn-over-days", _hist_bundle(
    "A steady NodePool of 12 nodes (expireAfter 600h, consolidateAfter 5m) whose nodes Karpenter keeps replacing by consolidation (kubernetes-sigs/karpenter#2388): the hourly runs of the last two days kept by --history saw a NodeClaim created and another gone every hour with the pool's size unchanged, and a node marked Underutilized in a third of them. Two replacements per node per day, where expireAfter asks for one in 25 days.",
    _hist_pool, _hist_claims, _hist_samples, _hist_names),
    ["KD4103"], exit_code=0, roots=[])

# Healthy: the same shape scaling with its load. Hourly runs over two days; the pool grows from
# 6 nodes at night to 18 by day and shrinks again (consolidation marks nodes Empty as the load
# falls). Nodes come and go, but none is replaced: every interval only grows or only shrinks.
_hist_pool = nodepool()
_hist_pool["spec"]["template"]["spec"]["expireAfter"] = "600h"
_hist_pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m"}
_hist_sizes = [6, 6, 6, 6, 6, 6, 8, 10, 12, 14, 16, 18, 18, 18, 18, 18, 16, 14, 12, 10, 8, 6, 6, 6] * 2
_hist_samples = []
for _k, _h in enumerate(range(48, 0, -1)):
    _size = _hist_sizes[_k]
    _p = {"size": _size}
    if _k:
        _p["created"] = max(0, _size - _hist_sizes[_k - 1])
        if _size < _hist_sizes[_k - 1]:
            _p["marked"] = {"Empty": 2}
    _hist_samples.append({"at": _hist_at(_h), "pools": {"default": _p}})
# Now (10:00) the pool is at its night size, six nodes all older than the last run.
_hist_names = _hist_names[:6]
_hist_claims = []
for _i, _n in enumerate(_hist_names):
    _c = _nt_launched(_nc_claim("default-s%02d" % _i, _n), _hist_at(30 + _i))
    _c["spec"]["expireAfter"] = "600h"
    _hist_claims.append(_c)
write("healthy-history-scales-with-load", _hist_bundle(
    "Healthy: hourly runs with --history over two days show a NodePool growing from 6 nodes at night to 18 by day and shrinking again, consolidation marking the emptied nodes as the load falls. Nodes come and go with the load, but none is replaced: the pool only grows or only shrinks between runs.",
    _hist_pool, _hist_claims, _hist_samples, _hist_names),
    [])

# KD4102, a Node deleting without its NodeClaim. The workaround posted for NodeClaims stuck on
# their finalizer (Azure/karpenter-provider-azure#525: `kubectl patch nodeclaim … --type=json -p
# '[{"op": "remove", "path": "/metadata/finalizers"}]'`, applied to every deleting NodeClaim) was
# run on a claim whose Node was still draining (kubernetes-sigs/karpenter#2169's shape). The
# NodeClaim is gone; Karpenter's garbage collection terminated the instance and deleted the Node,
# whose karpenter.sh/termination finalizer now waits for a NodeClaim that no longer exists:
# node termination logs "failed to terminate node" and never removes it.
_orph_name = "ip-10-8-91-17.us-west-2.compute.internal"
_orph = _nc_node(_orph_name)
_orph["metadata"]["creationTimestamp"] = "2026-11-19T14:05:00Z"
_orph["metadata"]["deletionTimestamp"] = "2026-11-23T07:12:00Z"
_orph["metadata"]["finalizers"] = ["karpenter.sh/termination"]
_orph["spec"] = {"providerID": "aws:///us-west-2a/i-0a1b2c3d4e5f60917",
                 "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}
_orph["status"]["conditions"][0].update({"status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."})
_kept_name = "ip-10-8-91-18.us-west-2.compute.internal"
_kept = _nc_node(_kept_name)
_kept["spec"] = {"providerID": "aws:///us-west-2a/i-0a1b2c3d4e5f60918"}
_kept_claim = _nc_claim("default-kp18", _kept_name)
_kept_claim["status"]["providerID"] = "aws:///us-west-2a/i-0a1b2c3d4e5f60918"
write("node-deleting-without-nodeclaim", bundle(
    "A Node has been deleting for almost three hours with Karpenter's karpenter.sh/termination finalizer, and its NodeClaim is gone: someone removed the finalizers of every deleting NodeClaim (the workaround of Azure/karpenter-provider-azure#525) while this one's node was still draining. Karpenter's garbage collection terminated the instance and deleted the Node, but node termination finds no NodeClaim for it and never removes the finalizer.",
    overrides=[fact("nodeClaims", [_kept_claim]),
               fact({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}}, [_orph, _kept]),
               fact({"node": {"name": _kept_name}}, _kept)]),
    ["KD4102"], roots=["KD4102"])
