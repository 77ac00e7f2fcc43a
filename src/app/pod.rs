//! `karpdoctor pod NAMESPACE/NAME` (or `NAMESPACE -l SELECTOR`): the way from a pod to a node,
//! with timestamps: the pod and its constraints, when the scheduler gave up on it, every
//! NodePool's verdict, the NodeClaim Karpenter nominated it to, that NodeClaim's launch,
//! registration and initialization, and the node it runs on, or the step where it stops and
//! the check that owns that step. The checks run as in a normal run, so the owner's status is
//! this run's.

use std::sync::Arc;

use crate::bundle::Bundle;
use crate::check::CheckCx;
use crate::checks::common::codes;
use crate::checks::common::scheduling::{
    code_of, judge_pod, karpenter_event, latest_nomination, nominations,
};
use crate::cli::{Output, PodArgs};
use crate::error::Error;
use crate::model::{NodeClaim, PendingPod};
use crate::report::chain::{self, ChainReport, Owner, PodChain, Step, StepState};
use crate::report::{EXIT_FINDINGS, EXIT_OK, Report};
use crate::scheduling::pods::{self, Skip};
use crate::scheduling::{Blocked, Verdict};

use super::{Source, execute};

pub async fn pod(args: PodArgs) -> Result<u8, Error> {
    if !matches!(
        args.report.output,
        Output::Text | Output::Json | Output::Markdown
    ) {
        return Err(Error::Usage {
            message: "karpdoctor pod prints text, json or markdown (-o)".to_string(),
        });
    }
    let (namespace, name) = match (args.pod.split_once('/'), &args.selector) {
        (Some((ns, name)), None) if !ns.is_empty() && !name.is_empty() => {
            (ns.to_string(), Some(name.to_string()))
        }
        (None, Some(_)) if !args.pod.is_empty() => (args.pod.clone(), None),
        (None, Some(_)) | (_, None) => {
            return Err(Error::Usage {
                message: format!(
                    "{:?} is not NAMESPACE/NAME (or give NAMESPACE with --selector)",
                    args.pod
                ),
            });
        }
        (Some(_), Some(_)) => {
            return Err(Error::Usage {
                message: "with --selector, give only the NAMESPACE to select in".to_string(),
            });
        }
    };
    let source = match &args.target.replay {
        Some(path) => Source::Replay(Box::new(Bundle::read_for_replay(path)?)),
        None => Source::Live(None),
    };
    let checks = super::selected_checks(&args.report)?;
    let out = execute(source, &args.target, &args.report, &checks).await?;
    let cx = CheckCx::new(
        Arc::clone(&out.context),
        &crate::checks::scheduling::pending_pods_unserved::PENDING_PODS_UNSERVED,
    );
    let selector = args.selector.clone().unwrap_or_default();
    let listed = cx
        .pods(&namespace, &selector)
        .await
        .map_err(|e| Error::Usage {
            message: format!("cannot read the pods of {namespace}: {e}"),
        })?;
    let chosen: Vec<PendingPod> = listed
        .iter()
        .filter(|p| name.is_none() || p.metadata.name == name)
        .cloned()
        .map(PendingPod::from)
        .collect();
    if chosen.is_empty() {
        return Err(Error::Usage {
            message: match &name {
                Some(n) => format!("pod {namespace}/{n} does not exist"),
                None => format!("no pod in {namespace} matches {selector}"),
            },
        });
    }
    let mut chains = Vec::new();
    let mut errors = out.report.errors.clone();
    for pod in &chosen {
        match chain_of(&cx, pod, &out.report).await {
            Ok(c) => chains.push(c),
            Err(e) => errors.push(format!(
                "{}: {e}",
                pod.metadata.name.as_deref().unwrap_or("")
            )),
        }
    }
    if let Some(path) = &args.target.record {
        out.context.bundle(out.report.target.clone()).write(path)?;
    }
    let code = if chains.iter().any(PodChain::failed) && !args.report.exit_zero {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    };
    let report = ChainReport {
        schema_version: crate::report::SCHEMA_VERSION,
        kind: "PodChains".to_string(),
        karpdoctor_version: crate::VERSION.to_string(),
        mode: out.report.mode.clone(),
        target: out.report.target.clone(),
        pods: chains,
        errors,
    };
    let text = match args.report.output {
        Output::Json => chain::json(&report),
        Output::Markdown => chain::markdown(&report),
        _ => chain::text(&report),
    };
    super::print(&text)?;
    Ok(code)
}

pub(super) fn owner(report: &Report, code: &str) -> Option<Owner> {
    let c = report.checks.iter().find(|c| c.code == code)?;
    Some(Owner {
        code: c.code.clone(),
        slug: c.slug.clone(),
        status: c.status.as_str().to_string(),
    })
}

fn time(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<String> {
    t.map(|t| t.0.to_string())
}

/// One pod's chain from the facts of the run.
async fn chain_of(
    cx: &CheckCx,
    pod: &PendingPod,
    report: &Report,
) -> Result<PodChain, crate::facts::FactError> {
    let mut steps = Vec::new();
    let spec = pod.spec.as_deref();
    let requests = spec.map(pods::requests).unwrap_or_default();
    let asked: Vec<String> = requests
        .iter()
        .filter(|(k, _)| k.as_str() != "pods")
        .map(|(k, v)| format!("{k} {}", v.show(k)))
        .collect();
    let mut wants = vec![if asked.is_empty() {
        "requests nothing".to_string()
    } else {
        format!("requests {}", asked.join(", "))
    }];
    if let Some(sel) = spec.and_then(|s| s.node_selector.as_ref()) {
        let pairs: Vec<String> = sel.iter().map(|(k, v)| format!("{k}={v}")).collect();
        wants.push(format!("nodeSelector {}", pairs.join(",")));
    }
    let tolerations = spec
        .and_then(|s| s.tolerations.as_ref())
        .map_or(0, Vec::len);
    wants.push(match tolerations {
        1 => "1 toleration".to_string(),
        n => format!("{n} tolerations"),
    });
    for c in crate::scheduling::spread::zone_constraints(pod) {
        wants.push(format!(
            "zone spread maxSkew {} over {}",
            c.max_skew,
            match c.selector() {
                s if s.is_empty() => "every pod of the namespace".to_string(),
                s => s,
            }
        ));
    }
    steps.push(Step {
        step: "created".into(),
        state: StepState::Done,
        at: time(pod.metadata.creation_timestamp.as_ref()),
        detail: wants.join("; "),
    });
    let scheduled = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
    let events = cx.events("Pod", None).await?;
    let nominated = latest_nomination(pod, &*nominations(cx).await?);
    if let Some(node) = spec
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        if let Some((at, claim)) = &nominated {
            steps.push(nominated_step(at, claim));
        }
        steps.push(Step {
            step: "bound".into(),
            state: StepState::Done,
            at: scheduled
                .filter(|c| c.status == "True")
                .and_then(|c| time(c.last_transition_time.as_ref())),
            detail: format!("runs on node {node}"),
        });
        return Ok(finish(pod, steps, None));
    }
    if let Some(c) = scheduled.filter(|c| c.status == "False") {
        steps.push(Step {
            step: "unschedulable".into(),
            state: StepState::Done,
            at: time(c.last_transition_time.as_ref()),
            detail: format!(
                "{}: {}",
                c.reason.as_deref().unwrap_or(""),
                c.message.as_deref().unwrap_or("")
            ),
        });
    }
    match pods::candidate(pod, cx.now()) {
        Ok(()) | Err(Skip::TooRecent) => {}
        Err(skip) => {
            let state = if skip == Skip::NotUnschedulable {
                StepState::Waiting
            } else {
                StepState::Done
            };
            steps.push(Step {
                step: "karpenter".into(),
                state,
                at: None,
                detail: format!("Karpenter does not provision for it: {}", skip.describe()),
            });
            return Ok(finish(pod, steps, None));
        }
    }
    let claims = cx.nodeclaims().await?;
    if let Some((at, name)) = nominated {
        steps.push(nominated_step(&at, &name));
        match claims
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(&name))
        {
            Some(claim) => {
                if let Some(i) = claim_steps(claim, cx.now(), &mut steps) {
                    let code = [
                        codes::NODECLAIM_LAUNCH_FAILED,
                        codes::NODECLAIM_NOT_REGISTERED,
                        codes::NODECLAIM_NOT_INITIALIZED,
                    ][i];
                    return Ok(finish(pod, steps, owner(report, code)));
                }
                if claim
                    .status
                    .condition("Initialized")
                    .is_some_and(|c| c.status == "True")
                {
                    // Karpenter's part is done; binding is kube-scheduler's (aws#7265).
                    steps.push(Step {
                        step: "bound".into(),
                        state: StepState::Waiting,
                        at: None,
                        detail: "the node is ready for it and the pod is not bound yet: binding is kube-scheduler's step (kubectl describe pod shows its reason)".to_string(),
                    });
                }
                // Still under way, or handed to the scheduler: nothing more to judge.
                return Ok(finish(pod, steps, None));
            }
            None => steps.push(Step {
                step: "nodeclaim".into(),
                state: StepState::Done,
                at: None,
                detail: format!("NodeClaim {name} no longer exists: Karpenter will try again"),
            }),
        }
    }
    let verdict = judge_pod(cx, pod).await?;
    let (state, detail, code) = match &verdict {
        Err(why) => (
            StepState::Failed,
            format!("Karpenter ignores the pod: {why}"),
            Some(codes::PENDING_PODS_UNSERVED),
        ),
        Ok(Verdict::Served { pool }) => (
            StepState::Waiting,
            format!(
                "NodePool {pool} can serve it: Karpenter nominates it to a NodeClaim on its next pass"
            ),
            None,
        ),
        Ok(v @ Verdict::Unserved(pools)) => {
            let reasons: Vec<String> = pools
                .iter()
                .map(|(name, b): &(String, Blocked)| format!("{name}: {}", b.describe()))
                .collect();
            let detail = if reasons.is_empty() {
                "no NodePool exists".to_string()
            } else {
                reasons.join("; ")
            };
            (
                StepState::Failed,
                detail,
                code_of(v).or(Some(codes::PENDING_PODS_UNSERVED)),
            )
        }
    };
    steps.push(Step {
        step: "nodepools".into(),
        state,
        at: None,
        detail,
    });
    // Karpenter's own word on it, when it left one.
    if let Some(e) = karpenter_event(pod, &events, "FailedScheduling") {
        steps.push(Step {
            step: "karpenter says".into(),
            state,
            at: e.last_seen.map(|t| t.to_string()),
            detail: e.message.clone(),
        });
    }
    Ok(finish(pod, steps, code.and_then(|c| owner(report, c))))
}

fn finish(pod: &PendingPod, steps: Vec<Step>, owner: Option<Owner>) -> PodChain {
    PodChain {
        pod: format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or("")
        ),
        workload: pods::owner(pod),
        steps,
        owner,
    }
}

fn nominated_step(at: &Option<String>, claim: &str) -> Step {
    Step {
        step: "nominated".into(),
        state: StepState::Done,
        at: at.clone(),
        detail: format!("Karpenter nominated it to NodeClaim {claim}"),
    }
}

/// The NodeClaim's Launched, Registered and Initialized steps; the index of the one stuck long
/// enough for its check to fail (KD6001–KD6003 use the same rules), if any.
pub(super) fn claim_steps(
    claim: &NodeClaim,
    now: jiff::Timestamp,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let claim_name = claim.metadata.name.as_deref().unwrap_or("");
    for (i, type_) in ["Launched", "Registered", "Initialized"].iter().enumerate() {
        let Some(c) = claim.status.condition(type_) else {
            steps.push(Step {
                step: type_.to_lowercase(),
                state: StepState::Waiting,
                at: None,
                detail: format!("NodeClaim {claim_name} has no {type_} condition yet"),
            });
            return None;
        };
        if c.status == "True" {
            let detail = match *type_ {
                "Launched" => launched_detail(claim),
                "Registered" => {
                    format!("node {}", claim.status.node_name.as_deref().unwrap_or("?"))
                }
                _ => "the node is initialized".to_string(),
            };
            steps.push(Step {
                step: type_.to_lowercase(),
                state: StepState::Done,
                at: c.last_transition_time.as_deref().map(str::to_string),
                detail,
            });
            continue;
        }
        let stuck = crate::checks::common::nodeclaim::stuck(claim, type_, now).is_some();
        steps.push(Step {
            step: type_.to_lowercase(),
            state: if stuck {
                StepState::Failed
            } else {
                StepState::Waiting
            },
            at: c.last_transition_time.as_deref().map(str::to_string),
            detail: c.describe(),
        });
        return stuck.then_some(i);
    }
    None
}

fn launched_detail(claim: &NodeClaim) -> String {
    let labels = claim.metadata.labels.clone().unwrap_or_default();
    let instance = claim
        .status
        .provider_id
        .as_deref()
        .and_then(|p| p.rsplit('/').next())
        .unwrap_or("?")
        .to_string();
    format!(
        "instance {instance}, {} in {}, {}",
        labels
            .get("node.kubernetes.io/instance-type")
            .unwrap_or("?"),
        labels.get("topology.kubernetes.io/zone").unwrap_or("?"),
        labels.get("karpenter.sh/capacity-type").unwrap_or("?")
    )
}
