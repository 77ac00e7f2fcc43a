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
