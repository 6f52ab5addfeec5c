//! The packets flows match, as regions of header values: whether two flows can meet the
//! same packet, whether one holds every packet of another, and the mirror a flow with
//! `direction both` matches too (source and destination addresses and ports swapped: the
//! other direction of the same sessions). Only sure answers are "covers": a wrong "covers"
//! would hide traffic, a wrong "does not" only names a flow too many.

use std::borrow::Cow;

use crate::types::{Direction, Flow, FlowMatch, MacMatch, PortRange, Prefix};

impl FlowMatch {
    /// The same criteria seen from the other end of a session: source and destination
    /// addresses and ports swapped (MACs and layer-2 criteria stay).
    pub fn mirrored(&self) -> FlowMatch {
        FlowMatch {
            src_ipv4: self.dst_ipv4,
            dst_ipv4: self.src_ipv4,
            src_ipv6: self.dst_ipv6,
            dst_ipv6: self.src_ipv6,
            src_port: self.dst_port,
            dst_port: self.src_port,
            ..self.clone()
        }
    }

    /// True when the mirror of every packet matched is matched too (no address or port
    /// criterion, or the same on both ends): such a match cannot split a session.
    pub fn is_symmetric(&self) -> bool {
        self.src_ipv4 == self.dst_ipv4
            && self.src_ipv6 == self.dst_ipv6
            && self.src_port == self.dst_port
    }
}

impl Flow {
    /// The matches the flow holds: as written, and its mirror when its direction is both
    /// (once when the mirror is the match itself).
    pub fn directions(&self) -> Vec<Cow<'_, FlowMatch>> {
        let mut out = vec![Cow::Borrowed(&self.matches)];
        if self.direction == Direction::Both && !self.matches.is_symmetric() {
            out.push(Cow::Owned(self.matches.mirrored()));
        }
        out
    }
}

/// Whether the flows' link scopes share a link.
fn links_meet(a: &Flow, b: &Flow) -> bool {
    a.links.is_empty() || b.links.is_empty() || a.links.iter().any(|l| b.links.contains(l))
}

/// True when some packet could match both flows.
pub fn flows_overlap(a: &Flow, b: &Flow) -> bool {
    let mirrored = a.direction == Direction::Both || b.direction == Direction::Both;
    links_meet(a, b)
        && (matches_overlap(&a.matches, &b.matches)
            || (mirrored
                && a.directions()
                    .iter()
                    .any(|x| b.directions().iter().any(|y| matches_overlap(x, y)))))
}

/// Whether every link `inner` is scoped to is one of `outer`'s (no links: every link).
pub fn links_cover(outer: &Flow, inner: &Flow) -> bool {
    outer.links.is_empty()
        || (!inner.links.is_empty() && inner.links.iter().all(|l| outer.links.contains(l)))
}

/// True when every packet `inner` matches, `outer` matches too.
pub fn covers(outer: &Flow, inner: &Flow) -> bool {
    links_cover(outer, inner)
        && inner
            .directions()
            .iter()
            .all(|i| outer.directions().iter().any(|o| match_covers(o, i)))
}

/// True when some packet could match both matches.
pub fn matches_overlap(a: &FlowMatch, b: &FlowMatch) -> bool {
    fn both<T>(x: &Option<T>, y: &Option<T>, overlap: impl Fn(&T, &T) -> bool) -> bool {
        match (x, y) {
            (Some(x), Some(y)) => overlap(x, y),
            _ => true,
        }
    }
    fn eq<T: PartialEq>(x: &T, y: &T) -> bool {
        x == y
    }
    let family_ok = match (family(a), family(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    };
    family_ok
        && (0..3).all(|i| both(&a.vlan_tags[i], &b.vlan_tags[i], eq))
        && both(&a.vlan_depth, &b.vlan_depth, eq)
        && both(&a.mpls_depth, &b.mpls_depth, eq)
        && both(&a.src_ipv4, &b.src_ipv4, Prefix::overlaps)
        && both(&a.dst_ipv4, &b.dst_ipv4, Prefix::overlaps)
        && both(&a.src_ipv6, &b.src_ipv6, Prefix::overlaps)
        && both(&a.dst_ipv6, &b.dst_ipv6, Prefix::overlaps)
        && both(&a.ip_proto, &b.ip_proto, eq)
        && both(&a.src_port, &b.src_port, PortRange::overlaps)
        && both(&a.dst_port, &b.dst_port, PortRange::overlaps)
        && both(&a.src_mac, &b.src_mac, MacMatch::overlaps)
        && both(&a.dst_mac, &b.dst_mac, MacMatch::overlaps)
        && both(&a.llc_dsap, &b.llc_dsap, eq)
        && both(&a.llc_ssap, &b.llc_ssap, eq)
}

/// True when every packet `i` matches, `o` matches too.
pub fn match_covers(o: &FlowMatch, i: &FlowMatch) -> bool {
    fn within<T>(o: &Option<T>, i: &Option<T>, holds: impl Fn(&T, &T) -> bool) -> bool {
        match (o, i) {
            (None, _) => true,
            (Some(o), Some(i)) => holds(o, i),
            (Some(_), None) => false,
        }
    }
    fn same<T: PartialEq>(o: &T, i: &T) -> bool {
        o == i
    }
    (0..3).all(|k| within(&o.vlan_tags[k], &i.vlan_tags[k], same))
        && within(&o.vlan_depth, &i.vlan_depth, same)
        && within(&o.mpls_depth, &i.mpls_depth, same)
        && within(&o.src_ipv4, &i.src_ipv4, prefix_within)
        && within(&o.dst_ipv4, &i.dst_ipv4, prefix_within)
        && within(&o.src_ipv6, &i.src_ipv6, prefix_within)
        && within(&o.dst_ipv6, &i.dst_ipv6, prefix_within)
        && within(&o.ip_proto, &i.ip_proto, same)
        && within(&o.src_port, &i.src_port, port_within)
        && within(&o.dst_port, &i.dst_port, port_within)
        && within(&o.src_mac, &i.src_mac, mac_within)
        && within(&o.dst_mac, &i.dst_mac, mac_within)
        && within(&o.packet_type, &i.packet_type, same)
        && within(&o.llc_dsap, &i.llc_dsap, same)
        && within(&o.llc_ssap, &i.llc_ssap, same)
}

fn prefix_within(o: &Prefix, i: &Prefix) -> bool {
    o.len <= i.len && o.contains(i.addr)
}

fn port_within(o: &PortRange, i: &PortRange) -> bool {
    o.lo <= i.lo && i.hi <= o.hi
}

/// Every bit the outer match compares, the inner one compares too, to the same value.
fn mac_within(o: &MacMatch, i: &MacMatch) -> bool {
    (0..6).all(|k| o.mask[k] & !i.mask[k] == 0 && (o.addr[k] ^ i.addr[k]) & o.mask[k] == 0)
}

/// The EtherType a match implies: set explicitly, or by an IPv4 / IPv6 criterion.
pub fn family(m: &FlowMatch) -> Option<u16> {
    if m.packet_type.is_some() {
        return m.packet_type;
    }
    if m.src_ipv4.is_some() || m.dst_ipv4.is_some() {
        return Some(0x0800);
    }
    if m.src_ipv6.is_some() || m.dst_ipv6.is_some() {
        return Some(0x86dd);
    }
    None
}
