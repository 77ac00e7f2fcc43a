//! JSON output: the report model as is. stdout holds nothing else.

use super::Report;

pub fn render(report: &Report) -> String {
    // Serializing plain data with string keys cannot fail; fall back to an error object
    // rather than panicking if that ever changes.
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        serde_json::json!({ "schemaVersion": super::SCHEMA_VERSION, "errors": [e.to_string()] })
            .to_string()
    });
    text.push('\n');
    text
}
