//! Frames: the parser of the program (what the Tofino parser of efb.p4 extracts) and the
//! header edits (the balancer's 4-byte tag).

pub mod parse;

pub use parse::{Headers, Keepalive, PacketOut, parse};

use efb_p4info::names::ethertypes::EFB_TAG;

/// Where the tag goes: right after the source MAC.
const TAG_OFFSET: usize = 12;

/// Inserts TPID 0x88B5, link id and core after the source MAC (the frame must hold an
/// Ethernet header, which the parser already checked).
pub fn insert_tag(frame: &[u8], link_id: u8, core: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&frame[..TAG_OFFSET.min(frame.len())]);
    out.extend_from_slice(&EFB_TAG.to_be_bytes());
    out.push(link_id);
    out.push(core);
    out.extend_from_slice(frame.get(TAG_OFFSET..).unwrap_or_default());
    out
}

/// The frame without its tag, as it entered the balancer.
pub fn strip_tag(frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len().saturating_sub(4));
    out.extend_from_slice(&frame[..TAG_OFFSET.min(frame.len())]);
    out.extend_from_slice(frame.get(TAG_OFFSET + 4..).unwrap_or_default());
    out
}

/// The EtherType right after the source MAC.
pub fn outer_ethertype(frame: &[u8]) -> Option<u16> {
    let b = frame.get(12..14)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}
