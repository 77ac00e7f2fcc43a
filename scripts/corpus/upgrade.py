# `karpdoctor upgrade --to VERSION` / `--kubernetes 1.N` (issue 31; docs/upgrade.md): bundles
# recorded by the upgrade command, each with its targets in `hints`. Only KD1101-KD1104 run.

def _upgrade(b, to=None, kubernetes=None):
    """Marks a bundle as recorded by `karpdoctor upgrade` with these targets."""
    b["hints"].update({"upgrade": True})
    if to:
        b["hints"]["upgradeTo"] = to
    if kubernetes:
        b["hints"]["upgradeKubernetes"] = kubernetes
    # KD1101 reads the managed policies the controller role attaches (the 1.9 policy split);
    # the default role has only its inline policy.
    key = {"iamAttachedRolePolicies": {"role": "KarpenterController-demo"}}
    if not any(e["fact"] == key for e in b["facts"]):
        b["facts"].append({"fact": key, "value": []})
    return b


def _release(v):
    """The controller Deployment of release `v`, as the chart labels it."""
    d = deployment(image="public.ecr.aws/karpenter/controller:%s@sha256:%s" % (v, "4c" * 32))
    d["metadata"]["labels"].update({"app.kubernetes.io/version": v, "helm.sh/chart": "karpenter-%s" % v})
    return d


def _controller_policy(b, version):
    """Gives the controller role the reference policy of `version` instead of its release's."""
    b["emulator"] = {**default_emulator(b)}
    b["emulator"]["rolePolicies"] = [p for p in b["emulator"]["rolePolicies"] if p["role"] != "KarpenterController-demo"] + [
        {"role": "KarpenterController-demo", "name": "karpenter-controller", "reference": {"version": version}}]


def _minor(m, patch="5"):
    return fact("kubeVersion", {"major": "1", "minor": str(m), "gitVersion": "v1.%s.%s-eks-3025e55" % (m, patch)})


# kubernetes-sigs/karpenter#2157: an install on 1.0.8 whose NodePool and NodeClaim CRDs still
# list v1beta1 in status.storedVersions (the migration controllers never finished), asked about
# 1.1.0, which serves only v1: its CRDs would be refused.
_stale = {n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1beta1", "v1")) for n, g, k, p in CRDS}
_b = bundle(
    "Karpenter 1.0.8, whose CRDs still list v1beta1 in status.storedVersions (the migration to v1 never finished), asked about an upgrade to 1.1.0, which serves only v1: installing 1.1.0's CRDs is refused with \"status.storedVersions[0]: Invalid value: \\\"v1beta1\\\": must appear in spec.versions\" (kubernetes-sigs/karpenter#2157).",
    dep=[_release("1.0.8")], crds=_stale, overrides=[_minor(30, "14")])
write("upgrade-stored-v1beta1-to-1-1", _upgrade(_b, to="1.1.0"), ["KD1102"], roots=["KD1102"])

# The v1 migration guide's order: from 1.0.2 (no migration controllers yet), 1.2.0 cannot be
# reached directly; the install must run 1.0.6 or later until every CRD stores only v1.
_b = bundle(
    "Karpenter 1.0.2 asked about an upgrade to 1.2.0: releases before 1.0.6 lack the controllers that migrate stored objects to v1, and 1.1.0 onwards serves only v1, so the install must first run the latest 1.0.x until every CRD's storedVersions is [v1] (the v1 migration guide).",
    dep=[_release("1.0.2")], crds=_stale, overrides=[_minor(30, "14")])
write("upgrade-from-1-0-2-skips-migration", _upgrade(_b, to="1.2.0"), ["KD1102"], roots=["KD1102"])

# Karpenter 1.5.0 on Kubernetes 1.33 asked about --kubernetes 1.34: 1.5.0 accepts at most 1.33,
# and so do 1.6.0-1.6.5 although the compatibility matrix lists 1.34 for 1.6.
_b = bundle(
    "Karpenter 1.5.0 runs on Kubernetes 1.33 and the control plane is about to move to 1.34: 1.5.0's code accepts 1.26 to 1.33 and stops reconciling on 1.34; the first release that accepts 1.34 is 1.6.6 (1.6.0-1.6.5 stop at 1.33 though the compatibility matrix lists 1.34).",
    dep=[_release("1.5.0")])
write("upgrade-kubernetes-beyond-the-release", _upgrade(_b, kubernetes="1.34"), ["KD1103"], roots=["KD1103"])

# An EC2NodeClass still on al2@latest on Kubernetes 1.32, asked about 1.33: EKS publishes no AL2
# AMI after 1.32, so its nodes cannot launch on the new minor.
_al2 = nodeclass()
_al2["spec"]["amiFamily"] = "AL2"
_al2["spec"]["amiSelectorTerms"] = [{"alias": "al2@latest"}]
_b = bundle(
    "Karpenter 1.8.1 on Kubernetes 1.32, with the EC2NodeClass still on alias al2@latest, asked about --kubernetes 1.33: no EKS-optimized Amazon Linux 2 AMI is published after 1.32, so the class's nodes cannot launch once the cluster moves.",
    ncs=[_al2], overrides=[_minor(32, "9")])
write("upgrade-al2-to-kubernetes-1-33", _upgrade(_b, kubernetes="1.33"), ["KD1103"], roots=["KD1103"])

# Healthy: Karpenter 1.8.1 on 1.33 asked about 1.9.0 and 1.34 together; both accept each other,
# the CRDs store only v1 and the class is on AL2023.
_b = bundle("Healthy: Karpenter 1.8.1 on Kubernetes 1.33, asked about upgrading to Karpenter 1.9.0 and then Kubernetes 1.34: 1.9.0 accepts 1.26 to 1.35, the CRDs store only v1, and the EC2NodeClass uses AL2023.")
write("healthy-upgrade-1-9-and-kubernetes-1-34", _upgrade(_b, to="1.9.0", kubernetes="1.34"), [])

# The first live case: an install of 1.0 whose role carries the 1.0 reference policy,
# asked about 1.7.0. Releases since added ec2:DescribeCapacityReservations (1.3) and
# iam:ListInstanceProfiles (1.7; aws/karpenter-provider-aws#8501 is the 1.12 form of the same
# miss). No class uses capacity reservations, so both are warnings: what they serve degrades.
_b = bundle(
    "Karpenter 1.0.8 whose controller role carries the 1.0 reference policy, asked about an upgrade to 1.7.0: the 1.3 policy adds ec2:DescribeCapacityReservations and the 1.7 policy iam:ListInstanceProfiles (for garbage-collecting instance profiles), neither of which the role grants; no EC2NodeClass uses capacity reservations, so both only degrade what they serve.",
    dep=[_release("1.0.8")], overrides=[_minor(30, "14")])
_controller_policy(_b, "1.0.7")
write("upgrade-1-0-policy-to-1-7", _upgrade(_b, to="1.7.0"), ["KD1101"], exit_code=0, roots=[])

# The same install asked about 1.3.0, the release that added
# ec2:DescribeCapacityReservations: the one missing action, a warning without ODCR classes.
_b = bundle(
    "Karpenter 1.0.8 whose controller role carries the 1.0 reference policy, asked about an upgrade to 1.3.0: the 1.3 policy adds ec2:DescribeCapacityReservations, which the role does not grant; no EC2NodeClass selects capacity reservations, so only that feature's discovery fails.",
    dep=[_release("1.0.8")], overrides=[_minor(30, "14")])
_controller_policy(_b, "1.0.7")
write("upgrade-1-0-policy-to-1-3", _upgrade(_b, to="1.3.0"), ["KD1101"], exit_code=0, roots=[])

# terraform-aws-modules/terraform-aws-eks#3134, before the upgrade: a 0.37 install whose role
# keeps the 0.37 policy, asked about 1.0.8. From 1.0 Karpenter tags what it creates with
# eks:eks-cluster-name, which the 0.37 statements' aws:TagKeys conditions do not allow.
_b = bundle(
    "Karpenter 0.37.7 whose controller role keeps the 0.37 reference policy (terraform-aws-eks v20 without enable_v1_permissions), asked about an upgrade to 1.0.8: 1.0 tags instances, launch templates and instance profiles with eks:eks-cluster-name, which the 0.37 statements' conditions do not allow, so tagging and instance-profile calls fail after the upgrade (terraform-aws-modules/terraform-aws-eks#3134).",
    dep=[_release("0.37.7")], crds={n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1beta1",)) for n, g, k, p in CRDS},
    overrides=[_minor(30, "14")])
_controller_policy(_b, "0.37.7")
write("upgrade-0-37-policy-to-1-0", _upgrade(_b, to="1.0.8"), ["KD1101"], roots=["KD1101"])

# Healthy: an install under aws-samples/eks-workshop-v2#1859's instance-type allow-list SCP, its
# NodePool kept to the approved families, and its EC2NodeClass on a pre-made instance profile,
# asked about 1.9.0: the target's launch is asked again with the types the pool allows (all
# approved), and passing the profile's role is judged as for any node role.
_b = bundle(
    "Healthy: Karpenter 1.8.1 under an SCP that allows only m5, m6i and t3 instances, with the NodePool kept to m5 and m6i and the EC2NodeClass on a pre-made instance profile, asked about an upgrade to 1.9.0: the 1.9.0 policy needs nothing the role lacks, and the launches it would make pass the guardrail.",
    nps=[kept], ncs=[custom_nc({"instanceProfile": PROFILE}, drop=("role",))], overrides=[profile_fact()])
_b["emulator"] = {**default_emulator(_b), "scps": [{"name": "approved-instance-types", "document": TYPES_SCP}]}
write("healthy-upgrade-under-instance-type-scp", _upgrade(_b, to="1.9.0"), [])

# The v1 migration guide's "Environment Variable Changes" and removed gates, on a 0.37.7 install
# about to move to 1.0.8: it sets ASSUME_ROLE_ARN (a cross-account role the 1.0 controller no
# longer assumes: aws/karpenter-provider-aws#6960) and turns drift off (Drift=false, as in
# kubernetes-sigs/karpenter#718), which 1.0 ignores. Warnings: the install keeps working,
# differently.
_b = bundle(
    "Karpenter 0.37.7, its role already carrying the 1.0 policy, sets ASSUME_ROLE_ARN (the controller assumes a role in another account) and FEATURE_GATES=Drift=false, asked about an upgrade to 1.0.8: 1.0 neither sets nor reads ASSUME_ROLE_ARN, so the controller runs as its own IRSA role (aws/karpenter-provider-aws#6960), and it no longer has the Drift gate, so drift is always on (kubernetes-sigs/karpenter#718).",
    dep=[_release("0.37.7")], crds={n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1beta1",)) for n, g, k, p in CRDS},
    overrides=[_minor(30, "14")])
set_env(_b, "ASSUME_ROLE_ARN", "arn:aws:iam::444455556666:role/KarpenterCrossAccount")
set_env(_b, "FEATURE_GATES", "Drift=false,SpotToSpotConsolidation=false")
# The role already carries the 1.0 policy (the migration guide's step 8): only the settings differ.
_controller_policy(_b, "1.0.7")
write("upgrade-0-37-settings-dropped-at-1-0", _upgrade(_b, to="1.0.8"), ["KD1104"], exit_code=0, roots=[])

# The 1.6 upgrade note: ReservedCapacity defaults to true from 1.6, and open ODCRs no
# EC2NodeClass selects stop being used. A 1.5.2 install leaving the gate unset, asked about 1.6.6.
_b = bundle(
    "Karpenter 1.5.2 leaves the ReservedCapacity feature gate to its default, asked about an upgrade to 1.6.6: the default turns from false to true at 1.6.0, and the upgrade guide warns that open On-Demand Capacity Reservations no EC2NodeClass selects stop being used.",
    dep=[_release("1.5.2")], overrides=[_minor(33, "5")])
write("upgrade-reserved-capacity-default-flips", _upgrade(_b, to="1.6.6"), ["KD1104"], exit_code=0, roots=[])

# The upgrade guide's 1.8 section: do not upgrade to 1.8.4 (kubernetes-sigs/karpenter#2785, a
# scheduling regression with some topologySpreadConstraints).
_b = bundle(
    "Karpenter 1.8.1 asked about an upgrade to 1.8.4, which the upgrade guide says not to upgrade to: a regression may keep pods with some topologySpreadConstraints from being scheduled (kubernetes-sigs/karpenter#2785).",
    dep=[_release("1.8.1")])
write("upgrade-to-a-release-to-skip", _upgrade(_b, to="1.8.4"), ["KD1104"], exit_code=0, roots=[])

# Objects the target refuses or runs differently (docs/upgrade.md §3.2 rules e, f, g, l). Each
# install below has finished the v1 migration (CRDs store only v1), so only the objects stand
# in the way.
_migrated = {n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1",)) for n, g, k, p in CRDS}
_KUBELET = "compatibility.karpenter.sh/v1beta1-kubelet-conversion"

# The 1.1 upgrade notes: nodeClassRef.group and kind are strictly required, and from 1.1 the
# controller manages only pools whose group and kind name its EC2NodeClass. A pool rendered by a
# chart template whose group value was left unset keeps `group: ""`, which 1.0 accepts.
_pool = nodepool("batch", ref={"group": "", "kind": "EC2NodeClass", "name": "default"})
_b = bundle(
    "Karpenter 1.0.14, migrated to v1, with a NodePool whose nodeClassRef.group is empty (rendered by a chart template whose group value was unset; 1.0 accepts it), asked about an upgrade to 1.2.0: the 1.1 upgrade notes make group and kind strictly required, and 1.1 and later manage only pools whose group and kind name their EC2NodeClass, so the pool would be ignored.",
    dep=[_release("1.0.14")], crds=_migrated, nps=[_pool, nodepool()], overrides=[_minor(31, "7")])
write("upgrade-nodeclassref-group-empty-to-1-2", _upgrade(_b, to="1.2.0"), ["KD1102"], roots=["KD1102"])

# kubernetes-sigs/karpenter#1995 and aws/karpenter-provider-aws#6987: the NodePool still carries
# the kubelet compatibility annotation 1.0's conversion wrote (its v1beta1 kubelet settings),
# and the EC2NodeClass has no spec.kubelet. 1.1.0 to 1.5.x exit at start while any NodePool has
# the annotation.
_annotated = nodepool()
_annotated["metadata"]["annotations"] = {_KUBELET: '{"maxPods":110}'}
_b = bundle(
    "Karpenter 1.0.14, migrated to v1, whose NodePool still carries compatibility.karpenter.sh/v1beta1-kubelet-conversion ({\"maxPods\":110}, written by 1.0's conversion) while the EC2NodeClass has no spec.kubelet, asked about an upgrade to 1.1.0: 1.1.0 to 1.5.x exit at start while any NodePool has the annotation (kubernetes-sigs/karpenter#1995, aws/karpenter-provider-aws#6987).",
    dep=[_release("1.0.14")], crds=_migrated, nps=[_annotated], overrides=[_minor(31, "7")])
write("upgrade-kubelet-annotation-to-1-1", _upgrade(_b, to="1.1.0"), ["KD1102"], roots=["KD1102"])

# The same install asked about 1.6.6: from 1.6.0 nothing reads the annotation, so the controller
# starts, and the pool's nodes lose maxPods 110 (a warning: it works, differently).
_b = bundle(
    "Karpenter 1.0.14, migrated to v1, whose NodePool still carries the kubelet compatibility annotation ({\"maxPods\":110}) while the EC2NodeClass has no spec.kubelet, asked about an upgrade to 1.6.6: 1.6.0 and later read nothing from the annotation, so nodes launched after the upgrade lose maxPods 110.",
    dep=[_release("1.0.14")], crds=_migrated, nps=[_annotated], overrides=[_minor(31, "7")])
_controller_policy(_b, "1.6.6")
write("upgrade-kubelet-annotation-ignored-at-1-6", _upgrade(_b, to="1.6.6"), ["KD1102"], exit_code=0, roots=[])

# Healthy: the migration done as the guide says. Group and kind set on the pool and its claim,
# and the kubelet settings copied to the EC2NodeClass (the annotation left behind holds the
# same values), asked about 1.6.6.
_class = nodeclass()
_class["spec"]["kubelet"] = {"maxPods": 110}
_b = bundle(
    "Healthy: Karpenter 1.0.14, migrated to v1, its NodePool and NodeClaim naming group and kind, and the kubelet settings copied to the EC2NodeClass's spec.kubelet (the compatibility annotation left behind holds the same values), asked about an upgrade to 1.6.6.",
    dep=[_release("1.0.14")], crds=_migrated, nps=[_annotated], ncs=[_class],
    overrides=[_minor(31, "7"), fact("nodeClaims", [claim("default-x7k2p")])])
_controller_policy(_b, "1.6.6")
write("healthy-upgrade-1-0-migrated-objects-to-1-6", _upgrade(_b, to="1.6.6"), [])

# The v1 migration guide's "Ubuntu AMIFamily Removed": 1.0 no longer selects Ubuntu AMIs itself.
# 0.37.7 serves the class at v1 through its conversion, which turns an Ubuntu class without
# amiSelectorTerms into AL2 with a placeholder AMI, Ubuntu's root volume, and the annotation
# marking it incompatible; 1.0 ignores it for launches.
_ubuntu = nodeclass()
_ubuntu["metadata"]["annotations"] = {"compatibility.karpenter.k8s.aws/v1beta1-ubuntu": "amiFamily,blockDeviceMappings,incompatible"}
_ubuntu["spec"].update({"amiFamily": "AL2", "amiSelectorTerms": [{"id": "ami-placeholder"}],
    "blockDeviceMappings": [{"deviceName": "/dev/sda1", "rootVolume": True, "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"}}]})
_b = bundle(
    "Karpenter 0.37.7, its role already carrying the 1.0 policy, with an EC2NodeClass on amiFamily: Ubuntu and no amiSelectorTerms, asked about an upgrade to 1.0.8: 1.0 dropped the automatic AMI selection for Ubuntu, so the class has no AMIs to launch (the v1 migration guide's Ubuntu step).",
    dep=[_release("0.37.7")], crds={n: crd(n, g, k, p, versions=("v1beta1", "v1"), stored=("v1beta1",)) for n, g, k, p in CRDS},
    ncs=[_ubuntu], overrides=[_minor(30, "14")])
_controller_policy(_b, "1.0.7")
write("upgrade-0-37-ubuntu-family-to-1-0", _upgrade(_b, to="1.0.8"), ["KD1102"], roots=["KD1102"])

# The upgrade guide's 1.9 notes (aws/karpenter-provider-aws#7874): the getting-started stack's
# controller policy is split into five. A role that attaches KarpenterControllerPolicy-demo by
# name, as the getting-started guide's eksctl config does, keeps its permissions until the stack
# is updated to 1.9.0's template, which replaces the policy. A warning: it breaks on that update.
_ATTACHED = {"iamAttachedRolePolicies": {"role": "KarpenterController-demo"}}
_b = bundle(
    "Karpenter 1.8.1 whose controller role attaches KarpenterControllerPolicy-demo, the getting-started CloudFormation stack's single controller policy (as the guide's eksctl config attaches it), asked about an upgrade to 1.9.0: the stack's 1.9.0 template replaces that policy with five (the upgrade guide's 1.9 notes, aws/karpenter-provider-aws#7874), which the role does not attach, so updating the stack leaves the controller without its permissions.",
    overrides=[fact(_ATTACHED, [{"policyName": "KarpenterControllerPolicy-demo", "policyArn": "arn:aws:iam::111122223333:policy/KarpenterControllerPolicy-demo"}])])
_b["emulator"] = {"rolePolicies": [p for p in default_emulator(_b)["rolePolicies"] if p["role"] != "KarpenterController-demo"],
    "managedPolicies": [{"name": "KarpenterControllerPolicy-demo", "reference": {"version": "1.8.1"}}]}
write("upgrade-1-9-splits-the-stack-policy", _upgrade(_b, to="1.9.0"), ["KD1101"], exit_code=0, roots=[])

# aws/karpenter-provider-aws#8564 before the control-plane upgrade: an EC2NodeClass pinned to
# al2023@v20261101, published for 1.33 only, asked about --kubernetes 1.34. Karpenter resolves a
# pinned alias through SSM parameters named for the minor, so on 1.34 the class resolves no AMI.
def _pinned_bundle(desc, version):
    nc = custom_nc({"amiSelectorTerms": [{"alias": "al2023@" + version}]})
    names = sorted(alias_paths("al2023@" + version, "1.34"))
    ssm = fact({"ssmParameters": {"names": names}}, {n: (ami_for(n) if published(n) else None) for n in names})
    return _upgrade(bundle(desc, ncs=[nc], overrides=[ssm]), kubernetes="1.34")
write("upgrade-pinned-alias-unpublished-for-1-34", _pinned_bundle(
    "Karpenter 1.8.1 on Kubernetes 1.33, its EC2NodeClass pinned to alias al2023@v20261101 (published for 1.33 only), asked about --kubernetes 1.34: a pinned alias resolves through SSM parameters named for the minor, and that release has none for 1.34, so after the control-plane upgrade the class resolves no AMI and launches nothing (aws/karpenter-provider-aws#8564).",
    "v20261101"), ["KD1103"], roots=["KD1103"])
write("healthy-upgrade-pinned-alias-published-for-1-34", _pinned_bundle(
    "Healthy: Karpenter 1.8.1 on Kubernetes 1.33, its EC2NodeClass pinned to alias al2023@v20261115, which is published for both 1.33 and 1.34, asked about --kubernetes 1.34.",
    "v20261115"), [])

# AMIs pinned by id keep the kubelet they were built with when the control plane moves, and
# Karpenter does not replace their nodes (the Karpenter FAQ on upgrading EKS; aws/karpenter-provider-aws#6050
# moves such pins by hand at each upgrade). One id built for 1.33, asked about 1.34: the nodes
# stay on 1.33 (a warning). One built for 1.30, asked about 1.34: four minors behind, beyond the
# version skew policy's three (an error).
def _pinned_id_bundle(desc, ami, built):
    nc = custom_nc({"amiSelectorTerms": [{"id": ami}], "amiFamily": "AL2023"})
    image = {"imageId": ami, "name": "amazon-eks-node-al2023-x86_64-standard-%s-v20260301" % built, "architecture": "x86_64",
             "state": "available", "ownerId": "602401143452", "creationDate": "2026-03-01T00:00:00.000Z", "deprecationTime": None, "tags": {}}
    images = fact({"ec2Images": {"filters": [{"name": "image-id", "values": [ami]}], "owners": []}}, [image])
    return _upgrade(bundle(desc, ncs=[nc], overrides=[images]), kubernetes="1.34")
write("upgrade-ami-id-stays-on-1-33", _pinned_id_bundle(
    "Karpenter 1.8.1 on Kubernetes 1.33, its EC2NodeClass pinned by id to an AL2023 AMI built for 1.33, asked about --kubernetes 1.34: the nodes keep kubelet 1.33 after the control-plane upgrade and Karpenter does not replace them, since the AMI does not change (the Karpenter FAQ; aws/karpenter-provider-aws#6050 moves such pins by hand).",
    "ami-0b1c2d3e4f5a60719", "1.33"), ["KD1103"], exit_code=0, roots=[])
write("upgrade-ami-id-beyond-the-skew", _pinned_id_bundle(
    "Karpenter 1.8.1 on Kubernetes 1.33, its EC2NodeClass still pinned by id to an AL2023 AMI built for 1.30 (the pin was never moved through three control-plane upgrades), asked about --kubernetes 1.34: the kubelet would be four minors behind the API server, beyond the three the Kubernetes version skew policy allows.",
    "ami-0c1d2e3f4a5b60720", "1.30"), ["KD1103"], roots=["KD1103"])
