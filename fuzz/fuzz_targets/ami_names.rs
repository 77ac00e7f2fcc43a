//! AMI names and aliases as users and AWS write them: reading the Kubernetes minor and family
//! of a name, and expanding an alias to SSM parameter names, must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Some(minor) = karpdoctor::ec2::ami_name_minor(text) {
        assert!(minor.starts_with("1."), "{minor}");
    }
    let _ = karpdoctor::ec2::ami_name_family(text);
    let (alias, k8s) = text.split_once('|').unwrap_or((text, "1.33"));
    if let Some(paths) =
        karpdoctor::iam::reference::alias_parameter_paths(alias, k8s, &["amd64", "arm64", "s390x"])
    {
        assert!(paths.iter().all(|p| p.starts_with("/aws/service/")));
    }
});
