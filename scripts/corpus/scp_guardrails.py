# SCP guardrails that hold launches to values: IMDSv2 and a hop limit, gp3 volumes, a list of
# instance types. Each is written as AWS's own example SCPs write it (Amazon EC2 User Guide,
# "Example policies for working with the EC2 API": a Deny on instance/* or volume/* with a
# negated operator). A simulation without the launch's values meets the negated operator and
# looks blocked; karpdoctor asks again with what this install's launches carry.

IMDS_SCP={"Version":"2012-10-17","Statement":[
    {"Sid":"RequireImdsV2","Effect":"Deny","Action":"ec2:RunInstances","Resource":"arn:aws:ec2:*:*:instance/*",
     "Condition":{"StringNotEquals":{"ec2:MetadataHttpTokens":"required"}}},
    {"Sid":"MaxImdsHopLimit","Effect":"Deny","Action":"ec2:RunInstances","Resource":"arn:aws:ec2:*:*:instance/*",
     "Condition":{"NumericGreaterThan":{"ec2:MetadataHttpPutResponseHopLimit":"1"}}}]}

# aws/karpenter-provider-aws#9018: an organization requires IMDSv2 with an SCP. Karpenter 1.x's
# launch template sends httpTokens required and hop limit 1 (the EC2NodeClass CRD defaults), so
# its launches pass; the class validated (ValidationSucceeded=True).
b=bundle("The organization requires IMDSv2 and a hop limit of 1 with AWS's example SCP (Deny ec2:RunInstances on instance/* unless ec2:MetadataHttpTokens is required), as in aws/karpenter-provider-aws#9018; the EC2NodeClass keeps Karpenter's defaults (httpTokens required, hop limit 1), so every launch passes the guardrail.")
b["emulator"]={**default_emulator(b), "scps":[{"name":"require-imdsv2","document":IMDS_SCP}]}
write("scp-imdsv2-required", b, [])

# The same SCP, and an EC2NodeClass that turned IMDSv2 off for an old SDK (httpTokens optional,
# hop limit 2 for pods on the host network): the guardrail denies the launch, and Karpenter's
# DryRun validation says so (RunInstancesAuthCheckFailed).
b=bundle("The organization requires IMDSv2 with AWS's example SCP (as in aws/karpenter-provider-aws#9018), and the EC2NodeClass sets metadataOptions httpTokens: optional and hop limit 2 for an application on an old AWS SDK: the SCP denies every launch, and the class reports ValidationSucceeded=False (RunInstancesAuthCheckFailed).",
    ncs=[custom_nc({"metadataOptions":{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":2,"httpTokens":"optional"}},
        failing=("ValidationSucceeded","RunInstancesAuthCheckFailed","Controller isn't authorized to call ec2:RunInstances"))])
b["emulator"]={**default_emulator(b), "scps":[{"name":"require-imdsv2","document":IMDS_SCP}]}
write("scp-imdsv2-class-optional", b, ["KD2101","KD3008"], roots=["KD2101"])

# A platform SCP that allows only gp3 volumes (Deny ec2:RunInstances and ec2:CreateVolume on
# volume/* unless ec2:VolumeType is gp3): Karpenter's default root volume is encrypted gp3.
GP3_SCP={"Version":"2012-10-17","Statement":[{"Sid":"OnlyGp3","Effect":"Deny","Action":["ec2:RunInstances","ec2:CreateVolume"],
    "Resource":"arn:aws:ec2:*:*:volume/*","Condition":{"StringNotEquals":{"ec2:VolumeType":"gp3"}}}]}
b=bundle("The organization allows only gp3 volumes with an SCP (Deny ec2:RunInstances on volume/* unless ec2:VolumeType is gp3, shaped like the EC2 User Guide's volume-type examples); the EC2NodeClass keeps Karpenter's default root volume, 20Gi encrypted gp3, so launches pass.")
b["emulator"]={**default_emulator(b), "scps":[{"name":"gp3-only","document":GP3_SCP}]}
write("scp-gp3-volumes-only", b, [])

# aws-samples/eks-workshop-v2#1859: an SCP allows only some instance types (Deny ec2:RunInstances
# on instance/* unless ec2:InstanceType is one of them), and the NodePool allows the c, m and r
# categories: launches of m5/m6i pass, every other family is denied, and Karpenter's DryRun
# validation tried a denied type (c5.large), so the class is not Ready.
TYPES_SCP={"Version":"2012-10-17","Statement":[{"Sid":"ApprovedInstanceTypes","Effect":"Deny","Action":"ec2:RunInstances",
    "Resource":"arn:aws:ec2:*:*:instance/*","Condition":{"StringNotLike":{"ec2:InstanceType":["m5.*","m6i.*","t3.*"]}}}]}
b=bundle("The organization allows only m5, m6i and t3 instances with an SCP (Deny ec2:RunInstances on instance/* unless ec2:InstanceType is one of them), while the NodePool allows instance categories c, m and r: launches of the other families are denied, and Karpenter's validation DryRun tried c5.large, so the EC2NodeClass reports RunInstancesAuthCheckFailed (as in aws-samples/eks-workshop-v2#1859).",
    ncs=[custom_nc(failing=("ValidationSucceeded","RunInstancesAuthCheckFailed","Controller isn't authorized to call ec2:RunInstances"))])
b["emulator"]={**default_emulator(b), "scps":[{"name":"approved-instance-types","document":TYPES_SCP}]}
write("scp-instance-type-allow-list", b, ["KD2101","KD3008"], roots=[])

# The same SCP with the NodePool kept to the approved families: nothing is denied.
kept=nodepool()
kept["spec"]["template"]["spec"]["requirements"][2]={"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["m5","m6i"]}
b=bundle("The organization allows only m5, m6i and t3 instances with an SCP (Deny ec2:RunInstances on instance/* unless ec2:InstanceType is one of them), and the NodePool keeps to instance families m5 and m6i: every launch passes the guardrail.",
    nps=[kept])
b["emulator"]={**default_emulator(b), "scps":[{"name":"approved-instance-types","document":TYPES_SCP}]}
write("scp-instance-type-allow-list-kept", b, [])

# The same SCP and two classes: the default NodePool keeps some approved families, while a
# compute NodePool on its own class allows only c-family types, none of which the SCP approves:
# that class launches nothing, so the block is an error, not the partial warning.
compute_pool=nodepool("compute", ref={"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"compute"})
compute_pool["spec"]["template"]["spec"]["requirements"][2]={"key":"karpenter.k8s.aws/instance-category","operator":"In","values":["c"]}
compute_class=nodeclass("compute")
b=bundle("The organization allows only m5, m6i and t3 instances with an SCP (as in aws-samples/eks-workshop-v2#1859); the default NodePool keeps to m5 and m6i, but the compute NodePool on its own EC2NodeClass allows only the c category, none of which the SCP approves: nothing of that class can launch.",
    nps=[kept, compute_pool], ncs=[nodeclass(), compute_class])
b["emulator"]={**default_emulator(b), "scps":[{"name":"approved-instance-types","document":TYPES_SCP}]}
write("scp-instance-type-allow-list-one-class-blocked", b, ["KD2101"], roots=["KD2101"])
