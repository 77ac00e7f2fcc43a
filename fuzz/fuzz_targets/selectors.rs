//! EC2NodeClass selector terms from arbitrary JSON, matched against subnets and security
//! groups built from the same input, and the wildcard matcher on arbitrary patterns.
#![no_main]

use std::collections::BTreeMap;

use karpdoctor::ec2;
use karpdoctor::facts::{SecurityGroup, Subnet};
use karpdoctor::iam::policy::wildcard;
use karpdoctor::model::Ec2NodeClass;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Wildcards: a pattern always matches itself when it has no wildcard characters.
    let mid = (0..=text.len() / 2)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let (pattern, value) = text.split_at(mid);
    let _ = wildcard(pattern, value, false);
    if !pattern.contains(['*', '?']) {
        assert!(wildcard(pattern, pattern, false));
    }
    let Ok(spec) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(nc) = serde_json::from_value::<Ec2NodeClass>(
        serde_json::json!({"metadata": {"name": "fuzz"}, "spec": spec}),
    ) else {
        return;
    };
    let tags: BTreeMap<String, String> = [("karpenter.sh/discovery".to_string(), pattern.to_string())].into();
    let subnets = [Subnet {
        subnet_id: "subnet-1".into(),
        vpc_id: "vpc-1".into(),
        tags: tags.clone(),
        ..Subnet::default()
    }];
    let groups = [SecurityGroup {
        group_id: "sg-1".into(),
        group_name: value.to_string(),
        vpc_id: "vpc-1".into(),
        tags,
    }];
    for field in ["subnetSelectorTerms", "securityGroupSelectorTerms"] {
        if let Ok(terms) = ec2::terms(&nc, field) {
            let _ = ec2::select_subnets(&terms, &subnets);
            let _ = ec2::select_groups(&terms, &groups);
            let _ = ec2::near_misses(
                &terms,
                subnets.iter().map(|s| (s.subnet_id.as_str(), s.vpc_id.as_str(), &s.tags)),
            );
            let _ = ec2::concrete_tags(&terms);
            let _: Vec<String> = terms.iter().map(ec2::Term::describe).collect();
        }
    }
    for t in ec2::ami_terms(&nc) {
        let _ = ec2::image_query(&t);
        let _ = t.describe();
    }
});
