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
