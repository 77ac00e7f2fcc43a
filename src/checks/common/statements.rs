//! The reference statements behind denied rows, shared by the checks that report the
//! controller role's grants per statement (KD2102 at the installed release, KD1101 at an
//! upgrade's target).

use std::collections::BTreeMap;

use crate::checks::common::grants::{Decided, Grants};
use crate::iam::reference::{self, StatementRef};

/// The rows grouped by the reference statement each belongs to (one row may serve several).
pub fn by_statement<'g>(
    g: &'g Grants,
    rows: impl IntoIterator<Item = &'g Decided>,
) -> BTreeMap<String, (StatementRef, Vec<&'g Decided>)> {
    let mut out: BTreeMap<String, (StatementRef, Vec<&Decided>)> = BTreeMap::new();
    for d in rows {
        for s in g.probes[d.probe].statements_for(&d.row.action) {
            out.entry(s.sid.clone())
                .or_insert_with(|| (s.clone(), Vec::new()))
                .1
                .push(d);
        }
    }
    out
}

/// `aws iam put-role-policy` adding the statement, filled in for this install; `None` when
/// the data cannot render it.
pub fn put_statement(g: &Grants, statement: &StatementRef) -> Option<String> {
    let doc = reference::statement_document(statement, g.version, &g.vars)?;
    let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [doc]});
    Some(format!(
        "aws iam put-role-policy --role-name {} --policy-name karpenter-{} --policy-document '{policy}'",
        g.role.name, statement.sid
    ))
}
