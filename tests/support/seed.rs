//! Seeding the AWS emulator with the state a bundle's facts describe: the EKS cluster, IAM,
//! Pod Identity, Fargate, SQS and EventBridge (EC2 and the network: `seed_ec2`).

use super::seed_ec2::seed_ec2;
use super::*;

/// SDK configuration for seeding the emulator (its default account's test credentials).
pub async fn emulator_config(url: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(karpdoctor::backend::live::https_client())
        .endpoint_url(url)
        .region(aws_config::Region::new("us-west-2"))
        .credentials_provider(aws_sdk_sts::config::Credentials::new(
            "testing", "testing", None, None, "test",
        ))
        .load()
        .await
}

/// The facts named `name` that hold a value (an object or a list), not an error or null.
fn of<'a>(
    facts: &'a [serde_json::Value],
    name: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    facts.iter().filter(move |f| {
        // Parameterless facts are plain strings; the others objects keyed by their name.
        (f["fact"] == name || f["fact"].get(name).is_some())
            && (f["value"].is_object() || f["value"].is_array())
    })
}

/// Recreates in the emulator the AWS state a bundle's facts describe (EKS cluster, IAM roles,
/// Pod Identity associations, Fargate profiles, SQS queues, EventBridge rules), after wiping
/// it, so a live run sees what the recording saw.
pub async fn seed_aws(url: &str, bundle: &serde_json::Value) {
    use aws_sdk_eks::types::{AuthenticationMode, CreateAccessConfigRequest, VpcConfigRequest};
    reset_emulator(url);
    let facts = bundle["facts"].as_array().cloned().unwrap_or_default();
    if let Some(types) = of(&facts, "ec2InstanceTypes")
        .next()
        .and_then(|f| f["value"].as_array())
    {
        let names: Vec<String> = types
            .iter()
            .filter_map(|t| t["instanceType"].as_str().map(str::to_string))
            .collect();
        restrict_instance_types(url, &names);
    }
    let conf = emulator_config(url).await;
    let (eks, iam) = (
        aws_sdk_eks::Client::new(&conf),
        aws_sdk_iam::Client::new(&conf),
    );
    for f in of(&facts, "eksCluster") {
        let v = &f["value"];
        let mode = AuthenticationMode::from(
            v["authenticationMode"]
                .as_str()
                .unwrap_or("API_AND_CONFIG_MAP"),
        );
        let mut create = eks.create_cluster();
        if let Some(issuer) = v["oidcIssuer"].as_str() {
            // The emulator pins the recorded issuer instead of drawing a random one.
            create = create.tags("karpmoto:oidc-issuer", issuer);
        }
        if let Some(endpoint) = v["endpoint"].as_str() {
            create = create.tags("karpmoto:endpoint", endpoint);
        }
        if let Some(sg) = v["clusterSecurityGroupId"].as_str() {
            // The fixture's own group (seeded with the other groups) is the cluster's.
            create = create.tags("karpmoto:cluster-security-group-id", sg);
        }
        let strings = |field: &str| -> Option<Vec<String>> {
            v[field].as_array().map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
        };
        let subnets = strings("subnetIds")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| vec!["subnet-0a1b2c3d".to_string()]);
        let vpc = VpcConfigRequest::builder()
            .set_subnet_ids(Some(subnets))
            .set_security_group_ids(strings("securityGroupIds"))
            .set_endpoint_public_access(v["endpointPublicAccess"].as_bool())
            .set_endpoint_private_access(v["endpointPrivateAccess"].as_bool())
            .set_public_access_cidrs(strings("publicAccessCidrs"))
            .build();
        let network = aws_sdk_eks::types::KubernetesNetworkConfigRequest::builder()
            .set_service_ipv4_cidr(v["serviceIpv4Cidr"].as_str().map(str::to_string))
            .set_ip_family(
                v["ipFamily"]
                    .as_str()
                    .map(aws_sdk_eks::types::IpFamily::from),
            )
            .set_elastic_load_balancing(v["elasticLoadBalancing"].as_bool().map(|on| {
                aws_sdk_eks::types::ElasticLoadBalancing::builder()
                    .enabled(on)
                    .build()
            }))
            .build();
        // EKS Auto Mode, as the recording's DescribeCluster showed it.
        if let Some(cc) = v["computeConfig"].as_object() {
            let pools = cc["nodePools"].as_array().map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect()
            });
            create = create.compute_config(
                aws_sdk_eks::types::ComputeConfigRequest::builder()
                    .set_enabled(cc["enabled"].as_bool())
                    .set_node_pools(pools)
                    .set_node_role_arn(cc["nodeRoleArn"].as_str().map(str::to_string))
                    .build(),
            );
        }
        if let Some(on) = v["blockStorage"].as_bool() {
            create = create.storage_config(
                aws_sdk_eks::types::StorageConfigRequest::builder()
                    .block_storage(
                        aws_sdk_eks::types::BlockStorage::builder()
                            .enabled(on)
                            .build(),
                    )
                    .build(),
            );
        }
        create
            .name(v["name"].as_str().unwrap())
            .set_version(v["version"].as_str().map(str::to_string))
            .role_arn(
                v["roleArn"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("arn:aws:iam::{FIXTURE_ACCOUNT}:role/eks-cluster")),
            )
            .resources_vpc_config(vpc)
            .kubernetes_network_config(network)
            .access_config(
                CreateAccessConfigRequest::builder()
                    .authentication_mode(mode)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    }
    let emulator = &bundle["emulator"];
    // Boundaries first: a role is created with its boundary.
    for b in emulator["boundaries"].as_array().into_iter().flatten() {
        iam.create_policy()
            .policy_name(b["name"].as_str().unwrap())
            .policy_document(b["document"].to_string())
            .send()
            .await
            .unwrap();
    }
    // Customer-managed policies the fixture's roles attach (its `iamAttachedRolePolicies` facts
    // attach them below).
    for p in emulator["managedPolicies"].as_array().into_iter().flatten() {
        let document = policy_of(p);
        iam.create_policy()
            .policy_name(p["name"].as_str().unwrap())
            .policy_document(document.to_string())
            .send()
            .await
            .unwrap();
    }
    for service in emulator["serviceLinkedRoles"]
        .as_array()
        .into_iter()
        .flatten()
    {
        iam.create_service_linked_role()
            .aws_service_name(service.as_str().unwrap())
            .send()
            .await
            .unwrap();
    }
    for f in of(&facts, "iamRole") {
        let v = &f["value"];
        // Service-linked roles are made above, the way AWS makes them.
        if v["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("/aws-service-role/"))
        {
            continue;
        }
        iam.create_role()
            .role_name(v["name"].as_str().unwrap())
            .path(v["path"].as_str().unwrap_or("/"))
            .assume_role_policy_document(karpdoctor::iam::policy::decode(
                v["trustPolicy"].as_str().unwrap_or("{}"),
            ))
            .set_permissions_boundary(v["permissionsBoundaryArn"].as_str().map(str::to_string))
            .send()
            .await
            .unwrap();
    }
    for r in emulator["roles"].as_array().into_iter().flatten() {
        iam.create_role()
            .role_name(r["name"].as_str().unwrap())
            .assume_role_policy_document(r["trust"].to_string())
            .send()
            .await
            .unwrap();
    }
    for p in emulator["rolePolicies"].as_array().into_iter().flatten() {
        let document = policy_of(p);
        iam.put_role_policy()
            .role_name(p["role"].as_str().unwrap())
            .policy_name(p["name"].as_str().unwrap_or("karpenter"))
            .policy_document(document.to_string())
            .send()
            .await
            .unwrap();
    }
    if let Some(scps) = emulator["scps"].as_array() {
        organizations(
            url,
            "CreateOrganization",
            serde_json::json!({"FeatureSet": "ALL"}),
        );
        for scp in scps {
            let created = organizations(
                url,
                "CreatePolicy",
                serde_json::json!({
                    "Name": scp["name"], "Description": scp["name"],
                    "Type": "SERVICE_CONTROL_POLICY", "Content": scp["document"].to_string(),
                }),
            );
            let id = created["Policy"]["PolicySummary"]["Id"].clone();
            organizations(
                url,
                "AttachPolicy",
                serde_json::json!({"PolicyId": id, "TargetId": FIXTURE_ACCOUNT}),
            );
        }
    }
    for f in of(&facts, "eksNodegroup") {
        eks.create_nodegroup()
            .cluster_name(f["fact"]["eksNodegroup"]["cluster"].as_str().unwrap())
            .nodegroup_name(f["value"]["name"].as_str().unwrap())
            .node_role(f["value"]["nodeRole"].as_str().unwrap())
            .subnets("subnet-0a1b2c3d")
            .send()
            .await
            .unwrap();
    }
    seed_ec2(&conf, &facts).await;
    for f in of(&facts, "iamAttachedRolePolicies") {
        for p in f["value"].as_array().unwrap() {
            iam.attach_role_policy()
                .role_name(
                    f["fact"]["iamAttachedRolePolicies"]["role"]
                        .as_str()
                        .unwrap(),
                )
                .policy_arn(p["policyArn"].as_str().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    for f in of(&facts, "iamInstanceProfile") {
        let v = &f["value"];
        let name = v["name"].as_str().unwrap();
        iam.create_instance_profile()
            .instance_profile_name(name)
            .path(v["path"].as_str().unwrap_or("/"))
            .send()
            .await
            .unwrap();
        for role in v["roles"].as_array().unwrap() {
            iam.add_role_to_instance_profile()
                .instance_profile_name(name)
                .role_name(role.as_str().unwrap().rsplit('/').next().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    for f in of(&facts, "eksAccessEntries") {
        let cluster = f["fact"]["eksAccessEntries"]["cluster"].as_str().unwrap();
        for e in f["value"].as_array().unwrap() {
            let principal = e["principalArn"].as_str().unwrap();
            let kind = e["type"].as_str().unwrap();
            // EKS made the Auto Mode entries itself when the cluster was created: they must
            // be what the recording shows, not made twice.
            if let Ok(have) = eks
                .describe_access_entry()
                .cluster_name(cluster)
                .principal_arn(principal)
                .send()
                .await
            {
                let have = have.access_entry().and_then(|a| a.r#type()).unwrap_or("");
                assert_eq!(have, kind, "{principal}: the emulator made another entry");
                continue;
            }
            eks.create_access_entry()
                .cluster_name(cluster)
                .principal_arn(principal)
                .r#type(kind)
                .send()
                .await
                .unwrap();
        }
    }
    for f in of(&facts, "eksAccessPolicies") {
        let key = &f["fact"]["eksAccessPolicies"];
        let (cluster, principal) = (
            key["cluster"].as_str().unwrap(),
            key["principal"].as_str().unwrap(),
        );
        for p in f["value"].as_array().into_iter().flatten() {
            let namespaces: Vec<String> = p["namespaces"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect();
            let scope = aws_sdk_eks::types::AccessScope::builder()
                .r#type(aws_sdk_eks::types::AccessScopeType::from(
                    p["scope"].as_str().unwrap(),
                ))
                .set_namespaces((!namespaces.is_empty()).then_some(namespaces))
                .build();
            eks.associate_access_policy()
                .cluster_name(cluster)
                .principal_arn(principal)
                .policy_arn(p["policyArn"].as_str().unwrap())
                .access_scope(scope)
                .send()
                .await
                .unwrap();
        }
    }
    let kms = aws_sdk_kms::Client::new(&conf);
    for f in of(&facts, "kmsKey") {
        let v = &f["value"];
        let id = v["keyId"].as_str().unwrap();
        kms.create_key()
            .policy(v["policy"].as_str().unwrap())
            .tags(
                aws_sdk_kms::types::Tag::builder()
                    .tag_key("karpmoto:id")
                    .tag_value(id)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        match v["keyState"].as_str() {
            Some("Disabled") => {
                kms.disable_key().key_id(id).send().await.unwrap();
            }
            Some("PendingDeletion") => {
                kms.schedule_key_deletion().key_id(id).send().await.unwrap();
            }
            _ => {}
        }
    }
    for f in of(&facts, "kmsGrants") {
        let key = f["fact"]["kmsGrants"]["keyId"].as_str().unwrap();
        for g in f["value"].as_array().unwrap() {
            let mut grant = kms
                .create_grant()
                .key_id(key)
                .grantee_principal(g["granteePrincipal"].as_str().unwrap());
            for op in g["operations"].as_array().unwrap() {
                grant = grant.operations(aws_sdk_kms::types::GrantOperation::from(
                    op.as_str().unwrap(),
                ));
            }
            if g["constrained"] == true {
                grant = grant.constraints(
                    aws_sdk_kms::types::GrantConstraints::builder()
                        .encryption_context_equals("aws:ebs:id", "vol-0123456789abcdef0")
                        .build(),
                );
            }
            grant.send().await.unwrap();
        }
    }
    let ec2 = aws_sdk_ec2::Client::new(&conf);
    // Instances as EC2 describes them: a recorded id, and for one EC2 ended, why.
    for f in of(&facts, "ec2Instances") {
        for i in f["value"].as_array().unwrap() {
            let id = i["instanceId"].as_str().unwrap();
            let mut tags = vec![
                aws_sdk_ec2::types::Tag::builder()
                    .key("karpmoto:id")
                    .value(id)
                    .build(),
            ];
            if let (Some(code), Some(message)) = (
                i["stateReasonCode"].as_str(),
                i["stateReasonMessage"].as_str(),
            ) {
                tags.push(
                    aws_sdk_ec2::types::Tag::builder()
                        .key("karpmoto:state-reason")
                        .value(format!("{code}|{message}"))
                        .build(),
                );
            }
            ec2.run_instances()
                .image_id("ami-0a1b2c3d4e5f60718")
                .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
                .min_count(1)
                .max_count(1)
                .tag_specifications(
                    aws_sdk_ec2::types::TagSpecification::builder()
                        .resource_type(aws_sdk_ec2::types::ResourceType::Instance)
                        .set_tags(Some(tags))
                        .build(),
                )
                .send()
                .await
                .unwrap();
            if matches!(i["state"].as_str(), Some("terminated" | "shutting-down")) {
                ec2.terminate_instances()
                    .instance_ids(id)
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
    // What the instances printed to their consoles (EC2 keeps it; the emulator is told).
    let region = bundle["target"]["region"].as_str().unwrap_or("us-west-2");
    for f in facts
        .iter()
        .filter(|f| f["fact"].get("ec2ConsoleOutput").is_some())
    {
        if let Some(output) = f["value"].as_str() {
            let seed = serde_json::json!({
                "instanceId": f["fact"]["ec2ConsoleOutput"]["instanceId"],
                "output": output,
                "region": region,
            });
            emulator_post(
                url,
                "/karpmoto-api/console-output",
                &format!(
                    "Content-Type: application/json\r\nx-moto-account-id: {FIXTURE_ACCOUNT}\r\n"
                ),
                &seed.to_string(),
                "console output",
            );
        }
    }
    for f in of(&facts, "ebsDefaults") {
        if f["value"]["encryptedByDefault"] == true {
            ec2.enable_ebs_encryption_by_default().send().await.unwrap();
        }
        if let Some(key) = f["value"]["defaultKmsKeyId"]
            .as_str()
            .filter(|k| *k != "alias/aws/ebs")
        {
            ec2.modify_ebs_default_kms_key_id()
                .kms_key_id(key)
                .send()
                .await
                .unwrap();
        }
    }
    let ssm = aws_sdk_ssm::Client::new(&conf);
    for f in of(&facts, "ssmParameters") {
        for (name, value) in f["value"].as_object().unwrap() {
            if let Some(value) = value.as_str() {
                ssm.put_parameter()
                    .name(name)
                    .value(value)
                    .r#type(aws_sdk_ssm::types::ParameterType::String)
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
    for f in of(&facts, "oidcProviders") {
        for p in f["value"].as_array().unwrap() {
            let client_ids: Vec<String> = p["clientIds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            iam.create_open_id_connect_provider()
                .url(format!("https://{}", p["url"].as_str().unwrap()))
                .set_client_id_list(Some(client_ids))
                .thumbprint_list("9e99a48a9960b14926bb7f3b02e22da2b0ab7280")
                .send()
                .await
                .unwrap();
        }
    }
    for f in of(&facts, "eksAddon") {
        eks.create_addon()
            .cluster_name(f["fact"]["eksAddon"]["cluster"].as_str().unwrap())
            .addon_name(f["value"]["name"].as_str().unwrap())
            .send()
            .await
            .unwrap();
    }
    for f in of(&facts, "podIdentityAssociations") {
        let cluster = f["fact"]["podIdentityAssociations"]["cluster"]
            .as_str()
            .unwrap();
        for a in f["value"].as_array().unwrap() {
            eks.create_pod_identity_association()
                .cluster_name(cluster)
                .namespace(a["namespace"].as_str().unwrap())
                .service_account(a["serviceAccount"].as_str().unwrap())
                .role_arn(a["roleArn"].as_str().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    seed_fargate_profiles(&conf, &facts).await;
    seed_queues_and_rules(&conf, &facts).await;
}

/// The Fargate profiles of a bundle's clusters (`eksFargateProfiles`), after the clusters
/// themselves. The emulator makes each one ACTIVE, whatever status was recorded.
async fn seed_fargate_profiles(conf: &aws_config::SdkConfig, facts: &[serde_json::Value]) {
    use aws_sdk_eks::types::FargateProfileSelector;
    let eks = aws_sdk_eks::Client::new(conf);
    for f in of(facts, "eksFargateProfiles") {
        let cluster = f["fact"]["eksFargateProfiles"]["cluster"].as_str().unwrap();
        for p in f["value"].as_array().into_iter().flatten() {
            let mut create = eks
                .create_fargate_profile()
                .cluster_name(cluster)
                .fargate_profile_name(p["name"].as_str().unwrap())
                .pod_execution_role_arn(p["podExecutionRoleArn"].as_str().unwrap_or_default());
            for subnet in p["subnets"].as_array().into_iter().flatten() {
                create = create.subnets(subnet.as_str().unwrap());
            }
            for s in p["selectors"].as_array().into_iter().flatten() {
                let mut selector = FargateProfileSelector::builder()
                    .set_namespace(s["namespace"].as_str().map(str::to_string));
                for (k, v) in s["labels"].as_object().into_iter().flatten() {
                    selector = selector.labels(k, v.as_str().unwrap_or_default());
                }
                create = create.selectors(selector.build());
            }
            create.send().await.unwrap();
        }
    }
}

/// The queue attributes `CreateQueue` accepts. The others `GetQueueAttributes` reports
/// (`QueueArn`, `ApproximateNumberOfMessages*`, `CreatedTimestamp`, `LastModifiedTimestamp`)
/// are read-only, and the emulator answers them afresh.
const SETTABLE_QUEUE_ATTRIBUTES: &[&str] = &[
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "Policy",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
];

/// SQS queues (`sqsQueue` with its recorded attributes, then the names of `sqsQueues` that do
/// not exist yet) and, after them, the EventBridge rules that target them (`eventRules`), with
/// their targets.
async fn seed_queues_and_rules(conf: &aws_config::SdkConfig, facts: &[serde_json::Value]) {
    use aws_sdk_eventbridge::types::{RuleState, Target};
    use aws_sdk_sqs::types::QueueAttributeName;
    let sqs = aws_sdk_sqs::Client::new(conf);
    for f in of(facts, "sqsQueue") {
        let v = &f["value"];
        let name = v["name"]
            .as_str()
            .or(f["fact"]["sqsQueue"]["name"].as_str())
            .unwrap();
        let mut create = sqs.create_queue().queue_name(name);
        for (k, value) in v["attributes"].as_object().into_iter().flatten() {
            if let Some(value) = value
                .as_str()
                .filter(|_| SETTABLE_QUEUE_ATTRIBUTES.contains(&k.as_str()))
            {
                create = create.attributes(QueueAttributeName::from(k.as_str()), value);
            }
        }
        create.send().await.unwrap();
    }
    for f in of(facts, "sqsQueues") {
        for name in f["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str())
        {
            if sqs.get_queue_url().queue_name(name).send().await.is_ok() {
                continue;
            }
            let mut create = sqs.create_queue().queue_name(name);
            if name.ends_with(".fifo") {
                // AWS refuses a FIFO name without the attribute.
                create = create.attributes(QueueAttributeName::FifoQueue, "true");
            }
            create.send().await.unwrap();
        }
    }
    let events = aws_sdk_eventbridge::Client::new(conf);
    for f in of(facts, "eventRules") {
        for r in f["value"].as_array().into_iter().flatten() {
            let name = r["name"].as_str().unwrap();
            let pattern = r["eventPattern"].as_str().filter(|p| !p.is_empty());
            events
                .put_rule()
                .name(name)
                .set_event_pattern(pattern.map(str::to_string))
                // A rule without a pattern is a scheduled one; bundles keep no schedule.
                .set_schedule_expression(pattern.is_none().then(|| "rate(1 day)".to_string()))
                .state(RuleState::from(
                    r["state"]
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .unwrap_or("ENABLED"),
                ))
                .send()
                .await
                .unwrap();
            let targets: Vec<Target> = r["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    Target::builder()
                        .id(t["id"].as_str().unwrap())
                        .arn(t["arn"].as_str().unwrap())
                        .build()
                        .unwrap()
                })
                .collect();
            if !targets.is_empty() {
                events
                    .put_targets()
                    .rule(name)
                    .set_targets(Some(targets))
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

/// Credentials of the identity a bundle was recorded as, when its `emulator.assumeRole`
/// names one (pre-install scenarios simulate the caller's own role): an STS session from the
/// emulator, as `(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)` env pairs.
pub async fn caller_env(url: &str, bundle: &serde_json::Value) -> Vec<(&'static str, String)> {
    let Some(role) = bundle["emulator"]["assumeRole"].as_object() else {
        return Vec::new();
    };
    let conf = emulator_config(url).await;
    let out = aws_sdk_sts::Client::new(&conf)
        .assume_role()
        .role_arn(role["roleArn"].as_str().unwrap())
        .role_session_name(role["session"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let c = out.credentials().unwrap();
    vec![
        ("AWS_ACCESS_KEY_ID", c.access_key_id().to_string()),
        ("AWS_SECRET_ACCESS_KEY", c.secret_access_key().to_string()),
        ("AWS_SESSION_TOKEN", c.session_token().to_string()),
    ]
}

/// A fixture's policy: its `reference` (a release's controller policy) or its `document`.
fn policy_of(p: &serde_json::Value) -> serde_json::Value {
    match p.get("reference") {
        Some(r) => reference_policy(r),
        None => p["document"].clone(),
    }
}

/// The reference controller policy a fixture's `emulator.rolePolicies[].reference` asks for:
/// `{"version": "1.8.1", "omit": [Sids]}`, rendered by karpdoctor's own data for the fixture
/// cluster (so a healthy fixture is healthy by the same definition the checks use).
fn reference_policy(r: &serde_json::Value) -> serde_json::Value {
    use karpdoctor::iam::reference::{Version, policy_document};
    let version = Version::parse(r["version"].as_str().unwrap()).unwrap();
    let cluster = format!("arn:aws:eks:us-west-2:{FIXTURE_ACCOUNT}:cluster/demo");
    let parsed = karpdoctor::arn::Arn::parse(&cluster).unwrap();
    let mut vars = karpdoctor::checks::common::grants::base_vars(&parsed, "demo", &cluster);
    vars.insert(
        "queueArn".into(),
        format!("arn:aws:sqs:us-west-2:{FIXTURE_ACCOUNT}:demo"),
    );
    vars.insert(
        "nodeRoleArn".into(),
        format!("arn:aws:iam::{FIXTURE_ACCOUNT}:role/KarpenterNodeRole-demo"),
    );
    let mut doc = policy_document(version, &vars);
    let omit: Vec<&str> = r["omit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str())
        .collect();
    doc["Statement"]
        .as_array_mut()
        .unwrap()
        .retain(|s| !omit.contains(&s["Sid"].as_str().unwrap_or_default()));
    doc
}

/// One AWS Organizations call (JSON protocol) to the emulator; the tests need no
/// Organizations SDK for the three calls that set up SCPs.
fn organizations(url: &str, operation: &str, body: serde_json::Value) -> serde_json::Value {
    let headers = format!(
        "Content-Type: application/x-amz-json-1.1\r\n\
         X-Amz-Target: AWSOrganizationsV20161128.{operation}\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=testing/20261123/us-east-1/organizations/aws4_request, SignedHeaders=host, Signature=0\r\n"
    );
    let json = emulator_post(url, "/", &headers, &body.to_string(), operation);
    serde_json::from_str(if json.is_empty() { "{}" } else { &json }).unwrap_or_default()
}
