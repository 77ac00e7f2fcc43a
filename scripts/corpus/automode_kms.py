# EKS Auto Mode's root volumes and customer managed KMS keys (KD3101's rule 4; the user guide's
# "Enable EBS Volume Encryption with Customer Managed KMS Keys for EKS Auto Mode"). EKS launches
# as the cluster role, so the key must let that role use it; the AWS managed aws/ebs key needs
# nothing. (Helpers from automode.py; KEY_* from make_fixtures.py.)

# terraform-aws-modules/terraform-aws-eks#3401: an Auto Mode cluster from the module's example,
# whose instances fail to launch: "One or more of the attached Amazon EBS volumes are encrypted
# with an inaccessible AWS KMS key". Here the account encrypts every EBS volume by default with
# its own key, whose policy only delegates to IAM, and the cluster role carries nothing but
# Auto Mode's managed policies, none of which lets it use the key.
_b = _am_alone(
    "EKS Auto Mode with the built-in pools in an account that encrypts every EBS volume by default with its own KMS key; the key policy only delegates to IAM, and the cluster role has nothing but Auto Mode's five managed policies, so EKS, launching as that role, cannot use the key and every instance fails with \"encrypted with an inaccessible AWS KMS key\" (terraform-aws-eks#3401).",
    _am_pools, [_am_class()],
    extra=[fact("ebsDefaults", {"encryptedByDefault": True, "defaultKmsKeyId": KEY_ARN}),
           fact({"kmsKey": {"keyId": KEY_ARN}}, {"keyId": KEY_ID, "arn": KEY_ARN, "keyManager": "CUSTOMER", "keyState": "Enabled", "policy": KEY_POLICY})])
write("automode-root-volume-key-unusable-by-cluster-role", _b, ["KD3101"], roots=["KD3101"], skipped=_am_skipped)

# Healthy: a NodeClass of one's own encrypting its root volumes with a customer managed key
# (ephemeralStorage.kmsKeyID) whose key policy carries the user guide's two statements for the
# cluster role.
_AM_KEY_POLICY = json.dumps({"Version": "2012-10-17", "Id": "auto-mode-root-volumes", "Statement": [
    {"Sid": "Enable IAM User Permissions", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "kms:*", "Resource": "*"},
    {"Sid": "Allow use of the key", "Effect": "Allow", "Principal": {"AWS": [_AM_CLUSTER_ROLE]},
     "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"], "Resource": "*"},
    {"Sid": "Allow attachment of persistent resources", "Effect": "Allow", "Principal": {"AWS": [_AM_CLUSTER_ROLE]},
     "Action": ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"], "Resource": "*",
     "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}}}]})
_c = _custom_class("encrypted", "AutoModeCustomNodeRole")
_c["spec"]["ephemeralStorage"]["kmsKeyID"] = KEY_ARN
_b = _am_alone(
    "Healthy: an EKS Auto Mode NodeClass encrypted encrypts its nodes' root volumes with a customer managed key (ephemeralStorage.kmsKeyID) whose key policy lets the cluster role use it, with the two statements of the user guide's page on customer managed keys for Auto Mode; its role has an EC2 access entry.",
    _am_pools + [_custom_pool("secure", "encrypted")], [_am_class(), _c],
    extra=[fact({"kmsKey": {"keyId": KEY_ARN}}, {"keyId": KEY_ID, "arn": KEY_ARN, "keyManager": "CUSTOMER", "keyState": "Enabled", "policy": _AM_KEY_POLICY})])
_node_role(_b, "arn:aws:iam::111122223333:role/AutoModeCustomNodeRole")
write("healthy-auto-mode-nodeclass-root-volume-key", _b, [], skipped=_am_skipped)
