use std::net::IpAddr;

use efb_model::BalancingMethod;
use serde::{Deserialize, Serialize};

use crate::BalancingError;

/// What a lookup needs to know of a packet: the parser hashes only these fields, and the
/// frame around them is taken as untagged plain IP (see [`crate::matching`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Session {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ip_proto: u8,
    #[serde(default)]
    pub src_port: u16,
    #[serde(default)]
    pub dst_port: u16,
    /// The link the packet entered by; `None` means the question is about no particular
    /// link, so only flows for every link can answer it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl Session {
    /// The ports as the hash and the matcher see them: protocols without ports carry none,
    /// whatever the caller filled in, so that e.g. ICMP sessions do not scatter.
    pub fn effective_ports(&self) -> (u16, u16) {
        if has_ports(self.ip_proto) {
            (self.src_port, self.dst_port)
        } else {
            (0, 0)
        }
    }
}

/// TCP, UDP, DCCP, SCTP and UDP-Lite: the protocols the parser reads ports from.
pub fn has_ports(ip_proto: u8) -> bool {
    matches!(ip_proto, 6 | 17 | 33 | 132 | 136)
}

fn addr_bytes(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The key bytes of MODEL.md step 1. Exposed, not only hashed, so that tests and the
/// offline tool can show what went into the hash.
pub fn session_key(method: BalancingMethod, s: &Session) -> Result<Vec<u8>, BalancingError> {
    if s.src.is_ipv4() != s.dst.is_ipv4() {
        return Err(BalancingError::MixedFamilies {
            src: s.src,
            dst: s.dst,
        });
    }
    let (a, b) = (addr_bytes(s.src), addr_bytes(s.dst));
    Ok(match method {
        BalancingMethod::Layer3 => layer3_key(a, b, s.ip_proto),
        BalancingMethod::Layer4 => layer4_key(a, b, s),
        BalancingMethod::DstIp => b,
    })
}

fn layer3_key(a: Vec<u8>, b: Vec<u8>, proto: u8) -> Vec<u8> {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut key = lo;
    key.extend_from_slice(&hi);
    key.push(proto);
    key
}

fn layer4_key(a: Vec<u8>, b: Vec<u8>, s: &Session) -> Vec<u8> {
    let (a_port, b_port) = s.effective_ports();
    let ((lo, lo_port), (hi, hi_port)) = if (&a, a_port) <= (&b, b_port) {
        ((a, a_port), (b, b_port))
    } else {
        ((b, b_port), (a, a_port))
    };
    let mut key = lo;
    key.extend_from_slice(&hi);
    key.push(s.ip_proto);
    key.extend_from_slice(&lo_port.to_be_bytes());
    key.extend_from_slice(&hi_port.to_be_bytes());
    key
}

/// CRC-32/ISO-HDLC because the chip's hash unit computes exactly that, and Python's
/// `zlib.crc32` gives operators an independent check.
pub fn session_hash(method: BalancingMethod, s: &Session) -> Result<u32, BalancingError> {
    Ok(crc32fast::hash(&session_key(method, s)?))
}
