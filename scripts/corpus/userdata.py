# EC2NodeClass userData against its AMI family (KD5007). Karpenter's AWS provider reads
# spec.userData per family (pkg/providers/amifamily/bootstrap: nodeadm.go, mime/mime.go,
# bottlerocket.go; docs/concepts/nodeclasses.md#specuserdata); nodeadm decodes the
# application/node.eks.aws parts; AL2023 images ship /etc/eks/bootstrap.sh as a stub that exits 1
# (awslabs/amazon-eks-ami#2056). Uses healthy_shapes.py's Bottlerocket class and pool.

def _ud_class(user_data, **spec):
    nc = custom_nc(dict(spec, userData=user_data))
    return nc

# AL2 user data carried over to AL2023: the script still calls bootstrap.sh with kubelet
# arguments, as in awslabs/amazon-eks-ami#2426 and terraform-aws-eks#3503. Karpenter's own
# NodeConfig joins the node, but the script stops at the stub under `set -e` and the max-pods
# argument is silently lost: a warning.
AL2_SCRIPT = """#!/bin/bash
set -ex
echo 'vm.max_map_count=262144' > /etc/sysctl.d/99-es.conf
/etc/eks/bootstrap.sh demo --kubelet-extra-args '--max-pods=110'
"""
b = bundle("The EC2NodeClass moved from AL2 to AL2023 (alias al2023@latest) and kept its AL2 user data: a script that runs /etc/eks/bootstrap.sh --kubelet-extra-args '--max-pods=110' (awslabs/amazon-eks-ami#2426). On AL2023 that file is a stub that exits 1: Karpenter's NodeConfig still joins the node, but the script stops there and max-pods is never applied.",
    ncs=[_ud_class(AL2_SCRIPT)])
write("userdata-al2023-bootstrap-sh", b, ["KD5007"], exit_code=0, roots=[])

# YAML that is not a NodeConfig: Karpenter labels any YAML object application/node.eks.aws
# (nodeadm.go parseUserData), and nodeadm rejects a document without its apiVersion and kind.
CLOUD_CONFIG = """#cloud-config
packages:
  - amazon-ssm-agent
runcmd:
  - systemctl enable --now amazon-ssm-agent
"""
b = bundle("An AL2023 EC2NodeClass gives a #cloud-config document as userData. Karpenter takes any YAML object as a nodeadm NodeConfig (application/node.eks.aws part), and nodeadm rejects a document that is not apiVersion node.eks.aws/v1alpha1, kind NodeConfig: the node never joins.",
    ncs=[_ud_class(CLOUD_CONFIG)])
write("userdata-al2023-cloud-config", b, ["KD5007"], roots=["KD5007"])

# A MIME archive that ends inside its last part: no --BOUNDARY or --BOUNDARY-- line follows the
# NodeConfig. Karpenter's MIME reader (mime/mime.go NewArchive: Go's mime/multipart) gets
# io.ErrUnexpectedEOF reading that part, and building the launch's user data fails with
# "parsing custom UserData, parsing content, <the part>, unexpected EOF" (checked with Go 1.27).
# A last line --BOUNDARY alone would be enough for Go: see the documented example below.
MIME_OPEN = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 110
"""
b = bundle("An AL2023 EC2NodeClass's userData is a MIME archive that ends inside its only part: no --BOUNDARY or --BOUNDARY-- line follows the NodeConfig. Go's multipart reader, which Karpenter reads user data with, returns unexpected EOF for that part, so every launch for the class fails with \"parsing custom UserData, parsing content, ..., unexpected EOF\".",
    ncs=[_ud_class(MIME_OPEN)])
write("userdata-al2023-mime-unclosed", b, ["KD5007"], roots=["KD5007"])

# Bottlerocket TOML that does not parse (an inline table left open): Karpenter cannot merge it.
br_bad = json.loads(json.dumps(br_nc))
br_bad["spec"]["userData"] = """[settings.kubernetes]
max-pods = 110
eviction-hard = {"memory.available" = "15%"
"""
b = bundle("A Bottlerocket EC2NodeClass (alias bottlerocket@latest) has userData whose TOML does not parse (an inline table without its closing brace): Karpenter cannot merge it with its own settings and launches for the class fail.",
    nps=[br_pool], ncs=[br_bad])
write("userdata-bottlerocket-invalid-toml", b, ["KD5007"], roots=["KD5007"])

# Healthy: the MIME example of Karpenter's docs (a NodeConfig part and a shell part, closed) on
# AL2023, and Bottlerocket settings that parse.
MIME_OK = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42
--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Running custom user data script"
--//--
"""
b = bundle("Healthy: an AL2023 EC2NodeClass with the MIME userData of Karpenter's docs (a NodeConfig part setting maxPods and a shell part), closed with --//--.",
    ncs=[_ud_class(MIME_OK)])
write("healthy-userdata-al2023-mime", b, [])

# Healthy: Karpenter's own documented AL2023 MIME example, verbatim ("Passed-in UserData (MIME)"
# under AL2023 in https://karpenter.sh/docs/concepts/nodeclasses/#specuserdata;
# website/content/en/docs/concepts/nodeclasses.md in aws/karpenter-provider-aws). Its last line is
# the boundary line --// without a closing --//--: Go's multipart reader takes the end of the
# input after a boundary line for the end of the archive, so Karpenter reads both parts.
MIME_DOCUMENTED = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Hello, AL2023!"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 42
--//
"""
b = bundle("Healthy: an AL2023 EC2NodeClass whose userData is Karpenter's documented AL2023 MIME example verbatim (a shell part and a NodeConfig part setting maxPods), which ends with the boundary line --// and no closing --//--: Go's multipart reader ends the archive there and Karpenter reads both parts.",
    ncs=[_ud_class(MIME_DOCUMENTED)])
write("healthy-userdata-al2023-documented-example", b, [])

br_ok = json.loads(json.dumps(br_nc))
br_ok["spec"]["userData"] = """[settings.kubernetes]
max-pods = 110
[settings.kubernetes.eviction-hard]
"memory.available" = "15%"
[settings.kernel.sysctl]
"vm.max_map_count" = "262144"
"""
b = bundle("Healthy: a Bottlerocket EC2NodeClass whose userData TOML sets max-pods, an eviction threshold and a sysctl (settings Karpenter merges, none it overwrites).",
    nps=[br_pool], ncs=[br_ok])
write("healthy-userdata-bottlerocket", b, [])
