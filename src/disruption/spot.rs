//! Spot-to-spot consolidation (docs/disruption.md §7): whether Karpenter may replace one spot
//! node with a cheaper spot node.

/// Karpenter replaces a single spot node with a spot node only when the replacement can pick
/// among at least this many instance types cheaper than the node's own (core
/// `MinInstanceTypesForSpotToSpotConsolidation`, 15 from v1.0 to v1.14).
pub const MIN_CHEAPER_TYPES: usize = 15;

/// Whether `FEATURE_GATES` turns `SpotToSpotConsolidation` on, read as Karpenter reads it
/// (component-base's `MapStringBool`: comma-separated `key=value`, each side trimmed, values as
/// Go's `strconv.ParseBool`; the last mention wins; absent is Karpenter's default, off). `None`
/// when the text would not parse: the controller refuses to start with it, which is another
/// check's to say.
pub fn spot_to_spot_gate(feature_gates: Option<&str>) -> Option<bool> {
    let Some(text) = feature_gates else {
        return Some(false);
    };
    let mut on = false;
    for pair in text.split(',') {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=')?;
        let value = match value.trim() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
            "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
            _ => return None,
        };
        if key.trim() == "SpotToSpotConsolidation" {
            on = value;
        }
    }
    Some(on)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_reads_as_component_base_parses_it() {
        assert_eq!(spot_to_spot_gate(None), Some(false));
        assert_eq!(spot_to_spot_gate(Some("")), Some(false));
        assert_eq!(
            spot_to_spot_gate(Some("NodeRepair=false,SpotToSpotConsolidation=true")),
            Some(true)
        );
        assert_eq!(
            spot_to_spot_gate(Some("SpotToSpotConsolidation = T ")),
            Some(true)
        );
        assert_eq!(
            spot_to_spot_gate(Some(
                "SpotToSpotConsolidation=true,SpotToSpotConsolidation=0"
            )),
            Some(false)
        );
        // A trailing comma is skipped; a blank pair or a word is not a pair.
        assert_eq!(
            spot_to_spot_gate(Some("SpotToSpotConsolidation=true,")),
            Some(true)
        );
        assert_eq!(
            spot_to_spot_gate(Some("SpotToSpotConsolidation=true, ")),
            None
        );
        assert_eq!(spot_to_spot_gate(Some("SpotToSpotConsolidation=yes")), None);
    }
}
