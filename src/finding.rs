//! The vocabulary of results: how bad a finding is, which category a check belongs to, and
//! the finding itself. Below everything that runs checks, so reports, history and the
//! engine share it without depending on each other.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Check categories, one per code range. Declaration order is report order, which follows
/// how failures cascade (controller first, informational last).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// KD1xxx
    Install,
    /// KD11xx: run by `karpdoctor upgrade` only, about a target release or Kubernetes minor.
    Upgrade,
    /// KD2xxx
    Identity,
    /// KD22xx: run by `karpdoctor pre-install` only, about the installer's own identity.
    PreInstall,
    /// KD3xxx
    Nodeclass,
    /// KD4xxx
    Nodepool,
    /// KD41xx: why nodes are not replaced, or are replaced too often.
    Disruption,
    /// KD5xxx
    NodeJoin,
    /// KD6xxx
    Nodeclaim,
    /// KD8xxx: pods Karpenter should place and cannot.
    Scheduling,
    /// KD7xxx
    Interruption,
    /// KD9xxx
    Info,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Install,
        Category::Upgrade,
        Category::Identity,
        Category::PreInstall,
        Category::Nodeclass,
        Category::Nodepool,
        Category::Disruption,
        Category::NodeJoin,
        Category::Nodeclaim,
        Category::Interruption,
        Category::Scheduling,
        Category::Info,
    ];

    /// The name used in `--only`/`--skip` and JSON.
    pub fn slug(self) -> &'static str {
        match self {
            Category::Install => "install",
            Category::Upgrade => "upgrade",
            Category::Identity => "identity",
            Category::PreInstall => "pre-install",
            Category::Nodeclass => "nodeclass",
            Category::Nodepool => "nodepool",
            Category::Disruption => "disruption",
            Category::NodeJoin => "node-join",
            Category::Nodeclaim => "nodeclaim",
            Category::Interruption => "interruption",
            Category::Scheduling => "scheduling",
            Category::Info => "info",
        }
    }

    /// The heading used in human output.
    pub fn title(self) -> &'static str {
        match self {
            Category::Install => "Controller install",
            Category::Upgrade => "Before upgrading: what the target breaks",
            Category::Identity => "Controller identity and permissions",
            Category::PreInstall => "Before installing: the installer's permissions",
            Category::Nodeclass => "EC2NodeClass",
            Category::Nodepool => "NodePool and capacity",
            Category::Disruption => "Disruption",
            Category::NodeJoin => "Node join",
            Category::Nodeclaim => "NodeClaim lifecycle",
            Category::Interruption => "Interruption handling",
            Category::Scheduling => "Pending pods",
            Category::Info => "Informational",
        }
    }

    /// The thousands digit of the codes in this category.
    pub fn code_range(self) -> char {
        match self {
            Category::Install | Category::Upgrade => '1',
            Category::Identity | Category::PreInstall => '2',
            Category::Nodeclass => '3',
            Category::Nodepool | Category::Disruption => '4',
            Category::NodeJoin => '5',
            Category::Nodeclaim => '6',
            Category::Interruption => '7',
            Category::Scheduling => '8',
            Category::Info => '9',
        }
    }
}

/// With `--history`: whether a finding was reported by the last run too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryState {
    New,
    Ongoing,
}

impl HistoryState {
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryState::New => "new",
            HistoryState::Ongoing => "ongoing",
        }
    }
}

/// Where a finding of `karpdoctor upgrade` belongs in the upgrade plan (docs/upgrade.md §4).
/// Declaration order is the order the steps are taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanStep {
    /// Which release to go to, and through which.
    Path,
    /// Nodes whose AMIs cannot follow the target.
    Nodes,
    /// The controller role's permissions.
    Iam,
    /// Objects the target refuses or would run differently.
    Objects,
    /// Objects stored in versions the target does not serve.
    StoredVersions,
    /// The CRD chart.
    Crds,
    /// The controller and its settings.
    Controller,
    /// The EKS control plane, one minor at a time.
    ControlPlane,
    /// After a release the upgrade must stop at: the run that plans the rest.
    Next,
}

impl PlanStep {
    pub const ALL: &'static [PlanStep] = &[
        PlanStep::Path,
        PlanStep::Nodes,
        PlanStep::Iam,
        PlanStep::Objects,
        PlanStep::StoredVersions,
        PlanStep::Crds,
        PlanStep::Controller,
        PlanStep::ControlPlane,
        PlanStep::Next,
    ];
}

/// The suggested fix of a finding: commands safe to copy, kept apart from prose.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Remediation {
    pub commands: Vec<String>,
}

/// One problem, about one object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    /// `Kind/namespace/name`, `Kind/name` or an ARN.
    pub object: String,
    /// One line, lowercase, no trailing period.
    pub message: String,
    /// The fact values that led to the finding, in the order they explain it.
    pub evidence: Map<String, Value>,
    /// One line: what to try first.
    pub hint: String,
    pub remediation: Remediation,
    pub doc_url: String,
    /// With `--history`: `new` or `ongoing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryState>,
    /// With `--history`: when this finding (code and object) was first reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<String>,
    /// The checks that failed in the same run and explain this finding: its root causes
    /// (the report links them from the finding's owners).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caused_by: Vec<String>,
    /// The checks that own this symptom's known causes, when every one of them passed this
    /// run: the cause is one they cannot see, and the hint says where to look instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners_passed: Vec<String>,
    /// Whether the check chose the severity; otherwise the engine applies the default.
    #[serde(skip)]
    severity_chosen: bool,
    /// The checks whose failure would explain this finding, as the check knows them.
    #[serde(skip)]
    owners: Vec<String>,
    /// The hint to give instead when every owner passed.
    #[serde(skip)]
    hint_if_owners_pass: Option<String>,
    /// `karpdoctor upgrade`: the plan step that resolves this finding.
    #[serde(skip)]
    step: Option<PlanStep>,
}

impl Finding {
    /// A finding about `object`; code, default severity and doc URL are filled in by the
    /// engine from the check that produced it.
    pub fn new(object: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            code: String::new(),
            severity: Severity::Error,
            object: object.into(),
            message: message.into(),
            evidence: Map::new(),
            hint: String::new(),
            remediation: Remediation::default(),
            doc_url: String::new(),
            history: None,
            first_seen: None,
            caused_by: Vec::new(),
            owners_passed: Vec::new(),
            severity_chosen: false,
            owners: Vec::new(),
            hint_if_owners_pass: None,
            step: None,
        }
    }

    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity_chosen = true;
        self.severity = severity;
        self
    }

    pub fn evidence(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.evidence.insert(name.to_string(), value.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    pub fn fix(mut self, command: impl Into<String>) -> Self {
        self.remediation.commands.push(command.into());
        self
    }

    /// The checks whose failure explains this symptom (the owners of its known causes). The
    /// report links those that fail in the same run as `causedBy`; when every one of them
    /// passes it lists them in `ownersPassed` instead, so no finding sends the user to
    /// checks that passed without saying so.
    pub fn owned_by<S: AsRef<str>>(mut self, codes: impl IntoIterator<Item = S>) -> Self {
        for code in codes {
            let code = code.as_ref().to_string();
            if !self.owners.contains(&code) {
                self.owners.push(code);
            }
        }
        self
    }

    /// The upgrade plan's step that resolves this finding.
    pub fn in_step(mut self, step: PlanStep) -> Self {
        self.step = Some(step);
        self
    }

    pub fn step(&self) -> Option<PlanStep> {
        self.step
    }

    /// The hint to give when every owner passed (the usual one sends the user to them).
    pub fn hint_if_owners_pass(mut self, hint: impl Into<String>) -> Self {
        self.hint_if_owners_pass = Some(hint.into());
        self
    }

    /// Links this finding to the outcome of its owners in the same run: `failed(code)` is
    /// true for a check that failed with a warning or an error, `passed(code)` for one that
    /// passed. A finding never names its own check.
    pub fn link_owners(&mut self, failed: impl Fn(&str) -> bool, passed: impl Fn(&str) -> bool) {
        let owners: Vec<String> = self
            .owners
            .iter()
            .filter(|o| **o != self.code)
            .cloned()
            .collect();
        self.caused_by = owners.iter().filter(|o| failed(o)).cloned().collect();
        if self.caused_by.is_empty() && !owners.is_empty() && owners.iter().all(|o| passed(o)) {
            if let Some(hint) = self.hint_if_owners_pass.take() {
                self.hint = hint;
            }
            self.owners_passed = owners;
        }
    }

    /// Called by the engine: stamps the check's code, default severity and doc URL.
    pub fn finish(mut self, code: &str, default_severity: Severity) -> Self {
        if !self.severity_chosen {
            self.severity = default_severity;
        }
        self.code = code.to_string();
        self.doc_url = doc_url(code);
        self
    }
}

/// Where the remediation doc of a code lives, pinned to this version of karpdoctor.
pub fn doc_url(code: &str) -> String {
    format!(
        "{}/blob/v{}/checks/{code}.md",
        crate::REPOSITORY,
        crate::VERSION
    )
}
