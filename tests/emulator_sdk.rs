//! The AWS emulator extension, spoken to through the real Rust SDK clients karpdoctor uses:
//! the shapes the identity and node checks will read (simulation results with boundary and SCP
//! attribution in both shapes, paging, URL-encoded trust documents, EKS access configuration,
//! access entries, Pod Identity associations, add-ons, `/aws/service` SSM parameters, the Spot
//! service-linked role) deserialize and mean what AWS documents.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use aws_sdk_iam::types::{ContextEntry, ContextKeyTypeEnum};
use karpdoctor::backend::live::raw_simulation_results;
use karpdoctor::iam::policy::PolicyDocument;
use karpdoctor::iam::simulation::{Attribution, attribute, normalise};
use karpdoctor::iam::trust::{IrsaExpectation, check_irsa};
use serde_json::json;
use support::Emulator;

async fn sdk(url: &str) -> aws_config::SdkConfig {
    support::emulator_config(url).await
}

/// Puts the emulator's account into an organization whose SCP denies `action` (via the
/// emulator's boto3: karpdoctor itself has no Organizations client, it never needs one).
fn deny_by_scp(url: &str, action: &str) {
    let script = format!(
        r#"
import boto3, json
o = boto3.client("organizations", endpoint_url="{url}", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
o.create_organization(FeatureSet="ALL")
p = o.create_policy(Name="deny", Type="SERVICE_CONTROL_POLICY", Description="test", Content=json.dumps({{
    "Version": "2012-10-17", "Statement": [{{"Effect": "Deny", "Action": "{action}", "Resource": "*"}}]}}))
o.attach_policy(PolicyId=p["Policy"]["PolicySummary"]["Id"], TargetId=o.list_roots()["Roots"][0]["Id"])
"#
    );
    let status = std::process::Command::new(support::root().join(".venv-emulator/bin/python"))
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(status.success(), "seeding the SCP failed");
}

fn ctx(key: &str, value: &str) -> ContextEntry {
    ContextEntry::builder()
        .context_key_name(key)
        .context_key_type(ContextKeyTypeEnum::String)
        .context_key_values(value)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iam_trust_documents_and_simulation_through_the_rust_sdk() {
    let emulator = Emulator::start();
    let conf = sdk(&emulator.url).await;
    let iam = aws_sdk_iam::Client::new(&conf);
    let exp = IrsaExpectation::new(
        "aws",
        "123456789012",
        "https://oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123",
        "kube-system",
        "karpenter",
    );
    let trust = json!({"Version": "2012-10-17", "Statement": [exp.statement()]}).to_string();
    iam.create_role()
        .role_name("KarpenterController")
        .assume_role_policy_document(&trust)
        .send()
        .await
        .unwrap();
    // IAM returns the trust URL-encoded; the reader decodes it and the evaluation holds.
    let role = iam
        .get_role()
        .role_name("KarpenterController")
        .send()
        .await
        .unwrap();
    let raw = role.role().unwrap().assume_role_policy_document().unwrap();
    assert!(
        raw.starts_with("%7B"),
        "the SDK hands over the document URL-encoded: {raw}"
    );
    assert_eq!(check_irsa(&PolicyDocument::parse(raw).unwrap(), &exp), []);

    let identity = json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*", "Condition": {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}},
        {"Effect": "Allow", "Action": ["iam:PassRole", "ssm:GetParameter"], "Resource": "*"}
    ]});
    iam.put_role_policy()
        .role_name("KarpenterController")
        .policy_name("controller")
        .policy_document(identity.to_string())
        .send()
        .await
        .unwrap();
    let boundary = iam
        .create_policy()
        .policy_name("boundary")
        .policy_document(json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["ec2:*", "ssm:*"], "Resource": "*"}]}).to_string())
        .send()
        .await
        .unwrap();
    let boundary_arn = boundary.policy().unwrap().arn().unwrap().to_string();
    iam.put_role_permissions_boundary()
        .role_name("KarpenterController")
        .permissions_boundary(&boundary_arn)
        .send()
        .await
        .unwrap();
    let role_arn = role.role().unwrap().arn().to_string();

    // With the region context: DescribeSubnets allowed, PassRole stopped by the boundary.
    let out = iam
        .simulate_principal_policy()
        .policy_source_arn(&role_arn)
        .action_names("ec2:DescribeSubnets")
        .action_names("iam:PassRole")
        .context_entries(ctx("aws:RequestedRegion", "us-west-2"))
        .send()
        .await
        .unwrap();
    let rows = normalise(&raw_simulation_results(out.evaluation_results()));
    let by = |a: &str| rows.iter().find(|r| r.action == a).unwrap();
    assert_eq!(attribute(by("ec2:DescribeSubnets")), Attribution::Allowed);
    assert_eq!(attribute(by("iam:PassRole")), Attribution::Boundary);

    // Without it: not granted, and the simulator names the missing key.
    let out = iam
        .simulate_principal_policy()
        .policy_source_arn(&role_arn)
        .action_names("ec2:DescribeSubnets")
        .send()
        .await
        .unwrap();
    let rows = normalise(&raw_simulation_results(out.evaluation_results()));
    assert_eq!(attribute(&rows[0]), Attribution::NotGranted);
    assert_eq!(rows[0].missing_context_values, ["aws:RequestedRegion"]);

    // Paging: one action per page, Marker to continue.
    let first = iam
        .simulate_principal_policy()
        .policy_source_arn(&role_arn)
        .action_names("ec2:DescribeSubnets")
        .action_names("ec2:DescribeImages")
        .max_items(1)
        .send()
        .await
        .unwrap();
    assert!(first.is_truncated());
    let marker = first.marker().unwrap().to_string();
    let second = iam
        .simulate_principal_policy()
        .policy_source_arn(&role_arn)
        .action_names("ec2:DescribeSubnets")
        .action_names("ec2:DescribeImages")
        .max_items(1)
        .marker(marker)
        .send()
        .await
        .unwrap();
    assert!(!second.is_truncated());
    assert_eq!(
        first.evaluation_results().len() + second.evaluation_results().len(),
        2
    );

    // An SCP denying the public SSM parameters: per-resource shape, attributed to the SCP
    // although the identity policy allows it.
    deny_by_scp(&emulator.url, "ssm:GetParameter");
    let params = [
        "arn:aws:ssm:us-west-2::parameter/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
        "arn:aws:ssm:us-west-2::parameter/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id",
    ];
    let out = iam
        .simulate_principal_policy()
        .policy_source_arn(&role_arn)
        .action_names("ssm:GetParameter")
        .resource_arns(params[0])
        .resource_arns(params[1])
        .send()
        .await
        .unwrap();
    let rows = normalise(&raw_simulation_results(out.evaluation_results()));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| attribute(r) == Attribution::Scp),
        "{rows:?}"
    );

    // The Spot service-linked role gets its real name.
    iam.create_service_linked_role()
        .aws_service_name("spot.amazonaws.com")
        .send()
        .await
        .unwrap();
    let slr = iam
        .get_role()
        .role_name("AWSServiceRoleForEC2Spot")
        .send()
        .await
        .unwrap();
    assert_eq!(
        slr.role().unwrap().path(),
        "/aws-service-role/spot.amazonaws.com/"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eks_and_ssm_extensions_through_the_rust_sdk() {
    use aws_sdk_eks::types::{AuthenticationMode, CreateAccessConfigRequest, VpcConfigRequest};
    let emulator = Emulator::start();
    let conf = sdk(&emulator.url).await;
    let eks = aws_sdk_eks::Client::new(&conf);
    let node_role = "arn:aws:iam::123456789012:role/KarpenterNodeRole-demo";
    eks.create_cluster()
        .name("demo")
        .role_arn("arn:aws:iam::123456789012:role/eks")
        .resources_vpc_config(VpcConfigRequest::builder().subnet_ids("subnet-1").build())
        .access_config(
            CreateAccessConfigRequest::builder()
                .authentication_mode(AuthenticationMode::ApiAndConfigMap)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let cluster = eks.describe_cluster().name("demo").send().await.unwrap();
    let cluster = cluster.cluster().unwrap();
    assert_eq!(
        cluster
            .access_config()
            .and_then(|a| a.authentication_mode()),
        Some(&AuthenticationMode::ApiAndConfigMap)
    );
    assert!(
        cluster
            .identity()
            .and_then(|i| i.oidc())
            .and_then(|o| o.issuer())
            .is_some_and(|i| i.starts_with("https://oidc.eks.us-west-2.amazonaws.com/id/"))
    );

    eks.create_access_entry()
        .cluster_name("demo")
        .principal_arn(node_role)
        .r#type("EC2_LINUX")
        .send()
        .await
        .unwrap();
    let listed = eks
        .list_access_entries()
        .cluster_name("demo")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.access_entries(), [node_role]);
    let entry = eks
        .describe_access_entry()
        .cluster_name("demo")
        .principal_arn(node_role)
        .send()
        .await
        .unwrap();
    let entry = entry.access_entry().unwrap();
    assert_eq!(entry.r#type(), Some("EC2_LINUX"));
    assert_eq!(entry.username(), Some("system:node:{{EC2PrivateDNSName}}"));
    let missing = eks
        .describe_access_entry()
        .cluster_name("demo")
        .principal_arn("arn:aws:iam::123456789012:role/nope")
        .send()
        .await;
    assert!(
        missing
            .unwrap_err()
            .into_service_error()
            .is_resource_not_found_exception()
    );

    let created = eks
        .create_pod_identity_association()
        .cluster_name("demo")
        .namespace("kube-system")
        .service_account("karpenter")
        .role_arn("arn:aws:iam::123456789012:role/KarpenterController")
        .send()
        .await
        .unwrap();
    let id = created
        .association()
        .unwrap()
        .association_id()
        .unwrap()
        .to_string();
    let listed = eks
        .list_pod_identity_associations()
        .cluster_name("demo")
        .namespace("kube-system")
        .service_account("karpenter")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.associations().len(), 1);
    let other_ns = eks
        .list_pod_identity_associations()
        .cluster_name("demo")
        .namespace("karpenter")
        .send()
        .await
        .unwrap();
    assert!(other_ns.associations().is_empty());
    let described = eks
        .describe_pod_identity_association()
        .cluster_name("demo")
        .association_id(&id)
        .send()
        .await
        .unwrap();
    assert_eq!(
        described.association().unwrap().role_arn(),
        Some("arn:aws:iam::123456789012:role/KarpenterController")
    );

    eks.create_addon()
        .cluster_name("demo")
        .addon_name("eks-pod-identity-agent")
        .send()
        .await
        .unwrap();
    let addon = eks
        .describe_addon()
        .cluster_name("demo")
        .addon_name("eks-pod-identity-agent")
        .send()
        .await
        .unwrap();
    assert_eq!(
        addon.addon().unwrap().status().map(|s| s.as_str()),
        Some("ACTIVE")
    );

    let ssm = aws_sdk_ssm::Client::new(&conf);
    let name = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id";
    ssm.put_parameter()
        .name(name)
        .value("ami-0123456789abcdef0")
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let got = ssm.get_parameter().name(name).send().await.unwrap();
    assert_eq!(
        got.parameter().unwrap().value(),
        Some("ami-0123456789abcdef0")
    );
    let absent = ssm.get_parameter().name("/aws/service/eks/optimized-ami/1.99/amazon-linux-2023/x86_64/standard/recommended/image_id").send().await;
    assert!(
        absent
            .unwrap_err()
            .into_service_error()
            .is_parameter_not_found()
    );
}
