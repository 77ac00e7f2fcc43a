//! The commands that run no check: `list`, `explain`, `permissions`, `reference-policy`.

use comfy_table::{ContentArrangement, Table, presets};

use super::{json_text, print};
use crate::cli::{
    ExplainArgs, ListArgs, ListOutput, PermissionsArgs, PermissionsOutput, ReferencePolicyArgs,
};
use crate::error::Error;
use crate::registry::{self, Selector};
use crate::report::EXIT_OK;

/// `reference-policy`: the controller policy document of a release, offline.
pub(super) fn reference_policy(args: &ReferencePolicyArgs) -> Result<u8, Error> {
    use crate::iam::reference::{self, Version};
    let version = match &args.karpenter_version {
        Some(v) => Version::parse(v).ok_or_else(|| Error::Usage {
            message: format!("--karpenter-version {v:?} is not a release like 1.8.1"),
        })?,
        None => reference::newest().ok_or_else(|| Error::Internal {
            message: "the reference policy data is unreadable".to_string(),
        })?,
    };
    let version = match reference::coverage(version) {
        Some(reference::Coverage::Older { minimum }) => {
            return Err(Error::Usage {
                message: format!("karpdoctor's reference data starts at Karpenter {minimum}"),
            });
        }
        Some(reference::Coverage::Newer { used }) => {
            eprintln!("karpdoctor: the reference data ends at {used}; printing its policy");
            used
        }
        _ => version,
    };
    if !args.account.chars().all(|c| c.is_ascii_digit()) || args.account.len() != 12 {
        return Err(Error::Usage {
            message: format!("--account {:?} is not a 12-digit account id", args.account),
        });
    }
    let arn = format!(
        "arn:{}:eks:{}:{}:cluster/{}",
        args.partition, args.region, args.account, args.cluster
    );
    let Some(parsed) = crate::arn::Arn::parse(&arn) else {
        return Err(Error::Usage {
            message: format!("cannot form a cluster ARN from {arn}"),
        });
    };
    let mut vars = crate::checks::common::grants::base_vars(&parsed, &args.cluster, &arn);
    let queue = args
        .interruption_queue
        .clone()
        .unwrap_or_else(|| args.cluster.clone());
    vars.insert(
        "queueArn".into(),
        format!(
            "arn:{}:sqs:{}:{}:{queue}",
            args.partition, args.region, args.account
        ),
    );
    vars.insert(
        "nodeRoleArn".into(),
        args.node_role_arn.clone().unwrap_or_else(|| {
            format!(
                "arn:{}:iam::{}:role/KarpenterNodeRole-{}",
                args.partition, args.account, args.cluster
            )
        }),
    );
    let doc = reference::policy_document(version, &vars);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Internal {
        message: e.to_string(),
    })?;
    print(&format!("{text}\n"))?;
    Ok(EXIT_OK)
}

pub(super) fn parse_selectors(tokens: &[String]) -> Result<Vec<Selector>, Error> {
    tokens
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(Selector::parse)
        .collect()
}

pub(super) fn list(args: &ListArgs) -> Result<u8, Error> {
    let text = match args.output {
        ListOutput::Json => {
            let items: Vec<serde_json::Value> = registry::CHECKS
                .iter()
                .map(|c| {
                    let e = crate::docs::explain_json(c);
                    serde_json::json!({
                        "code": e.code,
                        "slug": e.slug,
                        "category": e.category,
                        "severity": e.severity,
                        "title": e.title,
                        "needs": e.needs,
                        "permissions": e.permissions,
                        "docUrl": e.doc_url,
                    })
                })
                .collect();
            json_text(&serde_json::Value::Array(items))
        }
        ListOutput::Text => {
            let mut table = Table::new();
            table
                .load_preset(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Disabled)
                .set_header(vec!["CODE", "SLUG", "CATEGORY", "SEVERITY", "TITLE"]);
            for c in registry::CHECKS {
                table.add_row(vec![
                    c.code,
                    c.slug,
                    c.category.slug(),
                    c.severity.as_str(),
                    c.title,
                ]);
            }
            let mut text = table.to_string();
            text.push('\n');
            text
        }
    };
    print(&text)?;
    Ok(EXIT_OK)
}

pub(super) fn permissions(args: &PermissionsArgs) -> Result<u8, Error> {
    let only = parse_selectors(&args.only)?;
    let skip = parse_selectors(&args.skip)?;
    let checks = registry::select(&only, &skip);
    let p = crate::permissions::for_checks(&checks);
    let text = match args.output {
        PermissionsOutput::Text => p.text(),
        PermissionsOutput::Json => p.iam_policy_text(),
        PermissionsOutput::Yaml => p.cluster_role_yaml(),
    };
    print(&text)?;
    Ok(EXIT_OK)
}

pub(super) fn explain(args: &ExplainArgs) -> Result<u8, Error> {
    if let Some((code, version, reason)) = registry::RETIRED
        .iter()
        .find(|(code, _, _)| code.eq_ignore_ascii_case(&args.check))
    {
        return Err(Error::Usage {
            message: format!("{code} was retired in karpdoctor {version}: {reason}"),
        });
    }
    let info = registry::find(&args.check).ok_or_else(|| Error::UnknownCheck {
        query: args.check.clone(),
        suggestion: registry::suggest(&args.check),
    })?;
    let text = match args.output {
        ListOutput::Json => json_text(&crate::docs::explain_json(info)),
        ListOutput::Text => {
            let mut t = info.doc.to_string();
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t
        }
    };
    print(&text)?;
    Ok(EXIT_OK)
}
