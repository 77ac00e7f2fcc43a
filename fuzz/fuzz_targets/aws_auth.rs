//! aws-auth `mapRoles` as a cluster may hold it: any text. Parsing must never panic, and the
//! line it reports must be a line of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let lines = text.lines().count();
    match karpdoctor::awsauth::parse_map_roles(text) {
        Ok(mappings) => {
            for m in &mappings {
                assert!(m.line <= lines, "line {} of {lines}", m.line);
                let _ = karpdoctor::awsauth::node_mapping_problems(m, m.line % 2 == 0);
            }
        }
        Err(e) => assert!(e.line.is_none_or(|l| l <= lines.max(1) + 1), "{e}"),
    }
});
