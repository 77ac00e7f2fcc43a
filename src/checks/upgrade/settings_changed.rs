//! KD1104: before `karpdoctor upgrade --to VERSION`, the controller's settings this install uses
//! must mean the same at the target: environment variables the target neither sets nor reads
//! (`ASSUME_ROLE_ARN` before 1.0, the webhook settings before 1.1), feature gates it no longer
//! knows (`Drift=false` before 1.0: drift cannot be turned off any more), gates whose default
//! flips while the install leaves them unset (`ReservedCapacity` at 1.6), and target releases
//! the upstream guide or a known defect says to skip (docs/upgrade.md §3.4; the release data's
//! `env`, `controllerEnv`, `featureGates` and `avoid`).

use crate::check::prelude::*;
use crate::checks::common::upgrade::targets;
use crate::model::ControllerDeployment;
use crate::upgrade::releases;

declare_check! {
    pub static UPGRADE_SETTINGS_CHANGED = {
        code: "KD1104",
        slug: "upgrade-settings-changed",
        title: "the controller's settings mean the same at the target release",
        category: Upgrade,
        severity: Warning,
        needs: [ControllerDeployments, KubeVersion],
        self_managed: true,
        run: upgrade_settings_changed,
    }
}

async fn upgrade_settings_changed(cx: &CheckCx) -> CheckResult {
    let t = targets(cx).await?;
    let (Some(from), true) = (t.from, t.to_given) else {
        return Ok(Vec::new());
    };
    let mut findings = Vec::new();
    if let Some(a) = releases::avoid(t.to) {
        findings.push(
            Finding::new(
                format!("Karpenter {}", t.to),
                format!("is a release not to upgrade to: {}", a.why),
            )
            // A defect that stops the controller is an error; a regression the guide warns
            // of (1.8.4's scheduling) a warning.
            .severity(if a.reason == "upgrade-guide" {
                Severity::Warning
            } else {
                Severity::Error
            })
            .hint(match releases::next_good(t.to) {
                Some(v) => format!("take {v} instead"),
                None => "take another release instead".to_string(),
            })
            .fix(match releases::next_good(t.to) {
                Some(v) => format!("karpdoctor upgrade --to {v}"),
                None => format!("karpdoctor upgrade --to <another {}.{} patch>", t.to.0, t.to.1),
            })
            .in_step(PlanStep::Path),
        );
    }
    if t.to <= from {
        return Ok(findings);
    }
    // An upgrade that must stop at a hop is planned to the hop, and the run from there judges
    // the rest: the settings are judged at the hop release (the plan's controller step).
    let to = releases::hops(from, t.to)
        .into_iter()
        .filter_map(releases::via_target)
        .min()
        .unwrap_or(t.to);
    let Some((deployments, i)) = cx.controller().await? else {
        return Ok(findings);
    };
    let controller = ControllerDeployment::new(&deployments[i]);
    let env: Vec<(String, String)> = controller
        .controller_container()
        .and_then(|c| c.env.as_ref())
        .map(|env| {
            env.iter()
                .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for (name, _) in &env {
        if releases::knows_env(name, from) && !releases::knows_env(name, to) {
            findings.push(
                Finding::new(
                    controller.object(),
                    format!(
                        "sets {name}, which Karpenter {} neither sets nor reads: {}",
                        to,
                        dropped_env(name)
                    ),
                )
                .evidence("env", name.clone())
                .evidence("from", from.to_string())
                .evidence("to", to.to_string())
                .hint("remove it from the Helm values (or the Deployment) with the upgrade, and set what replaces it")
                .in_step(PlanStep::Controller),
            );
        }
    }
    let gates: Vec<(String, bool)> = env
        .iter()
        .find(|(n, _)| n == "FEATURE_GATES")
        .map(|(_, v)| parse_gates(v))
        .unwrap_or_default();
    for (gate, value) in &gates {
        if releases::gate_default(gate, from).is_some()
            && releases::gate_default(gate, to).is_none()
        {
            let what = if gate == "Drift" && !value {
                "drift is always on from 1.0: nodes whose NodePool or EC2NodeClass changed will be replaced".to_string()
            } else {
                format!("the setting {gate}={value} is ignored")
            };
            findings.push(
                Finding::new(
                    controller.object(),
                    format!("sets the feature gate {gate}, which Karpenter {} no longer has: {what}", to),
                )
                .evidence("featureGates", gates.iter().map(|(g, v)| format!("{g}={v}")).collect::<Vec<_>>())
                .hint("drop the gate from settings.featureGates; where it turned something off, use what the release offers instead (for drift: disruption budgets with reasons [Drifted])")
                .in_step(PlanStep::Controller),
            );
        }
    }
    // A gate whose default changes while the install leaves it to the default.
    for gate in ["ReservedCapacity", "NodeRepair", "SpotToSpotConsolidation", "NodeOverlay", "StaticCapacity", "CapacityBuffer"] {
        if gates.iter().any(|(g, _)| g == gate) {
            continue;
        }
        let (Some(before), Some(after)) = (
            releases::gate_default(gate, from),
            releases::gate_default(gate, to),
        ) else {
            continue;
        };
        if before != after {
            findings.push(
                Finding::new(
                    controller.object(),
                    format!(
                        "leaves the feature gate {gate} to its default, which is {after} in Karpenter {} ({before} in {from}){}",
                        to,
                        if gate == "ReservedCapacity" {
                            ": open On-Demand Capacity Reservations no EC2NodeClass selects stop being used, though still billed"
                        } else {
                            ""
                        }
                    ),
                )
                .evidence("gate", gate.to_string())
                .hint(format!(
                    "set settings.featureGates.{}{} in the Helm values to keep today's behaviour, or accept the new default",
                    gate[..1].to_ascii_lowercase(),
                    &gate[1..]
                ))
                .in_step(PlanStep::Controller),
            );
        }
    }
    Ok(findings)
}

/// What the controller did with a setting the target drops (the v1 migration guide's
/// "Environment Variable Changes", the 1.1 upgrade notes).
fn dropped_env(name: &str) -> &'static str {
    match name {
        "ASSUME_ROLE_ARN" | "ASSUME_ROLE_DURATION" => {
            "the controller no longer assumes another role and runs as its own IRSA or Pod Identity role"
        }
        "LEADER_ELECT" => "leader election is set with DISABLE_LEADER_ELECTION instead",
        "DISABLE_WEBHOOK" | "WEBHOOK_PORT" | "WEBHOOK_METRICS_PORT" => {
            "Karpenter has no webhooks from 1.1"
        }
        _ => "the setting is ignored",
    }
}

/// `FEATURE_GATES` as `Name=bool` pairs, as the controller parses it (unparsable items left
/// out: the controller refuses them, which is not this check's to judge).
fn parse_gates(value: &str) -> Vec<(String, bool)> {
    value
        .split(',')
        .filter_map(|item| {
            let (k, v) = item.split_once('=')?;
            Some((k.trim().to_string(), v.trim().parse::<bool>().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_gates_parse_as_the_controller_writes_them() {
        assert_eq!(
            parse_gates("Drift=false,SpotToSpotConsolidation=true"),
            [
                ("Drift".to_string(), false),
                ("SpotToSpotConsolidation".to_string(), true)
            ]
        );
        assert!(parse_gates("StaticCapacity=").is_empty());
    }
}
