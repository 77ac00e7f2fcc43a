use std::collections::BTreeMap;

use super::data::data;
use super::version::in_effect;
use super::*;

fn vars() -> BTreeMap<String, String> {
    [
        ("partition", "aws"),
        ("region", "us-west-2"),
        ("account", "111122223333"),
        ("cluster", "demo"),
        (
            "clusterArn",
            "arn:aws:eks:us-west-2:111122223333:cluster/demo",
        ),
        ("queueArn", "arn:aws:sqs:us-west-2:111122223333:demo"),
        ("ec2ServicePrincipal", "ec2.amazonaws.com"),
        ("pricingRegion", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn nodeclass() -> NodeClassInput {
    NodeClassInput {
        name: "default".into(),
        uid: "uid-1".into(),
        nodepool: Some("default".into()),
        spec_tags: [("team".to_string(), "platform".to_string())].into(),
        image_arns: vec!["arn:aws:ec2:us-west-2::image/ami-1".into()],
        subnet_arns: vec!["arn:aws:ec2:us-west-2:111122223333:subnet/subnet-1".into()],
        security_group_arns: vec![
            "arn:aws:ec2:us-west-2:111122223333:security-group/sg-1".into(),
        ],
        ssm_parameter_arns: vec![
            "arn:aws:ssm:us-west-2::parameter/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id".into(),
        ],
        instance_profile_arn: Some("arn:aws:iam::111122223333:instance-profile/demo_1".into()),
        node_role_arn: Some("arn:aws:iam::111122223333:role/nodes/KarpenterNodeRole-demo".into()),
        uses_role: true,
        uses_alias: true,
        ..NodeClassInput::default()
    }
}

fn input() -> InstallInput {
    InstallInput {
        vars: vars(),
        flags: ["interruptionQueue.set".to_string()].into(),
        nodeclasses: vec![nodeclass()],
    }
}

#[test]
fn the_data_file_parses_and_covers_v1() {
    assert!(data().is_some());
    assert_eq!(
        coverage(Version(1, 8, 1)),
        Some(Coverage::Covered(Version(1, 8, 1)))
    );
    assert!(matches!(
        coverage(Version(0, 30, 0)),
        Some(Coverage::Older { .. })
    ));
    assert!(matches!(
        coverage(Version(9, 0, 0)),
        Some(Coverage::Newer { .. })
    ));
}

#[test]
fn versions_and_ranges() {
    assert_eq!(Version::parse("v1.8.1"), Some(Version(1, 8, 1)));
    assert_eq!(Version::parse("1.8.1-rc.1"), Some(Version(1, 8, 1)));
    assert_eq!(Version::parse("1.8"), None);
    assert!(in_effect(Version(1, 8, 9), Some("1.0.0"), Some("1.8.x")));
    assert!(!in_effect(Version(1, 9, 0), Some("1.0.0"), Some("1.8.x")));
    assert!(!in_effect(Version(0, 37, 7), Some("1.0.0"), None));
}

#[test]
fn probes_batch_actions_and_carry_concrete_resources_and_context() {
    let probes = controller_probes(Version(1, 8, 1), &input());
    // Far fewer requests than actions: batching is the point.
    let actions: usize = probes.iter().map(|p| p.actions.len()).sum();
    assert!(
        probes.len() < actions,
        "{} probes for {actions} actions",
        probes.len()
    );
    let pass = probes
        .iter()
        .find(|p| p.actions == ["iam:PassRole"])
        .expect("a PassRole probe");
    assert_eq!(
        pass.resources,
        ["arn:aws:iam::111122223333:role/nodes/KarpenterNodeRole-demo"]
    );
    assert!(
        pass.context
            .iter()
            .any(|c| c.key == "iam:PassedToService" && c.values == ["ec2.amazonaws.com"])
    );
    let fleet = probes
        .iter()
        .find(|p| {
            p.actions.contains(&"ec2:CreateFleet".to_string())
                && p.resources.iter().any(|r| r.ends_with("subnet/subnet-1"))
        })
        .expect("CreateFleet on the resolved subnet");
    assert!(fleet.resources.iter().any(|r| r.ends_with("image/ami-1")));
    let tagging = probes
        .iter()
        .find(|p| p.context.iter().any(|c| c.key == "aws:RequestTag/team"))
        .expect("spec.tags become request tags");
    assert!(
        tagging
            .context
            .iter()
            .any(|c| c.key == "aws:RequestTag/eks:eks-cluster-name" && c.values == ["demo"])
    );
    // The interruption queue is simulated only when one is configured.
    assert!(
        probes
            .iter()
            .any(|p| p.resources == ["arn:aws:sqs:us-west-2:111122223333:demo"])
    );
    let mut no_queue = input();
    no_queue.flags.clear();
    assert!(
        !controller_probes(Version(1, 8, 1), &no_queue)
            .iter()
            .any(|p| p.actions.iter().any(|a| a.starts_with("sqs:")))
    );
}

#[test]
fn release_differences_reach_the_probes() {
    let has = |v: Version, action: &str| {
        controller_probes(v, &input())
            .iter()
            .any(|p| p.actions.iter().any(|a| a == action))
    };
    // ListInstanceProfiles arrived with 1.7 (instance profile garbage collection).
    assert!(has(Version(1, 8, 1), "iam:ListInstanceProfiles"));
    assert!(!has(Version(1, 0, 0), "iam:ListInstanceProfiles"));
}

#[test]
fn without_nodeclasses_list_resources_are_not_simulated() {
    let mut i = input();
    i.nodeclasses.clear();
    let probes = controller_probes(Version(1, 8, 1), &i);
    assert!(
        !probes
            .iter()
            .any(|p| p.actions.iter().any(|a| a == "iam:PassRole"))
    );
    assert!(probes.iter().all(|p| !p.resources.is_empty()));
}

#[test]
fn statements_render_with_placeholders_filled() {
    let probes = controller_probes(Version(1, 8, 1), &input());
    let s = probes
        .iter()
        .flat_map(|p| p.statements.iter())
        .find(|s| s.sid == "AllowAPIServerEndpointDiscovery")
        .expect("statement");
    let doc = statement_document(s, Version(1, 8, 1), &vars()).unwrap();
    assert_eq!(doc["Action"], "eks:DescribeCluster");
    assert_eq!(
        doc["Resource"],
        "arn:aws:eks:us-west-2:111122223333:cluster/demo"
    );
    let policy = policy_document(Version(1, 8, 1), &vars());
    assert!(!policy.to_string().contains("{cluster}"));
}

#[test]
fn aliases_expand_to_their_ssm_parameters() {
    let p = alias_parameter_paths("al2023@latest", "1.31", &["amd64"]).unwrap();
    assert!(p.contains(&"/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id".to_string()));
    assert_eq!(p.len(), 3);
    let b = alias_parameter_paths("bottlerocket@v1.20.0", "1.31", &["arm64"]).unwrap();
    assert!(
        b.contains(&"/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.20.0/image_id".to_string())
    );
    let pinned = alias_parameter_paths("al2023@v20250505", "1.31", &["arm64"]).unwrap();
    assert!(pinned[0].ends_with("amazon-eks-node-al2023-arm64-nvidia-1.31-v20250505/image_id"));
    assert_eq!(
        alias_parameter_paths("ubuntu@latest", "1.31", &["amd64"]),
        None
    );
}

#[test]
fn install_steps_cover_the_documented_blockers() {
    let mut v = vars();
    v.insert(
        "controllerRoleArn".into(),
        "arn:aws:iam::111122223333:role/KarpenterControllerRole-demo".into(),
    );
    v.insert("k8sVersion".into(), "1.31".into());
    v.insert(
        "oidcIssuerHostPath".into(),
        "oidc.eks.us-west-2.amazonaws.com/id/ABC".into(),
    );
    let steps = install_steps(Version(1, 8, 1), &v);
    for action in [
        "sqs:CreateQueue",
        "events:PutRule",
        "eks-auth:AssumeRoleForPodIdentity",
        "ssm:GetParameter",
        "kms:CreateKey",
        "iam:CreateServiceLinkedRole",
    ] {
        assert!(steps.iter().any(|s| s.action == action), "{action}");
    }
    let policy = steps
        .iter()
        .find(|s| s.action == "iam:CreatePolicy")
        .unwrap();
    assert_eq!(
        policy.resources,
        ["arn:aws:iam::111122223333:policy/KarpenterControllerPolicy-demo"]
    );
}
