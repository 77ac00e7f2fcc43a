//! KD9xxx: informational findings: things that look wrong and need no action.

pub mod pricing_access_denied_benign;
