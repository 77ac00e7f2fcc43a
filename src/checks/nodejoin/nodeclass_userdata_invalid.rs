//! KD5007: Karpenter merges an EC2NodeClass's `spec.userData` with what it generates, in a way
//! that depends on the AMI family. User data written for another family (AL2's
//! `/etc/eks/bootstrap.sh` on AL2023, a NodeConfig on AL2), a MIME archive Karpenter cannot
//! read, YAML that is not a NodeConfig or TOML that does not parse either fails every launch or
//! leaves a node that never joins. The rules are in `crate::userdata`.

use crate::check::prelude::*;
use crate::checks::common::nodeclass::{ami_family, object, resolved_amis};
use crate::userdata::{self, Family};

declare_check! {
    pub static NODECLASS_USERDATA_INVALID = {
        code: "KD5007",
        slug: "nodeclass-userdata-invalid",
        title: "every EC2NodeClass's userData is what its AMI family expects",
        category: NodeJoin,
        severity: Error,
        needs: [Ec2NodeClasses, EksCluster],
        self_managed: true,
        run: nodeclass_userdata_invalid,
    }
}

async fn nodeclass_userdata_invalid(cx: &CheckCx) -> CheckResult {
    let classes = cx.ec2_nodeclasses().await?;
    let with_user_data: Vec<_> = classes
        .iter()
        .filter_map(|nc| {
            let text = nc.spec.get("userData")?.as_str()?;
            (!text.trim().is_empty()).then_some((nc, text))
        })
        .collect();
    if with_user_data.is_empty() {
        return Ok(Vec::new());
    }
    // The cluster, to compare a NodeConfig that names one with. A cluster karpdoctor cannot
    // read leaves the verdict unknown (with the permission to add), not a pass.
    let name = cx.target().cluster.unwrap_or_default();
    let endpoint = if name.is_empty() {
        String::new()
    } else {
        cx.eks_cluster(&name)
            .await?
            .as_ref()
            .as_ref()
            .map(|c| c.endpoint.clone())
            .unwrap_or_default()
    };
    let coords = userdata::Cluster { name, endpoint };
    let mut findings = Vec::new();
    for (nc, text) in with_user_data {
        let family_name = ami_family(nc);
        let Some(family) = Family::parse(&family_name) else {
            continue;
        };
        let images: Vec<String> = resolved_amis(nc)
            .filter_map(|a| a.get("name").and_then(serde_json::Value::as_str))
            .map(str::to_string)
            .collect();
        for p in userdata::judge(family, text, &coords, &images) {
            let mut f = Finding::new(object(nc), p.message)
                .severity(p.severity)
                .evidence("amiFamily", family_name.clone())
                .hint(p.fix);
            if let Some(line) = p.line {
                f = f.evidence("userDataLine", line);
            }
            findings.push(f);
        }
    }
    Ok(findings)
}
