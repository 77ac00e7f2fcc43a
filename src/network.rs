//! How traffic between a node and the control plane is judged: security group rules as EC2
//! evaluates them, and a subnet's way out of the VPC as its route table gives it. Pure: it
//! reads facts' values and says allowed, denied or cannot tell.
//!
//! Security groups are stateful and allow-only: a packet passes when any rule of any group on
//! the receiving (inbound) or sending (outbound) interface matches it, and the reply needs no
//! rule (<https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html>). So one
//! direction per flow is judged, and a rule either matches, does not, or names something
//! karpdoctor cannot resolve (a prefix list, a group across a peering), which is "cannot tell"
//! rather than a denial.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::facts::{
    InternetGateway, NatGateway, NetworkAcl, RouteTable, SecurityGroup, SgPermission,
};

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

/// A VPC's routing, as far as a node's way out depends on it.
pub struct Routing<'a> {
    pub vpc_id: &'a str,
    pub route_tables: &'a [RouteTable],
    pub nat_gateways: &'a [NatGateway],
    pub internet_gateways: &'a [InternetGateway],
}

/// How traffic from a subnet reaches public addresses (the cluster's public endpoint, AWS
/// services' public names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Egress {
    /// Through an attached internet gateway, with the node's own public address.
    InternetGateway {
        route_table: String,
        gateway: String,
    },
    /// Through a public NAT gateway, from its Elastic IPs.
    Nat {
        route_table: String,
        gateway: String,
        public_ips: Vec<String>,
    },
    /// A default route to something karpdoctor cannot follow (a transit gateway, a peering, a
    /// firewall appliance): it may well reach the internet.
    Unknown { route_table: String, why: String },
    /// No way out: why, and the route table (if the subnet has one).
    None {
        route_table: Option<String>,
        why: String,
    },
}

impl<'a> Routing<'a> {
    /// The subnet's route table: its explicit association, else the VPC's main table.
    pub fn table_of(&self, subnet_id: &str) -> Option<&'a RouteTable> {
        let associated =
            |t: &&RouteTable, pick: &dyn Fn(&crate::facts::RouteTableAssociation) -> bool| {
                t.associations.iter().any(|a| {
                    pick(a) && !matches!(a.state.as_deref(), Some("disassociated" | "failed"))
                })
            };
        self.route_tables
            .iter()
            .find(|t| associated(t, &|a| a.subnet_id.as_deref() == Some(subnet_id)))
            .or_else(|| {
                self.route_tables
                    .iter()
                    .find(|t| associated(t, &|a| a.main))
            })
    }

    /// The subnet's way out. `public_ip` is whether its nodes get a public IPv4 address
    /// (`None`: not known), which an internet gateway route needs.
    pub fn egress(&self, subnet_id: &str, public_ip: Option<bool>) -> Egress {
        self.egress_from(subnet_id, public_ip, true)
    }

    fn egress_from(&self, subnet_id: &str, public_ip: Option<bool>, follow_nat: bool) -> Egress {
        let Some(table) = self.table_of(subnet_id) else {
            return Egress::None {
                route_table: None,
                why: "the subnet has no route table".to_string(),
            };
        };
        let rt = table.route_table_id.clone();
        let Some(route) = table
            .routes
            .iter()
            .find(|r| r.destination_cidr_block.as_deref() == Some("0.0.0.0/0"))
        else {
            return Egress::None {
                route_table: Some(rt),
                why: "its route table has no default route (0.0.0.0/0)".to_string(),
            };
        };
        if route.state.as_deref() == Some("blackhole") {
            let target = target_of(route);
            return Egress::None {
                route_table: Some(rt),
                why: format!("its default route to {target} is a blackhole (the target is gone)"),
            };
        }
        if let Some(gw) = route
            .gateway_id
            .as_deref()
            .filter(|g| g.starts_with("igw-"))
        {
            let attached = self.internet_gateways.iter().any(|g| {
                g.internet_gateway_id == gw
                    && g.attachments.iter().any(|a| {
                        a.vpc_id == self.vpc_id
                            && matches!(a.state.as_str(), "available" | "attached")
                    })
            });
            if !attached {
                return Egress::None {
                    route_table: Some(rt),
                    why: format!(
                        "its default route goes to {gw}, which is not attached to the VPC"
                    ),
                };
            }
            return match public_ip {
                Some(true) => Egress::InternetGateway {
                    route_table: rt,
                    gateway: gw.to_string(),
                },
                Some(false) => Egress::None {
                    route_table: Some(rt),
                    why: format!(
                        "its default route goes to internet gateway {gw}, but nodes get no public IPv4 address (MapPublicIpOnLaunch and associatePublicIPAddress are off)"
                    ),
                },
                None => Egress::Unknown {
                    route_table: rt,
                    why: format!(
                        "its default route goes to internet gateway {gw}, and whether nodes get a public address was not recorded"
                    ),
                },
            };
        }
        if let Some(id) = route.nat_gateway_id.as_deref() {
            let Some(nat) = self.nat_gateways.iter().find(|n| n.nat_gateway_id == id) else {
                return Egress::None {
                    route_table: Some(rt),
                    why: format!(
                        "its default route goes to NAT gateway {id}, which does not exist"
                    ),
                };
            };
            if nat.state != "available" {
                return Egress::None {
                    route_table: Some(rt),
                    why: format!(
                        "its default route goes to NAT gateway {id}, which is {}",
                        nat.state
                    ),
                };
            }
            if nat.connectivity_type == "private" {
                // A private NAT hands traffic on inside the network (usually to a transit
                // gateway), which may reach the internet further on.
                return Egress::Unknown {
                    route_table: rt,
                    why: format!("its default route goes to private NAT gateway {id}"),
                };
            }
            if follow_nat {
                // A public NAT gateway reaches the internet through its own subnet's route.
                match self.egress_from(&nat.subnet_id, Some(true), false) {
                    Egress::InternetGateway { .. } => {}
                    Egress::Unknown { why, .. } => {
                        return Egress::Unknown {
                            route_table: rt,
                            why: format!("NAT gateway {id}'s subnet {}: {why}", nat.subnet_id),
                        };
                    }
                    Egress::Nat { .. } | Egress::None { .. } => {
                        return Egress::None {
                            route_table: Some(rt),
                            why: format!(
                                "its default route goes to NAT gateway {id}, whose subnet {} has no route to an internet gateway",
                                nat.subnet_id
                            ),
                        };
                    }
                }
            }
            return Egress::Nat {
                route_table: rt,
                gateway: id.to_string(),
                public_ips: nat.public_ips.clone(),
            };
        }
        Egress::Unknown {
            route_table: rt,
            why: format!("its default route goes to {}", target_of(route)),
        }
    }
}

/// The target of a route, named for a message.
fn target_of(route: &crate::facts::Route) -> String {
    route
        .gateway_id
        .as_deref()
        .or(route.nat_gateway_id.as_deref())
        .or(route.transit_gateway_id.as_deref())
        .or(route.vpc_peering_connection_id.as_deref())
        .or(route.network_interface_id.as_deref())
        .or(route.instance_id.as_deref())
        .or(route.egress_only_internet_gateway_id.as_deref())
        .or(route.other_target.as_deref())
        .unwrap_or("an unnamed target")
        .to_string()
}

/// Whether an IPv4 address lies in any of the CIDRs (`0.0.0.0/0` holds every address).
pub fn ip_in_any(ip: &str, cidrs: &[String]) -> bool {
    let Ok(addr) = ip.parse::<std::net::Ipv4Addr>() else {
        return false;
    };
    cidrs
        .iter()
        .filter_map(|c| c.parse::<Ipv4Net>().ok())
        .any(|n| n.contains(&addr))
}

/// What a network ACL says about TCP traffic on some ports, to or from anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AclVerdict {
    /// An entry allows some of it before any entry denies all of it.
    Allowed,
    /// This entry denies all of it, to or from every IPv4 address, before any allow.
    Denied { rule: i32 },
}

/// First-match evaluation of a network ACL for TCP on `ports` (inclusive), outbound or inbound,
/// as EC2 applies it: entries by rule number, the first that matches the packet decides
/// (<https://docs.aws.amazon.com/vpc/latest/userguide/nacl-rules.html>). Lenient by design: an
/// allow for part of the ports or of the addresses counts as allowed (the endpoint's addresses
/// are not known), and only a deny of every address and port that no allow precedes is one.
pub fn acl_tcp(acl: &NetworkAcl, egress: bool, ports: (i32, i32)) -> AclVerdict {
    let mut entries: Vec<_> = acl
        .entries
        .iter()
        .filter(|e| e.egress == egress && e.cidr_block.is_some())
        .filter(|e| matches!(e.protocol.as_str(), "-1" | "6" | "tcp" | "all"))
        .collect();
    entries.sort_by_key(|e| e.rule_number);
    for e in entries {
        // -1 carries no port range: every port.
        let (from, to) = match (e.protocol.as_str(), e.from_port, e.to_port) {
            ("-1" | "all", _, _) => (0, 65535),
            (_, Some(from), Some(to)) => (from, to),
            _ => (0, 65535),
        };
        let overlaps = from <= ports.1 && ports.0 <= to;
        if !overlaps {
            continue;
        }
        if e.rule_action == "allow" {
            return AclVerdict::Allowed;
        }
        let everywhere = e.cidr_block.as_deref() == Some("0.0.0.0/0");
        if everywhere && from <= ports.0 && ports.1 <= to {
            return AclVerdict::Denied {
                rule: e.rule_number,
            };
        }
        // A deny of some addresses or ports: the rest goes on to later entries.
    }
    // EC2's implicit last entry (*) denies what nothing matched.
    AclVerdict::Denied { rule: i32::MAX }
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

    use crate::facts::{GatewayAttachment, Route, RouteTableAssociation};

    fn table(id: &str, subnet: Option<&str>, main: bool, default: Option<Route>) -> RouteTable {
        let mut routes = vec![Route {
            destination_cidr_block: Some("192.168.0.0/16".into()),
            gateway_id: Some("local".into()),
            state: Some("active".into()),
            ..Default::default()
        }];
        routes.extend(default);
        RouteTable {
            route_table_id: id.into(),
            associations: vec![RouteTableAssociation {
                subnet_id: subnet.map(str::to_string),
                main,
                state: Some("associated".into()),
            }],
            routes,
        }
    }

    fn default_to(set: impl FnOnce(&mut Route)) -> Option<Route> {
        let mut r = Route {
            destination_cidr_block: Some("0.0.0.0/0".into()),
            state: Some("active".into()),
            ..Default::default()
        };
        set(&mut r);
        Some(r)
    }

    fn igw(id: &str) -> InternetGateway {
        InternetGateway {
            internet_gateway_id: id.into(),
            attachments: vec![GatewayAttachment {
                vpc_id: "vpc-1".into(),
                state: "available".into(),
            }],
        }
    }

    fn nat(id: &str, subnet: &str) -> NatGateway {
        NatGateway {
            nat_gateway_id: id.into(),
            state: "available".into(),
            connectivity_type: "public".into(),
            subnet_id: subnet.into(),
            public_ips: vec!["198.51.100.7".into()],
        }
    }

    #[test]
    fn private_subnets_go_out_through_a_nat_whose_subnet_reaches_an_igw() {
        let tables = [
            table(
                "rtb-public",
                Some("subnet-pub"),
                false,
                default_to(|r| r.gateway_id = Some("igw-1".into())),
            ),
            table(
                "rtb-main",
                None,
                true,
                default_to(|r| r.nat_gateway_id = Some("nat-1".into())),
            ),
        ];
        let nats = [nat("nat-1", "subnet-pub")];
        let igws = [igw("igw-1")];
        let routing = Routing {
            vpc_id: "vpc-1",
            route_tables: &tables,
            nat_gateways: &nats,
            internet_gateways: &igws,
        };
        // The private subnet has no association of its own: the main table applies.
        match routing.egress("subnet-priv", Some(false)) {
            Egress::Nat {
                public_ips,
                route_table,
                ..
            } => {
                assert_eq!(public_ips, ["198.51.100.7"]);
                assert_eq!(route_table, "rtb-main");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            routing.egress("subnet-pub", Some(true)),
            Egress::InternetGateway { .. }
        ));
        // An IGW route without a public address leads nowhere.
        assert!(matches!(
            routing.egress("subnet-pub", Some(false)),
            Egress::None { .. }
        ));
        assert!(matches!(
            routing.egress("subnet-pub", None),
            Egress::Unknown { .. }
        ));
        // A NAT whose own subnet has no way out is no way out.
        let igws: [InternetGateway; 0] = [];
        let routing = Routing {
            vpc_id: "vpc-1",
            route_tables: &tables,
            nat_gateways: &nats,
            internet_gateways: &igws,
        };
        assert!(matches!(
            routing.egress("subnet-priv", Some(false)),
            Egress::None { .. }
        ));
    }

    #[test]
    fn no_default_route_or_a_blackhole_is_no_way_out_and_transit_is_unknown() {
        let tables = [table("rtb-1", Some("subnet-a"), false, None)];
        let routing = Routing {
            vpc_id: "vpc-1",
            route_tables: &tables,
            nat_gateways: &[],
            internet_gateways: &[],
        };
        assert!(matches!(
            routing.egress("subnet-a", Some(false)),
            Egress::None { .. }
        ));
        let tables = [table(
            "rtb-1",
            Some("subnet-a"),
            false,
            default_to(|r| {
                r.nat_gateway_id = Some("nat-gone".into());
                r.state = Some("blackhole".into());
            }),
        )];
        let routing = Routing {
            vpc_id: "vpc-1",
            route_tables: &tables,
            nat_gateways: &[],
            internet_gateways: &[],
        };
        assert!(
            matches!(routing.egress("subnet-a", Some(false)), Egress::None { ref why, .. } if why.contains("blackhole"))
        );
        let tables = [table(
            "rtb-1",
            Some("subnet-a"),
            false,
            default_to(|r| r.transit_gateway_id = Some("tgw-1".into())),
        )];
        let routing = Routing {
            vpc_id: "vpc-1",
            route_tables: &tables,
            nat_gateways: &[],
            internet_gateways: &[],
        };
        assert!(
            matches!(routing.egress("subnet-a", Some(false)), Egress::Unknown { ref why, .. } if why.contains("tgw-1"))
        );
    }

    #[test]
    fn addresses_in_cidrs() {
        let cidrs = ["203.0.113.0/24".to_string()];
        assert!(ip_in_any("203.0.113.9", &cidrs));
        assert!(!ip_in_any("198.51.100.7", &cidrs));
        assert!(ip_in_any("198.51.100.7", &["0.0.0.0/0".to_string()]));
    }

    use crate::facts::NetworkAclEntry;

    fn entry(
        rule: i32,
        egress: bool,
        action: &str,
        proto: &str,
        ports: Option<(i32, i32)>,
        cidr: &str,
    ) -> NetworkAclEntry {
        NetworkAclEntry {
            rule_number: rule,
            egress,
            rule_action: action.into(),
            protocol: proto.into(),
            from_port: ports.map(|p| p.0),
            to_port: ports.map(|p| p.1),
            cidr_block: Some(cidr.into()),
            ipv6_cidr_block: None,
        }
    }

    #[test]
    fn the_default_acl_allows_and_a_443_only_inbound_acl_denies_return_traffic() {
        let default = NetworkAcl {
            entries: vec![
                entry(100, true, "allow", "-1", None, "0.0.0.0/0"),
                entry(32767, true, "deny", "-1", None, "0.0.0.0/0"),
                entry(100, false, "allow", "-1", None, "0.0.0.0/0"),
                entry(32767, false, "deny", "-1", None, "0.0.0.0/0"),
            ],
            ..Default::default()
        };
        assert_eq!(acl_tcp(&default, true, (443, 443)), AclVerdict::Allowed);
        assert_eq!(acl_tcp(&default, false, (1024, 65535)), AclVerdict::Allowed);
        let strict = NetworkAcl {
            entries: vec![
                entry(100, true, "allow", "-1", None, "0.0.0.0/0"),
                entry(100, false, "allow", "6", Some((443, 443)), "0.0.0.0/0"),
                entry(110, false, "allow", "6", Some((22, 22)), "10.0.0.0/8"),
                entry(32767, false, "deny", "-1", None, "0.0.0.0/0"),
            ],
            ..Default::default()
        };
        assert_eq!(
            acl_tcp(&strict, false, (1024, 65535)),
            AclVerdict::Denied { rule: 32767 }
        );
        // A deny of one range before the allow-all does not deny everything.
        let partial = NetworkAcl {
            entries: vec![
                entry(90, true, "deny", "6", Some((443, 443)), "203.0.113.0/24"),
                entry(100, true, "allow", "-1", None, "0.0.0.0/0"),
            ],
            ..Default::default()
        };
        assert_eq!(acl_tcp(&partial, true, (443, 443)), AclVerdict::Allowed);
    }
}
