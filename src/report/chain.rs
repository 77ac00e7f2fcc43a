//! `karpdoctor pod`: one pod's way to a node, step by step, and where it stops. The steps are
//! built by the command from the run's facts and outcomes; this is their shape and their
//! text, JSON and Markdown forms.

use serde::{Deserialize, Serialize};

use crate::target::Target;

/// How far one step got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    Done,
    /// Under way, within the time it normally takes.
    Waiting,
    Failed,
}

impl StepState {
    fn mark(self) -> &'static str {
        match self {
            StepState::Done => "✔",
            StepState::Waiting => "…",
            StepState::Failed => "✖",
        }
    }
}

/// One step of the chain: pod, Unschedulable, NodePools, nominated, launched, registered,
/// initialized, bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub step: String,
    pub state: StepState,
    /// When the step happened or began (RFC 3339), where the cluster says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub detail: String,
}

/// One pod's chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodChain {
    /// `namespace/name`.
    pub pod: String,
    /// The workload it belongs to (`Deployment/shop/web`).
    pub workload: String,
    pub steps: Vec<Step>,
    /// The check that owns the step where the chain stops, and its status in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub code: String,
    pub slug: String,
    pub status: String,
}

impl PodChain {
    /// Whether the chain stops at a failed step.
    pub fn failed(&self) -> bool {
        self.steps.iter().any(|s| s.state == StepState::Failed)
    }
}

/// The document `karpdoctor pod -o json` prints (`kind: PodChains`, schema version 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainReport {
    pub schema_version: u32,
    pub kind: String,
    pub karpdoctor_version: String,
    /// `live` or `replay`.
    pub mode: String,
    pub target: Target,
    pub pods: Vec<PodChain>,
    /// Problems of the run itself (a fact that could not be read).
    pub errors: Vec<String>,
}

pub fn json(report: &ChainReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default()
}

pub fn text(report: &ChainReport) -> String {
    let mut out = String::new();
    for chain in &report.pods {
        out.push_str(&format!("pod {} ({})\n", chain.pod, chain.workload));
        for s in &chain.steps {
            out.push_str(&format!(
                "  {:<20}  {} {:<14} {}\n",
                s.at.as_deref().unwrap_or(""),
                s.state.mark(),
                s.step,
                s.detail
            ));
        }
        match &chain.owner {
            Some(o) => out.push_str(&format!(
                "  stops here: {} {} ({} in this run) → karpdoctor explain {}\n",
                o.code, o.slug, o.status, o.code
            )),
            None if chain.failed() => {}
            None => out.push_str("  nothing blocks it\n"),
        }
        out.push('\n');
    }
    for e in &report.errors {
        out.push_str(&format!("note: {e}\n"));
    }
    out
}

pub fn markdown(report: &ChainReport) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::new();
    for chain in &report.pods {
        out.push_str(&format!("### pod `{}` ({})\n\n", chain.pod, chain.workload));
        out.push_str("| when | step | state | detail |\n|---|---|---|---|\n");
        for s in &chain.steps {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                s.at.as_deref().unwrap_or(""),
                s.step,
                s.state.mark(),
                cell(&s.detail)
            ));
        }
        if let Some(o) = &chain.owner {
            out.push_str(&format!(
                "\nStops here: **{}** `{}` ({} in this run).\n",
                o.code, o.slug, o.status
            ));
        }
        out.push('\n');
    }
    out
}
