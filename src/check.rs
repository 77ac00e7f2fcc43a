//! What a check is: its declaration, the handle it runs with and what it returns. Nothing
//! here performs IO; the result vocabulary lives in `crate::finding`.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::context::{Context, Facts};
use crate::facts::{FactError, FactKind};
pub use crate::finding::{Category, Finding, PlanStep, Remediation, Severity, doc_url};

/// The handle a check runs with: a view of the run's facts (no client, no way to change the
/// run) plus the check's own identity.
pub struct CheckCx {
    ctx: Arc<Context>,
    info: &'static CheckInfo,
    notes: std::sync::Mutex<Vec<String>>,
}

impl CheckCx {
    pub fn new(ctx: Arc<Context>, info: &'static CheckInfo) -> Self {
        CheckCx {
            ctx,
            info,
            notes: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn info(&self) -> &'static CheckInfo {
        self.info
    }

    /// Records what the check left out or assumed, whatever its verdict (shown with `-v`,
    /// carried in JSON as `notes`): a pass that skipped half of what it looked at says so.
    pub fn note(&self, text: impl Into<String>) {
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes.push(text.into());
    }

    /// The notes recorded so far, taken out.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl std::ops::Deref for CheckCx {
    type Target = Facts;
    fn deref(&self) -> &Facts {
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
    /// Of `needs`, the kinds it reads only as evidence (`Facts::enrich`): a verdict never
    /// rests on them, so the permission self-check does not make the check unknown for them.
    pub evidence: &'static [FactKind],
    /// It judges a self-managed install (its controller, IAM, EC2NodeClasses, node roles,
    /// interruption queue): skipped where EKS Auto Mode is the only Karpenter
    /// (docs/auto-mode.md §9).
    pub self_managed: bool,
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
            $(evidence: [$($evidence:ident),* $(,)?],)?
            $(self_managed: $self_managed:literal,)?
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
            evidence: &[$($($crate::facts::FactKind::$evidence),*)?],
            self_managed: false $(|| $self_managed)?,
            doc: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/checks/", $code, ".md")),
            location: concat!(file!(), ":", line!()),
            run: |cx| Box::pin($run(cx)),
        };
    };
}

/// Imports every check file needs.
pub mod prelude {
    pub use crate::check::{CheckCx, CheckResult, Finding, PlanStep, Severity};
    pub use crate::declare_check;
    pub use crate::facts::FactError;
}
