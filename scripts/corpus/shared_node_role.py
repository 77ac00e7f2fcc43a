# One node role for Linux and Windows EC2NodeClasses in an API-mode cluster. A principal has
# one access entry (EKS user guide, "Grant IAM users access to Kubernetes with EKS access
# entries"; a second one fails with ResourceInUseException, as in
# terraform-aws-modules/terraform-aws-eks#3371 and aws/karpenter-provider-aws#8157), so the
# entry's type serves both operating systems. Uses healthy_shapes.py's Windows helpers.

# The Linux nodes' EC2_LINUX entry (terraform-aws-eks's karpenter module makes it), and a
# Windows class added later on the same role: Windows nodes join without
# eks:kube-proxy-windows, their kube-proxy cannot read endpoints and DNS fails
# (terraform-aws-eks#1456).
b = bundle("A Windows Server 2022 EC2NodeClass was added beside the Linux one on the same node role in an API-mode cluster; the role's access entry is the EC2_LINUX one made for the Linux nodes, and EKS refuses a second entry (terraform-aws-modules/terraform-aws-eks#3371): Windows nodes lack eks:kube-proxy-windows.",
    nps=[nodepool(), _hs_windows_pool()], ncs=[nodeclass(), _hs_windows_class()],
    overrides=[fact("awsAuth", None),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(MNG_ROLE_ARN), access_entry(NODE_ROLE_ARN)])])
_hs_cluster(b, authenticationMode="API")
_hs_windows_ssm(b)
write("shared-node-role-linux-access-entry", b, ["KD5003"], roots=["KD5003"])

# The same role with an EC2_WINDOWS entry: the Windows nodes have their group; whether Linux
# nodes register under EC2_WINDOWS EKS does not document, so KD5003 warns.
b = bundle("Linux and Windows EC2NodeClasses share one node role in an API-mode cluster, and its access entry was made EC2_WINDOWS for the Windows nodes: EKS documents that type for Windows nodes only, so whether the Linux nodes register under it is for the user to verify (a warning).",
    nps=[nodepool(), _hs_windows_pool()], ncs=[nodeclass(), _hs_windows_class()],
    overrides=[fact("awsAuth", None),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(MNG_ROLE_ARN), access_entry(NODE_ROLE_ARN, "EC2_WINDOWS")])])
_hs_cluster(b, authenticationMode="API")
_hs_windows_ssm(b)
write("shared-node-role-windows-access-entry", b, ["KD5003"], exit_code=0, roots=[])
