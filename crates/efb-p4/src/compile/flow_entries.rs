//! A flow's entries: the flow tables its frames can meet, its criteria in each (port
//! ranges as ternary prefixes) behind its match on the frame's class, which holds its link
//! scope, Ethernet-layer criteria and need of an L4 header (see `frame_classes`).

use efb_model::{Action, Flow, FlowMatch, Prefix, paths};
use efb_p4info::names::flows::{self, FrameKind};
use efb_p4info::names::{ActionName, FieldName, fields as f};

use super::{CompileError, Desired};
use crate::criteria::range_prefixes;
use crate::entry::{Builder, Criterion, chip_priority};
use crate::frame_classes::ClassMatch;

/// A flow: in each flow table whose frames it can match, one entry per prefix its port
/// ranges make, each matching `class`, at its priority as the chip takes it; a flow of
/// direction both writes its mirror's entries too (addresses and ports swapped).
pub(super) fn flow(
    b: &Builder,
    flow: &Flow,
    class: ClassMatch,
    unit: Option<u32>,
) -> Result<Vec<Desired>, CompileError> {
    let priority = chip_priority(flow.priority);
    let source = paths::flow(&flow.name);
    let mut out = Vec::new();
    for kind in frame_kinds(&flow.matches) {
        let table = kind.table();
        let (action, params): (ActionName, Vec<(FieldName, u128)>) =
            match (&flow.action, unit, table.to_unit) {
                (Action::Drop, _, _) => (table.drop, vec![]),
                (Action::ToUnit(_), Some(uid), Some(to_unit)) => {
                    (to_unit, vec![(f::UNIT_ID, u128::from(uid))])
                }
                _ => (table.bypass, vec![]),
            };
        let mut written: Vec<Criteria> = Vec::new();
        for matches in flow.directions() {
            for criteria in criteria(&matches, kind, class) {
                if written.contains(&criteria) {
                    continue; // the mirror of a criterion that holds both ways
                }
                out.push(Desired {
                    entry: b.entry(table.table, &criteria, priority, action, &params)?,
                    source: source.clone(),
                });
                written.push(criteria);
            }
        }
    }
    Ok(out)
}

/// The kinds of frame a match can hold for: an address names its IP version, a protocol
/// or a port needs IP, LLC fields need a frame without IP; otherwise any frame.
fn frame_kinds(m: &FlowMatch) -> Vec<FrameKind> {
    let v4 = m.src_ipv4.is_some() || m.dst_ipv4.is_some();
    let v6 = m.src_ipv6.is_some() || m.dst_ipv6.is_some();
    let ip = m.ip_proto.is_some() || m.src_port.is_some() || m.dst_port.is_some();
    let llc = m.llc_dsap.is_some() || m.llc_ssap.is_some();
    let by_fields = match (v4, v6, ip || v4 || v6, llc) {
        (true, true, _, _) | (_, _, true, true) => Vec::new(),
        (true, false, _, _) => vec![FrameKind::Ipv4],
        (false, true, _, _) => vec![FrameKind::Ipv6],
        (false, false, true, _) => vec![FrameKind::Ipv4, FrameKind::Ipv6],
        (false, false, false, true) => vec![FrameKind::Other],
        (false, false, false, false) => flows::ALL.iter().map(|t| t.kind).collect(),
    };
    let by_type = m.packet_type.map(kinds_of_ether_type);
    by_fields
        .into_iter()
        .filter(|k| by_type.as_ref().is_none_or(|kinds| kinds.contains(k)))
        .collect()
}

/// The frames an EtherType (the one after the VLAN tags) can lead the parser to: IP
/// behind IPv4 and IPv6 of course, and behind MPLS and PPPoE (or not); only non-IP frames
/// behind any other (TCAM entries are too few to write where nothing can match).
fn kinds_of_ether_type(ether_type: u16) -> Vec<FrameKind> {
    match ether_type {
        0x0800 => vec![FrameKind::Ipv4],
        0x86dd => vec![FrameKind::Ipv6],
        0x8847 | 0x8848 | 0x8864 => flows::ALL.iter().map(|t| t.kind).collect(),
        _ => vec![FrameKind::Other],
    }
}

/// One criterion per field, or several ternary prefixes for a range.
type Criteria = Vec<(FieldName, Criterion)>;

/// A flow table's criteria for a match, one set per combination of the prefixes its
/// port ranges make.
fn criteria(m: &FlowMatch, kind: FrameKind, class: ClassMatch) -> Vec<Criteria> {
    let mut c: Criteria = Vec::new();
    if class.mask != 0 {
        let (value, mask) = (class.value.into(), class.mask.into());
        c.push((f::FRAME_CLASS, Criterion::Ternary(value, mask)));
    }
    // Ranges, each as the prefixes that cover it (none: any value).
    let mut ranges: Vec<(FieldName, Vec<(u128, u128)>)> = Vec::new();
    match kind {
        FrameKind::Other => llc_criteria(m, &mut c),
        FrameKind::Ipv4 | FrameKind::Ipv6 => {
            ip_criteria(m, kind, &mut c);
            for (field, range) in [(f::L4_SRC_PORT, m.src_port), (f::L4_DST_PORT, m.dst_port)] {
                if let Some(r) = range {
                    ranges.push((field, range_prefixes(r.lo.into(), r.hi.into(), 16)));
                }
            }
        }
    }
    expand(c, &ranges)
}

fn llc_criteria(m: &FlowMatch, c: &mut Criteria) {
    if m.llc_dsap.is_some() || m.llc_ssap.is_some() {
        c.push((f::LLC_VALID, Criterion::Ternary(1, 1)));
    }
    if let Some(v) = m.llc_dsap {
        c.push((f::LLC_DSAP, Criterion::Ternary(v.into(), 0xff)));
    }
    if let Some(v) = m.llc_ssap {
        c.push((f::LLC_SSAP, Criterion::Ternary(v.into(), 0xff)));
    }
}

/// The address and protocol criteria of an IP flow table (an L4 header, which port
/// criteria need, is in the frame's class).
fn ip_criteria(m: &FlowMatch, kind: FrameKind, c: &mut Criteria) {
    let addresses = match kind {
        FrameKind::Ipv4 => [
            (f::IPV4_SRC, m.src_ipv4, 32u32),
            (f::IPV4_DST, m.dst_ipv4, 32),
        ],
        _ => [
            (f::IPV6_SRC, m.src_ipv6, 128),
            (f::IPV6_DST, m.dst_ipv6, 128),
        ],
    };
    for (field, prefix, width) in addresses {
        if let Some(p) = prefix {
            let (value, mask) = prefix_bits(&p, width);
            c.push((field, Criterion::Ternary(value, mask)));
        }
    }
    if let Some(p) = m.ip_proto {
        c.push((f::IP_PROTO, Criterion::Ternary(p.into(), 0xff)));
    }
}

/// Every combination of one prefix per range, added to the fixed criteria.
fn expand(fixed: Criteria, ranges: &[(FieldName, Vec<(u128, u128)>)]) -> Vec<Criteria> {
    let mut out = vec![fixed];
    for (field, prefixes) in ranges {
        if prefixes.len() == 1 && prefixes[0].1 == 0 {
            continue; // the whole range: any value
        }
        out = out
            .into_iter()
            .flat_map(|c| {
                prefixes.iter().map(move |(value, mask)| {
                    let mut c = c.clone();
                    c.push((*field, Criterion::Ternary(*value, *mask)));
                    c
                })
            })
            .collect();
    }
    out
}

fn prefix_bits(p: &Prefix, width: u32) -> (u128, u128) {
    let value = match p.addr {
        std::net::IpAddr::V4(a) => u128::from(u32::from(a)),
        std::net::IpAddr::V6(a) => u128::from(a),
    };
    let len = u32::from(p.len).min(width);
    let ones = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len) >> (128 - width)
    };
    (value & ones, ones)
}
