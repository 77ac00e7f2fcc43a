# Pending pods beside EKS Auto Mode (issue 32; docs/automode.md §9). Needs automode.py's _am_*
# helpers and scheduling.py's _sc_* ones, so it sorts after both.

# Healthy: AWS's migration from Karpenter to Auto Mode moves a workload by giving it the
# nodeSelector eks.amazonaws.com/compute-type: auto. Karpenter's own pool cannot take it, Auto
# Mode's general-purpose pool can; the pod waits for Auto Mode's node, not for Karpenter, and
# KD8001 must not call it unserved (before issue 32 it did: only Karpenter's pool was judged).
_sam_pods = [_sc_pod("web-5d8f7c9b6d-%s" % s, node_selector={"eks.amazonaws.com/compute-type": "auto"}) for s in ("4kq2x", "9vm3c")]
_b = bundle(
    "Healthy: Karpenter 1.8.1 (without its interruption queue) runs beside EKS Auto Mode's general-purpose pool, and two replicas of Deployment shop/web, moved to Auto Mode with nodeSelector eks.amazonaws.com/compute-type: auto as AWS's migration guide does it, wait for Auto Mode's node. Karpenter's own pool does not admit them; Auto Mode's may, so they are left out of KD8001 with a note.",
    nps=[nodepool(), _am_pool("general-purpose", ("amd64",))],
    overrides=[fact("autoNodeClasses", [_am_class()]), fact("pendingPods", _sam_pods),
               fact({"events": {"kind": "Pod", "namespace": None}}, [])])
_no_queue(_b)
_am_cluster(_b, pools=["general-purpose"], mode="API_AND_CONFIG_MAP")
write("healthy-auto-mode-pods-moving-to-auto-mode", _b, [])
