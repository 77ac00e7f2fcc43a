//! `karpdoctor pod`: one pod's way to a node, step by step, and where it stops; `karpdoctor
//! node`: one node's way out of the cluster (wanted gone, held, deleting). The steps are built
//! by the commands from the run's facts and outcomes; this is their shape and their text, JSON
//! and Markdown forms.

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

/// One node's way out: its NodeClaim, whether Karpenter wants it gone, what holds it, its
/// deletion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeChain {
    pub node: String,
    pub node_claim: String,
    pub node_pool: String,
    pub steps: Vec<Step>,
    /// The check that owns the step where the chain stops, and its status in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

impl NodeChain {
    pub fn failed(&self) -> bool {
        self.steps.iter().any(|s| s.state == StepState::Failed)
    }
}

/// The document `karpdoctor node -o json` prints (`kind: NodeChains`, schema version 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeChainReport {
    pub schema_version: u32,
    pub kind: String,
    pub karpdoctor_version: String,
    /// `live` or `replay`.
    pub mode: String,
    pub target: Target,
    pub nodes: Vec<NodeChain>,
    /// Problems of the run itself (a fact that could not be read).
    pub errors: Vec<String>,
}

pub fn json<T: Serialize>(report: &T) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default()
}

/// One chain as text: its title, its steps, where it stops. `quiet` is said when nothing stops
/// it.
fn text_chain(out: &mut String, title: &str, steps: &[Step], owner: Option<&Owner>, quiet: &str) {
    out.push_str(title);
    out.push('\n');
    for s in steps {
        out.push_str(&format!(
            "  {:<20}  {} {:<14} {}\n",
            s.at.as_deref().unwrap_or(""),
            s.state.mark(),
            s.step,
            s.detail
        ));
    }
    match owner {
        Some(o) => out.push_str(&format!(
            "  stops here: {} {} ({} in this run) → karpdoctor explain {}\n",
            o.code, o.slug, o.status, o.code
        )),
        None if steps.iter().any(|s| s.state == StepState::Failed) => {}
        None => out.push_str(&format!("  {quiet}\n")),
    }
    out.push('\n');
}

fn markdown_chain(out: &mut String, title: &str, steps: &[Step], owner: Option<&Owner>) {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    out.push_str(&format!("### {title}\n\n"));
    out.push_str("| when | step | state | detail |\n|---|---|---|---|\n");
    for s in steps {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            s.at.as_deref().unwrap_or(""),
            s.step,
            s.state.mark(),
            cell(&s.detail)
        ));
    }
    if let Some(o) = owner {
        out.push_str(&format!(
            "\nStops here: **{}** `{}` ({} in this run).\n",
            o.code, o.slug, o.status
        ));
    }
    out.push('\n');
}

pub fn text(report: &ChainReport) -> String {
    let mut out = String::new();
    for chain in &report.pods {
        let title = format!("pod {} ({})", chain.pod, chain.workload);
        text_chain(
            &mut out,
            &title,
            &chain.steps,
            chain.owner.as_ref(),
            "nothing blocks it",
        );
    }
    for e in &report.errors {
        out.push_str(&format!("note: {e}\n"));
    }
    out
}

pub fn markdown(report: &ChainReport) -> String {
    let mut out = String::new();
    for chain in &report.pods {
        let title = format!("pod `{}` ({})", chain.pod, chain.workload);
        markdown_chain(&mut out, &title, &chain.steps, chain.owner.as_ref());
    }
    out
}

fn node_title(chain: &NodeChain, code: bool) -> String {
    let q = if code { "`" } else { "" };
    format!(
        "node {q}{}{q} (NodeClaim {}, NodePool {})",
        chain.node, chain.node_claim, chain.node_pool
    )
}

pub fn node_text(report: &NodeChainReport) -> String {
    let mut out = String::new();
    for chain in &report.nodes {
        let waits = chain.steps.iter().any(|s| s.state == StepState::Waiting);
        let quiet = if waits {
            "nothing is broken: what holds it passes by itself"
        } else {
            "nothing holds it"
        };
        text_chain(
            &mut out,
            &node_title(chain, false),
            &chain.steps,
            chain.owner.as_ref(),
            quiet,
        );
    }
    for e in &report.errors {
        out.push_str(&format!("note: {e}\n"));
    }
    out
}

pub fn node_markdown(report: &NodeChainReport) -> String {
    let mut out = String::new();
    for chain in &report.nodes {
        markdown_chain(
            &mut out,
            &node_title(chain, true),
            &chain.steps,
            chain.owner.as_ref(),
        );
    }
    out
}
