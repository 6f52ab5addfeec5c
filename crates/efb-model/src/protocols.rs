//! IP protocols: their names (in efb-yang, where set lines read them) and which carry ports.

pub use efb_yang::protocols::{ACCEPTED, PROTOCOLS, number};

/// Protocols whose header starts with ports, as the chip parses them: TCP, UDP, DCCP,
/// SCTP, UDP-Lite.
pub fn has_ports(ip_proto: u8) -> bool {
    matches!(ip_proto, 6 | 17 | 33 | 132 | 136)
}
