# Broken installs of the controller and its identity (KD1xxx, KD2xxx, KD7xxx, KD9001),
# reconstructed from public threads. Exec'd at the end of scripts/make_fixtures.py with its
# helpers in scope (bundle, write, fact, deployment, pod, logline, pi_bundle, set_env, ...).
# Names and ids are the fixture's (account 111122223333, cluster demo, us-west-2); the shapes
# (objects, log wording, Karpenter version where it matters) are the thread's.
import hashlib as _hl, json as _js, copy as _cp


def _img(version):
    """The controller image of a release, pinned by a (made-up, stable) digest."""
    return "public.ecr.aws/karpenter/controller:%s@sha256:%s" % (version, _hl.sha256(("karpenter-" + version).encode()).hexdigest())


def _dep(version, ns=NS, ready=2, replicas=2):
    d = deployment(ready=ready, replicas=replicas, ns=ns, image=_img(version))
    d["metadata"]["labels"]["app.kubernetes.io/version"] = version
    d["metadata"]["labels"]["helm.sh/chart"] = "karpenter-" + version
    return d


def _pods_at(pods, version):
    for p in pods:
        p["spec"]["containers"][0]["image"] = "public.ecr.aws/karpenter/controller:" + version
        p["status"]["containerStatuses"][0]["image"] = "public.ecr.aws/karpenter/controller:" + version
    return pods


def _set(b, key, value):
    b["facts"] = [e for e in b["facts"] if e["fact"] != key] + [{"fact": key, "value": value}]


def _drop(b, pred):
    b["facts"] = [e for e in b["facts"] if not pred(e["fact"])]


def _at_k8s(b, minor, git):
    """The cluster runs Kubernetes 1.<minor>: /version, DescribeCluster, and the AMIs the
    EC2NodeClass resolved (named for that minor)."""
    _set(b, "kubeVersion", {"major": "1", "minor": minor, "gitVersion": git})
    for e in b["facts"]:
        if isinstance(e["fact"], dict) and "eksCluster" in e["fact"] and e.get("value"):
            e["value"]["version"] = "1." + minor
        if e["fact"] == "ec2NodeClasses" and isinstance(e.get("value"), list):
            for nc in e["value"]:
                for a in nc.get("status", {}).get("amis", []):
                    a["name"] = a["name"].replace("-1.33-", "-1.%s-" % minor)
    b["target"]["kubernetesVersion"] = git


def _irsa_env(role_arn):
    return [dict(e, value=role_arn) if e["name"] == "AWS_ROLE_ARN" else e for e in IRSA_ENV]


POD_A, POD_B = "karpenter-6d9f7c8b5d-7xk2p", "karpenter-6d9f7c8b5d-q9w4n"


# ---- terraform-aws-eks v20 Karpenter module with the v0.3x policy, controller upgraded to 1.0 --
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/3134
# The module was moved to 20.24 without enable_v1_permissions (default false: the 0.33-0.37
# policy), then the chart went from 0.37.0 to 1.0.1. The v1 controller tags instances after
# launch with eks:eks-cluster-name, which the old AllowScopedResourceTagging statement's
# aws:TagKeys condition does not list: "tagging nodeclaim, tagging instance,
# UnauthorizedOperation ... ec2:CreateTags ... because no identity-based policy allows".
V = "1.0.1"
IRSA_ROLE = "arn:aws:iam::111122223333:role/KarpenterIRSA-demo"
TAGGING = logline("ERROR", "Reconciler error", controller="nodeclaim.tagging",
    error="tagging nodeclaim, tagging instance, UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:sts::111122223333:assumed-role/KarpenterIRSA-demo/1724411005093744967 is not authorized to perform: ec2:CreateTags on resource: arn:aws:ec2:us-west-2:111122223333:instance/i-0d715a485281ffc45 because no identity-based policy allows the ec2:CreateTags action.")
b = bundle("terraform-aws-eks's Karpenter module was upgraded within v20 without enable_v1_permissions, so the controller role keeps the v0.3x (0.37) policy, and the chart was then upgraded from 0.37.0 to 1.0.1: every existing instance fails \"tagging nodeclaim, tagging instance, UnauthorizedOperation ... ec2:CreateTags\" because the old tagging statement does not allow the eks:eks-cluster-name tag (as in terraform-aws-modules/terraform-aws-eks#3134).",
    dep=[_dep(V)], annotation=IRSA_ROLE,
    pods=_pods_at([pod(POD_A, env=_irsa_env(IRSA_ROLE)), pod(POD_B, env=_irsa_env(IRSA_ROLE), node="ip-192-168-77-10.us-west-2.compute.internal")], V),
    logs={n: HEALTHY_LOG + "\n".join([TAGGING] * 4) + "\n" for n in (POD_A, POD_B)})
_at_k8s(b, "30", "v1.30.4-eks-a737599")
b["target"]["karpenterVersion"] = V
b["emulator"] = {"rolePolicies": [{"role": "KarpenterIRSA-demo", "name": "karpenter-controller", "reference": {"version": "0.37.7"}}]}
write("tf-v20-v1beta1-policy-after-1-0-upgrade", b, ["KD1009", "KD2102"], roots=["KD2102"])


# ---- The CAS-migration guide: interruptionQueue set, queue never created, 1.0.x panics ----------
# https://github.com/kubernetes-sigs/karpenter/issues/1799
# Followed https://karpenter.sh/docs/getting-started/migrating-from-cas/ with 1.0.7 in
# kube-system: the Helm command sets settings.interruptionQueue=${CLUSTER_NAME}, the guide's
# inline controller policy has no SQS statement, and no queue was ever created. Before 1.4 the
# controller panics at start-up: "panic: AWS.SimpleQueueService.NonExistentQueue: The
# specified queue does not exist." The missing SQS grant is not a second problem while the
# queue does not exist (KD2102 must leave it to KD7001).
V = "1.0.7"
ROLE_1799 = "arn:aws:iam::111122223333:role/KarpenterControllerRole-demo"
PANIC_QUEUE = "\n".join([
    logline("INFO", "discovered karpenter version", t="2026-11-23T09:58:01.210Z"),
    logline("INFO", "discovered kube dns", t="2026-11-23T09:58:01.402Z"),
    "panic: AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.",
    "",
    "goroutine 1 [running]:",
    "github.com/samber/lo.must({0x3a4c0a0, 0xc000c1f380}, {0x0, 0x0, 0x0})",
    "\tgithub.com/samber/lo@v1.46.0/errors.go:53 +0x1df",
    "github.com/aws/karpenter-provider-aws/pkg/operator.NewOperator({0x4322a38, 0xc0005ab4d0}, 0xc00019c6c0)",
    "\tgithub.com/aws/karpenter-provider-aws/pkg/operator/operator.go:177 +0x1d5a",
    "main.main()",
    "\tgithub.com/aws/karpenter-provider-aws/cmd/controller/main.go:28 +0x2a"]) + "\n"
ks = "kube-system"
crash2 = {"restarts": 9, "exit": 2, "reason": "Error"}
b = bundle("Installed with the Cluster Autoscaler migration guide (1.0.7, kube-system): settings.interruptionQueue=demo is set but the queue was never created (the guide's policy has no SQS statement either), so both controller pods crash-loop on \"panic: AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.\" (as in kubernetes-sigs/karpenter#1799).",
    ns=ks, dep=[_dep(V, ns=ks, ready=0)], annotation=ROLE_1799,
    pods=_pods_at([pod(POD_A, ns=ks, crash=crash2, env=_irsa_env(ROLE_1799)), pod(POD_B, ns=ks, crash=dict(crash2, restarts=8), env=_irsa_env(ROLE_1799), node="ip-192-168-77-10.us-west-2.compute.internal")], V),
    logs={POD_A: PANIC_QUEUE, POD_B: PANIC_QUEUE}, previous_logs={POD_A: PANIC_QUEUE, POD_B: PANIC_QUEUE},
    overrides=[fact({"sqsQueue": {"name": "demo"}}, None), fact("sqsQueues", [])])
_drop(b, lambda k: isinstance(k, dict) and "eventRules" in k)
_at_k8s(b, "31", "v1.31.2-eks-7f9249a")
b["target"]["karpenterVersion"] = V
b["emulator"] = {"rolePolicies": [{"role": "KarpenterControllerRole-demo", "name": "KarpenterControllerPolicy-demo", "reference": {"version": V, "omit": ["AllowInterruptionQueueActions"]}}]}
write("cas-guide-1-0-queue-never-created-panic", b, ["KD1001", "KD1009", "KD7001"], skipped=["KD7002"], roots=["KD7001"])


# ---- Karpenter 1.1 on an EKS 1.32 control plane: the version check panics ----------------------
# https://github.com/aws/karpenter-provider-aws/issues/7629
# The control plane went to 1.32 while the chart stayed at 1.1.1; the controller refuses to
# start: "panic: validating kubernetes version, karpenter version is not compatible with K8s
# version 1.32" (1.32 needs Karpenter 1.2).
V = "1.1.1"
PANIC_K8S = "\n".join([
    "panic: validating kubernetes version, karpenter version is not compatible with K8s version 1.32",
    "",
    "goroutine 1 [running]:",
    "github.com/samber/lo.must({0x38c81e0, 0xc000b0a180}, {0x0, 0x0, 0x0})",
    "\tgithub.com/samber/lo@v1.47.0/errors.go:53 +0x1df",
    "github.com/samber/lo.Must0(...)",
    "\tgithub.com/samber/lo@v1.47.0/errors.go:72",
    "github.com/aws/karpenter-provider-aws/pkg/operator.NewOperator({0x42d15e0, 0xc0006b82d0}, 0xc00016f3c0)",
    "\tgithub.com/aws/karpenter-provider-aws/pkg/operator/operator.go:155 +0xf7c",
    "main.main()",
    "\tgithub.com/aws/karpenter-provider-aws/cmd/controller/main.go:28 +0x2a"]) + "\n"
b = bundle("The control plane was upgraded to Kubernetes 1.32 with Karpenter still at 1.1.1 (1.32 needs 1.2): both controller pods crash-loop on \"panic: validating kubernetes version, karpenter version is not compatible with K8s version 1.32\" (as in aws/karpenter-provider-aws#7629).",
    ns=ks, dep=[_dep(V, ns=ks, ready=0)],
    pods=_pods_at([pod(POD_A, ns=ks, crash=crash2), pod(POD_B, ns=ks, crash=dict(crash2, restarts=11), node="ip-192-168-77-10.us-west-2.compute.internal")], V),
    logs={POD_A: PANIC_K8S, POD_B: PANIC_K8S}, previous_logs={POD_A: PANIC_K8S, POD_B: PANIC_K8S})
_at_k8s(b, "32", "v1.32.0-eks-5ca49cb")
b["target"]["karpenterVersion"] = V
write("karpenter-1-1-on-eks-1-32-panic", b, ["KD1001", "KD1008", "KD1009"], roots=["KD1008"])


# ---- Pod Identity association made for kube-system/karpenter, chart installed as another name ---
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/3064 (fixed in the example by
# https://github.com/terraform-aws-modules/terraform-aws-eks/pull/3066)
# The Karpenter sub-module creates the Pod Identity association for kube-system/karpenter (its
# service_account default), but the Helm release was given another name, and the chart names
# the ServiceAccount after the release. The controller's ServiceAccount has no association and
# no annotation, so the SDK falls back to the managed node group's instance role (IMDS hop
# limit 2): "the error logs I showed are from the Karpenter Controller, which is missing some
# permissions", fixed in the thread by granting Karpenter's permissions to the node group role.
# The release name "karpenter-controller" is ours (the thread does not give it); the version
# is today's release (the thread's 0.36 predates karpdoctor's policy data).
REL = "karpenter-controller"
SEL2 = {"app.kubernetes.io/instance": REL, "app.kubernetes.io/name": "karpenter"}
SELSTR2 = "app.kubernetes.io/instance=%s,app.kubernetes.io/name=karpenter" % REL
d = deployment(ns=ks)
d["metadata"]["name"] = REL
d["metadata"]["labels"].update(SEL2)
d["metadata"]["annotations"]["meta.helm.sh/release-name"] = REL
d["spec"]["selector"]["matchLabels"] = dict(SEL2)
d["spec"]["template"]["metadata"]["labels"] = dict(SEL2)
d["spec"]["template"]["spec"]["serviceAccountName"] = REL
PA, PB = REL + "-5f7d9c6b8d-2lq8z", REL + "-5f7d9c6b8d-v4n7t"
ps = [pod(PA, ns=ks, env=[]), pod(PB, ns=ks, env=[], node="ip-192-168-77-10.us-west-2.compute.internal")]
for p in ps:
    p["metadata"]["labels"] = dict(SEL2, **{"pod-template-hash": "5f7d9c6b8d"})
    p["metadata"]["ownerReferences"][0]["name"] = REL + "-5f7d9c6b8d"
    p["spec"]["serviceAccountName"] = REL
NODE_ROLE_DENIED = logline("ERROR", "Reconciler error", controller="nodeclaim.lifecycle",
    error="launching nodeclaim, creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:sts::111122223333:assumed-role/eks-system-nodes/i-0a1b2c3d4e5f60718 is not authorized to perform: ec2:CreateFleet on resource: arn:aws:ec2:us-west-2:111122223333:fleet/* because no identity-based policy allows the ec2:CreateFleet action. Encoded authorization failure message: Zm9vYmFyYmF6")
b = bundle("terraform-aws-eks's Karpenter sub-module made the Pod Identity association for kube-system/karpenter, but the Helm release is named karpenter-controller and the chart names the ServiceAccount after it: the controller's ServiceAccount has neither an association nor an IRSA annotation, so the controller runs as the node group's instance role and every launch is UnauthorizedOperation (as in terraform-aws-modules/terraform-aws-eks#3064).",
    ns=ks, dep=[d], pods=ps, annotation=None,
    logs={PA: HEALTHY_LOG + "\n".join([NODE_ROLE_DENIED] * 3) + "\n", PB: HEALTHY_LOG})
# Re-key what bundle() keyed on the default names: the pods by the release's selector, the
# ServiceAccount and its (absent) association by the release's name.
for e in b["facts"]:
    if e["fact"] == {"pods": {"namespace": ks, "labelSelector": SELSTR}}:
        e["fact"] = {"pods": {"namespace": ks, "labelSelector": SELSTR2}}
    if e["fact"] == {"serviceAccount": {"namespace": ks, "name": "karpenter"}}:
        e["fact"] = {"serviceAccount": {"namespace": ks, "name": REL}}
        e["value"]["metadata"]["name"] = REL
        e["value"]["metadata"]["labels"] = dict(SEL2)
    if e["fact"] == {"podIdentityAssociations": {"cluster": "demo", "namespace": ks, "serviceAccount": "karpenter"}}:
        e["fact"] = {"podIdentityAssociations": {"cluster": "demo", "namespace": ks, "serviceAccount": REL}}
# The association the module made, for the ServiceAccount nobody runs as, and its role.
PI_ROLE_3064 = "arn:aws:iam::111122223333:role/KarpenterController-20240611"
b["emulator"] = {"roles": [{"name": "KarpenterController-20240611", "trust": _js.loads(PI_TRUST)}],
                 "rolePolicies": [{"role": "KarpenterController-20240611", "name": "karpenter-controller", "reference": {"version": "1.8.1"}}]}
write("pod-identity-association-other-serviceaccount", b, ["KD1009", "KD2001"], skipped=GRANTS, roots=["KD2001"])


# ---- 0.37 webhook configurations left behind by an upgrade to 1.0 --------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/7134 (the same cure in
# https://github.com/aws/karpenter-provider-aws/issues/6879)
# ArgoCD upgrade from 0.37.4 to 1.0.4 with webhook.enabled=true: the four 0.3x configurations
# (validation.webhook.karpenter.sh, validation.webhook.config.karpenter.sh,
# defaulting.webhook.karpenter.k8s.aws, validation.webhook.karpenter.k8s.aws) stayed, still
# calling kube-system/karpenter:8443. The Service and port exist (1.0 serves its conversion
# webhook there), but 1.0 serves no validating or defaulting webhook any more: "failed
# calling webhook \"validation.webhook.karpenter.sh\": failed to call webhook: the server
# rejected our request for an unknown reason". Deleting the four configurations fixes it.
# (kubernetes-sigs/karpenter v1.0.4 pkg/webhooks/webhooks.go registers only the certificate
# controller and /conversion/karpenter.sh; the AWS provider's v1.0.4 only /conversion/karpenter.k8s.aws.)
V = "1.0.4"


def _wh(name, kind, group, resources):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "labels": {"app.kubernetes.io/instance": "karpenter", "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "karpenter", "app.kubernetes.io/version": "0.37.4", "argocd.argoproj.io/instance": "karpenter", "helm.sh/chart": "karpenter-0.37.4"}},
            "webhooks": [{"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                          "clientConfig": {"service": {"namespace": ks, "name": "karpenter", "port": 8443}},
                          "rules": [{"apiGroups": [group], "apiVersions": ["v1beta1"], "operations": ["CREATE", "UPDATE"], "resources": resources, "scope": "*"}]}]}


WEBHOOKS = [_wh("validation.webhook.karpenter.sh", "ValidatingWebhookConfiguration", "karpenter.sh", ["nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"]),
            _wh("validation.webhook.config.karpenter.sh", "ValidatingWebhookConfiguration", "", ["configmaps"]),
            _wh("validation.webhook.karpenter.k8s.aws", "ValidatingWebhookConfiguration", "karpenter.k8s.aws", ["ec2nodeclasses", "ec2nodeclasses/status"]),
            _wh("defaulting.webhook.karpenter.k8s.aws", "MutatingWebhookConfiguration", "karpenter.k8s.aws", ["ec2nodeclasses", "ec2nodeclasses/status"])]
SVC_10 = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "karpenter", "namespace": ks, "labels": SEL},
          "spec": {"type": "ClusterIP", "selector": SEL, "ports": [{"name": "http-metrics", "port": 8080, "protocol": "TCP", "targetPort": "http-metrics"},
                                                                   {"name": "https-webhook", "port": 8443, "protocol": "TCP", "targetPort": "https-webhook"}]}}
REJECTED = logline("ERROR", "Reconciler error", controller="nodeclaim.lifecycle",
    error="Internal error occurred: failed calling webhook \"validation.webhook.karpenter.sh\": failed to call webhook: the server rejected our request for an unknown reason")
REJECTED2 = logline("ERROR", "Reconciler error", controller="nodeclass.status",
    error="Internal error occurred: failed calling webhook \"defaulting.webhook.karpenter.k8s.aws\": failed to call webhook: the server rejected our request for an unknown reason")
b = bundle("After an ArgoCD upgrade from 0.37.4 to 1.0.4 (webhook.enabled=true) the four 0.3x webhook configurations were never deleted; they call kube-system/karpenter:8443, which exists for 1.0's conversion webhook, but 1.0 serves no validation or defaulting webhook: every NodeClaim and EC2NodeClass write fails with \"failed calling webhook ... the server rejected our request for an unknown reason\" (as in aws/karpenter-provider-aws#7134).",
    ns=ks, dep=[_dep(V, ns=ks)], pods=_pods_at([pod(POD_A, ns=ks), pod(POD_B, ns=ks, node="ip-192-168-77-10.us-west-2.compute.internal")], V),
    logs={n: HEALTHY_LOG + "\n".join([REJECTED, REJECTED2] * 3) + "\n" for n in (POD_A, POD_B)},
    overrides=[fact("webhookConfigurations", WEBHOOKS), fact({"service": {"namespace": ks, "name": "karpenter"}}, SVC_10)])
_at_k8s(b, "30", "v1.30.4-eks-a737599")
b["target"]["karpenterVersion"] = V
write("webhooks-0-37-left-with-1-0-controller", b, ["KD1007", "KD1009"], roots=["KD1007"])


# ---- 1.0.x before the v1 migration finished: storedVersions [v1beta1, v1] -----------------------
# The v1 migration guide (https://karpenter.sh/v1.0/upgrading/v1-migration/): 1.0.x CRDs serve
# v1beta1 and v1 (v1 stored), converting through the controller's webhook at
# kube-system/karpenter:8443, and from 1.0.6 a migration controller rewrites every object and
# trims storedVersions to [v1]. On 1.0.5 the list still reads [v1beta1, v1]: nothing is broken,
# but the 1.1 CRDs (v1 only) cannot be applied until it is trimmed ("status.storedVersions[0]:
# Invalid value", aws/karpenter-provider-aws#7992). KD1003 warns and names the step.
V = "1.0.5"
_CONV = lambda g: {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1beta1", "v1"],
    "clientConfig": {"service": {"namespace": ks, "name": "karpenter", "port": 8443, "path": "/conversion/" + g}}}}
CRDS_10 = {n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1beta1", "v1"), conversion=_CONV(g)) for n, g, k, p in CRDS}
b = bundle("Karpenter 1.0.5 in kube-system, upgraded from 0.37 by the v1 migration guide: the CRDs serve v1beta1 and v1 through the controller's conversion webhook (its Service exists) and status.storedVersions is still [v1beta1, v1], as it stays until 1.0.6's migration controller trims it. Nothing is broken now; the upgrade to 1.1 fails until the migration is finished, so KD1003 warns.",
    ns=ks, dep=[_dep(V, ns=ks)], pods=_pods_at([pod(POD_A, ns=ks), pod(POD_B, ns=ks, node="ip-192-168-77-10.us-west-2.compute.internal")], V),
    logs={n: HEALTHY_LOG for n in (POD_A, POD_B)}, crds=CRDS_10,
    overrides=[fact({"service": {"namespace": ks, "name": "karpenter"}}, SVC_10)])
_at_k8s(b, "30", "v1.30.4-eks-a737599")
b["target"]["karpenterVersion"] = V
write("crds-stored-v1beta1-before-1-1", b, ["KD1003"], exit_code=0, roots=[])


# ---- CLUSTER_ENDPOINT of the cluster's previous incarnation --------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/2423 (comment by triceras)
# The cluster was re-created under the same name; the Helm values still pass the old API
# server endpoint (with a trailing slash) as CLUSTER_ENDPOINT. Instances launch, bootstrap
# against the old endpoint and never register; NodeClaims stay Registered=Unknown
# (NodeNotFound) until Karpenter replaces them. Fixed by correcting CLUSTER_ENDPOINT.
STALE = [claim("default-%s" % n, registered=("Unknown", "NodeNotFound", "Node not registered with cluster"),
               initialized=("Unknown", "NodeNotFound", "Node not registered with cluster"), since="2026-11-23T09:44:00Z") for n in ("k2m8x", "p7w4d")]
b = bundle("The cluster was re-created under the same name and the Helm values still set CLUSTER_ENDPOINT to the previous cluster's API server (https://0F1E2D3C4B5A69788A9B0C1D2E3F4051.gr7.us-west-2.eks.amazonaws.com/): new instances bootstrap against it and never register, so their NodeClaims stay Registered=Unknown (NodeNotFound) (as in aws/karpenter-provider-aws#2423).",
    overrides=[fact("nodeClaims", STALE)])
set_env(b, "CLUSTER_ENDPOINT", "https://0F1E2D3C4B5A69788A9B0C1D2E3F4051.gr7.us-west-2.eks.amazonaws.com/")
write("cluster-recreated-stale-endpoint", b, ["KD1004", "KD6002"], roots=["KD1004"])


# ---- An organization SCP that denies launches without a CostCentre tag ----------------------------
# https://github.com/aws/karpenter-provider-aws/issues/5185
# "We have an organizational SCP which will block instances being launched if they do not
# have the tag CostCentre defined": ec2:CreateFleet is refused "with an explicit deny in a
# service control policy". The EC2NodeClass sets no spec.tags, so nothing Karpenter launches
# carries the tag. The thread ran 0.29 (Machines); here the same SCP meets a 1.8.1 controller,
# whose launch validation fails the EC2NodeClass (CreateFleetAuthCheckFailed).
COST_SCP = {"Version": "2012-10-17", "Statement": [{"Sid": "DenyLaunchWithoutCostCentre", "Effect": "Deny",
    "Action": ["ec2:RunInstances", "ec2:CreateFleet"], "Resource": "*",
    "Condition": {"Null": {"aws:RequestTag/CostCentre": "true"}}}]}
b = bundle("The organization's SCP denies ec2:RunInstances and ec2:CreateFleet for any request without a CostCentre tag, and the EC2NodeClass sets no spec.tags: Karpenter's launch validation is denied \"with an explicit deny in a service control policy\" and the EC2NodeClass is not Ready (CreateFleetAuthCheckFailed) (as in aws/karpenter-provider-aws#5185).",
    ncs=[custom_nc(failing=("ValidationSucceeded", "CreateFleetAuthCheckFailed", "Controller isn't authorized to call ec2:CreateFleet"))])
b["emulator"] = {**default_emulator(b), "scps": [{"name": "require-costcentre", "document": COST_SCP}]}
write("scp-costcentre-tag-required", b, ["KD2101", "KD3008"], roots=["KD2101"])


# ---- Interruption queue encrypted with the AWS managed key alias/aws/sqs ---------------------------
# https://github.com/aws/karpenter-provider-aws/issues/7209
# "Spot interruption events are not delivered to the SQS queue": the queue uses SSE-KMS with
# the AWS managed key, whose key policy EventBridge cannot use (EventBridge troubleshooting,
# "My events are not delivered to the target Amazon SQS queue"). The controller polls without
# an error and receives nothing.
mixed_1 = nodepool()
mixed_1["spec"]["template"]["spec"]["requirements"][1]["values"] = ["spot", "on-demand"]
b = bundle("The interruption queue is encrypted with SSE-KMS using the AWS managed key alias/aws/sqs, whose key policy only allows use through SQS by the account: EventBridge cannot encrypt the spot interruption, rebalance, health and state-change events, so none reaches the queue and the controller never sees one (as in aws/karpenter-provider-aws#7209).",
    nps=[mixed_1], overrides=[fact({"sqsQueue": {"name": "demo"}}, queue(kms="alias/aws/sqs")),
                              fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, SPOT_SLR)])
b["emulator"] = {**default_emulator(b), "serviceLinkedRoles": ["spot.amazonaws.com"]}
b["emulator"]["rolePolicies"] = [p for p in b["emulator"]["rolePolicies"] if p["role"] != "AWSServiceRoleForEC2Spot"]
write("interruption-queue-aws-managed-kms", b, ["KD7002"], roots=["KD7002"])


# ---- settings.interruptionQueue given the queue's ARN ---------------------------------------------
# https://github.com/aws-ia/terraform-aws-eks-blueprints/issues/1246
# The blueprints' Karpenter add-on passed karpenter_sqs_queue_arn as interruptionQueueName:
# "controller.interruption getting messages from queue, discovering queue url, fetching queue
# url, AWS.SimpleQueueService.NonExistentQueue". Karpenter resolves the setting as a queue
# name; the queue itself (demo) exists. Log wording is 1.8.1's for the same failure.
QARN_LINE = logline("ERROR", "failed to create valid sqs provider", controller="interruption",
    error="creating sqs provider, operation error SQS: GetQueueUrl, https response error StatusCode: 400, RequestID: 2c7d1e0f-0000-4b8a-9c6d-1e2f3a4b5c6d, AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.")
b = bundle("settings.interruptionQueue holds the queue's ARN (arn:aws:sqs:us-west-2:111122223333:demo) instead of its name: Karpenter looks it up as a name, GetQueueUrl fails with NonExistentQueue, and interruption handling is off although the queue and its rules exist (as in aws-ia/terraform-aws-eks-blueprints#1246).",
    logs={n: HEALTHY_LOG + QARN_LINE + "\n" for n in (POD_A, POD_B)},
    overrides=[fact({"sqsQueue": {"name": QUEUE_ARN}}, None)])
set_env(b, "INTERRUPTION_QUEUE", QUEUE_ARN)
write("interruption-queue-arn-in-settings", b, ["KD1009", "KD7001"], skipped=["KD7002"], roots=["KD7001"])


# ---- Interruption queue created under a prefixed name ------------------------------------------------
# https://github.com/kubernetes-sigs/karpenter/issues/2490
# The queue was created as karpenter-events-<cluster> while the controller asks for the
# cluster name (the getting-started default): "creating sqs provider, operation error SQS:
# GetQueueUrl, ... AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist."
QNAME = "karpenter-events-demo"
PREFIX_LINE = logline("ERROR", "Reconciler error", controller="interruption",
    error="creating sqs provider, operation error SQS: GetQueueUrl, https response error StatusCode: 400, RequestID: 3514901e-3130-5978-a080-f12686feab15, AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist.")
b = bundle("The interruption queue was created as karpenter-events-demo but settings.interruptionQueue is demo (the getting-started default): GetQueueUrl fails with NonExistentQueue on every reconcile and interruption handling is off (as in kubernetes-sigs/karpenter#2490).",
    logs={n: HEALTHY_LOG + "\n".join([PREFIX_LINE] * 3) + "\n" for n in (POD_A, POD_B)},
    overrides=[fact({"sqsQueue": {"name": "demo"}}, None), fact("sqsQueues", [QNAME])])
_drop(b, lambda k: isinstance(k, dict) and "eventRules" in k)
write("interruption-queue-name-differs-from-created", b, ["KD1009", "KD7001"], skipped=["KD7002"], roots=["KD7001"])


# ---- IRSA role made for another ServiceAccount name ------------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/1421
# The role was made with `eksctl create iamserviceaccount --name "${CLUSTER_NAME}-karpenter"
# --namespace karpenter --role-only`, so its trust names system:serviceaccount:karpenter:
# demo-karpenter, while the chart runs as karpenter/karpenter: every token exchange is
# refused and the install times out. The thread ran 0.6.3; the controller here is 1.8.1 and
# its start-up error is 1.x's wording for the same AccessDenied.
ROLE_1421 = "arn:aws:iam::111122223333:role/demo-karpenter"
STS_DENIED = "\n".join([
    logline("INFO", "discovered karpenter version", t="2026-11-23T09:58:01.210Z"),
    logline("ERROR", "ec2 api connectivity check failed", t="2026-11-23T09:58:03.870Z",
            error="operation error EC2: DescribeInstanceTypes, get identity: get credentials: failed to refresh cached credentials, failed to retrieve credentials, operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 403, RequestID: 97ec51e8-f5f8-4aee-bb04-e08f323ebc8a, api error AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity")]) + "\n"
crash1 = {"restarts": 12, "exit": 1, "reason": "Error"}
b = bundle("The IRSA role was created with eksctl create iamserviceaccount --name demo-karpenter, so its trust policy allows system:serviceaccount:karpenter:demo-karpenter while the chart's ServiceAccount is karpenter/karpenter: AssumeRoleWithWebIdentity is refused and both controller pods crash-loop (as in aws/karpenter-provider-aws#1421).",
    dep=[deployment(ready=0)], annotation=ROLE_1421, trust=irsa_trust(sa="demo-karpenter"),
    pods=[pod(POD_A, crash=crash1, env=_irsa_env(ROLE_1421)), pod(POD_B, crash=dict(crash1, restarts=11), env=_irsa_env(ROLE_1421), node="ip-192-168-77-10.us-west-2.compute.internal")],
    logs={POD_A: STS_DENIED, POD_B: STS_DENIED}, previous_logs={POD_A: STS_DENIED, POD_B: STS_DENIED})
write("irsa-trust-other-serviceaccount-name", b, ["KD1001", "KD1009", "KD2003"], roots=["KD2003"])


# ---- A hand-written controller policy without ec2:DescribeSpotPriceHistory --------------------------
# https://github.com/aws-samples/cdk-eks-karpenter/pull/90 (and aws-samples/aws-analytics-reference-architecture#713)
# A policy written for an add-on lists the regional read actions but not
# ec2:DescribeSpotPriceHistory: on-demand prices refresh, spot prices do not ("updating spot
# pricing, UnauthorizedOperation"), so Karpenter ranks spot offerings by stale prices. Unlike
# a denied pricing:GetProducts this is a real gap in the policy. Log wording is 1.8.1's.
_REGIONAL = ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceTypeOfferings",
             "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets"]
SPOT_PRICE = logline("ERROR", "Reconciler error", controller="providers.pricing",
    error="updating pricing, retrieving spot pricing data, operation error EC2: DescribeSpotPriceHistory, https response error StatusCode: 403, RequestID: 80a69095-f28c-4a1c-baea-cdbe5ecb13aa, api error UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:sts::111122223333:assumed-role/KarpenterController-demo/1700000000000000000 is not authorized to perform: ec2:DescribeSpotPriceHistory because no identity-based policy allows the ec2:DescribeSpotPriceHistory action")
spot_pool_13 = nodepool()
spot_pool_13["spec"]["template"]["spec"]["requirements"][1]["values"] = ["spot", "on-demand"]
b = bundle("The controller role's hand-written policy lists Karpenter's regional read actions except ec2:DescribeSpotPriceHistory: the pricing controller logs \"retrieving spot pricing data ... UnauthorizedOperation\" every cycle and spot offerings are ranked with stale prices (as in aws-samples/cdk-eks-karpenter#90).",
    nps=[spot_pool_13], overrides=[fact({"iamRole": {"name": "AWSServiceRoleForEC2Spot"}}, SPOT_SLR)],
    logs={n: HEALTHY_LOG + "\n".join([SPOT_PRICE] * 4) + "\n" for n in (POD_A, POD_B)})
b["emulator"] = {"serviceLinkedRoles": ["spot.amazonaws.com"], "rolePolicies": [
    {"role": "KarpenterController-demo", "name": "karpenter-controller", "reference": {"version": "1.8.1", "omit": ["AllowRegionalReadActions"]}},
    {"role": "KarpenterController-demo", "name": "karpenter-regional-reads", "document": {"Version": "2012-10-17", "Statement": [
        {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Action": _REGIONAL, "Resource": "*", "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}}]}}]}
# KD1009 keeps a denied DescribeSpotPriceHistory ("not benign and stays here", its doc); KD9001's
# doc says the opposite (it would take the line as informational). Not benign: KD1009 it is.
write("spot-price-history-not-granted", b, ["KD1009", "KD2102"], roots=["KD2102"])


# ---- 0.37 on Fargate with Pod Identity and no AWS_REGION: the region panic ----------------------------
# https://github.com/aws/karpenter-provider-aws/issues/5677 (and #6295)
# The getting-started Helm command of the time, run with the controller on Fargate: no
# AWS_REGION in controller.env and no instance metadata on Fargate, so the controller panics
# "failed to get region from metadata server" (the fix, PR #5679: set AWS_REGION and annotate
# the ServiceAccount for IRSA, Pod Identity being unsupported on Fargate). The thread ran the
# 0.34-0.37 charts; 0.37.7 is the oldest release karpdoctor has policy data for. A 0.37
# controller stores v1beta1: nothing about its CRDs is stale.
V = "0.37.7"
PANIC_REGION = "\n".join([
    "panic: failed to get region from metadata server: EC2MetadataRequestError: failed to get EC2 instance identity document",
    "caused by: RequestError: send request failed",
    "caused by: Get \"http://169.254.169.254/latest/dynamic/instance-identity/document\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
    "",
    "goroutine 1 [running]:",
    "github.com/samber/lo.must({0x27c69c0, 0xc000615680}, {0xc00099fc48, 0x1, 0x1})",
    "\tgithub.com/samber/lo@v1.39.0/errors.go:51 +0x1c5",
    "github.com/samber/lo.Must[...](...)",
    "\tgithub.com/samber/lo@v1.39.0/errors.go:65",
    "github.com/aws/karpenter-provider-aws/pkg/operator.NewOperator({0x3156b18, 0xc000494780}, 0xc00079e840)",
    "\tgithub.com/aws/karpenter-provider-aws/pkg/operator/operator.go:111 +0x314",
    "main.main()",
    "\tgithub.com/aws/karpenter-provider-aws/cmd/controller/main.go:33 +0x2a"]) + "\n"
FA, FB = "fargate-ip-192-168-101-5.us-west-2.compute.internal", "fargate-ip-192-168-101-9.us-west-2.compute.internal"
# 0.37.7's CRDs: v1beta1 stored, v1 served for the upgrade path, converted by the controller's
# webhook at kube-system/karpenter:8443; the chart's 0.3x admission webhooks (webhook.enabled
# defaults to true in 0.37) call the same Service.
CONV = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1beta1", "v1"],
        "clientConfig": {"service": {"namespace": ks, "name": "karpenter", "port": 8443, "path": "/conversion/karpenter.sh"}}}}
CRDS_037 = {n: crd(n, g, k, p, versions=("v1", "v1beta1"), stored=("v1beta1",), fields=[], conversion=dict(CONV, webhook=dict(CONV["webhook"], clientConfig={"service": dict(CONV["webhook"]["clientConfig"]["service"], path="/conversion/" + g)})))
            for n, g, k, p in CRDS}
CRDS_037["nodeoverlays.karpenter.sh"] = None
SVC_037 = _cp.deepcopy(SVC_10)
# Read at v1 (served), the API server returns the stored v1beta1 objects converted by the
# webhook: a NodePool without status conditions (0.37 writes none) and the v1 EC2NodeClass.
NP_037 = nodepool()
NP_037["status"] = {"resources": NP_037["status"]["resources"]}
PI_ROLE_037 = "arn:aws:iam::111122223333:role/KarpenterPodIdentity-demo"
b = bundle("Karpenter 0.37.7 runs on Fargate (a kube-system profile) with an EKS Pod Identity association and no AWS_REGION in its environment, as the getting-started Helm command of the time installed it: Fargate has neither instance metadata nor the Pod Identity agent, so both pods crash-loop on \"panic: failed to get region from metadata server\" (as in aws/karpenter-provider-aws#5677).",
    ns=ks, dep=[_dep(V, ns=ks, ready=0)], annotation=None, crds=CRDS_037,
    nps=[NP_037], ncs=[nodeclass()],
    assocs=[{"associationId": "a-0123456789abcdef0", "namespace": ks, "serviceAccount": "karpenter", "roleArn": PI_ROLE_037}],
    pods=_pods_at([pod(POD_A, ns=ks, env=PI_ENV, node=FA, crash=crash2), pod(POD_B, ns=ks, env=PI_ENV, node=FB, crash=dict(crash2, restarts=13))], V),
    logs={POD_A: PANIC_REGION, POD_B: PANIC_REGION}, previous_logs={POD_A: PANIC_REGION, POD_B: PANIC_REGION},
    overrides=[fact({"iamRole": {"name": "KarpenterPodIdentity-demo"}}, {"name": "KarpenterPodIdentity-demo", "arn": PI_ROLE_037, "path": "/", "trustPolicy": PI_TRUST, "permissionsBoundaryArn": None}),
               fact("webhookConfigurations", WEBHOOKS), fact({"service": {"namespace": ks, "name": "karpenter"}}, SVC_037)])
set_env(b, "AWS_REGION", None)
set_env(b, "CLUSTER_ENDPOINT", None)
_at_k8s(b, "30", "v1.30.4-eks-a737599")
b["target"]["karpenterVersion"] = V
write("fargate-0-37-no-region-pod-identity", b, ["KD1001", "KD1009", "KD2005"], roots=["KD2005"])


# ---- Pod Identity association created after the controller pods ------------------------------------
# https://github.com/terraform-aws-modules/terraform-aws-eks/issues/3029 (the sub-module made the
# role but not the association before v20.10), with the webhook's behaviour from
# https://github.com/aws/amazon-eks-pod-identity-webhook/issues/210
# The association was added by hand after Karpenter was installed. The Pod Identity webhook
# injects AWS_CONTAINER_CREDENTIALS_FULL_URI only when a pod is created, and a crash-looping
# container restarts inside the same pod, so the controller keeps failing with no credentials
# until the pods are recreated.
b = pi_bundle("The Pod Identity association for karpenter/karpenter was created by hand after the controller pods (terraform-aws-eks's sub-module made only the role before v20.10): the pods were admitted without AWS_CONTAINER_CREDENTIALS_FULL_URI, and their containers crash-loop on \"ec2 api connectivity check failed ... no EC2 IMDS role found\" until the pods are recreated (as in terraform-aws-modules/terraform-aws-eks#3029).")
for e in b["facts"]:
    if e["fact"] == {"controllerDeployments": {"namespace": None}}:
        e["value"] = [deployment(ready=0)]
    if e["fact"] == {"pods": {"namespace": NS, "labelSelector": SELSTR}}:
        e["value"] = [pod(POD_A, env=[], node=NODE_A, crash=crash1), pod(POD_B, env=[], node=NODE_B, crash=dict(crash1, restarts=10))]
    if isinstance(e["fact"], dict) and "podLogs" in e["fact"]:
        e["value"] = CRASH_LOGS[e["fact"]["podLogs"]["pod"]]
b["facts"] += [{"fact": {"podLogs": {"namespace": NS, "pod": n, "container": "controller", "previous": True}}, "value": CRASH_LOGS[n]} for n in (POD_A, POD_B)]
write("pods-predate-pod-identity-association", b, ["KD1001", "KD1009", "KD2006"], roots=["KD2006"])


# ---- Controller preempted off the only non-Karpenter nodes ------------------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/6160
# The chart's node affinity keeps the controller off Karpenter nodes and its anti-affinity
# wants one node per replica. Workloads with a higher (misconfigured) priority drifted onto
# the two managed-group nodes as Karpenter nodes expired, and preempted the controller: both
# replicas are Pending with nowhere to go, and nothing launches nodes any more.
MSG_6160 = "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling."
b = bundle("Higher-priority workloads moved onto the two managed node group nodes and preempted the controller; the other three nodes are Karpenter's, which the chart's affinity excludes: both controller pods are Pending (\"0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector\") and nothing provisions nodes (as in aws/karpenter-provider-aws#6160).",
    ns=ks, dep=[deployment(ready=0, ns=ks)],
    pods=[pending_pod(POD_A, ks, MSG_6160), pending_pod(POD_B, ks, MSG_6160)],
    overrides=[fact({"eksFargateProfiles": {"cluster": "demo"}}, [])])
write("controller-preempted-only-karpenter-nodes-left", b, ["KD1001", "KD1005"], skipped=["KD1009", "KD9001"], roots=["KD1005"])


# ---- IRSA trust policy whose condition keys carry the provider ARN --------------------------------
# https://github.com/aws/karpenter-provider-aws/issues/1666
# "Apparently the StringLike should not contain the arn part": the trust policy's condition
# key was written "arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<ID>:sub"
# instead of "oidc.eks.<region>.amazonaws.com/id/<ID>:sub", so no token ever matches and STS
# answers "Not authorized to perform sts:AssumeRoleWithWebIdentity". Start-up error wording is
# 1.8.1's (the thread's controller logged the 0.x FATAL "Checking EC2 API connectivity, WebIdentityErr").
_host = ISSUER[len("https://"):]
_prov = "arn:aws:iam::111122223333:oidc-provider/" + _host
TRUST_1666 = _js.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Federated": _prov},
    "Action": "sts:AssumeRoleWithWebIdentity", "Condition": {"StringLike": {_prov + ":sub": "system:serviceaccount:karpenter:karpenter"}}}]})
b = bundle("The IRSA role's trust policy writes its condition key with the provider's ARN (\"arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/…:sub\") instead of the issuer host: the condition never matches, AssumeRoleWithWebIdentity is refused and both controller pods crash-loop (as in aws/karpenter-provider-aws#1666).",
    dep=[deployment(ready=0)], trust=TRUST_1666,
    pods=[pod(POD_A, crash=crash1), pod(POD_B, crash=dict(crash1, restarts=9), node="ip-192-168-77-10.us-west-2.compute.internal")],
    logs={POD_A: STS_DENIED, POD_B: STS_DENIED}, previous_logs={POD_A: STS_DENIED, POD_B: STS_DENIED})
write("irsa-trust-condition-key-with-provider-arn", b, ["KD1001", "KD1009", "KD2003"], roots=["KD2003"])
