# Why a pod stays Pending (KD8001-KD8003): pods Karpenter should place, against NodePools,
# judged as Karpenter's scheduler does (docs/scheduling.md). Each broken scenario follows a
# public thread; the healthy ones are the cases a naive check would flag.
# Names local to this file start with _sc_.

def _sc_pod(name, ns="shop", owner=("ReplicaSet", "web-5d8f7c9b6d"), since="2026-11-23T09:40:00Z",
            requests=None, node_selector=None, affinity=None, tolerations=None, volumes=None):
    """A Pending pod the scheduler marked Unschedulable at `since`."""
    meta = {"name": name, "namespace": ns, "uid": "5c0d%s" % hashlib.sha256(name.encode()).hexdigest()[:28],
            "creationTimestamp": "2026-11-23T09:39:58Z"}
    if owner:
        kind, oname = owner
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": oname, "uid": "7a1b", "controller": True}]
        if kind == "ReplicaSet":
            meta["labels"] = {"app": oname.rsplit("-", 1)[0], "pod-template-hash": oname.rsplit("-", 1)[1]}
    spec = {"containers": [{"name": "app", "image": "registry.example.com/app:1.4", "env": [{"name": "DB_PASSWORD", "value": "hunter2"}],
                            "resources": {"requests": requests or {"cpu": "500m", "memory": "512Mi"}}}],
            "schedulerName": "default-scheduler"}
    if node_selector: spec["nodeSelector"] = node_selector
    if affinity: spec["affinity"] = affinity
    if tolerations: spec["tolerations"] = tolerations
    if volumes: spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", "lastTransitionTime": since}]}}

def _sc_event(pod, reason, message, kind="Warning", at="2026-11-23T09:58:00Z"):
    n = pod["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "%s.18a2%s" % (n, hashlib.sha256((n + reason).encode()).hexdigest()[:12]),
            "namespace": pod["metadata"]["namespace"], "uid": "e1%s" % hashlib.sha256((n + reason).encode()).hexdigest()[:30]},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": n, "namespace": pod["metadata"]["namespace"]},
            "reason": reason, "message": message, "type": kind, "count": 4, "firstTimestamp": "2026-11-23T09:40:05Z",
            "lastTimestamp": at, "source": {"component": "karpenter"}}

def _sc_write(name, desc, pods, failing, nps=None, events=(), extra=(), logs=None, **kw):
    b = bundle(desc, nps=nps, logs=logs, overrides=[fact("pendingPods", pods), fact({"events": {"kind": "Pod", "namespace": None}}, list(events))] + list(extra))
    write(name, b, failing, **kw)

# aws/karpenter-provider-aws#7535: a nodeSelector on a custom label the NodePool never declares.
# Karpenter 1.0.6 words it per NodePool ("incompatible with nodepool ..."); three replicas wait.
_sc_web = [_sc_pod("web-5d8f7c9b6d-%s" % s, node_selector={"workload": "batch"}) for s in ("2xkqp", "8mzrt", "v4n7c")]
_sc_write("pending-nodeselector-undeclared-label",
    "Three replicas of Deployment shop/web select nodeSelector workload=batch; the only NodePool neither requires nor labels `workload`, so Karpenter says \"label \\\"workload\\\" does not have known values\" (aws/karpenter-provider-aws#7535).",
    _sc_web, ["KD8001", "KD1009"],
    events=[_sc_event(_sc_web[0], "FailedScheduling", "Failed to schedule pod, incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"125m\",\"pods\":\"2\"}, incompatible requirements, label \"workload\" does not have known values")],
    # The provisioner's own line (v1.0.6 format), which KD1009 ties to KD8001.
    logs={"karpenter-6d9f7c8b5d-7xk2p": HEALTHY_LOG + json.dumps({"level": "ERROR", "time": "2026-11-23T09:58:01.204Z", "logger": "controller",
        "message": "could not schedule pod", "commit": "6174c75", "controller": "provisioner", "namespace": "", "name": "", "reconcileID": "0c2b9d1e-5f3a-4c7e-9b8d-2a6e4f1c3d5b",
        "Pod": {"name": "web-5d8f7c9b6d-2xkqp", "namespace": "shop"},
        "error": "incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"125m\",\"pods\":\"2\"}, incompatible requirements, label \"workload\" does not have known values"}) + "\n"}, roots=["KD8001"])

# aws/karpenter-provider-aws#5975: a Spark executor asking 5.8 CPU and 46Gi; the spark NodePool
# taints its nodes spark=yes:NoSchedule and the pod has no toleration; the default NodePool
# allows only large and xlarge instances, too small for it.
_sc_spark_pool = nodepool("spark")
_sc_spark_pool["spec"]["template"]["spec"]["taints"] = [{"key": "spark", "value": "yes", "effect": "NoSchedule"}]
_sc_small = nodepool()
_sc_small["spec"]["template"]["spec"]["requirements"].append({"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["large", "xlarge"]})
_sc_exec = [_sc_pod("spark-exec-1", ns="spark", owner=("Pod", "spark-driver"), requests={"cpu": "5800m", "memory": "46Gi"})]
_sc_write("pending-pod-too-large-for-untainted-pool",
    "A Spark executor asks 5.8 CPU and 46Gi: the spark NodePool's taint spark=yes:NoSchedule is not tolerated, and the default NodePool allows only large and xlarge types, the largest of which offers 14Gi to pods (aws/karpenter-provider-aws#5975).",
    _sc_exec, ["KD8002"], nps=[_sc_small, _sc_spark_pool],
    events=[_sc_event(_sc_exec[0], "FailedScheduling", "Failed to schedule pod, did not tolerate taint (taint=spark=yes:NoSchedule); no instance type has enough resources")], roots=["KD8002"])

# aws/karpenter-provider-aws#4192: an EBS volume in a zone the EC2NodeClass has no subnet in.
_sc_pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-pg-0", "namespace": "db"},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "volumeName": "pvc-1f2e3d4c", "resources": {"requests": {"storage": "100Gi"}}},
           "status": {"phase": "Bound"}}
_sc_pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-1f2e3d4c"},
          "spec": {"capacity": {"storage": "100Gi"}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d4e5f60718"},
                   "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2c"]}]}]}},
                   "storageClassName": "gp3"}, "status": {"phase": "Bound"}}
_sc_gp3 = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com",
           "volumeBindingMode": "WaitForFirstConsumer", "parameters": {"type": "gp3"}}
_sc_pg = [_sc_pod("pg-0", ns="db", owner=("StatefulSet", "pg"), volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-pg-0"}}])]
_sc_write("pending-volume-in-zone-without-subnet",
    "StatefulSet db/pg's volume is an EBS volume in us-west-2c, bound before the cluster's subnets were narrowed to us-west-2a and us-west-2b; the pod can only run in us-west-2c, where no EC2NodeClass subnet is (aws/karpenter-provider-aws#4192).",
    _sc_pg, ["KD8003"],
    extra=[fact("persistentVolumeClaims", [_sc_pvc]), fact("persistentVolumes", [_sc_pv]), fact("storageClasses", [_sc_gp3])], roots=["KD8003"])

# kubernetes-sigs/karpenter#2657: the NodePool is at its cpu limit; the pod waits behind it.
_sc_full = nodepool()
_sc_full["spec"]["limits"] = {"cpu": "16"}
_sc_full["status"]["resources"] = {"cpu": "16", "memory": "64Gi", "nodes": "2", "pods": "40"}
_sc_api = [_sc_pod("api-6b7c8d9e0f-k2l3m", owner=("ReplicaSet", "api-6b7c8d9e0f"))]
_sc_write("pending-behind-nodepool-limit",
    "The default NodePool holds 16 of its 16 CPUs; a pod of Deployment shop/api waits, and Karpenter says \"all available instance types exceed limits for nodepool\" (kubernetes-sigs/karpenter#2657).",
    _sc_api, ["KD4002", "KD8001"], nps=[_sc_full],
    extra=[fact("nodeClaims", [claim("default-a1b2c"), claim("default-d3e4f")])],
    events=[_sc_event(_sc_api[0], "FailedScheduling", "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=default)")], roots=["KD4002"])

# Healthy: a pod Unschedulable for 3 minutes, nominated to a NodeClaim launched a minute ago.
_sc_nominated = [_sc_pod("web-5d8f7c9b6d-9qwer", since="2026-11-23T09:57:00Z")]
_sc_launching = claim("default-n0m1n", registered=("Unknown", "NodeNotFound", "Node not registered with cluster"),
                      initialized=("Unknown", "NodeNotFound", "Node not registered with cluster"), since="2026-11-23T09:59:00Z")
_sc_write("healthy-pending-nominated-to-launching-nodeclaim",
    "A pod has been Unschedulable for 3 minutes and Karpenter nominated it to NodeClaim default-n0m1n, launched a minute ago and not registered yet: Karpenter is serving it.",
    _sc_nominated, [], extra=[fact("nodeClaims", [_sc_launching])],
    events=[_sc_event(_sc_nominated[0], "Nominated", "Pod should schedule on: nodeclaim/default-n0m1n", kind="Normal")])

# Healthy: a custom label declared only as a NodePool template label, a tolerated taint, an
# empty-key Exists toleration, a fresh pod and a DaemonSet's pod.
_sc_team = nodepool("data")
_sc_team["spec"]["template"]["metadata"] = {"labels": {"team": "data"}}
_sc_team["spec"]["template"]["spec"]["taints"] = [{"key": "team", "value": "data", "effect": "NoSchedule"}]
_sc_ok = [_sc_pod("etl-7f8e9d0c1b-a1s2d", ns="data", owner=("ReplicaSet", "etl-7f8e9d0c1b"), node_selector={"team": "data"},
                  tolerations=[{"key": "team", "operator": "Equal", "value": "data", "effect": "NoSchedule"}]),
          _sc_pod("batch-x1", ns="data", owner=("Job", "batch"), tolerations=[{"operator": "Exists"}],
                  affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["s390x"]}]},
                      {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}),
          _sc_pod("web-5d8f7c9b6d-fresh", since="2026-11-23T09:59:30Z", node_selector={"workload": "batch"}),
          _sc_pod("node-exporter-abcde", ns="monitoring", owner=("DaemonSet", "node-exporter"), node_selector={"workload": "batch"})]
_sc_write("healthy-pending-pods-servable",
    "Pending pods Karpenter can serve or does not provision for: one selects a label the data NodePool sets as a template label and tolerates its taint; one tolerates everything and has two node-affinity terms, the second of which fits; one has been Unschedulable for 30 seconds; one belongs to a DaemonSet.",
    _sc_ok, [], nps=[_sc_team, nodepool()])

# Topology spread on zones (KD8003). Karpenter counts every zone a NodePool's requirement names,
# subnet or not, and the zone of every node the pod could run on; the emptiest zone sets the pace.
def _sc_running(name, node, ns="shop", labels=None):
    """A bound pod as the spread's list returns it (slimmed as karpdoctor slims it)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": "9b1e%s" % hashlib.sha256(name.encode()).hexdigest()[:28],
            "labels": labels or {"app": "web", "pod-template-hash": "5d8f7c9b6d"}, "creationTimestamp": "2026-11-23T08:00:00Z"},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}

def _sc_node(name, zone, labels=None):
    l = {"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": zone}
    l.update(labels or {"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default"})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": l}, "spec": {}}

_SC_SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": {"app": "web"}}}

def _sc_spread_pod(name, **kw):
    p = _sc_pod(name, **kw)
    p["spec"]["topologySpreadConstraints"] = [_SC_SPREAD]
    p["status"]["conditions"][0]["message"] = "0/5 nodes are available: 2 node(s) didn't match pod topology spread constraints, 3 node(s) didn't match pod topology spread constraints (missing required label)."
    return p

_SC_N_A, _SC_N_B = "ip-192-168-70-21.us-west-2.compute.internal", "ip-192-168-101-7.us-west-2.compute.internal"

# aws/karpenter-provider-aws#3239: the NodePool requires zones a, b and c, the EC2NodeClass has
# subnets only in a and b. One replica runs in each of a and b; the third may go only to the
# empty zone c (maxSkew 1), where Karpenter has no subnet, so it waits.
_sc_three = nodepool()
_sc_three["spec"]["template"]["spec"]["requirements"].append(
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a", "us-west-2b", "us-west-2c"]})
_sc_spread_pending = [_sc_spread_pod("web-5d8f7c9b6d-x7y8z")]
_sc_write("pending-spread-zone-without-subnet",
    "Deployment shop/web spreads over zones with maxSkew 1 (DoNotSchedule). The default NodePool requires us-west-2a, us-west-2b and us-west-2c, but the EC2NodeClass's subnets are only in the first two; with one replica in each, the third may go only to us-west-2c, which Karpenter counts as an empty zone and cannot launch in (aws/karpenter-provider-aws#3239).",
    _sc_spread_pending, ["KD8003"], nps=[_sc_three],
    events=[_sc_event(_sc_spread_pending[0], "FailedScheduling", "Failed to schedule pod, incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"125m\",\"pods\":\"2\"}, no instance type met the scheduling requirements or had a required offering, requirements=karpenter.k8s.aws/instance-category In [c m r], karpenter.sh/capacity-type In [on-demand], karpenter.sh/nodepool In [default], kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [us-west-2c]")],
    extra=[fact({"scheduledPods": {"namespace": "shop", "labelSelector": "app=web"}},
                [_sc_running("web-5d8f7c9b6d-a1a1a", _SC_N_A), _sc_running("web-5d8f7c9b6d-b2b2b", _SC_N_B)]),
           fact({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}},
                [_sc_node(_SC_N_A, "us-west-2a"), _sc_node(_SC_N_B, "us-west-2b")])], roots=["KD8003"])

# Healthy: the same spread where Karpenter can follow it. Zones a and b hold one replica each;
# a managed node group's node sits in us-west-2c, where Karpenter has no subnet. Counted, that
# empty zone would be the only one allowed; but the pods select karpenter.sh/nodepool=default,
# so the node does not count (nodeAffinityPolicy Honor) and a and b are both allowed.
_sc_spread_ok = [_sc_spread_pod("web-5d8f7c9b6d-k9l8m", node_selector={"karpenter.sh/nodepool": "default"})]
_sc_write("healthy-pending-spread-servable",
    "A replica of Deployment shop/web spreads over zones with maxSkew 1 and selects karpenter.sh/nodepool=default: one replica runs in each of us-west-2a and us-west-2b, so the next may go to either. A managed node group's node in us-west-2c, where Karpenter has no subnet, does not count because the pod could not run on it; counted, its empty zone would be the only one allowed.",
    _sc_spread_ok, [],
    extra=[fact({"scheduledPods": {"namespace": "shop", "labelSelector": "app=web"}},
                [_sc_running("web-5d8f7c9b6d-a1a1a", _SC_N_A), _sc_running("web-5d8f7c9b6d-b2b2b", _SC_N_B)]),
           fact({"nodes": {"labelSelector": "topology.kubernetes.io/zone"}},
                [_sc_node(_SC_N_A, "us-west-2a"), _sc_node(_SC_N_B, "us-west-2b"),
                 _sc_node("ip-10-0-140-3.us-west-2.compute.internal", "us-west-2c", {"eks.amazonaws.com/nodegroup": "system"})])])
