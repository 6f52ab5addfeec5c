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
    /// The other direction of the session: addresses and ports swapped, the same link
    /// (a reply enters by the link's other port).
    pub fn reversed(&self) -> Session {
        Session {
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            ..self.clone()
        }
    }

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

pub use efb_model::protocols::has_ports;

fn addr_bytes(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The key bytes of MODEL.md step 1 (version 2). Exposed, not only hashed, so that tests
/// and the offline tool can show what went into the hash.
///
/// Symmetric without any comparison: A XOR B (and PA XOR PB) is the same both ways, which is
/// what lets the chip build the key (Tofino cannot compare two variables in one step).
pub fn session_key(method: BalancingMethod, s: &Session) -> Result<Vec<u8>, BalancingError> {
    if s.src.is_ipv4() != s.dst.is_ipv4() {
        return Err(BalancingError::MixedFamilies {
            src: s.src,
            dst: s.dst,
        });
    }
    let (a, b) = (addr_bytes(s.src), addr_bytes(s.dst));
    Ok(match method {
        BalancingMethod::Layer3 => {
            let mut key = xor(&a, &b);
            key.push(s.ip_proto);
            key
        }
        BalancingMethod::Layer4 => {
            let (pa, pb) = s.effective_ports();
            let mut key = xor(&a, &b);
            key.push(s.ip_proto);
            key.extend_from_slice(&(pa ^ pb).to_be_bytes());
            key
        }
        BalancingMethod::DstIp => b,
    })
}

/// Byte by byte; both are of one family, so of one length.
fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// CRC-32/ISO-HDLC because the chip's hash unit computes exactly that, and Python's
/// `zlib.crc32` gives operators an independent check.
pub fn session_hash(method: BalancingMethod, s: &Session) -> Result<u32, BalancingError> {
    Ok(crc32fast::hash(&session_key(method, s)?))
}
