# EKS Auto Mode under organization SCPs (KD2301's rule 4, docs/auto-mode.md §3.4). EKS launches,
# and adds node roles to instance profiles, as the cluster role; an SCP on those calls breaks
# every launch from the NodeClass it hits. (Helpers from automode.py.)
import copy

# aws/containers-roadmap#2583: Auto Mode in private subnets under the thread's SCP, which denies
# ec2:RunInstances on network interfaces whenever a public address is not refused
# (BoolIfExists ec2:AssociatePublicIpAddress). The default NodeClass cannot say it wants no
# public address, so "the node pools are failing and remain in a Not Ready state". The class's
# validation reason is Karpenter's (RunInstancesAuthCheckFailed), which Auto Mode inherits
# (inferred: Auto Mode's condition texts are not published).
_PUBLIC_IP_SCP = {"Version": "2012-10-17", "Statement": [
    {"Sid": "DenyPublicIpOnLaunch", "Effect": "Deny", "Action": "ec2:RunInstances",
     "Resource": "arn:aws:ec2:*:*:network-interface/*",
     "Condition": {"BoolIfExists": {"ec2:AssociatePublicIpAddress": "true"}}}]}
_nc_failing = [
    {"type": "ValidationSucceeded", "status": "False", "reason": "RunInstancesAuthCheckFailed",
     "message": "Controller isn't authorized to call ec2:RunInstances",
     "lastTransitionTime": "2026-11-20T07:56:10Z", "observedGeneration": 1},
    {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "ValidationSucceeded=False",
     "lastTransitionTime": "2026-11-20T07:56:10Z", "observedGeneration": 1}]
_pools_not_ready = [_pool_status(copy.deepcopy(p),
                                 {"type": "NodeClassReady", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClass is not ready"},
                                 {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False"})
                    for p in _am_pools]
_b = _am_alone(
    "EKS Auto Mode with the built-in pools in private subnets, in an organization whose SCP denies ec2:RunInstances on network interfaces unless the request refuses a public address (BoolIfExists ec2:AssociatePublicIpAddress, aws/containers-roadmap#2583). The default NodeClass cannot refuse one, so its validation is denied and both built-in pools stay Not Ready.",
    _pools_not_ready, [_am_class(conditions=copy.deepcopy(_nc_failing))])
_b["emulator"] = {**default_emulator(_b), "scps": [{"name": "deny-public-ip", "document": _PUBLIC_IP_SCP}]}
write("automode-scp-denies-public-ip", _b, ["KD2301", "KD3101", "KD4005"], roots=["KD2301"], skipped=_am_skipped)

# Healthy, the thread's answer (awsdocs PR #1085): no built-in pools, and a NodeClass of one's own
# that sets advancedNetworking.associatePublicIPAddress: false, under the same SCP.
_c = _custom_class("private", "AutoModePrivateNodeRole")
_c["spec"]["advancedNetworking"] = {"associatePublicIPAddress": False}
_b = _am_alone(
    "Healthy: EKS Auto Mode under the SCP of aws/containers-roadmap#2583 (ec2:RunInstances on network interfaces denied unless the request refuses a public address), with no built-in pools and a NodeClass private that sets advancedNetworking.associatePublicIPAddress: false, as the thread's answer does; its role has an EC2 access entry with AmazonEKSAutoNodePolicy.",
    [_custom_pool("apps", "private")], [_c], builtin=(), role=None)
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModePrivateNodeRole")
_b["emulator"] = {**default_emulator(_b), "scps": [{"name": "deny-public-ip", "document": _PUBLIC_IP_SCP}]}
write("healthy-auto-mode-private-nodeclass-under-public-ip-scp", _b, [], skipped=_am_skipped)

# aws/containers-roadmap#2624: the SCP keeps IAM changes to a deployment role, and the NodeClass
# names a role (spec.role), so EKS must add it to an instance profile as the cluster role: the
# profile is never ready (InstanceProfileCreationFailed, as KPA#9016 shows it) and the pool on
# it launches nothing. The fix is a profile made beforehand (healthy-auto-mode-nodeclass-instance-profile).
_c = _custom_class("apps", "AutoModeAppsNodeRole")
_c["status"]["conditions"] = [
    {"type": "InstanceProfileReady", "status": "False", "reason": "InstanceProfileCreationFailed",
     "message": "Failed to create instance profile", "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1},
    {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "InstanceProfileReady=False",
     "lastTransitionTime": "2026-11-23T09:12:00Z", "observedGeneration": 1}]
_b = _am_alone(
    "EKS Auto Mode in an account whose SCP keeps IAM changes (iam:AddRoleToInstanceProfile, iam:CreateInstanceProfile, iam:CreateRole) to a deployment role (aws/containers-roadmap#2624); the NodeClass apps names its role (spec.role), so EKS must add the role to an instance profile as the cluster role, which the SCP denies: InstanceProfileCreationFailed, and the NodePool apps launches nothing. No built-in pool is on.",
    [_pool_status(_custom_pool("apps", "apps"),
                  {"type": "NodeClassReady", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClass is not ready"},
                  {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False"})],
    [_c], builtin=(), role=None)
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeAppsNodeRole")
_b["emulator"] = {**default_emulator(_b), "scps": [{"name": "iam-from-deployment-only", "document": _IAM_SCP}]}
write("automode-scp-denies-instance-profile-role", _b, ["KD2301", "KD3101", "KD4005"], roots=["KD2301"], skipped=_am_skipped)
