//! Kubernetes quantities from NodePool limits and NodeClaim capacities: parsing and summing
//! must never panic or overflow silently.
#![no_main]

use karpdoctor::quantity::Quantity;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let parsed: Vec<Quantity> = text.split(',').filter_map(Quantity::parse).collect();
    let mut sum = Some(Quantity::ZERO);
    for q in &parsed {
        sum = sum.and_then(|s| s.checked_add(*q));
        let _ = q.show("memory");
        let _ = q.to_string();
    }
    if let (Some(s), Some(first)) = (sum, parsed.first()) {
        let _ = s.percent_of(*first);
    }
});
