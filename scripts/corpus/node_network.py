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
write("nodes-without-cluster-sg", b, ["KD5006", "KD6002"])

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
write("private-subnet-no-egress", b, ["KD5004", "KD6002"])

# The public endpoint restricted to an office range (cluster-endpoint's own example) while the
# nodes leave through a NAT gateway whose Elastic IP is not in it.
b = bundle("Only the public endpoint is on and publicAccessCidrs was narrowed to the office range 203.0.113.0/24; the nodes leave the VPC through NAT gateway nat-0a1b2c3d4e5f60718, whose Elastic IP 198.51.100.7 is outside it, so the endpoint refuses them.",
    overrides=[_NN_STUCK()])
set_cluster(b, publicAccessCidrs=["203.0.113.0/24"])
write("public-endpoint-cidrs-exclude-nat", b, ["KD5004", "KD6002"])

# The private endpoint on, the public one off, and the VPC's DNS hostnames attribute off: the
# private hosted zone does not answer, so nodes cannot resolve the endpoint (the DNS variant of
# kubernetes-sigs/karpenter#2981, whose cause was a hosted zone missing from the VPC).
b = bundle("Private endpoint access on, public off, and the VPC's enableDnsHostnames attribute off: the cluster's private hosted zone does not resolve inside the VPC, so nodes cannot find the endpoint and never register.",
    overrides=[*network(dns=(True, False)), _NN_STUCK()])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("private-endpoint-dns-hostnames-off", b, ["KD5004", "KD6002"])

# An isolated VPC with the ECR and S3 endpoints but no EC2 endpoint: nodeadm retries
# EC2/DescribeInstances at boot and the node never joins (awslabs/amazon-eks-ami#2436).
b = bundle("An isolated VPC (private endpoint only, no NAT, no internet gateway) with VPC endpoints for ECR and S3 but none for EC2: nodeadm's DescribeInstances call at boot never returns (awslabs/amazon-eks-ami#2436) and the nodes never register.",
    overrides=[*isolated_network(isolated_endpoints(skip=("ec2",))), _NN_STUCK()])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("isolated-vpc-no-ec2-endpoint", b, ["KD5005", "KD6002"])

# Endpoints created without security groups get the VPC's default group, which admits only its
# own members (terraform-aws-modules/terraform-aws-eks#3113): here the endpoints' group admits
# nothing from the nodes.
b = bundle("An isolated VPC whose interface endpoints (ec2, ecr.api, ecr.dkr, sts) carry a security group that admits nothing from the nodes, as with endpoints left on the VPC's default group (terraform-aws-modules/terraform-aws-eks#3113): image pulls and nodeadm's EC2 calls time out.",
    overrides=[*isolated_network(isolated_endpoints(), vpce_inbound=[rule(groups=[VPCE_SG])]), _NN_STUCK()])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
write("isolated-vpc-endpoint-sg-excludes-nodes", b, ["KD5005", "KD6002"])

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
