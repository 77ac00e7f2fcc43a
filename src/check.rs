//! The vocabulary of checks: what a check is, what it returns, and how results are graded.
//! Nothing here performs IO.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::Context;
use crate::facts::{FactError, FactKind};

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

/// The handle a check runs with: the shared context plus the check's own identity.
pub struct CheckCx {
    pub ctx: Arc<Context>,
    pub info: &'static CheckInfo,
}

impl std::ops::Deref for CheckCx {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

/// What a check function returns: findings (empty means pass) or the fact error that kept
/// it from judging.
pub type CheckResult = Result<Vec<Finding>, FactError>;

/// A check function. A plain function pointer keeps the registry a `static` slice.
pub type CheckFn = for<'a> fn(&'a CheckCx) -> BoxFuture<'a, CheckResult>;

/// Everything known about a check without running it.
pub struct CheckInfo {
    /// `KD` + 4 digits; never reused.
    pub code: &'static str,
    /// Kebab-case name of the problem ("skip *slug*" reads well).
    pub slug: &'static str,
    /// The healthy invariant, lowercase, no trailing period.
    pub title: &'static str,
    pub category: Category,
    /// Default severity of its findings.
    pub severity: Severity,
    /// The fact kinds it may read (prefetch, permissions, verified by the scenario suite).
    pub needs: &'static [FactKind],
    /// `checks/<CODE>.md`, embedded at build time.
    pub doc: &'static str,
    /// Source location of the declaration.
    pub location: &'static str,
    pub run: CheckFn,
}

impl fmt::Debug for CheckInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckInfo")
            .field("code", &self.code)
            .field("slug", &self.slug)
            .finish_non_exhaustive()
    }
}

/// Declares one check: metadata, the facts it needs and its function, with the doc embedded
/// from `checks/<CODE>.md` (a missing doc is a compile error naming the path).
#[macro_export]
macro_rules! declare_check {
    (
        $(#[$attr:meta])*
        pub static $name:ident = {
            code: $code:literal,
            slug: $slug:literal,
            title: $title:literal,
            category: $category:ident,
            severity: $severity:ident,
            needs: [$($need:ident),* $(,)?],
            run: $run:path $(,)?
        }
    ) => {
        $(#[$attr])*
        pub static $name: $crate::check::CheckInfo = $crate::check::CheckInfo {
            code: $code,
            slug: $slug,
            title: $title,
            category: $crate::check::Category::$category,
            severity: $crate::check::Severity::$severity,
            needs: &[$($crate::facts::FactKind::$need),*],
            doc: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/checks/", $code, ".md")),
            location: concat!(file!(), ":", line!()),
            run: |cx| Box::pin($run(cx)),
        };
    };
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
    pub history: Option<String>,
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
    pub(crate) fn finish(mut self, info: &CheckInfo) -> Self {
        if !self.severity_chosen {
            self.severity = info.severity;
        }
        self.code = info.code.to_string();
        self.doc_url = doc_url(info.code);
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

/// Imports every check file needs.
pub mod prelude {
    pub use crate::check::{CheckCx, CheckResult, Finding, Severity};
    pub use crate::declare_check;
    pub use crate::facts::FactError;
}
