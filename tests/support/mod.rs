//! Shared helpers for the live-path tests: the AWS emulator process and the karpdoctor binary.

#![allow(dead_code)] // each test file uses a different subset

pub mod prometheus;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The moto-based AWS emulator (`tests/emulator/karpmoto.py`) on a free 127.0.0.1 port.
/// Killed on drop.
pub struct Emulator {
    child: Child,
    pub url: String,
}

impl Emulator {
    /// Starts the emulator from the virtualenv `scripts/test` creates. Fails loudly when the
    /// virtualenv is missing: the live path must not be skipped silently.
    pub fn start() -> Emulator {
        Emulator::start_with(&[])
    }

    /// Starts an emulator with extra environment (`KARPMOTO_DENY=service:Action` to take one
    /// permission away from karpdoctor's identity).
    pub fn start_with(env: &[(&str, &str)]) -> Emulator {
        let python = root().join(".venv-emulator/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash scripts/test` (it creates the emulator's virtualenv)",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(root().join("tests/emulator/karpmoto.py"))
            .args(["-H", "127.0.0.1", "-p", "0"])
            // The fixtures' account, so ARNs and the caller identity agree with the bundles.
            .env("MOTO_ACCOUNT_ID", FIXTURE_ACCOUNT)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the emulator starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the emulator exited before listening"))
                .expect("stderr is text");
            if let Some(rest) = line.split("Running on ").nth(1) {
                break rest.trim().to_string();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the emulator did not start"
            );
        };
        // Keep draining stderr so a chatty server can never block on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Emulator { child, url }
    }
}

impl Emulator {
    /// The emulator's process id (benchmarks read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `recordedAt` of every fixture bundle.
pub const FIXTURE_TIME: &str = "2026-11-23T10:00:00Z";

/// The AWS account every fixture bundle is recorded in.
pub const FIXTURE_ACCOUNT: &str = "111122223333";

/// Wipes the emulator's state (`POST /moto-api/reset`).
pub fn reset_emulator(url: &str) {
    emulator_post(url, "/moto-api/reset", "", "", "reset");
}

/// One plain HTTP POST to the emulator (its own routes, or a call the tests need no SDK for);
/// the answer must be 200, and its body is returned.
fn emulator_post(url: &str, path: &str, headers: &str, body: &str, what: &str) -> String {
    use std::io::{Read, Write};
    let host = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("emulator reachable");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "{what} failed: {answer}"
    );
    answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// Limits the emulator's instance types to those a fixture's region offers (its
/// `ec2InstanceTypes` fact), so a live run judges the same catalogue as the replay.
pub fn restrict_instance_types(url: &str, names: &[String]) {
    post_catalogue(url, &serde_json::to_string(names).unwrap());
}

/// Every instance type moto knows for the region again (until the next reset or restriction).
pub fn unrestrict_instance_types(url: &str) {
    post_catalogue(url, "null");
}

/// Answers exactly these actions (`service:Action`) with AccessDenied from now on; `&[]` for none.
pub fn deny_actions(url: &str, actions: &[&str]) {
    emulator_post(
        url,
        "/karpmoto-api/deny",
        "Content-Type: application/json\r\n",
        &serde_json::to_string(actions).unwrap(),
        "deny",
    );
}

fn post_catalogue(url: &str, body: &str) {
    emulator_post(
        url,
        "/karpmoto-api/instance-types",
        "Content-Type: application/json\r\n",
        body,
        "catalogue",
    );
}

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
            .build();
        create
            .name(v["name"].as_str().unwrap())
            .set_version(v["version"].as_str().map(str::to_string))
            .role_arn(format!("arn:aws:iam::{FIXTURE_ACCOUNT}:role/eks-cluster"))
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
        let document = match p.get("reference") {
            Some(r) => reference_policy(r),
            None => p["document"].clone(),
        };
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
            eks.create_access_entry()
                .cluster_name(cluster)
                .principal_arn(e["principalArn"].as_str().unwrap())
                .r#type(e["type"].as_str().unwrap())
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

/// EC2 state of a bundle: VPCs (a /16 around their subnets), subnets, security groups and
/// images, with the recorded ids pinned through karpmoto's `karpmoto:id` tag.
/// A fixture group's rules, as `AuthorizeSecurityGroupIngress`/`Egress` add them. EC2 gives a
/// new group one outbound rule (all traffic to 0.0.0.0/0); it is revoked first when the
/// fixture's outbound rules differ.
async fn seed_rules(ec2: &aws_sdk_ec2::Client, g: &serde_json::Value) {
    use aws_sdk_ec2::types::{IpPermission, IpRange, UserIdGroupPair};
    let id = g["groupId"].as_str().unwrap();
    let permission = |p: &serde_json::Value| {
        let mut b = IpPermission::builder()
            .ip_protocol(p["ipProtocol"].as_str().unwrap_or("-1"))
            .set_from_port(p["fromPort"].as_i64().map(|n| n as i32))
            .set_to_port(p["toPort"].as_i64().map(|n| n as i32));
        for c in p["ipRanges"].as_array().into_iter().flatten() {
            b = b.ip_ranges(IpRange::builder().cidr_ip(c.as_str().unwrap()).build());
        }
        for r in p["groups"].as_array().into_iter().flatten() {
            b = b.user_id_group_pairs(
                UserIdGroupPair::builder()
                    .group_id(r["groupId"].as_str().unwrap())
                    .build(),
            );
        }
        b.build()
    };
    let inbound: Vec<_> = g["ipPermissions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(permission)
        .collect();
    if !inbound.is_empty() {
        ec2.authorize_security_group_ingress()
            .group_id(id)
            .set_ip_permissions(Some(inbound))
            .send()
            .await
            .unwrap();
    }
    let Some(outbound) = g["ipPermissionsEgress"].as_array() else {
        return;
    };
    let all_out = serde_json::json!([{"ipProtocol": "-1", "fromPort": null, "toPort": null,
        "ipRanges": ["0.0.0.0/0"], "ipv6Ranges": [], "prefixListIds": [], "groups": []}]);
    if outbound == all_out.as_array().unwrap() {
        return;
    }
    ec2.revoke_security_group_egress()
        .group_id(id)
        .ip_permissions(permission(&all_out[0]))
        .send()
        .await
        .unwrap();
    let outbound: Vec<_> = outbound.iter().map(permission).collect();
    if !outbound.is_empty() {
        ec2.authorize_security_group_egress()
            .group_id(id)
            .set_ip_permissions(Some(outbound))
            .send()
            .await
            .unwrap();
    }
}

/// The items of a fact keyed by a VPC id (`{"ec2RouteTables": {"vpcId": …}}` and the like).
fn keyed(facts: &[serde_json::Value], kind: &str, vpc: &str) -> Vec<serde_json::Value> {
    facts
        .iter()
        .filter(|f| f["fact"][kind]["vpcId"] == vpc)
        .filter_map(|f| f["value"].as_array().cloned())
        .flatten()
        .collect()
}

/// A fixture VPC's network as EC2 builds it: DNS attributes, internet gateways attached, NAT
/// gateways on their Elastic IPs, route tables with their subnets and routes, endpoints; every
/// id pinned to the fixture's.
async fn seed_network(
    ec2: &aws_sdk_ec2::Client,
    facts: &[serde_json::Value],
    vpcs: &std::collections::BTreeMap<String, String>,
) {
    use aws_sdk_ec2::types::{
        AttributeBooleanValue, ConnectivityType, DomainType, ResourceType, Tag, TagSpecification,
        VpcEndpointType,
    };
    let pin = |kind: ResourceType, id: &str| {
        TagSpecification::builder()
            .resource_type(kind)
            .tags(Tag::builder().key("karpmoto:id").value(id).build())
            .build()
    };
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let on = |v: bool| AttributeBooleanValue::builder().value(v).build();
    for vpc in vpcs.keys() {
        for f in facts
            .iter()
            .filter(|f| f["fact"]["ec2VpcAttributes"]["vpcId"] == vpc.as_str())
        {
            let v = &f["value"];
            if v.is_null() {
                continue;
            }
            // EC2 takes one attribute per call.
            for (name, value) in [
                ("enableDnsSupport", &v["enableDnsSupport"]),
                ("enableDnsHostnames", &v["enableDnsHostnames"]),
            ] {
                let call = ec2.modify_vpc_attribute().vpc_id(vpc);
                let call = match name {
                    "enableDnsSupport" => call.enable_dns_support(on(value == true)),
                    _ => call.enable_dns_hostnames(on(value == true)),
                };
                call.send().await.unwrap();
            }
        }
        for g in keyed(facts, "ec2InternetGateways", vpc) {
            let id = g["internetGatewayId"].as_str().unwrap();
            ec2.create_internet_gateway()
                .tag_specifications(pin(ResourceType::InternetGateway, id))
                .send()
                .await
                .unwrap();
            ec2.attach_internet_gateway()
                .internet_gateway_id(id)
                .vpc_id(vpc)
                .send()
                .await
                .unwrap();
        }
        for n in keyed(facts, "ec2NatGateways", vpc) {
            let id = n["natGatewayId"].as_str().unwrap();
            let private = n["connectivityType"] == "private";
            let mut create = ec2
                .create_nat_gateway()
                .subnet_id(n["subnetId"].as_str().unwrap())
                .tag_specifications(pin(ResourceType::Natgateway, id));
            if private {
                create = create.connectivity_type(ConnectivityType::Private);
            } else if let Some(ip) = n["publicIps"][0].as_str() {
                let eip = ec2
                    .allocate_address()
                    .domain(DomainType::Vpc)
                    .address(ip)
                    .send()
                    .await
                    .unwrap();
                create = create.set_allocation_id(eip.allocation_id().map(str::to_string));
            }
            create.send().await.unwrap();
        }
        for t in keyed(facts, "ec2RouteTables", vpc) {
            let id = t["routeTableId"].as_str().unwrap();
            let associations = t["associations"].as_array().cloned().unwrap_or_default();
            if !associations.iter().any(|a| a["main"] == true) {
                ec2.create_route_table()
                    .vpc_id(vpc)
                    .tag_specifications(pin(ResourceType::RouteTable, id))
                    .send()
                    .await
                    .unwrap();
            }
            for a in associations.iter().filter(|a| a["subnetId"].is_string()) {
                ec2.associate_route_table()
                    .route_table_id(id)
                    .subnet_id(a["subnetId"].as_str().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
            for r in t["routes"].as_array().into_iter().flatten() {
                if r["gatewayId"] == "local" {
                    continue;
                }
                ec2.create_route()
                    .route_table_id(id)
                    .set_destination_cidr_block(text(&r["destinationCidrBlock"]))
                    .set_gateway_id(text(&r["gatewayId"]))
                    .set_nat_gateway_id(text(&r["natGatewayId"]))
                    .set_transit_gateway_id(text(&r["transitGatewayId"]))
                    .set_vpc_peering_connection_id(text(&r["vpcPeeringConnectionId"]))
                    .set_network_interface_id(text(&r["networkInterfaceId"]))
                    .send()
                    .await
                    .unwrap();
            }
        }
        // Network ACLs other than the default (whose entries CreateVpc makes): their entries
        // (EC2 adds the final deny itself), then the subnets moved onto them.
        for a in keyed(facts, "ec2NetworkAcls", vpc) {
            if a["isDefault"] == true {
                continue;
            }
            let id = a["networkAclId"].as_str().unwrap();
            ec2.create_network_acl()
                .vpc_id(vpc)
                .tag_specifications(pin(ResourceType::NetworkAcl, id))
                .send()
                .await
                .unwrap();
            for e in a["entries"].as_array().into_iter().flatten() {
                if e["ruleNumber"] == 32767 {
                    continue;
                }
                let mut entry = ec2
                    .create_network_acl_entry()
                    .network_acl_id(id)
                    .rule_number(e["ruleNumber"].as_i64().unwrap() as i32)
                    .protocol(e["protocol"].as_str().unwrap())
                    .rule_action(aws_sdk_ec2::types::RuleAction::from(
                        e["ruleAction"].as_str().unwrap(),
                    ))
                    .egress(e["egress"] == true)
                    .set_cidr_block(text(&e["cidrBlock"]));
                if let (Some(from), Some(to)) = (e["fromPort"].as_i64(), e["toPort"].as_i64()) {
                    entry = entry.port_range(
                        aws_sdk_ec2::types::PortRange::builder()
                            .from(from as i32)
                            .to(to as i32)
                            .build(),
                    );
                }
                entry.send().await.unwrap();
            }
            for subnet in a["subnetIds"].as_array().into_iter().flatten() {
                let subnet = subnet.as_str().unwrap();
                let current = ec2
                    .describe_network_acls()
                    .filters(
                        aws_sdk_ec2::types::Filter::builder()
                            .name("association.subnet-id")
                            .values(subnet)
                            .build(),
                    )
                    .send()
                    .await
                    .unwrap();
                let association = current
                    .network_acls()
                    .iter()
                    .flat_map(|acl| acl.associations())
                    .find(|x| x.subnet_id() == Some(subnet))
                    .and_then(|x| x.network_acl_association_id())
                    .unwrap()
                    .to_string();
                ec2.replace_network_acl_association()
                    .association_id(association)
                    .network_acl_id(id)
                    .send()
                    .await
                    .unwrap();
            }
        }
        for e in keyed(facts, "ec2VpcEndpoints", vpc) {
            let strings = |field: &str| -> Option<Vec<String>> {
                let items: Vec<String> = e[field]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
                (!items.is_empty()).then_some(items)
            };
            let kind = VpcEndpointType::from(e["vpcEndpointType"].as_str().unwrap());
            let mut create = ec2
                .create_vpc_endpoint()
                .vpc_id(vpc)
                .service_name(e["serviceName"].as_str().unwrap())
                .set_route_table_ids(strings("routeTableIds"))
                .set_subnet_ids(strings("subnetIds"))
                .set_security_group_ids(strings("groupIds"))
                .tag_specifications(pin(
                    ResourceType::VpcEndpoint,
                    e["vpcEndpointId"].as_str().unwrap(),
                ));
            if kind == VpcEndpointType::Interface {
                create = create.private_dns_enabled(e["privateDnsEnabled"] == true);
            }
            create.vpc_endpoint_type(kind).send().await.unwrap();
        }
    }
}

async fn seed_ec2(conf: &aws_config::SdkConfig, facts: &[serde_json::Value]) {
    use aws_sdk_ec2::types::{ArchitectureValues, ResourceType, Tag, TagSpecification};
    let ec2 = aws_sdk_ec2::Client::new(conf);
    let spec = |kind: ResourceType, id: &str, tags: &serde_json::Value| {
        let mut b = TagSpecification::builder()
            .resource_type(kind)
            .tags(Tag::builder().key("karpmoto:id").value(id).build());
        for (k, v) in tags.as_object().into_iter().flatten() {
            b = b.tags(
                Tag::builder()
                    .key(k)
                    .value(v.as_str().unwrap_or_default())
                    .build(),
            );
        }
        b.build()
    };
    let listed = |name: &str| -> Vec<serde_json::Value> {
        facts
            .iter()
            .filter(|f| f["fact"] == name)
            .filter_map(|f| f["value"].as_array().cloned())
            .flatten()
            .collect()
    };
    let (subnets, groups) = (listed("ec2Subnets"), listed("ec2SecurityGroups"));
    let mut vpcs = std::collections::BTreeMap::new();
    for s in &subnets {
        let cidr = s["cidrBlock"].as_str().unwrap();
        let octets: Vec<&str> = cidr.split('.').collect();
        vpcs.entry(s["vpcId"].as_str().unwrap().to_string())
            .or_insert_with(|| format!("{}.{}.0.0/16", octets[0], octets[1]));
    }
    for (i, g) in groups.iter().enumerate() {
        vpcs.entry(g["vpcId"].as_str().unwrap().to_string())
            .or_insert_with(|| format!("10.{}.0.0/16", 100 + i));
    }
    for (id, cidr) in &vpcs {
        // The main route table CreateVpc makes gets the fixture's id.
        let mut tags = serde_json::Map::new();
        for t in keyed(facts, "ec2RouteTables", id) {
            if t["associations"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a["main"] == true)
            {
                tags.insert(
                    "karpmoto:main-route-table-id".into(),
                    t["routeTableId"].clone(),
                );
            }
        }
        // And its default network ACL.
        for a in keyed(facts, "ec2NetworkAcls", id) {
            if a["isDefault"] == true {
                tags.insert(
                    "karpmoto:default-network-acl-id".into(),
                    a["networkAclId"].clone(),
                );
            }
        }
        ec2.create_vpc()
            .cidr_block(cidr)
            .tag_specifications(spec(
                ResourceType::Vpc,
                id,
                &serde_json::Value::Object(tags),
            ))
            .send()
            .await
            .unwrap();
    }
    for s in &subnets {
        ec2.create_subnet()
            .vpc_id(s["vpcId"].as_str().unwrap())
            .cidr_block(s["cidrBlock"].as_str().unwrap())
            .availability_zone(s["availabilityZone"].as_str().unwrap())
            .tag_specifications(spec(
                ResourceType::Subnet,
                s["subnetId"].as_str().unwrap(),
                &s["tags"],
            ))
            .send()
            .await
            .unwrap();
    }
    for g in &groups {
        ec2.create_security_group()
            .vpc_id(g["vpcId"].as_str().unwrap())
            .group_name(g["groupName"].as_str().unwrap())
            .description("seeded from a karpdoctor fixture")
            .tag_specifications(spec(
                ResourceType::SecurityGroup,
                g["groupId"].as_str().unwrap(),
                &g["tags"],
            ))
            .send()
            .await
            .unwrap();
    }
    // Rules after every group exists: a rule may name another group.
    for g in &groups {
        seed_rules(&ec2, g).await;
    }
    seed_network(&ec2, facts, &vpcs).await;
    for s in subnets.iter().filter(|s| s["mapPublicIpOnLaunch"] == true) {
        ec2.modify_subnet_attribute()
            .subnet_id(s["subnetId"].as_str().unwrap())
            .map_public_ip_on_launch(
                aws_sdk_ec2::types::AttributeBooleanValue::builder()
                    .value(true)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in facts
        .iter()
        .filter(|f| f["fact"].get("ec2Images").is_some())
    {
        for i in f["value"].as_array().into_iter().flatten() {
            let id = i["imageId"].as_str().unwrap();
            if !seen.insert(id.to_string()) {
                continue;
            }
            let mut tags = i["tags"].clone();
            let extra = tags.as_object_mut().unwrap();
            extra.insert("karpmoto:owner".into(), i["ownerId"].clone());
            if let Some(t) = i["deprecationTime"].as_str() {
                extra.insert("karpmoto:deprecation-time".into(), t.into());
            }
            if let Some(t) = i["creationDate"].as_str() {
                extra.insert("karpmoto:creation-date".into(), t.into());
            }
            // The image's encrypted snapshots, made as EC2 makes them: a volume encrypted
            // with the snapshot's key (from the fixture's `ec2Snapshots`), snapshotted under
            // its recorded id.
            let mut mappings = Vec::new();
            for d in i["blockDevices"].as_array().into_iter().flatten() {
                let (Some(device), Some(snapshot)) =
                    (d["deviceName"].as_str(), d["snapshotId"].as_str())
                else {
                    continue;
                };
                let Some(recorded) = facts
                    .iter()
                    .filter(|f| f["fact"].get("ec2Snapshots").is_some())
                    .flat_map(|f| f["value"].as_array().into_iter().flatten())
                    .find(|s| s["snapshotId"] == snapshot)
                else {
                    continue;
                };
                let volume = ec2
                    .create_volume()
                    .availability_zone("us-west-2a")
                    .size(20)
                    .encrypted(recorded["encrypted"] == true)
                    .set_kms_key_id(recorded["kmsKeyId"].as_str().map(str::to_string))
                    .send()
                    .await
                    .unwrap();
                ec2.create_snapshot()
                    .volume_id(volume.volume_id().unwrap())
                    .tag_specifications(spec(
                        ResourceType::Snapshot,
                        snapshot,
                        &serde_json::json!({}),
                    ))
                    .send()
                    .await
                    .unwrap();
                mappings.push(
                    aws_sdk_ec2::types::BlockDeviceMapping::builder()
                        .device_name(device)
                        .ebs(
                            aws_sdk_ec2::types::EbsBlockDevice::builder()
                                .snapshot_id(snapshot)
                                .volume_type(aws_sdk_ec2::types::VolumeType::Gp3)
                                .volume_size(20)
                                .build(),
                        )
                        .build(),
                );
            }
            let root = mappings
                .first()
                .and_then(|m| m.device_name().map(str::to_string));
            ec2.register_image()
                .name(i["name"].as_str().unwrap())
                .architecture(ArchitectureValues::from(
                    i["architecture"].as_str().unwrap(),
                ))
                .set_root_device_name(root)
                .set_block_device_mappings((!mappings.is_empty()).then_some(mappings))
                .tag_specifications(spec(ResourceType::Image, id, &tags))
                .send()
                .await
                .unwrap();
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

/// Runs the karpdoctor binary with a clean environment: no user kubeconfig, AWS profile or
/// credentials leak in from the machine running the tests.
pub fn karpdoctor(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(karpdoctor_exe());
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .env("KUBECONFIG", "/nonexistent-kubeconfig")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

/// The binary under test: the one cargo built, or `KARPDOCTOR_EXE` (to benchmark another
/// build, such as a release profile, with the same harness).
pub fn karpdoctor_exe() -> String {
    std::env::var("KARPDOCTOR_EXE").unwrap_or_else(|_| env!("CARGO_BIN_EXE_karpdoctor").to_string())
}

/// Environment for a live run against the test API server and the emulator.
pub fn live_env<'a>(kubeconfig: &'a str, aws_url: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("KUBECONFIG", kubeconfig),
        // Every fixture is recorded at this moment; a live run judges ages as of it too.
        ("KARPDOCTOR_NOW", FIXTURE_TIME),
        ("AWS_ENDPOINT_URL", aws_url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-west-2"),
    ]
}

/// A private scratch directory for one test, removed when the test passes. A test that fails
/// keeps it, so the bundle or report it wrote can be read; a passing run leaves nothing
/// behind (they held copies of the binary and whole bundles, and filled a developer's disk).
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("karpdoctor-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// See [`scratch`].
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// Keeps the directory past this value (a benchmark's reports are read afterwards).
    #[allow(dead_code)] // used by the benchmarks, not by every test crate
    pub fn keep(self) -> PathBuf {
        let dir = self.0.clone();
        std::mem::forget(self);
        dir
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Scenarios whose bundle is product data under `data/<name>/` (the demo `karpdoctor demo`
/// embeds) rather than a test fixture; their `expect.json` and `simulations.json` stay under
/// `fixtures/<name>/` with every other scenario's.
pub const PRODUCT_BUNDLES: &[&str] = &["demo"];

/// The files under `dir` whose names end with `ext`, recursively.
pub fn files_under(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every scenario: a directory of `fixtures/` with an `expect.json`.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expect.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The bundle of scenario `name`.
pub fn fixture_bundle(name: &str) -> PathBuf {
    let dir = if PRODUCT_BUNDLES.contains(&name) {
        "data"
    } else {
        "fixtures"
    };
    root().join(dir).join(name).join("bundle.json")
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON")
}

/// What a report concluded, per check: status and the objects of its findings. Live and
/// replay runs must agree on this.
pub fn verdicts(report: &serde_json::Value) -> Vec<(String, String, Vec<String>)> {
    report["checks"]
        .as_array()
        .expect("checks[]")
        .iter()
        .map(|c| {
            let mut objects: Vec<String> = c["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| f["object"].as_str().unwrap_or_default().to_string())
                .collect();
            objects.sort();
            (
                c["code"].as_str().unwrap_or_default().to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
                objects,
            )
        })
        .collect()
}

/// What a report concluded, per check: code, status and (object, message) of each finding.
pub type Verdict = (String, karpdoctor::engine::Status, Vec<(String, String)>);

pub fn report_verdicts(r: &karpdoctor::report::Report) -> Vec<Verdict> {
    r.checks
        .iter()
        .map(|c| {
            (
                c.code.clone(),
                c.status,
                c.findings
                    .iter()
                    .map(|f| (f.object.clone(), f.message.clone()))
                    .collect(),
            )
        })
        .collect()
}
