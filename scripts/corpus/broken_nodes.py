# Broken installs from EC2NodeClass to a joined node (KD3xxx, KD4xxx, KD5xxx, KD6xxx), each
# reconstructed from a public thread named above it. Exec'd at the end of make_fixtures.py with
# its globals (bundle, write, fact, custom_nc, nodepool, claim, node, logline, ...). Names local
# to this file start with _bn_ so they cannot clash with another corpus file.

def _bn_mode(b, mode, drop_entries=False):
    """Sets the cluster's authentication mode; CONFIG_MAP clusters have no access entries."""
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"]["authenticationMode"] = mode
    if drop_entries:
        b["facts"] = [e for e in b["facts"] if not (isinstance(e["fact"], dict) and "eksAccessEntries" in e["fact"])]

def _bn_unregistered(name, pool="default", since="2026-11-23T09:40:00Z"):
    """A NodeClaim whose instance launched and never became a node."""
    nf = ("Unknown", "NodeNotFound", "Node not registered with cluster")
    return claim(name, pool=pool, registered=nf, initialized=nf, since=since)

_BN_WAIT = ("Unknown", "AwaitingReconciliation", "object is awaiting reconciliation")

def _bn_event(claim_name, reason, message, count=1, minute="50", uid="7c6d5e4f"):
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.18b3c4d5e6f7a8b9" % claim_name, "namespace": "default", "uid": "%s-%s-4b6c-8d7e-9f0a1b2c3d4e" % (uid, claim_name[-5:])},
            "involvedObject": {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": claim_name},
            "reason": reason, "message": message, "type": "Warning", "count": count,
            "firstTimestamp": "2026-11-23T09:%s:00Z" % minute, "lastTimestamp": "2026-11-23T09:%s:30Z" % minute,
            "source": {"component": "karpenter"}}

_BN_PODS = ("karpenter-6d9f7c8b5d-7xk2p", "karpenter-6d9f7c8b5d-q9w4n")

def _bn_logs(*lines):
    return {n: HEALTHY_LOG + "\n".join(lines) + "\n" for n in _BN_PODS}

# GPU instance types (g5), as EC2 describes them, for the GPU NodePools below.
def _bn_gpu_catalog():
    g5 = [{"instanceType": "g5.%s" % s, "architectures": ["x86_64"], "vcpus": c, "memoryMib": m, "gpus": 1,
           "usageClasses": ["on-demand", "spot"], "hypervisor": "nitro", "bareMetal": False}
          for s, c, m in (("xlarge", 4, 16384), ("2xlarge", 8, 32768), ("4xlarge", 16, 65536))]
    types = instance_types() + g5
    return [fact("ec2InstanceTypes", types),
            fact("ec2InstanceTypeOfferings", [{"instanceType": t["instanceType"], "zone": z} for t in types for z in ("us-west-2a", "us-west-2b")])]

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/pull/9159 (and the log shape of
# https://github.com/aws/karpenter-provider-aws/issues/8564): an EC2NodeClass pinned to
# al2023@v20250116, a release that is not published for the cluster's Kubernetes minor; Karpenter
# logs "failed to discover any AMIs for alias" and AMIsReady never leaves Unknown.
nc = custom_nc({"amiSelectorTerms": [{"alias": "al2023@v20250116"}]})
nc["status"]["conditions"] = nc_status(failing=("AMIsReady",) + _BN_WAIT[1:], status="Unknown")
nc["status"].pop("amis")
np_ = nodepool()
np_["status"]["conditions"] = [
    {"type": "NodeClassReady", "status": "Unknown", "reason": "NodeClassReadinessUnknown", "message": "Node Class Readiness Unknown", "lastTransitionTime": "2026-11-23T09:40:00Z"},
    {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded", "message": "", "lastTransitionTime": "2026-11-20T08:05:00Z"},
    {"type": "Ready", "status": "Unknown", "reason": "ReconcilingDependents", "message": "NodeClassReady=Unknown", "lastTransitionTime": "2026-11-23T09:40:00Z"}]
ALIAS_ERR = logline("ERROR", "Reconciler error", controller="nodeclass",
    error="getting amis, getting AMI queries, failed to discover any AMIs for alias (alias=al2023@v20250116)")
write("ami-alias-pinned-release-unpublished", bundle(
    "The EC2NodeClass pins amiSelectorTerms to alias al2023@v20250116, a release that was never published for the cluster's Kubernetes 1.33 (as in aws/karpenter-provider-aws#9159, where a pinned alias aged out, and #8564): Karpenter logs \"failed to discover any AMIs for alias\", AMIsReady stays Unknown and the NodePool's NodeClassReady with it, so nothing launches.",
    ncs=[nc], nps=[np_], logs=_bn_logs(ALIAS_ERR)),
    ["KD1009", "KD3003", "KD3008", "KD4005"], roots=["KD3003"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/7731: amiFamily AL2023 with the name term
# amazon-eks-node-*-nvidia-*; the newest image it matches is an EKS 1.27 build, which Karpenter
# picks whatever the control plane runs. Here the control plane is 1.33: six minors newer than
# the kubelet, beyond the version skew policy (three).
NV = "amazon-eks-node-*-nvidia-*"
imgs = [{"imageId": "ami-0430b7e46a1aa97be", "name": "amazon-eks-node-al2023-x86_64-nvidia-1.27-v20250203", "architecture": "x86_64", "state": "available",
         "ownerId": "602401143452", "creationDate": "2025-02-04T02:11:41.000Z", "deprecationTime": None, "tags": {}},
        {"imageId": "ami-0b5c6d7e8f9012345", "name": "amazon-eks-node-al2023-x86_64-nvidia-1.32-v20250203", "architecture": "x86_64", "state": "available",
         "ownerId": "602401143452", "creationDate": "2025-02-04T01:53:09.000Z", "deprecationTime": None, "tags": {}}]
nc = custom_nc({"amiFamily": "AL2023", "amiSelectorTerms": [{"name": NV}]})
nc["status"]["amis"] = [{"id": "ami-0430b7e46a1aa97be", "name": "amazon-eks-node-al2023-x86_64-nvidia-1.27-v20250203",
                         "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]
write("ami-name-wildcard-old-minor", bundle(
    "The EC2NodeClass selects AMIs by the name pattern amazon-eks-node-*-nvidia-* (amiFamily AL2023), as in aws/karpenter-provider-aws#7731: the newest match is amazon-eks-node-al2023-x86_64-nvidia-1.27-v20250203, so nodes get a 1.27 kubelet under a 1.33 control plane, six minors apart, beyond the version skew policy.",
    ncs=[nc], overrides=[fact({"ec2Images": {"filters": [{"name": "name", "values": [NV]}], "owners": ["self", "amazon"]}}, imgs)]),
    ["KD3004"], roots=["KD3004"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws-ia/terraform-aws-eks-blueprints-addons/issues/438: the Karpenter node
# role created by the add-on has none of the node policies (AmazonEKSWorkerNodePolicy,
# AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly); instances launch and never join.
write("node-role-without-node-policies", bundle(
    "The node role created by the Karpenter add-on (as in aws-ia/terraform-aws-eks-blueprints-addons#438) has no managed policy attached: no AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy or ECR pull policy. Instances launch, and their NodeClaims stay Registered=Unknown (NodeNotFound).",
    overrides=[fact({"iamAttachedRolePolicies": {"role": "KarpenterNodeRole-demo"}}, []),
               fact("nodeClaims", [_bn_unregistered("default-t6y7u"), _bn_unregistered("default-i8o9p")])]),
    ["KD3005", "KD6002"], roots=["KD3005"])

# ---------------------------------------------------------------------------------------------
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/3413 (and
# https://github.com/aws/karpenter-provider-aws/issues/7558): migrating aws-auth to access
# entries, the Karpenter node role's entry meant as EC2_LINUX was created as STANDARD, without
# username or groups. In API_AND_CONFIG_MAP the access entry wins over the (correct) aws-auth
# mapping that is still there, so nodes stop registering.
b = bundle("Half-way through moving aws-auth to access entries (API_AND_CONFIG_MAP), the node role still has its aws-auth entry (with system:node-proxier) but its new access entry was created as STANDARD, without username or groups (as in terraform-aws-modules/terraform-aws-eks#3413 and aws/karpenter-provider-aws#7558): the access entry wins, so new nodes are not system:nodes and their NodeClaims stay NodeNotFound.",
    overrides=[fact("awsAuth", aws_auth(maproles_entry(MNG_ROLE_ARN) + maproles_entry(NODE_ROLE_ARN, groups=("system:bootstrappers", "system:nodes", "system:node-proxier")))),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [access_entry(NODE_ROLE_ARN, "STANDARD")]),
               fact("nodeClaims", [_bn_unregistered("default-z1x2c"), _bn_unregistered("default-v3b4n")])])
write("access-entry-standard-shadows-aws-auth", b, ["KD5003", "KD6002"], roots=["KD5003"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/pull/7998 (1.5+: the Spot SLR error is treated as
# insufficient capacity and the NodePool falls back to on-demand) and
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/2565 (a fresh account without
# AWSServiceRoleForEC2Spot, the module's controller policy may not create it).
mixed_np = nodepool()
mixed_np["spec"]["template"]["spec"]["requirements"][1]["values"] = ["spot", "on-demand"]
SLR_MSG = "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances."
evs = [_bn_event("default-w3e4r", "InsufficientCapacityError", "NodeClaim default-w3e4r event: creating instance, insufficient capacity, with fleet error(s), AuthFailure.ServiceLinkedRoleCreationNotPermitted: " + SLR_MSG, minute="46"),
       _bn_event("default-w3e4r", "", "Attempted to launch a spot instance but failed due to \"AuthFailure.ServiceLinkedRoleCreationNotPermitted\"", minute="46", uid="8d7e6f5a"),
       _bn_event("default-s5d6f", "InsufficientCapacityError", "NodeClaim default-s5d6f event: creating instance, insufficient capacity, with fleet error(s), AuthFailure.ServiceLinkedRoleCreationNotPermitted: " + SLR_MSG, minute="53"),
       _bn_event("default-s5d6f", "", "Attempted to launch a spot instance but failed due to \"AuthFailure.ServiceLinkedRoleCreationNotPermitted\"", minute="53", uid="8d7e6f5a")]
write("spot-slr-missing-on-demand-fallback", bundle(
    "A NodePool allows spot and on-demand in an account where AWSServiceRoleForEC2Spot was never created (as in terraform-aws-modules/terraform-aws-eks#2565); since Karpenter 1.5 (aws/karpenter-provider-aws#7998) each spot attempt fails with AuthFailure.ServiceLinkedRoleCreationNotPermitted, is treated as insufficient capacity and the NodeClaim is replaced by an on-demand one: nodes run, silently all on-demand.",
    nps=[mixed_np], overrides=[fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, None),
                               fact("nodeClaims", [claim("default-a1b2c"), claim("default-g7h8j")]),
                               fact({"events": {"kind": "NodeClaim", "namespace": None}}, evs)]),
    ["KD4004", "KD6001"], roots=["KD4004"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws-ia/terraform-aws-eks-blueprints/pull/554 (and
# https://github.com/aws/karpenter-provider-aws/issues/3007): a subnet selector on the Name tag
# pattern *private* also matches the private subnets of another VPC in the account; launches into
# them fail with "Security group ... and subnet ... belong to different networks".
nc = custom_nc({"subnetSelectorTerms": [{"tags": {"Name": "*private*"}}]})
nc["status"]["subnets"].append({"id": "subnet-0d1e2f3a", "zone": "us-west-2a", "zoneID": "usw2-az1"})
vpc_claim = claim("default-m4n5b", launched=("Unknown", "SecurityGroupSubnetVPCMismatch", "Security groups and subnets must be in the same VPC."),
                  registered=_BN_WAIT, initialized=_BN_WAIT, since="2026-11-23T09:58:00Z")
write("subnet-selector-name-wildcard-other-vpc", bundle(
    "The subnet selector matches the Name tag *private* (as in aws-ia/terraform-aws-eks-blueprints#554 and aws/karpenter-provider-aws#3007), which also selects staging-private-us-west-2a in the staging cluster's VPC; launches that pick it fail with SecurityGroupSubnetVPCMismatch (\"Security group ... and subnet ... belong to different networks\").",
    ncs=[nc], overrides=[fact("nodeClaims", [claim("default-a1b2c"), vpc_claim])]),
    ["KD3001", "KD6001"], roots=["KD3001"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/8072 (and #8312): spec.instanceProfile
# holds the profile's ARN; InstanceProfileReady is True, but ValidationSucceeded stays Unknown
# and the EC2NodeClass never becomes Ready.
IP_ARN = "arn:aws:iam::111122223333:instance-profile/" + PROFILE
nc = custom_nc({"instanceProfile": IP_ARN}, drop=("role",))
nc["status"]["conditions"] = nc_status(failing=("ValidationSucceeded",) + _BN_WAIT[1:], status="Unknown")
nc["status"]["instanceProfile"] = IP_ARN
write("instance-profile-arn", bundle(
    "spec.instanceProfile is the profile's ARN (arn:aws:iam::111122223333:instance-profile/KarpenterNodeInstanceProfile-demo) instead of its name, as in aws/karpenter-provider-aws#8072 and #8312: InstanceProfileReady is True, ValidationSucceeded stays Unknown, the EC2NodeClass is never Ready and nothing launches.",
    ncs=[nc]),
    ["KD3006", "KD3008"], roots=["KD3006"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/1407: the account's default EBS KMS key was
# switched to a customer managed key (encryption by default left off). Karpenter's own root
# volume is encrypted without a key, so EC2 uses the account default, which the launching
# principal may not use: instances go from pending to terminated, Client.InternalError.
DEF_KEY_ID = "7f3e2d1c-4b5a-4c6d-8e9f-0a1b2c3d4e5f"
DEF_KEY_ARN = "arn:aws:kms:us-west-2:111122223333:key/" + DEF_KEY_ID
write("ebs-default-key-cmk", bundle(
    "The account's default EBS KMS key is a customer managed key whose policy only delegates to IAM, and encryption by default is off (as in aws/karpenter-provider-aws#1407). The EC2NodeClass has no blockDeviceMappings, so Karpenter's encrypted root volume uses the account default key, which the controller role may not use: instances terminate at launch with Client.InternalError.",
    overrides=[fact("ebsDefaults", {"encryptedByDefault": False, "defaultKmsKeyId": DEF_KEY_ARN}),
               fact({"kmsKey": {"keyId": DEF_KEY_ARN}}, {"keyId": DEF_KEY_ID, "arn": DEF_KEY_ARN, "keyManager": "CUSTOMER", "keyState": "Enabled", "policy": KEY_POLICY})]),
    ["KD3010"], roots=["KD3010"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/1185: the getting-started node role lacks
# AmazonEKS_CNI_Policy and aws-node has no role of its own; ipamd is denied
# ec2:DescribeNetworkInterfaces and nodes stay NotReady ("cni plugin not initialized").
CNI_NODE = "ip-192-168-88-21.us-west-2.compute.internal"
cni_node = node(CNI_NODE, karpenter=True)
cni_node["spec"] = {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}, {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}
cni_node["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
    "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}]}
write("node-role-without-cni-policy", bundle(
    "The node role (from the getting-started template, as in aws/karpenter-provider-aws#1185) has no AmazonEKS_CNI_Policy and aws-node has no IRSA or Pod Identity: ipamd is denied ec2:DescribeNetworkInterfaces, the node stays NotReady (\"cni plugin not initialized\") and its NodeClaim never initializes.",
    overrides=[fact({"iamAttachedRolePolicies": {"role": "KarpenterNodeRole-demo"}}, attached([p for p in NODE_POLICIES if p != "AmazonEKS_CNI_Policy"])),
               fact("nodeClaims", [claim("default-k2l3z", initialized=("Unknown", "NodeNotReady", "Node status is NotReady"), node_name=CNI_NODE)]),
               fact({"node": {"name": CNI_NODE}}, cni_node)]),
    ["KD3005", "KD5008", "KD6003"], roots=["KD3005"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/6643 (its controller log): a GPU NodePool
# limited to g5.4xlarge; every launch ends in "insufficient capacity, all requested instance
# types were unavailable during launch" and the NodeClaims are deleted at once.
gpu_np = nodepool("gpu-g5-4")
gpu_np["spec"]["template"]["spec"]["requirements"] = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.4xlarge"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
gpu_np["spec"]["template"]["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
ICE = "insufficient capacity, all requested instance types were unavailable during launch"
ice_names = ("gpu-g5-4-kpxk7", "gpu-g5-4-5rnc5", "gpu-g5-4-6rz6p")
ice_evs = [_bn_event(n, "InsufficientCapacityError", "NodeClaim %s event: %s" % (n, ICE), minute=m) for n, m in zip(ice_names, ("41", "47", "55"))]
ice_log = [json.dumps({"level": "ERROR", "time": "2026-11-23T09:55:43.196Z", "logger": "controller", "message": "failed launching nodeclaim", "commit": "5c1b8c3",
                       "controller": "nodeclaim.lifecycle", "controllerGroup": "karpenter.sh", "controllerKind": "NodeClaim", "NodeClaim": {"name": n},
                       "namespace": "", "name": n, "error": ICE}) for n in ice_names]
write("nodeclaim-gpu-insufficient-capacity", bundle(
    "A GPU NodePool allows only on-demand g5.4xlarge, which EC2 has no capacity for in the selected zones (as in the controller log of aws/karpenter-provider-aws#6643): every NodeClaim fails with \"insufficient capacity, all requested instance types were unavailable during launch\" and is deleted at once; GPU pods stay Pending. Nothing is misconfigured.",
    nps=[nodepool(), gpu_np], logs=_bn_logs(*ice_log),
    overrides=_bn_gpu_catalog() + [fact({"events": {"kind": "NodeClaim", "namespace": None}}, ice_evs)]),
    ["KD1009", "KD6001"], exit_code=0, roots=[])

# ---------------------------------------------------------------------------------------------
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/2124 (and #893): a node role
# created under an IAM path (/nodes/) is written into aws-auth with its path, which the
# authenticator never matches; in this CONFIG_MAP cluster the nodes are refused.
PATH_ROLE_ARN = "arn:aws:iam::111122223333:role/nodes/KarpenterNodeRole-demo"
b = bundle("The Karpenter node role was created under the IAM path /nodes/ and mapped in aws-auth with that path (as in terraform-aws-modules/terraform-aws-eks#2124 and #893); aws-auth matches roles without their path, so in this CONFIG_MAP cluster the nodes are refused and their NodeClaims stay NodeNotFound.",
    overrides=[fact({"iamRole": {"name": "KarpenterNodeRole-demo"}}, {"name": "KarpenterNodeRole-demo", "arn": PATH_ROLE_ARN, "path": "/nodes/", "trustPolicy": NODE_TRUST, "permissionsBoundaryArn": None}),
               fact("awsAuth", aws_auth(maproles_entry(MNG_ROLE_ARN) + maproles_entry(PATH_ROLE_ARN))),
               fact("nodeClaims", [_bn_unregistered("default-q2w3e"), _bn_unregistered("default-r4t5y")])])
_bn_mode(b, "CONFIG_MAP", drop_entries=True)
# The controller may pass the role by its real ARN (path included), as the IaC that made it grants.
b["emulator"] = {"rolePolicies": [
    {"role": "KarpenterController-demo", "name": "karpenter-controller", "reference": {"version": "1.8.1", "omit": ["AllowPassingInstanceRole"]}},
    {"role": "KarpenterController-demo", "name": "pass-node-role", "document": {"Version": "2012-10-17", "Statement": [
        {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Action": "iam:PassRole", "Resource": PATH_ROLE_ARN,
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}}]}}]}
write("aws-auth-node-role-with-path", b, ["KD5001", "KD5002", "KD6002"], roots=["KD5002"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/3380 and
# https://github.com/aws/karpenter-provider-aws/pull/8199: one zone's subnet is out of addresses;
# since 1.6 CreateFleet's InsufficientFreeAddressesInSubnet is treated as insufficient capacity
# and the zone is skipped for a while, so pods bound to that zone stay Pending.
full = subnets()
# A /28: 11 free addresses (AWS reserves five), fewer than a node and the VPC CNI's warm pool
# take; the emulator computes the same count from the CIDR.
full[0] = subnet("subnet-0a1b2c3d", "us-west-2a", "192.168.64.0/28", full[0]["tags"])
ip_evs = [_bn_event(n, "InsufficientCapacityError",
    "NodeClaim %s event: creating instance, insufficient capacity, with fleet error(s), InsufficientFreeAddressesInSubnet: There are not enough free addresses in subnet 'subnet-0a1b2c3d' to satisfy the requested number of instances." % n,
    count=c, minute=m) for n, c, m in (("default-h7j8k", 2, "44"), ("default-f5g6h", 1, "57"))]
write("subnet-out-of-addresses", bundle(
    "The private subnet of us-west-2a is a /28 with 11 free addresses, fewer than a node and the VPC CNI's warm IPs take (as in aws/karpenter-provider-aws#3380): launches there fail with InsufficientFreeAddressesInSubnet, which Karpenter treats as insufficient capacity since aws/karpenter-provider-aws#8199, deleting the NodeClaims; pods pinned to us-west-2a stay Pending.",
    overrides=[fact("ec2Subnets", full), fact({"events": {"kind": "NodeClaim", "namespace": None}}, ip_evs)]),
    ["KD3009", "KD6001"], roots=[])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws-ia/terraform-aws-eks-blueprints-addons/issues/139: the instance profile
# for Karpenter nodes was built on the Fargate profile's pod execution role
# (iam_role_name = module.eks.fargate_profiles["karpenter"].iam_role_name); launches fail with
# "You are not authorized to perform this operation".
FG_ROLE = "eks-fargate-pod-execution-role"
FG_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks-fargate-pods.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
nc = custom_nc({"instanceProfile": PROFILE}, drop=("role",),
               failing=("ValidationSucceeded", "RunInstancesAuthCheckFailed", "Controller isn't authorized to call ec2:RunInstances"))
fg_auth = maproles_entry(MNG_ROLE_ARN) + maproles_entry(NODE_ROLE_ARN) + maproles_entry(FARGATE_POD_ROLE, "system:node:{{SessionName}}", ("system:bootstrappers", "system:nodes", "system:node-proxier"))
write("instance-profile-with-fargate-pod-role", bundle(
    "The controller runs on Fargate and the instance profile in spec.instanceProfile was built on the Fargate profile's pod execution role (as in aws-ia/terraform-aws-eks-blueprints-addons#139): EC2 may not assume it, it has none of the node policies, the controller may not pass it (ValidationSucceeded=False, RunInstancesAuthCheckFailed), and its access entry is FARGATE_LINUX.",
    ncs=[nc],
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", node=FARGATE), pod("karpenter-6d9f7c8b5d-q9w4n", node="fargate-ip-192-168-101-9.us-west-2.compute.internal")],
    overrides=[profile_fact(roles=(FARGATE_POD_ROLE,)),
               fact({"iamRole": {"name": FG_ROLE}}, {"name": FG_ROLE, "arn": FARGATE_POD_ROLE, "path": "/", "trustPolicy": FG_TRUST, "permissionsBoundaryArn": None}),
               fact({"iamAttachedRolePolicies": {"role": FG_ROLE}}, attached(["AmazonEKSFargatePodExecutionRolePolicy"])),
               fact("awsAuth", aws_auth(fg_auth)),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [access_entry(NODE_ROLE_ARN), access_entry(FARGATE_POD_ROLE, "FARGATE_LINUX")])]),
    ["KD3005", "KD3007", "KD3008", "KD5003"], roots=["KD3005"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/7503: Karpenter 1.1.0 on EKS 1.31, the
# getting-started template no longer creates KarpenterNodeInstanceProfile, and the EC2NodeClass
# names it in spec.instanceProfile. 1.1 does not validate the profile: the class is Ready and
# every launch fails with "iamInstanceProfile.name is invalid" (reason LaunchFailed: the
# classified launch reasons came with 1.2).
IMG_110 = "public.ecr.aws/karpenter/controller:1.1.0@sha256:8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b"
nc = custom_nc({"instanceProfile": PROFILE}, drop=("role",))
nc["status"]["conditions"] = [c for c in nc["status"]["conditions"] if c["type"] != "ValidationSucceeded"]
nc["status"]["instanceProfile"] = PROFILE
nc["status"]["amis"][0]["name"] = "amazon-eks-node-al2023-x86_64-standard-1.31-v20241205"
IPN = "creating instance, InvalidParameterValue: Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name" % PROFILE
ipn_claim = claim("general-apps-nodepool-vpmpg", pool="general-apps-nodepool", launched=("Unknown", "LaunchFailed", IPN), registered=_BN_WAIT, initialized=_BN_WAIT, since="2026-11-23T09:57:00Z")
ipn_log = json.dumps({"level": "ERROR", "time": "2026-11-23T09:57:32.537Z", "logger": "controller", "message": "Reconciler error", "commit": "0a85efb",
    "controller": "nodeclaim.lifecycle", "controllerGroup": "karpenter.sh", "controllerKind": "NodeClaim", "NodeClaim": {"name": "general-apps-nodepool-vpmpg"},
    "namespace": "", "name": "general-apps-nodepool-vpmpg", "reconcileID": "82ae0ec6-d802-457c-9fee-049d2f19e4aa", "error": "launching nodeclaim, " + IPN})
CL131 = {"name": "demo", "arn": "arn:aws:eks:us-west-2:111122223333:cluster/demo", "version": "1.31", "endpoint": "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com",
         "status": "ACTIVE", "oidcIssuer": ISSUER, "authenticationMode": "API_AND_CONFIG_MAP", "vpcId": VPC, **CLUSTER_NET}
b = bundle("Karpenter 1.1.0 on EKS 1.31: the getting-started template no longer creates KarpenterNodeInstanceProfile-demo but the EC2NodeClass names it in spec.instanceProfile (as in aws/karpenter-provider-aws#7503). 1.1 does not validate the profile, so the class is Ready and every launch fails with InvalidParameterValue \"... for parameter iamInstanceProfile.name is invalid\" (reason LaunchFailed).",
    dep=[deployment(image=IMG_110)], ncs=[nc], nps=[nodepool("general-apps-nodepool")], logs=_bn_logs(ipn_log),
    overrides=[fact("kubeVersion", {"major": "1", "minor": "31", "gitVersion": "v1.31.4-eks-2d5f260"}),
               fact({"eksCluster": {"name": "demo"}}, CL131),
               profile_fact(roles=None), fact("nodeClaims", [ipn_claim])])
b["target"].update({"karpenterVersion": "1.1.0", "kubernetesVersion": "v1.31.4-eks-2d5f260"})
write("instance-profile-missing-launch-failed", b, ["KD1009", "KD3006", "KD6001"], roots=["KD3006"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/3794 (and #1914, #3862): GPU nodes come up
# without the NVIDIA device plugin, nvidia.com/gpu never appears in the node's allocatable and the
# NodeClaim never initializes (v1: ResourceNotRegistered).
GPU_NODE = "ip-192-168-70-44.us-west-2.compute.internal"
gnp = nodepool("gpu")
gnp["spec"]["template"]["spec"]["requirements"] = [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}]
gnp["spec"]["template"]["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
gclaim = claim("gpu-x4c5v", pool="gpu", initialized=("Unknown", "ResourceNotRegistered", "Resource \"nvidia.com/gpu\" was requested but not registered"),
               node_name=GPU_NODE, capacity={"cpu": "4", "memory": "15774Mi", "nvidia.com/gpu": "1", "pods": "58"})
gclaim["spec"]["resources"] = {"requests": {"cpu": "1690m", "memory": "1916904192", "nvidia.com/gpu": "1", "pods": "12"}}
gnode = node(GPU_NODE, karpenter=True)
gnode["metadata"]["labels"]["karpenter.sh/nodepool"] = "gpu"
gnode["spec"] = {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}
gnode["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
                   "allocatable": {"cpu": "3920m", "memory": "14981Mi", "pods": "58"}}
write("gpu-node-device-plugin-missing", bundle(
    "A GPU NodePool (g5) launches a node for a pod requesting nvidia.com/gpu, but the NVIDIA device plugin DaemonSet is not installed (as in aws/karpenter-provider-aws#3794, #1914 and #3862): the node is Ready without nvidia.com/gpu in its allocatable, the NodeClaim stays Initialized=Unknown (ResourceNotRegistered) and the pod Pending.",
    nps=[nodepool(), gnp], overrides=_bn_gpu_catalog() + [fact("nodeClaims", [gclaim]), fact({"node": {"name": GPU_NODE}}, gnode)]),
    ["KD6003", "KD6005"], roots=["KD6005"])

# ---------------------------------------------------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/6050 (AMIs pinned by name, the minor in the
# name moved by hand at each control-plane upgrade) and
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/3373 (upgrading to 1.33:
# "AWS does not have amazon-eks-node-1.33 named AMI"): the AL2 name pattern bumped to 1.33
# matches nothing, because EKS publishes no AL2 images from 1.33 on.
AL2_NAME = "amazon-eks-node-1.33-v*"
nc = custom_nc({"amiFamily": "AL2", "amiSelectorTerms": [{"name": AL2_NAME}]}, failing=("AMIsReady", "AMINotFound", "AMISelector did not match any AMIs"))
nc["status"].pop("amis")
write("ami-name-al2-after-upgrade", bundle(
    "The EC2NodeClass pins AMIs by name and the minor in the pattern was bumped with the control-plane upgrade to amazon-eks-node-1.33-v* (amiFamily AL2), as in aws/karpenter-provider-aws#6050; EKS publishes no AL2 image for 1.33 (terraform-aws-modules/terraform-aws-eks#3373), so the selector matches nothing: AMIsReady=False (AMINotFound).",
    ncs=[nc],
    overrides=[fact({"ec2Images": {"filters": [{"name": "name", "values": [AL2_NAME]}], "owners": ["self", "amazon"]}}, [])]),
    ["KD3003", "KD3008"], roots=["KD3003"])
