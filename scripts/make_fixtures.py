#!/usr/bin/env python3
"""Writes the hand-reasoned scenario fixtures under fixtures/: bundle.json (the facts, with
Kubernetes objects as the API server returns them) and expect.json (which checks must fail, be
unknown or be skipped, and the exit code, reasoned from the scenario, not copied from output).
The demo cluster is product data (`karpdoctor demo` embeds it): its bundle is written to
data/demo/bundle.json, its expect.json and simulations.json stay under fixtures/demo/.

Edit the scenarios at the bottom and run `python3 scripts/make_fixtures.py`; then
`cargo test --test scenarios` (review snapshot changes) and `cargo test --test live`.
"""
import json, os
ROOT=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures')
# Scenarios whose bundle is product data under data/ rather than a test fixture.
DATA=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data')
PRODUCT_BUNDLES={"demo"}
NS='karpenter'
SEL={"app.kubernetes.io/instance":"karpenter","app.kubernetes.io/name":"karpenter"}
SELSTR="app.kubernetes.io/instance=karpenter,app.kubernetes.io/name=karpenter"
def deployment(ready=2, replicas=2, env=None, ns=NS, image="public.ecr.aws/karpenter/controller:1.8.1@sha256:5c1b8c3f6e1c0b7c9f0d4b7d2f3a8e6c1d2b3a4f5e6d7c8b9a0f1e2d3c4b5a69"):
    env = env if env is not None else [
        {"name":"KUBERNETES_MIN_VERSION","value":"1.19.0-0"},
        {"name":"CLUSTER_NAME","value":"demo"},
        {"name":"CLUSTER_ENDPOINT","value":"https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"},
        {"name":"INTERRUPTION_QUEUE","value":"demo"},
        {"name":"AWS_REGION","value":"us-west-2"},
    ]
    return {
      "apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"karpenter","namespace":ns,"uid":"3f1c2b4e-0d7a-4f55-9a0e-1b2c3d4e5f60","generation":3,
        "labels":{**SEL,"app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/version":"1.8.1","helm.sh/chart":"karpenter-1.8.1"},
        "annotations":{"meta.helm.sh/release-name":"karpenter","meta.helm.sh/release-namespace":ns}},
      "spec":{"replicas":replicas,"selector":{"matchLabels":SEL},
        "template":{"metadata":{"labels":SEL},
          "spec":{"serviceAccountName":"karpenter","priorityClassName":"system-cluster-critical",
            "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.sh/nodepool","operator":"DoesNotExist"}]}]}}},
            "containers":[{"name":"controller","image":image,"env":env,
              "ports":[{"name":"http-metrics","containerPort":8080,"protocol":"TCP"}],
              "resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}]}}},
      "status":{"observedGeneration":3,"replicas":replicas,"readyReplicas":ready,"availableReplicas":ready,"updatedReplicas":replicas}}
IRSA_ENV=[{"name":"AWS_STS_REGIONAL_ENDPOINTS","value":"regional"},{"name":"AWS_ROLE_ARN","value":"arn:aws:iam::111122223333:role/KarpenterController-demo"},{"name":"AWS_WEB_IDENTITY_TOKEN_FILE","value":"/var/run/secrets/eks.amazonaws.com/serviceaccount/token"}]
PI_ENV=[{"name":"AWS_CONTAINER_CREDENTIALS_FULL_URI","value":"http://169.254.170.23/v1/credentials"},{"name":"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE","value":"/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token"}]
def pod(name, ready=None, crash=None, ns=NS, node="ip-192-168-12-34.us-west-2.compute.internal", env=None):
    ready = (crash is None) if ready is None else ready
    cs={"name":"controller","image":"public.ecr.aws/karpenter/controller:1.8.1","imageID":"","ready":ready,"restartCount":0,"started":ready,
        "state":{"running":{"startedAt":"2026-11-20T08:02:11Z"}},"lastState":{}}
    conds=[{"type":"PodScheduled","status":"True"},{"type":"Initialized","status":"True"},
           {"type":"ContainersReady","status":"True" if ready else "False"},{"type":"Ready","status":"True" if ready else "False"}]
    if crash:
        cs.update({"ready":False,"started":False,"restartCount":crash["restarts"],
            "state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 5m0s restarting failed container=controller pod="+name}},
            "lastState":{"terminated":{"exitCode":crash["exit"],"reason":crash["reason"],"startedAt":"2026-11-23T09:58:01Z","finishedAt":"2026-11-23T09:58:04Z","containerID":"containerd://0a1b2c"}}})
    return {"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":name,"namespace":ns,"labels":{**SEL,"pod-template-hash":"6d9f7c8b5d"},
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"karpenter-6d9f7c8b5d","uid":"a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d","controller":True}]},
      "spec":{"serviceAccountName":"karpenter","nodeName":node,"containers":[{"name":"controller","image":"public.ecr.aws/karpenter/controller:1.8.1","env":(IRSA_ENV if env is None else env)}]},
      "status":{"phase":"Running","podIP":"192.168.12.80","conditions":conds,"containerStatuses":[cs]}}
# The spec fields of each CRD at 1.8.1 (what KD1002 fingerprints: capacityReservationSelectorTerms
# since 1.3, NodePool replicas since 1.8).
SPEC_FIELDS={
  "ec2nodeclasses":["amiFamily","amiSelectorTerms","blockDeviceMappings","capacityReservationSelectorTerms","instanceProfile","kubelet","metadataOptions","role","securityGroupSelectorTerms","subnetSelectorTerms","tags","userData"],
  "nodepools":["disruption","limits","replicas","template","weight"],
  "nodeclaims":["expireAfter","nodeClassRef","requirements","resources","startupTaints","taints","terminationGracePeriod"],
  "nodeoverlays":["capacity","price","priceAdjustment","requirements","weight"]}
def crd(name, group, kind, plural, versions=("v1",), stored=("v1",), fields=None, conversion=None):
    fields = SPEC_FIELDS.get(plural, []) if fields is None else fields
    schema={"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
        "spec":{"type":"object","properties":{f:{"type":"object"} for f in fields}},"status":{"type":"object"}}}
    c={"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
      "metadata":{"name":name,"annotations":{"controller-gen.kubebuilder.io/version":"v0.18.0"},"labels":{"app.kubernetes.io/managed-by":"Helm"}},
      "spec":{"group":group,"names":{"kind":kind,"plural":plural,"singular":kind.lower(),"listKind":kind+"List"},"scope":"Cluster",
        "versions":[{"name":v,"served":True,"storage":v==versions[-1],"schema":{"openAPIV3Schema":schema}} for v in versions]},
      "status":{"storedVersions":list(stored),"acceptedNames":{"kind":kind,"plural":plural}}}
    if conversion: c["spec"]["conversion"]=conversion
    return c
CRDS=[("ec2nodeclasses.karpenter.k8s.aws","karpenter.k8s.aws","EC2NodeClass","ec2nodeclasses"),
      ("nodeclaims.karpenter.sh","karpenter.sh","NodeClaim","nodeclaims"),
      ("nodepools.karpenter.sh","karpenter.sh","NodePool","nodepools")]
# CRDs a 1.8.1 controller needs beyond the three base ones (KD1002's fingerprints).
EXTRA_CRDS=[("nodeoverlays.karpenter.sh","karpenter.sh","NodeOverlay","nodeoverlays")]
def nodepool(name="default", ref=None, arch=("amd64",)):
    ref = ref if ref is not None else {"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"}
    spec={"requirements":[{"key":"kubernetes.io/arch","operator":"In","values":list(arch)},
                          {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},
                          {"key":"karpenter.k8s.aws/instance-category","operator":"In","values":["c","m","r"]}],
          "expireAfter":"720h"}
    if ref != "omit": spec["nodeClassRef"]=ref
    return {"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":name,"generation":1},
      "spec":{"template":{"spec":spec},"limits":{"cpu":"1000"},"disruption":{"consolidationPolicy":"WhenEmptyOrUnderutilized","consolidateAfter":"1m"}},
      "status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"","lastTransitionTime":"2026-11-20T08:05:00Z"}],"resources":{"cpu":"0","memory":"0","nodes":"0","pods":"0"}}}
def nodeclass(name="default"):
    return {"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClass","metadata":{"name":name,"generation":1},
      "spec":{"role":"KarpenterNodeRole-demo","amiSelectorTerms":[{"alias":"al2023@latest"}],
        "subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"demo"}}],
        "securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"demo"}}]},
      "status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"","lastTransitionTime":"2026-11-20T08:05:00Z"}],
        "subnets":[{"id":"subnet-0a1b2c3d","zone":"us-west-2a","zoneID":"usw2-az1"},{"id":"subnet-0e4f5a6b","zone":"us-west-2b","zoneID":"usw2-az2"}],
        "securityGroups":[{"id":"sg-0123456789abcdef0","name":"eks-cluster-sg-demo"}],
        "amis":[{"id":"ami-0a1b2c3d4e5f60718","name":"amazon-eks-node-al2023-x86_64-standard-1.33-v20261101","requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}],
        "instanceProfile":"demo_1234567890123456789"}}
def as_v1beta1(obj):
    """The object as Karpenter 0.37 (v1beta1) keeps it: nodeClassRef with apiVersion, expiry under
    disruption, no NodePool conditions; an EC2NodeClass on its family's default AMIs (no
    amiSelectorTerms) with only the Ready condition."""
    o=json.loads(json.dumps(obj))
    o["apiVersion"]=o["apiVersion"].split("/")[0]+"/v1beta1"
    if o["kind"]=="NodePool":
        sp=o["spec"]["template"]["spec"]
        ref=sp.get("nodeClassRef")
        if ref: sp["nodeClassRef"]={"apiVersion":"karpenter.k8s.aws/v1beta1","kind":"EC2NodeClass","name":ref["name"]}
        o["spec"]["disruption"]={"consolidationPolicy":"WhenUnderutilized","expireAfter":sp.pop("expireAfter","720h")}
        o["status"]={"resources":o["status"].get("resources",{})}
    if o["kind"]=="EC2NodeClass":
        o["spec"]["amiFamily"]="AL2023"; o["spec"].pop("amiSelectorTerms",None)
        o["status"]["conditions"]=[c for c in o["status"]["conditions"] if c["type"]=="Ready"]
    return o
# ---- EC2, SSM, node IAM and node-join facts shared by the scenarios ---------------------------
VPC="vpc-0a1b2c3d4e5f60718"; OTHER_VPC="vpc-0f9e8d7c6b5a49382"
import ipaddress, hashlib
def subnet(sid, az, cidr, tags, vpc=VPC, public=False):
    # AWS reserves five addresses per subnet; the emulator computes the same.
    free=ipaddress.ip_network(cidr).num_addresses-5
    return {"subnetId":sid,"vpcId":vpc,"availabilityZone":az,"availabilityZoneId":"usw2-az"+str(ord(az[-1])-96),"cidrBlock":cidr,"availableIpAddressCount":free,"tags":tags,
            "mapPublicIpOnLaunch":public}
DISC={"karpenter.sh/discovery":"demo"}
def subnets(disc=DISC, prefix=19):
    base=[("subnet-0a1b2c3d","us-west-2a","192.168.64.0"),("subnet-0e4f5a6b","us-west-2b","192.168.96.0")]
    out=[subnet(i,az,"%s/%d"%(net,prefix),{**disc,"Name":"demo-private-"+az}) for i,az,net in base]
    out.append(subnet("subnet-0c7d8e9f","us-west-2a","192.168.0.0/19",{"Name":"demo-public-us-west-2a","kubernetes.io/role/elb":"1"},public=True))
    # Another cluster's VPC, tagged for its own Karpenter.
    out.append(subnet("subnet-0d1e2f3a","us-west-2a","10.20.0.0/19",{"karpenter.sh/discovery":"staging","Name":"staging-private-us-west-2a"},vpc=OTHER_VPC))
    return out
def rule(proto="-1", ports=None, cidrs=(), groups=()):
    """One security group permission as DescribeSecurityGroups returns it."""
    return {"ipProtocol":proto,"fromPort":ports[0] if ports else None,"toPort":ports[1] if ports else None,
            "ipRanges":list(cidrs),"ipv6Ranges":[],"prefixListIds":[],
            "groups":[{"groupId":g,"userId":"111122223333","vpcPeeringConnectionId":None} for g in groups]}
ALL_OUT=[rule(cidrs=["0.0.0.0/0"])]
def sg(gid, name, tags, vpc=VPC, inbound=(), outbound=None):
    # A new group admits nothing in and lets everything out, as EC2 creates it.
    return {"groupId":gid,"groupName":name,"vpcId":vpc,"tags":tags,"ipPermissions":list(inbound),
            "ipPermissionsEgress":ALL_OUT if outbound is None else list(outbound)}
CLUSTER_SG="sg-0123456789abcdef0"
# The cluster's network as `eksctl create cluster` leaves it: the cluster security group (which
# the nodes carry, as the getting-started guide tags it for discovery), the public endpoint open
# to all, the private one off, control-plane ENIs in the private subnets.
CLUSTER_NET={"clusterSecurityGroupId":CLUSTER_SG,"endpointPublicAccess":True,"endpointPrivateAccess":False,
             "publicAccessCidrs":["0.0.0.0/0"],"securityGroupIds":[],"subnetIds":["subnet-0a1b2c3d","subnet-0e4f5a6b"],
             "serviceIpv4Cidr":"172.20.0.0/16","ipFamily":"ipv4"}
# The VPC's network as eksctl builds it: a public subnet routing to an internet gateway and
# holding a NAT gateway, private subnets routing 0.0.0.0/0 to that NAT, the main table with only
# the local route, DNS support and hostnames on, no VPC endpoints.
IGW="igw-0a1b2c3d4e5f60718"; NAT="nat-0a1b2c3d4e5f60718"; NAT_IP="198.51.100.7"
def route(dest, **target):
    r={"destinationCidrBlock":dest,"destinationIpv6CidrBlock":None,"destinationPrefixListId":None,"state":"active",
       "gatewayId":None,"natGatewayId":None,"transitGatewayId":None,"vpcPeeringConnectionId":None,
       "networkInterfaceId":None,"instanceId":None,"egressOnlyInternetGatewayId":None,"otherTarget":None}
    r.update(target); return r
LOCAL=route("192.168.0.0/16", gatewayId="local")
def route_table(rid, subnets=(), main=False, routes=()):
    assoc=[{"subnetId":None,"main":True,"state":"associated"}] if main else []
    assoc+=[{"subnetId":s,"main":False,"state":"associated"} for s in subnets]
    return {"routeTableId":rid,"associations":assoc,"routes":[LOCAL,*routes]}
PRIVATE_SUBNETS=["subnet-0a1b2c3d","subnet-0e4f5a6b"]
DEFAULT_ACL="acl-0a1b2c3d4e5f60718"
def acl_entry(rule, egress, action="allow", proto="-1", ports=None, cidr="0.0.0.0/0"):
    return {"ruleNumber":rule,"egress":egress,"ruleAction":action,"protocol":proto,
            "fromPort":ports[0] if ports else None,"toPort":ports[1] if ports else None,"cidrBlock":cidr,"ipv6CidrBlock":None}
def acl(aid, subnets, entries=None, default=False):
    """A network ACL; without entries, the VPC default's: allow all both ways (100), then deny (*)."""
    entries=entries if entries is not None else [acl_entry(100,True),acl_entry(100,False)]
    return {"networkAclId":aid,"isDefault":default,"subnetIds":list(subnets),
            "entries":entries+[acl_entry(32767,True,"deny"),acl_entry(32767,False,"deny")]}
def network(private_default=None, public=True, nat=True, dns=(True,True), endpoints=(), acls=None):
    """The facts of the cluster VPC's network; `private_default` is the private subnets' default
    route (a NAT route unless given; False for none)."""
    if private_default is None: private_default=route("0.0.0.0/0", natGatewayId=NAT) if nat else False
    tables=[route_table("rtb-0a1b2c3d4e5f60718", main=True)]
    if public: tables.append(route_table("rtb-0b2c3d4e5f6071829", ["subnet-0c7d8e9f"], routes=[route("0.0.0.0/0", gatewayId=IGW)]))
    tables.append(route_table("rtb-0c3d4e5f607182930", PRIVATE_SUBNETS, routes=[private_default] if private_default else []))
    return [({"ec2VpcAttributes":{"vpcId":VPC}}, {"value":{"enableDnsSupport":dns[0],"enableDnsHostnames":dns[1]}}),
            ({"ec2RouteTables":{"vpcId":VPC}}, {"value":tables}),
            ({"ec2NatGateways":{"vpcId":VPC}}, {"value":[{"natGatewayId":NAT,"state":"available","connectivityType":"public","subnetId":"subnet-0c7d8e9f","publicIps":[NAT_IP]}] if nat else []}),
            ({"ec2InternetGateways":{"vpcId":VPC}}, {"value":[{"internetGatewayId":IGW,"attachments":[{"vpcId":VPC,"state":"available"}]}] if public else []}),
            ({"ec2VpcEndpoints":{"vpcId":VPC}}, {"value":list(endpoints)}),
            ({"ec2NetworkAcls":{"vpcId":VPC}}, {"value":acls if acls is not None else
                [acl(DEFAULT_ACL, PRIVATE_SUBNETS+(["subnet-0c7d8e9f"] if public else []), default=True)]})]
def endpoint(eid, svc, kind="Interface", groups=(), tables=(), subnets=PRIVATE_SUBNETS, dns=True):
    return {"vpcEndpointId":eid,"serviceName":"com.amazonaws.us-west-2."+svc,"vpcEndpointType":kind,"state":"available",
            "privateDnsEnabled":dns if kind=="Interface" else False,"routeTableIds":list(tables),
            "subnetIds":list(subnets) if kind=="Interface" else [],"groupIds":list(groups)}
def set_cluster(b, **fields):
    """Replaces fields of the bundle's eksCluster value (lists are replaced, never mutated:
    CLUSTER_NET's are shared)."""
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"]:
            e["value"] = {**e["value"], **fields}
VPCE_SG = "sg-0e5f60718293a4b5c"
def isolated_network(endpoints, vpce_inbound=None):
    vpce = sg(VPCE_SG, "demo-vpc-endpoints", {"Name": "demo-vpc-endpoints"},
              inbound=[rule("tcp", (443, 443), cidrs=["192.168.0.0/16"])] if vpce_inbound is None else vpce_inbound)
    return [*network(nat=False, public=False, endpoints=endpoints),
            fact("ec2SecurityGroups", groups() + [vpce]),
            fact("ec2Subnets", [s for s in subnets() if "kubernetes.io/role/elb" not in s["tags"]])]
def isolated_endpoints(skip=(), dns=True):
    out = [endpoint("vpce-0%s" % hashlib.sha256(svc.encode()).hexdigest()[:16], svc, groups=[VPCE_SG], dns=dns)
           for svc in ("ec2", "ecr.api", "ecr.dkr", "sts") if svc not in skip]
    if "s3" not in skip:
        out.append(endpoint("vpce-0d4c3b2a1f0e9d8c7", "s3", kind="Gateway", tables=["rtb-0c3d4e5f607182930"]))
    return out
def groups(disc=DISC):
    # EKS makes the cluster group admit all traffic from its own members.
    return [sg(CLUSTER_SG,"eks-cluster-sg-demo",{**disc,"kubernetes.io/cluster/demo":"owned"},inbound=[rule(groups=[CLUSTER_SG])]),
            sg("sg-0a9b8c7d6e5f40312","demo-node-shared",{"Name":"demo-node-shared"}),
            sg("sg-0f1e2d3c4b5a69788","staging-nodes",{"karpenter.sh/discovery":"staging"},vpc=OTHER_VPC)]
NODE_POLICIES=["AmazonEKSWorkerNodePolicy","AmazonEKS_CNI_Policy","AmazonEC2ContainerRegistryPullOnly","AmazonSSMManagedInstanceCore"]
def attached(names=NODE_POLICIES):
    return [{"policyName":n,"policyArn":"arn:aws:iam::aws:policy/"+n} for n in names]
NODE_ROLE_ARN="arn:aws:iam::111122223333:role/KarpenterNodeRole-demo"
MNG_ROLE_ARN="arn:aws:iam::111122223333:role/eks-system-nodes"
def maproles_entry(arn, username="system:node:{{EC2PrivateDNSName}}", groups=("system:bootstrappers","system:nodes")):
    return "- groups:\n"+"".join("  - %s\n"%g for g in groups)+"  rolearn: %s\n  username: %s\n"%(arn,username)
def aws_auth(map_roles=None):
    if map_roles is None: map_roles=maproles_entry(MNG_ROLE_ARN)+maproles_entry(NODE_ROLE_ARN)
    return {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"aws-auth","namespace":"kube-system"},"data":{"mapRoles":map_roles}}
def access_entry(arn, kind="EC2_LINUX"):
    if kind in ("EC2_LINUX","EC2_WINDOWS"): user,groups="system:node:{{EC2PrivateDNSName}}",["system:nodes"]
    # EC2 (Auto Mode) names its nodes by session, as a describe-access-entry of one shows.
    elif kind in ("FARGATE_LINUX","HYBRID_LINUX","EC2"): user,groups="system:node:{{SessionName}}",["system:nodes"]
    else: user,groups="arn:aws:sts::111122223333:assumed-role/%s/{{SessionName}}"%arn.rsplit("/",1)[1],[]
    return {"principalArn":arn,"type":kind,"username":user,"kubernetesGroups":groups}
def aws_node_sa():
    return {"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"aws-node","namespace":"kube-system"}}
# AMI aliases: the SSM parameters Karpenter reads (mirrors iam::reference::alias_parameter_paths).
def alias_paths(alias, k8s, arches=("amd64","arm64")):
    family, version = alias.split("@",1); out=[]
    for a in arches:
        arch={"amd64":"x86_64","arm64":"arm64"}[a]
        if family=="al2023":
            for v in (["standard","nvidia","neuron"] if arch=="x86_64" else ["standard","nvidia"]):
                leaf="recommended" if version=="latest" else "amazon-eks-node-al2023-%s-%s-%s-%s"%(arch,v,k8s,version)
                out.append("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id"%(k8s,arch,v,leaf))
        elif family=="bottlerocket":
            v="latest" if version=="latest" else version.lstrip("v")
            for fl in ("","-nvidia"): out.append("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id"%(k8s,fl,arch,v))
    return out
# Pinned AMI versions that exist, per Kubernetes minor (what the emulator publishes).
PUBLISHED_PINS={"1.33":{"v20261101","v20261115"},"1.34":{"v20261115"}}
def published(path):
    if "/recommended/" in path or "/latest/" in path: return True
    return any(v in path for k,vs in PUBLISHED_PINS.items() if "/%s/"%k in path for v in vs)
def ami_for(path):
    return "ami-0"+hashlib.sha256(path.encode()).hexdigest()[:16]
def derive_ssm(b):
    """The ssmParameters fact of a bundle: every alias and ssmParameter path of every
    EC2NodeClass, for both architectures, as one GetParameters request (as karpdoctor asks)."""
    ncs=next((e.get("value") for e in b["facts"] if e["fact"]=="ec2NodeClasses"), None)
    cl=next((e.get("value") for e in b["facts"] if isinstance(e["fact"],dict) and "eksCluster" in e["fact"]), None)
    if not isinstance(ncs,list) or not cl: return
    minor=".".join(cl["version"].split(".")[:2]); paths=set()
    for nc in ncs:
        terms=nc["spec"].get("amiSelectorTerms",[])
        # A v1beta1 class without terms uses its family's default AMIs (the @latest alias's paths).
        if not terms and nc.get("apiVersion","").endswith("/v1beta1") and nc["spec"].get("amiFamily","").lower() in ("al2023","bottlerocket"):
            terms=[{"alias":nc["spec"]["amiFamily"].lower()+"@latest"}]
        for t in terms:
            if "alias" in t: paths.update(alias_paths(t["alias"], minor))
            if "ssmParameter" in t: paths.add(t["ssmParameter"])
    if not paths: return
    names=sorted(paths)
    if any(isinstance(e["fact"],dict) and "ssmParameters" in e["fact"] for e in b["facts"]): return
    b["facts"].append({"fact":{"ssmParameters":{"names":names}},"value":{n:(ami_for(n) if published(n) else None) for n in names}})
# Controller log lines (zap JSON, as Karpenter writes them).
def logline(level, message, error=None, controller=None, t="2026-11-23T09:58:03.112Z"):
    d={"level":level,"time":t,"logger":"controller","message":message,"commit":"5c1b8c3"}
    if controller: d["controller"]=controller
    if error: d["error"]=error
    return json.dumps(d)
HEALTHY_LOG="\n".join([
    logline("INFO","starting server",t="2026-11-20T08:02:12.001Z"),
    logline("INFO","discovered ssm parameter",controller="nodeclass",t="2026-11-20T08:02:14.310Z"),
    logline("INFO","discovered subnets",controller="nodeclass",t="2026-11-20T08:02:14.512Z"),
    logline("INFO","found provisionable pod(s)",controller="provisioner",t="2026-11-23T09:41:00.100Z"),
    logline("INFO","launched nodeclaim",controller="nodeclaim.lifecycle",t="2026-11-23T09:41:03.200Z"),
    logline("INFO","registered nodeclaim",controller="nodeclaim.lifecycle",t="2026-11-23T09:41:40.050Z"),
    logline("INFO","initialized nodeclaim",controller="nodeclaim.lifecycle",t="2026-11-23T09:41:52.900Z")])+"\n"
# The DaemonSets every EKS node runs, as their templates request (VPC CNI 25m, kube-proxy
# 100m): the overhead KD8002 adds to each node.
def daemonset(name, ns, cpu, memory=None):
    req={"cpu":cpu}
    if memory: req["memory"]=memory
    return {"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":name,"namespace":ns},
            "spec":{"template":{"spec":{"containers":[{"name":name,"resources":{"requests":req}}],
                    "tolerations":[{"operator":"Exists"}]}}}}
DAEMONSETS=[daemonset("aws-node","kube-system","25m"),daemonset("kube-proxy","kube-system","100m")]
# Instance types as EC2 (and the emulator) describe them: a few families of each architecture.
FAMILIES={"c5":("x86_64",2),"c6i":("x86_64",2),"c6g":("arm64",2),"c7g":("arm64",2),"m5":("x86_64",4),"m6i":("x86_64",4),
          "m6g":("arm64",4),"m7g":("arm64",4),"r5":("x86_64",8),"r6i":("x86_64",8),"r6g":("arm64",8),"t3":("x86_64",4),"t4g":("arm64",4)}
def instance_types():
    out=[]
    for fam,(arch,gib_per_cpu) in sorted(FAMILIES.items()):
        for size,cpus in (("large",2),("xlarge",4),("2xlarge",8)):
            # ENIs on the default card and IPv4 per ENI, as EC2 (and moto's data) describe them.
            enis,ips=(3,12 if fam in ("t3","t4g") else 10) if size=="large" else (4,15)
            out.append({"instanceType":"%s.%s"%(fam,size),"architectures":[arch],"vcpus":cpus,"memoryMib":cpus*gib_per_cpu*1024,"gpus":0,
                        "usageClasses":["on-demand","spot"],"hypervisor":"nitro","bareMetal":False,"maxEnis":enis,"ipv4PerEni":ips})
    return out
# The interruption queue and rules of the getting-started CloudFormation template.
QUEUE_ARN="arn:aws:sqs:us-west-2:111122223333:demo"
QUEUE_POLICY=json.dumps({"Version":"2012-10-17","Id":"EC2InterruptionPolicy","Statement":[
    {"Effect":"Allow","Principal":{"Service":["events.amazonaws.com","sqs.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":QUEUE_ARN},
    {"Sid":"DenyHTTP","Effect":"Deny","Action":"sqs:*","Resource":QUEUE_ARN,"Condition":{"Bool":{"aws:SecureTransport":False}},"Principal":"*"}]})
def queue(name="demo", kms=None, policy=QUEUE_POLICY):
    attrs={"QueueArn":"arn:aws:sqs:us-west-2:111122223333:"+name,"MessageRetentionPeriod":"300","VisibilityTimeout":"30","DelaySeconds":"0",
           "MaximumMessageSize":"262144","ReceiveMessageWaitTimeSeconds":"0"}
    if policy: attrs["Policy"]=policy
    if kms: attrs.update({"KmsMasterKeyId":kms,"KmsDataKeyReusePeriodSeconds":"300"})
    else: attrs["SqsManagedSseEnabled"]="true"
    return {"name":name,"url":"https://sqs.us-west-2.amazonaws.com/111122223333/"+name,"arn":attrs["QueueArn"],"attributes":attrs}
RULE_EVENTS=[("ScheduledChangeRule","aws.health",["AWS Health Event"]),("SpotInterruptionRule","aws.ec2",["EC2 Spot Instance Interruption Warning"]),
             ("RebalanceRule","aws.ec2",["EC2 Instance Rebalance Recommendation"]),("InstanceStateChangeRule","aws.ec2",["EC2 Instance State-change Notification"])]
def rules(only=None, state="ENABLED"):
    out=[]
    for name,source,details in RULE_EVENTS:
        if only is not None and name not in only: continue
        n="Karpenter-demo-"+name
        out.append({"name":n,"arn":"arn:aws:events:us-west-2:111122223333:rule/"+n,"state":state,
                    "eventPattern":json.dumps({"source":[source],"detail-type":details}),"targets":[{"id":"KarpenterInterruptionQueueTarget","arn":QUEUE_ARN}]})
    return out
def node(name, fargate=False, karpenter=False, self_managed=False):
    labels={"kubernetes.io/hostname":name,"kubernetes.io/arch":"amd64","topology.kubernetes.io/zone":"us-west-2a"}
    if fargate: labels["eks.amazonaws.com/compute-type"]="fargate"
    elif karpenter: labels.update({"karpenter.sh/nodepool":"default","karpenter.k8s.aws/ec2nodeclass":"default"})
    elif self_managed: labels["alpha.eksctl.io/nodegroup-name"]="self-managed"
    else: labels["eks.amazonaws.com/nodegroup"]="system"
    return {"apiVersion":"v1","kind":"Node","metadata":{"name":name,"labels":labels},"status":{"conditions":[{"type":"Ready","status":"True"}]}}
def base():
    facts={}
    facts[json.dumps({"kubeVersion":None})]=None
    return facts
ROLE_ARN="arn:aws:iam::111122223333:role/KarpenterController-demo"
NODE_TRUST=json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]})
ISSUER="https://oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
def irsa_trust(ns=NS, sa="karpenter"):
    host=ISSUER[len("https://"):]
    return json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"arn:aws:iam::111122223333:oidc-provider/"+host},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{host+":aud":"sts.amazonaws.com",host+":sub":"system:serviceaccount:%s:%s"%(ns,sa)}}}]})
PROVIDER={"arn":"arn:aws:iam::111122223333:oidc-provider/"+ISSUER[len("https://"):],"url":ISSUER[len("https://"):],"clientIds":["sts.amazonaws.com"]}
def bundle(desc, dep=True, pods=None, crds=None, nps=None, ncs=None, overrides=None, annotation=ROLE_ARN, role=True, assocs=None, providers=None, ns=NS, trust=None, logs=None, previous_logs=None):
    F=[]
    def add(key, value=None, error=None):
        e={"fact":key}
        if error is not None: e["error"]=error
        else: e["value"]=value
        F.append(e)
    add("kubeVersion", {"major":"1","minor":"33","gitVersion":"v1.33.5-eks-3025e55"})
    deps=[deployment(ns=ns)] if dep is True else (dep or [])
    add({"controllerDeployments":{"namespace":None}}, deps)
    if deps:
        pods = pods if pods is not None else [pod("karpenter-6d9f7c8b5d-7xk2p", ns=ns), pod("karpenter-6d9f7c8b5d-q9w4n", ns=ns, node="ip-192-168-77-10.us-west-2.compute.internal")]
        add({"pods":{"namespace":ns,"labelSelector":SELSTR}}, pods)
        # What the log checks read: the current log of every running controller pod, and the
        # previous container's log of every crash-looping one.
        for p in pods:
            name=p["metadata"]["name"]
            if p["status"].get("phase")=="Running":
                add({"podLogs":{"namespace":ns,"pod":name,"container":"controller","previous":False}}, (logs or {}).get(name, HEALTHY_LOG))
            if p["status"]["containerStatuses"][0].get("restartCount",0)>0:
                add({"podLogs":{"namespace":ns,"pod":name,"container":"controller","previous":True}}, (previous_logs or {}).get(name))
        for n in sorted({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")}):
            add({"node":{"name":n}}, node(n, fargate=n.startswith("fargate-")))
    crds = crds if crds is not None else {}
    for n,g,k,p in CRDS+EXTRA_CRDS:
        v=crds[n] if n in crds else crd(n,g,k,p)
        if isinstance(v, dict) and "kind" in v and v.get("kind") in ("forbidden",):
            add({"crd":{"name":n}}, error=v["error"])
        else:
            add({"crd":{"name":n}}, v)
    for key, val in (("nodePools", nps if nps is not None else [nodepool()]), ("ec2NodeClasses", ncs if ncs is not None else [nodeclass()])):
        if isinstance(val, dict) and "error" in val: add(key, error=val["error"])
        else: add(key, val)
    add("callerIdentity", {"account":"111122223333","arn":"arn:aws:sts::111122223333:assumed-role/PlatformAdmin/alice"})
    add({"eksCluster":{"name":"demo"}}, {"name":"demo","arn":"arn:aws:eks:us-west-2:111122223333:cluster/demo","version":"1.33","endpoint":"https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com","status":"ACTIVE","oidcIssuer":ISSUER,"authenticationMode":"API_AND_CONFIG_MAP","vpcId":"vpc-0a1b2c3d4e5f60718",**CLUSTER_NET})
    if deps:
        sa={"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"karpenter","namespace":ns,"labels":SEL}}
        if annotation: sa["metadata"]["annotations"]={"eks.amazonaws.com/role-arn":annotation}
        add({"serviceAccount":{"namespace":ns,"name":"karpenter"}}, sa)
        add({"podIdentityAssociations":{"cluster":"demo","namespace":ns,"serviceAccount":"karpenter"}}, assocs or [])
        if annotation and annotation.startswith("arn:aws:iam::111122223333:role/"):
            name=annotation.rsplit("/",1)[1]
            add({"iamRole":{"name":name}}, {"name":name,"arn":annotation,"path":"/","trustPolicy":trust or irsa_trust(ns=ns),"permissionsBoundaryArn":None} if role else None)
    add("oidcProviders", [PROVIDER] if providers is None else providers)
    add({"iamRole":{"name":"KarpenterNodeRole-demo"}}, {"name":"KarpenterNodeRole-demo","arn":"arn:aws:iam::111122223333:role/KarpenterNodeRole-demo","path":"/","trustPolicy":NODE_TRUST,"permissionsBoundaryArn":None})
    add("nodeClaims", [])
    add("ec2Subnets", subnets())
    add("ec2SecurityGroups", groups())
    for k, v in network(): add(k, v["value"])
    add({"iamAttachedRolePolicies":{"role":"KarpenterNodeRole-demo"}}, attached())
    add({"serviceAccount":{"namespace":"kube-system","name":"aws-node"}}, aws_node_sa())
    add({"podIdentityAssociations":{"cluster":"demo","namespace":"kube-system","serviceAccount":"aws-node"}}, [])
    add({"pods":{"namespace":"kube-system","labelSelector":"k8s-app=aws-node"}}, [])
    add("awsAuth", aws_auth())
    add("ebsDefaults", {"encryptedByDefault":False,"defaultKmsKeyId":"alias/aws/ebs"})
    add({"eksAccessEntries":{"cluster":"demo"}}, [access_entry(NODE_ROLE_ARN)])
    add({"events":{"kind":"NodeClaim","namespace":None}}, [])
    add("webhookConfigurations", [])
    add("pendingPods", [])
    add("csiNodes", [])
    add("volumeAttachments", [])
    add("podDisruptionBudgets", [])
    add("pinnedWorkloads", [])
    add({"nodes":{"labelSelector":"topology.kubernetes.io/zone"}}, [])
    add({"eventsByReason":{"kind":"Pod","reason":"FailedCreatePodSandBox"}}, [])
    add({"eventsByReason":{"kind":"Node","reason":"DisruptionBlocked"}}, [])
    add({"eventsByReason":{"kind":"Node","reason":"FailedDraining"}}, [])
    add("daemonSets", DAEMONSETS)
    add("ec2InstanceTypes", instance_types())
    add("ec2InstanceTypeOfferings", [{"instanceType":t["instanceType"],"zone":z} for t in instance_types() for z in ("us-west-2a","us-west-2b")])
    add({"sqsQueue":{"name":"demo"}}, queue())
    add("sqsQueues", ["demo"])
    add({"eventRules":{"targetArn":QUEUE_ARN}}, rules())
    for (k, v) in (overrides or []):
        F=[e for e in F if e["fact"]!=k]
        F.append({"fact":k, **v})
    return {"bundleVersion":1,"karpdoctorVersion":"0.1.0","recordedAt":"2026-11-23T10:00:00Z","description":desc,
      "hints":{"cluster":None,"region":"us-west-2","namespace":None,"kubeContext":"arn:aws:eks:us-west-2:111122223333:cluster/demo","kubeContextCluster":"arn:aws:eks:us-west-2:111122223333:cluster/demo"},
      "target":{"cluster":"demo","region":"us-west-2","account":"111122223333","kubeContext":"arn:aws:eks:us-west-2:111122223333:cluster/demo","karpenterNamespace":ns,"karpenterVersion":"1.8.1","kubernetesVersion":"v1.33.5-eks-3025e55","awsIdentity":"arn:aws:sts::111122223333:assumed-role/PlatformAdmin/alice"},
      "facts":F}
def default_emulator(b):
    """AWS state that is not a fact: by default the controller role (any role but the node
    role) carries the reference policy of the controller's release, so simulations pass."""
    # EKS Auto Mode's roles (its cluster role, its node roles) are never the controller's.
    auto=lambda n: n=="eks-cluster" or n.startswith(("AmazonEKSAuto","AutoMode"))
    roles=[e["value"]["name"] for e in b["facts"] if isinstance(e["fact"],dict) and "iamRole" in e["fact"]
           and e.get("value") and e["value"]["name"]!="KarpenterNodeRole-demo" and not auto(e["value"]["name"])]
    version="1.8.1"
    for e in b["facts"]:
        if e["fact"]=={"controllerDeployments":{"namespace":None}} and e.get("value"):
            image=e["value"][0]["spec"]["template"]["spec"]["containers"][0]["image"]
            version=image.split(":")[1].split("@")[0]
    return {"rolePolicies":[{"role":r,"name":"karpenter-controller","reference":{"version":version}} for r in roles]}
def stuck_instances(b):
    """What KD6002 looks up: the instances of launched NodeClaims whose Registered condition has
    not been True for over 5 minutes at the recording time, the newest five, ids sorted. Unless
    the scenario says otherwise, they run (the usual NodeNotFound: the instance is up, the node
    never joins)."""
    from datetime import datetime, timedelta
    at=datetime.fromisoformat(b["recordedAt"].replace("Z","+00:00"))
    claims=next((e.get("value") or [] for e in b["facts"] if e["fact"]=="nodeClaims"), [])
    stuck=[]
    for c in claims:
        conds={x["type"]:x for x in c.get("status",{}).get("conditions",[])}
        reg=conds.get("Registered")
        if conds.get("Launched",{}).get("status")!="True" or not reg or reg.get("status")=="True": continue
        since=reg.get("lastTransitionTime")
        if not since or datetime.fromisoformat(since.replace("Z","+00:00"))+timedelta(minutes=5)>=at: continue
        iid=c["status"].get("providerID","").rsplit("/",1)[-1]
        if iid.startswith("i-"): stuck.append((since,iid))
    stuck.sort(key=lambda x: x[0], reverse=True)
    return sorted(i for _,i in stuck[:5])
def keep(o, fields):
    return {f:o[f] for f in fields if o.get(f) is not None}
def slim_spec(spec):
    """What karpdoctor keeps of a pod spec (src/backend/live/kube.rs `slim_pod_spec`)."""
    out=keep(spec,["nodeName","nodeSelector","affinity","tolerations","topologySpreadConstraints","schedulerName","overhead","priorityClassName"])
    out["containers"]=[keep(c,["name","resources","restartPolicy"]) for c in spec.get("containers",[])]
    if "initContainers" in spec: out["initContainers"]=[keep(c,["name","resources","restartPolicy"]) for c in spec["initContainers"]]
    claims=[keep(v,["name","persistentVolumeClaim"]) for v in spec.get("volumes",[]) if "persistentVolumeClaim" in v]
    if claims: out["volumes"]=claims
    return out
def slim_pod(p):
    out=keep(p,["apiVersion","kind"])
    out["metadata"]=keep(p.get("metadata",{}),["name","namespace","uid","labels","ownerReferences","creationTimestamp","deletionTimestamp"])
    out["spec"]=slim_spec(p["spec"]) if "spec" in p else None
    out["status"]=keep(p["status"],["phase","conditions","nominatedNodeName"]) if "status" in p else None
    return out
def derive_pending(b):
    """The pending pods a live run lists: every Pending pod the bundle holds (the controller's
    own included), slimmed as karpdoctor slims them, with the scenario's own."""
    pending=[]
    for e in b["facts"]:
        if isinstance(e["fact"],dict) and "pods" in e["fact"]:
            pending+=[p for p in (e.get("value") or []) if p.get("status",{}).get("phase")=="Pending"]
    for e in b["facts"]:
        if e["fact"]=="pendingPods" and "value" in e:
            seen={(p["metadata"].get("namespace"),p["metadata"]["name"]) for p in e["value"]}
            e["value"]=[slim_pod(p) for p in e["value"]+[p for p in pending if (p["metadata"].get("namespace"),p["metadata"]["name"]) not in seen]]
def slim_node(n):
    out={"apiVersion":"v1","kind":"Node","metadata":{k:v for k,v in n["metadata"].items() if k in ("name","uid","labels","creationTimestamp","deletionTimestamp","finalizers")}}
    dnd=(n["metadata"].get("annotations") or {}).get("karpenter.sh/do-not-disrupt")
    if dnd is not None: out["metadata"]["annotations"]={"karpenter.sh/do-not-disrupt":dnd}
    spec={k:v for k,v in n.get("spec",{}).items() if k in ("taints","unschedulable","providerID")}
    out["spec"]=spec
    status={k:v for k,v in n.get("status",{}).items() if k in ("capacity","allocatable")}
    ready=[{"type":c["type"],"status":c["status"]} for c in n.get("status",{}).get("conditions",[]) if c.get("type")=="Ready"]
    if ready: status["conditions"]=ready
    if status: out["status"]=status
    return out
def derive_nodes(b):
    """The nodes a live run lists for a topology spread: every Node the bundle holds that has
    the selected label, slimmed as karpdoctor slims them, with the scenario's own."""
    known=[e["value"] for e in b["facts"] if isinstance(e["fact"],dict) and "node" in e["fact"] and e.get("value")]
    for e in b["facts"]:
        if isinstance(e["fact"],dict) and "nodes" in e["fact"] and "value" in e:
            key=e["fact"]["nodes"]["labelSelector"]
            have={n["metadata"]["name"] for n in e["value"]}
            extra=[n for n in known if n["metadata"]["name"] not in have and key in n["metadata"].get("labels",{})]
            e["value"]=sorted([slim_node(n) for n in e["value"]+extra], key=lambda n:n["metadata"]["name"])
def derive_nominations(b):
    """Karpenter's Nominated events as a live run lists them on their own (core API, selected by
    kind and reason), from the Pod events the bundle holds, for bundles with pending pods."""
    if not any(e["fact"]=="pendingPods" and e.get("value") for e in b["facts"]): return
    if any(isinstance(e["fact"],dict) and e["fact"].get("eventsByReason",{}).get("reason")=="Nominated" for e in b["facts"]): return
    pod_events=[ev for e in b["facts"] if e["fact"]=={"events":{"kind":"Pod","namespace":None}} for ev in (e.get("value") or [])]
    b["facts"].append({"fact":{"eventsByReason":{"kind":"Pod","reason":"Nominated"}},
                       "value":[ev for ev in pod_events if ev.get("reason")=="Nominated" and ev.get("involvedObject",{}).get("kind")=="Pod"]})
def write(name, b, failing, unknown=(), skipped=(), exit_code=None, desc=None, roots=None):
    # roots: the checks whose errors are the scenario's root causes (every other error must be
    # linked to one of them); reasoned from the scenario like `failing`, required when it fails.
    if failing and roots is None:
        raise SystemExit(f"{name}: declare roots= (the root causes) for a scenario that fails")
    d=os.path.join(ROOT,name); os.makedirs(d, exist_ok=True)
    derive_pending(b)
    derive_nodes(b)
    derive_nominations(b)
    if "emulator" not in b: b["emulator"]=default_emulator(b)
    derive_ssm(b)
    ids=stuck_instances(b)
    if ids and not any(isinstance(e["fact"],dict) and "ec2Instances" in e["fact"] for e in b["facts"]):
        b["facts"].append({"fact":{"ec2Instances":{"ids":ids}},"value":[
            {"instanceId":i,"state":"running","stateReasonCode":None,"stateReasonMessage":None,"launchTime":"2026-11-23T09:39:50Z"} for i in ids]})
    # Their consoles (null: nothing printed yet), unless the scenario recorded them.
    for i in ids:
        if not any(isinstance(e["fact"],dict) and e["fact"].get("ec2ConsoleOutput",{}).get("instanceId")==i for e in b["facts"]):
            b["facts"].append({"fact":{"ec2ConsoleOutput":{"instanceId":i}},"value":None})
    # Simulation results are recorded from the emulator seeded with b["emulator"]
    # (`scripts/record-simulations`); everything else in a bundle is written here by hand.
    sims=os.path.join(d,"simulations.json")
    if os.path.exists(sims):
        have={json.dumps(e["fact"],sort_keys=True) for e in b["facts"]}
        b["facts"]+= [e for e in json.load(open(sims)) if json.dumps(e["fact"],sort_keys=True) not in have]
    bd=os.path.join(DATA,name) if name in PRODUCT_BUNDLES else d; os.makedirs(bd, exist_ok=True)
    json.dump(b, open(os.path.join(bd,"bundle.json"),"w"), indent=2); open(os.path.join(bd,"bundle.json"),"a").write("\n")
    exp={"description": desc or b["description"], "failing": sorted(failing), "unknown": sorted(unknown), "skipped": sorted(skipped),
         "exitCode": exit_code if exit_code is not None else (1 if failing else 0)}
    if failing: exp["rootCauses"]=sorted(roots)
    json.dump(exp, open(os.path.join(d,"expect.json"),"w"), indent=2); open(os.path.join(d,"expect.json"),"a").write("\n")

crash={"restarts":14,"exit":1,"reason":"Error"}
# Checks that read EC2NodeClasses: not applicable where the v1 API is not served.
NODECLASS=['KD3001', 'KD3002', 'KD3003', 'KD3004', 'KD3005', 'KD3006', 'KD3007', 'KD3008', 'KD3009', 'KD3010', 'KD5001', 'KD5002', 'KD5003', 'KD5004', 'KD5005', 'KD5006', 'KD5007']
# No controller role to simulate (no identity, or a role that does not exist): the simulation
# checks do not apply; KD2001/KD2004 own the problem.
GRANTS=["KD2101","KD2102","KD2103","KD2104","KD3007"]
write("healthy", bundle("A healthy Karpenter 1.8.1 install in namespace karpenter: two ready controller pods, v1 CRDs, one NodePool on one EC2NodeClass."), [])
CRED_ERROR=logline("ERROR","ec2 api connectivity check failed",error="operation error EC2: DescribeInstanceTypes, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, canceled, context deadline exceeded")+"\n"
CRASH_LOGS={n:logline("INFO","starting server",t="2026-11-23T09:58:01.420Z")+"\n"+CRED_ERROR for n in ("karpenter-6d9f7c8b5d-7xk2p","karpenter-6d9f7c8b5d-q9w4n")}
write("controller-crashloop", bundle("Both controller pods crash-loop (exit 1, 14 restarts) because the controller cannot get AWS credentials at start-up: the previous container's log ends with \"ec2 api connectivity check failed ... no EC2 IMDS role found\".",
      dep=[deployment(ready=0)], pods=[pod("karpenter-6d9f7c8b5d-7xk2p", crash=crash), pod("karpenter-6d9f7c8b5d-q9w4n", crash={"restarts":13,"exit":1,"reason":"Error"})],
      logs=CRASH_LOGS, previous_logs=CRASH_LOGS), ["KD1001","KD1009"], roots=["KD1001"])
# Checks about the controller itself: nothing to judge without one.
NO_CONTROLLER=["KD1004","KD1005","KD1006","KD1008","KD1009","KD7001","KD7002","KD7003","KD9001"]
write("controller-missing", bundle("CRDs and NodePools exist but no controller Deployment runs anywhere (the chart was uninstalled, CRDs kept).", dep=[]), ["KD1001"], skipped=["KD2001","KD2002","KD2003","KD2004","KD2005","KD2006","KD2007","KD2008","KD2101","KD2102","KD2103","KD2104","KD3007"]+NO_CONTROLLER, roots=["KD1001"])
v1beta1 = {n: crd(n,g,k,p,versions=("v1beta1",),stored=("v1beta1",)) for n,g,k,p in CRDS}
nf={"error":{"kind":"notInstalled","what":"the NodePool API (karpenter.sh/v1)"}}
nfc={"error":{"kind":"notInstalled","what":"the EC2NodeClass API (karpenter.k8s.aws/v1)"}}
# The NodePool and EC2NodeClass are still the v1beta1 objects 0.37 wrote: karpdoctor reads them
# from the API the cluster serves and judges them (NodePools have no conditions in v1beta1, so
# KD4005 has nothing to judge).
write("crds-v1beta1", bundle("The controller was upgraded to 1.8.1 but the CRDs were left at v1beta1 (Helm does not upgrade CRDs): the v1 APIs are not served, and the NodePool and EC2NodeClass are still the v1beta1 objects 0.37 made.",
      crds=v1beta1, nps=[as_v1beta1(nodepool())], ncs=[as_v1beta1(nodeclass())]), ["KD1002"], skipped=["KD4005"], roots=["KD1002"])
missing_crd = {n: crd(n,g,k,p) for n,g,k,p in CRDS}; missing_crd["ec2nodeclasses.karpenter.k8s.aws"]=None
write("crd-missing", bundle("The EC2NodeClass CRD was never installed (karpenter-crd chart skipped); NodePools exist.", crds=missing_crd, ncs=nfc), ["KD1002"], skipped=["KD4001","KD4003"]+NODECLASS, roots=["KD1002"])
write("nodeclassref-invalid", bundle("Two NodePools that Karpenter ignores: one names an EC2NodeClass that does not exist, one still has a v1beta1-style reference without group and kind.",
      nps=[nodepool(), nodepool("gpu", ref={"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"gpu"}), nodepool("legacy", ref={"name":"default"})]), ["KD4001"], roots=["KD4001"])
forb={"error":{"kind":"forbidden","permission":"get customresourcedefinitions.apiextensions.k8s.io","message":"customresourcedefinitions.apiextensions.k8s.io \"nodepools.karpenter.sh\" is forbidden: User \"karpdoctor\" cannot get resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope"}}
fb = {n: {"kind":"forbidden","error":forb["error"]} for n,_,_,_ in CRDS}
write("forbidden-crds", bundle("karpdoctor's own identity may not read CRDs: KD1002 cannot conclude and must say which permission is missing; the rest is healthy.", crds=fb), [], unknown=["KD1002","KD1003"])
demo = bundle("Demo: a Karpenter 1.8.1 install whose controller crash-loops because its pods predate the IRSA annotation (no credentials), and whose 'arm' NodePool points at an EC2NodeClass that was never created. karpdoctor may not read CRDs here.",
      dep=[deployment(ready=0)], pods=[pod("karpenter-6d9f7c8b5d-7xk2p", crash=crash, env=[]), pod("karpenter-6d9f7c8b5d-q9w4n", crash={"restarts":13,"exit":1,"reason":"Error"}, env=[])],
      crds=fb, nps=[nodepool(), nodepool("arm", ref={"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"graviton"}, arch=("arm64",))],
      logs=CRASH_LOGS, previous_logs=CRASH_LOGS)
write("demo", demo, ["KD1001","KD1009","KD2006","KD4001"], unknown=["KD1002","KD1003"], roots=["KD2006", "KD4001"])
write("credentials-missing", bundle("The controller's ServiceAccount has no IRSA annotation and no Pod Identity association: the controller falls back to the node role.",
      annotation=None, pods=[pod("karpenter-6d9f7c8b5d-7xk2p", env=[]), pod("karpenter-6d9f7c8b5d-q9w4n", env=[])]), ["KD2001"], skipped=GRANTS, roots=["KD2001"])
write("irsa-role-missing", bundle("The IRSA annotation names KarpenterControllerRole, a role that was never created (the role is KarpenterController-demo).",
      annotation="arn:aws:iam::111122223333:role/KarpenterControllerRole", role=False,
      pods=[pod("karpenter-6d9f7c8b5d-7xk2p", env=[dict(e, value="arn:aws:iam::111122223333:role/KarpenterControllerRole") if e["name"]=="AWS_ROLE_ARN" else e for e in IRSA_ENV])]), ["KD2004"], skipped=GRANTS, roots=["KD2004"])
write("pods-predate-irsa", bundle("The IRSA annotation was added after the controller pods started: they run without AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE.",
      pods=[pod("karpenter-6d9f7c8b5d-7xk2p", env=[]), pod("karpenter-6d9f7c8b5d-q9w4n")]), ["KD2006"], roots=["KD2006"])
write("both-irsa-and-pod-identity", bundle("The ServiceAccount is annotated for IRSA and also has a Pod Identity association to another role: IRSA wins (informational).",
      assocs=[{"associationId":"a-0123456789abcdef0","namespace":NS,"serviceAccount":"karpenter","roleArn":"arn:aws:iam::111122223333:role/KarpenterPodIdentity-demo"}]), ["KD2008"], exit_code=0, roots=[])

write("oidc-provider-missing", bundle("IRSA is configured, but the account has no IAM OIDC provider for the cluster's issuer (eksctl ... withOIDC was never run): every token exchange fails with InvalidIdentityToken.",
      providers=[]), ["KD2002"], roots=["KD2002"])
write("irsa-trust-wrong-namespace", bundle("Karpenter runs in kube-system, but the IRSA role's trust policy names system:serviceaccount:karpenter:karpenter (the terraform-aws-eks v20 default): AssumeRoleWithWebIdentity is refused.",
      ns="kube-system", trust=irsa_trust(ns="karpenter")), ["KD2003"], roots=["KD2003"])

# ---- EKS Pod Identity scenarios -------------------------------------------------------------
PI_ROLE="arn:aws:iam::111122223333:role/KarpenterPodIdentity-demo"
PI_TRUST=json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"pods.eks.amazonaws.com"},"Action":["sts:AssumeRole","sts:TagSession"]}]})
NODE_A="ip-192-168-12-34.us-west-2.compute.internal"
NODE_B="ip-192-168-77-10.us-west-2.compute.internal"
FARGATE="fargate-ip-192-168-101-5.us-west-2.compute.internal"
def agent(node_name, i):
    return {"apiVersion":"v1","kind":"Pod","metadata":{"name":"eks-pod-identity-agent-%d"%i,"namespace":"kube-system","labels":{"app.kubernetes.io/name":"eks-pod-identity-agent"}},
            "spec":{"nodeName":node_name,"hostNetwork":True,"containers":[{"name":"eks-pod-identity-agent","image":"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/eks-pod-identity-agent:0.1.29"}]},
            "status":{"phase":"Running"}}
NODEGROUP_ROLE="arn:aws:iam::111122223333:role/eks-system-nodes"
def pi_bundle(desc, addon="ACTIVE", agents=True, fargate=False, trust=PI_TRUST, karpenter_node=None, self_managed=False):
    nodes=[FARGATE] if fargate else [NODE_A, NODE_B]
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", env=PI_ENV, node=nodes[0]), pod("karpenter-6d9f7c8b5d-q9w4n", env=PI_ENV, node=nodes[-1])]
    extra=[({"iamRole":{"name":"KarpenterPodIdentity-demo"}}, {"value":{"name":"KarpenterPodIdentity-demo","arn":PI_ROLE,"path":"/","trustPolicy":trust,"permissionsBoundaryArn":None}})]
    if not fargate:
        extra.append(({"eksAddon":{"cluster":"demo","name":"eks-pod-identity-agent"}}, {"value":{"name":"eks-pod-identity-agent","status":addon,"version":"v1.3.4-eksbuild.1"} if addon else None}))
        extra.append(({"pods":{"namespace":"kube-system","labelSelector":"app.kubernetes.io/name=eks-pod-identity-agent"}}, {"value":[agent(n, i) for i, n in enumerate(nodes)] if agents else []}))
    for n in sorted(set(nodes)):
        extra.append(({"node":{"name":n}}, {"value":node(n, fargate=fargate, karpenter=(n==karpenter_node), self_managed=self_managed)}))
    if not fargate and not self_managed:
        extra.append(({"eksNodegroup":{"cluster":"demo","name":"system"}}, {"value":{"name":"system","nodeRole":NODEGROUP_ROLE,"status":"ACTIVE"}}))
    b=bundle(desc, annotation=None, pods=pods, overrides=extra,
             assocs=[{"associationId":"a-0123456789abcdef0","namespace":NS,"serviceAccount":"karpenter","roleArn":PI_ROLE}])
    if not fargate:
        # The node group's role exists (it is simulated for eks-auth:AssumeRoleForPodIdentity).
        b["emulator"]={**default_emulator(b), "roles":[{"name":"eks-system-nodes","trust":json.loads(NODE_TRUST)}]}
    return b
write("healthy-pod-identity", pi_bundle("A healthy install using EKS Pod Identity: the association's role trusts pods.eks.amazonaws.com, the agent add-on is ACTIVE with a pod on each controller node."), [])
write("pod-identity-agent-missing", pi_bundle("Pod Identity chosen (an association exists) but the eks-pod-identity-agent add-on was never installed: no credentials reach the controller.", addon=None, agents=False), ["KD2005"], roots=["KD2005"])
write("pod-identity-on-fargate", pi_bundle("The controller runs on Fargate with only a Pod Identity association: Pod Identity is not supported on Fargate.", fargate=True), ["KD2005"], roots=["KD2005"])
write("pod-identity-trust-incomplete", pi_bundle("The Pod Identity role trusts pods.eks.amazonaws.com for sts:AssumeRole only, without sts:TagSession.",
      trust=json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"pods.eks.amazonaws.com"},"Action":"sts:AssumeRole"}]})), ["KD2005"], roots=["KD2005"])

# ---- What the controller role may do (IAM simulation, SCPs, boundaries) ---------------------
# The six denials of the documented training-account setup.
TRAINING_SCP={"Version":"2012-10-17","Statement":[{"Sid":"TrainingGuardrails","Effect":"Deny","Action":[
    "sqs:CreateQueue","events:PutRule","eks-auth:AssumeRoleForPodIdentity","ssm:GetParameter","kms:CreateKey","iam:CreateServiceLinkedRole"],"Resource":"*"}]}
b=bundle("A training account whose SCPs deny sqs:CreateQueue, events:PutRule, eks-auth:AssumeRoleForPodIdentity, ssm:GetParameter, kms:CreateKey and iam:CreateServiceLinkedRole; Karpenter was installed anyway with IRSA and an al2023@latest alias, which needs ssm:GetParameter.")
b["emulator"]={**default_emulator(b), "scps":[{"name":"training-guardrails","document":TRAINING_SCP}]}
write("scp-training-account", b, ["KD2101"], roots=["KD2101"])

# The region allow-list of the AWS Organizations SCP examples ("Deny access to AWS based on the
# requested AWS Region"): one Deny with NotAction for the global services, applying when the
# request's region is not allowed AND the caller is not an exempt admin role. Both keys are
# on every real request (docs/iam-simulation.md); the cluster's region is allowed, us-east-1
# is not (so IAM and pricing calls pass only through the NotAction exemptions).
REGION_SCP={"Version":"2012-10-17","Statement":[{"Sid":"DenyAllOutsideAllowedRegions","Effect":"Deny",
    "NotAction":["a4b:*","acm:*","aws-marketplace-management:*","aws-marketplace:*","aws-portal:*","budgets:*","ce:*","chime:*",
      "cloudfront:*","config:*","cur:*","directconnect:*","ec2:DescribeRegions","ec2:DescribeTransitGateways","ec2:DescribeVpnGateways",
      "fms:*","globalaccelerator:*","health:*","iam:*","importexport:*","kms:*","mobileanalytics:*","networkmanager:*","organizations:*",
      "pricing:*","route53:*","route53domains:*","s3:GetAccountPublic*","s3:ListAllMyBuckets","s3:PutAccountPublic*","shield:*","sts:*",
      "support:*","trustedadvisor:*","waf-regional:*","waf:*","wafv2:*","wellarchitected:*"],
    "Resource":"*",
    "Condition":{"StringNotEquals":{"aws:RequestedRegion":["us-west-2","eu-west-1"]},
                 "ArnNotLike":{"aws:PrincipalARN":["arn:aws:iam::*:role/OrganizationAccountAccessRole"]}}}]}
b=bundle("A healthy install in an account whose organization allows only us-west-2 and eu-west-1, with the region allow-list SCP of AWS's own examples (global services exempted, the organization's admin role exempted). Every request Karpenter makes is in us-west-2 or to an exempted global service: nothing is blocked.")
b["emulator"]={**default_emulator(b), "scps":[{"name":"allowed-regions","document":REGION_SCP}]}
write("scp-region-allow-list", b, [])
b=pi_bundle("EKS Pod Identity in an account with the region allow-list SCP of AWS's examples (us-west-2 and eu-west-1 allowed): eks-auth:AssumeRoleForPodIdentity is called in us-west-2 and allowed.")
b["emulator"]["scps"]=[{"name":"allowed-regions","document":REGION_SCP}]
write("scp-region-allow-list-pod-identity", b, [])
OTHER_REGION_SCP=json.loads(json.dumps(REGION_SCP).replace('["us-west-2", "eu-west-1"]','["eu-west-1"]'))
assert OTHER_REGION_SCP!=REGION_SCP
b=bundle("The cluster was created in us-west-2, but the organization's region allow-list SCP (AWS's example) allows only eu-west-1: every regional call of the controller (EC2, EKS, SSM, SQS) is denied; IAM, pricing and KMS are exempted as global.")
b["emulator"]={**default_emulator(b), "scps":[{"name":"allowed-regions","document":OTHER_REGION_SCP}]}
write("scp-region-allow-list-excludes-cluster", b, ["KD2101","KD7001"], roots=["KD2101"])


pre={"bundleVersion":1,"karpdoctorVersion":"0.1.0","recordedAt":"2026-11-23T10:00:00Z",
  "description":"Before installing Karpenter 1.8.1 into the training account (same six SCP denials), as the PlatformAdmin role that may do anything its SCPs allow: `karpdoctor pre-install` prints what each blocked action disables and the configuration that still works.",
  "hints":{"cluster":"demo","region":"us-west-2","namespace":None,"kubeContext":None,"kubeContextCluster":None,"karpenterVersion":"1.8.1","preInstall":True},
  "target":{"cluster":"demo","region":"us-west-2","account":"111122223333","karpenterVersion":"1.8.1","awsIdentity":"arn:aws:sts::111122223333:assumed-role/PlatformAdmin/alice"},
  "facts":[
    {"fact":"callerIdentity","value":{"account":"111122223333","arn":"arn:aws:sts::111122223333:assumed-role/PlatformAdmin/alice"}},
    {"fact":{"iamRole":{"name":"PlatformAdmin"}},"value":{"name":"PlatformAdmin","arn":"arn:aws:iam::111122223333:role/admins/PlatformAdmin","path":"/admins/","trustPolicy":json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"sts:AssumeRole"}]}),"permissionsBoundaryArn":None}},
    {"fact":{"eksCluster":{"name":"demo"}},"value":{"name":"demo","arn":"arn:aws:eks:us-west-2:111122223333:cluster/demo","version":"1.33","endpoint":"https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com","status":"ACTIVE","oidcIssuer":ISSUER,"authenticationMode":"API_AND_CONFIG_MAP","vpcId":"vpc-0a1b2c3d4e5f60718",**CLUSTER_NET}},
    {"fact":"oidcProviders","value":[PROVIDER]},
    # Nobody has launched Spot here yet, and the SCP keeps anyone from creating the role.
    {"fact":{"iamRole":{"name":"AWSServiceRoleForEC2Spot"}},"value":None}],
  "emulator":{"assumeRole":{"roleArn":"arn:aws:iam::111122223333:role/admins/PlatformAdmin","session":"alice"},
              "rolePolicies":[{"role":"PlatformAdmin","name":"admin","document":{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}}],
              "scps":[{"name":"training-guardrails","document":TRAINING_SCP}]}}
import copy
ready=copy.deepcopy(pre)  # before write(), which adds the recorded simulations to `pre`
write("scp-training-account-pre-install", pre, ["KD2201","KD2202"], roots=["KD2201"])

ready["description"]="Before installing Karpenter 1.8.1 into an account without restrictive SCPs, as an administrator: the cluster exists, its IAM OIDC provider too, and the Spot service-linked role was created earlier. Nothing to report."
ready["facts"]=[f for f in ready["facts"] if f["fact"]!={"iamRole":{"name":"AWSServiceRoleForEC2Spot"}}]
ready["facts"].append({"fact":{"iamRole":{"name":"AWSServiceRoleForEC2Spot"}},"value":{"name":"AWSServiceRoleForEC2Spot","arn":"arn:aws:iam::111122223333:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot","path":"/aws-service-role/spot.amazonaws.com/","trustPolicy":json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"spot.amazonaws.com"},"Action":"sts:AssumeRole"}]}),"permissionsBoundaryArn":None}})
ready["emulator"]={k:v for k,v in pre["emulator"].items() if k!="scps"}
ready["emulator"]["serviceLinkedRoles"]=["spot.amazonaws.com"]
write("pre-install-ready", ready, [])

b=bundle("The controller role was given the policy of a copied install guide: ec2:*, iam:* and sqs:* on every resource, plus the few other actions Karpenter uses. Everything works, and the controller could also create IAM users or delete VPCs.")
b["emulator"]={"rolePolicies":[{"role":"KarpenterController-demo","name":"karpenter-wide","document":{"Version":"2012-10-17","Statement":[
    {"Effect":"Allow","Action":["ec2:*","iam:*","sqs:*","eks:DescribeCluster","ssm:GetParameter","pricing:GetProducts"],"Resource":"*"}]}}]}
write("controller-policy-overbroad", b, ["KD2104"], exit_code=0, roots=[])

# 1.7 added iam:ListInstanceProfiles for garbage-collecting leaked instance profiles; without it
# provisioning is unaffected (kubernetes/kops#17854: AccessDenied in instanceprofile.garbagecollection),
# and the profiles pile up until the account's quota stops new ones: a warning.
b=bundle("The controller was upgraded to 1.8.1 but its role still carries the 1.6 controller policy: iam:ListInstanceProfiles (needed since 1.7) is not granted, so instance-profile garbage collection fails while provisioning works.")
b["emulator"]={"rolePolicies":[{"role":"KarpenterController-demo","name":"karpenter-controller","reference":{"version":"1.6.3"}}]}
write("controller-policy-outdated", b, ["KD2102"], exit_code=0, roots=[])

BOUNDARY="arn:aws:iam::111122223333:policy/ec2-only-boundary"
b=bundle("The controller role has the full 1.8.1 policy but a permissions boundary that only allows ec2:* and iam:PassRole: SSM, SQS, EKS, pricing and instance-profile calls are denied by the boundary.",
    overrides=[({"iamRole":{"name":"KarpenterController-demo"}}, {"value":{"name":"KarpenterController-demo","arn":ROLE_ARN,"path":"/","trustPolicy":irsa_trust(),"permissionsBoundaryArn":BOUNDARY}})])
b["emulator"]={**default_emulator(b), "boundaries":[{"name":"ec2-only-boundary","document":{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["ec2:*","iam:PassRole"],"Resource":"*"}]}}]}
write("controller-boundary-blocks", b, ["KD2103","KD7001"], roots=["KD2103"])

b=pi_bundle("EKS Pod Identity is wired correctly, but an SCP denies eks-auth:AssumeRoleForPodIdentity to every role of the account: neither the node group's role nor the Karpenter node role (one replica runs on a Karpenter node) lets the agent fetch the controller's credentials.", karpenter_node=NODE_B)
b["emulator"]["scps"]=[{"name":"no-pod-identity","document":{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"eks-auth:AssumeRoleForPodIdentity","Resource":"*"}]}}]
write("pod-identity-blocked-by-scp", b, ["KD1006","KD2007"], roots=["KD2007"])

write("pod-identity-self-managed-nodes", pi_bundle("Pod Identity on a self-managed node group (no EKS node group, not a Karpenter node): karpdoctor cannot tell which IAM role the agent calls eks-auth:AssumeRoleForPodIdentity with, so KD2007 cannot conclude and says why.", self_managed=True), [], unknown=["KD2007"])


# ---- EC2NodeClass, Spot and node join (KD3xxx, KD4004, KD5xxx) -------------------------------
def nc_status(ready=True, failing=None, status="False"):
    """EC2NodeClass conditions: all True, or one sub-condition `status` (False, or Unknown while
    it waits) with (type, reason, message)."""
    subs=["SubnetsReady","SecurityGroupsReady","AMIsReady","InstanceProfileReady","ValidationSucceeded"]
    conds=[]
    for t in subs:
        if failing and failing[0]==t:
            conds.append({"type":t,"status":status,"reason":failing[1],"message":failing[2],"lastTransitionTime":"2026-11-23T09:40:00Z"})
        else:
            conds.append({"type":t,"status":"True","reason":t,"message":"","lastTransitionTime":"2026-11-20T08:05:00Z"})
    if failing:
        reason="UnhealthyDependents" if status=="False" else "ReconcilingDependents"
        conds.append({"type":"Ready","status":status,"reason":reason,"message":"%s=%s"%(failing[0],status),"lastTransitionTime":"2026-11-23T09:40:00Z"})
    else:
        conds.append({"type":"Ready","status":"True","reason":"Ready","message":"","lastTransitionTime":"2026-11-20T08:05:00Z"})
    return conds
def custom_nc(spec=None, failing=None, drop=()):
    nc=nodeclass()
    nc["spec"].update(spec or {})
    for k in drop: nc["spec"].pop(k, None)
    nc["status"]["conditions"]=nc_status(failing=failing)
    return nc
def fact(key, value): return (key, {"value":value})
EU_AMI="ami-0e1f2a3b4c5d6e7f8"
PROFILE="KarpenterNodeInstanceProfile-demo"
def profile_fact(name=PROFILE, roles=(NODE_ROLE_ARN,)):
    return fact({"iamInstanceProfile":{"name":name}}, {"name":name,"arn":"arn:aws:iam::111122223333:instance-profile/"+name,"path":"/","roles":list(roles)} if roles is not None else None)

# (1) An AMI id copied from eu-west-1 into a us-west-2 cluster, with a pre-made instance profile.
b=bundle("The EC2NodeClass pins amiSelectorTerms to ami-0e1f2a3b4c5d6e7f8, an id copied from a guide written for eu-west-1, and uses spec.instanceProfile: the id does not exist in us-west-2, so AMIsReady is False (AMINotFound) and nothing launches.",
    ncs=[custom_nc({"amiSelectorTerms":[{"id":EU_AMI}],"instanceProfile":PROFILE}, failing=("AMIsReady","AMINotFound","AMISelector did not match any AMIs"), drop=("role",))],
    overrides=[profile_fact(), fact({"ec2Images":{"filters":[{"name":"image-id","values":[EU_AMI]}],"owners":[]}}, [])])
write("ami-id-from-other-region", b, ["KD3003","KD3008"], roots=["KD3003"])

# (2) Controller on Fargate (IRSA); the Karpenter node role was never added to aws-auth.
FARGATE_POD_ROLE="arn:aws:iam::111122223333:role/eks-fargate-pod-execution-role"
claims=[{"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"name":"default-%s"%n,"labels":{"karpenter.sh/nodepool":"default","karpenter.k8s.aws/ec2nodeclass":"default"}},
         "spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]},
         "status":{"providerID":"aws:///us-west-2a/i-0%s"%h,"conditions":[
            {"type":"Launched","status":"True","reason":"Launched","message":"","lastTransitionTime":"2026-11-23T09:50:00Z"},
            {"type":"Registered","status":"Unknown","reason":"NodeNotFound","message":"Node not registered with cluster","lastTransitionTime":"2026-11-23T09:50:00Z"},
            {"type":"Initialized","status":"Unknown","reason":"NodeNotFound","message":"Node not registered with cluster","lastTransitionTime":"2026-11-23T09:50:00Z"},
            {"type":"Ready","status":"Unknown","reason":"ReconcilingDependents","message":"Initialized=Unknown, Registered=Unknown","lastTransitionTime":"2026-11-23T09:50:00Z"}]}}
        for n,h in (("x7k2p","a1b2c3d4e5f607182"),("q9w4n","b2c3d4e5f60718293"))]
b=bundle("The controller runs on Fargate (IRSA) in a CONFIG_MAP cluster whose aws-auth maps only the Fargate pod execution role: the Karpenter node role was never added, so instances launch, are refused by the API server and their NodeClaims stay Registered=Unknown (NodeNotFound).",
    pods=[pod("karpenter-6d9f7c8b5d-7xk2p", node=FARGATE), pod("karpenter-6d9f7c8b5d-q9w4n", node="fargate-ip-192-168-101-9.us-west-2.compute.internal")],
    overrides=[fact("awsAuth", aws_auth(maproles_entry(FARGATE_POD_ROLE, "system:node:{{SessionName}}", ("system:bootstrappers","system:nodes","system:node-proxier")))),
               fact("nodeClaims", claims)])
for e in b["facts"]:
    if isinstance(e["fact"],dict) and "eksCluster" in e["fact"]: e["value"]["authenticationMode"]="CONFIG_MAP"
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and "eksAccessEntries" in e["fact"])]
write("node-role-missing-from-aws-auth", b, ["KD5001","KD6002"], roots=["KD5001"])

# Mid-upgrade (issue: a check that can judge from what the cluster serves never skips): the
# CRDs still serve only v1beta1, and the node role is missing from aws-auth. The node-join
# checks read the v1beta1 EC2NodeClass's spec.role, the same field as in v1.
b=bundle("Mid-upgrade: the controller runs 1.8.1 but the CRDs still serve only v1beta1 (the objects are 0.37's), and in this CONFIG_MAP cluster aws-auth maps only the node group's role: Karpenter's node role was never added, so its nodes cannot join.",
    crds=v1beta1, nps=[as_v1beta1(nodepool())], ncs=[as_v1beta1(nodeclass())],
    overrides=[fact("awsAuth", aws_auth(maproles_entry(MNG_ROLE_ARN)))])
for e in b["facts"]:
    if isinstance(e["fact"],dict) and "eksCluster" in e["fact"]: e["value"]["authenticationMode"]="CONFIG_MAP"
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and "eksAccessEntries" in e["fact"])]
write("upgrade-in-progress-node-role-unmapped", b, ["KD1002","KD5001"], skipped=["KD4005"], roots=["KD1002", "KD5001"])

# (3) Spot on Graviton in an account that never launched Spot.
spot_pool=nodepool(arch=("arm64",))
spot_pool["spec"]["template"]["spec"]["requirements"]=[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]},
    {"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]},{"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["t4g"]}]
b=bundle("A NodePool allows only spot t4g (arm64) instances in an account where AWSServiceRoleForEC2Spot was never created; the controller's 1.8.1 policy (rightly) cannot create it, so every launch fails with AuthFailure.ServiceLinkedRoleCreationNotPermitted.",
    nps=[spot_pool], overrides=[fact({"iamRole":{"name":"AWSServiceRoleForEC2Spot"}}, None)])
write("spot-service-linked-role-missing", b, ["KD4004"], roots=["KD4004"])

# (4) The node role's access entry was created without --type: STANDARD.
b=bundle("The cluster uses the API authentication mode and the node role's access entry was created without --type, so it is STANDARD: nodes authenticate but get no node permissions and never register.",
    overrides=[fact({"eksAccessEntries":{"cluster":"demo"}}, [access_entry(NODE_ROLE_ARN, "STANDARD")])])
for e in b["facts"]:
    if isinstance(e["fact"],dict) and "eksCluster" in e["fact"]: e["value"]["authenticationMode"]="API"
write("access-entry-standard", b, ["KD5003"], roots=["KD5003"])

# (5) Subnets tagged for discovery, security groups not.
b=bundle("The subnets carry karpenter.sh/discovery: demo but no security group does (the tagging step of the guide was run for subnets only): SecurityGroupsReady is False and nothing launches.",
    ncs=[custom_nc(failing=("SecurityGroupsReady","SecurityGroupsNotFound","SecurityGroupSelector did not match any SecurityGroups"))],
    overrides=[fact("ec2SecurityGroups", groups(disc={}))])
write("security-groups-untagged", b, ["KD3002","KD3008"], roots=["KD3002"])

# More single-problem scenarios, one per remaining code.
b=bundle("The subnet selector asks for karpenter.sh/discovery: demo-cluster, but the subnets are tagged demo (a copied cluster name): SubnetsReady is False.",
    ncs=[custom_nc({"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"demo-cluster"}}]}, failing=("SubnetsReady","SubnetsNotFound","SubnetSelector did not match any Subnets"))])
write("subnet-selector-typo", b, ["KD3001","KD3008"], roots=["KD3001"])

X86_AMI="ami-0a1b2c3d4e5f60718"
b=bundle("An arm64-only NodePool uses an EC2NodeClass pinned to one x86_64 AMI id: \"no instance types satisfy requirements of amis\".",
    nps=[nodepool(arch=("arm64",))],
    ncs=[custom_nc({"amiSelectorTerms":[{"id":X86_AMI}],"amiFamily":"AL2023"})],
    overrides=[fact({"ec2Images":{"filters":[{"name":"image-id","values":[X86_AMI]}],"owners":[]}},
        [{"imageId":X86_AMI,"name":"amazon-eks-node-al2023-x86_64-standard-1.33-v20261101","architecture":"x86_64","state":"available","ownerId":"602401143452","creationDate":"2026-11-01T00:00:00.000Z","deprecationTime":None,"tags":{}}])])
write("nodepool-arch-without-ami", b, ["KD3004"], roots=["KD3004"])

CTRL="KarpenterController-demo"
b=bundle("spec.role names the controller's own role (KarpenterController-demo) instead of the node role: EC2 may not assume it, it lacks the node policies, the controller may not pass it, and it is in no aws-auth entry or access entry.",
    ncs=[custom_nc({"role":CTRL})], overrides=[fact({"iamAttachedRolePolicies":{"role":CTRL}}, [])])
write("nodeclass-uses-controller-role", b, ["KD3005","KD3007","KD5001"], roots=["KD3005"])

b=bundle("spec.instanceProfile names KarpenterNodeInstanceProfile-demo, which does not exist in the account: ValidationSucceeded is False (InstanceProfileNotFound).",
    ncs=[custom_nc({"instanceProfile":PROFILE}, failing=("ValidationSucceeded","InstanceProfileNotFound","Instance profile \"%s\" not found"%PROFILE), drop=("role",))],
    overrides=[profile_fact(roles=None)])
write("instance-profile-missing", b, ["KD3006","KD3008"], roots=["KD3006"])

b=bundle("The controller role's policy lacks the AllowPassingInstanceRole statement (a hand-trimmed copy of the 1.8.1 policy): iam:PassRole of the node role is not granted and every launch fails with UnauthorizedOperation.")
b["emulator"]={"rolePolicies":[{"role":CTRL,"name":"karpenter-controller","reference":{"version":"1.8.1","omit":["AllowPassingInstanceRole"]}}]}
write("passrole-not-granted", b, ["KD3007"], roots=["KD3007"])

# Accounts that forbid attaching AWS managed policies give the node role a copy of what they
# grant as its own (inline) policy: nothing is missing, and KD3005 must not say otherwise.
NODE_ACTIONS=["ec2:DescribeInstances","ec2:DescribeInstanceTypes","ec2:DescribeRouteTables","ec2:DescribeSecurityGroups","ec2:DescribeSubnets",
  "ec2:DescribeVolumes","ec2:DescribeVolumesModifications","ec2:DescribeVpcs","eks:DescribeCluster","eks-auth:AssumeRoleForPodIdentity",
  "ecr:GetAuthorizationToken","ecr:BatchGetImage","ecr:GetDownloadUrlForLayer",
  "ec2:AssignPrivateIpAddresses","ec2:AttachNetworkInterface","ec2:CreateNetworkInterface","ec2:DeleteNetworkInterface","ec2:DescribeTags",
  "ec2:DescribeNetworkInterfaces","ec2:DetachNetworkInterface","ec2:ModifyNetworkInterfaceAttribute","ec2:UnassignPrivateIpAddresses",
  "ssm:UpdateInstanceInformation","ssmmessages:CreateControlChannel","ssmmessages:CreateDataChannel","ssmmessages:OpenControlChannel","ssmmessages:OpenDataChannel"]
b=bundle("The account forbids attaching AWS managed policies, so the node role carries its own inline policy granting everything the EKS node, ECR pull, VPC CNI and SSM managed policies grant: no managed policy is attached and none is missing.",
    overrides=[fact({"iamAttachedRolePolicies":{"role":"KarpenterNodeRole-demo"}}, [])])
b["emulator"]={**default_emulator(b)}
b["emulator"]["rolePolicies"]=b["emulator"]["rolePolicies"]+[{"role":"KarpenterNodeRole-demo","name":"eks-node","document":{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":NODE_ACTIONS,"Resource":"*"}]}}]
write("node-role-inline-policies", b, [])

# awslabs/cdk-eks-blueprints#1061: spec.instanceProfile names a profile made outside Karpenter,
# and the controller policy lets it pass only the Karpenter node role; every launch is denied
# iam:PassRole on the profile's role. Here the profile holds the managed node group's role
# (mapped in aws-auth, so the nodes would join once launched).
MNG_PROFILE="eks-system-nodes-profile"
b=bundle("spec.instanceProfile names eks-system-nodes-profile, made by the platform team and holding the managed node group's role eks-system-nodes; the controller's 1.8.1 policy lets it pass only KarpenterNodeRole-demo, so every launch fails with UnauthorizedOperation on iam:PassRole (as in awslabs/cdk-eks-blueprints#1061).",
    ncs=[custom_nc({"instanceProfile":MNG_PROFILE}, drop=("role",))],
    overrides=[profile_fact(MNG_PROFILE, roles=(MNG_ROLE_ARN,)),
               fact({"iamRole":{"name":"eks-system-nodes"}}, {"name":"eks-system-nodes","arn":MNG_ROLE_ARN,"path":"/","trustPolicy":NODE_TRUST,"permissionsBoundaryArn":None}),
               fact({"iamAttachedRolePolicies":{"role":"eks-system-nodes"}}, attached())])
write("instance-profile-passrole-denied", b, ["KD3007"], roots=["KD3007"])

# aws/karpenter-provider-aws#8190: the organization denies ec2:RunInstances unless an AWS service
# makes the call. Karpenter's launches go through CreateFleet (EC2 Fleet calls RunInstances,
# aws:ViaAWSService true), but v1.x validation calls RunInstances itself with DryRun, so the
# EC2NodeClass is not Ready (RunInstancesAuthCheckFailed). A simulation carries no
# aws:ViaAWSService, a positive Bool on a missing key is false, so every simulation allows it:
# the symptom must say that, not send the user to the permission checks that passed.
VIA_SCP={"Version":"2012-10-17","Statement":[{"Sid":"RunInstancesOnlyThroughServices","Effect":"Deny","Action":"ec2:RunInstances","Resource":"*",
    "Condition":{"Bool":{"aws:ViaAWSService":"false"}}}]}
b=bundle("The organization's SCP denies ec2:RunInstances unless an AWS service makes the call (as in aws/karpenter-provider-aws#8190): Karpenter's own DryRun validation calls it directly, so the EC2NodeClass reports ValidationSucceeded=False (RunInstancesAuthCheckFailed), while every simulation of the controller's policy allows the launch.",
    ncs=[custom_nc(failing=("ValidationSucceeded","RunInstancesAuthCheckFailed","Controller isn't authorized to call ec2:RunInstances"))])
b["emulator"]={**default_emulator(b), "scps":[{"name":"run-instances-via-services","document":VIA_SCP}]}
write("validation-denied-simulation-allows", b, ["KD3008"], roots=["KD3008"])

# aws/karpenter-provider-aws#7370: the controller logs "UnauthorizedOperation ... ec2:RunInstances
# ... with an explicit deny in a service control policy" while nodes keep launching, and every
# simulation of its policy allows the action (here the SCP of #8190, which a simulation without
# aws:ViaAWSService cannot trigger). KD1009 reports the log line and says the simulation allows it.
DENIED_LINE=logline("ERROR","Reconciler error",controller="nodeclaim.lifecycle",error="launching nodeclaim, creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:sts::111122223333:assumed-role/KarpenterController-demo/1731429849551905269 is not authorized to perform: ec2:RunInstances on resource: arn:aws:ec2:us-west-2:111122223333:instance/* with an explicit deny in a service control policy. Encoded authorization failure message: g4oZPBqZ4Bni8dE5dGjxYTnOZ")
b=bundle("The controller logs UnauthorizedOperation on ec2:RunInstances \"with an explicit deny in a service control policy\" (as in aws/karpenter-provider-aws#7370) while every simulation of its policy allows the launch: the denial comes from what a simulation cannot see (here an SCP that allows RunInstances only through AWS services).",
    logs={n:HEALTHY_LOG+"\n".join([DENIED_LINE]*3)+"\n" for n in ("karpenter-6d9f7c8b5d-7xk2p","karpenter-6d9f7c8b5d-q9w4n")})
b["emulator"]={**default_emulator(b), "scps":[{"name":"run-instances-via-services","document":VIA_SCP}]}
write("log-denied-simulation-allows", b, ["KD1009"], exit_code=0, roots=[])

b=bundle("The EC2NodeClass selects two /26 subnets with 59 free addresses each: enough today, not for a scale-up with the VPC CNI's warm IPs (warning).",
    overrides=[fact("ec2Subnets", subnets(prefix=26))])
write("subnets-nearly-full", b, ["KD3009"], exit_code=0, roots=[])

tabbed="- groups:\n  - system:bootstrappers\n  - system:nodes\n  rolearn: %s\n  username: system:node:{{EC2PrivateDNSName}}\n- rolearn: %s\n\tusername: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n"%(MNG_ROLE_ARN, NODE_ROLE_ARN)
b=bundle("aws-auth was edited by hand and the node role's entry is indented with a tab: the whole mapRoles no longer parses, so in this CONFIG_MAP cluster no node role is mapped.",
    overrides=[fact("awsAuth", aws_auth(tabbed))])
for e in b["facts"]:
    if isinstance(e["fact"],dict) and "eksCluster" in e["fact"]: e["value"]["authenticationMode"]="CONFIG_MAP"
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and "eksAccessEntries" in e["fact"])]
write("aws-auth-tab-indented", b, ["KD5001","KD5002"], roots=["KD5002"])

# Nothing names the cluster: no controller (so no CLUSTER_NAME), a kube context whose cluster
# entry is neither an EKS ARN nor an eksctl name, and no --cluster. The AWS-side checks cannot
# know which cluster to judge and say so (unknown, "pass --cluster"), never pass.
b=bundle("The controller was uninstalled and the kubeconfig's context and cluster entries were renamed (prod / prod-cluster), and --cluster was not given: karpdoctor cannot tell which EKS cluster this is, so the EC2NodeClass and node-join checks are unknown and ask for --cluster.", dep=[])
b["hints"].update({"kubeContext":"prod","kubeContextCluster":"prod-cluster"})
b["target"].update({"cluster":None,"kubeContext":"prod"})
write("cluster-name-unknown", b, ["KD1001"],
      unknown=["KD3001","KD3002","KD3003","KD3004","KD3005","KD3009","KD3010","KD4201","KD5001","KD5002","KD5003","KD5004","KD5005","KD5006"],
      skipped=["KD2001","KD2002","KD2003","KD2004","KD2005","KD2006","KD2007","KD2008","KD2101","KD2102","KD2103","KD2104","KD3007"]+NO_CONTROLLER, roots=["KD1001"])


# A customer managed EBS key: the key policy only delegates to IAM, the controller role's
# policy (the 1.8.1 reference) grants no KMS use, and spot NodePools need the Spot
# service-linked role on the key, which nothing grants.
KEY_ID="1234abcd-12ab-34cd-56ef-1234567890ab"
KEY_ARN="arn:aws:kms:us-west-2:111122223333:key/"+KEY_ID
KEY_POLICY=json.dumps({"Version":"2012-10-17","Id":"key-default-1","Statement":[{"Sid":"Enable IAM User Permissions","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"kms:*","Resource":"*"}]})
mixed=nodepool()
mixed["spec"]["template"]["spec"]["requirements"][1]["values"]=["spot","on-demand"]
SPOT_SLR={"name":"AWSServiceRoleForEC2Spot","arn":"arn:aws:iam::111122223333:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot","path":"/aws-service-role/spot.amazonaws.com/","trustPolicy":json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"spot.amazonaws.com"},"Action":"sts:AssumeRole"}]}),"permissionsBoundaryArn":None}
b=bundle("Node volumes are encrypted with a customer managed KMS key whose policy only delegates to IAM; the controller role's policy grants no KMS use and nothing lets the Spot service-linked role use the key: instances are terminated at launch with Client.InternalError.",
    nps=[mixed],
    ncs=[custom_nc({"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp3","encrypted":True,"kmsKeyID":KEY_ARN}}]})],
    overrides=[fact({"kmsKey":{"keyId":KEY_ARN}}, {"keyId":KEY_ID,"arn":KEY_ARN,"keyManager":"CUSTOMER","keyState":"Enabled","policy":KEY_POLICY}),
               fact({"iamRole":{"name":"AWSServiceRoleForEC2Spot"}}, SPOT_SLR),
               fact({"kmsGrants":{"keyId":KEY_ARN,"grantee":SPOT_SLR["arn"]}}, [])])
b["emulator"]={**default_emulator(b), "serviceLinkedRoles":["spot.amazonaws.com"]}
b["emulator"]["rolePolicies"]=[p for p in b["emulator"]["rolePolicies"] if p["role"]!="AWSServiceRoleForEC2Spot"]
write("ebs-cmk-unusable", b, ["KD3010"], roots=["KD3010"])


# ---- Controller install, NodePools, NodeClaims, interruption (KD1xxx, KD4xxx, KD6xxx, KD7xxx, KD9001)
def set_env(b, name, value):
    """Sets (or with None removes) one controller environment variable in a bundle."""
    for e in b["facts"]:
        if e["fact"]=={"controllerDeployments":{"namespace":None}}:
            for d in e["value"]:
                env=d["spec"]["template"]["spec"]["containers"][0]["env"]
                env[:]=[x for x in env if x["name"]!=name]+([{"name":name,"value":value}] if value is not None else [])
def pending_pod(name, ns, message):
    p=pod(name, ns=ns, ready=False)
    p["spec"].pop("nodeName")
    p["status"]={"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":message,"lastTransitionTime":"2026-11-23T09:30:00Z"}],
                 "containerStatuses":[{"name":"controller","image":"public.ecr.aws/karpenter/controller:1.8.1","imageID":"","ready":False,"restartCount":0,"started":False,"state":{"waiting":{"reason":"ContainerCreating"}},"lastState":{}}]}
    return p

# (1) A controller on Fargate whose profile selects another namespace.
msg="0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
b=bundle("Karpenter was installed into kube-system on a cluster whose only capacity for it is Fargate, but the Fargate profile selects namespace karpenter (the guide's default): both controller pods stay Pending.",
    ns="kube-system", dep=[deployment(ready=0, ns="kube-system")],
    pods=[pending_pod("karpenter-6d9f7c8b5d-7xk2p","kube-system",msg), pending_pod("karpenter-6d9f7c8b5d-q9w4n","kube-system",msg)],
    overrides=[fact({"eksFargateProfiles":{"cluster":"demo"}}, [{"name":"karpenter","status":"ACTIVE","podExecutionRoleArn":FARGATE_POD_ROLE,
        "subnets":["subnet-0a1b2c3d","subnet-0e4f5a6b"],"selectors":[{"namespace":"karpenter","labels":{}}]}])])
write("controller-on-fargate-pending", b, ["KD1001","KD1005"], skipped=["KD1009","KD9001"], roots=["KD1005"])

# (2) The interruption queue is in the Helm values but was never created.
b=bundle("settings.interruptionQueue is demo (the CAS-migration guide's Helm values) but the queue was never created: the controller retries GetQueueUrl forever and handles no interruption.",
    logs={n:HEALTHY_LOG+logline("ERROR","failed to create valid sqs provider",controller="interruption",error="creating sqs provider, operation error SQS: GetQueueUrl, https response error StatusCode: 400, RequestID: 5f1e2d3c-0000-4a6b-8c7d-9e0f1a2b3c4d, AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.")+"\n"
          for n in ("karpenter-6d9f7c8b5d-7xk2p","karpenter-6d9f7c8b5d-q9w4n")},
    overrides=[fact({"sqsQueue":{"name":"demo"}}, None), fact("sqsQueues", [])])
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and "eventRules" in e["fact"])]
write("interruption-queue-missing", b, ["KD1009","KD7001"], skipped=["KD7002"], roots=["KD7001"])

# (2b) One root cause, one error: the Helm value names the queue with a typo ("Demo"; SQS
# names are case-sensitive), the controller role's policy grants the queue that exists
# ("demo"). The queue statement must not be judged on a queue that does not exist: KD7001
# owns it and says to fix the name, KD2102 must not ask to grant the mistyped queue.
b=bundle("settings.interruptionQueue is Demo but the queue created for the cluster is demo (SQS queue names are case-sensitive); the controller role's policy grants demo. One root cause: the name.",
    logs={n:HEALTHY_LOG+logline("ERROR","failed to create valid sqs provider",controller="interruption",error="creating sqs provider, operation error SQS: GetQueueUrl, https response error StatusCode: 400, RequestID: 6a2f3e4d-0000-4b7c-9d8e-0f1a2b3c4d5e, AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.")+"\n"
          for n in ("karpenter-6d9f7c8b5d-7xk2p","karpenter-6d9f7c8b5d-q9w4n")},
    overrides=[fact({"sqsQueue":{"name":"Demo"}}, None)])
set_env(b, "INTERRUPTION_QUEUE", "Demo")
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and ("eventRules" in e["fact"] or e["fact"]=={"sqsQueue":{"name":"demo"}}))]
write("interruption-queue-name-case", b, ["KD1009","KD7001"], skipped=["KD7002"], roots=["KD7001"])

# (3) A v1.0 upgrade that left v1beta1 in storedVersions.
left={n: crd(n,g,k,p,stored=("v1beta1","v1")) for n,g,k,p in CRDS if g=="karpenter.sh"}
# The 1.0 chart's conversion webhook, installed while Karpenter ran in kube-system; the
# Service is gone since Karpenter moved to its own namespace (aws/karpenter-provider-aws#6818).
left["nodeclaims.karpenter.sh"]["spec"]["conversion"]={"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1beta1","v1"],
    "clientConfig":{"service":{"namespace":"kube-system","name":"karpenter","port":8443,"path":"/conversion/karpenter.sh"}}}}
write("crds-stored-v1beta1", bundle("The cluster went through the v1.0 migration and is now on 1.8.1, but status.storedVersions of the NodePool and NodeClaim CRDs still lists v1beta1 (the next karpenter-crd upgrade fails with \"status.storedVersions[0]: Invalid value: \\\"v1beta1\\\": must appear in spec.versions\"), and the NodeClaim CRD still converts through the 1.0 webhook at kube-system/karpenter, a Service that no longer exists.",
    crds=left, overrides=[fact({"service":{"namespace":"kube-system","name":"karpenter"}}, None)]), ["KD1003"], roots=["KD1003"])

# (4) A NodePool requiring arm64 with the t3 family.
arm_t3=nodepool(arch=("arm64",))
arm_t3["spec"]["template"]["spec"]["requirements"]=[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]},
    {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},{"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["t3"]}]
nc=nodeclass(); nc["status"]["amis"].append({"id":"ami-0b2c3d4e5f6071829","name":"amazon-eks-node-al2023-arm64-standard-1.33-v20261101","requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]}]})
write("nodepool-arm64-t3", bundle("A NodePool asks for arm64 and the t3 family: t3 is x86-only (the arm64 burstable family is t4g), so no instance type can ever be launched.", nps=[arm_t3], ncs=[nc]), ["KD4003"], roots=["KD4003"])

# minValues (launch flexibility): four families listed and at least four asked for, but the
# category requirement drops t3; three families are left, so with MIN_VALUES_POLICY Strict (the
# default) Karpenter launches nothing from the NodePool.
flex=nodepool()
flex["spec"]["template"]["spec"]["requirements"]=[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]},
    {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},
    {"key":"karpenter.k8s.aws/instance-category","operator":"In","values":["c","m","r"]},
    {"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5","m5","r5","t3"],"minValues":4}]
write("nodepool-min-values-unmet", bundle("A NodePool lists four instance families and asks for at least four (minValues: 4, for launch flexibility), but its instance-category requirement (c, m, r) excludes t3: three families are left, so Karpenter, with the default MIN_VALUES_POLICY Strict, launches nothing from it.", nps=[flex]), ["KD4003"], roots=["KD4003"])

# (5) Logs full of the pricing AccessDenied warning and nothing else wrong.
PRICING=logline("ERROR","Reconciler error",controller="providers.pricing",error="updating pricing, retreiving on-demand pricing data, operation error Pricing: GetProducts, https response error StatusCode: 400, RequestID: 0d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d, api error AccessDeniedException: User: arn:aws:sts::111122223333:assumed-role/KarpenterController-demo/1700000000000000000 is not authorized to perform: pricing:GetProducts with an explicit deny in a service control policy")
write("pricing-access-denied-noise", bundle("A training account's region allow-list SCP denies pricing:GetProducts (served from us-east-1): the controller logs AccessDenied every few minutes and works anyway with its built-in prices.",
    logs={n:HEALTHY_LOG+"\n".join([PRICING]*6)+"\n" for n in ("karpenter-6d9f7c8b5d-7xk2p","karpenter-6d9f7c8b5d-q9w4n")}), ["KD9001"], exit_code=0, roots=[])

# KD1002: CRDs one release behind the controller.
old={"nodepools.karpenter.sh":crd("nodepools.karpenter.sh","karpenter.sh","NodePool","nodepools",fields=[f for f in SPEC_FIELDS["nodepools"] if f!="replicas"]),
     "nodeoverlays.karpenter.sh":None}
write("crds-not-upgraded", bundle("The controller was upgraded to 1.8.1 with the karpenter chart only: the CRDs are still 1.6's (no NodeOverlay CRD, no NodePool spec.replicas), so new fields are rejected or silently dropped.", crds=old), ["KD1002"], roots=["KD1002"])

# KD1004: a cluster endpoint copied from another cluster.
b=bundle("settings.clusterEndpoint was copied from the staging cluster's values file: nodes bootstrap against staging's API server and never register here.")
set_env(b, "CLUSTER_ENDPOINT", "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com")
write("controller-endpoint-mismatch", b, ["KD1004"], roots=["KD1004"])

# KD1006: one replica landed on a node Karpenter manages.
b=bundle("A custom affinity in the Helm values dropped the chart's karpenter.sh/nodepool DoesNotExist term, and one controller replica now runs on a Karpenter node.")
b["facts"]=[e for e in b["facts"] if e["fact"]!={"node":{"name":NODE_B}}]+[{"fact":{"node":{"name":NODE_B}},"value":node(NODE_B, karpenter=True)}]
write("controller-on-karpenter-node", b, ["KD1006"], exit_code=0, roots=[])

# KD1007: v0.3x webhook configurations left behind.
def webhook_config(name, kind="ValidatingWebhookConfiguration"):
    return {"apiVersion":"admissionregistration.k8s.io/v1","kind":kind,"metadata":{"name":name},
            "webhooks":[{"name":name,"admissionReviewVersions":["v1"],"sideEffects":"None","failurePolicy":"Fail",
                         "clientConfig":{"service":{"namespace":NS,"name":"karpenter","port":8443}},
                         "rules":[{"apiGroups":["karpenter.sh"],"apiVersions":["v1beta1"],"operations":["CREATE","UPDATE"],"resources":["nodepools","nodeclaims"]}]}]}
svc={"apiVersion":"v1","kind":"Service","metadata":{"name":"karpenter","namespace":NS,"labels":SEL},"spec":{"type":"ClusterIP","selector":SEL,"ports":[{"name":"http-metrics","port":8080,"protocol":"TCP","targetPort":"http-metrics"}]}}
b=bundle("The install was upgraded from 0.37 to 1.8.1 and the old webhook configurations were never deleted: validation.webhook.karpenter.sh and defaulting.webhook.karpenter.k8s.aws still call port 8443 of the karpenter Service, which now serves metrics only, so every NodePool edit fails.",
    overrides=[fact("webhookConfigurations", [webhook_config("validation.webhook.karpenter.sh"), webhook_config("defaulting.webhook.karpenter.k8s.aws","MutatingWebhookConfiguration")]),
               fact({"service":{"namespace":NS,"name":"karpenter"}}, svc)])
write("stale-webhooks", b, ["KD1007"], roots=["KD1007"])

# KD1008: a release too old for the cluster's Kubernetes version.
OLD_IMAGE="public.ecr.aws/karpenter/controller:1.4.2@sha256:0f1e2d3c4b5a69788a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7"
b=bundle("The control plane was upgraded to Kubernetes 1.33 while Karpenter stayed at 1.4.2; 1.33 needs Karpenter 1.5 or later.", dep=[deployment(image=OLD_IMAGE)])
b["target"]["karpenterVersion"]="1.4.2"
write("karpenter-too-old", b, ["KD1008"], roots=["KD1008"])

# KD1009: an error karpdoctor does not know, repeated with different request ids.
UNKNOWN=[logline("ERROR","Reconciler error",controller="nodeclaim.disruption",error="getting drift, computing static drift, request id %s: resolving instance types, cache miss"%rid) for rid in ("7a1b2c3d-aaaa-4b5c-8d9e-0f1a2b3c4d5e","8b2c3d4e-bbbb-4c5d-9e0f-1a2b3c4d5e6f","9c3d4e5f-cccc-4d5e-8f1a-2b3c4d5e6f70")]
write("controller-log-errors", bundle("The controller keeps logging an error karpdoctor has no pattern for (the same message with a new request id each time): shown verbatim, once, as a warning.",
    logs={"karpenter-6d9f7c8b5d-7xk2p":HEALTHY_LOG+"\n".join(UNKNOWN)+"\n"}), ["KD1009"], exit_code=0, roots=[])

# NodePool and NodeClaim lifecycle.
def claim(name, pool="default", launched=("True","Launched",""), registered=("True","Registered",""), initialized=("True","Initialized",""), since="2026-11-23T09:40:00Z", capacity=None, node_name=None):
    conds=[]
    for t,(st,reason,msg) in (("Launched",launched),("Registered",registered),("Initialized",initialized)):
        conds.append({"type":t,"status":st,"reason":reason,"message":msg,"lastTransitionTime":since})
    ready="True" if all(c["status"]=="True" for c in conds) else "Unknown"
    conds.append({"type":"Ready","status":ready,"reason":"Ready" if ready=="True" else "ReconcilingDependents","message":"","lastTransitionTime":since})
    st={"providerID":"aws:///us-west-2a/i-0%s"%hashlib.sha256(name.encode()).hexdigest()[:17],"conditions":conds,"capacity":capacity or {"cpu":"8","memory":"32Gi","pods":"58"}}
    if node_name: st["nodeName"]=node_name
    return {"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"name":name,"labels":{"karpenter.sh/nodepool":pool,"karpenter.k8s.aws/ec2nodeclass":"default"}},
            "spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]},"status":st}
limited=nodepool(); limited["spec"]["limits"]={"cpu":"16","memory":"64Gi"}
limited["status"]["resources"]={"cpu":"16","memory":"64Gi","nodes":"2","pods":"116"}
write("nodepool-limits-reached", bundle("The default NodePool has limits of 16 CPUs and 64Gi; its two m5.2xlarge NodeClaims hold exactly that, so pending pods wait and Karpenter logs \"all available instance types exceed limits for nodepool\".",
    nps=[limited], overrides=[fact("nodeClaims", [claim("default-a1b2c"), claim("default-d3e4f")])]), ["KD4002"], roots=["KD4002"])

unhealthy=nodepool()
unhealthy["status"]["conditions"]+= [{"type":"NodeClassReady","status":"True","reason":"NodeClassReady","message":"","lastTransitionTime":"2026-11-20T08:05:00Z"},
    {"type":"NodeRegistrationHealthy","status":"False","reason":"RegistrationFailed","message":"Failed to register node","lastTransitionTime":"2026-11-23T09:20:00Z"}]
write("nodepool-registration-unhealthy", bundle("The last NodeClaims of the default NodePool launched and never registered; Karpenter deleted them after 15 minutes, and only the NodePool's NodeRegistrationHealthy=False (RegistrationFailed) remembers it.", nps=[unhealthy]), ["KD4005"], roots=["KD4005"])

ice=[{"apiVersion":"v1","kind":"Event","metadata":{"name":"default-%s.18a2b3c4d5e6f7a8"%n,"namespace":"default","uid":"0f1e2d3c-%s-4a6b-8c7d-9e0f1a2b3c4d"%n},
      "involvedObject":{"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","name":"default-%s"%n},"reason":"InsufficientCapacityError",
      "message":"NodeClaim default-%s event: all requested instance types were unavailable during launch"%n,"type":"Warning","count":c,
      "firstTimestamp":"2026-11-23T09:%s:00Z"%m,"lastTimestamp":"2026-11-23T09:%s:30Z"%m,"source":{"component":"karpenter"}} for n,c,m in (("q1w2e",3,"44"),("r4t5y",1,"52"))]
quota=claim("default-u7i8o", launched=("Unknown","VCPULimitExceeded","An instance was requested that would exceed your VCPU quota"), registered=("Unknown","AwaitingReconciliation","object is awaiting reconciliation"),
            initialized=("Unknown","AwaitingReconciliation","object is awaiting reconciliation"), since="2026-11-23T09:58:00Z")
write("nodeclaim-launch-failed", bundle("A NodeClaim cannot launch because the account's On-Demand vCPU quota is exhausted (VCPULimitExceeded), and two earlier NodeClaims were deleted after insufficient capacity errors.",
    overrides=[fact("nodeClaims", [claim("default-a1b2c"), quota]), fact({"events":{"kind":"NodeClaim","namespace":None}}, ice)]), ["KD6001"], roots=["KD6001"])

CILIUM="ip-192-168-91-7.us-west-2.compute.internal"
stuck_node=node(CILIUM, karpenter=True)
stuck_node["spec"]={"taints":[{"key":"node.cilium.io/agent-not-ready","value":"true","effect":"NoExecute"}]}
stuck_node["status"]={"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}]}
# Cilium's chart values copied from a managed-node-group setup pin the agent to nodes with the
# nodegroup label, so it never runs on Karpenter's nodes.
cilium_claim=claim("default-p0o9i", initialized=("Unknown","StartupTaintsExist","StartupTaint \"node.cilium.io/agent-not-ready=true:NoExecute\" still exists"), node_name=CILIUM)
cilium_claim["spec"]["startupTaints"]=[{"key":"node.cilium.io/agent-not-ready","value":"true","effect":"NoExecute"}]
cilium_ds={"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"cilium","namespace":"kube-system","uid":"c1l1um00-0000-4000-8000-000000000001"},
    "spec":{"template":{"spec":{"containers":[{"name":"cilium-agent","image":"quay.io/cilium/cilium:v1.16.5","resources":{"requests":{"cpu":"100m"}}}],
        "tolerations":[{"operator":"Exists"}],
        "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"eks.amazonaws.com/nodegroup","operator":"Exists"}]}]}}}}}}}
write("nodeclaim-not-initialized", bundle("The NodePool lists Cilium's startup taint, but Cilium's agent is not scheduled on Karpenter nodes (its affinity, copied from a managed node group setup, requires the eks.amazonaws.com/nodegroup label): the node is Ready, keeps the taint and the NodeClaim never initializes.",
    overrides=[fact("nodeClaims", [cilium_claim]), fact({"node":{"name":CILIUM}}, stuck_node), fact("daemonSets", DAEMONSETS+[cilium_ds])]),
    ["KD6003","KD6004"], roots=["KD6004"])

# Interruption: rules and queue encryption; no queue at all while spot is allowed.
SQS_KEY_ID="5678abcd-56ab-78cd-90ef-5678901234cd"
SQS_KEY_ARN="arn:aws:kms:us-west-2:111122223333:key/"+SQS_KEY_ID
b=bundle("The queue was created with a customer managed KMS key whose policy only delegates to IAM (so EventBridge may not use it), and only the spot interruption rule was created: nothing reaches the queue, and health, rebalance and state-change events have no rule at all.",
    overrides=[fact({"sqsQueue":{"name":"demo"}}, queue(kms=SQS_KEY_ARN)), fact({"eventRules":{"targetArn":QUEUE_ARN}}, rules(only=["SpotInterruptionRule"])),
               fact({"kmsKey":{"keyId":SQS_KEY_ARN}}, {"keyId":SQS_KEY_ID,"arn":SQS_KEY_ARN,"keyManager":"CUSTOMER","keyState":"Enabled","policy":KEY_POLICY})])
write("interruption-rules-missing", b, ["KD7002"], roots=["KD7002"])

mixed_spot=nodepool(); mixed_spot["spec"]["template"]["spec"]["requirements"][1]["values"]=["spot","on-demand"]
b=bundle("NodePools allow spot but settings.interruptionQueue is empty (interruption handling was skipped at install): two-minute spot notices go unheard.",
    nps=[mixed_spot], overrides=[fact({"iamRole":{"name":"AWSServiceRoleForEC2Spot"}}, SPOT_SLR)])
set_env(b, "INTERRUPTION_QUEUE", None)
b["facts"]=[e for e in b["facts"] if not (isinstance(e["fact"],dict) and ("sqsQueue" in e["fact"] or "eventRules" in e["fact"])) and e["fact"]!="sqsQueues"]
# KD7003 asks whether an SCP would stop the installer (the caller) from creating the queue.
PLATFORM_ADMIN={"name":"PlatformAdmin","arn":"arn:aws:iam::111122223333:role/admins/PlatformAdmin","path":"/admins/","trustPolicy":json.dumps({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"sts:AssumeRole"}]}),"permissionsBoundaryArn":None}
b["facts"].append({"fact":{"iamRole":{"name":"PlatformAdmin"}},"value":PLATFORM_ADMIN})
b["emulator"]={**default_emulator(b), "serviceLinkedRoles":["spot.amazonaws.com"],
    "assumeRole":{"roleArn":PLATFORM_ADMIN["arn"],"session":"alice"}}
b["emulator"]["rolePolicies"]=[p for p in b["emulator"]["rolePolicies"] if p["role"] not in ("AWSServiceRoleForEC2Spot","PlatformAdmin")]
b["emulator"]["rolePolicies"].append({"role":"PlatformAdmin","name":"admin","document":{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}})
write("interruption-handling-disabled", b, ["KD7003"], exit_code=0, roots=[])

# ---- The corpus: scenarios reconstructed from public threads and healthy installs of distinct
# shapes, one file per area under scripts/corpus/. Each file is run with this script's helpers
# in scope (bundle, write, fact, …), so a scenario reads the same as its neighbours here.
CORPUS=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
for _f in sorted(os.listdir(CORPUS)) if os.path.isdir(CORPUS) else []:
    if _f.endswith('.py'):
        _p=os.path.join(CORPUS,_f)
        exec(compile(open(_p).read(), _p, 'exec'), globals())
