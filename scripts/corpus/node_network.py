# The network between a node and the control plane (KD5006): the security groups an
# EC2NodeClass gives its nodes against the control plane's (the cluster security group and the
# groups given at creation). EKS's requirements: docs.aws.amazon.com/eks/latest/userguide/
# sec-group-reqs.html. The terraform-aws-eks layout (its own cluster group in securityGroupIds,
# a node group admitting 443/10250 from it) is modules/terraform-aws-eks node_groups.tf.
# Names local to this file start with _nn_.

_NN_EKS_SG = CLUSTER_SG                # made by EKS: admits its own members
_NN_TF_CLUSTER_SG = "sg-0c1d2e3f405162738"  # terraform-aws-eks "demo-cluster"
_NN_TF_NODE_SG = "sg-0d4e5f60718293a4b"     # terraform-aws-eks "demo-node"

def _nn_terraform_groups(discovered):
    """The groups of a terraform-aws-eks cluster: EKS's own cluster group, the module's cluster
    group (443 in from the node group) and node group (443 and 10250 in from the cluster group,
    all from itself). `discovered` is the group tagged for Karpenter's discovery."""
    tag = lambda gid: {"karpenter.sh/discovery": "demo"} if gid == discovered else {}
    return [
        sg(_NN_EKS_SG, "eks-cluster-sg-demo-1565329767", {"kubernetes.io/cluster/demo": "owned", "aws:eks:cluster-name": "demo", **tag(_NN_EKS_SG)},
           inbound=[rule(groups=[_NN_EKS_SG])]),
        sg(_NN_TF_CLUSTER_SG, "demo-cluster", {"Name": "demo-cluster", **tag(_NN_TF_CLUSTER_SG)},
           inbound=[rule("tcp", (443, 443), groups=[_NN_TF_NODE_SG])]),
        sg(_NN_TF_NODE_SG, "demo-node", {"Name": "demo-node", "kubernetes.io/cluster/demo": "owned", **tag(_NN_TF_NODE_SG)},
           inbound=[rule("tcp", (443, 443), groups=[_NN_TF_CLUSTER_SG]),
                    rule("tcp", (10250, 10250), groups=[_NN_TF_CLUSTER_SG]),
                    rule("tcp", (1025, 65535), groups=[_NN_TF_NODE_SG])]),
    ]

def _nn_terraform_cluster(b):
    """The module passes its own cluster group as an extra control-plane group."""
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"]["securityGroupIds"] = [_NN_TF_CLUSTER_SG]

def _nn_class(gid, name):
    nc = custom_nc()
    nc["status"]["securityGroups"] = [{"id": gid, "name": name}]
    return nc

def _nn_stuck(name):
    nf = ("Unknown", "NodeNotFound", "Node not registered with cluster")
    return claim(name, registered=nf, initialized=nf)

# https://github.com/aws-samples/eks-workshop-v2/issues/298 and
# https://github.com/aws/karpenter-provider-aws/issues/2286: a terraform-aws-eks cluster where
# the nodes carry the module's *cluster* group. That group admits 443 only from the node group,
# and neither it nor EKS's cluster group admits the nodes, so the kubelet never registers and
# the control plane cannot reach 10250.
b = bundle("A terraform-aws-eks cluster whose EC2NodeClass discovers the module's cluster security group (demo-cluster) instead of its node group, as in aws-samples/eks-workshop-v2#298 and aws/karpenter-provider-aws#2286: the control plane admits 443 only from demo-node and demo-cluster has no 10250 rule, so instances launch and never register.",
    ncs=[_nn_class(_NN_TF_CLUSTER_SG, "demo-cluster")],
    overrides=[fact("ec2SecurityGroups", _nn_terraform_groups(_NN_TF_CLUSTER_SG)),
               fact("nodeClaims", [_nn_stuck("default-k8s7d"), _nn_stuck("default-m2q4w")])])
_nn_terraform_cluster(b)
write("nodes-without-cluster-sg", b, ["KD5006", "KD6002"], roots=["KD5006"])

# The same cluster done right: the class discovers the module's node group, which the module's
# cluster group admits on 443 and which admits 10250 from it. The nodes do not carry EKS's
# cluster group, and need not.
b = bundle("A terraform-aws-eks cluster done right: the EC2NodeClass discovers the module's node security group (demo-node), which admits 443 and 10250 from the module's cluster group (given to EKS in securityGroupIds), and the cluster group admits 443 from it. The nodes do not carry EKS's own cluster security group.",
    ncs=[_nn_class(_NN_TF_NODE_SG, "demo-node")],
    overrides=[fact("ec2SecurityGroups", _nn_terraform_groups(_NN_TF_NODE_SG))])
_nn_terraform_cluster(b)
write("healthy-terraform-node-sg", b, [])

# ---- The way out of the VPC (KD5004) and the VPC endpoints of an isolated one (KD5005) -------
# Rules: docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html (which endpoint a node
# uses, publicAccessCidrs and NAT addresses, the private hosted zone's DNS needs),
# network-reqs.html, private-clusters.html and vpc-interface-endpoints.html (ec2, ecr.api,
# ecr.dkr, the S3 gateway).

_NN_STUCK = lambda: fact("nodeClaims", [_nn_stuck("default-w4e5r"), _nn_stuck("default-t6y7u")])

# A private subnet whose route table lost its NAT route (the NAT was never created, or the
# route table is the VPC's main one), with only the public endpoint on. No thread: this is
# network-reqs' "nodes must reach the cluster endpoint" with cluster-endpoint's public-only mode.
b = bundle("The cluster's endpoint is public only (private access off) and the private subnets the EC2NodeClass selects route nothing but the VPC's own range: there is no NAT gateway, so nodes cannot reach the endpoint and never register.",
    overrides=[*network(nat=False), _NN_STUCK()])
write("private-subnet-no-egress", b, ["KD5004", "KD6002"], roots=["KD5004"])

# The public endpoint restricted to an office range while the nodes leave through a NAT gateway
# whose Elastic IP is not in it: terraform-aws-modules/terraform-aws-eks#2149 and #1867
# ("Setting cluster_endpoint_public_access_cidrs a value makes the nodegroup not join").
b = bundle("Only the public endpoint is on and publicAccessCidrs was narrowed to the office range 203.0.113.0/24 (as in terraform-aws-modules/terraform-aws-eks#2149 and #1867); the nodes leave the VPC through NAT gateway nat-0a1b2c3d4e5f60718, whose Elastic IP 198.51.100.7 is outside it, so the endpoint refuses them.",
    overrides=[_NN_STUCK()])
set_cluster(b, publicAccessCidrs=["203.0.113.0/24"])
write("public-endpoint-cidrs-exclude-nat", b, ["KD5004", "KD6002"], roots=["KD5004"])

# The private endpoint on, the public one off, and the VPC's DNS hostnames attribute off: the
# private hosted zone does not answer, so nodes cannot resolve the endpoint (the DNS variant of
# kubernetes-sigs/karpenter#2981, whose cause was a hosted zone missing from the VPC).
b = bundle("Private endpoint access on, public off, and the VPC's enableDnsHostnames attribute off: the cluster's private hosted zone does not resolve inside the VPC, so nodes cannot find the endpoint and never register.",
    overrides=[*network(dns=(True, False)), _NN_STUCK()])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("private-endpoint-dns-hostnames-off", b, ["KD5004", "KD6002"], roots=["KD5004"])

# An isolated VPC with the ECR and S3 endpoints but no EC2 endpoint: nodeadm retries
# EC2/DescribeInstances at boot and the node never joins (awslabs/amazon-eks-ami#2436).
b = bundle("An isolated VPC (private endpoint only, no NAT, no internet gateway) with VPC endpoints for ECR and S3 but none for EC2: nodeadm's DescribeInstances call at boot never returns (awslabs/amazon-eks-ami#2436) and the nodes never register.",
    overrides=[*isolated_network(isolated_endpoints(skip=("ec2",))), _NN_STUCK(),
               # nodeadm at boot, as in awslabs/amazon-eks-ami#2436.
               fact({"ec2ConsoleOutput": {"instanceId": "i-0" + hashlib.sha256(b"default-w4e5r").hexdigest()[:17]}},
                    "[   14.201] nodeadm[1701]: {\"level\":\"info\",\"msg\":\"retrying request EC2/DescribeInstances, attempt 4\"}\n")])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("isolated-vpc-no-ec2-endpoint", b, ["KD5005", "KD6002"], roots=["KD5005"])

# aws-node on IRSA in an isolated VPC without an STS endpoint: its role is assumed with
# AssumeRoleWithWebIdentity at the regional STS endpoint (private-clusters.html lists sts for
# IRSA), which nothing answers, so ipamd has no credentials.
_nn_irsa_sa = aws_node_sa()
_nn_irsa_sa["metadata"]["annotations"] = {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/AmazonEKSVPCCNIRole-demo"}
b = bundle("An isolated VPC with endpoints for EC2, ECR and S3 but none for STS, while aws-node runs on an IRSA role: the role is assumed through STS, which no endpoint answers, so the VPC CNI gets no credentials and the nodes never become ready.",
    overrides=[*isolated_network(isolated_endpoints(skip=("sts",))), _NN_STUCK(),
               fact({"serviceAccount": {"namespace": "kube-system", "name": "aws-node"}}, _nn_irsa_sa)])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("isolated-vpc-irsa-cni-no-sts", b, ["KD5005", "KD6002"], roots=["KD5005"])

# Endpoints created without security groups get the VPC's default group, which admits only its
# own members (terraform-aws-modules/terraform-aws-eks#3113): here the endpoints' group admits
# nothing from the nodes.
b = bundle("An isolated VPC whose interface endpoints (ec2, ecr.api, ecr.dkr, sts) carry a security group that admits nothing from the nodes, as with endpoints left on the VPC's default group (terraform-aws-modules/terraform-aws-eks#3113): image pulls and nodeadm's EC2 calls time out.",
    overrides=[*isolated_network(isolated_endpoints(), vpce_inbound=[rule(groups=[VPCE_SG])]), _NN_STUCK()])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("isolated-vpc-endpoint-sg-excludes-nodes", b, ["KD5005", "KD6002"], roots=["KD5005"])

# Healthy: nodes in the public subnet with public addresses, the public endpoint open to all.
pub_nc = custom_nc()
pub_nc["status"]["subnets"] = [{"id": "subnet-0c7d8e9f", "zone": "us-west-2a", "zoneID": "usw2-az1"}]
pub_nc["spec"]["subnetSelectorTerms"] = [{"id": "subnet-0c7d8e9f"}]
b = bundle("Healthy: the EC2NodeClass selects the public subnet (subnet-0c7d8e9f, MapPublicIpOnLaunch on), which routes 0.0.0.0/0 to the VPC's internet gateway; the cluster's public endpoint admits 0.0.0.0/0.",
    ncs=[pub_nc])
write("healthy-public-subnet-nodes", b, [])

# Hub-and-spoke: the private subnets' default route goes to a transit gateway (NAT and endpoints
# in a hub VPC karpdoctor does not read). Neither a pass nor a failure.
b = bundle("The private subnets route 0.0.0.0/0 to transit gateway tgw-0a1b2c3d4e5f60718 (a hub VPC holds the NAT gateways), and only the public endpoint is on: karpdoctor cannot follow the route, so KD5004 says it cannot tell instead of failing.",
    overrides=[*network(private_default=route("0.0.0.0/0", transitGatewayId="tgw-0a1b2c3d4e5f60718"))])
write("tgw-egress-not-judged", b, [], unknown=["KD5004"], desc=None)

# ---- The stuck instance's console as KD6002's evidence ---------------------------------------
def _nn_iid(claim_name):
    return "i-0" + hashlib.sha256(claim_name.encode()).hexdigest()[:17]
def _nn_console(claim_name, text):
    return fact({"ec2ConsoleOutput": {"instanceId": _nn_iid(claim_name)}}, text)

# nodeadm refusing a #cloud-config document given as an AL2023 class's userData: the console
# lines of aws/karpenter-provider-aws#7889 and awslabs/amazon-eks-ami#2426 (systemd's unit
# failure for nodeadm-config). KD5007 sees the cause in the class; the console confirms it.
_NN_NODEADM = """[   11.482913] cloud-init[1672]: Cloud-init v. 22.2.2 running 'modules:final'
[FAILED] Failed to start nodeadm-config.service - EKS Nodeadm Config.
See 'systemctl status nodeadm-config.service' for details.
[DEPEND] Dependency failed for nodeadm-run.service - EKS Nodeadm Run.
[   12.013377] cloud-init[1672]: Cloud-init v. 22.2.2 finished at Mon, 23 Nov 2026 09:40:31 +0000. Datasource DataSourceEc2.  Up 12.01 seconds
"""
nc = custom_nc({"userData": "#cloud-config\npackages:\n  - amazon-ssm-agent\n"})
b = bundle("An AL2023 EC2NodeClass gives a #cloud-config document as userData; Karpenter hands it to nodeadm as a NodeConfig, nodeadm-config.service fails at boot (the console lines of aws/karpenter-provider-aws#7889), and the NodeClaims stay NodeNotFound. KD6002 quotes the console and names KD5007.",
    ncs=[nc], overrides=[fact("nodeClaims", [_nn_stuck("default-c0n5l")]), _nn_console("default-c0n5l", _NN_NODEADM)])
write("console-nodeadm-config-failed", b, ["KD5007", "KD6002"], roots=["KD5007"])

# The instance of a stuck NodeClaim is already gone (Karpenter replaced it after 15 minutes):
# no console to read, and nothing said about it beyond "gone".
b = bundle("A NodeClaim stuck NodeNotFound whose instance EC2 no longer lists (terminated more than an hour ago): KD6002 reports the claim, says the instance is gone and reads no console.",
    overrides=[fact("nodeClaims", [_nn_stuck("default-g0n3x")]),
               fact({"ec2Instances": {"ids": [_nn_iid("default-g0n3x")]}}, [])])
write("console-instance-gone", b, ["KD6002"], roots=["KD6002"])

# ---- The VPC CNI on Karpenter's nodes (KD5008) -------------------------------------------------
# aws-node with an IRSA role of its own that lacks AmazonEKS_CNI_Policy (the node role has it,
# but IRSA wins): docs.aws.amazon.com/eks/latest/userguide/cni-iam-role.html. The node's Ready
# message is the kubelet's while no CNI config exists (aws/karpenter-provider-aws#1185).
_NN_CNI_ROLE = "AmazonEKSVPCCNIRole-demo"
_NN_CNI_ARN = "arn:aws:iam::111122223333:role/" + _NN_CNI_ROLE
_NN_CNI_NODE = "ip-192-168-77-14.us-west-2.compute.internal"
_nn_cni_node = node(_NN_CNI_NODE, karpenter=True)
_nn_cni_node["spec"] = {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}
_nn_cni_node["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
    "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}]}
_nn_cni_sa = aws_node_sa()
_nn_cni_sa["metadata"]["annotations"] = {"eks.amazonaws.com/role-arn": _NN_CNI_ARN}
_nn_cni_pod = {"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "aws-node-7xq2m", "namespace": "kube-system", "labels": {"k8s-app": "aws-node"}},
    "spec": {"nodeName": _NN_CNI_NODE, "serviceAccountName": "aws-node", "containers": [{"name": "aws-node", "image": "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.4-eksbuild.1"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
               "containerStatuses": [{"name": "aws-node", "ready": False, "restartCount": 6, "image": "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.4-eksbuild.1", "imageID": "", "state": {"running": {"startedAt": "2026-11-23T09:52:00Z"}}}]}}
b = bundle("aws-node (the VPC CNI) has an IRSA role of its own, AmazonEKSVPCCNIRole-demo, with no policy attached: IRSA wins over the node role (which has AmazonEKS_CNI_Policy), ipamd cannot manage ENIs, the Karpenter node stays NotReady (\"cni plugin not initialized\") and its NodeClaim never initializes.",
    overrides=[fact({"serviceAccount": {"namespace": "kube-system", "name": "aws-node"}}, _nn_cni_sa),
               fact({"iamRole": {"name": _NN_CNI_ROLE}}, {"name": _NN_CNI_ROLE, "arn": _NN_CNI_ARN, "path": "/", "trustPolicy": irsa_trust(ns="kube-system", sa="aws-node"), "permissionsBoundaryArn": None}),
               fact({"iamAttachedRolePolicies": {"role": _NN_CNI_ROLE}}, []),
               fact({"pods": {"namespace": "kube-system", "labelSelector": "k8s-app=aws-node"}}, [_nn_cni_pod]),
               fact("nodeClaims", [claim("default-c9n1r", initialized=("Unknown", "NodeNotReady", "Node status is NotReady"), node_name=_NN_CNI_NODE)]),
               fact({"node": {"name": _NN_CNI_NODE}}, _nn_cni_node)])
write("cni-irsa-role-without-policy", b, ["KD5008", "KD6003"], roots=["KD5008"])

# ---- A network ACL that drops the replies (KD5004 d) -------------------------------------------
# binbashar/le-tf-infra-aws#175 ("nodes not being able to join the cluster due to NACL rules"):
# the private subnets' ACL admits only HTTPS and SSH in, so the replies to the nodes' own HTTPS
# calls (to ephemeral ports) are dropped; ACLs are stateless.
_NN_STRICT_ACL = "acl-0b2c3d4e5f6071829"
_nn_acls = [acl(DEFAULT_ACL, ["subnet-0c7d8e9f"], default=True),
            acl(_NN_STRICT_ACL, PRIVATE_SUBNETS, entries=[acl_entry(100, True),
                acl_entry(100, False, proto="6", ports=(443, 443)),
                acl_entry(110, False, proto="6", ports=(22, 22), cidr="10.0.0.0/8")])]
b = bundle("The private subnets' network ACL admits only TCP 443 and 22 in (as in binbashar/le-tf-infra-aws#175): ACLs are stateless, so the replies to the nodes' HTTPS calls, on ephemeral ports, are dropped and the nodes never register.",
    overrides=[*network(acls=_nn_acls), _NN_STUCK()])
write("nacl-denies-return-traffic", b, ["KD5004", "KD6002"], roots=["KD5004"])
