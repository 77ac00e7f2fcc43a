//! Controller logs as a broken or hostile cluster may hold them: JSON, half-written JSON,
//! panics, binary. Parsing, classifying and grouping must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let groups = karpdoctor::logs::group_errors([text]);
    let errors = text
        .lines()
        .filter_map(karpdoctor::logs::parse)
        .filter(|e| e.is_error())
        .count();
    assert_eq!(groups.iter().map(|g| g.count).sum::<usize>(), errors);
});
