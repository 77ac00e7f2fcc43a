# Customer managed EBS keys shared with the Spot service-linked role by a grant, as the EC2 Spot
# guide shows ("Service-linked role for Spot Instance requests": aws kms create-grant … with
# eight operations) instead of in the key policy (aws/karpenter-provider-aws#933: spot
# instances with a CMK terminated at launch). The key policy delegates to IAM, and the
# controller role's own policy grants the key's use through EC2.
SPOT_SLR_ARN=SPOT_SLR["arn"]
CONTROLLER_KMS={"Version":"2012-10-17","Statement":[{"Sid":"EbsCmk","Effect":"Allow",
    "Action":["kms:CreateGrant","kms:Decrypt","kms:GenerateDataKeyWithoutPlaintext","kms:ReEncryptFrom","kms:ReEncryptTo","kms:DescribeKey"],
    "Resource":KEY_ARN,"Condition":{"StringEquals":{"kms:ViaService":"ec2.us-west-2.amazonaws.com"}}}]}
SPOT_GRANT_OPS=["Decrypt","Encrypt","GenerateDataKey","GenerateDataKeyWithoutPlaintext","ReEncryptFrom","ReEncryptTo","CreateGrant","DescribeKey"]

def _cmk_spot_bundle(desc, grants):
    pool=nodepool()
    pool["spec"]["template"]["spec"]["requirements"][1]["values"]=["spot","on-demand"]
    b=bundle(desc, nps=[pool],
        ncs=[custom_nc({"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp3","encrypted":True,"kmsKeyID":KEY_ARN}}]})],
        overrides=[fact({"kmsKey":{"keyId":KEY_ARN}}, {"keyId":KEY_ID,"arn":KEY_ARN,"keyManager":"CUSTOMER","keyState":"Enabled","policy":KEY_POLICY}),
                   fact({"iamRole":{"name":"AWSServiceRoleForEC2Spot"}}, SPOT_SLR),
                   fact({"kmsGrants":{"keyId":KEY_ARN,"grantee":SPOT_SLR_ARN}}, grants)])
    b["emulator"]={**default_emulator(b), "serviceLinkedRoles":["spot.amazonaws.com"]}
    b["emulator"]["rolePolicies"]=[p for p in b["emulator"]["rolePolicies"] if p["role"]!="AWSServiceRoleForEC2Spot"]
    b["emulator"]["rolePolicies"].append({"role":"KarpenterController-demo","name":"ebs-cmk","document":CONTROLLER_KMS})
    return b

b=_cmk_spot_bundle("Node volumes use a customer managed key whose policy delegates to IAM; the controller role's policy grants the key's use through EC2, and the Spot service-linked role was given a grant with the eight operations of the EC2 Spot guide (the fix of aws/karpenter-provider-aws#933): spot and on-demand launches can both use the key.",
    [{"grantId":"a1b2c3d4e5f60718293a4b5c6d7e8f901a2b3c4d5e6f708192a3b4c5d6e7f809","granteePrincipal":SPOT_SLR_ARN,"operations":SPOT_GRANT_OPS,"constrained":False}])
write("healthy-ebs-cmk-spot-grant", b, [])

b=_cmk_spot_bundle("Node volumes use a customer managed key; the Spot service-linked role was given a grant for Encrypt and Decrypt only (copied from an S3 example), so spot volumes cannot be created (GenerateDataKeyWithoutPlaintext, CreateGrant missing) and spot instances terminate at launch with Client.InternalError, as in aws/karpenter-provider-aws#933.",
    [{"grantId":"b2c3d4e5f60718293a4b5c6d7e8f901a2b3c4d5e6f708192a3b4c5d6e7f8091a","granteePrincipal":SPOT_SLR_ARN,"operations":["Encrypt","Decrypt"],"constrained":False}])
write("ebs-cmk-spot-grant-incomplete", b, ["KD3010"], roots=["KD3010"])

# aws/karpenter-provider-aws#1407 and #4935: volumes encrypted with a customer managed key the
# controller role may not use. EC2 accepts the launch and ends the instance right after it
# (StateReason Server.InternalError, "Client.InternalError: Client error on launch"); Karpenter
# sees a launched NodeClaim whose node never registers. KD6002 reads the instance and names
# the key as the cause instead of the registration checks.
stuck=claim("default-k7m2p", registered=("Unknown","NodeNotFound","Node not registered with cluster"),
            initialized=("Unknown","NodeNotFound","Node not registered with cluster"), since="2026-11-23T09:41:00Z")
stuck_id=stuck["status"]["providerID"].rsplit("/",1)[1]
b=bundle("Node volumes use a customer managed key whose policy delegates to IAM, and the controller role's policy grants no use of it: EC2 terminates each instance right after launch with Client.InternalError: Client error on launch, and its NodeClaim stays Registered=Unknown (NodeNotFound), as in aws/karpenter-provider-aws#1407 and #4935.",
    ncs=[custom_nc({"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp3","encrypted":True,"kmsKeyID":KEY_ARN}}]})],
    overrides=[fact({"kmsKey":{"keyId":KEY_ARN}}, {"keyId":KEY_ID,"arn":KEY_ARN,"keyManager":"CUSTOMER","keyState":"Enabled","policy":KEY_POLICY}),
               fact("nodeClaims", [stuck]),
               fact({"ec2Instances":{"ids":[stuck_id]}}, [{"instanceId":stuck_id,"state":"terminated","stateReasonCode":"Server.InternalError",
                    "stateReasonMessage":"Client.InternalError: Client error on launch","launchTime":"2026-11-23T09:40:58Z"}])])
write("nodeclaim-instance-terminated-kms", b, ["KD3010","KD6002"], roots=["KD3010"])

# A golden AMI of the account whose root snapshot is encrypted with a customer managed key (the
# usual result of copying an image with --encrypted --kms-key-id): a volume made from it keeps
# that key when the EC2NodeClass's mapping names none (EC2 user guide, "Use encryption with
# EBS-backed AMIs"), so the controller must be able to use it. Here the key policy delegates to
# IAM and the controller role's policy grants no KMS use: instances end at launch with
# Client.InternalError (aws/karpenter-provider-aws#5690 is the cross-account form of this).
GOLDEN_AMI="ami-0c4d5e6f708192a3b"
GOLDEN_SNAP="snap-0d5e6f708192a3b4c"
golden=custom_nc({"amiFamily":"AL2023","amiSelectorTerms":[{"id":GOLDEN_AMI}]})
golden["status"]["amis"]=[{"id":GOLDEN_AMI,"name":"golden-al2023-eks-1.33-20261115","requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}]
b=bundle("The EC2NodeClass selects the platform team's golden AMI by id; its root snapshot is encrypted with a customer managed key (the image was copied with --encrypted --kms-key-id), and the class's volumes name no key, so each node's root volume uses that key. The key policy delegates to IAM and the controller role's policy grants no KMS use: instances end at launch with Client.InternalError.",
    ncs=[golden],
    overrides=[fact({"ec2Images":{"filters":[{"name":"image-id","values":[GOLDEN_AMI]}],"owners":[]}},
                    [{"imageId":GOLDEN_AMI,"name":"golden-al2023-eks-1.33-20261115","architecture":"x86_64","state":"available","ownerId":"111122223333",
                      "creationDate":"2026-11-15T00:00:00.000Z","deprecationTime":None,"tags":{"team":"platform"},
                      "blockDevices":[{"deviceName":"/dev/xvda","snapshotId":GOLDEN_SNAP,"encrypted":True}]}]),
               fact({"ec2Snapshots":{"ids":[GOLDEN_SNAP]}}, [{"snapshotId":GOLDEN_SNAP,"encrypted":True,"kmsKeyId":KEY_ARN,"ownerId":"111122223333"}]),
               fact({"kmsKey":{"keyId":KEY_ARN}}, {"keyId":KEY_ID,"arn":KEY_ARN,"keyManager":"CUSTOMER","keyState":"Enabled","policy":KEY_POLICY})])
write("ami-snapshot-cmk-unusable", b, ["KD3010"], roots=["KD3010"])
