//! Events of either API with any JSON in them (counts, times, shapes): normalising must never
//! panic, and the result stays bounded and ordered.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let events = karpdoctor::events::Events::from(items);
    assert!(events.0.len() <= karpdoctor::events::MAX_KEPT);
    assert!(events.0.windows(2).all(|w| w[0].last_seen >= w[1].last_seen));
});
