# Healthy Karpenter installs of distinct, documented shapes (exec'd at the end of
# scripts/make_fixtures.py with its helpers in scope). Every scenario is a shape real users run,
# taken from the Karpenter docs (aws/karpenter-provider-aws website/content/en/docs), the EKS
# user guide (awsdocs/amazon-eks-user-guide) or terraform-aws-eks, cited above it. Each must be
# healthy as AWS and Kubernetes behave: the expectation is that no check fails.
import copy as _copy

def _hs_cluster(b, **fields):
    """Sets fields of the bundle's eksCluster fact (authenticationMode, …)."""
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"].update(fields)

def _hs_drop(b, pred):
    b["facts"] = [e for e in b["facts"] if not pred(e["fact"])]

def _hs_set(b, key, value):
    """Replaces (or adds) one fact."""
    _hs_drop(b, lambda k: k == key)
    b["facts"].append({"fact": key, "value": value})

def _hs_irsa_env(role_arn):
    return [dict(e, value=role_arn) if e["name"] == "AWS_ROLE_ARN" else e for e in IRSA_ENV]

def _hs_role(name, trust=NODE_TRUST, path="/"):
    arn = "arn:aws:iam::111122223333:role%s%s" % (path, name)
    return {"name": name, "arn": arn, "path": path, "trustPolicy": trust, "permissionsBoundaryArn": None}

def _hs_controller_emulator(controller_roles, extra=()):
    """The controller role(s) carry the 1.8.1 reference policy (plus `extra` inline policies);
    no other role gets the controller's policy (default_emulator gives it to every role fact but
    the node role, which is wrong for second node roles and service-linked roles)."""
    pols = [{"role": r, "name": "karpenter-controller", "reference": {"version": "1.8.1"}} for r in controller_roles]
    return {"rolePolicies": pols + list(extra)}

def _hs_passrole(controller, role_arns, name="karpenter-pass-extra-node-roles"):
    """An inline policy letting the controller pass more node roles, with the reference
    statement's shape (AllowPassingInstanceRole: iam:PassedToService ec2.amazonaws.com)."""
    return {"role": controller, "name": name, "document": {"Version": "2012-10-17", "Statement": [
        {"Sid": "AllowPassingExtraInstanceRoles", "Effect": "Allow", "Action": "iam:PassRole", "Resource": list(role_arns),
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}}]}}

# The identity that created the cluster, given admin through its own STANDARD access entry
# (bootstrapClusterCreatorAdminPermissions, the default of CreateCluster, eksctl and
# terraform-aws-eks's enable_cluster_creator_admin_permissions). It is not a node role and must
# not be judged as one.
CREATOR_ENTRY = {"principalArn": "arn:aws:iam::111122223333:role/admins/PlatformAdmin", "type": "STANDARD",
                 "username": "arn:aws:sts::111122223333:assumed-role/PlatformAdmin/{{SessionName}}", "kubernetesGroups": []}


# ---- (1) Controller on Fargate ----------------------------------------------------------------
# Source: Karpenter getting started, "Create a cluster" Fargate tab:
# https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/getting-started/getting-started-with-karpenter/scripts/step02-create-cluster-fargate.sh
# (eksctl: IRSA role ${CLUSTER_NAME}-karpenter for the karpenter ServiceAccount, the node role in
# iamIdentityMappings (aws-auth), a Fargate profile "karpenter" selecting the namespace) and
# step08-apply-helm-chart-fargate.sh (the role-arn annotation). EKS maps the profile's pod execution
# role into aws-auth itself, as system:node:{{SessionName}} with system:bootstrappers,
# system:nodes, system:node-proxier (EKS user guide, "Migrating existing aws-auth ConfigMap entries
# to access entries", example output: https://docs.aws.amazon.com/eks/latest/userguide/migrating-access-entries.html).
FG_ROLE = "demo-karpenter"
FG_ROLE_ARN = "arn:aws:iam::111122223333:role/" + FG_ROLE
FG_POD_ROLE = "arn:aws:iam::111122223333:role/eksctl-demo-cluster-FargatePodExecutionRole-1A2B3C4D5E6F"
FG_NODES = ["fargate-ip-192-168-101-5.us-west-2.compute.internal", "fargate-ip-192-168-118-9.us-west-2.compute.internal"]
fg_aws_auth = (maproles_entry(FG_POD_ROLE, "system:node:{{SessionName}}", ("system:bootstrappers", "system:nodes", "system:node-proxier"))
               + maproles_entry(NODE_ROLE_ARN))
b = bundle("Healthy: the controller runs on Fargate as in Karpenter's getting-started guide (Fargate tab): an eksctl cluster with a Fargate profile \"karpenter\" selecting the karpenter namespace, IRSA with the eksctl-made role demo-karpenter, the Karpenter node role mapped in aws-auth by iamIdentityMappings, and the pod execution role mapped by EKS (system:node:{{SessionName}}).",
    annotation=FG_ROLE_ARN,
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", node=FG_NODES[0], env=_hs_irsa_env(FG_ROLE_ARN)),
          pod("karpenter-6d9f7c8b5d-q9w4n", node=FG_NODES[1], env=_hs_irsa_env(FG_ROLE_ARN))],
    overrides=[fact("awsAuth", aws_auth(fg_aws_auth)),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY]),
               fact({"eksFargateProfiles": {"cluster": "demo"}}, [{"name": "karpenter", "status": "ACTIVE", "podExecutionRoleArn": FG_POD_ROLE,
                    "subnets": ["subnet-0a1b2c3d", "subnet-0e4f5a6b"], "selectors": [{"namespace": "karpenter", "labels": {}}]}])])
write("healthy-controller-on-fargate", b, [])


# ---- (2) Controller on a managed node group (the Cluster Autoscaler migration guide) -----------
# Source: Karpenter "Migrating from Cluster Autoscaler":
# https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/getting-started/migrating-from-cas/_index.md
# KARPENTER_NAMESPACE=kube-system, IRSA role KarpenterControllerRole-${CLUSTER_NAME} trusting
# system:serviceaccount:kube-system:karpenter (step04-controller-iam.sh), the node role added to
# aws-auth next to the node group's entry ("The full aws-auth configmap should have two groups"),
# and the chart rendered with `helm template` (step08-generate-chart.sh) whose affinity is edited to
# keep the controller on the node group (karpenter.sh/nodepool DoesNotExist AND
# eks.amazonaws.com/nodegroup In [NODEGROUP], hostname anti-affinity). The controller role carries
# the 1.8.1 reference policy (the guide's inline policy is an abbreviated copy; see the report).
MNG_CTRL = "KarpenterControllerRole-demo"
MNG_CTRL_ARN = "arn:aws:iam::111122223333:role/" + MNG_CTRL
dep = deployment(ns="kube-system")
dep["metadata"].pop("annotations")  # kubectl apply of `helm template` output: no Helm release annotations
dep["spec"]["template"]["spec"]["affinity"] = {
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
        {"key": "eks.amazonaws.com/nodegroup", "operator": "In", "values": ["system"]}]}]}},
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]}}
b = bundle("Healthy: Karpenter installed by the Cluster Autoscaler migration guide: in kube-system, IRSA role KarpenterControllerRole-demo, the controller pinned to the managed node group \"system\" by node affinity (helm template output applied with kubectl), and the node role added to aws-auth next to the node group's entry.",
    ns="kube-system", dep=[dep], annotation=MNG_CTRL_ARN,
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", ns="kube-system", node=NODE_A, env=_hs_irsa_env(MNG_CTRL_ARN)),
          pod("karpenter-6d9f7c8b5d-q9w4n", ns="kube-system", node=NODE_B, env=_hs_irsa_env(MNG_CTRL_ARN))],
    trust=irsa_trust(ns="kube-system"),
    overrides=[fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY])])
write("healthy-controller-on-managed-node-group", b, [])


# ---- (3) Authentication mode API: access entries only, no aws-auth ------------------------------
# Sources: EKS user guide, "Set Cluster Authentication Mode" (EKS API only: access entries, the
# ConfigMap is not read) and the access-entry types (EC2_LINUX for a Linux node role):
# https://docs.aws.amazon.com/eks/latest/userguide/grant-k8s-access.html ; the terraform-aws-eks
# Karpenter module creates the node role's entry (aws_eks_access_entry "node", type EC2_LINUX):
# https://github.com/terraform-aws-modules/terraform-aws-eks/blob/master/modules/karpenter/main.tf
# A cluster created in API mode has no aws-auth ConfigMap at all; the managed node group's role
# has its EC2_LINUX entry, made by EKS.
b = bundle("Healthy: a cluster in authentication mode API (access entries only, no aws-auth ConfigMap): the Karpenter node role and the node group's role have EC2_LINUX access entries, the cluster creator a STANDARD one.",
    overrides=[fact("awsAuth", None),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(MNG_ROLE_ARN), access_entry(NODE_ROLE_ARN)])])
_hs_cluster(b, authenticationMode="API")
write("healthy-auth-mode-api", b, [])


# ---- (4) Authentication mode CONFIG_MAP: aws-auth only -----------------------------------------
# Sources: EKS user guide, "Set Cluster Authentication Mode": "All clusters created before the
# introduction of access entries have the ConfigMap method enabled" and CONFIG_MAP reads only
# aws-auth (https://docs.aws.amazon.com/eks/latest/userguide/grant-k8s-access.html); the node role
# is added to aws-auth as in Karpenter's getting started (step04-grant-access.sh:
# eksctl create iamidentitymapping --username system:node:{{EC2PrivateDNSName}}
# --group system:bootstrappers --group system:nodes). The access-entry API answers
# InvalidRequestException on such a cluster, so there is nothing to list.
b = bundle("Healthy: an older cluster in authentication mode CONFIG_MAP (no access entries): aws-auth maps the node group's role and the Karpenter node role (eksctl create iamidentitymapping, as in the getting-started guide).")
_hs_cluster(b, authenticationMode="CONFIG_MAP")
_hs_drop(b, lambda k: isinstance(k, dict) and "eksAccessEntries" in k)
write("healthy-auth-mode-config-map", b, [])


# ---- (5) Bottlerocket nodes --------------------------------------------------------------------
# Source: Karpenter examples/v1/bottlerocket.yaml
# (https://github.com/aws/karpenter-provider-aws/blob/main/examples/v1/bottlerocket.yaml):
# alias bottlerocket@latest, the root volume /dev/xvda 4Gi and the data volume /dev/xvdb 20Gi,
# a NodePool on amd64/linux. The alias resolves /aws/service/bottlerocket/aws-k8s-<minor>[-nvidia]/
# <arch>/latest/image_id (docs/concepts/nodeclasses.md, spec.amiSelectorTerms, Bottlerocket tab).
br_pool = nodepool()
br_pool["spec"]["template"]["spec"]["requirements"] = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}]
br_pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "bottlerocket"
br_nc = custom_nc({"amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
    "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp3", "volumeSize": "4Gi", "deleteOnTermination": True}},
                            {"deviceName": "/dev/xvdb", "ebs": {"volumeType": "gp3", "volumeSize": "20Gi", "deleteOnTermination": True}}]})
br_nc["metadata"]["name"] = "bottlerocket"
br_nc["status"]["amis"] = [
    {"id": ami_for("/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id"), "name": "bottlerocket-aws-k8s-1.33-x86_64-v1.50.0-8e1fb5bd",
     "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}, {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}]},
    {"id": ami_for("/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/latest/image_id"), "name": "bottlerocket-aws-k8s-1.33-nvidia-x86_64-v1.50.0-8e1fb5bd",
     "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}, {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]}]
b = bundle("Healthy: Bottlerocket nodes as in Karpenter's examples/v1/bottlerocket.yaml: an EC2NodeClass on alias bottlerocket@latest (SSM /aws/service/bottlerocket/aws-k8s-1.33/...) with Bottlerocket's root and data volumes, an amd64/linux NodePool.",
    nps=[br_pool], ncs=[br_nc])
write("healthy-bottlerocket", b, [])


# ---- (6) Windows nodes beside Linux, one node role mapped in aws-auth with the Windows group ------
# Sources: Karpenter examples/v1/windows-2022.yaml (NodePool kubernetes.io/os In [windows],
# amd64; EC2NodeClass alias windows2022@latest, "Windows does not support pinning", same node role
# KarpenterNodeRole-${CLUSTER_NAME}); the getting started's iamIdentityMappings and the CAS guide's
# aws-auth entry: "If you intend to run Windows workloads, the kube-proxy group should be specified"
# (- eks:kube-proxy-windows, aws/karpenter#5099); EKS user guide, Windows support: the node role's
# aws-auth entry holds system:bootstrappers, system:nodes, eks:kube-proxy-windows
# (https://docs.aws.amazon.com/eks/latest/userguide/windows-support.html). The alias resolves
# /aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-<minor>/image_id
# (Karpenter pkg/providers/amifamily/windows.go). The node role has no access entry here: in
# API_AND_CONFIG_MAP an EC2_LINUX entry would take precedence over the aws-auth mapping.
WIN_PATH = "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.33/image_id"
def _hs_windows_pool(name="windows2022"):
    p = nodepool(name)
    p["metadata"]["annotations"] = {"kubernetes.io/description": "General purpose NodePool for Windows workloads"}
    p["spec"]["template"]["spec"]["requirements"] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}]
    p["spec"]["template"]["spec"]["nodeClassRef"]["name"] = name
    return p
def _hs_windows_class(name="windows2022", role="KarpenterNodeRole-demo"):
    nc = custom_nc({"role": role, "amiSelectorTerms": [{"alias": "windows2022@latest"}],
                    "metadataOptions": {"httpProtocolIPv6": "disabled", "httpTokens": "required"}})
    nc["metadata"]["name"] = name
    nc["status"]["amis"] = [{"id": ami_for(WIN_PATH), "name": "Windows_Server-2022-English-Core-EKS_Optimized-1.33-2026.11.12",
        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                         {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
                         {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]
    nc["status"]["instanceProfile"] = "demo_9876543210987654321"
    return nc
def _hs_windows_ssm(b):
    """alias_paths() of make_fixtures.py does not expand windows aliases; the GetParameters fact
    karpdoctor asks is every alias path of every class (src/checks/common/amis.rs)."""
    names = sorted(set(alias_paths("al2023@latest", "1.33")) | {WIN_PATH})
    b["facts"].append({"fact": {"ssmParameters": {"names": names}}, "value": {n: ami_for(n) for n in names}})
win_groups = ("system:bootstrappers", "system:nodes", "eks:kube-proxy-windows")
b = bundle("Healthy: Windows Server 2022 nodes beside Linux ones, as in Karpenter's examples/v1/windows-2022.yaml: a windows2022 EC2NodeClass (alias windows2022@latest) and NodePool (kubernetes.io/os windows, amd64) next to the default AL2023 ones, sharing KarpenterNodeRole-demo, whose aws-auth entry carries eks:kube-proxy-windows as the guide's Windows note and the EKS Windows docs require.",
    nps=[nodepool(), _hs_windows_pool()], ncs=[nodeclass(), _hs_windows_class()],
    overrides=[fact("awsAuth", aws_auth(maproles_entry(MNG_ROLE_ARN) + maproles_entry(NODE_ROLE_ARN, groups=win_groups))),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY])])
_hs_windows_ssm(b)
write("healthy-windows-aws-auth", b, [])


# ---- (7) Windows with its own node role and an EC2_WINDOWS access entry (API mode) -------------
# Sources: EKS user guide, access entries: "EC2_Windows (for an IAM role used with Windows
# self-managed nodes)", EC2_Linux for Linux/Bottlerocket ones
# (https://docs.aws.amazon.com/eks/latest/userguide/grant-k8s-access.html); KD5003's own doc asks
# for one node role per operating system. The controller may pass the Windows role through a
# second statement of the reference AllowPassingInstanceRole shape (iam:PassedToService
# ec2.amazonaws.com), as Karpenter's policy reference describes for each node role.
WIN_ROLE = "KarpenterWindowsNodeRole-demo"
WIN_ROLE_ARN = "arn:aws:iam::111122223333:role/" + WIN_ROLE
b = bundle("Healthy: Windows and Linux nodes with one node role per operating system in an API-mode cluster: KarpenterNodeRole-demo has an EC2_LINUX access entry, KarpenterWindowsNodeRole-demo an EC2_WINDOWS one, and the controller role may pass both.",
    nps=[nodepool(), _hs_windows_pool()], ncs=[nodeclass(), _hs_windows_class(role=WIN_ROLE)],
    overrides=[fact("awsAuth", None),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(MNG_ROLE_ARN), access_entry(NODE_ROLE_ARN), access_entry(WIN_ROLE_ARN, "EC2_WINDOWS")]),
               fact({"iamRole": {"name": WIN_ROLE}}, _hs_role(WIN_ROLE)),
               fact({"iamAttachedRolePolicies": {"role": WIN_ROLE}}, attached())])
_hs_cluster(b, authenticationMode="API")
_hs_windows_ssm(b)
b["emulator"] = _hs_controller_emulator(["KarpenterController-demo"], [_hs_passrole("KarpenterController-demo", [WIN_ROLE_ARN])])
write("healthy-windows-access-entry", b, [])


# ---- (8) Custom AMIs selected by id ------------------------------------------------------------
# Sources: Karpenter "Managing AMIs" (lock AMIs down by id) and nodeclasses.md "Specify using ids"
# (amiSelectorTerms: - id: ami-123 - id: ami-456); examples/v1/al2-custom-ami.yaml (amiFamily set,
# because without an alias the family is not implied). Here the EKS-optimized AL2023 1.33 images
# of both architectures (owner 602401143452), pinned by id, with their EC2 deprecation time (two
# years after creation, as EC2 sets for public AMIs) still in the future.
ID_X86, ID_ARM = "ami-0c1d2e3f405162738", "ami-0d2e3f40516273849"
def _hs_image(iid, name, arch, owner, created, tags=None, deprecation=None):
    return {"imageId": iid, "name": name, "architecture": arch, "state": "available", "ownerId": owner,
            "creationDate": created, "deprecationTime": deprecation, "tags": tags or {}}
IMG_X86 = _hs_image(ID_X86, "amazon-eks-node-al2023-x86_64-standard-1.33-v20261101", "x86_64", "602401143452", "2026-11-01T04:12:09.000Z", deprecation="2028-11-01T04:12:09.000Z")
IMG_ARM = _hs_image(ID_ARM, "amazon-eks-node-al2023-arm64-standard-1.33-v20261101", "arm64", "602401143452", "2026-11-01T04:15:41.000Z", deprecation="2028-11-01T04:15:41.000Z")
id_nc = custom_nc({"amiFamily": "AL2023", "amiSelectorTerms": [{"id": ID_X86}, {"id": ID_ARM}]})
id_nc["status"]["amis"] = [{"id": ID_ARM, "name": IMG_ARM["name"], "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
                           {"id": ID_X86, "name": IMG_X86["name"], "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]
b = bundle("Healthy: AMIs locked down by id (Karpenter's Managing AMIs): amiFamily AL2023 and two id terms, the EKS-optimized AL2023 1.33 images for x86_64 and arm64 of this region, used by a NodePool allowing both architectures.",
    nps=[nodepool(arch=("amd64", "arm64"))], ncs=[id_nc],
    overrides=[fact({"ec2Images": {"filters": [{"name": "image-id", "values": [ID_X86]}], "owners": []}}, [IMG_X86]),
               fact({"ec2Images": {"filters": [{"name": "image-id", "values": [ID_ARM]}], "owners": []}}, [IMG_ARM])])
write("healthy-custom-ami-by-id", b, [])


# ---- (9) Custom AMIs selected by tags, owner set -----------------------------------------------
# Sources: Karpenter nodeclasses.md spec.amiSelectorTerms ("Select all with a specified tag",
# "Select by all under an owner": owner: self; "AMIs resolved from tags" in status.amis, one image
# per architecture) and "Managing AMIs" (golden images built in the account). Golden AL2023 images
# built from the EKS-optimized 1.33 ones by the account's image pipeline, tagged for the cluster.
GOLD_X86, GOLD_ARM = "ami-0e3f405162738495a", "ami-0f405162738495a6b"
gold_tags = {"karpenter.sh/discovery": "demo", "Name": "golden-al2023-eks-1.33"}
IMG_GX = _hs_image(GOLD_X86, "golden-al2023-eks-1.33-x86_64-20261115", "x86_64", "111122223333", "2026-11-15T02:00:00.000Z", tags=gold_tags)
IMG_GA = _hs_image(GOLD_ARM, "golden-al2023-eks-1.33-arm64-20261115", "arm64", "111122223333", "2026-11-15T02:05:00.000Z", tags=gold_tags)
tag_nc = custom_nc({"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}, "owner": "self"}]})
tag_nc["status"]["amis"] = [{"id": GOLD_ARM, "name": IMG_GA["name"], "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
                            {"id": GOLD_X86, "name": IMG_GX["name"], "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]
b = bundle("Healthy: golden AL2023 images built in the account, selected by tag with owner self (amiSelectorTerms [{tags: {karpenter.sh/discovery: demo}, owner: self}], amiFamily AL2023): one image per architecture, a NodePool allowing both.",
    nps=[nodepool(arch=("amd64", "arm64"))], ncs=[tag_nc],
    overrides=[fact({"ec2Images": {"filters": [{"name": "tag:karpenter.sh/discovery", "values": ["demo"]}], "owners": ["self"]}}, [IMG_GX, IMG_GA])])
write("healthy-custom-ami-by-tags", b, [])


# ---- (10) Several EC2NodeClasses with pre-made instance profiles --------------------------------
# Sources: Karpenter nodeclasses.md spec.instanceProfile ("Karpenter will not manage the
# InstanceProfile on your behalf; instead, it expects that you have pre-provisioned an IAM instance
# profile and assigned it a role") and the getting started's commands
# (aws iam create-instance-profile --instance-profile-name "KarpenterNodeInstanceProfile-${CLUSTER_NAME}";
# aws iam add-role-to-instance-profile ... --role-name "KarpenterNodeRole-${CLUSTER_NAME}"). A second
# team's class uses its own profile and role (batch jobs), which the controller may pass through a
# second AllowPassingInstanceRole-shaped statement; both roles have EC2_LINUX access entries.
BATCH_ROLE = "KarpenterBatchNodeRole-demo"
BATCH_ROLE_ARN = "arn:aws:iam::111122223333:role/" + BATCH_ROLE
BATCH_PROFILE = "KarpenterBatchNodeInstanceProfile-demo"
ip_default = custom_nc({"instanceProfile": PROFILE}, drop=("role",))
ip_default["status"]["instanceProfile"] = PROFILE
ip_batch = custom_nc({"instanceProfile": BATCH_PROFILE}, drop=("role",))
ip_batch["metadata"]["name"] = "batch"
ip_batch["status"]["instanceProfile"] = BATCH_PROFILE
batch_pool = nodepool("batch", ref={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "batch"})
batch_pool["spec"]["template"]["spec"]["taints"] = [{"key": "team", "value": "batch", "effect": "NoSchedule"}]
b = bundle("Healthy: two EC2NodeClasses use instance profiles made outside Karpenter (spec.instanceProfile): KarpenterNodeInstanceProfile-demo holding KarpenterNodeRole-demo, and KarpenterBatchNodeInstanceProfile-demo holding KarpenterBatchNodeRole-demo for a tainted batch NodePool; the controller may pass both roles, both have EC2_LINUX access entries and the node policies.",
    nps=[nodepool(), batch_pool], ncs=[ip_default, ip_batch],
    overrides=[profile_fact(), profile_fact(BATCH_PROFILE, roles=(BATCH_ROLE_ARN,)),
               fact({"iamRole": {"name": BATCH_ROLE}}, _hs_role(BATCH_ROLE)),
               fact({"iamAttachedRolePolicies": {"role": BATCH_ROLE}}, attached()),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(NODE_ROLE_ARN), access_entry(BATCH_ROLE_ARN)])])
b["emulator"] = _hs_controller_emulator(["KarpenterController-demo"], [_hs_passrole("KarpenterController-demo", [BATCH_ROLE_ARN])])
write("healthy-instance-profiles", b, [])


# ---- (11) A private cluster: isolated VPC, pre-made instance profile, interruption queue --------
# Source: Karpenter getting started, "Private Clusters"
# (https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/getting-started/getting-started-with-karpenter/_index.md):
# eksctl privateCluster.enabled, `--set settings.isolatedVPC=true` (ISOLATED_VPC, docs/reference/
# settings.md: "disabling look-ups to the AWS on-demand pricing endpoint"), VPC endpoints for ec2,
# ecr, s3, sts, ssm, sqs ("if using interruption handling") and eks; images copied to ECR private;
# "no VPC private endpoint for the IAM API ... you cannot use the default spec.role ... specify
# Karpenter to use this instance profile through the spec.instanceProfile field". The fully private
# VPC has no public subnets (eksctl "EKS Fully-Private Cluster").
PRIV_IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/karpenter/controller:1.8.1@sha256:5c1b8c3f6e1c0b7c9f0d4b7d2f3a8e6c1d2b3a4f5e6d7c8b9a0f1e2d3c4b5a69"
priv_pods = [pod("karpenter-6d9f7c8b5d-7xk2p"), pod("karpenter-6d9f7c8b5d-q9w4n", node=NODE_B)]
for p in priv_pods:
    p["spec"]["containers"][0]["image"] = PRIV_IMAGE.split("@")[0]
    p["status"]["containerStatuses"][0]["image"] = PRIV_IMAGE.split("@")[0]
priv_nc = custom_nc({"instanceProfile": PROFILE}, drop=("role",))
priv_nc["status"]["instanceProfile"] = PROFILE
b = bundle("Healthy: a fully private cluster as in Karpenter's Private Clusters section: no public subnets, the controller image in ECR private, settings.isolatedVPC=true (no pricing calls), an EC2NodeClass on a pre-made instance profile (no IAM endpoint), and the interruption queue reached through the SQS endpoint.",
    dep=[deployment(image=PRIV_IMAGE)], pods=priv_pods, ncs=[priv_nc],
    overrides=[profile_fact(), *isolated_network(isolated_endpoints())])
set_cluster(b, endpointPrivateAccess=True, endpointPublicAccess=False)
set_env(b, "ISOLATED_VPC", "true")
write("healthy-private-cluster-isolated-vpc", b, [])


# ---- (12) Karpenter in kube-system with Pod Identity (terraform-aws-eks's Karpenter example) ----
# Sources: terraform-aws-eks examples/karpenter/main.tf
# (https://github.com/terraform-aws-modules/terraform-aws-eks/blob/master/examples/karpenter/main.tf):
# helm_release "karpenter" in namespace kube-system, module "karpenter" with enable_pod_identity and
# create_pod_identity_association, the eks-pod-identity-agent add-on, a managed node group
# "karpenter" for the controller, and the module's EC2_LINUX access entry for the node role
# (modules/karpenter/main.tf); Karpenter's docs: "By default, Karpenter is installed into the
# kube-system namespace" (getting started, Preventing APIServer Request Throttling).
KS = "kube-system"
ks_pods = [pod("karpenter-6d9f7c8b5d-7xk2p", ns=KS, env=PI_ENV, node=NODE_A), pod("karpenter-6d9f7c8b5d-q9w4n", ns=KS, env=PI_ENV, node=NODE_B)]
ks_dep = deployment(ns=KS)
ks_dep["spec"]["template"]["spec"]["dnsPolicy"] = "Default"
b = bundle("Healthy: terraform-aws-eks's Karpenter example: the controller in kube-system on the managed node group, credentials from EKS Pod Identity (association kube-system/karpenter, agent add-on ACTIVE with a pod on each node), the node role's EC2_LINUX access entry made by the module.",
    ns=KS, dep=[ks_dep], pods=ks_pods, annotation=None,
    assocs=[{"associationId": "a-0123456789abcdef0", "namespace": KS, "serviceAccount": "karpenter", "roleArn": PI_ROLE}],
    overrides=[fact({"iamRole": {"name": "KarpenterPodIdentity-demo"}}, {"name": "KarpenterPodIdentity-demo", "arn": PI_ROLE, "path": "/", "trustPolicy": PI_TRUST, "permissionsBoundaryArn": None}),
               fact({"eksAddon": {"cluster": "demo", "name": "eks-pod-identity-agent"}}, {"name": "eks-pod-identity-agent", "status": "ACTIVE", "version": "v1.3.4-eksbuild.1"}),
               fact({"pods": {"namespace": KS, "labelSelector": "app.kubernetes.io/name=eks-pod-identity-agent"}}, [agent(NODE_A, 0), agent(NODE_B, 1)]),
               fact({"eksNodegroup": {"cluster": "demo", "name": "system"}}, {"name": "system", "nodeRole": NODEGROUP_ROLE, "status": "ACTIVE"}),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(NODE_ROLE_ARN)])])
b["emulator"] = {**_hs_controller_emulator(["KarpenterPodIdentity-demo"]), "roles": [{"name": "eks-system-nodes", "trust": json.loads(NODE_TRUST)}]}
write("healthy-kube-system-pod-identity", b, [])


# ---- (13) A spot NodePool with the Spot service-linked role present -----------------------------
# Sources: Karpenter examples/v1/spot.yaml (capacity-type In [spot], amd64/linux, c/m/r, generation
# > 2) and getting started step06-add-spot-role.sh (aws iam create-service-linked-role
# --aws-service-name spot.amazonaws.com); the interruption queue and its four rules from the
# getting-started CloudFormation template handle the two-minute notices.
spot = nodepool("spot")
spot["spec"]["template"]["spec"]["requirements"] = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}]
b = bundle("Healthy: a spot NodePool (Karpenter's examples/v1/spot.yaml) in an account where AWSServiceRoleForEC2Spot exists (getting started step06), with the interruption queue and its rules in place.",
    nps=[nodepool(), spot], overrides=[fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, SPOT_SLR)])
b["emulator"] = {**_hs_controller_emulator(["KarpenterController-demo"]), "serviceLinkedRoles": ["spot.amazonaws.com"]}
write("healthy-spot-with-service-linked-role", b, [])


# ---- (14) A customer managed EBS key whose policy names the controller role and the Spot SLR -----
# Sources: Karpenter troubleshooting, "Node terminates before ready on failed encrypted EBS volume"
# (the launching principal needs the key); the two key-policy sections AWS documents for a
# launching service-linked role (use of the key, and kms:CreateGrant with
# kms:GrantIsForAWSResource), https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html,
# given to the controller role (on-demand launches) and AWSServiceRoleForEC2Spot (spot launches),
# next to the default "Enable IAM User Permissions" statement. The controller role's IAM policy (the
# 1.8.1 reference) grants no KMS use: the key policy alone grants it, as KMS allows for principals
# it names.
HS_KEY_ID = "2345bcde-23bc-45de-67f0-2345678901bc"
HS_KEY_ARN = "arn:aws:kms:us-west-2:111122223333:key/" + HS_KEY_ID
USERS = [ROLE_ARN, SPOT_SLR["arn"]]
NAMED_POLICY = json.dumps({"Version": "2012-10-17", "Id": "karpenter-ebs", "Statement": [
    {"Sid": "Enable IAM User Permissions", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "kms:*", "Resource": "*"},
    {"Sid": "Allow use of the key", "Effect": "Allow", "Principal": {"AWS": USERS},
     "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"], "Resource": "*"},
    {"Sid": "Allow attachment of persistent resources", "Effect": "Allow", "Principal": {"AWS": USERS},
     "Action": ["kms:CreateGrant"], "Resource": "*", "Condition": {"Bool": {"kms:GrantIsForAWSResource": True}}}]})
cmk_pool = nodepool()
cmk_pool["spec"]["template"]["spec"]["requirements"][1]["values"] = ["spot", "on-demand"]
b = bundle("Healthy: node volumes encrypted with a customer managed KMS key whose key policy names the controller role and AWSServiceRoleForEC2Spot in the two documented sections (use of the key; CreateGrant for AWS resources), for a NodePool allowing spot and on-demand.",
    nps=[cmk_pool],
    ncs=[custom_nc({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True, "kmsKeyID": HS_KEY_ARN}}]})],
    overrides=[fact({"kmsKey": {"keyId": HS_KEY_ARN}}, {"keyId": HS_KEY_ID, "arn": HS_KEY_ARN, "keyManager": "CUSTOMER", "keyState": "Enabled", "policy": NAMED_POLICY}),
               fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, SPOT_SLR)])
b["emulator"] = {**_hs_controller_emulator(["KarpenterController-demo"]), "serviceLinkedRoles": ["spot.amazonaws.com"]}
write("healthy-ebs-cmk-key-policy-names-roles", b, [])


# ---- (15) Encryption by default with a CMK whose policy follows Karpenter's troubleshooting ------
# Source: Karpenter troubleshooting, "Node terminates before ready on failed encrypted EBS volume"
# (https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/troubleshooting.md):
# "EBS encryption could have been enabled by an account administrator or by default", and the fix
# "use the approach that AWS EBS uses, which avoids adding particular roles to the KMS policy":
# Principal AWS "*" for kms:Encrypt/Decrypt/ReEncrypt*/GenerateDataKey*/CreateGrant/DescribeKey
# with kms:ViaService ec2.${AWS_REGION}.amazonaws.com and kms:CallerAccount ${AWS_ACCOUNT_ID}, plus
# the account root for Describe*/Get*/List*/RevokeGrant. Every principal of the account that
# launches through EC2 (the controller role, the Spot service-linked role) may use the key.
VIA_KEY_ID = "3456cdef-34cd-56ef-78a0-3456789012cd"
VIA_KEY_ARN = "arn:aws:kms:us-west-2:111122223333:key/" + VIA_KEY_ID
VIA_POLICY = json.dumps({"Version": "2012-10-17", "Id": "ebs-via-service", "Statement": [
    {"Sid": "Allow access through EBS for all principals in the account that are authorized to use EBS", "Effect": "Allow", "Principal": {"AWS": "*"},
     "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:CreateGrant", "kms:DescribeKey"], "Resource": "*",
     "Condition": {"StringEquals": {"kms:ViaService": "ec2.us-west-2.amazonaws.com", "kms:CallerAccount": "111122223333"}}},
    {"Sid": "Allow direct access to key metadata to the account", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
     "Action": ["kms:Describe*", "kms:Get*", "kms:List*", "kms:RevokeGrant"], "Resource": "*"}]})
via_pool = nodepool()
via_pool["spec"]["template"]["spec"]["requirements"][1]["values"] = ["spot", "on-demand"]
b = bundle("Healthy: the account encrypts EBS by default with a customer managed key whose policy is the one Karpenter's troubleshooting guide gives (any principal of the account, through EC2 only: kms:ViaService ec2.us-west-2.amazonaws.com, kms:CallerAccount), so the controller role and the Spot service-linked role may both use it; the EC2NodeClass sets no key of its own.",
    nps=[via_pool],
    overrides=[fact("ebsDefaults", {"encryptedByDefault": True, "defaultKmsKeyId": VIA_KEY_ARN}),
               fact({"kmsKey": {"keyId": VIA_KEY_ARN}}, {"keyId": VIA_KEY_ID, "arn": VIA_KEY_ARN, "keyManager": "CUSTOMER", "keyState": "Enabled", "policy": VIA_POLICY}),
               fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, SPOT_SLR)])
b["emulator"] = {**_hs_controller_emulator(["KarpenterController-demo"]), "serviceLinkedRoles": ["spot.amazonaws.com"]}
write("healthy-ebs-default-cmk-via-service", b, [])


# ---- (16) A node role with an IAM path --------------------------------------------------------
# Sources: EKS user guide, access entries: "If the ARN is for an IAM role, it can include a path.
# ARNs in aws-auth ConfigMap entries, can't include a path"
# (https://docs.aws.amazon.com/eks/latest/userguide/grant-k8s-access.html, and the aws-auth page);
# terraform-aws-eks's Karpenter module takes node_iam_role_path for organisations that put roles
# under a path. Here the node role is /karpenter/KarpenterNodeRole-demo, mapped in aws-auth by its
# ARN without the path (as the authenticator matches it) in an API_AND_CONFIG_MAP cluster, and the
# controller's PassRole statement names the ARN with its path (what IAM evaluates).
PATH_NODE_ARN = "arn:aws:iam::111122223333:role/karpenter/KarpenterNodeRole-demo"
b = bundle("Healthy: the node role lives under the IAM path /karpenter/; aws-auth maps it by its ARN without the path (as EKS requires) and the controller may pass it by its full ARN; spec.role names it by name.",
    overrides=[fact({"iamRole": {"name": "KarpenterNodeRole-demo"}}, _hs_role("KarpenterNodeRole-demo", path="/karpenter/")),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY])])
b["emulator"] = _hs_controller_emulator(["KarpenterController-demo"], [_hs_passrole("KarpenterController-demo", [PATH_NODE_ARN], name="karpenter-pass-node-role-with-path")])
write("healthy-node-role-with-path", b, [])


# ---- (17) terraform-aws-eks v19 aws-auth (yamlencode) kept next to v20 access entries -----------
# Sources: terraform-aws-eks v19 wrote aws-auth with yamlencode (every key and value quoted), and
# its v20 upgrade guide moves to authentication_mode API_AND_CONFIG_MAP with access entries
# (https://github.com/terraform-aws-modules/terraform-aws-eks/blob/master/docs/UPGRADE-20.0.md); the
# EKS user guide's migration ("Migrating existing aws-auth ConfigMap entries to access entries")
# creates the access entry first, after which "the settings for the access entry for the IAM
# principal ARN override the ConfigMap entry" until the ConfigMap entry is deleted. Both mappings
# are correct, so nodes join either way.
def _hs_yamlencode_entry(arn, groups=("system:bootstrappers", "system:nodes"), username="system:node:{{EC2PrivateDNSName}}"):
    return '- "groups":\n' + "".join('  - "%s"\n' % g for g in groups) + '  "rolearn": "%s"\n  "username": "%s"\n' % (arn, username)
b = bundle("Healthy: mid-migration from terraform-aws-eks v19 to v20: aws-auth still holds the v19 yamlencode entries (quoted keys and values) for the node group's role and the Karpenter node role, and the node role also has the EC2_LINUX access entry v20 created, which takes precedence.",
    overrides=[fact("awsAuth", aws_auth(_hs_yamlencode_entry(MNG_ROLE_ARN) + _hs_yamlencode_entry(NODE_ROLE_ARN))),
               fact({"eksAccessEntries": {"cluster": "demo"}}, [CREATOR_ENTRY, access_entry(NODE_ROLE_ARN)])])
write("healthy-aws-auth-yamlencode-and-access-entry", b, [])


# ---- (18) A pinned AL2023 alias -----------------------------------------------------------------
# Source: Karpenter getting started step12-add-nodepool.sh pins the alias to the release of the
# cluster's minor (alias: "al2023@${ALIAS_VERSION}", ALIAS_VERSION read from the recommended SSM
# parameter in step01-config.sh); nodeclasses.md: "Karpenter supports automatic AMI selection and
# upgrades using the latest version pin, but this is not recommended for production".
pin_nc = custom_nc({"amiSelectorTerms": [{"alias": "al2023@v20261101"}]})
pin_nc["status"]["amis"] = [
    {"id": ami_for("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20261101/image_id"),
     "name": "amazon-eks-node-al2023-x86_64-standard-1.33-v20261101", "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
    {"id": ami_for("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20261101/image_id"),
     "name": "amazon-eks-node-al2023-arm64-standard-1.33-v20261101", "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]
b = bundle("Healthy: the EC2NodeClass pins its alias to al2023@v20261101, a release published for the cluster's Kubernetes 1.33, as the getting-started guide does (alias al2023@${ALIAS_VERSION}); a NodePool allows both architectures.",
    nps=[nodepool(arch=("amd64", "arm64"))], ncs=[pin_nc])
write("healthy-pinned-alias", b, [])


# ---- (19) AMIs from a custom SSM parameter, with the controller's ssm:GetParameter extended -------
# Source: Karpenter nodeclasses.md, spec.amiSelectorTerms "Specify using custom ssm parameter name
# or ARN" (- ssmParameter: "my-custom-parameter") and its note: "When using a custom SSM parameter,
# you'll need to expand the ssm:GetParameter permissions on the Karpenter IAM role to include your
# custom parameter, as the default policy only allows access to the AWS public parameters."
# The account's image pipeline publishes its latest golden AL2023 image id for 1.33 there.
CUSTOM_PARAM = "/platform/golden-ami/eks-1.33/al2023-x86_64/latest"
ssm_nc = custom_nc({"amiFamily": "AL2023", "amiSelectorTerms": [{"ssmParameter": CUSTOM_PARAM}]})
ssm_nc["status"]["amis"] = [{"id": GOLD_X86, "name": IMG_GX["name"], "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]
b = bundle("Healthy: the EC2NodeClass takes its AMI from the account's own SSM parameter (amiSelectorTerms ssmParameter, amiFamily AL2023) and the controller role's ssm:GetParameter was extended to that parameter, as Karpenter's docs say to.",
    ncs=[ssm_nc])
b["facts"].append({"fact": {"ssmParameters": {"names": [CUSTOM_PARAM]}}, "value": {CUSTOM_PARAM: GOLD_X86}})
b["facts"].append({"fact": {"ec2Images": {"filters": [{"name": "image-id", "values": [GOLD_X86]}], "owners": []}}, "value": [IMG_GX]})
b["emulator"] = _hs_controller_emulator(["KarpenterController-demo"], [{"role": "KarpenterController-demo", "name": "karpenter-custom-ami-parameter", "document": {"Version": "2012-10-17", "Statement": [
    {"Sid": "AllowCustomAMIParameter", "Effect": "Allow", "Action": "ssm:GetParameter", "Resource": "arn:aws:ssm:us-west-2:111122223333:parameter" + CUSTOM_PARAM}]}}])
write("healthy-custom-ssm-parameter", b, [])
