//! The single list of checks. `list`, `explain`, `--only`/`--skip`, the JSON report and the
//! docs index all derive from [`CHECKS`]; nothing keeps a second list.

use crate::check::{Category, CheckInfo};
use crate::checks::{
    identity, info, install, interruption, nodeclaim, nodeclass, nodejoin, nodepool, preinstall,
};

/// Every active check. Keep sorted by code (a test enforces it).
pub static CHECKS: &[&CheckInfo] = &[
    &install::controller_not_running::CONTROLLER_NOT_RUNNING,
    &install::crds_missing_or_outdated::CRDS_MISSING_OR_OUTDATED,
    &install::crd_stored_versions_stale::CRD_STORED_VERSIONS_STALE,
    &install::controller_settings_mismatch::CONTROLLER_SETTINGS_MISMATCH,
    &install::controller_unschedulable::CONTROLLER_UNSCHEDULABLE,
    &install::controller_on_karpenter_nodes::CONTROLLER_ON_KARPENTER_NODES,
    &install::stale_webhook_configurations::STALE_WEBHOOK_CONFIGURATIONS,
    &install::karpenter_version_unsupported::KARPENTER_VERSION_UNSUPPORTED,
    &install::controller_log_errors::CONTROLLER_LOG_ERRORS,
    &identity::controller_credentials_missing::CONTROLLER_CREDENTIALS_MISSING,
    &identity::irsa_oidc_provider_missing::IRSA_OIDC_PROVIDER_MISSING,
    &identity::irsa_trust_policy_mismatch::IRSA_TRUST_POLICY_MISMATCH,
    &identity::irsa_role_invalid::IRSA_ROLE_INVALID,
    &identity::pod_identity_misconfigured::POD_IDENTITY_MISCONFIGURED,
    &identity::controller_pods_predate_identity::CONTROLLER_PODS_PREDATE_IDENTITY,
    &identity::pod_identity_blocked_by_scp::POD_IDENTITY_BLOCKED_BY_SCP,
    &identity::both_irsa_and_pod_identity::BOTH_IRSA_AND_POD_IDENTITY,
    &identity::controller_action_blocked_by_scp::CONTROLLER_ACTION_BLOCKED_BY_SCP,
    &identity::controller_permission_missing::CONTROLLER_PERMISSION_MISSING,
    &identity::controller_permission_boundary_blocks::CONTROLLER_PERMISSION_BOUNDARY_BLOCKS,
    &identity::controller_policy_overbroad::CONTROLLER_POLICY_OVERBROAD,
    &preinstall::install_action_blocked_by_scp::INSTALL_ACTION_BLOCKED_BY_SCP,
    &preinstall::install_prerequisites_missing::INSTALL_PREREQUISITES_MISSING,
    &nodeclass::subnets_unresolved::NODECLASS_SUBNETS_UNRESOLVED,
    &nodeclass::security_groups_unresolved::NODECLASS_SECURITY_GROUPS_UNRESOLVED,
    &nodeclass::ami_unresolvable::NODECLASS_AMI_UNRESOLVABLE,
    &nodeclass::ami_mismatch::NODECLASS_AMI_MISMATCH,
    &nodeclass::node_role_invalid::NODECLASS_NODE_ROLE_INVALID,
    &nodeclass::instance_profile_invalid::NODECLASS_INSTANCE_PROFILE_INVALID,
    &nodeclass::passrole_denied::NODECLASS_PASSROLE_DENIED,
    &nodeclass::not_ready::NODECLASS_NOT_READY,
    &nodeclass::subnet_ips_low::NODECLASS_SUBNET_IPS_LOW,
    &nodeclass::ebs_kms_unusable::NODECLASS_EBS_KMS_UNUSABLE,
    &nodepool::nodeclassref_invalid::NODEPOOL_NODECLASSREF_INVALID,
    &nodepool::limits_reached::NODEPOOL_LIMITS_REACHED,
    &nodepool::requirements_unsatisfiable::NODEPOOL_REQUIREMENTS_UNSATISFIABLE,
    &nodepool::spot_service_linked_role_missing::SPOT_SERVICE_LINKED_ROLE_MISSING,
    &nodepool::not_ready::NODEPOOL_NOT_READY,
    &nodejoin::node_role_not_mapped::NODE_ROLE_NOT_MAPPED,
    &nodejoin::aws_auth_malformed::AWS_AUTH_MALFORMED,
    &nodejoin::access_entry_wrong_type::ACCESS_ENTRY_WRONG_TYPE,
    &nodeclaim::launch_failed::NODECLAIM_LAUNCH_FAILED,
    &nodeclaim::not_registered::NODECLAIM_NOT_REGISTERED,
    &nodeclaim::not_initialized::NODECLAIM_NOT_INITIALIZED,
    &interruption::queue_missing::INTERRUPTION_QUEUE_MISSING,
    &interruption::rules_missing::INTERRUPTION_RULES_MISSING,
    &interruption::handling_disabled::INTERRUPTION_HANDLING_DISABLED,
    &info::pricing_access_denied_benign::PRICING_ACCESS_DENIED_BENIGN,
];

/// Codes that were used once and are retired: never reuse them.
/// `(code, version retired in, reason)`. Keep sorted by code.
pub static RETIRED: &[(&str, &str, &str)] = &[];

/// Finds a check by code (`KD1001`, case-insensitive) or slug.
pub fn find(query: &str) -> Option<&'static CheckInfo> {
    CHECKS
        .iter()
        .copied()
        .find(|c| c.code.eq_ignore_ascii_case(query) || c.slug == query)
}

/// The closest code or slug to an unknown query, for "did you mean".
pub fn suggest(query: &str) -> Option<String> {
    let q = query.to_ascii_lowercase();
    let mut best: Option<(f64, String)> = None;
    for c in CHECKS {
        for candidate in [c.code.to_ascii_lowercase(), c.slug.to_string()] {
            let score = strsim::jaro_winkler(&q, &candidate);
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                let shown = if candidate == c.slug { c.slug } else { c.code };
                best = Some((score, shown.to_string()));
            }
        }
    }
    best.filter(|(s, _)| *s >= 0.7).map(|(_, c)| c)
}

/// One `--only`/`--skip` token: a code, a slug or a category.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Check(&'static str),
    Category(Category),
}

impl Selector {
    pub fn parse(token: &str) -> Result<Selector, crate::error::Error> {
        if let Some(c) = find(token) {
            return Ok(Selector::Check(c.code));
        }
        if let Some(cat) = Category::ALL.iter().find(|c| c.slug() == token) {
            return Ok(Selector::Category(*cat));
        }
        Err(crate::error::Error::UnknownCheck {
            query: token.to_string(),
            suggestion: suggest(token).or_else(|| {
                Category::ALL
                    .iter()
                    .map(|c| (strsim::jaro_winkler(token, c.slug()), c.slug()))
                    .filter(|(s, _)| *s >= 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, s)| s.to_string())
            }),
        })
    }

    fn matches(&self, info: &CheckInfo) -> bool {
        match self {
            Selector::Check(code) => info.code == *code,
            Selector::Category(cat) => info.category == *cat,
        }
    }
}

/// The checks a run executes: all, or those matching `only`, minus those matching `skip`.
pub fn select(only: &[Selector], skip: &[Selector]) -> Vec<&'static CheckInfo> {
    CHECKS
        .iter()
        .copied()
        .filter(|c| only.is_empty() || only.iter().any(|s| s.matches(c)))
        .filter(|c| !skip.iter().any(|s| s.matches(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_code_and_slug() {
        assert_eq!(find("kd1001").map(|c| c.code), Some("KD1001"));
        assert_eq!(
            find("controller-not-running").map(|c| c.code),
            Some("KD1001")
        );
        assert!(find("KD9999").is_none());
    }

    #[test]
    fn suggests_close_codes() {
        assert_eq!(suggest("KD1010").as_deref(), Some("KD1001"));
        assert_eq!(
            suggest("controller-not-runing").as_deref(),
            Some("controller-not-running")
        );
        assert_eq!(suggest("zzzzzzzz"), None);
    }

    #[test]
    fn selects_by_category_and_skips() {
        let only = [Selector::parse("install").unwrap()];
        let skip = [Selector::parse("KD1002").unwrap()];
        let codes: Vec<_> = select(&only, &skip).iter().map(|c| c.code).collect();
        assert_eq!(
            codes,
            [
                "KD1001", "KD1003", "KD1004", "KD1005", "KD1006", "KD1007", "KD1008", "KD1009"
            ]
        );
    }

    #[test]
    fn unknown_selector_suggests() {
        let err = Selector::parse("instal").unwrap_err().to_string();
        assert!(err.contains("did you mean install"), "{err}");
    }
}
