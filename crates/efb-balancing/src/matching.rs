//! Which flow a session falls under. A session says nothing of the frame around its IP
//! header, so it is taken as the commonest frame: untagged, no MPLS, plain IPv4 or IPv6
//! EtherType, unknown MACs, no LLC. A flow that needs anything else does not match, rather
//! than matching by guess.

use std::net::IpAddr;
use std::sync::Arc;

use efb_model::{Direction, Flow, FlowMatch, PortRange, Prefix};

use crate::Session;
use crate::key::has_ports;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;

/// The flow the chip would apply: highest priority, then the first name in byte order, so
/// that two balancers with the same flows always pick the same one.
pub fn select_flow<'a>(
    flows: impl IntoIterator<Item = &'a Arc<Flow>>,
    s: &Session,
) -> Option<&'a Arc<Flow>> {
    let mut best: Option<&Arc<Flow>> = None;
    for flow in flows.into_iter().filter(|f| flow_matches(f, s)) {
        best = match best {
            Some(b) if !outranks(flow, b) => Some(b),
            _ => Some(flow),
        };
    }
    best
}

pub(crate) fn outranks(a: &Flow, b: &Flow) -> bool {
    a.rank() > b.rank()
}

/// Whether the flow takes the session's packet: as written, or mirrored when the flow's
/// direction is both.
pub fn flow_matches(flow: &Flow, s: &Session) -> bool {
    link_in_scope(flow, s)
        && (criteria_match(&flow.matches, s)
            || (flow.direction == Direction::Both && criteria_match(&flow.matches, &s.reversed())))
}

/// A question about no particular link can only be answered by flows that hold everywhere.
fn link_in_scope(flow: &Flow, s: &Session) -> bool {
    match &s.link {
        Some(link) => flow.applies_to_link(link),
        None => flow.links.is_empty(),
    }
}

pub fn criteria_match(m: &FlowMatch, s: &Session) -> bool {
    frame_match(m, s)
        && prefix_match(m.src_ipv4, s.src, true)
        && prefix_match(m.dst_ipv4, s.dst, true)
        && prefix_match(m.src_ipv6, s.src, false)
        && prefix_match(m.dst_ipv6, s.dst, false)
        && m.ip_proto.is_none_or(|p| p == s.ip_proto)
        && port_match(m.src_port, s.ip_proto, s.src_port)
        && port_match(m.dst_port, s.ip_proto, s.dst_port)
}

/// The layer-2 criteria against the assumed plain frame.
fn frame_match(m: &FlowMatch, s: &Session) -> bool {
    let ethertype = if s.src.is_ipv4() {
        ETHERTYPE_IPV4
    } else {
        ETHERTYPE_IPV6
    };
    m.vlan_tags.iter().all(Option::is_none)
        && m.vlan_depth.is_none_or(|d| d == 0)
        && m.mpls_depth.is_none_or(|d| d == 0)
        && m.packet_type.is_none_or(|t| t == ethertype)
        && m.src_mac.is_none()
        && m.dst_mac.is_none()
        && m.llc_dsap.is_none()
        && m.llc_ssap.is_none()
}

/// The family is checked on the address as well as by the prefix, so that an IPv6 prefix
/// misfiled under an ipv4 leaf still never matches IPv6 traffic.
fn prefix_match(prefix: Option<Prefix>, addr: IpAddr, v4_leaf: bool) -> bool {
    prefix.is_none_or(|p| addr.is_ipv4() == v4_leaf && p.contains(addr))
}

/// Port criteria mean "a protocol with ports, and this port": the chip does not parse
/// ports of other protocols, so an ICMP packet never matches `dst-port 0`.
fn port_match(range: Option<PortRange>, ip_proto: u8, port: u16) -> bool {
    range.is_none_or(|r| has_ports(ip_proto) && r.contains(port))
}
