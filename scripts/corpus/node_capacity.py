# Nodes that are up but that pods cannot use (docs/node-capacity.md): startup taints nobody
# removes (KD6004) and accelerators nobody registers (KD6005), each rebuilt from a public
# thread, and healthy shapes where both stay quiet. Names local to this file start with _nc_.
# Runs after broken_nodes.py (its _bn_gpu_catalog).

_NC_REG = "2026-11-23T09:30:00Z"   # registered 30 minutes before the bundle was recorded


def _nc_taint(key, effect, value=None):
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def _nc_claim(name, node_name, pool="default", itype="m5.large", initialized=("True", "Initialized", ""), since=_NC_REG,
              taints=(), startup=(), requests=None, capacity=None):
    c = claim(name, pool=pool, initialized=initialized, since=since, node_name=node_name, capacity=capacity)
    c["metadata"]["labels"]["node.kubernetes.io/instance-type"] = itype
    if taints:
        c["spec"]["taints"] = list(taints)
    if startup:
        c["spec"]["startupTaints"] = list(startup)
    if requests:
        c["spec"]["resources"] = {"requests": requests}
    return c


def _nc_node(name, pool="default", itype="m5.large", taints=(), allocatable=None, os_image="Amazon Linux 2023.6.20241212"):
    n = node(name, karpenter=True)
    n["metadata"]["labels"].update({"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": itype})
    n["metadata"]["creationTimestamp"] = _NC_REG
    if taints:
        n["spec"] = {"taints": list(taints)}
    n["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
                   "allocatable": allocatable or {"cpu": "1930m", "memory": "7075Mi", "pods": "29"},
                   "nodeInfo": {"osImage": os_image, "kubeletVersion": "v1.31.4-eks-aeac579", "architecture": "amd64",
                                "bootID": "", "containerRuntimeVersion": "containerd://1.7.23", "kernelVersion": "6.1.119-129.201.amzn2023.x86_64",
                                "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "systemUUID": ""}}
    return n


def _nc_ds(name, ns, image, tolerations, affinity=None, node_selector=None):
    spec = {"containers": [{"name": name, "image": image, "resources": {"requests": {"cpu": "10m"}}}], "tolerations": tolerations}
    if affinity:
        spec["affinity"] = affinity
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": ns, "uid": "d5e6f7a8-%s" % name},
            "spec": {"template": {"spec": spec}}}


def _nc_ds_pod(ds, node_name, suffix, ready=True, since="2026-11-23T09:31:00Z", waiting=None):
    cs = {"name": ds["metadata"]["name"], "ready": ready, "restartCount": 0 if ready else 6, "image": "", "imageID": ""}
    if waiting:
        cs["state"] = {"waiting": {"reason": waiting}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "%s-%s" % (ds["metadata"]["name"], suffix), "namespace": ds["metadata"]["namespace"], "uid": "p0d-%s" % suffix,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds["metadata"]["name"], "uid": ds["metadata"]["uid"], "controller": True}]},
            "spec": {"nodeName": node_name, "containers": [{"name": ds["metadata"]["name"]}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}],
                       "containerStatuses": [cs]}}


# The NVIDIA device plugin's Helm chart as installed with its defaults (values at 00f2a02): it
# selects only nodes labelled by Node Feature Discovery or nvidia.com/gpu.present, and tolerates
# only CriticalAddonsOnly and nvidia.com/gpu.
_NC_NVDP_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}]},
    {"matchExpressions": [{"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In", "values": ["NVIDIA"]}]},
    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}}
_NC_NVDP_TOLERATIONS = [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
_NC_GPU_TAINT = _nc_taint("nvidia.com/gpu", "NoSchedule", "true")
_NC_CCM = _nc_taint("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", "true")

# ---------------------------------------------------------------------------------------------
# aws/karpenter-provider-aws#7426 and #8106: a node Ready for 30 minutes keeps
# node.cloudprovider.kubernetes.io/uninitialized; it runs only kube-proxy and aws-node, and the
# maintainers answer that the cloud controller manager (run by EKS) removes it, not Karpenter.
_nc_n = "ip-172-16-76-204.us-west-2.compute.internal"
_nc_c = _nc_claim("default-mnxjv", _nc_n, initialized=("Unknown", "KnownEphemeralTaintsExist",
                  "KnownEphemeralTaint \"node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule\" still exists"))
write("node-cloud-provider-taint-stays", bundle(
    "A Karpenter node has been Ready for 30 minutes and still carries node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule (aws/karpenter-provider-aws#7426, #8106): the cloud node controller that EKS runs never initialized it, so the NodeClaim stays Initialized=Unknown (KnownEphemeralTaintsExist) and pods wait. Nothing in the cluster removes that taint.",
    overrides=[fact("nodeClaims", [_nc_c]), fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, taints=[_NC_CCM]))]),
    ["KD6003", "KD6004"], roots=["KD6004"])

# ---------------------------------------------------------------------------------------------
# kubernetes-sigs/karpenter#2187 ("DisruptionBlocked: Node isn't initialized"): a JupyterHub GPU
# NodePool with the startup taint wait-for-node-ready, which nothing removes, and the pool taints
# hub.jupyter.org/node-purpose=user and nvidia.com/gpu; the NVIDIA device plugin installed from
# its chart's defaults neither tolerates the JupyterHub taint nor selects Karpenter's nodes.
# Two causes: nothing removes the startup taint (KD6004), and nothing registers the GPU (KD6005).
_nc_n = "ip-10-0-142-17.us-west-2.compute.internal"
_nc_pool_taints = [_nc_taint("hub.jupyter.org/node-purpose", "NoSchedule", "user"), _NC_GPU_TAINT]
_nc_startup = [_nc_taint("wait-for-node-ready", "NoSchedule")]
_nc_pool = nodepool("gpu-user")
_nc_pool["spec"]["template"]["metadata"] = {"labels": {"hub.jupyter.org/node-purpose": "user", "dedicated": "gpu"}}
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g"]}]
_nc_pool["spec"]["template"]["spec"]["taints"] = _nc_pool_taints
_nc_pool["spec"]["template"]["spec"]["startupTaints"] = _nc_startup
_nc_c = _nc_claim("gpu-user-7kq2w", _nc_n, pool="gpu-user", itype="g5.xlarge", taints=_nc_pool_taints, startup=_nc_startup,
                  initialized=("Unknown", "StartupTaintsExist", "StartupTaint \"wait-for-node-ready:NoSchedule\" still exists"),
                  requests={"cpu": "1100m", "memory": "4Gi", "nvidia.com/gpu": "1", "pods": "6"},
                  capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"})
_nc_nd = _nc_node(_nc_n, pool="gpu-user", itype="g5.xlarge", taints=_nc_startup + _nc_pool_taints,
                  allocatable={"cpu": "3920m", "memory": "14981Mi", "pods": "58"})
_nc_nd["metadata"]["labels"].update({"hub.jupyter.org/node-purpose": "user", "dedicated": "gpu"})
_nc_nvdp = _nc_ds("nvdp-nvidia-device-plugin", "nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                  _NC_NVDP_TOLERATIONS, affinity=_NC_NVDP_AFFINITY)
write("gpu-startup-taint-no-remover", bundle(
    "A JupyterHub GPU NodePool (kubernetes-sigs/karpenter#2187) declares the startup taint wait-for-node-ready, which nothing removes, beside the taints hub.jupyter.org/node-purpose=user and nvidia.com/gpu. The NVIDIA device plugin, installed from its chart's defaults, tolerates neither the JupyterHub taint nor selects nodes without Node Feature Discovery labels. The g5 node is Ready for 30 minutes, the NodeClaim stays Initialized=Unknown (StartupTaintsExist), and the GPU never appears: two causes.",
    nps=[nodepool(), _nc_pool],
    overrides=_bn_gpu_catalog() + [fact("nodeClaims", [_nc_c]), fact({"node": {"name": _nc_n}}, _nc_nd),
                                   fact("daemonSets", DAEMONSETS + [_nc_nvdp])]),
    ["KD6003", "KD6004", "KD6005"], roots=["KD6004", "KD6005"])

# ---------------------------------------------------------------------------------------------
# kubernetes-sigs/karpenter#1772 with aws-ebs-csi-driver#2199 and aws/containers-roadmap#2470: the
# NodePool declares the EBS CSI driver's startup taint; the ebs-csi-node pod on the node has been
# Ready for 20 minutes, but the taint stays (the driver's one removal attempt raced another taint
# patch). Restarting that pod clears it.
_nc_n = "ip-10-20-33-91.us-west-2.compute.internal"
_nc_ebs_taint = _nc_taint("ebs.csi.aws.com/agent-not-ready", "NoExecute")
_nc_pool = nodepool()
_nc_pool["spec"]["template"]["spec"]["startupTaints"] = [_nc_ebs_taint]
_nc_c = _nc_claim("default-v8r2t", _nc_n, startup=[_nc_ebs_taint],
                  initialized=("Unknown", "StartupTaintsExist", "StartupTaint \"ebs.csi.aws.com/agent-not-ready:NoExecute\" still exists"))
_nc_ebs = _nc_ds("ebs-csi-node", "kube-system", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-ebs-csi-driver:v1.35.0",
                 [{"operator": "Exists"}], node_selector={"kubernetes.io/os": "linux"})
_nc_nd = _nc_node(_nc_n, taints=[_nc_ebs_taint])
_nc_nd["metadata"]["labels"]["kubernetes.io/os"] = "linux"
write("ebs-startup-taint-remover-gave-up", bundle(
    "The NodePool declares ebs.csi.aws.com/agent-not-ready as a startup taint, as the EBS CSI driver documents. On one node the ebs-csi-node pod (v1.35) has been Ready for 29 minutes but the taint stays (kubernetes-sigs/karpenter#1772, aws-ebs-csi-driver#2199): its one removal attempt lost a race with another taint patch, and the NodeClaim stays Initialized=Unknown (StartupTaintsExist). Deleting that pod makes its replacement remove the taint.",
    nps=[_nc_pool],
    overrides=[fact("nodeClaims", [_nc_c]), fact({"node": {"name": _nc_n}}, _nc_nd),
               fact("daemonSets", DAEMONSETS + [_nc_ebs]),
               fact({"nodePods": {"node": _nc_n}}, [_nc_ds_pod(_nc_ebs, _nc_n, "x7k2p")])]),
    ["KD6003", "KD6004"], roots=["KD6004"])

# ---------------------------------------------------------------------------------------------
# Healthy: Karpenter's documented Cilium setup (NodePool docs, "Cilium Startup Taint"). The pool
# declares Cilium's taint, the agent tolerates everything; one node initialized 25 minutes ago
# with the taint gone, one registered 40 seconds ago that still has it while its agent starts.
_nc_cil = _nc_taint("node.cilium.io/agent-not-ready", "NoExecute", "true")
_nc_pool = nodepool()
_nc_pool["spec"]["template"]["spec"]["startupTaints"] = [_nc_cil]
_nc_old, _nc_new = "ip-10-1-20-5.us-west-2.compute.internal", "ip-10-1-20-77.us-west-2.compute.internal"
_nc_cilium = _nc_ds("cilium", "kube-system", "quay.io/cilium/cilium:v1.16.5", [{"operator": "Exists"}])
write("healthy-cilium-startup-taint", bundle(
    "Healthy: the NodePool declares Cilium's startup taint as Karpenter's docs show, and the Cilium agent tolerates every taint. One node initialized 25 minutes ago with the taint gone; another registered 40 seconds ago and keeps the taint while its agent starts.",
    nps=[_nc_pool],
    overrides=[fact("nodeClaims", [_nc_claim("default-c1l1m", _nc_old, startup=[_nc_cil], since="2026-11-23T09:35:00Z"),
                                   _nc_claim("default-n3w0e", _nc_new, startup=[_nc_cil], since="2026-11-23T09:59:20Z",
                                             initialized=("Unknown", "StartupTaintsExist", "StartupTaint \"node.cilium.io/agent-not-ready=true:NoExecute\" still exists"))]),
               fact({"node": {"name": _nc_old}}, _nc_node(_nc_old)),
               fact({"node": {"name": _nc_new}}, _nc_node(_nc_new, taints=[_nc_cil])),
               fact("daemonSets", DAEMONSETS + [_nc_cilium])]),
    [])

# ---------------------------------------------------------------------------------------------
# Healthy: a GPU NodePool with the NVIDIA device plugin whose affinity was changed to select
# Karpenter's GPU nodes (as zalando-incubator/kubernetes-on-aws#6607 did), and a Bottlerocket
# NVIDIA pool with no DaemonSet at all: its variant registers the GPUs from the host
# (cookpad/terraform-aws-eks#295). Both nodes offer nvidia.com/gpu.
_nc_pool = nodepool("gpu")
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}]
_nc_pool["spec"]["template"]["spec"]["taints"] = [_NC_GPU_TAINT]
_nc_br = json.loads(json.dumps(_nc_pool))
_nc_br["metadata"]["name"] = "gpu-bottlerocket"
_nc_al, _nc_bn = "ip-10-2-40-11.us-west-2.compute.internal", "ip-10-2-40-12.us-west-2.compute.internal"
_nc_gpu_alloc = {"cpu": "3920m", "memory": "14981Mi", "nvidia.com/gpu": "1", "pods": "58"}
_nc_req = {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1", "pods": "5"}
_nc_nvdp = _nc_ds("nvidia-device-plugin", "kube-system", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", _NC_NVDP_TOLERATIONS,
                  affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]}]}]}}})
_nc_aln = _nc_node(_nc_al, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT], allocatable=_nc_gpu_alloc)
_nc_aln["metadata"]["labels"]["karpenter.k8s.aws/instance-gpu-manufacturer"] = "nvidia"
_nc_brn = _nc_node(_nc_bn, pool="gpu-bottlerocket", itype="g5.xlarge", taints=[_NC_GPU_TAINT], allocatable=_nc_gpu_alloc,
                   os_image="Bottlerocket OS 1.50.0 (aws-k8s-1.33-nvidia)")
# The Bottlerocket pool uses healthy_shapes.py's EC2NodeClass on alias bottlerocket@latest.
_nc_br["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "bottlerocket"


def _nc_on_bottlerocket(c):
    c["spec"]["nodeClassRef"]["name"] = "bottlerocket"
    c["metadata"]["labels"]["karpenter.k8s.aws/ec2nodeclass"] = "bottlerocket"
    return c
write("healthy-gpu-device-plugin", bundle(
    "Healthy: a g5 NodePool with the NVIDIA device plugin, its affinity changed to select nodes labelled karpenter.k8s.aws/instance-gpu-manufacturer=nvidia, and a Bottlerocket NVIDIA pool with no device plugin DaemonSet (the variant registers GPUs itself). Both nodes offer nvidia.com/gpu and their NodeClaims are initialized.",
    nps=[nodepool(), _nc_pool, _nc_br], ncs=[nodeclass(), br_nc],
    overrides=_bn_gpu_catalog() + [
        fact("nodeClaims", [_nc_claim("gpu-a8d3k", _nc_al, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT], requests=_nc_req),
                            _nc_on_bottlerocket(_nc_claim("gpu-bottlerocket-q2w9e", _nc_bn, pool="gpu-bottlerocket", itype="g5.xlarge",
                                                          taints=[_NC_GPU_TAINT], requests=_nc_req))]),
        fact({"node": {"name": _nc_al}}, _nc_aln), fact({"node": {"name": _nc_bn}}, _nc_brn),
        fact("daemonSets", DAEMONSETS + [_nc_nvdp])]),
    [])

# ---------------------------------------------------------------------------------------------
# aws/karpenter-provider-aws#8291: a GPU pool whose EC2NodeClass pins the standard AL2023 AMI by
# id, so g5 nodes boot without the NVIDIA driver. The device plugin (deployed by the GPU
# operator's manifests, tolerating every taint) runs on the node and fails to load NVML, and with
# its default failOnInitError it restarts in a loop: nvidia.com/gpu never appears.
_nc_n = "ip-10-3-12-40.us-west-2.compute.internal"
_nc_pool = nodepool("gpu")
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}]
_nc_pool["spec"]["template"]["spec"]["taints"] = [_NC_GPU_TAINT]
_nc_c = _nc_claim("gpu-h6j8k", _nc_n, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                  initialized=("Unknown", "ResourceNotRegistered", "Resource \"nvidia.com/gpu\" was requested but not registered"),
                  requests={"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1", "pods": "5"},
                  capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"})
_nc_std = "ami-0c4d5e6f7a8b9c0d1"
_nc_plugin = _nc_ds("nvidia-device-plugin-daemonset", "gpu-operator", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", [{"operator": "Exists"}])
write("gpu-device-plugin-crashloop", bundle(
    "A g5 NodePool whose EC2NodeClass selects the standard AL2023 AMI by id (aws/karpenter-provider-aws#8291): the node boots without the NVIDIA driver, the device plugin on it cannot load NVML and restarts in a loop (CrashLoopBackOff), nvidia.com/gpu never appears and the NodeClaim stays Initialized=Unknown (ResourceNotRegistered).",
    nps=[nodepool(), _nc_pool], ncs=[custom_nc({"amiSelectorTerms": [{"id": _nc_std}], "amiFamily": "AL2023"})],
    overrides=_bn_gpu_catalog() + [fact("nodeClaims", [_nc_c]),
                                   fact({"ec2Images": {"filters": [{"name": "image-id", "values": [_nc_std]}], "owners": []}},
                                        [{"imageId": _nc_std, "name": "amazon-eks-node-al2023-x86_64-standard-1.33-v20261101", "architecture": "x86_64",
                                          "state": "available", "ownerId": "602401143452", "creationDate": "2026-11-01T00:00:00.000Z",
                                          "deprecationTime": None, "tags": {}}]),
                                   fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                                                                           allocatable={"cpu": "3920m", "memory": "14981Mi", "pods": "58"})),
                                   fact("daemonSets", DAEMONSETS + [_nc_plugin]),
                                   fact({"nodePods": {"node": _nc_n}}, [_nc_ds_pod(_nc_plugin, _nc_n, "r4t6y", ready=False, waiting="CrashLoopBackOff")])]),
    ["KD6003", "KD6005"], roots=["KD6005"])

# ---------------------------------------------------------------------------------------------
# bottlerocket-os/bottlerocket#4582 and bottlerocket-kernel-kit#207 (Karpenter 1.3 and 1.5): an
# inf1.xlarge node on Bottlerocket is Ready, the Neuron device plugin runs on it, yet
# aws.amazon.com/neuroncore never appears (the console shows the neuron driver timing out), and
# the NodeClaim never initializes ("Node isn't initialized" for 26 minutes).
_nc_n = "ip-10-4-8-21.us-west-2.compute.internal"
_nc_neuron_taint = _nc_taint("aws.amazon.com/neuron", "NoSchedule", "true")
_nc_pool = nodepool("neuron")
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["inf1.xlarge"]}]
_nc_pool["spec"]["template"]["spec"]["taints"] = [_nc_neuron_taint]
_nc_inf1 = {"instanceType": "inf1.xlarge", "architectures": ["x86_64"], "vcpus": 4, "memoryMib": 8192, "gpus": 0,
            "accelerators": {"nvidiaGpus": 0, "amdGpus": 0, "habanaGaudis": 0, "neuronDevices": 1, "neuronCores": 4, "gpuEntries": 0},
            "usageClasses": ["on-demand", "spot"], "hypervisor": "nitro", "bareMetal": False, "maxEnis": 4, "ipv4PerEni": 10}
_nc_types = instance_types() + [_nc_inf1]
_nc_c = _nc_claim("neuron-b5n7m", _nc_n, pool="neuron", itype="inf1.xlarge", taints=[_nc_neuron_taint],
                  initialized=("Unknown", "ResourceNotRegistered", "Resource \"aws.amazon.com/neuroncore\" was requested but not registered"),
                  requests={"cpu": "1", "memory": "2Gi", "aws.amazon.com/neuroncore": "1", "pods": "4"},
                  capacity={"cpu": "4", "memory": "7577Mi", "aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "4", "pods": "38"})
_nc_neuron = _nc_ds("neuron-device-plugin-daemonset", "kube-system", "public.ecr.aws/neuron/neuron-device-plugin:2.22.4.0",
                    [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}],
                    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                               "values": ["inf1.xlarge", "inf1.2xlarge", "inf1.6xlarge", "inf1.24xlarge", "inf2.xlarge", "trn1.2xlarge"]}]}]}}})
write("neuron-plugin-registers-nothing", bundle(
    "An inf1.xlarge node on Bottlerocket (bottlerocket-os/bottlerocket#4582, bottlerocket-kernel-kit#207) is Ready and the Neuron device plugin has run on it for 29 minutes, yet aws.amazon.com/neuroncore never appears (the neuron driver times out on the host), so the NodeClaim launched for a pod requesting a NeuronCore stays Initialized=Unknown (ResourceNotRegistered).",
    nps=[nodepool(), _nc_pool],
    overrides=[fact("ec2InstanceTypes", _nc_types),
               fact("ec2InstanceTypeOfferings", [{"instanceType": t["instanceType"], "zone": z} for t in _nc_types for z in ("us-west-2a", "us-west-2b")]),
               fact("nodeClaims", [_nc_c]),
               fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, pool="neuron", itype="inf1.xlarge", taints=[_nc_neuron_taint],
                                                       allocatable={"cpu": "3920m", "memory": "6881Mi", "pods": "38"},
                                                       os_image="Bottlerocket OS 1.39.1 (aws-k8s-1.31)")),
               fact("daemonSets", DAEMONSETS + [_nc_neuron]),
               fact({"nodePods": {"node": _nc_n}}, [_nc_ds_pod(_nc_neuron, _nc_n, "w2e4r")])]),
    ["KD6003", "KD6005"], roots=["KD6005"])

# ---------------------------------------------------------------------------------------------
# EBS attachment limits (KD6008). kubernetes-sigs/karpenter#2287: over a hundred StatefulSets
# with one PVC each created at once; Karpenter counts a new node's EBS limit only once its
# CSINode exists, so it sends more volumes to one node than the instance can attach, and the
# driver reports "AttachmentLimitExceeded: You may attach up to 27 devices for this instance
# type." The NodePool lacks the EBS driver's startup taint.
def _nc_csinode(name, count):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0%s" % hashlib.sha256(name.encode()).hexdigest()[:16],
                                  "allocatable": {"count": count}, "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}}


def _nc_va(node_name, i, attached=True, error=None):
    pv = "pvc-%08d-1f2e-4d3c-8b7a-%012d" % (i, i)
    va = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
          "metadata": {"name": "csi-%s" % hashlib.sha256((node_name + pv).encode()).hexdigest()},
          "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node_name, "source": {"persistentVolumeName": pv}},
          "status": {"attached": attached}}
    if error:
        va["status"]["attachError"] = {"message": error, "time": "2026-11-23T09:52:00Z"}
    return va


_nc_n = "ip-10-5-61-200.us-west-2.compute.internal"
_nc_limit_msg = ("rpc error: code = Internal desc = Could not attach volume \"vol-0a1b2c3d4e5f60789\" to node \"i-0f1e2d3c4b5a69788\": "
                 "operation error EC2: AttachVolume, https response error StatusCode: 400, RequestID: 5c1a7e0b-9d2f-4b8e-a6c3-1f0e9d8c7b6a, "
                 "api error AttachmentLimitExceeded: You may attach up to 27 devices for this instance type.")
_nc_vas = [_nc_va(_nc_n, i) for i in range(25)] + [_nc_va(_nc_n, 25 + i, attached=False, error=_nc_limit_msg) for i in range(2)]
write("ebs-attach-limit-statefulset-burst", bundle(
    "Over a hundred single-PVC StatefulSets are created at once (kubernetes-sigs/karpenter#2287). Karpenter counts a new node's EBS attach limit only once its CSINode exists, and the NodePool does not declare the EBS driver's startup taint, so one m5.2xlarge node gets 27 volumes while its CSINode allows 25: two attachments fail with AttachmentLimitExceeded and their pods wait in Init.",
    overrides=[fact("nodeClaims", [_nc_claim("default-s7t8u", _nc_n, itype="m5.2xlarge")]),
               fact("csiNodes", [_nc_csinode(_nc_n, 25)]),
               fact("volumeAttachments", _nc_vas)]),
    ["KD6008"], exit_code=0, roots=[])

# kubernetes-sigs/karpenter#1748 and #1852: a node at its EBS maximum keeps being given pods with
# volumes; attachments still in progress are not counted, so three wait on a node whose CSINode
# count (26) is already used.
_nc_n = "ip-10-5-62-14.us-west-2.compute.internal"
write("ebs-attach-limit-node-full", bundle(
    "A Karpenter node's CSINode allows 26 EBS attachments and 26 are attached; three more VolumeAttachments for it are still not attached (kubernetes-sigs/karpenter#1748, #1852: volumes still attaching are not counted), so their pods wait on a node that has no room left.",
    overrides=[fact("nodeClaims", [_nc_claim("default-w4x5y", _nc_n, itype="r6i.2xlarge")]),
               fact("csiNodes", [_nc_csinode(_nc_n, 26)]),
               fact("volumeAttachments", [_nc_va(_nc_n, i) for i in range(26)] + [_nc_va(_nc_n, 26 + i, attached=False) for i in range(3)])]),
    ["KD6008"], exit_code=0, roots=[])

# Healthy: the EBS driver's startup taint declared (Karpenter troubleshooting, "Pods using PVCs
# can hit volume limits"), the node's CSINode allows 25, four volumes attached.
_nc_n = "ip-10-5-63-8.us-west-2.compute.internal"
_nc_pool = nodepool()
_nc_pool["spec"]["template"]["spec"]["startupTaints"] = [_nc_taint("ebs.csi.aws.com/agent-not-ready", "NoExecute")]
write("healthy-ebs-startup-taint-headroom", bundle(
    "Healthy: the NodePool declares the EBS CSI driver's startup taint, the node's CSINode allows 25 EBS attachments and four volumes are attached; one more attachment is in progress.",
    nps=[_nc_pool],
    overrides=[fact("nodeClaims", [_nc_claim("default-z1a2b", _nc_n, startup=[_nc_taint("ebs.csi.aws.com/agent-not-ready", "NoExecute")])]),
               fact("csiNodes", [_nc_csinode(_nc_n, 25)]),
               fact("volumeAttachments", [_nc_va(_nc_n, i) for i in range(4)] + [_nc_va(_nc_n, 4, attached=False)])]),
    [])

# ---------------------------------------------------------------------------------------------
# NVIDIA/k8s-device-plugin#1934 (chart 0.19.1 with gfd.enabled=true, EKS 1.34): GPU nodes are
# tainted nvidia.com/gpu=true:NoSchedule; the device plugin tolerates it (operator Exists) but
# selects nodes by Node Feature Discovery's feature.node.kubernetes.io/pci-10de.present label,
# and the bundled NFD worker tolerates nvidia.com/gpu only with value "present" (operator Equal).
# The worker never runs on the node, the label never appears, the plugin stays at desired 0, and
# nvidia.com/gpu is never registered.
_nc_n = "ip-10-6-77-31.us-west-2.compute.internal"
_nc_pool = nodepool("gpu")
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}]
_nc_pool["spec"]["template"]["spec"]["taints"] = [_NC_GPU_TAINT]
_nc_c = _nc_claim("gpu-f3g5h", _nc_n, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                  initialized=("Unknown", "ResourceNotRegistered", "Resource \"nvidia.com/gpu\" was requested but not registered"),
                  requests={"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1", "pods": "5"},
                  capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"})
_nc_nvdp = _nc_ds("nvidia-device-plugin", "kube-system", "nvcr.io/nvidia/k8s-device-plugin:v0.19.1",
                  [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                  affinity=_NC_NVDP_AFFINITY)
_nc_nfd = _nc_ds("nvidia-device-plugin-node-feature-discovery-worker", "kube-system", "registry.k8s.io/nfd/node-feature-discovery:v0.17.3",
                 [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}])
write("gpu-plugin-waits-for-nfd-label", bundle(
    "GPU nodes tainted nvidia.com/gpu=true:NoSchedule with the NVIDIA device plugin chart 0.19.1 and gfd.enabled=true (NVIDIA/k8s-device-plugin#1934): the plugin tolerates the taint but selects nodes by Node Feature Discovery's feature.node.kubernetes.io/pci-10de.present label, and the bundled NFD worker tolerates nvidia.com/gpu only with value \"present\". The worker never runs on the Karpenter node, the label never appears, the plugin never runs there, and the NodeClaim stays Initialized=Unknown (ResourceNotRegistered).",
    nps=[nodepool(), _nc_pool],
    overrides=_bn_gpu_catalog() + [fact("nodeClaims", [_nc_c]),
                                   fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, pool="gpu", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                                                                           allocatable={"cpu": "3920m", "memory": "14981Mi", "pods": "58"})),
                                   fact("daemonSets", DAEMONSETS + [_nc_nvdp, _nc_nfd])]),
    ["KD6003", "KD6005"], roots=["KD6005"])

# ---------------------------------------------------------------------------------------------
# aws/karpenter-provider-aws#2833 ("I was not making use of the GPU resource, just karpenter
# happened to pick some of these instance types as I had not explicitly excluded them"): a general
# NodePool that allows the g category launches a g5.xlarge for CPU-only pods, and the cluster has
# no device plugin. Karpenter initializes the node
# (no pod asked for a GPU), but its GPU is unusable: a pod that requests nvidia.com/gpu later
# will not fit on it. A warning, not an error (docs/node-capacity.md §3, shape H2c).
_nc_n = "ip-10-7-20-9.us-west-2.compute.internal"
_nc_pool = nodepool()
_nc_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r", "g"]}]
write("gpu-type-for-cpu-pods-no-plugin", bundle(
    "A general NodePool that allows the g category launched a g5.xlarge for CPU-only pods, and no device plugin is installed: the NodeClaim is initialized (no pod requested a GPU), but the node offers no nvidia.com/gpu, so a pod that asks for one later will not fit on it.",
    nps=[_nc_pool],
    overrides=_bn_gpu_catalog() + [
        fact("nodeClaims", [_nc_claim("default-g9h8j", _nc_n, itype="g5.xlarge", requests={"cpu": "3", "memory": "12Gi", "pods": "7"},
                                      capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"})]),
        fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, itype="g5.xlarge", allocatable={"cpu": "3920m", "memory": "14981Mi", "pods": "58"}))]),
    ["KD6005"], exit_code=0, roots=[])

# ---------------------------------------------------------------------------------------------
# bottlerocket-os/bottlerocket#4250 (Karpenter v1, g5, the aws-k8s-*-nvidia variant): after a
# Bottlerocket update the NVIDIA driver does not start, so the variant's built-in device plugin
# registers no GPU; there is no device plugin DaemonSet to look at, and the NodeClaim launched
# for a GPU pod stays Initialized=Unknown (ResourceNotRegistered).
_nc_n = "ip-10-8-14-52.us-west-2.compute.internal"
_nc_br = json.loads(json.dumps(_nc_br))
write("bottlerocket-nvidia-driver-not-loaded", bundle(
    "A g5 NodePool on Bottlerocket (EC2NodeClass alias bottlerocket@latest, so the aws-k8s-1.33-nvidia variant) where the NVIDIA driver does not start after an update (bottlerocket-os/bottlerocket#4250): the variant registers GPUs itself and no device plugin DaemonSet exists, but nvidia.com/gpu never appears and the NodeClaim launched for a GPU pod stays Initialized=Unknown (ResourceNotRegistered).",
    nps=[nodepool(), _nc_br], ncs=[nodeclass(), br_nc],
    overrides=_bn_gpu_catalog() + [
        fact("nodeClaims", [_nc_on_bottlerocket(_nc_claim("gpu-bottlerocket-k4l6m", _nc_n, pool="gpu-bottlerocket", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                                                          initialized=("Unknown", "ResourceNotRegistered", "Resource \"nvidia.com/gpu\" was requested but not registered"),
                                                          requests=_nc_req, capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"}))]),
        fact({"node": {"name": _nc_n}}, _nc_node(_nc_n, pool="gpu-bottlerocket", itype="g5.xlarge", taints=[_NC_GPU_TAINT],
                                                allocatable={"cpu": "3920m", "memory": "14981Mi", "pods": "58"},
                                                os_image="Bottlerocket OS 1.50.0 (aws-k8s-1.33-nvidia)"))]),
    ["KD6003", "KD6005"], roots=["KD6005"])
