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
    /// KD2xxx
    Identity,
    /// KD22xx: run by `karpdoctor pre-install` only, about the installer's own identity.
    PreInstall,
    /// KD3xxx
    Nodeclass,
    /// KD4xxx
    Nodepool,
    /// KD5xxx
    NodeJoin,
    /// KD6xxx
    Nodeclaim,
    /// KD7xxx
    Interruption,
    /// KD9xxx
    Info,
}

impl Category {
    pub const ALL: &'static [Category] = &[
        Category::Install,
        Category::Identity,
        Category::PreInstall,
        Category::Nodeclass,
        Category::Nodepool,
        Category::NodeJoin,
        Category::Nodeclaim,
        Category::Interruption,
        Category::Info,
    ];

    /// The name used in `--only`/`--skip` and JSON.
    pub fn slug(self) -> &'static str {
        match self {
            Category::Install => "install",
            Category::Identity => "identity",
            Category::PreInstall => "pre-install",
            Category::Nodeclass => "nodeclass",
            Category::Nodepool => "nodepool",
            Category::NodeJoin => "node-join",
            Category::Nodeclaim => "nodeclaim",
            Category::Interruption => "interruption",
            Category::Info => "info",
        }
    }

    /// The heading used in human output.
    pub fn title(self) -> &'static str {
        match self {
            Category::Install => "Controller install",
            Category::Identity => "Controller identity and permissions",
            Category::PreInstall => "Before installing: the installer's permissions",
            Category::Nodeclass => "EC2NodeClass",
            Category::Nodepool => "NodePool and capacity",
            Category::NodeJoin => "Node join",
            Category::Nodeclaim => "NodeClaim lifecycle",
            Category::Interruption => "Interruption handling",
            Category::Info => "Informational",
        }
    }

    /// The thousands digit of the codes in this category.
    pub fn code_range(self) -> char {
        match self {
            Category::Install => '1',
            Category::Identity | Category::PreInstall => '2',
            Category::Nodeclass => '3',
            Category::Nodepool => '4',
            Category::NodeJoin => '5',
            Category::Nodeclaim => '6',
            Category::Interruption => '7',
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
    /// Whether the check chose the severity; otherwise the engine applies the default.
    #[serde(skip)]
    severity_chosen: bool,
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
            severity_chosen: false,
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
