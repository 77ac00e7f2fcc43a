//! How traffic between a node and the control plane is judged: security group rules as EC2
//! evaluates them. Pure: it reads facts' values and says allowed, denied or cannot tell.
//!
//! Security groups are stateful and allow-only: a packet passes when any rule of any group on
//! the receiving (inbound) or sending (outbound) interface matches it, and the reply needs no
//! rule (<https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html>). So one
//! direction per flow is judged, and a rule either matches, does not, or names something
//! karpdoctor cannot resolve (a prefix list, a group across a peering), which is "cannot tell"
//! rather than a denial.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::facts::{SecurityGroup, SgPermission};

/// The other end of a flow, as a security group rule may name it.
#[derive(Clone, Debug, Default)]
pub struct Peer<'a> {
    /// The groups its interfaces carry.
    pub groups: Vec<&'a str>,
    /// The address ranges it sends from (or listens on): a rule's CIDR admits the peer only
    /// when it covers all of them. Empty when the addresses are not known.
    pub cidrs: Vec<Ipv4Net>,
}

/// What the rules of some groups say about one flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A rule admits it: `(group id, rule described for evidence)`.
    Allowed { group: String, rule: String },
    /// No rule admits it, and every rule was understood.
    Denied,
    /// No rule admits it, but some rule could: why it cannot be told.
    Unknown(String),
}

/// Inbound or outbound rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Inbound,
    Outbound,
}

/// Why a group's rules cannot be judged at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// The bundle predates rules being recorded.
    RulesNotRecorded(String),
}

/// Whether any of `groups` lets TCP `port` in from `peer` (inbound) or out to `peer`
/// (outbound). Groups missing from `all` are skipped (another check names them).
pub fn tcp_allowed(
    all: &BTreeMap<&str, &SecurityGroup>,
    groups: &[&str],
    direction: Direction,
    port: i32,
    peer: &Peer<'_>,
) -> Result<Verdict, Unjudged> {
    let mut unknown: Option<String> = None;
    for id in groups {
        let Some(g) = all.get(id) else { continue };
        let rules = match direction {
            Direction::Inbound => g.ip_permissions.as_ref(),
            Direction::Outbound => g.ip_permissions_egress.as_ref(),
        };
        let Some(rules) = rules else {
            return Err(Unjudged::RulesNotRecorded(g.group_id.clone()));
        };
        for rule in rules {
            if !covers_tcp_port(rule, port) {
                continue;
            }
            match rule_admits(rule, peer) {
                Admits::Yes(what) => {
                    return Ok(Verdict::Allowed {
                        group: g.group_id.clone(),
                        rule: format!("{} {what}", describe_ports(rule)),
                    });
                }
                Admits::Maybe(why) => {
                    unknown.get_or_insert_with(|| format!("{}: {why}", g.group_id));
                }
                Admits::No => {}
            }
        }
    }
    Ok(match unknown {
        Some(why) => Verdict::Unknown(why),
        None => Verdict::Denied,
    })
}

/// Whether a rule's protocol and ports include TCP `port`.
pub fn covers_tcp_port(rule: &SgPermission, port: i32) -> bool {
    match rule.ip_protocol.as_str() {
        // -1 is every protocol and every port; EC2 omits the port range for it.
        "-1" | "all" => true,
        "tcp" | "6" => match (rule.from_port, rule.to_port) {
            (Some(from), Some(to)) => from <= port && port <= to,
            // A TCP rule always carries its range; without one, read it as all ports.
            _ => true,
        },
        _ => false,
    }
}

enum Admits {
    Yes(String),
    Maybe(String),
    No,
}

fn rule_admits(rule: &SgPermission, peer: &Peer<'_>) -> Admits {
    let mut maybe = None;
    for g in &rule.groups {
        if g.vpc_peering_connection_id.is_some() {
            maybe.get_or_insert_with(|| {
                format!(
                    "a rule names {} across peering {}",
                    g.group_id,
                    g.vpc_peering_connection_id.as_deref().unwrap_or_default()
                )
            });
            continue;
        }
        if peer.groups.contains(&g.group_id.as_str()) {
            return Admits::Yes(format!("from group {}", g.group_id));
        }
    }
    for cidr in &rule.ip_ranges {
        let Ok(net) = cidr.parse::<Ipv4Net>() else {
            continue;
        };
        if net.prefix_len() == 0 {
            return Admits::Yes(format!("from {cidr}"));
        }
        if !peer.cidrs.is_empty() && peer.cidrs.iter().all(|c| net.contains(c)) {
            return Admits::Yes(format!("from {cidr}"));
        }
        if peer.cidrs.is_empty() {
            maybe.get_or_insert_with(|| {
                format!("a rule admits {cidr}, and the peer's addresses are not known")
            });
        }
    }
    if let Some(pl) = rule.prefix_list_ids.first() {
        maybe.get_or_insert_with(|| format!("a rule admits prefix list {pl}, which is not read"));
    }
    match maybe {
        Some(why) => Admits::Maybe(why),
        None => Admits::No,
    }
}

fn describe_ports(rule: &SgPermission) -> String {
    match (rule.ip_protocol.as_str(), rule.from_port, rule.to_port) {
        ("-1" | "all", _, _) => "all traffic".to_string(),
        (p, Some(from), Some(to)) if from == to => format!("{} {from}", proto(p)),
        (p, Some(from), Some(to)) => format!("{} {from}-{to}", proto(p)),
        (p, _, _) => proto(p).to_string(),
    }
}

fn proto(p: &str) -> &str {
    match p {
        "6" => "tcp",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::SgGroupRef;

    fn tcp(from: i32, to: i32) -> SgPermission {
        SgPermission {
            ip_protocol: "tcp".into(),
            from_port: Some(from),
            to_port: Some(to),
            ..Default::default()
        }
    }

    fn group(id: &str, inbound: Vec<SgPermission>, outbound: Vec<SgPermission>) -> SecurityGroup {
        SecurityGroup {
            group_id: id.into(),
            ip_permissions: Some(inbound),
            ip_permissions_egress: Some(outbound),
            ..Default::default()
        }
    }

    fn from_group(mut r: SgPermission, id: &str) -> SgPermission {
        r.groups.push(SgGroupRef {
            group_id: id.into(),
            ..Default::default()
        });
        r
    }

    fn from_cidr(mut r: SgPermission, cidr: &str) -> SgPermission {
        r.ip_ranges.push(cidr.into());
        r
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn all_traffic_from_the_peer_group_admits_any_port() {
        let all_rule = SgPermission {
            ip_protocol: "-1".into(),
            ..Default::default()
        };
        let g = group("sg-node", vec![from_group(all_rule, "sg-cluster")], vec![]);
        let all = BTreeMap::from([("sg-node", &g)]);
        let peer = Peer {
            groups: vec!["sg-cluster"],
            cidrs: vec![],
        };
        let v = tcp_allowed(&all, &["sg-node"], Direction::Inbound, 10250, &peer).unwrap();
        assert!(matches!(v, Verdict::Allowed { .. }), "{v:?}");
    }

    #[test]
    fn a_port_range_must_contain_the_port() {
        let g = group(
            "sg-node",
            vec![from_group(tcp(1025, 10249), "sg-cluster")],
            vec![],
        );
        let all = BTreeMap::from([("sg-node", &g)]);
        let peer = Peer {
            groups: vec!["sg-cluster"],
            cidrs: vec![],
        };
        let v = tcp_allowed(&all, &["sg-node"], Direction::Inbound, 10250, &peer).unwrap();
        assert_eq!(v, Verdict::Denied);
        let g = group(
            "sg-node",
            vec![from_group(tcp(1025, 65535), "sg-cluster")],
            vec![],
        );
        let all = BTreeMap::from([("sg-node", &g)]);
        let v = tcp_allowed(&all, &["sg-node"], Direction::Inbound, 10250, &peer).unwrap();
        assert!(matches!(v, Verdict::Allowed { .. }), "{v:?}");
    }

    #[test]
    fn a_cidr_must_cover_every_peer_range() {
        let g = group(
            "sg-cp",
            vec![from_cidr(tcp(443, 443), "10.0.0.0/17")],
            vec![],
        );
        let all = BTreeMap::from([("sg-cp", &g)]);
        let inside = Peer {
            groups: vec![],
            cidrs: vec![net("10.0.1.0/24"), net("10.0.2.0/24")],
        };
        let v = tcp_allowed(&all, &["sg-cp"], Direction::Inbound, 443, &inside).unwrap();
        assert!(matches!(v, Verdict::Allowed { .. }), "{v:?}");
        let straddles = Peer {
            groups: vec![],
            cidrs: vec![net("10.0.1.0/24"), net("10.0.200.0/24")],
        };
        let v = tcp_allowed(&all, &["sg-cp"], Direction::Inbound, 443, &straddles).unwrap();
        assert_eq!(v, Verdict::Denied);
    }

    #[test]
    fn prefix_lists_and_peered_groups_are_unknown_not_denied() {
        let mut r = tcp(443, 443);
        r.prefix_list_ids.push("pl-0abc".into());
        let g = group("sg-cp", vec![r], vec![]);
        let all = BTreeMap::from([("sg-cp", &g)]);
        let v = tcp_allowed(&all, &["sg-cp"], Direction::Inbound, 443, &Peer::default()).unwrap();
        assert!(
            matches!(v, Verdict::Unknown(ref w) if w.contains("pl-0abc")),
            "{v:?}"
        );
        let mut r = tcp(443, 443);
        r.groups.push(SgGroupRef {
            group_id: "sg-node".into(),
            user_id: None,
            vpc_peering_connection_id: Some("pcx-1".into()),
        });
        let g = group("sg-cp", vec![r], vec![]);
        let all = BTreeMap::from([("sg-cp", &g)]);
        let peer = Peer {
            groups: vec!["sg-node"],
            cidrs: vec![],
        };
        let v = tcp_allowed(&all, &["sg-cp"], Direction::Inbound, 443, &peer).unwrap();
        assert!(matches!(v, Verdict::Unknown(_)), "{v:?}");
    }

    #[test]
    fn udp_rules_do_not_admit_tcp_and_unrecorded_rules_are_not_judged() {
        let udp = SgPermission {
            ip_protocol: "udp".into(),
            from_port: Some(0),
            to_port: Some(65535),
            ip_ranges: vec!["0.0.0.0/0".into()],
            ..Default::default()
        };
        let g = group("sg-node", vec![], vec![udp]);
        let all = BTreeMap::from([("sg-node", &g)]);
        let v = tcp_allowed(
            &all,
            &["sg-node"],
            Direction::Outbound,
            443,
            &Peer::default(),
        )
        .unwrap();
        assert_eq!(v, Verdict::Denied);
        let old = SecurityGroup {
            group_id: "sg-old".into(),
            ..Default::default()
        };
        let all = BTreeMap::from([("sg-old", &old)]);
        let e = tcp_allowed(&all, &["sg-old"], Direction::Inbound, 443, &Peer::default());
        assert_eq!(e, Err(Unjudged::RulesNotRecorded("sg-old".into())));
    }
}
