//! The upgrade plan of `karpdoctor upgrade`: the steps in the order to take them
//! (docs/upgrade.md §4), each with what the checks found in its way and the commands that do
//! it. Pure: built from the resolved target and the upgrade checks' findings, each of which
//! names its step ([`PlanStep`]); the steps every upgrade takes (the CRD chart, the
//! controller, the control plane one minor at a time) come from the targets alone.

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, PlanStep, Severity};
use crate::iam::reference::Version;
use crate::target::Target;
use crate::upgrade::releases::{self, Minor};

/// The plan, in the order to apply it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The installed Karpenter release and the one to go to (absent: not upgraded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The release this plan's charts go to when it is not `to`: a hop the upgrade must pass
    /// through, or the next good patch in place of a release to avoid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charts_to: Option<String>,
    /// The cluster's Kubernetes minor and the one to go to (absent: not upgraded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_to: Option<String>,
    pub steps: Vec<Step>,
    /// Upgrade checks that could not judge: the plan cannot say what their part needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<String>,
}

impl Plan {
    /// What the plan moves: "Karpenter 1.0.2 → 1.1.0, Kubernetes 1.30 → 1.31".
    pub fn moves(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(a), Some(b)) = (&self.from, &self.to) {
            parts.push(match &self.charts_to {
                Some(c) => format!("Karpenter {a} → {b} (this plan: to {c})"),
                None => format!("Karpenter {a} → {b}"),
            });
        }
        if let (Some(a), Some(b)) = (&self.kubernetes_from, &self.kubernetes_to) {
            parts.push(format!("Kubernetes {a} → {b}"));
        }
        if parts.is_empty() {
            "nothing to move".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// One step of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub step: PlanStep,
    pub title: String,
    /// Whether an error finding stands behind the step: without it the upgrade fails.
    pub required: bool,
    /// What to do, one line each: the findings' hints first, then the step's own.
    pub actions: Vec<String>,
    /// Commands, in order.
    pub commands: Vec<String>,
    /// The findings the step resolves, as `CODE object`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

impl Step {
    /// Why the step is there, for the renderers: "required: KD1102 Karpenter 1.0.2" (or the
    /// findings alone when none is an error); `None` for a step every upgrade takes.
    pub fn reasons(&self) -> Option<String> {
        if self.findings.is_empty() {
            return None;
        }
        Some(format!(
            "{}{}",
            if self.required { "required: " } else { "" },
            self.findings.join("; ")
        ))
    }
}

/// An upgrade check as the plan sees it.
pub struct Judged<'a> {
    pub code: &'a str,
    /// Why the check could not judge, when it could not.
    pub unknown: Option<&'a str>,
    pub findings: &'a [Finding],
}

/// The Helm release and chart names the install guides use; karpdoctor sees the controller
/// Deployment, not the Helm release, and the guides name both `karpenter`.
const CHART: &str = "oci://public.ecr.aws/karpenter/karpenter";
const CRD_CHART: &str = "oci://public.ecr.aws/karpenter/karpenter-crd";

/// The plan for the run's targets; `None` when the run asked for no upgrade.
pub fn build(target: &Target, judged: &[Judged]) -> Option<Plan> {
    let from = target.karpenter_version.as_deref().and_then(Version::parse);
    let to = target.upgrade_to.as_deref().and_then(Version::parse);
    let minor_now = target.kubernetes_version.as_deref().and_then(Minor::parse);
    let minor_to = target.upgrade_kubernetes.as_deref().and_then(Minor::parse);
    if to.is_none() && minor_to.is_none() {
        return None;
    }
    let namespace = target.karpenter_namespace.as_deref().unwrap_or("karpenter");
    // Karpenter moves only forward, and only from a release karpdoctor can read.
    let karpenter = match (from, to) {
        (Some(f), Some(t)) if t > f => Some((f, t)),
        _ => None,
    };
    // Bounded as the checks bound it: a replayed hint is not checked by the command line.
    let control_plane = match (minor_now, minor_to) {
        (Some(a), Some(b)) if b > a && b.0 <= a.0 + 10 => Some((a, b)),
        _ => None,
    };

    let mut steps: Vec<Step> = Vec::new();
    let tagged = |step: PlanStep, title: String| {
        let mut s = Step {
            step,
            title,
            required: false,
            actions: Vec::new(),
            commands: Vec::new(),
            findings: Vec::new(),
        };
        for j in judged {
            for f in j.findings.iter().filter(|f| f.step() == Some(step)) {
                s.required |= f.severity == Severity::Error;
                s.findings.push(format!("{} {}", f.code, f.object));
                push_new(&mut s.actions, &f.hint);
                for c in &f.remediation.commands {
                    push_new(&mut s.commands, c);
                }
            }
        }
        s
    };
    let path = tagged(PlanStep::Path, "Choose the path".to_string());
    let nodes = tagged(
        PlanStep::Nodes,
        "Move the nodes whose AMIs the target cannot run".to_string(),
    );
    let iam = tagged(
        PlanStep::Iam,
        format!(
            "Give the controller role what Karpenter {} needs",
            to.map_or_else(|| "the target".to_string(), |t| t.to_string())
        ),
    );
    let objects = tagged(
        PlanStep::Objects,
        "Change the objects the target refuses or reads differently".to_string(),
    );
    let stored = tagged(
        PlanStep::StoredVersions,
        "Finish moving the stored objects to v1".to_string(),
    );
    let mut crds = tagged(PlanStep::Crds, String::new());
    let mut controller = tagged(PlanStep::Controller, String::new());
    let mut plane = tagged(PlanStep::ControlPlane, String::new());

    for s in [path, nodes, iam, objects, stored] {
        if !s.findings.is_empty() {
            steps.push(s);
        }
    }
    // Where this plan's charts go: not past a release the upgrade must stop at (the stored
    // versions' hop), and not to a release not to run (the next good patch instead). The
    // rest of the way is planned by a run at that release.
    let mut rest: Option<String> = None;
    // Whether the hop is the stored-version migration's (the rest waits for `[v1]`).
    let mut migrating = false;
    let requested = karpenter;
    let karpenter = karpenter.map(|(f, t)| {
        // The nearest hop first: 0.37.0–0.37.6 go to the last 0.37 patch before 1.0.x.
        let hop = releases::hops(f, t)
            .into_iter()
            .filter_map(|h| Some((releases::via_target(h)?, h)))
            .min_by_key(|(via, _)| *via);
        if let Some((via, h)) = hop {
            migrating = h.required && h.reason == "stored-versions";
            rest = Some(match minor_to {
                Some(k) => format!("karpdoctor upgrade --to {t} --kubernetes {k}"),
                None => format!("karpdoctor upgrade --to {t}"),
            });
            return (f, via);
        }
        match releases::next_good(t).filter(|_| releases::avoid(t).is_some()) {
            Some(instead) => (f, instead),
            None => (f, t),
        }
    });
    let control_plane = control_plane.filter(|_| rest.is_none());
    // Past a hop the control plane is judged again by the run that plans the rest: what the
    // checks said of it here goes to that step. The controller's settings stay with the hop
    // (KD1104 judges them at the hop release).
    let mut next = Step {
        step: PlanStep::Next,
        title: "Then plan the rest of the way".to_string(),
        required: false,
        actions: Vec::new(),
        commands: Vec::new(),
        findings: Vec::new(),
    };
    if let Some((_, via)) = karpenter.filter(|_| rest.is_some()) {
        if migrating {
            next.actions.push("once every Karpenter CRD's status.storedVersions is [v1], judge the rest of the upgrade from there".to_string());
            next.commands.push("kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh ec2nodeclasses.karpenter.k8s.aws -o custom-columns=NAME:.metadata.name,STORED:.status.storedVersions".to_string());
        } else {
            next.actions.push(format!(
                "once {via} runs, judge the rest of the upgrade from there"
            ));
        }
        let emptied = Step {
            actions: Vec::new(),
            commands: Vec::new(),
            findings: Vec::new(),
            ..plane.clone()
        };
        let moved = std::mem::replace(&mut plane, emptied);
        next.required |= moved.required;
        plane.required = false;
        next.findings.extend(moved.findings);
        for a in &moved.actions {
            push_new(&mut next.actions, a);
        }
    }
    let mut karpenter_steps = Vec::new();
    if let Some((_, t)) = karpenter {
        crds.title = format!("Upgrade the CRDs to {t}");
        crds.actions.push(
            "Helm installs the karpenter chart's CRDs once and never upgrades them: upgrade them with the karpenter-crd chart (or apply the release's CRDs with kubectl if that is how they were installed)".to_string(),
        );
        crds.actions.push(format!(
            "if Helm refuses with \"invalid ownership metadata\" (the CRDs came with the karpenter chart), first label each CRD app.kubernetes.io/managed-by=Helm and annotate it meta.helm.sh/release-name=karpenter-crd and meta.helm.sh/release-namespace={namespace} (Karpenter's troubleshooting guide)"
        ));
        let mut cmd = format!(
            "helm upgrade --install karpenter-crd {CRD_CHART} --version {t} --namespace {namespace}"
        );
        if releases::crd_chart_webhook(t) {
            // The conversion webhook of 0.37.1–1.0.x must name the controller's Service.
            cmd.push_str(&format!(
                " --set webhook.enabled=true --set webhook.serviceName=karpenter --set webhook.serviceNamespace={namespace} --set webhook.port=8443"
            ));
        }
        crds.commands.insert(0, cmd);
        karpenter_steps.push(crds);

        controller.title = format!("Upgrade the controller to {t}");
        let gates = from.map_or_else(Vec::new, |f| releases::chart_gates_added(f, t));
        controller.actions.push(if gates.is_empty() {
            "reuse your values on the new chart's defaults (--reset-then-reuse-values, Helm 3.14 or later; or pass your values file with -f): a bare --reuse-values keeps the old chart's values and leaves out what the new chart needs".to_string()
        } else {
            // KSK#2575, KSK#3073: the new chart renders gates the reused values lack as empty.
            format!(
                "reuse your values on the new chart's defaults (--reset-then-reuse-values, Helm 3.14 or later; or pass your values file with -f): with a bare --reuse-values the chart at {t} renders {} empty and the controller refuses to start (\"invalid value of {}\")",
                gates.iter().map(|g| format!("{g}=")).collect::<Vec<_>>().join(","),
                gates[0]
            )
        });
        // 0.37.1–1.0.x serve the CRDs' conversion webhook from the controller: the v1 migration
        // guide turns it on explicitly (0.37.1 and 0.37.2 default it off).
        let webhook = if releases::crd_chart_webhook(t) {
            " --set webhook.enabled=true --set webhook.port=8443"
        } else {
            ""
        };
        controller.commands.insert(
            0,
            format!(
                "helm upgrade karpenter {CHART} --version {t} --namespace {namespace} --reset-then-reuse-values{webhook}"
            ),
        );
        controller
            .actions
            .push(format!("then run karpdoctor to check the install at {t}"));
        controller.commands.push("karpdoctor".to_string());
        karpenter_steps.push(controller);
    }
    if let Some(command) = rest {
        next.commands.push(command);
        karpenter_steps.push(next);
    }
    // Karpenter first, then the control plane (the release must accept both minors), unless
    // only the other order works: the target release refuses today's minor while the
    // installed one accepts the next. Then the control plane goes only as far as the first
    // minor the target accepts, Karpenter moves, and the control plane goes on.
    let first_minor = match (karpenter, control_plane) {
        (Some((f, t)), Some((now, goal))) => {
            let target_range = releases::kubernetes(t);
            let installed_accepts_next =
                releases::kubernetes(f).is_some_and(|k| k.accepts(Minor(now.0 + 1)));
            match target_range {
                Some(k) if !k.accepts(now) && installed_accepts_next && k.min > now => {
                    Some(k.min.min(goal))
                }
                _ => None,
            }
        }
        _ => None,
    };
    let cluster = target.cluster.as_deref().unwrap_or("<cluster>");
    let region = target
        .region
        .as_deref()
        .map(|r| format!(" --region {r}"))
        .unwrap_or_default();
    // The commands that take the control plane from `from` to `to`, one minor at a time.
    let minors = |from: Minor, to: Minor| {
        let mut commands = Vec::new();
        for m in from.0 + 1..=to.0 {
            let minor = Minor(m);
            if m > from.0 + 1 {
                commands.push(format!("karpdoctor upgrade --kubernetes {minor}"));
            }
            commands.push(format!(
                "aws eks update-cluster-version --name {cluster}{region} --kubernetes-version {minor}"
            ));
            commands.push(format!(
                "aws eks wait cluster-active --name {cluster}{region}"
            ));
        }
        commands
    };
    let drift = "after each minor, nodes whose EC2NodeClass selects its AMIs by alias drift to that minor's AMIs and are replaced; nodes on AMIs chosen by id, name or tag keep the old kubelet until those AMIs are changed".to_string();
    match (control_plane, first_minor) {
        (Some((now, goal)), Some(first)) => {
            // The control plane to the target's first minor, Karpenter, then the rest.
            steps.push(Step {
                step: PlanStep::ControlPlane,
                title: format!(
                    "Upgrade the control plane to {first} first, one minor at a time (the target release does not run on {now})"
                ),
                required: true,
                actions: vec![drift.clone()],
                commands: minors(now, first),
                findings: Vec::new(),
            });
            steps.extend(karpenter_steps);
            if goal > first {
                plane.title = format!("Upgrade the control plane to {goal}, one minor at a time");
                plane.commands.extend(minors(first, goal));
                plane.actions.push(drift);
                steps.push(plane);
            } else if !plane.findings.is_empty() {
                steps.push(plane);
            }
        }
        (Some((now, goal)), None) => {
            steps.extend(karpenter_steps);
            plane.title = format!("Upgrade the control plane to {goal}, one minor at a time");
            plane.commands.extend(minors(now, goal));
            plane.actions.push(drift);
            steps.push(plane);
        }
        (None, _) => {
            steps.extend(karpenter_steps);
            if !plane.findings.is_empty() {
                // A finding about the control plane without a move to plan (a minor below
                // the cluster's): the step still says what stands in the way.
                plane.title = "The control plane".to_string();
                steps.push(plane);
            }
        }
    }

    let unjudged = judged
        .iter()
        .filter_map(|j| j.unknown.map(|why| format!("{}: {why}", j.code)))
        .collect();
    Some(Plan {
        from: requested.map(|(f, _)| f.to_string()),
        to: requested.map(|(_, t)| t.to_string()),
        charts_to: karpenter
            .filter(|(_, c)| requested.is_some_and(|(_, t)| t != *c))
            .map(|(_, c)| c.to_string()),
        kubernetes_from: control_plane.map(|(a, _)| a.to_string()),
        kubernetes_to: control_plane.map(|(_, b)| b.to_string()),
        steps,
        unjudged,
    })
}

fn push_new(list: &mut Vec<String>, item: &str) {
    if !item.is_empty() && !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(from: &str, to: Option<&str>, k_now: &str, k_to: Option<&str>) -> Target {
        Target {
            cluster: Some("prod".to_string()),
            region: Some("eu-west-1".to_string()),
            karpenter_namespace: Some("kube-system".to_string()),
            karpenter_version: Some(from.to_string()),
            kubernetes_version: Some(k_now.to_string()),
            upgrade_to: to.map(str::to_string),
            upgrade_kubernetes: k_to.map(str::to_string),
            ..Target::default()
        }
    }

    fn finding(code: &str, severity: Severity, step: PlanStep, fix: &str) -> Finding {
        Finding::new(
            "Role/KarpenterController",
            "needs ec2:DescribeInstanceStatus",
        )
        .severity(severity)
        .hint("apply the policy")
        .fix(fix)
        .in_step(step)
        .finish(code, Severity::Error)
    }

    fn order(plan: &Plan) -> Vec<PlanStep> {
        plan.steps.iter().map(|s| s.step).collect()
    }

    /// The JSON schema lists every step a plan can name (schemaVersion 1 is a contract).
    #[test]
    fn every_step_is_in_the_report_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/report.v1.json")).unwrap();
        let listed = &schema["properties"]["plan"]["properties"]["steps"]["items"]["properties"]["step"]
            ["enum"];
        for step in PlanStep::ALL {
            let name = serde_json::to_value(step).unwrap();
            assert!(
                listed.as_array().unwrap().contains(&name),
                "{name} is missing from schema/report.v1.json"
            );
        }
    }

    #[test]
    fn no_targets_no_plan() {
        assert_eq!(build(&target("1.9.0", None, "1.33", None), &[]), None);
    }

    #[test]
    fn findings_go_before_the_charts_and_the_charts_before_the_control_plane() {
        let iam = [finding(
            "KD1101",
            Severity::Warning,
            PlanStep::Iam,
            "aws iam put-role-policy …",
        )];
        let t = target("1.5.0", Some("1.7.0"), "1.32", Some("1.34"));
        let plan = build(
            &t,
            &[Judged {
                code: "KD1101",
                unknown: None,
                findings: &iam,
            }],
        )
        .unwrap();
        assert_eq!(
            order(&plan),
            [
                PlanStep::Iam,
                PlanStep::Crds,
                PlanStep::Controller,
                PlanStep::ControlPlane
            ]
        );
        // A warning does not make its step required.
        assert!(!plan.steps[0].required);
        assert_eq!(plan.steps[0].findings, ["KD1101 Role/KarpenterController"]);
        let crds = &plan.steps[1].commands[0];
        assert!(crds.contains("karpenter-crd") && crds.contains("--version 1.7.0"));
        assert!(!crds.contains("webhook"), "1.7's CRDs convert nothing");
        assert!(plan.steps[2].commands[0].contains("--reset-then-reuse-values"));
        // 1.7 adds NodeOverlay to the chart: a bare --reuse-values renders it empty.
        assert!(
            plan.steps[2].actions[0].contains("NodeOverlay="),
            "{:?}",
            plan.steps[2]
        );
        // Two minors: two updates, the second after a fresh check.
        let plane = &plan.steps[3].commands;
        assert_eq!(
            plane
                .iter()
                .filter(|c| c.starts_with("aws eks update-cluster-version"))
                .count(),
            2
        );
        assert!(plane.contains(&"karpdoctor upgrade --kubernetes 1.34".to_string()));
        assert!(plane[0].contains("--name prod --region eu-west-1 --kubernetes-version 1.33"));
    }

    #[test]
    fn a_1_0_target_names_the_conversion_webhooks_service() {
        let plan = build(&target("0.37.7", Some("1.0.14"), "1.30", None), &[]).unwrap();
        let crds = &plan.steps[0].commands[0];
        assert!(
            crds.contains("webhook.serviceNamespace=kube-system"),
            "{crds}"
        );
    }

    #[test]
    fn the_control_plane_goes_first_when_only_that_order_works() {
        // 1.5.0 accepts 1.26 to 1.33, 1.4.0 accepts 1.25 to 1.32: on 1.25, 1.5.0 cannot run
        // until the cluster is on 1.26, which 1.4.0 accepts.
        let plan = build(&target("1.4.0", Some("1.5.0"), "1.25", Some("1.26")), &[]).unwrap();
        assert_eq!(
            order(&plan),
            [PlanStep::ControlPlane, PlanStep::Crds, PlanStep::Controller]
        );
        // Further minors wait for Karpenter: 1.4.0 stops at 1.32.
        let plan = build(&target("1.4.0", Some("1.5.0"), "1.25", Some("1.28")), &[]).unwrap();
        assert_eq!(
            order(&plan),
            [
                PlanStep::ControlPlane,
                PlanStep::Crds,
                PlanStep::Controller,
                PlanStep::ControlPlane
            ]
        );
        let updates = |s: &Step| {
            s.commands
                .iter()
                .filter(|c| c.starts_with("aws eks update-cluster-version"))
                .count()
        };
        assert_eq!(updates(&plan.steps[0]), 1);
        assert_eq!(updates(&plan.steps[3]), 2);
        // The usual case: Karpenter first.
        let plan = build(&target("1.5.0", Some("1.7.0"), "1.32", Some("1.33")), &[]).unwrap();
        assert_eq!(
            order(&plan),
            [PlanStep::Crds, PlanStep::Controller, PlanStep::ControlPlane]
        );
    }

    #[test]
    fn a_required_hop_stops_the_charts_there_and_plans_the_rest_from_it() {
        let plan = build(&target("1.0.2", Some("1.2.0"), "1.30", Some("1.31")), &[]).unwrap();
        assert_eq!(plan.to.as_deref(), Some("1.2.0"));
        assert_eq!(
            order(&plan),
            [PlanStep::Crds, PlanStep::Controller, PlanStep::Next]
        );
        assert!(plan.steps[0].commands[0].contains("--version 1.0.14"));
        assert!(plan.steps[1].commands[0].contains("--version 1.0.14"));
        assert_eq!(
            plan.steps[2].commands.last().map(String::as_str),
            Some("karpdoctor upgrade --to 1.2.0 --kubernetes 1.31")
        );
    }

    #[test]
    fn past_a_hop_the_control_plane_waits_for_the_next_run_and_settings_stay_with_the_hop() {
        let findings = [
            Finding::new("Deployment/karpenter/karpenter", "sets ASSUME_ROLE_ARN")
                .severity(Severity::Warning)
                .hint("remove it")
                .in_step(PlanStep::Controller)
                .finish("KD1104", Severity::Warning),
            Finding::new("Karpenter 1.2.0", "accepts 1.25 to 1.32, not 1.33")
                .hint("pick another release")
                .in_step(PlanStep::ControlPlane)
                .finish("KD1103", Severity::Error),
        ];
        let plan = build(
            &target("1.0.2", Some("1.2.0"), "1.30", Some("1.31")),
            &[Judged {
                code: "KD1104",
                unknown: None,
                findings: &findings,
            }],
        )
        .unwrap();
        assert_eq!(
            order(&plan),
            [PlanStep::Crds, PlanStep::Controller, PlanStep::Next]
        );
        // KD1104 judges the settings at the hop release: they belong to the hop's controller.
        assert_eq!(
            plan.steps[1].findings,
            ["KD1104 Deployment/karpenter/karpenter"]
        );
        let next = &plan.steps[2];
        assert_eq!(next.findings, ["KD1103 Karpenter 1.2.0"]);
        assert!(next.required);
    }

    #[test]
    fn a_recommended_hop_comes_before_the_migration_hop() {
        // 0.37.3 to 1.2.0: the last 0.37 patch first (the v1 migration guide), then 1.0.x.
        let plan = build(&target("0.37.3", Some("1.2.0"), "1.29", None), &[]).unwrap();
        assert!(plan.steps[0].commands[0].contains("--version 0.37.8"));
        let next = plan.steps.last().unwrap();
        assert_eq!(next.step, PlanStep::Next);
        assert!(next.actions[0].contains("once 0.37.8 runs"), "{next:?}");
        assert_eq!(
            next.commands.last().map(String::as_str),
            Some("karpdoctor upgrade --to 1.2.0")
        );
    }

    #[test]
    fn a_control_plane_finding_without_a_move_still_has_its_step() {
        let lower = [
            Finding::new("Cluster", "--kubernetes 1.30 is older than 1.31")
                .hint("give a minor at or above the cluster's")
                .in_step(PlanStep::ControlPlane)
                .finish("KD1103", Severity::Error),
        ];
        let plan = build(
            &target("1.5.0", None, "1.31", Some("1.30")),
            &[Judged {
                code: "KD1103",
                unknown: None,
                findings: &lower,
            }],
        )
        .unwrap();
        assert_eq!(order(&plan), [PlanStep::ControlPlane]);
        assert!(plan.steps[0].required && plan.steps[0].commands.is_empty());
    }

    #[test]
    fn a_release_to_avoid_is_replaced_by_the_next_good_patch() {
        let plan = build(&target("1.7.1", Some("1.8.0"), "1.33", None), &[]).unwrap();
        assert!(plan.steps[0].commands[0].contains("--version 1.8.1"));
        // The guide says not to upgrade to 1.8.4: the plan goes to 1.8.5.
        let plan = build(&target("1.7.1", Some("1.8.4"), "1.33", None), &[]).unwrap();
        assert!(plan.steps[0].commands[0].contains("--version 1.8.5"));
    }

    #[test]
    fn an_error_makes_its_step_required_and_unjudged_checks_are_named() {
        let path = [finding(
            "KD1102",
            Severity::Error,
            PlanStep::Path,
            "karpdoctor upgrade --to 1.0.14",
        )];
        let plan = build(
            &target("1.0.2", Some("1.1.0"), "1.30", None),
            &[
                Judged {
                    code: "KD1102",
                    unknown: None,
                    findings: &path,
                },
                Judged {
                    code: "KD1101",
                    unknown: Some("karpdoctor lacks iam:SimulatePrincipalPolicy"),
                    findings: &[],
                },
            ],
        )
        .unwrap();
        assert_eq!(plan.steps[0].step, PlanStep::Path);
        assert!(plan.steps[0].required);
        assert_eq!(plan.steps[0].commands, ["karpdoctor upgrade --to 1.0.14"]);
        assert_eq!(
            plan.unjudged,
            ["KD1101: karpdoctor lacks iam:SimulatePrincipalPolicy"]
        );
    }
}
