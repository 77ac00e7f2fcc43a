# One root cause, one error: installs where one problem shows in several checks, each rebuilt
# from a public thread. The checks that see a consequence must link it to the cause
# (`causedBy`), so each scenario declares that one cause as its root. Names local to this file
# start with _rc_. Runs after scheduling.py (its _sc_pod).

# aws/karpenter-provider-aws#7211: the launch fails with "no instance types satisfy requirements
# of amis [ami-...]" (nodeclaim.lifecycle's Reconciler error). Here an arm64-only NodePool uses
# an EC2NodeClass pinned to one x86_64 AMI: the NodeClaim is LaunchFailed with that message and
# the pods that wanted the pool stay Pending. The AMIs are the cause (KD3004); the launch failure
# (KD6001) and the pending pods (KD8001) follow from it.
_rc_x86 = "ami-0a1b2c3d4e5f60718"
_rc_msg = "launching nodeclaim, creating instance, getting launch template configs, getting launch templates, no instance types satisfy requirements of amis [%s]" % _rc_x86
_rc_claim = claim("default-m3n4b", launched=("False", "LaunchFailed", _rc_msg),
                  registered=("Unknown", "AwaitingReconciliation", "object is awaiting reconciliation"),
                  initialized=("Unknown", "AwaitingReconciliation", "object is awaiting reconciliation"), since="2026-11-23T09:56:00Z")
_rc_pods = [_sc_pod("api-7c9d8e6f5b-%s" % s, owner=("ReplicaSet", "api-7c9d8e6f5b"), node_selector={"kubernetes.io/arch": "arm64"}) for s in ("k2j4h", "p9q8r")]
b = bundle("An arm64-only NodePool uses an EC2NodeClass pinned to one x86_64 AMI id: its NodeClaim is LaunchFailed with \"no instance types satisfy requirements of amis\" (aws/karpenter-provider-aws#7211) and two arm64 replicas stay Pending. One cause, the AMIs' architecture (KD3004); the launch failure and the pending pods are linked to it.",
    nps=[nodepool(arch=("arm64",))],
    ncs=[custom_nc({"amiSelectorTerms": [{"id": _rc_x86}], "amiFamily": "AL2023"})],
    overrides=[fact({"ec2Images": {"filters": [{"name": "image-id", "values": [_rc_x86]}], "owners": []}},
                    [{"imageId": _rc_x86, "name": "amazon-eks-node-al2023-x86_64-standard-1.33-v20261101", "architecture": "x86_64", "state": "available",
                      "ownerId": "602401143452", "creationDate": "2026-11-01T00:00:00.000Z", "deprecationTime": None, "tags": {}}]),
               fact("nodeClaims", [_rc_claim]), fact("pendingPods", _rc_pods),
               fact({"events": {"kind": "Pod", "namespace": None}}, [])])
write("ami-arch-launch-failed-pods-pending", b, ["KD3004", "KD6001", "KD8001"], roots=["KD3004"])

# aws/karpenter-provider-aws#7992: Karpenter 1.3.3 installed over CRDs that still serve only
# v1beta1: the controller panics at start ("no matches for kind \"NodeClaim\" in version
# \"karpenter.sh/v1\"", then "panic: unable to retrieve the complete list of server APIs:
# karpenter.sh/v1: no matches for karpenter.sh/v1") and crash-loops. One cause, the CRDs
# (KD1002); the crash loop (KD1001) and its log (KD1009) are linked to it.
_rc_crd_log = "\n".join([
    logline("ERROR", "failed to setup nodeclaim provider id indexer", error="no matches for kind \"NodeClaim\" in version \"karpenter.sh/v1\""),
    logline("ERROR", "failed to setup nodepool nodeclassref kind indexer", error="no matches for kind \"NodePool\" in version \"karpenter.sh/v1\""),
    "panic: unable to retrieve the complete list of server APIs: karpenter.sh/v1: no matches for karpenter.sh/v1, Resource=",
]) + "\n"
_rc_crash_logs = {n: _rc_crd_log for n in ("karpenter-6d9f7c8b5d-7xk2p", "karpenter-6d9f7c8b5d-q9w4n")}
b = bundle("Karpenter 1.8.1 installed while the CRDs still serve only v1beta1 (the karpenter-crd chart was never upgraded): both controller pods crash-loop on \"panic: unable to retrieve the complete list of server APIs: karpenter.sh/v1\" (aws/karpenter-provider-aws#7992). One cause, the CRDs (KD1002); the crash loop is linked to it.",
    dep=[deployment(ready=0)],
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", crash={"restarts": 9, "exit": 2, "reason": "Error"}), pod("karpenter-6d9f7c8b5d-q9w4n", crash={"restarts": 9, "exit": 2, "reason": "Error"})],
    crds=v1beta1, nps=[as_v1beta1(nodepool())], ncs=[as_v1beta1(nodeclass())], logs=_rc_crash_logs, previous_logs=_rc_crash_logs)
write("crds-v1beta1-controller-crashloop", b, ["KD1001", "KD1002", "KD1009"], skipped=["KD4005"], roots=["KD1002"])

# aws/karpenter-provider-aws#7436 shape: the controller is scaled down (or gone) while a new
# EC2NodeClass is created: its status is never written, and the NodePool using it waits. One
# cause, the controller (KD1001); the class with no status (KD3008) is linked to it.
_rc_new = custom_nc()
_rc_new["metadata"]["name"] = "batch"
_rc_new["status"] = {}
_rc_batch = nodepool("batch", ref={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "batch"})
_rc_batch["status"] = {}
b = bundle("The controller Deployment was scaled to zero during maintenance and never scaled back; meanwhile EC2NodeClass batch was created and has no status at all (never reconciled), and NodePool batch waits on it. One cause, the controller (KD1001); the class without status is linked to it.",
    dep=[deployment(ready=0, replicas=0)], pods=[], nps=[nodepool(), _rc_batch], ncs=[custom_nc(), _rc_new])
write("controller-scaled-down-nodeclass-unreconciled", b, ["KD1001", "KD3008"], skipped=["KD1009", "KD9001"], roots=["KD1001"])
