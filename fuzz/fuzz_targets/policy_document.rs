//! IAM policy and trust documents as IAM returns them (URL-encoded, sometimes twice, string or
//! list everywhere): reading one must never panic, whatever the text.
#![no_main]

use karpdoctor::iam::policy::{PolicyDocument, decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = decode(text);
    if let Ok(doc) = PolicyDocument::parse(text) {
        for s in &doc.statements {
            let _ = s.covers_action("ec2:RunInstances");
            let _ = s.has_principal("Service", "ec2.amazonaws.com");
            for c in s.conditions_on("aws:RequestedRegion") {
                let _ = c.matches(Some("us-west-2"));
                let _ = c.matches(None);
            }
        }
    }
});
