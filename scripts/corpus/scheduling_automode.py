# Pending pods beside EKS Auto Mode (issue 32; docs/auto-mode.md §9). Needs automode.py's _am_*
# helpers and scheduling.py's _sc_* ones, so it sorts after both.

# Healthy: AWS's migration from Karpenter to Auto Mode moves a workload by giving it the
# nodeSelector eks.amazonaws.com/compute-type: auto. Karpenter's own pool cannot take it, Auto
# Mode's general-purpose pool can; the pod waits for Auto Mode's node, not for Karpenter, and
# KD8001 must not call it unserved (before issue 32 it did: only Karpenter's pool was judged;
# now both kinds of pool are, each with its own node labels).
_sam_pods = [_sc_pod("web-5d8f7c9b6d-%s" % s, node_selector={"eks.amazonaws.com/compute-type": "auto"}) for s in ("4kq2x", "9vm3c")]
_b = bundle(
    "Healthy: Karpenter 1.8.1 (without its interruption queue) runs beside EKS Auto Mode's general-purpose pool, and two replicas of Deployment shop/web, moved to Auto Mode with nodeSelector eks.amazonaws.com/compute-type: auto as AWS's migration guide does it, wait for Auto Mode's node. Karpenter's own pool does not admit them; Auto Mode's does, so KD8001 finds them served.",
    nps=[nodepool(), _am_pool("general-purpose", ("amd64",))],
    overrides=[fact("autoNodeClasses", [_am_class()]), fact("pendingPods", _sam_pods),
               fact({"events": {"kind": "Pod", "namespace": None}}, [])])
_no_queue(_b)
_am_cluster(_b, pools=["general-purpose"], mode="API_AND_CONFIG_MAP")
write("healthy-auto-mode-pods-moving-to-auto-mode", _b, [])

# After the migration, Karpenter is gone and only Auto Mode runs; a workload still selects the
# self-managed provider's label karpenter.k8s.aws/instance-family, which AWS's migration guide
# maps to eks.amazonaws.com/instance-family. Auto Mode's nodes never carry the old label, so the
# pods stay Pending with no NodePool able to take them: the workload's own selector is the cause.
_sam_old = [_sc_pod("api-7c9d8b6f5-%s" % s, owner=("ReplicaSet", "api-7c9d8b6f5"),
                    node_selector={"karpenter.k8s.aws/instance-family": "m5"}) for s in ("2xk9p", "7qz4m")]
_b = _am_alone(
    "On EKS Auto Mode alone (Karpenter uninstalled after the migration), Deployment shop/api still selects nodes by karpenter.k8s.aws/instance-family: m5, the self-managed provider's label. AWS's migration guide maps it to eks.amazonaws.com/instance-family; Auto Mode's nodes carry only that, so both replicas stay Pending with no NodePool able to take them.",
    _am_pools, [_am_class()],
    extra=[fact("pendingPods", _sam_old), fact({"events": {"kind": "Pod", "namespace": None}}, [])])
write("automode-pods-select-karpenter-provider-label", _b, ["KD8001"], roots=["KD8001"], skipped=_am_skipped)

# Healthy: the same workload with the label renamed as the guide says: Auto Mode's
# general-purpose pool launches c, m and r types of generation 5 or newer, m5 among them.
_sam_new = [_sc_pod("api-7c9d8b6f5-%s" % s, owner=("ReplicaSet", "api-7c9d8b6f5"),
                    node_selector={"eks.amazonaws.com/instance-family": "m5"}) for s in ("2xk9p", "7qz4m")]
_b = _am_alone(
    "Healthy: on EKS Auto Mode alone, Deployment shop/api selects nodes by eks.amazonaws.com/instance-family: m5 (the label AWS's migration guide gives for karpenter.k8s.aws/instance-family); Auto Mode's general-purpose pool launches m5, so KD8001 finds both replicas served.",
    _am_pools, [_am_class()],
    extra=[fact("pendingPods", _sam_new), fact({"events": {"kind": "Pod", "namespace": None}}, [])])
write("healthy-auto-mode-pods-select-auto-mode-label", _b, [], skipped=_am_skipped)
