//! Flows that can never match a packet, and flows whose sessions are split: traffic a flow
//! sends one way while the reverse of the same sessions (addresses and ports swapped, as a
//! reply comes back) goes another, so that a filter sees half of each session.

use crate::paths;
use crate::protocols::{PROTOCOLS, has_ports};
use crate::regions::{flows_overlap, links_cover, match_covers};
use crate::types::{Action, Direction, Flow, FlowMatch, Prefix};

use super::Findings;

/// EtherTypes after which the parser can still find IP: IPv4, IPv6, MPLS, PPPoE.
const IP_CARRIERS: [u16; 5] = [0x0800, 0x86dd, 0x8847, 0x8848, 0x8864];

/// Why no packet can ever match `m`, or None.
pub fn never_matches(m: &FlowMatch) -> Option<String> {
    let v4 = m.src_ipv4.is_some() || m.dst_ipv4.is_some();
    let v6 = m.src_ipv6.is_some() || m.dst_ipv6.is_some();
    let ports = m.src_port.is_some() || m.dst_port.is_some();
    let ip = v4 || v6 || m.ip_proto.is_some() || ports;
    let llc = m.llc_dsap.is_some() || m.llc_ssap.is_some();
    if v4 && v6 {
        return Some(
            "IPv4 and IPv6 addresses together: a packet is one or the other; write a flow for each"
                .into(),
        );
    }
    if let (Some(proto), true) = (m.ip_proto, ports)
        && !has_ports(proto)
    {
        return Some(format!(
            "ip-proto {} has no ports: src-port and dst-port match TCP, UDP, SCTP, DCCP and UDP-Lite only",
            protocol_name(proto)
        ));
    }
    if ip && llc {
        return Some(
            "LLC (llc-dsap, llc-ssap) and IP criteria together: an 802.2 LLC frame carries no IP"
                .into(),
        );
    }
    if let Some(t) = m.packet_type {
        let wrong_family = (v4 && t == 0x86dd) || (v6 && t == 0x0800);
        if wrong_family || (ip && !IP_CARRIERS.contains(&t)) {
            return Some(format!(
                "packet-type {t} and {} criteria together: that EtherType never carries them",
                if v4 {
                    "IPv4"
                } else if v6 {
                    "IPv6"
                } else {
                    "IP"
                }
            ));
        }
        if llc {
            return Some(format!(
                "packet-type {t} and LLC criteria together: an LLC frame has a length where the EtherType would be"
            ));
        }
    }
    if let Some(depth) = m.vlan_depth
        && let Some(tag) = (usize::from(depth)..3).find(|i| m.vlan_tags[*i].is_some())
    {
        return Some(format!(
            "vlan{tag}-tag needs at least {} VLAN tags, and vlan-depth is {depth}",
            tag + 1
        ));
    }
    None
}

fn protocol_name(proto: u8) -> String {
    match PROTOCOLS.iter().find(|(_, n, _)| *n == proto) {
        Some((name, _, _)) => format!("{name} ({proto})"),
        None => proto.to_string(),
    }
}

/// Flows that can never match are refused; `direction both` with MAC criteria too, since
/// the mirror swaps addresses and ports, not MACs.
pub fn check_sense(flow: &Flow, f: &mut Findings) {
    let base = paths::flow(&flow.name);
    if let Some(why) = never_matches(&flow.matches) {
        f.error(
            format!("{base}/match"),
            format!("this flow can never match: {why}"),
        );
    }
    if flow.direction == Direction::Both
        && (flow.matches.src_mac.is_some() || flow.matches.dst_mac.is_some())
    {
        f.error(
            format!("{base}/direction"),
            "direction both mirrors addresses and ports, not MAC addresses: match the MACs \
             of each direction in a flow of its own"
                .into(),
        );
    }
}

/// Past this many flow comparisons the symmetry check is skipped (with a warning): a load
/// of 100 000 one-direction flows would otherwise cost minutes.
pub const MAX_SYMMETRY_COMPARISONS: usize = 4_000_000;

/// Warns, naming the flows, where what a flow does and what the reverse of its traffic
/// meets disagree and a unit is involved: the unit's filters see one direction only. Every
/// one-direction flow is checked when the comparisons fit the budget (a change can split
/// the sessions of a flow it did not touch: removing the flow that took their reverse);
/// past it, only the changed flows, and past that none (with a warning).
pub fn check_symmetry<'a>(flows: &[&'a Flow], selected: &[&'a Flow], f: &mut Findings) {
    let most = MAX_SYMMETRY_COMPARISONS / flows.len().max(1);
    // Counted only as far as the budget: a commit of one flow among 100 000 one-direction
    // ones need not look at them all to know they are too many.
    let one_way = |candidates: &[&'a Flow]| -> Vec<&'a Flow> {
        candidates
            .iter()
            .copied()
            .filter(|fl| can_split(fl))
            .take(most + 1)
            .collect()
    };
    let mut checked = one_way(flows);
    if checked.len() > most {
        checked = one_way(selected);
    }
    if checked.len() > most {
        let count = selected.iter().filter(|fl| can_split(fl)).count();
        f.warning(
            paths::flows(),
            format!(
                "{count} one-direction flows among {} are too many to check that each session's \
                 two directions meet the same filter (more than {MAX_SYMMETRY_COMPARISONS} \
                 comparisons); `direction both` makes a flow symmetric by construction",
                flows.len()
            ),
        );
        return;
    }
    let mut split = 0;
    for flow in checked {
        if let Some(message) = split_sessions(flows, flow) {
            split += 1;
            if split <= super::MAX_OVERLAP_WARNINGS {
                f.warning(paths::flow(&flow.name), message);
            }
        }
    }
    if split > super::MAX_OVERLAP_WARNINGS {
        f.warning(
            paths::flows(),
            format!(
                "{} more flows split sessions",
                split - super::MAX_OVERLAP_WARNINGS
            ),
        );
    }
}

/// Traffic to a multicast or broadcast destination has no reverse: no packet comes from
/// such an address. (Asked of every flow of a commit: the prefixes are not parsed again.)
fn reverse_cannot_exist(m: &FlowMatch) -> bool {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    const NO_REVERSE_V4: [Prefix; 2] = [
        Prefix {
            addr: IpAddr::V4(Ipv4Addr::new(224, 0, 0, 0)),
            len: 4,
        },
        Prefix {
            addr: IpAddr::V4(Ipv4Addr::BROADCAST),
            len: 32,
        },
    ];
    const NO_REVERSE_V6: Prefix = Prefix {
        addr: IpAddr::V6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0)),
        len: 8,
    };
    let within = |outer: &Prefix, inner: Option<Prefix>| {
        inner.is_some_and(|i| outer.len <= i.len && outer.contains(i.addr))
    };
    NO_REVERSE_V4.iter().any(|p| within(p, m.dst_ipv4)) || within(&NO_REVERSE_V6, m.dst_ipv6)
}

/// Whether a flow's traffic can have a reverse that meets another flow: written for one
/// direction, not matching its own mirror, and to a destination that answers (a
/// multicast or broadcast one does not).
fn can_split(flow: &Flow) -> bool {
    flow.direction == Direction::AsWritten
        && !flow.matches.is_symmetric()
        && !reverse_cannot_exist(&flow.matches)
}

/// Flows in the order they win, best first.
fn ranked<'a>(flows: impl IntoIterator<Item = &'a Flow>) -> Vec<&'a Flow> {
    let mut ranked: Vec<&Flow> = flows.into_iter().collect();
    ranked.sort_by(|a, b| b.rank().cmp(&a.rank()));
    ranked
}

/// Where the reverse of `flow`'s traffic goes among `flows` (all flows, in any order),
/// when that splits its sessions (the forecast says it): `the reverse (src-ipv4
/// 192.0.2.0/24) goes to unit ef1 (flow all)`.
pub fn reverse_elsewhere(flows: &[&Flow], flow: &Flow) -> Option<String> {
    can_split(flow).then(|| reverse_goes(flows, flow)).flatten()
}

/// The warning for a flow whose sessions are split.
fn split_sessions(flows: &[&Flow], flow: &Flow) -> Option<String> {
    let goes = reverse_goes(flows, flow)?;
    let (verb, why) = match &flow.action {
        Action::ToUnit(unit) => (
            format!("sends traffic to unit {unit}"),
            "sessions are split between filters",
        ),
        Action::Bypass => (
            "bypasses traffic".into(),
            "a unit sees one direction of those sessions",
        ),
        Action::Drop => (
            "drops traffic".into(),
            "a unit sees one direction of those sessions",
        ),
    };
    Some(format!(
        "flow {} {verb}, but {goes}: {why}; set `direction both` on {}, or give the reverse \
         a flow of its own",
        flow.name, flow.name
    ))
}

/// Where the reverse of `flow`'s traffic goes when that is not where `flow` sends it, in
/// words: the flow that takes what is left of it (or the default bypass), and flows that
/// take parts of it first. Only the flows that meet the reverse are ranked: one flow
/// checked among 100 000 costs a pass over them, not a sort.
fn reverse_goes(flows: &[&Flow], flow: &Flow) -> Option<String> {
    let shadowed = outranking(flows, flow).any(|k| crate::regions::covers(k, flow));
    if shadowed {
        return None; // the flow never gets a packet: nothing of it is split
    }
    let reverse = Flow {
        matches: flow.matches.mirrored(),
        ..flow.clone()
    };
    let meeting = ranked(flows.iter().copied().filter(|o| flows_overlap(&reverse, o)));
    let mut taker: Option<&Flow> = None;
    let mut parts: Vec<&Flow> = Vec::new();
    for other in meeting {
        if links_cover(other, flow)
            && other
                .directions()
                .iter()
                .any(|m| match_covers(m, &reverse.matches))
        {
            taker = Some(other);
            break;
        }
        if splits(&flow.action, &other.action) && !mirrored_alike(flows, other, flow) {
            parts.push(other);
        }
    }
    let rest_action = match taker {
        Some(t) => Some(&t.action),
        None => Some(&Action::Bypass),
    };
    parts.retain(|p| Some(&p.action) != rest_action);
    let rest = match taker {
        Some(t) if splits(&flow.action, &t.action) => {
            Some(format!("{} (flow {})", destination(&t.action), t.name))
        }
        None if matches!(flow.action, Action::ToUnit(_)) => {
            Some("bypass (no flow matches it)".to_string())
        }
        _ => None,
    };
    if rest.is_none() && parts.is_empty() {
        return None;
    }
    let named: Vec<String> = parts
        .iter()
        .take(3)
        .map(|p| format!("{} (flow {})", destination(&p.action), p.name))
        .collect();
    let more = parts.len().saturating_sub(named.len());
    let parts_words = match (named.is_empty(), more) {
        (true, _) => String::new(),
        (false, 0) => named.join(", "),
        (false, n) => format!("{} and {n} more", named.join(", ")),
    };
    Some(match (rest, parts_words.is_empty()) {
        (Some(rest), true) => format!("the reverse ({}) goes to {rest}", words(&reverse.matches)),
        (Some(rest), false) => format!(
            "the reverse ({}) goes to {rest}, and in part to {parts_words}",
            words(&reverse.matches)
        ),
        (None, _) => format!(
            "part of the reverse ({}) goes to {parts_words}",
            words(&reverse.matches)
        ),
    })
}

/// A flow that takes part of the reverse splits nothing when the mirror of what it takes
/// goes the same way before `flow` sees it: it outranks `flow` and a flow with its action
/// (itself when symmetric) outranks `flow` too and takes its mirror; or its traffic has no
/// reverse at all.
/// The flows that win over `flow` where both match.
fn outranking<'a>(flows: &'a [&'a Flow], flow: &'a Flow) -> impl Iterator<Item = &'a Flow> {
    flows.iter().copied().filter(|k| k.rank() > flow.rank())
}

fn mirrored_alike(flows: &[&Flow], part: &Flow, flow: &Flow) -> bool {
    if reverse_cannot_exist(&part.matches) {
        return true;
    }
    if part.rank() <= flow.rank() {
        return false;
    }
    let mirror = part.matches.mirrored();
    outranking(flows, flow).any(|k| {
        k.action == part.action
            && links_cover(k, part)
            && k.directions().iter().any(|m| match_covers(m, &mirror))
    })
}

/// Whether two actions split a session that meets one on the way out and the other on the
/// way back: a unit on one side and not the same unit on the other.
fn splits(a: &Action, b: &Action) -> bool {
    a != b && (matches!(a, Action::ToUnit(_)) || matches!(b, Action::ToUnit(_)))
}

fn destination(action: &Action) -> String {
    match action {
        Action::ToUnit(unit) => format!("unit {unit}"),
        other => other.as_str().to_string(),
    }
}

/// `src-ipv4 192.0.2.0/24 src-port 53`: the address and port criteria of a match.
fn words(m: &FlowMatch) -> String {
    let mut words: Vec<String> = Vec::new();
    let prefixes = [
        ("src-ipv4", m.src_ipv4),
        ("dst-ipv4", m.dst_ipv4),
        ("src-ipv6", m.src_ipv6),
        ("dst-ipv6", m.dst_ipv6),
    ];
    for (leaf, prefix) in prefixes {
        if let Some(p) = prefix {
            words.push(format!("{leaf} {p}"));
        }
    }
    for (leaf, range) in [("src-port", m.src_port), ("dst-port", m.dst_port)] {
        match range {
            Some(r) if r.lo == r.hi => words.push(format!("{leaf} {}", r.lo)),
            Some(r) => words.push(format!("{leaf} {}-{}", r.lo, r.hi)),
            None => {}
        }
    }
    words.join(" ")
}
