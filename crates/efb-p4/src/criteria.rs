//! A flow's match criteria as (value, mask) pairs of the program's ternary fields: its
//! Ethernet layers (which `frame_classes` holds) and a range as the prefixes that cover it
//! (ports in the flow tables, the VLAN depth in the class table).

use efb_model::{FlowMatch, MacMatch};
use efb_p4info::names::{FieldName, fields as f};

/// The Ethernet-layer criteria of a match (VLAN tags and depth, MPLS depth, MACs,
/// EtherType), which `frame_classes` holds for the flow tables.
pub struct EthernetCriteria {
    /// (field, value, mask) in the order of the class table's key.
    pub ternaries: Vec<(FieldName, u128, u128)>,
    /// The VLAN depth range as the prefixes that cover it (one with mask 0: any depth).
    pub vlan_depth: Vec<(u128, u128)>,
}

/// `None` when no frame can match (a depth below a tag's position).
pub fn ethernet_criteria(m: &FlowMatch) -> Option<EthernetCriteria> {
    let mut ternaries = Vec::new();
    // VLAN tags: a tag criterion needs that many tags (an absent tag reads 0).
    let vids = [f::VLAN0_VID, f::VLAN1_VID, f::VLAN2_VID];
    let mut min_depth = 0u8;
    for (i, tag) in m.vlan_tags.iter().enumerate() {
        if let Some(vid) = tag {
            ternaries.push((vids[i], (*vid).into(), 0xfff));
            min_depth = i as u8 + 1;
        }
    }
    let (lo, hi) = match m.vlan_depth {
        Some(d) if d < min_depth => return None,
        Some(d) => (d, d),
        None => (min_depth, 3),
    };
    if let Some(d) = m.mpls_depth {
        ternaries.push((f::MPLS_DEPTH, d.into(), 0x7));
    }
    for (field, mac) in [(f::SRC_MAC, m.src_mac), (f::DST_MAC, m.dst_mac)] {
        if let Some(MacMatch { addr, mask }) = mac {
            ternaries.push((field, be(&addr), be(&mask)));
        }
    }
    if let Some(t) = m.packet_type {
        ternaries.push((f::ETHER_TYPE, t.into(), 0xffff));
    }
    Some(EthernetCriteria {
        ternaries,
        vlan_depth: range_prefixes(lo.into(), hi.into(), 2),
    })
}

/// The fewest (value, mask) prefixes of a `width`-bit field that together match exactly
/// `lo..=hi`: the largest aligned block that starts at `lo` and fits, repeatedly (at most
/// 2 * width - 2 of them).
pub fn range_prefixes(lo: u128, hi: u128, width: u32) -> Vec<(u128, u128)> {
    let full = if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    let mut out = Vec::new();
    let (mut lo, hi) = (lo.min(full), hi.min(full));
    while lo <= hi {
        // The block size: the lowest set bit of lo (any size at 0), shrunk until it fits.
        let mut size_bits = if lo == 0 {
            width
        } else {
            lo.trailing_zeros().min(width)
        };
        while size_bits > 0 && lo + ((1u128 << size_bits) - 1) > hi {
            size_bits -= 1;
        }
        let block = if size_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << size_bits) - 1
        };
        out.push((lo, full & !block));
        match (lo | block).checked_add(1) {
            Some(next) if next <= full => lo = next,
            _ => break,
        }
    }
    out
}

fn be(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}
