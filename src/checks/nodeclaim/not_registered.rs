//! KD6002: instances that launch but never join ("Node not registered with cluster"). The
//! NodeClaim is deleted after 15 minutes and a new one launches, so the symptom is churn and
//! the cause is almost always node authentication (aws-auth, access entries) or the volume key.

use crate::check::prelude::*;
use crate::checks::common::launch::OwnedBy;
use crate::checks::common::codes::{
    ACCESS_ENTRY_WRONG_TYPE, AUTOMODE_NODE_ACCESS_MISSING, AWS_AUTH_MALFORMED, CONTROLLER_SETTINGS_MISMATCH,
    NODE_ROLE_NOT_MAPPED, NODECLASS_EBS_KMS_UNUSABLE, NODECLASS_NODE_ROLE_INVALID,
    NODE_AWS_ENDPOINTS_UNREACHABLE, NODE_ENDPOINT_UNREACHABLE, NODE_SECURITY_GROUPS_BLOCK_CLUSTER,
    NODECLASS_USERDATA_INVALID,
};
use crate::checks::common::nodeclaim::{object, pool_of, stuck};
use crate::console;

declare_check! {
    pub static NODECLAIM_NOT_REGISTERED = {
        code: "KD6002",
        slug: "nodeclaim-not-registered",
        title: "launched NodeClaims register their nodes",
        category: Nodeclaim,
        severity: Error,
        needs: [NodeClaims, Events, Ec2Instances, Ec2ConsoleOutput],
        run: not_registered,
    }
}

/// The checks that find why a launched instance does not join.
const OWNERS: &[&str] = &[
    NODE_ROLE_NOT_MAPPED,
    AWS_AUTH_MALFORMED,
    ACCESS_ENTRY_WRONG_TYPE,
    NODECLASS_EBS_KMS_UNUSABLE,
    CONTROLLER_SETTINGS_MISMATCH,
    // A node role without the EKS node policies cannot register its node.
    NODECLASS_NODE_ROLE_INVALID,
    // User data the node cannot boot with (nodeadm rejects it, bootstrap.sh on AL2023).
    NODECLASS_USERDATA_INVALID,
    // No way to the cluster endpoint or to AWS's APIs from the subnet, or security groups
    // that keep the node and the control plane apart.
    NODE_ENDPOINT_UNREACHABLE,
    NODE_AWS_ENDPOINTS_UNREACHABLE,
    NODE_SECURITY_GROUPS_BLOCK_CLUSTER,
    // EKS Auto Mode's nodes join through their role's EC2 access entry.
    AUTOMODE_NODE_ACCESS_MISSING,
];

/// An instance terminated at launch with `Client.InternalError`: EC2 could not use a volume's
/// KMS key (EC2 user guide, "Troubleshoot instance launch issues").
const KMS_OWNERS: &[&str] = &[NODECLASS_EBS_KMS_UNUSABLE];

/// At most this many instances are looked up per run, the newest stuck claims first: enough
/// to tell one cause from another without a request per claim of a large pool.
const INSTANCES_READ: usize = 5;

/// Console lines quoted per NodeClaim: enough to show the failure, short enough to read.
const CONSOLE_LINES: usize = 5;

async fn not_registered(cx: &CheckCx) -> CheckResult {
    let claims = cx.nodeclaims().await?;
    let now = cx.now();
    let mut stuck_claims = Vec::new();
    for claim in claims.iter() {
        if claim
            .status
            .condition("Launched")
            .is_none_or(|c| c.status != "True")
        {
            continue;
        }
        let Some(c) = stuck(claim, "Registered", now) else {
            continue;
        };
        let provider_id = claim.status.provider_id.as_deref().unwrap_or_default();
        let instance = provider_id
            .rsplit('/')
            .next()
            .filter(|i| i.starts_with("i-"))
            .map(str::to_string);
        stuck_claims.push((claim, c, provider_id, instance));
    }
    // What EC2 says of the instances: an instance terminated at launch with
    // Client.InternalError never reached its kubelet (a volume whose KMS key the launch may not
    // use), which no registration check can see. Evidence only: the claim is stuck either way.
    let mut newest: Vec<&(_, _, _, Option<String>)> = stuck_claims.iter().collect();
    newest.sort_by(|a, b| b.1.last_transition_time.cmp(&a.1.last_transition_time));
    let mut ids: Vec<String> = newest
        .iter()
        .filter_map(|(_, _, _, i)| i.clone())
        .take(INSTANCES_READ)
        .collect();
    // One request, however the claims were listed.
    ids.sort();
    // The instances and their consoles are read side by side: both need only the ids.
    let (instances, consoles) = if ids.is_empty() {
        (None, Vec::new())
    } else {
        let consoles = ids.iter().map(|id| cx.enrich(cx.console_output(id)));
        let (instances, consoles) = futures::join!(
            cx.enrich(cx.ec2_instances(&ids)),
            futures::future::join_all(consoles)
        );
        (Some(instances), consoles)
    };
    let mut findings = Vec::new();
    for (claim, c, provider_id, instance) in &stuck_claims {
        let mut message = format!("launched but its node never registered ({})", c.describe());
        let mut owners: Vec<&str> = OWNERS.to_vec();
        let mut state = None;
        let mut console = None;
        let mut console_seen: Option<String> = None;
        let mut gone = false;
        if let (Some(id), Some(read)) = (instance, &instances)
            && ids.contains(id)
        {
            state = Some(match read {
                Err(e) => format!("could not read instance {id}: {e}"),
                Ok(found) => match found.iter().find(|i| &i.instance_id == id) {
                    None => {
                        gone = true;
                        format!("{id} is gone (EC2 keeps a terminated instance about an hour)")
                    }
                    Some(i) => {
                        let reason = i
                            .state_reason_message
                            .clone()
                            .or_else(|| i.state_reason_code.clone())
                            .unwrap_or_default();
                        if matches!(i.state.as_str(), "terminated" | "shutting-down")
                            && reason.contains("InternalError")
                        {
                            message = format!(
                                "launched but EC2 terminated its instance {id} at launch ({reason}): a volume whose KMS key the launch may not use ends this way, before the kubelet starts"
                            );
                            owners = KMS_OWNERS.to_vec();
                        }
                        if reason.is_empty() {
                            format!("{id} is {}", i.state)
                        } else {
                            format!("{id} is {} ({reason})", i.state)
                        }
                    }
                },
            });
        }
        // What the instance printed: the lines that show a known failure name its owner, and
        // narrow the hint to it. An instance that is gone is not judged.
        // A console that could not be read is said, even where it would not be judged.
        if let Some(id) = instance
            && let Some(i) = ids.iter().position(|x| x == id)
            && let Some(Err(e)) = consoles.get(i)
        {
            console = Some(serde_json::Value::from(format!(
                "could not read the console of {id}: {e}"
            )));
        }
        if let Some(id) = instance
            && !gone
            && owners != KMS_OWNERS
            && let Some(i) = ids.iter().position(|x| x == id)
            && let Some(Ok(read)) = consoles.get(i)
        {
            console = Some(match read.as_ref() {
                None => serde_json::Value::from(format!("{id} has printed nothing to its console yet")),
                Some(text) => {
                    let signs = console::classify(text);
                    if signs.is_empty() {
                        serde_json::Value::from(format!(
                            "{id}'s console shows no known failure (the kubelet logs to the journal, not the console)"
                        ))
                    } else {
                        let mut seen: Vec<&str> = Vec::new();
                        let mut named: Vec<&str> = Vec::new();
                        for sign in &signs {
                            if !seen.contains(&sign.what) {
                                seen.push(sign.what);
                            }
                            for o in sign.owners {
                                if !named.contains(o) {
                                    named.push(o);
                                }
                            }
                        }
                        message = format!("{message}; its console shows {}", seen.join(", "));
                        console_seen = Some(seen.join(", "));
                        owners = named;
                        serde_json::Value::from(
                            signs
                                .iter()
                                .take(CONSOLE_LINES)
                                .map(|s| s.line.clone())
                                .collect::<Vec<_>>(),
                        )
                    }
                }
            });
        }
        let mut f = Finding::new(object(claim), message)
            .evidence("nodePool", pool_of(claim))
            .evidence("condition", c.describe())
            .evidence("providerID", provider_id.to_string())
            .evidence("since", c.last_transition_time.clone().unwrap_or_default());
        if let Some(state) = state {
            f = f.evidence("instance", state);
        }
        if let Some(console) = console {
            f = f.evidence("console", console);
        }
        let instance_id = instance.as_deref().unwrap_or("<instance-id>");
        let hint = if let Some(seen) = &console_seen {
            format!("the instance's console shows {seen}: see {}", owners.join(", "))
        } else if owners == KMS_OWNERS {
            format!("the instance never booted: see {}", owners.join(", "))
        } else {
            format!(
                "the instance runs but the API server refuses or never hears from its kubelet: see {}",
                owners.join(", ")
            )
        };
        findings.push(
            f.hint(hint)
                .owned_by_checks(&owners)
                .fix(format!(
                    "kubectl describe nodeclaim {}",
                    claim.metadata.name.as_deref().unwrap_or_default()
                ))
                .fix(format!(
                    "aws ec2 describe-instances --instance-ids {instance_id} --query 'Reservations[].Instances[].[State.Name,StateReason.Message]' --output text"
                ))
                .fix(format!(
                    "aws ec2 get-console-output --instance-id {instance_id} --latest --output text"
                )),
        );
    }
    let events = cx.events("NodeClaim", None).await?;
    for e in events
        .0
        .iter()
        .filter(|e| e.reason == "UnregisteredTaintMissing")
    {
        findings.push(
            // Karpenter logs the missing taint and registers the node anyway
            // (kubernetes-sigs/karpenter, nodeclaim lifecycle registration.go): nothing fails
            // now; pods may land before its labels and taints are synced.
            Finding::new(format!("NodeClaim/{}", e.name), "the node registered without the karpenter.sh/unregistered taint: Karpenter registered it anyway, but pods can land on it before its labels and taints are synced (custom user data must register the kubelet with the taint since v1.0)")
                .severity(Severity::Warning)
                .evidence("event", e.message.clone())
                .evidence("count", e.count)
                .hint("add karpenter.sh/unregistered:NoExecute to the kubelet's registerWithTaints in the EC2NodeClass user data")
                .fix("kubectl get ec2nodeclass -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.amiFamily}{\"\\n\"}{end}'"),
        );
    }
    Ok(findings)
}
