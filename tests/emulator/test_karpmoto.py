"""Tests for karpmoto: start the launcher like karpdoctor's tests do and drive it with boto3.

One server for the whole session; every test gets its own AWS account through the
`x-moto-account-id` header, so tests are independent without resetting moto.
"""

import base64
import itertools
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import boto3
import pytest
from botocore.exceptions import ClientError

LAUNCHER = Path(__file__).with_name("karpmoto.py")
REGION = "us-west-2"
ACCOUNTS = itertools.count(210000000001)


@contextmanager
def running_karpmoto(workdir, **env):
    """Start the launcher on a free port like karpdoctor's tests do; yield its endpoint URL."""
    # stderr goes to a file, not a pipe, so the server can never block on a full pipe.
    log = workdir / "stderr.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), "-H", "127.0.0.1", "-p", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, **env},
        )
    try:
        deadline = time.monotonic() + 30
        while not (match := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "karpmoto did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def endpoint(tmp_path_factory):
    with running_karpmoto(tmp_path_factory.mktemp("karpmoto")) as url:
        yield url


def client_for(endpoint, account, service, region=REGION):
    """A boto3 client whose requests all land in `account` (moto's x-moto-account-id)."""
    c = boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    c.meta.events.register("before-sign", lambda request, **_: request.headers.__setitem__("x-moto-account-id", account))
    return c


@pytest.fixture
def account():
    return str(next(ACCOUNTS))


@pytest.fixture
def aws(endpoint, account):
    """aws("iam") -> a boto3 client bound to this test's private account."""
    return lambda service: client_for(endpoint, account, service)


def doc(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


TRUST = doc({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"})


def make_role(iam, name, *statements, path="/"):
    arn = iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    if statements:
        iam.put_role_policy(RoleName=name, PolicyName=f"{name}-inline", PolicyDocument=doc(*statements))
    return arn


def simulate(iam, arn, actions, **kwargs):
    return iam.simulate_principal_policy(PolicySourceArn=arn, ActionNames=actions, **kwargs)["EvaluationResults"]


def region_context(region=REGION):
    return [{"ContextKeyName": "aws:RequestedRegion", "ContextKeyValues": [region], "ContextKeyType": "string"}]


# --- iam:SimulatePrincipalPolicy -------------------------------------------------------------


def test_requested_region_condition_needs_context(aws):
    iam = aws("iam")
    arn = make_role(
        iam,
        "KarpenterController",
        {
            "Effect": "Allow",
            "Action": ["ec2:DescribeSubnets", "ec2:DescribeInstanceTypes"],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": REGION}},
        },
        path="/karpenter/",
    )

    [without] = simulate(iam, arn, ["ec2:DescribeSubnets"])
    assert without["EvalDecision"] == "implicitDeny"
    assert without["EvalResourceName"] == "*"
    assert without["MissingContextValues"] == ["aws:RequestedRegion"]
    assert without["MatchedStatements"] == []
    assert "ResourceSpecificResults" not in without

    [with_ctx] = simulate(iam, arn, ["ec2:DescribeSubnets"], ContextEntries=region_context())
    assert with_ctx["EvalDecision"] == "allowed"
    assert with_ctx["MissingContextValues"] == []
    assert with_ctx["MatchedStatements"] == [
        {"SourcePolicyId": "KarpenterController-inline", "SourcePolicyType": "role"}
    ]

    [other_region] = simulate(iam, arn, ["ec2:DescribeSubnets"], ContextEntries=region_context("eu-west-1"))
    assert other_region["EvalDecision"] == "implicitDeny"


def test_explicit_deny_wins_and_is_the_only_match(aws):
    iam = aws("iam")
    arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "ec2:*", "Resource": "*"})
    deny = iam.create_policy(
        PolicyName="no-terminate",
        PolicyDocument=doc({"Effect": "Deny", "Action": "ec2:TerminateInstances", "Resource": "*"}),
    )["Policy"]["Arn"]
    iam.attach_role_policy(RoleName="ctrl", PolicyArn=deny)

    terminate, run = simulate(iam, arn, ["ec2:TerminateInstances", "ec2:RunInstances"])
    assert terminate["EvalDecision"] == "explicitDeny"
    assert terminate["MatchedStatements"] == [{"SourcePolicyId": "no-terminate", "SourcePolicyType": "user-managed"}]
    assert run["EvalDecision"] == "allowed"
    assert "PermissionsBoundaryDecisionDetail" not in run
    assert "OrganizationsDecisionDetail" not in run


def test_permissions_boundary_blocks_pass_role(aws):
    iam = aws("iam")
    arn = make_role(iam, "ctrl")
    # An AWS managed policy: only present because the launcher loads managed policies.
    iam.attach_role_policy(RoleName="ctrl", PolicyArn="arn:aws:iam::aws:policy/AdministratorAccess")
    boundary = iam.create_policy(
        PolicyName="ec2-only", PolicyDocument=doc({"Effect": "Allow", "Action": "ec2:*", "Resource": "*"})
    )["Policy"]["Arn"]
    iam.put_role_permissions_boundary(RoleName="ctrl", PermissionsBoundary=boundary)

    pass_role, run = simulate(iam, arn, ["iam:PassRole", "ec2:RunInstances"])
    assert pass_role["EvalDecision"] == "implicitDeny"
    assert pass_role["PermissionsBoundaryDecisionDetail"] == {"AllowedByPermissionsBoundary": False}
    assert run["EvalDecision"] == "allowed"
    assert run["PermissionsBoundaryDecisionDetail"] == {"AllowedByPermissionsBoundary": True}
    assert {"SourcePolicyId": "AdministratorAccess", "SourcePolicyType": "aws-managed"} in run["MatchedStatements"]

    # PermissionsBoundaryPolicyInputList replaces the attached boundary.
    [overridden] = simulate(
        iam,
        arn,
        ["iam:PassRole"],
        PermissionsBoundaryPolicyInputList=[doc({"Effect": "Allow", "Action": "iam:*", "Resource": "*"})],
    )
    assert overridden["EvalDecision"] == "allowed"


def test_scp_deny_on_account(aws, account):
    org, iam = aws("organizations"), aws("iam")
    org.create_organization(FeatureSet="ALL")
    scp = org.create_policy(
        Name="no-queues",
        Description="deny sqs:CreateQueue",
        Type="SERVICE_CONTROL_POLICY",
        Content=doc({"Effect": "Deny", "Action": "sqs:CreateQueue", "Resource": "*"}),
    )["Policy"]["PolicySummary"]["Id"]
    org.attach_policy(PolicyId=scp, TargetId=account)
    arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"})

    create, get = simulate(iam, arn, ["sqs:CreateQueue", "sqs:GetQueueUrl"])
    assert create["EvalDecision"] == "explicitDeny"
    assert create["OrganizationsDecisionDetail"] == {"AllowedByOrganizations": False}
    assert create["MatchedStatements"] == []  # SCP statements are never disclosed
    assert get["EvalDecision"] == "allowed"
    assert get["OrganizationsDecisionDetail"] == {"AllowedByOrganizations": True}


def test_scp_every_level_must_allow(aws, endpoint):
    org = aws("organizations")
    org.create_organization(FeatureSet="ALL")
    root = org.list_roots()["Roots"][0]["Id"]
    ou = org.create_organizational_unit(ParentId=root, Name="workloads")["OrganizationalUnit"]["Id"]
    ec2_only = org.create_policy(
        Name="ec2-only",
        Description="allow ec2 only",
        Type="SERVICE_CONTROL_POLICY",
        Content=doc({"Effect": "Allow", "Action": "ec2:*", "Resource": "*"}),
    )["Policy"]["PolicySummary"]["Id"]
    org.attach_policy(PolicyId=ec2_only, TargetId=ou)
    # New OUs get FullAWSAccess like in AWS; removing it leaves the OU allowing ec2 only.
    org.detach_policy(PolicyId="p-FullAWSAccess", TargetId=ou)
    status = org.create_account(AccountName="member", Email="member@example.com")["CreateAccountStatus"]
    member = org.describe_create_account_status(CreateAccountRequestId=status["Id"])["CreateAccountStatus"]["AccountId"]
    org.move_account(AccountId=member, SourceParentId=root, DestinationParentId=ou)

    iam = client_for(endpoint, member, "iam")
    arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "*", "Resource": "*"})

    run, queue = simulate(iam, arn, ["ec2:RunInstances", "sqs:CreateQueue"])
    assert run["EvalDecision"] == "allowed"
    assert queue["EvalDecision"] == "implicitDeny"  # root and account allow, the OU does not
    assert queue["OrganizationsDecisionDetail"] == {"AllowedByOrganizations": False}


def test_scp_evaluation_can_be_disabled(tmp_path, account):
    with running_karpmoto(tmp_path, KARPMOTO_SCP="0") as url:
        org, iam = client_for(url, account, "organizations"), client_for(url, account, "iam")
        org.create_organization(FeatureSet="ALL")
        scp = org.create_policy(
            Name="deny-all",
            Description="deny everything",
            Type="SERVICE_CONTROL_POLICY",
            Content=doc({"Effect": "Deny", "Action": "*", "Resource": "*"}),
        )["Policy"]["PolicySummary"]["Id"]
        org.attach_policy(PolicyId=scp, TargetId=account)
        arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"})
        [result] = simulate(iam, arn, ["sqs:CreateQueue"])
    assert result["EvalDecision"] == "allowed"
    assert "OrganizationsDecisionDetail" not in result


def test_resource_specific_results(aws, account):
    iam = aws("iam")
    node = f"arn:aws:iam::{account}:role/KarpenterNodeRole"
    other = f"arn:aws:iam::{account}:role/Admin"
    arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "iam:PassRole", "Resource": node})

    [result] = simulate(iam, arn, ["iam:PassRole"], ResourceArns=[node, other])
    assert result["EvalDecision"] == "implicitDeny"
    assert result["EvalResourceName"] == "*"
    assert result["EvalDecisionDetails"] == {}
    per_resource = {r["EvalResourceName"]: r for r in result["ResourceSpecificResults"]}
    assert per_resource[node]["EvalResourceDecision"] == "allowed"
    assert per_resource[node]["MatchedStatements"] == [{"SourcePolicyId": "ctrl-inline", "SourcePolicyType": "role"}]
    assert per_resource[other]["EvalResourceDecision"] == "implicitDeny"
    assert per_resource[other]["MatchedStatements"] == []

    [single] = simulate(iam, arn, ["iam:PassRole"], ResourceArns=[node])
    assert single["EvalDecision"] == "allowed"
    assert single["EvalResourceName"] == node

    # Without ResourceArns the resource is the literal "*", which a scoped statement does not match.
    [star] = simulate(iam, arn, ["iam:PassRole"])
    assert star["EvalResourceName"] == "*"
    assert star["EvalDecision"] == "implicitDeny"


def test_paging_with_max_items(aws):
    iam = aws("iam")
    arn = make_role(iam, "ctrl", {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"})
    actions = ["ec2:DescribeImages", "ec2:DescribeSubnets", "ec2:RunInstances"]

    page = iam.simulate_principal_policy(PolicySourceArn=arn, ActionNames=actions, MaxItems=1)
    seen = [r["EvalActionName"] for r in page["EvaluationResults"]]
    assert page["IsTruncated"] is True and page["Marker"]
    while page["IsTruncated"]:
        page = iam.simulate_principal_policy(
            PolicySourceArn=arn, ActionNames=actions, MaxItems=1, Marker=page["Marker"]
        )
        seen += [r["EvalActionName"] for r in page["EvaluationResults"]]
    assert seen == actions
    assert "Marker" not in page


def test_url_encoded_policy_documents(aws):
    iam = aws("iam")
    encoded = quote(doc({"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": "*"}))
    [result] = iam.simulate_custom_policy(PolicyInputList=[encoded], ActionNames=["ssm:GetParameter"])[
        "EvaluationResults"
    ]
    assert result["EvalDecision"] == "allowed"
    assert result["MatchedStatements"][0]["SourcePolicyId"] == "PolicyInputList.1"

    # The same document as GetRolePolicy returns it on the wire, fed back as an extra input.
    arn = make_role(iam, "ctrl")
    [extra] = simulate(iam, arn, ["ssm:GetParameter"], PolicyInputList=[encoded])
    assert extra["EvalDecision"] == "allowed"


def test_string_like_on_passed_to_service(aws, account):
    iam = aws("iam")
    node = f"arn:aws:iam::{account}:role/KarpenterNodeRole-*"
    arn = make_role(
        iam,
        "ctrl",
        {
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": node,
            "Condition": {"StringLike": {"iam:PassedToService": ["ec2.amazonaws.com*"]}},
        },
    )
    resource = [f"arn:aws:iam::{account}:role/KarpenterNodeRole-demo"]

    def passed_to(service):
        ctx = [{"ContextKeyName": "iam:PassedToService", "ContextKeyValues": [service], "ContextKeyType": "string"}]
        return simulate(iam, arn, ["iam:PassRole"], ResourceArns=resource, ContextEntries=ctx)[0]

    assert passed_to("ec2.amazonaws.com")["EvalDecision"] == "allowed"
    assert passed_to("ec2.amazonaws.com.cn")["EvalDecision"] == "allowed"
    assert passed_to("lambda.amazonaws.com")["EvalDecision"] == "implicitDeny"
    [missing] = simulate(iam, arn, ["iam:PassRole"], ResourceArns=resource)
    assert missing["MissingContextValues"] == ["iam:PassedToService"]


def test_user_with_group_policy(aws, account):
    iam = aws("iam")
    iam.create_user(UserName="alice")
    iam.create_group(GroupName="ops")
    iam.add_user_to_group(GroupName="ops", UserName="alice")
    iam.put_group_policy(
        GroupName="ops",
        PolicyName="ops-eks",
        PolicyDocument=doc({"Effect": "Allow", "Action": "eks:DescribeCluster", "Resource": "*"}),
    )
    [result] = simulate(iam, f"arn:aws:iam::{account}:user/alice", ["eks:DescribeCluster"])
    assert result["EvalDecision"] == "allowed"
    assert result["MatchedStatements"] == [{"SourcePolicyId": "ops-eks", "SourcePolicyType": "group"}]


def test_unknown_principal_is_no_such_entity(aws, account):
    with pytest.raises(ClientError) as err:
        simulate(aws("iam"), f"arn:aws:iam::{account}:role/missing", ["ec2:RunInstances"])
    assert err.value.response["Error"]["Code"] == "NoSuchEntity"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def ctx(key, *values):
    return {"ContextKeyName": key, "ContextKeyValues": list(values), "ContextKeyType": "string"}


CONDITION_CASES = [
    # (condition block, context entries, expected decision)
    ({"StringEqualsIgnoreCase": {"aws:ResourceTag/team": "Karp"}}, [ctx("aws:ResourceTag/team", "KARP")], "allowed"),
    ({"StringNotEquals": {"aws:RequestedRegion": "us-east-1"}}, [], "allowed"),  # negated + absent key
    ({"StringEquals": {"aws:RequestedRegion": ["eu-west-1", "us-west-2"]}}, region_context(), "allowed"),
    ({"StringLike": {"aws:ResourceTag/Name": "node-??"}}, [ctx("aws:ResourceTag/Name", "node-123")], "implicitDeny"),
    ({"ArnLike": {"aws:SourceArn": "arn:aws:eks:*:*:cluster/*"}}, [ctx("aws:SourceArn", "arn:aws:eks:us-west-2:1:cluster/c")], "allowed"),
    ({"ArnNotLike": {"aws:SourceArn": "arn:aws:eks:*:*:cluster/*"}}, [ctx("aws:SourceArn", "arn:aws:eks:us-west-2:1:cluster/c")], "implicitDeny"),
    ({"Bool": {"aws:SecureTransport": "true"}}, [ctx("aws:SecureTransport", "TRUE")], "allowed"),
    ({"NumericLessThanEquals": {"ec2:VolumeSize": "100"}}, [ctx("ec2:VolumeSize", "80")], "allowed"),
    ({"NumericGreaterThan": {"ec2:VolumeSize": "100"}}, [ctx("ec2:VolumeSize", "80")], "implicitDeny"),
    ({"DateLessThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}}, [ctx("aws:CurrentTime", "2026-11-22T10:00:00Z")], "allowed"),
    ({"DateGreaterThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}}, [ctx("aws:CurrentTime", "1767225600")], "implicitDeny"),
    ({"IpAddress": {"aws:SourceIp": "10.0.0.0/16"}}, [ctx("aws:SourceIp", "10.0.3.4")], "allowed"),
    ({"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/16", "192.168.0.0/24"]}}, [ctx("aws:SourceIp", "10.0.3.4")], "implicitDeny"),
    ({"Null": {"aws:RequestTag/owner": "true"}}, [], "allowed"),
    ({"Null": {"aws:RequestTag/owner": "false"}}, [], "implicitDeny"),
    ({"StringEqualsIfExists": {"ec2:InstanceType": "m5.large"}}, [], "allowed"),
    ({"StringEqualsIfExists": {"ec2:InstanceType": "m5.large"}}, [ctx("ec2:InstanceType", "p5.48xlarge")], "implicitDeny"),
    ({"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}}, [ctx("aws:TagKeys", "a", "b")], "allowed"),
    ({"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}}, [ctx("aws:TagKeys", "a", "c")], "implicitDeny"),
    ({"ForAllValues:StringEquals": {"aws:TagKeys": ["a"]}}, [], "allowed"),  # empty set
    ({"ForAnyValue:StringLike": {"aws:TagKeys": "karpenter.sh/*"}}, [ctx("aws:TagKeys", "x", "karpenter.sh/nodepool")], "allowed"),
    ({"ForAnyValue:StringEquals": {"aws:TagKeys": ["a"]}}, [], "implicitDeny"),
    # Context key names are case-insensitive.
    ({"StringEquals": {"AWS:RequestedRegion": REGION}}, region_context(), "allowed"),
]


@pytest.mark.parametrize("condition,context,expected", CONDITION_CASES)
def test_condition_operators(aws, condition, context, expected):
    policy = doc({"Effect": "Allow", "Action": "ec2:RunInstances", "Resource": "*", "Condition": condition})
    [result] = aws("iam").simulate_custom_policy(
        PolicyInputList=[policy], ActionNames=["ec2:RunInstances"], ContextEntries=context
    )["EvaluationResults"]
    assert result["EvalDecision"] == expected


def test_not_action_and_not_resource(aws, account):
    node = f"arn:aws:iam::{account}:role/node"
    policy = doc(
        {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"},
        {"Effect": "Allow", "Action": "iam:PassRole", "NotResource": f"arn:aws:iam::{account}:role/admin*"},
    )
    results = aws("iam").simulate_custom_policy(
        PolicyInputList=[policy], ActionNames=["ec2:RunInstances", "iam:PassRole", "iam:CreateRole"], ResourceArns=[node]
    )["EvaluationResults"]
    assert [r["EvalDecision"] for r in results] == ["allowed", "allowed", "implicitDeny"]


# --- IAM service-linked role and managed policies ----------------------------------------------


def test_spot_service_linked_role_name(aws, account):
    iam = aws("iam")
    role = iam.create_service_linked_role(AWSServiceName="spot.amazonaws.com")["Role"]
    assert role["RoleName"] == "AWSServiceRoleForEC2Spot"
    assert role["Path"] == "/aws-service-role/spot.amazonaws.com/"
    assert iam.get_role(RoleName="AWSServiceRoleForEC2Spot")["Role"]["Arn"] == (
        f"arn:aws:iam::{account}:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"
    )


def test_aws_managed_policies_exist(aws):
    policy = aws("iam").get_policy(PolicyArn="arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")["Policy"]
    assert policy["PolicyName"] == "AmazonEKSWorkerNodePolicy"


# --- EKS ---------------------------------------------------------------------------------------


def make_cluster(eks, name="demo", **kwargs):
    return eks.create_cluster(
        name=name,
        roleArn="arn:aws:iam::123456789012:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": ["subnet-1", "subnet-2"]},
        **kwargs,
    )["cluster"]


def assert_error(err, code, status):
    assert err.value.response["Error"]["Code"] == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == status


def test_eks_access_config_round_trip(aws):
    eks = aws("eks")
    make_cluster(eks, "legacy")
    assert eks.describe_cluster(name="legacy")["cluster"]["accessConfig"] == {
        "authenticationMode": "CONFIG_MAP",
        "bootstrapClusterCreatorAdminPermissions": True,
    }
    created = make_cluster(
        eks, accessConfig={"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": False}
    )
    assert created["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"

    eks.update_cluster_config(name="demo", accessConfig={"authenticationMode": "API"})
    assert eks.describe_cluster(name="demo")["cluster"]["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }
    with pytest.raises(ClientError) as err:
        eks.update_cluster_config(name="demo", accessConfig={"authenticationMode": "CONFIG_MAP"})
    assert_error(err, "InvalidParameterException", 400)


def test_eks_auto_mode_round_trip_and_its_rules(aws, account):
    eks = aws("eks")
    # A cluster that never enabled Auto Mode has no computeConfig.
    make_cluster(eks, "classic")
    assert "computeConfig" not in eks.describe_cluster(name="classic")["cluster"]
    role = f"arn:aws:iam::{account}:role/AmazonEKSAutoNodeRole"
    auto = dict(
        accessConfig={"authenticationMode": "API"},
        computeConfig={"enabled": True, "nodePools": ["general-purpose", "system"], "nodeRoleArn": role},
        storageConfig={"blockStorage": {"enabled": True}},
        kubernetesNetworkConfig={"elasticLoadBalancing": {"enabled": True}},
    )
    make_cluster(eks, "auto", **auto)
    cluster = eks.describe_cluster(name="auto")["cluster"]
    assert cluster["computeConfig"] == {"enabled": True, "nodePools": ["general-purpose", "system"], "nodeRoleArn": role}
    assert cluster["storageConfig"] == {"blockStorage": {"enabled": True}}
    assert cluster["kubernetesNetworkConfig"]["elasticLoadBalancing"] == {"enabled": True}
    assert cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "172.20.0.0/16"
    # The three capabilities go together; built-in pools and a node role come together (with EKS's
    # own messages); access entries stay on.
    refused = [
        (dict(auto, storageConfig={"blockStorage": {"enabled": False}}), None),
        (
            dict(auto, computeConfig={"enabled": True, "nodePools": ["system"]}),
            "When Compute Config nodeRoleArn is null or empty, nodePool list cannot be populated.",
        ),
        (
            dict(auto, computeConfig={"enabled": True, "nodeRoleArn": role}),
            "When Compute Config nodeRoleArn is not null or empty, nodePool value(s) must be provided.",
        ),
        (
            dict(auto, computeConfig={"enabled": True, "nodePools": [], "nodeRoleArn": role}),
            "When Compute Config nodeRoleArn is not null or empty, nodePool value(s) must be provided.",
        ),
        (dict(auto, computeConfig={"enabled": True, "nodePools": ["gpu"], "nodeRoleArn": role}), None),
        (dict(auto, accessConfig={"authenticationMode": "CONFIG_MAP"}), None),
    ]
    for i, (request, message) in enumerate(refused):
        with pytest.raises(ClientError) as err:
            make_cluster(eks, f"refused-{i}", **request)
        assert_error(err, "InvalidParameterException", 400)
        if message:
            assert err.value.response["Error"]["Message"] == message
        with pytest.raises(ClientError):
            eks.describe_cluster(name=f"refused-{i}")


def test_eks_access_entries(aws, account):
    eks = aws("eks")
    make_cluster(eks, accessConfig={"authenticationMode": "API"})
    node_role = f"arn:aws:iam::{account}:role/karpenter/KarpenterNodeRole-demo"  # paths are allowed here
    admin_role = f"arn:aws:iam::{account}:role/admin"

    node = eks.create_access_entry(clusterName="demo", principalArn=node_role, type="EC2_LINUX")["accessEntry"]
    assert node["username"] == "system:node:{{EC2PrivateDNSName}}"
    assert node["kubernetesGroups"] == ["system:nodes"]
    assert node["accessEntryArn"].startswith(
        f"arn:aws:eks:{REGION}:{account}:access-entry/demo/role/{account}/KarpenterNodeRole-demo/"
    )

    eks.create_access_entry(clusterName="demo", principalArn=admin_role, kubernetesGroups=["platform-admins"])
    admin = eks.describe_access_entry(clusterName="demo", principalArn=admin_role)["accessEntry"]
    assert admin["type"] == "STANDARD"
    assert admin["kubernetesGroups"] == ["platform-admins"]
    assert admin["username"] == f"arn:aws:sts::{account}:assumed-role/admin/{{{{SessionName}}}}"
    assert eks.describe_access_entry(clusterName="demo", principalArn=node_role)["accessEntry"]["type"] == "EC2_LINUX"
    assert sorted(eks.list_access_entries(clusterName="demo")["accessEntries"]) == sorted([node_role, admin_role])

    with pytest.raises(ClientError) as err:
        eks.create_access_entry(clusterName="demo", principalArn=node_role, type="EC2_LINUX")
    assert_error(err, "ResourceInUseException", 409)
    with pytest.raises(ClientError) as err:
        eks.create_access_entry(
            clusterName="demo", principalArn=f"arn:aws:iam::{account}:role/n2", kubernetesGroups=["system:nodes"]
        )
    assert_error(err, "InvalidParameterException", 400)

    eks.delete_access_entry(clusterName="demo", principalArn=node_role)
    with pytest.raises(ClientError) as err:
        eks.describe_access_entry(clusterName="demo", principalArn=node_role)
    assert_error(err, "ResourceNotFoundException", 404)
    assert err.value.response["Error"]["Message"] == ENTRY_NOT_FOUND
    with pytest.raises(ClientError) as err:
        eks.list_access_entries(clusterName="missing")
    assert_error(err, "ResourceNotFoundException", 404)


def test_eks_access_entries_need_api_mode(aws):
    eks = aws("eks")
    make_cluster(eks)  # CONFIG_MAP
    with pytest.raises(ClientError) as err:
        eks.list_access_entries(clusterName="demo")
    assert_error(err, "InvalidRequestException", 400)


ENTRY_NOT_FOUND = (
    "The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'."
)
NODE_ENTRY_REFUSED = 'This operation can only be performed on Access Entries with a type of "STANDARD".'


def access_policy(name, partition="aws"):
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def associated(eks, principal, cluster="demo", **kwargs):
    """policy ARN -> accessScope of every policy associated with the entry."""
    answer = eks.list_associated_access_policies(clusterName=cluster, principalArn=principal, **kwargs)
    assert (answer["clusterName"], answer["principalArn"]) == (cluster, principal)
    return {p["policyArn"]: p["accessScope"] for p in answer["associatedAccessPolicies"]}


def test_eks_node_type_entries_get_the_node_identity(aws, account):
    eks = aws("eks")
    make_cluster(eks, accessConfig={"authenticationMode": "API"})
    expected = {
        "EC2_LINUX": "system:node:{{EC2PrivateDNSName}}",
        "EC2_WINDOWS": "system:node:{{EC2PrivateDNSName}}",
        # Auto Mode nodes are named by instance id: EKS maps the session (a real describe-access-entry).
        "EC2": "system:node:{{SessionName}}",
        "FARGATE_LINUX": "system:node:{{SessionName}}",
        "HYBRID_LINUX": "system:node:{{SessionName}}",
        "HYPERPOD_LINUX": "system:node:{{SessionName}}",
    }
    for kind, username in expected.items():
        role = f"arn:aws:iam::{account}:role/nodes-{kind.lower()}"
        entry = eks.create_access_entry(clusterName="demo", principalArn=role, type=kind)["accessEntry"]
        assert (entry["type"], entry["username"], entry["kubernetesGroups"]) == (kind, username, ["system:nodes"])
    with pytest.raises(ClientError) as err:
        eks.create_access_entry(clusterName="demo", principalArn=f"arn:aws:iam::{account}:role/x", type="EC2_MAC")
    assert_error(err, "InvalidParameterException", 400)


def test_eks_access_policies_associate_list_rescope_and_disassociate(aws, account):
    eks = aws("eks")
    make_cluster(eks, accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    admin = f"arn:aws:iam::{account}:role/team/admin"  # the path survives the URL encoding
    viewer = f"arn:aws:iam::{account}:user/viewer"
    eks.create_access_entry(clusterName="demo", principalArn=admin)
    eks.create_access_entry(clusterName="demo", principalArn=viewer)
    assert associated(eks, admin) == {}

    answer = eks.associate_access_policy(
        clusterName="demo",
        principalArn=admin,
        policyArn=access_policy("AmazonEKSClusterAdminPolicy"),
        accessScope={"type": "cluster"},
    )
    assert (answer["clusterName"], answer["principalArn"]) == ("demo", admin)
    first = answer["associatedAccessPolicy"]
    assert first["policyArn"] == access_policy("AmazonEKSClusterAdminPolicy")
    # A cluster scope comes back with an empty namespace list, as in AWS's examples.
    assert first["accessScope"] == {"type": "cluster", "namespaces": []}
    assert first["associatedAt"] == first["modifiedAt"]

    edit = eks.associate_access_policy(
        clusterName="demo",
        principalArn=admin,
        policyArn=access_policy("AmazonEKSEditPolicy"),
        accessScope={"type": "namespace", "namespaces": ["dev-*", "karpenter"]},
    )["associatedAccessPolicy"]
    assert edit["accessScope"] == {"type": "namespace", "namespaces": ["dev-*", "karpenter"]}
    assert associated(eks, admin) == {
        access_policy("AmazonEKSClusterAdminPolicy"): {"type": "cluster", "namespaces": []},
        access_policy("AmazonEKSEditPolicy"): {"type": "namespace", "namespaces": ["dev-*", "karpenter"]},
    }

    # Associating the same policy again changes its scope: one association, a new modifiedAt.
    time.sleep(0.01)
    again = eks.associate_access_policy(
        clusterName="demo",
        principalArn=admin,
        policyArn=access_policy("AmazonEKSEditPolicy"),
        accessScope={"type": "namespace", "namespaces": ["karpenter"]},
    )["associatedAccessPolicy"]
    assert again["associatedAt"] == edit["associatedAt"]
    assert again["modifiedAt"] > edit["modifiedAt"]
    assert associated(eks, admin)[access_policy("AmazonEKSEditPolicy")] == {"type": "namespace", "namespaces": ["karpenter"]}
    assert len(associated(eks, admin)) == 2

    # Paging, as every EKS list does.
    page = eks.list_associated_access_policies(clusterName="demo", principalArn=admin, maxResults=1)
    assert len(page["associatedAccessPolicies"]) == 1 and page["nextToken"]
    rest = eks.list_associated_access_policies(
        clusterName="demo", principalArn=admin, maxResults=1, nextToken=page["nextToken"]
    )
    assert "nextToken" not in rest
    assert {p["policyArn"] for p in page["associatedAccessPolicies"] + rest["associatedAccessPolicies"]} == set(
        associated(eks, admin)
    )
    paged = eks.get_paginator("list_associated_access_policies").paginate(
        clusterName="demo", principalArn=admin, PaginationConfig={"PageSize": 1}
    )
    assert sum(len(p["associatedAccessPolicies"]) for p in paged) == 2

    # ListAccessEntries filters by an associated policy.
    eks.associate_access_policy(
        clusterName="demo", principalArn=viewer, policyArn=access_policy("AmazonEKSViewPolicy"), accessScope={"type": "cluster"}
    )
    by_policy = eks.list_access_entries(clusterName="demo", associatedPolicyArn=access_policy("AmazonEKSViewPolicy"))
    assert by_policy["accessEntries"] == [viewer]
    assert sorted(eks.list_access_entries(clusterName="demo")["accessEntries"]) == sorted([admin, viewer])

    eks.disassociate_access_policy(clusterName="demo", principalArn=admin, policyArn=access_policy("AmazonEKSEditPolicy"))
    assert associated(eks, admin) == {access_policy("AmazonEKSClusterAdminPolicy"): {"type": "cluster", "namespaces": []}}
    with pytest.raises(ClientError) as err:
        eks.disassociate_access_policy(clusterName="demo", principalArn=admin, policyArn=access_policy("AmazonEKSEditPolicy"))
    assert_error(err, "ResourceNotFoundException", 404)

    # Deleting the entry drops its associations; a new entry for the principal starts empty.
    eks.delete_access_entry(clusterName="demo", principalArn=viewer)
    eks.create_access_entry(clusterName="demo", principalArn=viewer)
    assert associated(eks, viewer) == {}


def test_eks_access_policy_calls_are_validated_like_eks(aws, account):
    eks = aws("eks")
    make_cluster(eks, accessConfig={"authenticationMode": "API"})
    role = f"arn:aws:iam::{account}:role/admin"
    eks.create_access_entry(clusterName="demo", principalArn=role)
    view = access_policy("AmazonEKSViewPolicy")

    def associate(policy_arn=view, scope=None, principal=role, cluster="demo"):
        with pytest.raises(ClientError) as err:
            eks.associate_access_policy(
                clusterName=cluster, principalArn=principal, policyArn=policy_arn, accessScope=scope or {"type": "cluster"}
            )
        return err

    assert_error(associate(cluster="missing"), "ResourceNotFoundException", 404)
    err = associate(principal=f"arn:aws:iam::{account}:role/nobody")
    assert_error(err, "ResourceNotFoundException", 404)
    assert err.value.response["Error"]["Message"] == ENTRY_NOT_FOUND
    with pytest.raises(ClientError) as err:
        eks.list_associated_access_policies(clusterName="demo", principalArn=f"arn:aws:iam::{account}:role/nobody")
    assert_error(err, "ResourceNotFoundException", 404)

    # Anything but a known policy ARN of the cluster's partition is not found, as in AWS.
    for bad in [
        access_policy("AmazonEKSMadeUpPolicy"),
        "arn:aws:eks:::cluster-access-policy/AmazonEKSViewPolicy",
        f"arn:aws:eks:{REGION}:aws:cluster-access-policy/AmazonEKSViewPolicy",
        access_policy("AmazonEKSViewPolicy", partition="aws-cn"),
        "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
    ]:
        err = associate(policy_arn=bad)
        assert_error(err, "ResourceNotFoundException", 404)
        assert err.value.response["Error"]["Message"] == "The specified policyArn could not be found."

    # Policies reserved for service-linked roles.
    for reserved in ["AmazonEKSComputeClusterPolicy", "AmazonEKSBlockStorageClusterPolicy", "AmazonEKSHybridPolicy"]:
        err = associate(policy_arn=access_policy(reserved))
        assert_error(err, "InvalidParameterException", 400)
        assert err.value.response["Error"]["Message"] == (
            "The specified policyArn can only be associated with service-linked roles"
        )
    # AmazonEKSLoadBalancingClusterPolicy is not reserved.
    eks.associate_access_policy(
        clusterName="demo",
        principalArn=role,
        policyArn=access_policy("AmazonEKSLoadBalancingClusterPolicy"),
        accessScope={"type": "cluster"},
    )

    # Scopes: cluster or namespace; a namespace scope names namespaces.
    for scope in [
        {"type": "namespace"},
        {"type": "namespace", "namespaces": []},
        {"type": "cluster", "namespaces": ["default"]},
        {"type": "everything"},
        {"namespaces": ["default"]},
    ]:
        assert_error(associate(scope=scope), "InvalidParameterException", 400)
    assert view not in associated(eks, role)

    # Node entries take no policies (EC2, Auto Mode's node type, does: below).
    for kind in ["EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX", "HYPERPOD_LINUX"]:
        node = f"arn:aws:iam::{account}:role/node-{kind.lower()}"
        eks.create_access_entry(clusterName="demo", principalArn=node, type=kind)
        err = associate(principal=node, policy_arn=access_policy("AmazonEKSAutoNodePolicy"))
        assert_error(err, "InvalidParameterException", 400)
        assert err.value.response["Error"]["Message"] == NODE_ENTRY_REFUSED
        with pytest.raises(ClientError) as err:
            eks.list_associated_access_policies(clusterName="demo", principalArn=node)
        assert_error(err, "InvalidParameterException", 400)
        assert err.value.response["Error"]["Message"] == NODE_ENTRY_REFUSED
    auto_node = f"arn:aws:iam::{account}:role/auto-node"
    eks.create_access_entry(clusterName="demo", principalArn=auto_node, type="EC2")
    eks.associate_access_policy(
        clusterName="demo",
        principalArn=auto_node,
        policyArn=access_policy("AmazonEKSAutoNodePolicy"),
        accessScope={"type": "cluster"},
    )
    assert associated(eks, auto_node) == {access_policy("AmazonEKSAutoNodePolicy"): {"type": "cluster", "namespaces": []}}

    # A ConfigMap-only cluster has no access entries to speak of.
    make_cluster(eks, "legacy")
    with pytest.raises(ClientError) as err:
        eks.list_associated_access_policies(clusterName="legacy", principalArn=role)
    assert_error(err, "InvalidRequestException", 400)


def test_eks_list_access_policies(aws):
    eks = aws("eks")
    first = eks.list_access_policies(maxResults=5)
    assert len(first["accessPolicies"]) == 5 and first["nextToken"]
    policies = [p for page in eks.get_paginator("list_access_policies").paginate() for p in page["accessPolicies"]]
    names = [p["name"] for p in policies]
    assert names == sorted(names) and len(names) == len(set(names))
    for p in policies:
        assert p["arn"] == access_policy(p["name"])
    for name in [
        "AmazonEKSClusterAdminPolicy",
        "AmazonEKSAdminPolicy",
        "AmazonEKSAdminViewPolicy",
        "AmazonEKSEditPolicy",
        "AmazonEKSViewPolicy",
        "AmazonEKSAutoNodePolicy",
        "AmazonEKSBlockStorageClusterPolicy",
        "AmazonEKSComputeClusterPolicy",
        "AmazonEKSLoadBalancingClusterPolicy",
        "AmazonEKSNetworkingClusterPolicy",
        "AmazonEKSHybridPolicy",
    ]:
        assert name in names
    assert first["accessPolicies"] == policies[:5]


AUTO_CLUSTER_ROLE_POLICIES = {
    access_policy(name): {"type": "cluster", "namespaces": []}
    for name in [
        "AmazonEKSBlockStorageClusterPolicy",
        "AmazonEKSComputeClusterPolicy",
        "AmazonEKSLoadBalancingClusterPolicy",
        "AmazonEKSNetworkingClusterPolicy",
        "AmazonEKSBlockStoragePolicy",
        "AmazonEKSComputePolicy",
        "AmazonEKSLoadBalancingPolicy",
        "AmazonEKSNetworkingPolicy",
    ]
}
CLUSTER_ROLE = "arn:aws:iam::123456789012:role/eks-cluster"  # make_cluster's


def auto_mode(node_role=None, pools=("general-purpose", "system")):
    compute = {"enabled": True}
    if node_role:
        compute.update(nodePools=list(pools), nodeRoleArn=node_role)
    return dict(
        computeConfig=compute,
        storageConfig={"blockStorage": {"enabled": True}},
        kubernetesNetworkConfig={"elasticLoadBalancing": {"enabled": True}},
    )


def test_eks_auto_mode_makes_the_access_entries_eks_makes(aws, account):
    eks = aws("eks")
    node_role = f"arn:aws:iam::{account}:role/AmazonEKSAutoNodeRole"
    make_cluster(eks, accessConfig={"authenticationMode": "API"}, **auto_mode(node_role))
    assert sorted(eks.list_access_entries(clusterName="demo")["accessEntries"]) == sorted([CLUSTER_ROLE, node_role])

    node = eks.describe_access_entry(clusterName="demo", principalArn=node_role)["accessEntry"]
    assert (node["type"], node["username"], node["kubernetesGroups"]) == (
        "EC2",
        "system:node:{{SessionName}}",
        ["system:nodes"],
    )
    assert associated(eks, node_role) == {access_policy("AmazonEKSAutoNodePolicy"): {"type": "cluster", "namespaces": []}}
    cluster_role = eks.describe_access_entry(clusterName="demo", principalArn=CLUSTER_ROLE)["accessEntry"]
    assert (cluster_role["type"], cluster_role["username"], cluster_role["kubernetesGroups"]) == (
        "STANDARD",
        "arn:aws:sts::123456789012:assumed-role/eks-cluster/{{SessionName}}",
        [],
    )
    assert associated(eks, CLUSTER_ROLE) == AUTO_CLUSTER_ROLE_POLICIES
    assert eks.list_access_entries(
        clusterName="demo", associatedPolicyArn=access_policy("AmazonEKSAutoNodePolicy")
    )["accessEntries"] == [node_role]

    # One principal, one entry: creating the node role's entry again is refused.
    with pytest.raises(ClientError) as err:
        eks.create_access_entry(clusterName="demo", principalArn=node_role, type="EC2")
    assert_error(err, "ResourceInUseException", 409)
    # A test can still take the entry away to build a broken cluster.
    eks.delete_access_entry(clusterName="demo", principalArn=node_role)
    assert eks.list_access_entries(clusterName="demo")["accessEntries"] == [CLUSTER_ROLE]

    # Without built-in pools there is no node role, so only the cluster role's entry.
    make_cluster(eks, "custom-pools", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}, **auto_mode())
    assert eks.list_access_entries(clusterName="custom-pools")["accessEntries"] == [CLUSTER_ROLE]
    # Without Auto Mode, none.
    make_cluster(eks, "classic", accessConfig={"authenticationMode": "API"})
    assert eks.list_access_entries(clusterName="classic")["accessEntries"] == []


def test_eks_auto_mode_enabled_by_update_cluster_config(aws, account):
    eks = aws("eks")
    node_role = f"arn:aws:iam::{account}:role/AmazonEKSAutoNodeRole"
    make_cluster(eks, accessConfig={"authenticationMode": "API"})
    make_cluster(eks, "legacy")  # CONFIG_MAP
    # All three capabilities in one request; a ConfigMap-only cluster cannot have Auto Mode.
    for name, request in [
        ("demo", dict(computeConfig={"enabled": True})),
        ("demo", dict(auto_mode(node_role), storageConfig={"blockStorage": {"enabled": False}})),
        ("legacy", auto_mode(node_role)),
    ]:
        with pytest.raises(ClientError) as err:
            eks.update_cluster_config(name=name, **request)
        assert_error(err, "InvalidParameterException", 400)
    assert "computeConfig" not in eks.describe_cluster(name="demo")["cluster"]
    assert eks.list_access_entries(clusterName="demo")["accessEntries"] == []

    eks.update_cluster_config(name="demo", **auto_mode(node_role))
    cluster = eks.describe_cluster(name="demo")["cluster"]
    assert cluster["computeConfig"] == {"enabled": True, "nodePools": ["general-purpose", "system"], "nodeRoleArn": node_role}
    assert cluster["storageConfig"] == {"blockStorage": {"enabled": True}}
    assert cluster["kubernetesNetworkConfig"]["elasticLoadBalancing"] == {"enabled": True}
    assert cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "172.20.0.0/16"
    assert associated(eks, node_role) == {access_policy("AmazonEKSAutoNodePolicy"): {"type": "cluster", "namespaces": []}}
    assert associated(eks, CLUSTER_ROLE) == AUTO_CLUSTER_ROLE_POLICIES

    # The node role is fixed once compute is on; the pools can change without restating it.
    with pytest.raises(ClientError) as err:
        eks.update_cluster_config(
            name="demo",
            computeConfig={"enabled": True, "nodePools": ["system"], "nodeRoleArn": f"arn:aws:iam::{account}:role/other"},
        )
    assert_error(err, "InvalidParameterException", 400)
    eks.update_cluster_config(name="demo", computeConfig={"enabled": True, "nodePools": ["system"]})
    assert eks.describe_cluster(name="demo")["cluster"]["computeConfig"] == {
        "enabled": True,
        "nodePools": ["system"],
        "nodeRoleArn": node_role,
    }

    # An Auto Mode cluster without built-in pools that adds them later gets the node role's entry then.
    make_cluster(eks, "late", accessConfig={"authenticationMode": "API"}, **auto_mode())
    assert eks.list_access_entries(clusterName="late")["accessEntries"] == [CLUSTER_ROLE]
    eks.update_cluster_config(
        name="late", computeConfig={"enabled": True, "nodePools": ["general-purpose"], "nodeRoleArn": node_role}
    )
    assert sorted(eks.list_access_entries(clusterName="late")["accessEntries"]) == sorted([CLUSTER_ROLE, node_role])


def test_eks_pod_identity_associations(aws, account):
    eks = aws("eks")
    make_cluster(eks)
    role = f"arn:aws:iam::{account}:role/KarpenterController"
    karpenter = eks.create_pod_identity_association(
        clusterName="demo", namespace="kube-system", serviceAccount="karpenter", roleArn=role
    )["association"]
    eks.create_pod_identity_association(
        clusterName="demo", namespace="kube-system", serviceAccount="aws-node", roleArn=role
    )
    eks.create_pod_identity_association(clusterName="demo", namespace="karpenter", serviceAccount="karpenter", roleArn=role)

    assert re.fullmatch(r"a-[0-9a-z]{17}", karpenter["associationId"])
    assert karpenter["associationArn"] == (
        f"arn:aws:eks:{REGION}:{account}:podidentityassociation/demo/{karpenter['associationId']}"
    )
    by_ns = eks.list_pod_identity_associations(clusterName="demo", namespace="kube-system")["associations"]
    assert sorted(a["serviceAccount"] for a in by_ns) == ["aws-node", "karpenter"]
    by_sa = eks.list_pod_identity_associations(clusterName="demo", serviceAccount="karpenter")["associations"]
    assert sorted(a["namespace"] for a in by_sa) == ["karpenter", "kube-system"]
    both = eks.list_pod_identity_associations(clusterName="demo", namespace="karpenter", serviceAccount="karpenter")
    assert len(both["associations"]) == 1

    described = eks.describe_pod_identity_association(clusterName="demo", associationId=karpenter["associationId"])
    assert described["association"]["roleArn"] == role
    with pytest.raises(ClientError) as err:
        eks.create_pod_identity_association(
            clusterName="demo", namespace="kube-system", serviceAccount="karpenter", roleArn=role
        )
    assert_error(err, "ResourceInUseException", 409)

    eks.delete_pod_identity_association(clusterName="demo", associationId=karpenter["associationId"])
    with pytest.raises(ClientError) as err:
        eks.describe_pod_identity_association(clusterName="demo", associationId=karpenter["associationId"])
    assert_error(err, "ResourceNotFoundException", 404)


def test_eks_addons(aws):
    eks = aws("eks")
    make_cluster(eks)
    addon = eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent", addonVersion="v1.3.8-eksbuild.2")
    assert addon["addon"]["status"] == "ACTIVE"
    eks.create_addon(clusterName="demo", addonName="vpc-cni")

    assert sorted(eks.list_addons(clusterName="demo")["addons"]) == ["eks-pod-identity-agent", "vpc-cni"]
    described = eks.describe_addon(clusterName="demo", addonName="eks-pod-identity-agent")["addon"]
    assert described["addonVersion"] == "v1.3.8-eksbuild.2"
    with pytest.raises(ClientError) as err:
        eks.create_addon(clusterName="demo", addonName="vpc-cni")
    assert_error(err, "ResourceInUseException", 409)

    eks.delete_addon(clusterName="demo", addonName="vpc-cni")
    with pytest.raises(ClientError) as err:
        eks.describe_addon(clusterName="demo", addonName="vpc-cni")
    assert_error(err, "ResourceNotFoundException", 404)


# --- SSM ---------------------------------------------------------------------------------------


def test_ssm_aws_service_parameters_can_be_seeded(aws):
    ssm = aws("ssm")
    al2023 = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
    bottlerocket = "/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id"
    ssm.put_parameter(Name=al2023, Value="ami-0a1b2c3d4e5f60718", Type="String")
    ssm.put_parameter(Name=bottlerocket, Value="ami-0f1e2d3c4b5a69788", Type="String")
    ssm.put_parameter(Name=al2023, Value="ami-0a1b2c3d4e5f60719", Type="String", Overwrite=True)

    param = ssm.get_parameter(Name=al2023)["Parameter"]
    assert (param["Value"], param["Version"]) == ("ami-0a1b2c3d4e5f60719", 2)
    got = ssm.get_parameters(Names=[al2023, bottlerocket, "/aws/service/eks/optimized-ami/9.99/missing"])
    assert {p["Name"]: p["Value"] for p in got["Parameters"]} == {
        al2023: "ami-0a1b2c3d4e5f60719",
        bottlerocket: "ami-0f1e2d3c4b5a69788",
    }
    assert got["InvalidParameters"] == ["/aws/service/eks/optimized-ami/9.99/missing"]
    with pytest.raises(ClientError) as err:
        ssm.get_parameter(Name="/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
    assert err.value.response["Error"]["Code"] == "ParameterNotFound"


# --- IAM instance profiles and the node role's managed policies --------------------------------

NODE_POLICIES = [
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
]


def test_instance_profile_with_node_role_and_managed_policies(aws, account):
    iam = aws("iam")
    role_arn = make_role(iam, "KarpenterNodeRole-demo")
    for arn in NODE_POLICIES:
        iam.attach_role_policy(RoleName="KarpenterNodeRole-demo", PolicyArn=arn)
    attached = iam.list_attached_role_policies(RoleName="KarpenterNodeRole-demo")["AttachedPolicies"]
    assert sorted(p["PolicyArn"] for p in attached) == sorted(NODE_POLICIES)

    # PullOnly (2024) is in moto 5.2.5's managed-policy data, with AWS's document.
    pull_only = iam.get_policy(PolicyArn=NODE_POLICIES[3])["Policy"]
    document = iam.get_policy_version(PolicyArn=NODE_POLICIES[3], VersionId=pull_only["DefaultVersionId"])
    [statement] = document["PolicyVersion"]["Document"]["Statement"]
    assert sorted(statement["Action"]) == sorted(
        ["ecr:GetAuthorizationToken", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchImportUpstreamImage"]
    )
    assert (statement["Effect"], statement["Resource"]) == ("Allow", "*")

    iam.create_instance_profile(InstanceProfileName="KarpenterNodeInstanceProfile-demo")
    iam.add_role_to_instance_profile(
        InstanceProfileName="KarpenterNodeInstanceProfile-demo", RoleName="KarpenterNodeRole-demo"
    )
    profile = iam.get_instance_profile(InstanceProfileName="KarpenterNodeInstanceProfile-demo")["InstanceProfile"]
    assert profile["Arn"] == f"arn:aws:iam::{account}:instance-profile/KarpenterNodeInstanceProfile-demo"
    assert [r["Arn"] for r in profile["Roles"]] == [role_arn]
    with pytest.raises(ClientError) as err:
        iam.get_instance_profile(InstanceProfileName="missing")
    assert_error(err, "NoSuchEntity", 404)


# --- EC2: pinned ids, subnets, security groups -------------------------------------------------


def tag_spec(resource_type, **tags):
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def pinned(resource_type, resource_id, **tags):
    """TagSpecifications carrying karpmoto:id plus ordinary tags."""
    return tag_spec(resource_type, **{"karpmoto:id": resource_id}, **tags)


def tags_of(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def test_pinned_vpc_subnet_and_security_group_ids(aws):
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=pinned("vpc", "vpc-0a1b2c3d4e5f60718", Name="demo"))
    assert vpc["Vpc"]["VpcId"] == "vpc-0a1b2c3d4e5f60718"
    [described] = ec2.describe_vpcs(VpcIds=["vpc-0a1b2c3d4e5f60718"])["Vpcs"]
    assert tags_of(described) == {"Name": "demo"}  # the pin tag is not stored

    # The default group CreateVpc makes keeps a random id.
    [default] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": ["vpc-0a1b2c3d4e5f60718"]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    assert re.fullmatch(r"sg-[0-9a-f]{17}", default["GroupId"])

    subnet = ec2.create_subnet(
        VpcId="vpc-0a1b2c3d4e5f60718",
        CidrBlock="10.0.0.0/20",
        AvailabilityZone="us-west-2a",
        TagSpecifications=pinned("subnet", "subnet-0a1b2c3d", **{"karpenter.sh/discovery": "demo"}),
    )["Subnet"]
    assert subnet["SubnetId"] == "subnet-0a1b2c3d"
    ec2.create_subnet(VpcId="vpc-0a1b2c3d4e5f60718", CidrBlock="10.0.16.0/20", AvailabilityZone="us-west-2b")

    [described] = ec2.describe_subnets(
        Filters=[{"Name": "tag:karpenter.sh/discovery", "Values": ["demo"]}]
    )["Subnets"]
    assert {k: described[k] for k in ("SubnetId", "VpcId", "AvailabilityZone", "CidrBlock")} == {
        "SubnetId": "subnet-0a1b2c3d",
        "VpcId": "vpc-0a1b2c3d4e5f60718",
        "AvailabilityZone": "us-west-2a",
        "CidrBlock": "10.0.0.0/20",
    }
    assert described["AvailabilityZoneId"].startswith("usw2-az")
    assert described["AvailableIpAddressCount"] == 4096 - 5  # AWS reserves five per subnet
    assert tags_of(described) == {"karpenter.sh/discovery": "demo"}

    group = ec2.create_security_group(
        GroupName="demo-node",
        Description="nodes",
        VpcId="vpc-0a1b2c3d4e5f60718",
        TagSpecifications=pinned("security-group", "sg-0123456789abcdef0", **{"karpenter.sh/discovery": "demo"}),
    )
    assert group["GroupId"] == "sg-0123456789abcdef0"
    [described] = ec2.describe_security_groups(
        Filters=[{"Name": "tag:karpenter.sh/discovery", "Values": ["demo"]}]
    )["SecurityGroups"]
    assert {k: described[k] for k in ("GroupId", "GroupName", "VpcId")} == {
        "GroupId": "sg-0123456789abcdef0",
        "GroupName": "demo-node",
        "VpcId": "vpc-0a1b2c3d4e5f60718",
    }
    assert tags_of(described) == {"karpenter.sh/discovery": "demo"}


def test_unpinned_ids_stay_random_and_bad_pins_are_refused(aws):
    ec2 = aws("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.1.0.0/16", TagSpecifications=tag_spec("vpc", Name="plain"))["Vpc"]["VpcId"]
    assert re.fullmatch(r"vpc-[0-9a-f]{17}", vpc_id)
    ec2.create_vpc(CidrBlock="10.2.0.0/16", TagSpecifications=pinned("vpc", "vpc-0000000000000000a"))

    for spec in (pinned("vpc", "vpc-0000000000000000a"), pinned("vpc", "subnet-0a1b2c3d")):
        with pytest.raises(ClientError) as err:
            ec2.create_vpc(CidrBlock="10.3.0.0/16", TagSpecifications=spec)
        assert_error(err, "InvalidParameterValue", 400)
    ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.1.0.0/24", TagSpecifications=pinned("subnet", "subnet-0000000a"))
    with pytest.raises(ClientError) as err:
        ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.1.1.0/24", TagSpecifications=pinned("subnet", "subnet-0000000a"))
    assert_error(err, "InvalidParameterValue", 400)
    # Nothing half-made: only the two VPCs above exist besides the account's default VPC.
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["false"]}])["Vpcs"]
    assert sorted(v["VpcId"] for v in vpcs) == sorted([vpc_id, "vpc-0000000000000000a"])


def test_describe_subnets_pages_return_every_subnet(aws):
    ec2 = aws("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ids = [ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.0.{i}.0/24")["Subnet"]["SubnetId"] for i in range(7)]
    pages = ec2.get_paginator("describe_subnets").paginate(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}], PaginationConfig={"PageSize": 5}
    )
    assert sorted(s["SubnetId"] for page in pages for s in page["Subnets"]) == sorted(ids)


# --- EC2: images -------------------------------------------------------------------------------

EKS_AMI_OWNER = "602401143452"
AL2023 = "amazon-eks-node-al2023-{arch}-standard-1.33-v20250715"


def register(ec2, name, image_id, arch="x86_64", **tags):
    return ec2.register_image(
        Name=name, Architecture=arch, TagSpecifications=pinned("image", image_id, **tags)
    )["ImageId"]


def image_ids(ec2, **kwargs):
    return sorted(i["ImageId"] for i in ec2.describe_images(IncludeDeprecated=True, **kwargs)["Images"])


def name_filter(*patterns):
    return [{"Name": "name", "Values": list(patterns)}]


def test_registered_images_as_recorded(aws, account):
    ec2 = aws("ec2")
    assert ec2.describe_images(Owners=["amazon"])["Images"] == []  # no moto sample AMIs
    x86 = register(
        ec2,
        AL2023.format(arch="x86_64"),
        "ami-0a1b2c3d4e5f60718",
        **{
            "karpmoto:owner": EKS_AMI_OWNER,
            "karpmoto:creation-date": "2025-07-15T12:34:56.000Z",
            "karpmoto:deprecation-time": "2027-07-15T12:34:00.000Z",
            "Name": "eks-al2023",
        },
    )
    eks_owned = {"karpmoto:owner": EKS_AMI_OWNER}
    arm = register(ec2, AL2023.format(arch="arm64"), "ami-0a1b2c3d4e5f60719", "arm64", **eks_owned)
    custom = register(ec2, "team-golden-x86_64", "ami-0fedcba987654321a", team="platform")
    assert x86 == "ami-0a1b2c3d4e5f60718"

    [image] = ec2.describe_images(ImageIds=[x86])["Images"]
    assert {k: image.get(k) for k in ("Name", "Architecture", "State", "OwnerId", "ImageOwnerAlias", "Public")} == {
        "Name": AL2023.format(arch="x86_64"),
        "Architecture": "x86_64",
        "State": "available",
        "OwnerId": EKS_AMI_OWNER,
        "ImageOwnerAlias": "amazon",
        "Public": True,
    }
    assert image["CreationDate"] == "2025-07-15T12:34:56.000Z"
    assert image["DeprecationTime"] == "2027-07-15T12:34:00.000Z"
    assert tags_of(image) == {"Name": "eks-al2023"}  # karpmoto:* tags are not returned
    [mine] = ec2.describe_images(ImageIds=[custom])["Images"]
    assert (mine["OwnerId"], mine.get("ImageOwnerAlias"), mine["Public"]) == (account, None, False)
    assert "DeprecationTime" not in mine

    assert image_ids(ec2, Filters=[{"Name": "image-id", "Values": [arm]}]) == [arm]
    assert image_ids(ec2, Filters=[{"Name": "image-id", "Values": ["ami-00000000000000000"]}]) == []
    assert image_ids(ec2, Filters=name_filter("amazon-eks-node-al2023-*-standard-1.33-*")) == sorted([x86, arm])
    both_names = name_filter("amazon-eks-node-al2023-*", "team-golden-*")
    assert image_ids(ec2, Filters=both_names) == sorted([x86, arm, custom])
    assert image_ids(ec2, Filters=[{"Name": "architecture", "Values": ["arm64"]}]) == [arm]
    assert image_ids(ec2, Filters=[{"Name": "tag:team", "Values": ["platform"]}]) == [custom]
    assert image_ids(ec2, Owners=["self"]) == [custom]
    assert image_ids(ec2, Owners=["amazon"]) == sorted([x86, arm])
    assert image_ids(ec2, Owners=[EKS_AMI_OWNER]) == sorted([x86, arm])
    assert image_ids(ec2, Owners=["self", "amazon"], Filters=name_filter("*x86_64*")) == sorted([x86, custom])

    ec2.deregister_image(ImageId=arm)
    assert image_ids(ec2, Owners=["amazon"]) == [x86]
    with pytest.raises(ClientError) as err:
        ec2.describe_images(ImageIds=["ami-00000000000000000"])
    assert_error(err, "InvalidAMIID.NotFound", 400)


def test_deprecated_images_need_include_deprecated(aws):
    ec2 = aws("ec2")
    past = "2024-01-01T00:00:00.000Z"
    deprecated = {"karpmoto:deprecation-time": past}
    eks_owned = {"karpmoto:owner": EKS_AMI_OWNER}
    old = register(ec2, "amazon-eks-node-1.29-v20240101", "ami-0000000000000001a", **deprecated, **eks_owned)
    own_old = register(ec2, "golden-old", "ami-0000000000000002a", **deprecated)

    def listed(**kwargs):
        return sorted(i["ImageId"] for i in ec2.describe_images(**kwargs)["Images"])

    # AWS hides other owners' deprecated AMIs unless asked; an owner always sees its own.
    assert listed() == [own_old]
    assert listed(IncludeDeprecated=True) == sorted([old, own_old])
    assert listed(ImageIds=[old]) == [old]


def test_register_image_refuses_bad_karpmoto_tags(aws):
    ec2 = aws("ec2")
    for tags in ({"karpmoto:owners": EKS_AMI_OWNER}, {"karpmoto:deprecation-time": "next year"}):
        with pytest.raises(ClientError) as err:
            register(ec2, "bad", "ami-0000000000000003a", **tags)
        assert_error(err, "InvalidParameterValue", 400)
    assert ec2.describe_images(Owners=["self"])["Images"] == []


# --- EC2: snapshots and the images that use them ----------------------------------------------

SNAPSHOT_ID = "snap-0a1b2c3d4e5f60718"
SNAPSHOT_FIELDS = ("SnapshotId", "VolumeId", "VolumeSize", "State", "OwnerId", "Encrypted", "KmsKeyId")


def snapshot_fields(snapshot):
    return {k: snapshot[k] for k in SNAPSHOT_FIELDS if k in snapshot}


def encrypted_volume(ec2, key_ref=None, size=20):
    extra = {"KmsKeyId": key_ref} if key_ref else {}
    return ec2.create_volume(AvailabilityZone="us-west-2a", Size=size, Encrypted=True, **extra)["VolumeId"]


def test_snapshots_keep_a_pinned_id_and_report_their_key_arn(aws, account):
    ec2, kms = aws("ec2"), aws("kms")
    arn = kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))["KeyMetadata"]["Arn"]
    kms.create_alias(AliasName="alias/golden-ami", TargetKeyId=KEY_ID)
    # EC2 reports a volume's key by its ARN, however CreateVolume named it (moto kept it as given).
    for key_ref in (KEY_ID, arn, "alias/golden-ami"):
        volume_id = encrypted_volume(ec2, key_ref)
        assert ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]["KmsKeyId"] == arn

    created = ec2.create_snapshot(
        VolumeId=volume_id,
        Description="golden root",
        TagSpecifications=pinned("snapshot", SNAPSHOT_ID, team="platform"),
    )
    assert snapshot_fields(created) == {
        "SnapshotId": SNAPSHOT_ID,
        "VolumeId": volume_id,
        "VolumeSize": 20,
        "State": "completed",
        "OwnerId": account,
        "Encrypted": True,
        "KmsKeyId": arn,  # stock moto leaves the key out
    }
    assert tags_of(created) == {"team": "platform"}  # the pin tag is not stored

    # Without a pin the id stays random; an unencrypted snapshot has no key.
    plain_volume = ec2.create_volume(AvailabilityZone="us-west-2a", Size=8)["VolumeId"]
    plain = ec2.create_snapshot(VolumeId=plain_volume)
    assert re.fullmatch(r"snap-[0-9a-f]{17}", plain["SnapshotId"])
    assert (plain["Encrypted"], "KmsKeyId" in plain) == (False, False)

    # A reused id, another prefix or an unknown karpmoto tag is refused, and nothing is made.
    for spec in (
        pinned("snapshot", SNAPSHOT_ID),
        pinned("snapshot", "vol-0a1b2c3d4e5f60719"),
        tag_spec("snapshot", **{"karpmoto:owner": "111122223333"}),
    ):
        with pytest.raises(ClientError) as err:
            ec2.create_snapshot(VolumeId=volume_id, TagSpecifications=spec)
        assert_error(err, "InvalidParameterValue", 400)
    snapshots = ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]
    assert sorted(s["SnapshotId"] for s in snapshots) == sorted([SNAPSHOT_ID, plain["SnapshotId"]])


def test_describe_snapshots_by_id_filter_leaves_unknown_ids_out(aws, account):
    ec2, kms = aws("ec2"), aws("kms")
    arn = kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))["KeyMetadata"]["Arn"]
    cmk_volume = encrypted_volume(ec2, KEY_ID)
    ec2.create_snapshot(VolumeId=cmk_volume, TagSpecifications=pinned("snapshot", SNAPSHOT_ID))
    # Encrypted without KmsKeyId: the account's default, the AWS managed aws/ebs key.
    default_volume = encrypted_volume(ec2, size=30)
    ec2.create_snapshot(VolumeId=default_volume, TagSpecifications=pinned("snapshot", "snap-0000000000000000b"))
    managed_arn = kms.describe_key(KeyId="alias/aws/ebs")["KeyMetadata"]["Arn"]

    answer = ec2.describe_snapshots(
        Filters=[{"Name": "snapshot-id", "Values": [SNAPSHOT_ID, "snap-0000000000000000b", "snap-0000000000000dead"]}]
    )["Snapshots"]
    assert sorted((snapshot_fields(s) for s in answer), key=lambda s: s["SnapshotId"]) == [
        {
            "SnapshotId": "snap-0000000000000000b",
            "VolumeId": default_volume,
            "VolumeSize": 30,
            "State": "completed",
            "OwnerId": account,
            "Encrypted": True,
            "KmsKeyId": managed_arn,
        },
        {
            "SnapshotId": SNAPSHOT_ID,
            "VolumeId": cmk_volume,
            "VolumeSize": 20,
            "State": "completed",
            "OwnerId": account,
            "Encrypted": True,
            "KmsKeyId": arn,
        },
    ]
    only_unknown = [{"Name": "snapshot-id", "Values": ["snap-0000000000000dead"]}]
    assert ec2.describe_snapshots(Filters=only_unknown)["Snapshots"] == []
    # SnapshotIds, unlike the filter, refuses an unknown id, as EC2 does.
    with pytest.raises(ClientError) as err:
        ec2.describe_snapshots(SnapshotIds=[SNAPSHOT_ID, "snap-0000000000000dead"])
    assert_error(err, "InvalidSnapshot.NotFound", 400)


def test_registered_images_report_their_snapshots_encryption(aws, account):
    ec2, kms = aws("ec2"), aws("kms")
    kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))
    ec2.create_snapshot(VolumeId=encrypted_volume(ec2, KEY_ID), TagSpecifications=pinned("snapshot", SNAPSHOT_ID))
    plain_volume = ec2.create_volume(AvailabilityZone="us-west-2a", Size=8)["VolumeId"]
    plain_snapshot = ec2.create_snapshot(VolumeId=plain_volume)["SnapshotId"]

    golden = ec2.register_image(
        Name="team-golden-x86_64",
        Architecture="x86_64",
        RootDeviceName="/dev/xvda",
        BlockDeviceMappings=[
            {"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": SNAPSHOT_ID, "VolumeType": "gp3", "VolumeSize": 20}}
        ],
        TagSpecifications=pinned("image", "ami-0fedcba987654321a", team="platform"),
    )["ImageId"]
    [image] = ec2.describe_images(ImageIds=[golden])["Images"]
    fields = ("ImageId", "OwnerId", "RootDeviceName", "RootDeviceType", "BlockDeviceMappings")
    assert {k: image[k] for k in fields} == {
        "ImageId": "ami-0fedcba987654321a",
        "OwnerId": account,
        "RootDeviceName": "/dev/xvda",
        "RootDeviceType": "ebs",
        "BlockDeviceMappings": [
            {
                "DeviceName": "/dev/xvda",
                "Ebs": {
                    "SnapshotId": SNAPSHOT_ID,
                    "VolumeType": "gp3",
                    "VolumeSize": 20,
                    "DeleteOnTermination": True,
                    "Encrypted": True,  # the snapshot's
                },
            }
        ],
    }
    [by_filter] = ec2.describe_images(Filters=[{"Name": "image-id", "Values": [golden]}])["Images"]
    assert by_filter["BlockDeviceMappings"] == image["BlockDeviceMappings"]

    assert tags_of(image) == {"team": "platform"}

    # Defaults: the snapshot's size and gp2; DeleteOnTermination as given.
    other = register(ec2, "team-plain", "ami-0fedcba987654321b")
    ec2.register_image(
        Name="team-plain-2",
        RootDeviceName="/dev/xvda",
        BlockDeviceMappings=[
            {"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": plain_snapshot, "DeleteOnTermination": False}}
        ],
        TagSpecifications=pinned("image", "ami-0fedcba987654321c"),
    )
    [plain_image] = ec2.describe_images(ImageIds=["ami-0fedcba987654321c"])["Images"]
    assert plain_image["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {
                "SnapshotId": plain_snapshot,
                "VolumeType": "gp2",
                "VolumeSize": 8,
                "DeleteOnTermination": False,
                "Encrypted": False,
            },
        }
    ]
    # An image registered without mappings keeps moto's one 15 GiB volume and the snapshot moto
    # makes for it; the images with mappings got no such snapshot.
    [moto_image] = ec2.describe_images(ImageIds=[other])["Images"]
    assert moto_image["RootDeviceType"] == "standard"
    [moto_mapping] = moto_image["BlockDeviceMappings"]
    assert moto_mapping["Ebs"]["VolumeSize"] == 15
    own = ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]
    moto_snapshot = moto_mapping["Ebs"]["SnapshotId"]
    assert sorted(s["SnapshotId"] for s in own) == sorted([SNAPSHOT_ID, plain_snapshot, moto_snapshot])

    # A snapshot an image uses cannot be deleted; an unknown snapshot cannot be registered.
    with pytest.raises(ClientError) as err:
        ec2.delete_snapshot(SnapshotId=SNAPSHOT_ID)
    assert_error(err, "InvalidSnapshot.InUse", 400)
    unknown_snapshot = {"SnapshotId": "snap-0000000000000dead"}
    for ebs, code in ((unknown_snapshot, "InvalidSnapshot.NotFound"), ({"VolumeSize": 8}, "InvalidParameterValue")):
        with pytest.raises(ClientError) as err:
            ec2.register_image(
                Name="team-missing",
                RootDeviceName="/dev/xvda",
                BlockDeviceMappings=[{"DeviceName": "/dev/xvda", "Ebs": ebs}],
                TagSpecifications=pinned("image", "ami-0fedcba987654321d"),
            )
        assert_error(err, code, 400)
    assert image_ids(ec2, Owners=["self"]) == sorted([golden, other, "ami-0fedcba987654321c"])  # nothing half-made


# --- KMS: pinned key ids -----------------------------------------------------------------------

KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def kms_tags(**tags):
    return [{"TagKey": k, "TagValue": v} for k, v in tags.items()]


def key_policy(account):
    return doc(
        {
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "Allow Karpenter nodes",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{account}:role/KarpenterNodeRole"},
            "Action": ["kms:Decrypt", "kms:GenerateDataKey*", "kms:CreateGrant"],
            "Resource": "*",
        },
    )


def test_kms_pinned_key_id_policy_and_states(aws, account):
    kms = aws("kms")
    policy = key_policy(account)
    created = kms.create_key(
        Policy=policy, Description="ebs", Tags=kms_tags(**{"karpmoto:id": KEY_ID}, team="platform")
    )["KeyMetadata"]
    arn = f"arn:aws:kms:{REGION}:{account}:key/{KEY_ID}"
    assert (created["KeyId"], created["Arn"], created["AWSAccountId"]) == (KEY_ID, arn, account)
    kms.create_alias(AliasName="alias/karpenter-ebs", TargetKeyId=KEY_ID)

    for key_ref in (KEY_ID, arn, "alias/karpenter-ebs"):
        meta = kms.describe_key(KeyId=key_ref)["KeyMetadata"]
        assert {k: meta[k] for k in ("KeyId", "Arn", "KeyManager", "KeyState", "Enabled", "KeyUsage", "KeySpec")} == {
            "KeyId": KEY_ID,
            "Arn": arn,
            "KeyManager": "CUSTOMER",
            "KeyState": "Enabled",
            "Enabled": True,
            "KeyUsage": "ENCRYPT_DECRYPT",  # AWS's default; stock moto leaves it out
            "KeySpec": "SYMMETRIC_DEFAULT",
        }
    assert "DeletionDate" not in meta
    assert [k["KeyId"] for k in kms.list_keys()["Keys"]] == [KEY_ID]
    assert kms.list_resource_tags(KeyId=KEY_ID)["Tags"] == kms_tags(team="platform")  # the pin is not stored

    # The policy comes back byte for byte, with or without PolicyName (default "default").
    assert kms.get_key_policy(KeyId=KEY_ID, PolicyName="default")["Policy"] == policy
    assert kms.get_key_policy(KeyId=arn)["Policy"] == policy
    assert kms.list_key_policies(KeyId=KEY_ID)["PolicyNames"] == ["default"]

    # Without Policy, moto gives the key AWS's default policy (the account root may use it).
    plain = kms.create_key()["KeyMetadata"]["KeyId"]
    assert re.fullmatch(UUID, plain)
    [statement] = json.loads(kms.get_key_policy(KeyId=plain)["Policy"])["Statement"]
    assert (statement["Principal"], statement["Action"]) == ({"AWS": f"arn:aws:iam::{account}:root"}, "kms:*")

    def state(key_ref=KEY_ID):
        meta = kms.describe_key(KeyId=key_ref)["KeyMetadata"]
        return meta["KeyState"], meta["Enabled"]

    kms.disable_key(KeyId=KEY_ID)
    assert state() == ("Disabled", False)
    kms.enable_key(KeyId=arn)  # key ARNs work too (stock moto answers them with a 500)
    assert state() == ("Enabled", True)
    kms.disable_key(KeyId=arn)
    assert state() == ("Disabled", False)
    scheduled = kms.schedule_key_deletion(KeyId=plain, PendingWindowInDays=7)
    assert scheduled["DeletionDate"] is not None
    assert state(plain) == ("PendingDeletion", False)
    assert kms.describe_key(KeyId=plain)["KeyMetadata"]["DeletionDate"] == scheduled["DeletionDate"]


def test_kms_unknown_and_aws_managed_keys(aws, account):
    kms = aws("kms")
    for key_ref in (KEY_ID, f"arn:aws:kms:{REGION}:{account}:key/{KEY_ID}", "alias/not-there"):
        with pytest.raises(ClientError) as err:
            kms.describe_key(KeyId=key_ref)
        assert_error(err, "NotFoundException", 400)
    # AWS creates its managed keys on first use; moto does so when the alias is first named.
    managed = kms.describe_key(KeyId="alias/aws/ebs")["KeyMetadata"]
    assert (managed["KeyManager"], managed["KeyState"]) == ("AWS", "Enabled")
    assert kms.describe_key(KeyId=managed["KeyId"])["KeyMetadata"]["Arn"] == managed["Arn"]


def test_kms_bad_pins_are_refused(aws):
    kms = aws("kms")
    kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))
    refused = [(KEY_ID, "AlreadyExistsException"), ("key-1", "ValidationException"), (KEY_ID.upper(), "ValidationException")]
    for pin, code in refused:
        with pytest.raises(ClientError) as err:
            kms.create_key(Tags=kms_tags(**{"karpmoto:id": pin}))
        assert_error(err, code, 400)
    # A multi-Region key's id carries moto's "mrk-" prefix.
    with pytest.raises(ClientError) as err:
        kms.create_key(MultiRegion=True, Tags=kms_tags(**{"karpmoto:id": "2234abcd-12ab-34cd-56ef-1234567890ab"}))
    assert_error(err, "ValidationException", 400)
    mrk = "mrk-3234abcd-12ab-34cd-56ef-1234567890ab"
    assert kms.create_key(MultiRegion=True, Tags=kms_tags(**{"karpmoto:id": mrk}))["KeyMetadata"]["KeyId"] == mrk
    assert sorted(k["KeyId"] for k in kms.list_keys()["Keys"]) == sorted([KEY_ID, mrk])  # nothing half-made


# --- EC2: account EBS encryption defaults ------------------------------------------------------


def raw_bodies(client):
    """operation name -> the XML body the SDK parsed last for it."""
    bodies = {}
    client.meta.events.register(
        "before-parse",
        lambda operation_model, response_dict, **_: bodies.__setitem__(operation_model.name, response_dict["body"]),
    )
    return bodies


def assert_ec2_document(body, operation, **fields):
    """EC2's query-protocol shape: <OperationResponse xmlns=ec2 doc><requestId/><field/>…."""
    root = ET.fromstring(body)
    namespace, _, name = root.tag[1:].partition("}")
    assert (namespace.rstrip("/"), name) == ("http://ec2.amazonaws.com/doc/2016-11-15", f"{operation}Response")
    children = {child.tag.partition("}")[2]: child.text for child in root}
    assert children.pop("requestId")
    assert children == fields


def test_ebs_default_kms_key_id(aws, endpoint, account):
    ec2, kms = aws("ec2"), aws("kms")
    bodies = raw_bodies(ec2)
    assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"
    assert_ec2_document(bodies["GetEbsDefaultKmsKeyId"], "GetEbsDefaultKmsKeyId", kmsKeyId="alias/aws/ebs")

    arn = kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))["KeyMetadata"]["Arn"]
    kms.create_alias(AliasName="alias/karpenter-ebs", TargetKeyId=KEY_ID)
    assert ec2.modify_ebs_default_kms_key_id(KmsKeyId=arn)["KmsKeyId"] == arn
    assert_ec2_document(bodies["ModifyEbsDefaultKmsKeyId"], "ModifyEbsDefaultKmsKeyId", kmsKeyId=arn)
    assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == arn

    # A key of this account and region, named by id, alias or alias ARN, is reported by its ARN.
    alias_arn = f"arn:aws:kms:{REGION}:{account}:alias/karpenter-ebs"
    for key_ref in (KEY_ID, "alias/karpenter-ebs", alias_arn):
        assert ec2.modify_ebs_default_kms_key_id(KmsKeyId=key_ref)["KmsKeyId"] == arn
        assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == arn
    # Anything else is kept as given (AWS checks the key only when it encrypts a volume).
    for key_ref in (
        "arn:aws:kms:us-west-2:111122223333:key/0ea3fef3-80a7-4778-9d8c-1c0c6ea3fef3",  # another account's key
        "arn:aws:kms:us-west-2:111122223333:alias/shared",
        "alias/not-there",
    ):
        assert ec2.modify_ebs_default_kms_key_id(KmsKeyId=key_ref)["KmsKeyId"] == key_ref
        assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == key_ref

    # Per account and region.
    ec2.modify_ebs_default_kms_key_id(KmsKeyId=arn)
    assert client_for(endpoint, account, "ec2", "us-east-1").get_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"
    assert client_for(endpoint, str(next(ACCOUNTS)), "ec2").get_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"

    # An encrypted volume without KmsKeyId gets the default key.
    volume = ec2.create_volume(AvailabilityZone="us-west-2a", Size=20, Encrypted=True)
    assert volume["KmsKeyId"] == arn

    assert ec2.reset_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"
    assert_ec2_document(bodies["ResetEbsDefaultKmsKeyId"], "ResetEbsDefaultKmsKeyId", kmsKeyId="alias/aws/ebs")
    assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"

    with pytest.raises(ClientError) as err:
        ec2.get_ebs_default_kms_key_id(DryRun=True)
    assert_error(err, "DryRunOperation", 412)


def test_ebs_encryption_by_default(aws, endpoint, account):
    """Stock moto, per account and region, in EC2's document shape."""
    ec2 = aws("ec2")
    bodies = raw_bodies(ec2)
    assert ec2.get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False
    assert_ec2_document(
        bodies["GetEbsEncryptionByDefault"], "GetEbsEncryptionByDefault", ebsEncryptionByDefault="false"
    )
    assert ec2.enable_ebs_encryption_by_default()["EbsEncryptionByDefault"] is True
    assert_ec2_document(
        bodies["EnableEbsEncryptionByDefault"], "EnableEbsEncryptionByDefault", ebsEncryptionByDefault="true"
    )
    assert ec2.get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is True
    other_region = client_for(endpoint, account, "ec2", "eu-west-1")
    assert other_region.get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False
    assert ec2.disable_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False
    assert ec2.get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False


def test_moto_api_reset_clears_ebs_defaults(tmp_path, account):
    with running_karpmoto(tmp_path) as url:
        ec2 = client_for(url, account, "ec2")
        ec2.modify_ebs_default_kms_key_id(KmsKeyId="alias/karpenter-ebs")
        ec2.enable_ebs_encryption_by_default()
        urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).close()
        assert ec2.get_ebs_default_kms_key_id()["KmsKeyId"] == "alias/aws/ebs"
        assert ec2.get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False


def test_denied_actions_answer_in_each_protocol(tmp_path, account):
    """KARPMOTO_DENY answers with the error document each SDK parses: EC2's own
    UnauthorizedOperation, AccessDenied for IAM, AccessDeniedException for JSON services."""
    deny = ",".join(
        [
            "ec2:DescribeSecurityGroups",
            "iam:GetInstanceProfile",
            "ssm:GetParameters",
            "kms:DescribeKey",
            "ec2:GetEbsDefaultKmsKeyId",
        ]
    )
    with running_karpmoto(tmp_path, KARPMOTO_DENY=deny) as url:
        cases = [
            ("ec2", lambda c: c.describe_security_groups(), "UnauthorizedOperation"),
            ("iam", lambda c: c.get_instance_profile(InstanceProfileName="x"), "AccessDenied"),
            ("ssm", lambda c: c.get_parameters(Names=["/x"]), "AccessDeniedException"),
            ("kms", lambda c: c.describe_key(KeyId=KEY_ID), "AccessDeniedException"),
            ("ec2", lambda c: c.get_ebs_default_kms_key_id(), "UnauthorizedOperation"),
        ]
        for service, call, code in cases:
            with pytest.raises(ClientError) as err:
                call(client_for(url, account, service))
            assert err.value.response["Error"]["Code"] == code
            assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        # Everything else is still served.
        assert client_for(url, account, "ec2").describe_subnets()["Subnets"] is not None
        kms = client_for(url, account, "kms")
        assert kms.create_key(Tags=kms_tags(**{"karpmoto:id": KEY_ID}))["KeyMetadata"]["KeyId"] == KEY_ID
        assert client_for(url, account, "ec2").get_ebs_encryption_by_default()["EbsEncryptionByDefault"] is False


def test_denials_switch_at_run_time(tmp_path, account):
    """POST /karpmoto-api/deny replaces the denied actions: a test seeds once and takes one
    permission away per run; [] serves everything again; a bad body is refused."""
    import urllib.error
    import urllib.request

    def deny(url, body):
        req = urllib.request.Request(url + "/karpmoto-api/deny", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        return urllib.request.urlopen(req).status

    with running_karpmoto(tmp_path) as url:
        ec2 = client_for(url, account, "ec2")
        assert ec2.describe_security_groups()["SecurityGroups"] is not None
        assert deny(url, '["ec2:DescribeSecurityGroups"]') == 200
        with pytest.raises(ClientError) as err:
            ec2.describe_security_groups()
        assert err.value.response["Error"]["Code"] == "UnauthorizedOperation"
        assert ec2.describe_subnets()["Subnets"] is not None
        # An instance-type answer kept from before is not served once the action is denied.
        assert ec2.describe_instance_type_offerings()["InstanceTypeOfferings"] is not None
        assert deny(url, '["ec2:DescribeInstanceTypeOfferings"]') == 200
        with pytest.raises(ClientError):
            ec2.describe_instance_type_offerings()
        assert deny(url, "[]") == 200
        assert ec2.describe_security_groups()["SecurityGroups"] is not None
        with pytest.raises(urllib.error.HTTPError) as bad:
            deny(url, '{"not": "a list"}')
        assert bad.value.code == 400


# --- EKS: Fargate profiles ---------------------------------------------------------------------


def test_eks_fargate_profiles(aws, account):
    eks = aws("eks")
    make_cluster(eks)
    role = f"arn:aws:iam::{account}:role/AmazonEKSFargatePodExecutionRole"
    selectors = [{"namespace": "karpenter", "labels": {"app.kubernetes.io/name": "karpenter"}}, {"namespace": "kube-system"}]
    created = eks.create_fargate_profile(
        clusterName="demo",
        fargateProfileName="karpenter",
        podExecutionRoleArn=role,
        subnets=["subnet-0a1b2c3d", "subnet-0a1b2c3e"],
        selectors=selectors,
    )["fargateProfile"]
    assert created["status"] == "ACTIVE"  # AWS passes through CREATING first
    assert created["fargateProfileArn"].startswith(f"arn:aws:eks:{REGION}:{account}:fargateprofile/demo/karpenter/")
    for i in range(3):
        eks.create_fargate_profile(
            clusterName="demo", fargateProfileName=f"fp{i}", podExecutionRoleArn=role, selectors=[{"namespace": f"ns{i}"}]
        )

    names, token = [], None
    while True:
        page = eks.list_fargate_profiles(clusterName="demo", maxResults=2, **({"nextToken": token} if token else {}))
        names += page["fargateProfileNames"]
        token = page.get("nextToken")
        if not token:
            break
    assert sorted(names) == ["fp0", "fp1", "fp2", "karpenter"]

    described = eks.describe_fargate_profile(clusterName="demo", fargateProfileName="karpenter")["fargateProfile"]
    fields = ("fargateProfileName", "clusterName", "status", "podExecutionRoleArn", "subnets", "selectors")
    assert {k: described[k] for k in fields} == {
        "fargateProfileName": "karpenter",
        "clusterName": "demo",
        "status": "ACTIVE",
        "podExecutionRoleArn": role,
        "subnets": ["subnet-0a1b2c3d", "subnet-0a1b2c3e"],
        "selectors": selectors,  # a selector without labels comes back without the key
    }

    with pytest.raises(ClientError) as err:
        eks.describe_fargate_profile(clusterName="demo", fargateProfileName="missing")
    assert_error(err, "ResourceNotFoundException", 404)
    # Stock moto answered these two with a 500.
    for call in (eks.list_fargate_profiles, eks.list_nodegroups):
        with pytest.raises(ClientError) as err:
            call(clusterName="missing")
        assert_error(err, "ResourceNotFoundException", 404)
    with pytest.raises(ClientError) as err:
        eks.create_fargate_profile(
            clusterName="demo", fargateProfileName="fp0", podExecutionRoleArn=role, selectors=[{"namespace": "x"}]
        )
    assert_error(err, "ResourceInUseException", 409)


# --- SQS ---------------------------------------------------------------------------------------


def queue_policy(account, name="demo"):
    return doc(
        {
            "Sid": "EC2InterruptionPolicy",
            "Effect": "Allow",
            "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
            "Action": "sqs:SendMessage",
            "Resource": f"arn:aws:sqs:{REGION}:{account}:{name}",
        }
    )


def test_sqs_queue_attributes_over_json(aws, account):
    sqs = aws("sqs")
    assert sqs.meta.service_model.protocol == "json"  # as the Rust SDK: AmazonSQS.* targets
    policy = queue_policy(account)
    url = sqs.create_queue(
        QueueName="demo",
        Attributes={
            "Policy": policy,
            "KmsMasterKeyId": "alias/karpenter-sqs",
            "SqsManagedSseEnabled": "false",
            "MessageRetentionPeriod": "300",
        },
    )["QueueUrl"]
    assert url.endswith(f"/{account}/demo")
    assert sqs.get_queue_url(QueueName="demo")["QueueUrl"] == url

    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["QueueArn"] == f"arn:aws:sqs:{REGION}:{account}:demo"
    assert attributes["Policy"] == policy  # byte for byte
    assert attributes["KmsMasterKeyId"] == "alias/karpenter-sqs"
    assert attributes["SqsManagedSseEnabled"] == "false"
    assert attributes["MessageRetentionPeriod"] == "300"
    assert {"CreatedTimestamp", "LastModifiedTimestamp", "ApproximateNumberOfMessages"} <= set(attributes)

    # New queues get SSE-SQS by default, as in AWS; no Policy or KMS key is reported then.
    plain = sqs.create_queue(QueueName="plain")["QueueUrl"]
    defaults = sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])["Attributes"]
    assert defaults["SqsManagedSseEnabled"] == "true"
    assert "Policy" not in defaults and "KmsMasterKeyId" not in defaults

    bodies = raw_bodies(sqs)
    with pytest.raises(ClientError) as err:
        sqs.get_queue_url(QueueName="missing")
    assert_error(err, "AWS.SimpleQueueService.NonExistentQueue", 400)
    assert err.value.response["Error"]["QueryErrorCode"] == "QueueDoesNotExist"
    headers = err.value.response["ResponseMetadata"]["HTTPHeaders"]
    # The query-compatible header is what the Rust SDK takes the code from.
    assert headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"
    assert headers["content-type"] == "application/x-amz-json-1.0"
    assert json.loads(bodies["GetQueueUrl"])["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"


# What tests/support/mod.rs passes back to CreateQueue from a recorded GetQueueAttributes(All).
SETTABLE_QUEUE_ATTRIBUTES = {
    "DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "Policy", "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout", "RedrivePolicy", "RedriveAllowPolicy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled", "FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit",
}  # fmt: skip


def test_sqs_queue_seeded_from_recorded_attributes(aws, account):
    """A queue as GetQueueAttributes(All) records it in AWS: its settable attributes are accepted
    by CreateQueue and come back unchanged, read-only ones are reported afresh."""
    sqs = aws("sqs")
    recorded = [
        {  # Karpenter's CloudFormation queue: SSE-SQS, five-minute retention
            "QueueArn": f"arn:aws:sqs:{REGION}:{account}:demo",
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
            "ApproximateNumberOfMessagesDelayed": "0",
            "CreatedTimestamp": "1752582896",
            "LastModifiedTimestamp": "1752582896",
            "VisibilityTimeout": "30",
            "MaximumMessageSize": "262144",
            "MessageRetentionPeriod": "300",
            "DelaySeconds": "0",
            "Policy": queue_policy(account),
            "ReceiveMessageWaitTimeSeconds": "0",
            "SqsManagedSseEnabled": "true",
        },
        {  # SSE-KMS with a customer key
            "MessageRetentionPeriod": "300",
            "KmsMasterKeyId": f"arn:aws:kms:{REGION}:{account}:key/{KEY_ID}",
            "KmsDataKeyReusePeriodSeconds": "300",
            "SqsManagedSseEnabled": "false",
            "MaximumMessageSize": "1048576",
        },
    ]
    for i, attributes in enumerate(recorded):
        settable = {k: v for k, v in attributes.items() if k in SETTABLE_QUEUE_ATTRIBUTES}
        url = sqs.create_queue(QueueName=f"seeded{i}", Attributes=settable)["QueueUrl"]
        answered = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert {k: answered.get(k) for k in settable} == settable
        assert answered["QueueArn"] == f"arn:aws:sqs:{REGION}:{account}:seeded{i}"
    # A FIFO queue needs FifoQueue=true at creation (the seeding adds it for *.fifo names).
    url = sqs.create_queue(QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["FifoQueue"])["Attributes"] == {"FifoQueue": "true"}


def sqs_query(endpoint, account, **params):
    """One SQS call over the old query protocol (form-encoded Action=...), as older SDKs speak it."""
    from urllib.parse import urlencode

    request = urllib.request.Request(
        endpoint + "/",
        data=urlencode(params).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "x-moto-account-id": account,
            "Authorization": f"AWS4-HMAC-SHA256 Credential=testing/20260101/{REGION}/sqs/aws4_request, SignedHeaders=host, Signature=0",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_sqs_query_protocol_still_works(aws, endpoint, account):
    aws("sqs").create_queue(QueueName="demo")
    status, body = sqs_query(endpoint, account, Action="GetQueueUrl", QueueName="demo")
    assert status == 200 and f"/{account}/demo</QueueUrl>" in body
    status, body = sqs_query(endpoint, account, Action="GetQueueUrl", QueueName="missing")
    assert status == 400 and "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>" in body


def test_sqs_list_queues_pages(aws, account):
    sqs = aws("sqs")
    assert sqs.list_queues().get("QueueUrls", []) == []
    names = [f"q{i:02d}" for i in range(7)]
    for name in names:
        sqs.create_queue(QueueName=name)
    # Without MaxResults: everything (up to 1,000) and no NextToken, as AWS does.
    everything = sqs.list_queues()
    assert "NextToken" not in everything
    assert sorted(u.rsplit("/", 1)[1] for u in everything["QueueUrls"]) == names
    pages = list(sqs.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": 3}))
    assert [len(p["QueueUrls"]) for p in pages] == [3, 3, 1]
    assert sorted(u.rsplit("/", 1)[1] for p in pages for u in p["QueueUrls"]) == names
    assert "NextToken" not in pages[-1]
    assert [u.rsplit("/", 1)[1] for u in sqs.list_queues(QueueNamePrefix="q0")["QueueUrls"]] == names


# --- EventBridge -------------------------------------------------------------------------------

SPOT_PATTERN = '{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning"]}'


def test_eventbridge_rules_by_target(aws, account):
    events = aws("events")
    queue = f"arn:aws:sqs:{REGION}:{account}:demo"
    rebalance = json.dumps({"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]})
    arn = events.put_rule(Name="spot", EventPattern=SPOT_PATTERN, State="ENABLED")["RuleArn"]
    assert arn == f"arn:aws:events:{REGION}:{account}:rule/spot"
    events.put_rule(Name="rebalance", EventPattern=rebalance, State="DISABLED")
    events.put_rule(Name="health", EventPattern='{"source":["aws.health"]}')  # State defaults to ENABLED
    events.put_rule(Name="elsewhere", EventPattern='{"source":["aws.health"]}')
    put = events.put_targets(Rule="spot", Targets=[{"Id": "KarpenterInterruptionQueueTarget", "Arn": queue}])
    assert put["FailedEntryCount"] == 0
    events.put_targets(Rule="rebalance", Targets=[{"Id": "1", "Arn": queue}])
    events.put_targets(Rule="health", Targets=[{"Id": "1", "Arn": queue}, {"Id": "2", "Arn": queue + "-other"}])
    events.put_targets(Rule="elsewhere", Targets=[{"Id": "1", "Arn": queue + "-other"}])

    assert sorted(events.list_rule_names_by_target(TargetArn=queue)["RuleNames"]) == ["health", "rebalance", "spot"]
    names, token = [], None
    while True:
        page = events.list_rule_names_by_target(TargetArn=queue, Limit=1, **({"NextToken": token} if token else {}))
        names += page["RuleNames"]
        token = page.get("NextToken")
        if not token:
            break
    assert sorted(names) == ["health", "rebalance", "spot"]
    assert events.list_rule_names_by_target(TargetArn=f"arn:aws:sqs:{REGION}:{account}:none")["RuleNames"] == []

    rule = events.describe_rule(Name="spot")
    assert {k: rule[k] for k in ("Name", "Arn", "State", "EventPattern", "EventBusName")} == {
        "Name": "spot",
        "Arn": arn,
        "State": "ENABLED",
        "EventPattern": SPOT_PATTERN,  # as given, not re-serialized
        "EventBusName": "default",
    }
    assert rule["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/x-amz-json-1.1"
    assert events.describe_rule(Name="rebalance")["State"] == "DISABLED"
    assert events.describe_rule(Name="health")["State"] == "ENABLED"
    assert events.list_targets_by_rule(Rule="spot")["Targets"] == [{"Id": "KarpenterInterruptionQueueTarget", "Arn": queue}]
    assert [t["Arn"] for t in events.list_targets_by_rule(Rule="health")["Targets"]] == [queue, queue + "-other"]

    for call in (lambda: events.describe_rule(Name="missing"), lambda: events.list_targets_by_rule(Rule="missing")):
        with pytest.raises(ClientError) as err:
            call()
        assert_error(err, "ResourceNotFoundException", 400)


# --- EC2: instance types and offerings ---------------------------------------------------------

# The general-purpose types karpdoctor's fixtures use: moto 5.2.5 offers every one of them in
# all four us-west-2 zones. family -> (architecture, MiB per vCPU)
FAMILIES = {
    "c5": ("x86_64", 2048), "c6i": ("x86_64", 2048), "c6g": ("arm64", 2048), "c7g": ("arm64", 2048),
    "m5": ("x86_64", 4096), "m6i": ("x86_64", 4096), "m6g": ("arm64", 4096), "m7g": ("arm64", 4096),
    "r5": ("x86_64", 8192), "r6i": ("x86_64", 8192), "r6g": ("arm64", 8192),
    "t3": ("x86_64", 4096), "t4g": ("arm64", 4096),
}  # fmt: skip
SIZES = {"large": 2, "xlarge": 4, "2xlarge": 8}  # size -> vCPUs


def all_pages(client, operation, key, **kwargs):
    return [item for page in client.get_paginator(operation).paginate(**kwargs) for item in page[key]]


def test_instance_types_of_common_families(aws):
    ec2 = aws("ec2")
    names = [f"{family}.{size}" for family in FAMILIES for size in SIZES]
    described = {t["InstanceType"]: t for t in ec2.describe_instance_types(InstanceTypes=names)["InstanceTypes"]}
    assert sorted(described) == sorted(names)
    for name, t in described.items():
        family, size = name.split(".")
        arch, mib_per_vcpu = FAMILIES[family]
        vcpus = SIZES[size]
        assert t["ProcessorInfo"]["SupportedArchitectures"] == [arch], name
        assert t["VCpuInfo"]["DefaultVCpus"] == vcpus, name
        assert t["MemoryInfo"]["SizeInMiB"] == vcpus * mib_per_vcpu, name
        assert t["SupportedUsageClasses"] == ["on-demand", "spot"], name
        assert (t["Hypervisor"], t["BareMetal"], "GpuInfo" in t) == ("nitro", False, False), name

    offerings = all_pages(
        ec2,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": names}],
    )
    zones = {}
    for o in offerings:
        assert o["LocationType"] == "availability-zone"
        zones.setdefault(o["InstanceType"], set()).add(o["Location"])
    assert zones == {name: {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"} for name in names}

    # Other kinds keep what AWS reports for them: GPUs, bare metal without a hypervisor.
    gpu, metal = ec2.describe_instance_types(InstanceTypes=["g5.xlarge", "m5.metal"])["InstanceTypes"]
    assert gpu["GpuInfo"]["Gpus"][0]["Count"] == 1 and gpu["GpuInfo"]["Gpus"][0]["Manufacturer"] == "NVIDIA"
    assert metal["BareMetal"] is True and "Hypervisor" not in metal


def test_instance_types_are_the_regions_and_paged(aws, endpoint, account):
    ec2 = aws("ec2")
    region_types = {o["InstanceType"] for o in all_pages(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings")}
    assert len(region_types) > 1000

    first = ec2.describe_instance_types()
    assert len(first["InstanceTypes"]) == 100 and first["NextToken"]  # AWS pages even without MaxResults
    small = ec2.describe_instance_types(MaxResults=5)
    assert len(small["InstanceTypes"]) == 5
    assert [t["InstanceType"] for t in small["InstanceTypes"]] == [t["InstanceType"] for t in first["InstanceTypes"][:5]]
    following = ec2.describe_instance_types(MaxResults=5, NextToken=small["NextToken"])
    assert following["InstanceTypes"][0]["InstanceType"] == first["InstanceTypes"][5]["InstanceType"]

    every = all_pages(ec2, "describe_instance_types", "InstanceTypes")
    assert sorted(t["InstanceType"] for t in every) == sorted(region_types)  # each exactly once
    # Filters apply before paging, so a filtered call is usually one page.
    arm = all_pages(
        ec2, "describe_instance_types", "InstanceTypes", Filters=[{"Name": "processor-info.supported-architecture", "Values": ["arm64"]}]
    )
    assert arm and all(t["ProcessorInfo"]["SupportedArchitectures"] == ["arm64"] for t in arm)

    # trn2 is in moto's data but not offered in us-west-2: AWS leaves it out and refuses the name.
    assert "trn2.48xlarge" not in region_types
    with pytest.raises(ClientError) as err:
        ec2.describe_instance_types(InstanceTypes=["m5.large", "trn2.48xlarge"])
    assert_error(err, "InvalidInstanceType", 400)
    assert "trn2.48xlarge" in err.value.response["Error"]["Message"]
    us_east_2 = client_for(endpoint, account, "ec2", "us-east-2")
    assert "trn2.48xlarge" in {t["InstanceType"] for t in all_pages(us_east_2, "describe_instance_types", "InstanceTypes")}

    # boto3 refuses MaxResults below 5 itself; the Rust SDK sends any value.
    with pytest.raises(ClientError) as err:
        ec2.describe_instance_types(MaxResults=101)
    assert_error(err, "InvalidParameterValue", 400)
    with pytest.raises(ClientError) as err:
        ec2.describe_instance_types(NextToken="not-a-token")
    assert_error(err, "InvalidPaginationToken", 400)


def test_instance_type_name_wildcards_slice_the_list_and_answers_repeat(aws, endpoint, account):
    """karpdoctor lists instance types in disjoint `instance-type` wildcard slices, side by side;
    the emulator keeps its answer to each such request, so a repeat is the same answer."""
    ec2 = aws("ec2")
    every = sorted(t["InstanceType"] for t in all_pages(ec2, "describe_instance_types", "InstanceTypes"))
    m8 = all_pages(ec2, "describe_instance_types", "InstanceTypes", Filters=[{"Name": "instance-type", "Values": ["m8*"]}])
    rest = all_pages(
        ec2, "describe_instance_types", "InstanceTypes",
        Filters=[{"Name": "instance-type", "Values": [f"{c}*" for c in "abcdefghijklnopqrstuvwxyz0123456789"] + ["m0*", "m1*", "m2*", "m3*", "m4*", "m5*", "m6*", "m7*", "m9*"] + [f"m{c}*" for c in "abcdefghijklmnopqrstuvwxyz-."]}],
    )
    assert m8 and all(t["InstanceType"].startswith("m8") for t in m8)
    assert sorted(t["InstanceType"] for t in m8 + rest) == every

    again = ec2.describe_instance_types(MaxResults=100, Filters=[{"Name": "instance-type", "Values": ["m8*"]}])
    once_more = ec2.describe_instance_types(MaxResults=100, Filters=[{"Name": "instance-type", "Values": ["m8*"]}])
    assert again["InstanceTypes"] == once_more["InstanceTypes"] and again.get("NextToken") == once_more.get("NextToken")
    # Another region's answer is its own.
    us_east_2 = client_for(endpoint, account, "ec2", "us-east-2")
    assert "trn2.48xlarge" in {t["InstanceType"] for t in all_pages(us_east_2, "describe_instance_types", "InstanceTypes")}
    assert "trn2.48xlarge" not in every


def test_instance_type_offerings_by_zone_are_paged(aws):
    ec2 = aws("ec2")
    first = ec2.describe_instance_type_offerings(LocationType="availability-zone")
    assert len(first["InstanceTypeOfferings"]) == 1000 and first["NextToken"]
    offerings = all_pages(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings", LocationType="availability-zone")
    assert {o["Location"] for o in offerings} == {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}
    assert len({(o["InstanceType"], o["Location"]) for o in offerings}) == len(offerings)
    in_2a = all_pages(
        ec2,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "location", "Values": ["us-west-2a"]}],
        PaginationConfig={"PageSize": 500},
    )
    assert in_2a and {o["Location"] for o in in_2a} == {"us-west-2a"}
    assert len(in_2a) == sum(o["Location"] == "us-west-2a" for o in offerings)


def test_denied_actions_for_queue_rule_fargate_and_instance_type_facts(tmp_path, account):
    """KARPMOTO_DENY for the calls behind karpdoctor's SQS, EventBridge, Fargate and instance-type
    facts, each in its protocol's error shape."""
    deny = [
        "sqs:GetQueueUrl",
        "sqs:GetQueueAttributes",
        "sqs:ListQueues",
        "events:ListRuleNamesByTarget",
        "events:DescribeRule",
        "events:ListTargetsByRule",
        "eks:ListFargateProfiles",
        "eks:DescribeFargateProfile",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeInstanceTypeOfferings",
    ]
    with running_karpmoto(tmp_path, KARPMOTO_DENY=",".join(deny)) as url:
        sqs, events, eks, ec2 = (client_for(url, account, s) for s in ("sqs", "events", "eks", "ec2"))
        # The calls that seed are not denied.
        queue_url = sqs.create_queue(QueueName="demo")["QueueUrl"]
        queue_arn = f"arn:aws:sqs:{REGION}:{account}:demo"
        events.put_rule(Name="spot", EventPattern=SPOT_PATTERN)
        events.put_targets(Rule="spot", Targets=[{"Id": "1", "Arn": queue_arn}])
        make_cluster(eks)
        eks.create_fargate_profile(
            clusterName="demo", fargateProfileName="fp", podExecutionRoleArn=f"arn:aws:iam::{account}:role/fp", selectors=[{"namespace": "karpenter"}]
        )

        cases = [
            # SQS JSON: the query-compatible code AccessDenied, from x-amzn-query-error.
            (lambda: sqs.get_queue_url(QueueName="demo"), "AccessDenied"),
            (lambda: sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"]), "AccessDenied"),
            (lambda: sqs.list_queues(), "AccessDenied"),
            (lambda: events.list_rule_names_by_target(TargetArn=queue_arn), "AccessDeniedException"),
            (lambda: events.describe_rule(Name="spot"), "AccessDeniedException"),
            (lambda: events.list_targets_by_rule(Rule="spot"), "AccessDeniedException"),
            (lambda: eks.list_fargate_profiles(clusterName="demo"), "AccessDeniedException"),
            (lambda: eks.describe_fargate_profile(clusterName="demo", fargateProfileName="fp"), "AccessDeniedException"),
            (lambda: ec2.describe_instance_types(), "UnauthorizedOperation"),
            (lambda: ec2.describe_instance_type_offerings(LocationType="availability-zone"), "UnauthorizedOperation"),
        ]
        for call, code in cases:
            with pytest.raises(ClientError) as err:
                call()
            assert_error(err, code, 403)
        with pytest.raises(ClientError) as err:
            sqs.get_queue_url(QueueName="demo")
        headers = err.value.response["ResponseMetadata"]["HTTPHeaders"]
        assert headers["x-amzn-query-error"] == "AccessDenied;Sender"
        assert headers["content-type"] == "application/x-amz-json-1.0"
        # Old SDKs speak SQS's query protocol and get its XML error document.
        status, body = sqs_query(url, account, Action="GetQueueUrl", QueueName="demo")
        assert status == 403 and "<Code>AccessDenied</Code>" in body and "<Type>Sender</Type>" in body

        # Everything else is still served.
        assert sqs.send_message(QueueUrl=queue_url, MessageBody="{}")["MessageId"]
        assert events.list_rules()["Rules"][0]["Name"] == "spot"
        assert eks.describe_cluster(name="demo")["cluster"]["name"] == "demo"
        assert ec2.describe_availability_zones()["AvailabilityZones"]


def test_reused_reads_repeat_the_first_answer_until_a_write(tmp_path, account):
    """KARPMOTO_REUSE_READS=1 (the latency benchmark's emulator) answers a repeated read with
    its first answer, and forgets every answer at the first write. KARPMOTO_PROFILE lists the
    requests moto itself answered, so it shows which were reused."""
    profile = tmp_path / "profile.tsv"
    with running_karpmoto(tmp_path, KARPMOTO_REUSE_READS="1", KARPMOTO_PROFILE=str(profile)) as url:
        sts, ec2 = client_for(url, account, "sts"), client_for(url, account, "ec2")
        answered = lambda: [tuple(line.split("\t")[:2]) for line in profile.read_text().splitlines()]  # noqa: E731

        me = sts.get_caller_identity()
        assert sts.get_caller_identity()["Arn"] == me["Arn"]
        assert answered() == [("sts", "GetCallerIdentity")], "the second call was answered from the first"

        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        listed = lambda: sorted(s["SubnetId"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"])  # noqa: E731
        assert listed() == []
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
        assert listed() == [subnet], "a write forgets the answers read before it"
        assert listed() == [subnet]
        # Another account asks something else, even with the same bytes.
        other = client_for(url, str(next(ACCOUNTS)), "ec2")
        assert other.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"] == []
        assert answered() == [
            ("sts", "GetCallerIdentity"),
            ("ec2", "CreateVpc"),
            ("ec2", "DescribeSubnets"),
            ("ec2", "CreateSubnet"),
            ("ec2", "DescribeSubnets"),
            ("ec2", "DescribeSubnets"),
        ]
        assert all(float(line.split("\t")[2]) >= 0 for line in profile.read_text().splitlines())


def test_without_reuse_every_read_is_answered(tmp_path, account):
    profile = tmp_path / "profile.tsv"
    with running_karpmoto(tmp_path, KARPMOTO_PROFILE=str(profile)) as url:
        sts = client_for(url, account, "sts")
        sts.get_caller_identity()
        sts.get_caller_identity()
        assert [line.split("\t")[1] for line in profile.read_text().splitlines()] == ["GetCallerIdentity"] * 2


def _post(endpoint, path, body):
    request = urllib.request.Request(endpoint + path, data=body, method="POST")
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200


def test_a_fixture_catalogue_limits_the_instance_types_until_reset(aws, endpoint):
    ec2 = aws("ec2")
    try:
        _post(endpoint, "/karpmoto-api/instance-types", json.dumps(["m5.large", "c6g.xlarge", "no.such"]).encode())
        types = {t["InstanceType"] for t in all_pages(ec2, "describe_instance_types", "InstanceTypes")}
        assert types == {"m5.large", "c6g.xlarge"}
        offered = all_pages(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings", LocationType="availability-zone")
        assert {o["InstanceType"] for o in offered} == {"m5.large", "c6g.xlarge"}
        assert len(offered) == 8  # both types, in each of the region's four zones
        # A type outside the catalogue is one the region does not offer.
        with pytest.raises(ClientError) as err:
            ec2.describe_instance_types(InstanceTypes=["r5.large"])
        assert_error(err, "InvalidInstanceType", 400)
    finally:
        _post(endpoint, "/moto-api/reset", b"")
    assert len({o["InstanceType"] for o in all_pages(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings")}) > 1000


def test_kms_list_grants_by_grantee(aws, account):
    kms = aws("kms")
    key = kms.create_key(Description="grants")["KeyMetadata"]["Arn"]
    spot = f"arn:aws:iam::{account}:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"
    other = f"arn:aws:iam::{account}:role/KarpenterController-demo"
    kms.create_grant(KeyId=key, GranteePrincipal=spot, Operations=["Decrypt", "CreateGrant", "DescribeKey"])
    kms.create_grant(KeyId=key, GranteePrincipal=other, Operations=["Encrypt"])
    grants = kms.list_grants(KeyId=key, GranteePrincipal=spot)["Grants"]
    assert [g["GranteePrincipal"] for g in grants] == [spot]
    assert sorted(grants[0]["Operations"]) == ["CreateGrant", "Decrypt", "DescribeKey"]
    assert len(kms.list_grants(KeyId=key)["Grants"]) == 2


def test_instances_keep_a_pinned_id_and_the_reason_ec2_ended_them(aws):
    ec2 = aws("ec2")

    def launch(instance_id, reason=None):
        tags = [{"Key": "karpmoto:id", "Value": instance_id}]
        if reason:
            tags.append({"Key": "karpmoto:state-reason", "Value": reason})
        ec2.run_instances(
            ImageId="ami-0a1b2c3d4e5f60718",
            MinCount=1,
            MaxCount=1,
            InstanceType="m5.large",
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )

    launch("i-0a1b2c3d4e5f60718", "Server.InternalError|Client.InternalError: Client error on launch")
    launch("i-0f1e2d3c4b5a69788")
    ec2.terminate_instances(InstanceIds=["i-0a1b2c3d4e5f60718"])
    found = {
        i["InstanceId"]: i
        for r in ec2.describe_instances(
            Filters=[{"Name": "instance-id", "Values": ["i-0a1b2c3d4e5f60718", "i-0f1e2d3c4b5a69788", "i-0000000000000dead"]}]
        )["Reservations"]
        for i in r["Instances"]
    }
    assert set(found) == {"i-0a1b2c3d4e5f60718", "i-0f1e2d3c4b5a69788"}  # an unknown id is left out, not an error
    ended = found["i-0a1b2c3d4e5f60718"]
    assert ended["State"]["Name"] == "terminated"
    assert ended["StateReason"] == {"Code": "Server.InternalError", "Message": "Client.InternalError: Client error on launch"}
    assert found["i-0f1e2d3c4b5a69788"]["State"]["Name"] == "running"
    assert not any(t["Key"].startswith("karpmoto:") for t in ended.get("Tags", []))
    with pytest.raises(ClientError) as err:
        launch("i-0a1b2c3d4e5f60718")
    assert_error(err, "InvalidParameterValue", 400)


def test_describe_cluster_names_the_vpc_of_its_subnets(aws):
    ec2, eks = aws("ec2"), aws("eks")
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.40.0.0/20", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    eks.create_cluster(name="vpc-named", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": [subnet]})
    config = eks.describe_cluster(name="vpc-named")["cluster"]["resourcesVpcConfig"]
    assert config["vpcId"] == vpc
    assert config["subnetIds"] == [subnet]


def test_a_cluster_seeded_before_its_subnets_still_names_their_vpc(aws):
    ec2, eks = aws("ec2"), aws("eks")
    eks.create_cluster(name="seeded-first", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": ["subnet-0b1c2d3e4f5a69788"]})
    vpc = ec2.create_vpc(CidrBlock="10.41.0.0/16")["Vpc"]["VpcId"]
    ec2.create_subnet(
        VpcId=vpc,
        CidrBlock="10.41.0.0/20",
        AvailabilityZone="us-west-2a",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [{"Key": "karpmoto:id", "Value": "subnet-0b1c2d3e4f5a69788"}]}],
    )
    assert eks.describe_cluster(name="seeded-first")["cluster"]["resourcesVpcConfig"]["vpcId"] == vpc


def test_console_output_is_seeded_per_instance_and_cleared_by_reset(aws, endpoint, account):
    ec2 = aws("ec2")
    tags = [{"ResourceType": "instance", "Tags": [{"Key": "karpmoto:id", "Value": "i-0c0ffee0c0ffee001"}]}]
    ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=1, MaxCount=1, TagSpecifications=tags)
    instance = "i-0c0ffee0c0ffee001"

    def seed(body, account=account):
        request = urllib.request.Request(
            endpoint + "/karpmoto-api/console-output",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"x-moto-account-id": account},
        )
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 200

    # Nothing written yet: no Output element, not moto's sample boot log.
    answer = ec2.get_console_output(InstanceId=instance)
    assert answer["InstanceId"] == instance and "Timestamp" in answer
    assert "Output" not in answer
    text = "[  OK  ] Started kubelet.\nnodeadm: error: ünknown cluster\n"
    seed({"instanceId": instance, "output": text, "region": REGION})
    seed({"instanceId": instance, "output": "elsewhere"}, account=str(next(ACCOUNTS)))  # another account
    seed({"instanceId": instance, "output": "elsewhere"})  # us-east-1 of this account
    # Output is base64 on the wire, as in AWS; botocore decodes it for boto3 callers.
    wire = {}
    ec2.meta.events.register("after-call.ec2.GetConsoleOutput", lambda http_response, **_: wire.update(body=http_response.text))
    assert ec2.get_console_output(InstanceId=instance, Latest=True)["Output"] == text
    assert base64.b64decode(re.search(r"<output>([^<]*)</output>", wire["body"]).group(1)).decode() == text
    with pytest.raises(ClientError) as err:
        ec2.get_console_output(InstanceId="i-0000000000000dead")
    assert_error(err, "InvalidInstanceID.NotFound", 400)
    with pytest.raises(urllib.error.HTTPError) as bad:
        seed({"instanceId": instance})
    assert bad.value.code == 400
    _post(endpoint, "/moto-api/reset", b"")
    ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=1, MaxCount=1, TagSpecifications=tags)
    assert "Output" not in ec2.get_console_output(InstanceId=instance)


# --- EKS: the cluster security group and resourcesVpcConfig defaults ---------------------------

EKS_ROLE = "arn:aws:iam::123456789012:role/eks"


def vpc_with_subnet(ec2, cidr, subnet_id=None):
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    spec = pinned("subnet", subnet_id) if subnet_id else []
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr.replace("/16", "/20"), TagSpecifications=spec)["Subnet"]["SubnetId"]
    return vpc, subnet


def test_cluster_security_group_is_made_once_its_vpc_is_known(aws, account):
    ec2, eks = aws("ec2"), aws("eks")
    # The harness's clusters name subnets that are seeded after the cluster.
    eks.create_cluster(name="late", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": ["subnet-0c1d2e3f4a5b60718"]})
    config = eks.describe_cluster(name="late")["cluster"]["resourcesVpcConfig"]
    assert "clusterSecurityGroupId" not in config and "vpcId" not in config  # no VPC yet: nothing, no error
    vpc, _ = vpc_with_subnet(ec2, "10.50.0.0/16", "subnet-0c1d2e3f4a5b60718")

    config = eks.describe_cluster(name="late")["cluster"]["resourcesVpcConfig"]
    group_id = config["clusterSecurityGroupId"]
    assert re.fullmatch(r"sg-[0-9a-f]{17}", group_id)
    assert config["vpcId"] == vpc
    assert eks.describe_cluster(name="late")["cluster"]["resourcesVpcConfig"]["clusterSecurityGroupId"] == group_id
    [group] = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert re.fullmatch(r"eks-cluster-sg-late-\d{10}", group["GroupName"])
    assert group["VpcId"] == vpc
    assert tags_of(group) == {
        "kubernetes.io/cluster/late": "owned",
        "aws:eks:cluster-name": "late",
        "Name": group["GroupName"],
    }
    [inbound] = group["IpPermissions"]
    assert inbound["IpProtocol"] == "-1"
    assert inbound["UserIdGroupPairs"] == [{"UserId": account, "GroupId": group_id}]
    assert inbound["IpRanges"] == []
    [outbound] = group["IpPermissionsEgress"]
    assert outbound["IpProtocol"] == "-1" and outbound["IpRanges"] == [{"CidrIp": "0.0.0.0/0"}]
    # Exactly one such group, however often the cluster is read.
    named = ec2.describe_security_groups(Filters=[{"Name": "tag:aws:eks:cluster-name", "Values": ["late"]}])
    assert [g["GroupId"] for g in named["SecurityGroups"]] == [group_id]
    # DeleteCluster deletes the group it made.
    eks.delete_cluster(name="late")
    named = ec2.describe_security_groups(Filters=[{"Name": "tag:aws:eks:cluster-name", "Values": ["late"]}])
    assert named["SecurityGroups"] == []


def test_a_cluster_in_a_known_vpc_has_its_security_group_from_create_on(aws):
    ec2, eks = aws("ec2"), aws("eks")
    vpc, subnet = vpc_with_subnet(ec2, "10.51.0.0/16")
    created = eks.create_cluster(name="known", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": [subnet]})["cluster"]
    group_id = created["resourcesVpcConfig"]["clusterSecurityGroupId"]
    assert created["resourcesVpcConfig"]["vpcId"] == vpc
    assert eks.describe_cluster(name="known")["cluster"]["resourcesVpcConfig"]["clusterSecurityGroupId"] == group_id
    [group] = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert group["GroupName"].startswith("eks-cluster-sg-known-")


def test_cluster_security_group_pinned_by_a_cluster_tag(aws):
    ec2, eks = aws("ec2"), aws("eks")
    vpc, subnet = vpc_with_subnet(ec2, "10.52.0.0/16")
    seeded = ec2.create_security_group(
        GroupName="eks-cluster-sg-demo",
        Description="recorded",
        VpcId=vpc,
        TagSpecifications=pinned("security-group", "sg-0c1d2e3f405162738"),
    )["GroupId"]
    tags = {"karpmoto:cluster-security-group-id": "sg-0c1d2e3f405162738"}
    eks.create_cluster(name="demo", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": [subnet]}, tags=tags)
    config = eks.describe_cluster(name="demo")["cluster"]["resourcesVpcConfig"]
    assert config["clusterSecurityGroupId"] == seeded == "sg-0c1d2e3f405162738"
    [group] = ec2.describe_security_groups(GroupIds=[seeded])["SecurityGroups"]
    assert group["GroupName"] == "eks-cluster-sg-demo" and group["IpPermissions"] == []  # used as is
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"]
    assert sorted(g["GroupName"] for g in groups) == ["default", "eks-cluster-sg-demo"]  # nothing made
    eks.delete_cluster(name="demo")
    assert ec2.describe_security_groups(GroupIds=[seeded])["SecurityGroups"][0]["GroupId"] == seeded  # not EKS's to delete

    # A pinned group that is not seeded (yet) is still the one named.
    tags = {"karpmoto:cluster-security-group-id": "sg-0a0b0c0d0e0f01020"}
    eks.create_cluster(name="other", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": [subnet]}, tags=tags)
    assert eks.describe_cluster(name="other")["cluster"]["resourcesVpcConfig"]["clusterSecurityGroupId"] == "sg-0a0b0c0d0e0f01020"
    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name="bad", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": [subnet]}, tags={"karpmoto:cluster-security-group-id": "vpc-1"}
        )
    assert_error(err, "InvalidParameterException", 400)
    assert "bad" not in eks.list_clusters()["clusters"]


def test_cluster_vpc_and_network_config_defaults(aws):
    eks = aws("eks")
    cluster = eks.create_cluster(name="defaults", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": ["subnet-1"]})["cluster"]
    for answer in (cluster, eks.describe_cluster(name="defaults")["cluster"]):
        assert answer["resourcesVpcConfig"] == {
            "subnetIds": ["subnet-1"],
            "securityGroupIds": [],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": False,
            "publicAccessCidrs": ["0.0.0.0/0"],
        }
        assert answer["kubernetesNetworkConfig"] == {"serviceIpv4Cidr": "172.20.0.0/16", "ipFamily": "ipv4"}

    sent = {
        "subnetIds": ["subnet-1", "subnet-2"],
        "securityGroupIds": ["sg-0123456789abcdef0"],
        "endpointPublicAccess": False,
        "endpointPrivateAccess": True,
        "publicAccessCidrs": ["203.0.113.0/24"],
    }
    eks.create_cluster(
        name="sent", roleArn=EKS_ROLE, resourcesVpcConfig=sent, kubernetesNetworkConfig={"serviceIpv4Cidr": "10.100.0.0/16"}
    )
    answer = eks.describe_cluster(name="sent")["cluster"]
    assert answer["resourcesVpcConfig"] == sent
    assert answer["kubernetesNetworkConfig"] == {"serviceIpv4Cidr": "10.100.0.0/16", "ipFamily": "ipv4"}

    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name="unreachable",
            roleArn=EKS_ROLE,
            resourcesVpcConfig={"subnetIds": ["subnet-1"], "endpointPublicAccess": False, "endpointPrivateAccess": False},
        )
    assert_error(err, "InvalidParameterException", 400)
    assert "unreachable" not in eks.list_clusters()["clusters"]


def test_update_cluster_config_merges_the_vpc_config(aws):
    ec2, eks = aws("ec2"), aws("eks")
    vpc, subnet = vpc_with_subnet(ec2, "10.53.0.0/16")
    eks.create_cluster(name="merge", roleArn=EKS_ROLE, resourcesVpcConfig={"subnetIds": [subnet]})
    before = eks.describe_cluster(name="merge")["cluster"]["resourcesVpcConfig"]

    eks.update_cluster_config(name="merge", resourcesVpcConfig={"endpointPrivateAccess": True})
    after = eks.describe_cluster(name="merge")["cluster"]["resourcesVpcConfig"]
    assert after == {**before, "endpointPrivateAccess": True}
    assert after["subnetIds"] == [subnet] and after["vpcId"] == vpc
    eks.update_cluster_config(
        name="merge", resourcesVpcConfig={"endpointPublicAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]}
    )
    after = eks.describe_cluster(name="merge")["cluster"]["resourcesVpcConfig"]
    assert after == {**before, "endpointPrivateAccess": True, "endpointPublicAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]}

    # Both endpoints off is refused, whether sent together or left by the merge; nothing changes.
    for refused in ({"endpointPublicAccess": False, "endpointPrivateAccess": False}, {"endpointPrivateAccess": False}):
        with pytest.raises(ClientError) as err:
            eks.update_cluster_config(name="merge", resourcesVpcConfig=refused)
        assert_error(err, "InvalidParameterException", 400)
        assert "Both private and public endpoint access cannot be false" in err.value.response["Error"]["Message"]
    assert eks.describe_cluster(name="merge")["cluster"]["resourcesVpcConfig"] == after


# --- EC2: pinned ids of VPC network resources and the VPC's own companions ------------------


def test_pinned_route_table_gateway_endpoint_acl_and_address_ids(aws):
    ec2 = aws("ec2")
    vpc, subnet = vpc_with_subnet(ec2, "10.60.0.0/16")

    rtb = ec2.create_route_table(VpcId=vpc, TagSpecifications=pinned("route-table", "rtb-0a1b2c3d4e5f60718", Name="private"))
    assert rtb["RouteTable"]["RouteTableId"] == "rtb-0a1b2c3d4e5f60718"
    [described] = ec2.describe_route_tables(RouteTableIds=["rtb-0a1b2c3d4e5f60718"])["RouteTables"]
    assert described["VpcId"] == vpc and tags_of(described) == {"Name": "private"}

    igw = ec2.create_internet_gateway(TagSpecifications=pinned("internet-gateway", "igw-0a1b2c3d4e5f60718", Name="igw"))
    assert igw["InternetGateway"]["InternetGatewayId"] == "igw-0a1b2c3d4e5f60718"
    [described] = ec2.describe_internet_gateways(InternetGatewayIds=["igw-0a1b2c3d4e5f60718"])["InternetGateways"]
    assert tags_of(described) == {"Name": "igw"}

    eigw = ec2.create_egress_only_internet_gateway(
        VpcId=vpc, TagSpecifications=pinned("egress-only-internet-gateway", "eigw-0a1b2c3d4e5f60718", Name="v6")
    )
    assert eigw["EgressOnlyInternetGateway"]["EgressOnlyInternetGatewayId"] == "eigw-0a1b2c3d4e5f60718"
    [described] = ec2.describe_egress_only_internet_gateways(EgressOnlyInternetGatewayIds=["eigw-0a1b2c3d4e5f60718"])[
        "EgressOnlyInternetGateways"
    ]
    assert tags_of(described) == {"Name": "v6"}

    eip = ec2.allocate_address(Domain="vpc", TagSpecifications=pinned("elastic-ip", "eipalloc-0a1b2c3d4e5f60718", Name="nat"))
    assert eip["AllocationId"] == "eipalloc-0a1b2c3d4e5f60718"
    [described] = ec2.describe_addresses(AllocationIds=["eipalloc-0a1b2c3d4e5f60718"])["Addresses"]
    assert tags_of(described) == {"Name": "nat"}

    nat = ec2.create_nat_gateway(
        SubnetId=subnet, AllocationId=eip["AllocationId"], TagSpecifications=pinned("natgateway", "nat-0a1b2c3d4e5f60718", Name="nat")
    )
    assert nat["NatGateway"]["NatGatewayId"] == "nat-0a1b2c3d4e5f60718"
    [described] = ec2.describe_nat_gateways(NatGatewayIds=["nat-0a1b2c3d4e5f60718"])["NatGateways"]
    assert described["NatGatewayAddresses"][0]["AllocationId"] == "eipalloc-0a1b2c3d4e5f60718"
    assert tags_of(described) == {"Name": "nat"}

    endpoint = ec2.create_vpc_endpoint(
        VpcId=vpc,
        ServiceName=f"com.amazonaws.{REGION}.s3",
        VpcEndpointType="Gateway",
        RouteTableIds=["rtb-0a1b2c3d4e5f60718"],
        TagSpecifications=pinned("vpc-endpoint", "vpce-0a1b2c3d4e5f60718", Name="s3"),
    )
    assert endpoint["VpcEndpoint"]["VpcEndpointId"] == "vpce-0a1b2c3d4e5f60718"
    [described] = ec2.describe_vpc_endpoints(VpcEndpointIds=["vpce-0a1b2c3d4e5f60718"])["VpcEndpoints"]
    assert tags_of(described) == {"Name": "s3"}

    acl = ec2.create_network_acl(VpcId=vpc, TagSpecifications=pinned("network-acl", "acl-0a1b2c3d4e5f60718", Name="locked"))
    assert acl["NetworkAcl"]["NetworkAclId"] == "acl-0a1b2c3d4e5f60718"
    [described] = ec2.describe_network_acls(NetworkAclIds=["acl-0a1b2c3d4e5f60718"])["NetworkAcls"]
    assert tags_of(described) == {"Name": "locked"}

    # Unpinned ones stay random.
    assert re.fullmatch(r"rtb-[0-9a-f]{17}", ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"])
    assert re.fullmatch(r"eipalloc-[0-9a-f]{17}", ec2.allocate_address(Domain="vpc")["AllocationId"])


def test_bad_network_resource_pins_are_refused(aws):
    ec2 = aws("ec2")
    vpc, _ = vpc_with_subnet(ec2, "10.61.0.0/16")
    ec2.create_route_table(VpcId=vpc, TagSpecifications=pinned("route-table", "rtb-0000000000000000a"))
    for call in (
        lambda: ec2.create_route_table(VpcId=vpc, TagSpecifications=pinned("route-table", "rtb-0000000000000000a")),
        lambda: ec2.create_route_table(VpcId=vpc, TagSpecifications=pinned("route-table", "acl-0000000000000000a")),
        lambda: ec2.create_internet_gateway(TagSpecifications=pinned("internet-gateway", "nat-0000000000000000a")),
        lambda: ec2.allocate_address(Domain="standard", TagSpecifications=pinned("elastic-ip", "eipalloc-0000000000000000a")),
    ):
        with pytest.raises(ClientError) as err:
            call()
        assert_error(err, "InvalidParameterValue", 400)
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]
    assert len(tables) == 2  # the main one and the pinned one; nothing half-made
    assert ec2.describe_internet_gateways()["InternetGateways"] == []


def test_vpc_tags_pin_its_main_route_table_default_acl_and_default_group(aws):
    ec2 = aws("ec2")
    spec = pinned(
        "vpc",
        "vpc-0d1e2f3a4b5c60718",
        **{
            "karpmoto:main-route-table-id": "rtb-0d1e2f3a4b5c60718",
            "karpmoto:default-network-acl-id": "acl-0d1e2f3a4b5c60718",
            "karpmoto:default-security-group-id": "sg-0d1e2f3a4b5c60718",
            "Name": "recorded",
        },
    )
    ec2.create_vpc(CidrBlock="10.62.0.0/16", TagSpecifications=spec)
    by_vpc = [{"Name": "vpc-id", "Values": ["vpc-0d1e2f3a4b5c60718"]}]
    [vpc] = ec2.describe_vpcs(VpcIds=["vpc-0d1e2f3a4b5c60718"])["Vpcs"]
    assert tags_of(vpc) == {"Name": "recorded"}
    [main] = ec2.describe_route_tables(Filters=by_vpc + [{"Name": "association.main", "Values": ["true"]}])["RouteTables"]
    assert main["RouteTableId"] == "rtb-0d1e2f3a4b5c60718"
    [acl] = ec2.describe_network_acls(Filters=by_vpc + [{"Name": "default", "Values": ["true"]}])["NetworkAcls"]
    assert acl["NetworkAclId"] == "acl-0d1e2f3a4b5c60718"
    [group] = ec2.describe_security_groups(Filters=by_vpc + [{"Name": "group-name", "Values": ["default"]}])["SecurityGroups"]
    assert group["GroupId"] == "sg-0d1e2f3a4b5c60718"

    # A companion id in use, or of the wrong kind, refuses the VPC and makes nothing.
    for tag, value in (("karpmoto:main-route-table-id", "rtb-0d1e2f3a4b5c60718"), ("karpmoto:default-security-group-id", "acl-1")):
        with pytest.raises(ClientError) as err:
            ec2.create_vpc(CidrBlock="10.63.0.0/16", TagSpecifications=pinned("vpc", "vpc-0d1e2f3a4b5c60719", **{tag: value}))
        assert_error(err, "InvalidParameterValue", 400)
    assert ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": ["vpc-0d1e2f3a4b5c60719"]}])["Vpcs"] == []


# --- EC2: network resources as AWS creates them ---------------------------------------------


def test_default_security_group_allows_inbound_from_itself(aws, account):
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.64.0.0/16")["Vpc"]["VpcId"]
    [group] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    [inbound] = group["IpPermissions"]
    assert inbound["IpProtocol"] == "-1"
    assert inbound["UserIdGroupPairs"] == [{"UserId": account, "GroupId": group["GroupId"]}]
    assert inbound["IpRanges"] == []
    [outbound] = group["IpPermissionsEgress"]
    assert outbound["IpProtocol"] == "-1" and outbound["IpRanges"] == [{"CidrIp": "0.0.0.0/0"}]
    rules = ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [group["GroupId"]]}])["SecurityGroupRules"]
    [rule] = [r for r in rules if not r["IsEgress"]]
    assert rule["ReferencedGroupInfo"]["GroupId"] == group["GroupId"]


def test_nat_gateway_connectivity_type_defaults_to_public(aws):
    ec2 = aws("ec2")
    _, subnet = vpc_with_subnet(ec2, "10.65.0.0/16")
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    public = ec2.create_nat_gateway(SubnetId=subnet, AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    private = ec2.create_nat_gateway(SubnetId=subnet, ConnectivityType="private")["NatGateway"]["NatGatewayId"]
    found = {n["NatGatewayId"]: n for n in ec2.describe_nat_gateways(NatGatewayIds=[public, private])["NatGateways"]}
    assert found[public]["ConnectivityType"] == "public"
    assert found[public]["NatGatewayAddresses"][0]["AllocationId"] == allocation
    assert found[private]["ConnectivityType"] == "private"


def test_vpc_endpoints_private_dns_and_default_group(aws):
    ec2 = aws("ec2")
    vpc, subnet = vpc_with_subnet(ec2, "10.66.0.0/16")
    [default] = ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "group-name", "Values": ["default"]}]
    )["SecurityGroups"]
    [main] = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]
    gateway = ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.s3", VpcEndpointType="Gateway", RouteTableIds=[main["RouteTableId"]]
    )["VpcEndpoint"]["VpcEndpointId"]
    interface = ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.sts", VpcEndpointType="Interface", SubnetIds=[subnet]
    )["VpcEndpoint"]["VpcEndpointId"]
    node_group = ec2.create_security_group(GroupName="endpoints", Description="endpoints", VpcId=vpc)["GroupId"]
    chosen = ec2.create_vpc_endpoint(
        VpcId=vpc,
        ServiceName=f"com.amazonaws.{REGION}.ec2",
        VpcEndpointType="Interface",
        SubnetIds=[subnet],
        SecurityGroupIds=[node_group],
        PrivateDnsEnabled=False,
    )["VpcEndpoint"]["VpcEndpointId"]
    found = {
        e["VpcEndpointId"]: e
        for e in ec2.describe_vpc_endpoints(VpcEndpointIds=[gateway, interface, chosen])["VpcEndpoints"]
    }
    assert found[gateway]["PrivateDnsEnabled"] is False
    assert found[gateway]["Groups"] == []
    assert found[interface]["PrivateDnsEnabled"] is True
    assert found[interface]["Groups"] == [{"GroupId": default["GroupId"], "GroupName": "default"}]
    assert found[chosen]["PrivateDnsEnabled"] is False
    assert found[chosen]["Groups"] == [{"GroupId": node_group, "GroupName": "endpoints"}]


def test_a_new_network_acl_denies_everything(aws):
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.67.0.0/16")["Vpc"]["VpcId"]
    created = ec2.create_network_acl(VpcId=vpc)["NetworkAcl"]
    [described] = ec2.describe_network_acls(NetworkAclIds=[created["NetworkAclId"]])["NetworkAcls"]
    for acl in (created, described):
        assert acl["IsDefault"] is False
        assert sorted((e["Egress"], e["RuleNumber"], e["RuleAction"], e["Protocol"], e["CidrBlock"]) for e in acl["Entries"]) == [
            (False, 32767, "deny", "-1", "0.0.0.0/0"),
            (True, 32767, "deny", "-1", "0.0.0.0/0"),
        ]
    # Entries added later sit before the catch-all; the default ACL keeps its four entries.
    ec2.create_network_acl_entry(
        NetworkAclId=created["NetworkAclId"], RuleNumber=100, Protocol="-1", RuleAction="allow", Egress=False, CidrBlock="10.0.0.0/8"
    )
    [described] = ec2.describe_network_acls(NetworkAclIds=[created["NetworkAclId"]])["NetworkAcls"]
    assert len(described["Entries"]) == 3
    [default] = ec2.describe_network_acls(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "default", "Values": ["true"]}]
    )["NetworkAcls"]
    assert sorted((e["Egress"], e["RuleNumber"], e["RuleAction"]) for e in default["Entries"]) == [
        (False, 100, "allow"),
        (False, 32767, "deny"),
        (True, 100, "allow"),
        (True, 32767, "deny"),
    ]


def test_routes_to_targets_that_are_gone_are_blackholes(aws):
    ec2 = aws("ec2")
    vpc, subnet = vpc_with_subnet(ec2, "10.68.0.0/16")
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet, ConnectivityType="private")["NatGateway"]["NatGatewayId"]
    instance = ec2.run_instances(ImageId="ami-0a1b2c3d4e5f60718", MinCount=1, MaxCount=1, SubnetId=subnet)["Instances"][0]["InstanceId"]
    eni = ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"]["NetworkInterfaceId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="192.168.0.0/16", InstanceId=instance)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="172.16.0.0/12", NetworkInterfaceId=eni)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="198.51.100.0/24", GatewayId=igw)

    def states():
        [described] = ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"]
        return {r["DestinationCidrBlock"]: r["State"] for r in described["Routes"]}

    assert set(states().values()) == {"active"}
    ec2.delete_nat_gateway(NatGatewayId=nat)
    ec2.terminate_instances(InstanceIds=[instance])
    ec2.delete_network_interface(NetworkInterfaceId=eni)
    ec2.detach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    assert states() == {
        "10.68.0.0/16": "active",  # local
        "0.0.0.0/0": "blackhole",
        "192.168.0.0/16": "blackhole",
        "172.16.0.0/12": "blackhole",
        "198.51.100.0/24": "blackhole",
    }


def test_an_instance_type_answer_computed_across_a_reset_is_not_kept(monkeypatch):
    """A request in flight while the world is reset (a client that exited mid-paging, then the
    next fixture's reset) must not leave its answer for the new world: a kept first page of the
    old catalogue made the next page's NextToken invalid."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("karpmoto_inproc", os.path.join(os.path.dirname(__file__), "karpmoto.py"))
    karpmoto = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(karpmoto)

    class Request:
        querystring = {"Action": ["DescribeInstanceTypes"]}
        current_account = "123456789012"
        region = "us-west-2"

        def _get_action(self):
            return "DescribeInstanceTypes"

    def answer_across_a_reset(self):
        karpmoto._forget_static_answers()  # the reset lands while this request is computed
        return 200, {}, "old world"

    monkeypatch.setattr(karpmoto.BaseResponse, "call_action", answer_across_a_reset)
    assert karpmoto.ec2_call_action(Request())[2] == "old world"
    assert karpmoto._static_answers == {}

    monkeypatch.setattr(karpmoto.BaseResponse, "call_action", lambda self: (200, {}, "new world"))
    assert karpmoto.ec2_call_action(Request())[2] == "new world"
    assert len(karpmoto._static_answers) == 1
