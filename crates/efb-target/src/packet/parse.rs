//! The program's parser: Ethernet, up to 3 VLAN tags (0x8100, 0x88a8), then LLC (802.3
//! length), up to 6 MPLS labels, PPPoE session, IPv4 or IPv6, one level of GRE or IP-in-IP
//! tunnel, and the ports of TCP, UDP, SCTP, DCCP and UDP-Lite. It never fails on bytes:
//! a frame that ends inside a header it needs, or whose IP lengths are wrong, is
//! `Malformed` (the program counts and drops it); a frame deeper than the parser goes
//! (a 4th VLAN tag, a 7th MPLS label) is passed on as non-IP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use efb_balancing::has_ports;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    Truncated(&'static str),
    BadLength(&'static str),
    BadVersion(&'static str),
}

impl ParseError {
    pub fn describe(self) -> String {
        match self {
            ParseError::Truncated(h) => format!("truncated {h} header"),
            ParseError::BadLength(h) => format!("wrong {h} length"),
            ParseError::BadVersion(h) => format!("wrong {h} version"),
        }
    }
}

/// The IP header the program balances on: the innermost one it reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpHeader {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    /// (source, destination) for protocols with ports, first fragments only.
    pub ports: Option<(u16, u16)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub dst_mac: u64,
    pub src_mac: u64,
    /// The EtherType after the VLAN tags (for 802.3 frames, the length field).
    pub ether_type: u16,
    pub vlan_vids: [u16; 3],
    pub vlan_depth: u8,
    pub mpls_depth: u8,
    /// (dsap, ssap) of an 802.3 frame.
    pub llc: Option<(u8, u8)>,
    pub ip: Option<IpHeader>,
    /// The frame goes deeper than the parser (4th VLAN tag, 7th MPLS label).
    pub depth_exceeded: bool,
}

const TPID_8021Q: u16 = 0x8100;
const TPID_8021AD: u16 = 0x88a8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MC: u16 = 0x8848;
const ETHERTYPE_PPPOE: u16 = 0x8864;
const MAX_8023_LENGTH: u16 = 1500;
const MAX_VLANS: u8 = 3;
const MAX_MPLS: u8 = 6;
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
const PROTO_IPIP: u8 = 4;
const PROTO_IPV6: u8 = 41;
const PROTO_GRE: u8 = 47;

struct Cursor<'a> {
    frame: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn get(&self, at: usize, len: usize, header: &'static str) -> Result<&'a [u8], ParseError> {
        at.checked_add(len)
            .and_then(|end| self.frame.get(at..end))
            .ok_or(ParseError::Truncated(header))
    }

    fn u16(&self, at: usize, header: &'static str) -> Result<u16, ParseError> {
        let b = self.get(at, 2, header)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
}

fn mac(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x))
}

/// Parses a frame as it enters from an operator link.
pub fn parse(frame: &[u8]) -> Result<Parsed, ParseError> {
    let c = Cursor { frame };
    let eth = c.get(0, 14, "Ethernet")?;
    let mut p = Parsed {
        dst_mac: mac(&eth[0..6]),
        src_mac: mac(&eth[6..12]),
        ..Parsed::default()
    };
    let mut et = c.u16(12, "Ethernet")?;
    let mut off = 14;
    while et == TPID_8021Q || et == TPID_8021AD {
        if p.vlan_depth == MAX_VLANS {
            p.depth_exceeded = true;
            p.ether_type = et;
            return Ok(p);
        }
        let tag = c.get(off, 4, "VLAN")?;
        p.vlan_vids[usize::from(p.vlan_depth)] = u16::from_be_bytes([tag[0], tag[1]]) & 0x0fff;
        p.vlan_depth += 1;
        et = u16::from_be_bytes([tag[2], tag[3]]);
        off += 4;
    }
    p.ether_type = et;
    match et {
        ETHERTYPE_IPV4 => p.ip = Some(ipv4(&c, off, true)?),
        ETHERTYPE_IPV6 => p.ip = Some(ipv6(&c, off, true)?),
        ETHERTYPE_MPLS | ETHERTYPE_MPLS_MC => p.ip = mpls(&c, off, &mut p)?,
        ETHERTYPE_PPPOE => p.ip = pppoe(&c, off)?,
        len if len <= MAX_8023_LENGTH => {
            let llc = c.get(off, 3, "LLC")?;
            p.llc = Some((llc[0], llc[1]));
        }
        _ => {}
    }
    Ok(p)
}

fn mpls(c: &Cursor, mut off: usize, p: &mut Parsed) -> Result<Option<IpHeader>, ParseError> {
    loop {
        if p.mpls_depth == MAX_MPLS {
            p.depth_exceeded = true;
            return Ok(None);
        }
        let label = c.get(off, 4, "MPLS")?;
        p.mpls_depth += 1;
        off += 4;
        if label[2] & 0x01 == 1 {
            break;
        }
    }
    // MPLS does not say what it carries: like routers, look at the IP version nibble.
    match c.frame.get(off).map(|b| b >> 4) {
        Some(4) => Ok(Some(ipv4(c, off, true)?)),
        Some(6) => Ok(Some(ipv6(c, off, true)?)),
        _ => Ok(None),
    }
}

fn pppoe(c: &Cursor, off: usize) -> Result<Option<IpHeader>, ParseError> {
    let ppp = c.u16(off + 6, "PPPoE")?;
    match ppp {
        PPP_IPV4 => Ok(Some(ipv4(c, off + 8, true)?)),
        PPP_IPV6 => Ok(Some(ipv6(c, off + 8, true)?)),
        _ => Ok(None),
    }
}

fn ipv4(c: &Cursor, off: usize, outer: bool) -> Result<IpHeader, ParseError> {
    let h = c.get(off, 20, "IPv4")?;
    if h[0] >> 4 != 4 {
        return Err(ParseError::BadVersion("IPv4"));
    }
    let header_len = usize::from(h[0] & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if header_len < 20 || total_len < header_len {
        return Err(ParseError::BadLength("IPv4"));
    }
    c.get(off, total_len, "IPv4")
        .map_err(|_| ParseError::BadLength("IPv4"))?;
    let proto = h[9];
    let first_fragment = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
    let src = IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19]));
    let payload = off + header_len;
    let end = off + total_len;
    finish(
        c,
        IpHeader {
            src,
            dst,
            proto,
            ports: None,
        },
        payload,
        end,
        outer && first_fragment,
        first_fragment,
    )
}

fn ipv6(c: &Cursor, off: usize, outer: bool) -> Result<IpHeader, ParseError> {
    let h = c.get(off, 40, "IPv6")?;
    if h[0] >> 4 != 6 {
        return Err(ParseError::BadVersion("IPv6"));
    }
    let payload_len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    let end = off + 40 + payload_len;
    c.get(off, 40 + payload_len, "IPv6")
        .map_err(|_| ParseError::BadLength("IPv6"))?;
    let addr = |b: &[u8]| {
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        IpAddr::V6(Ipv6Addr::from(a))
    };
    let ip = IpHeader {
        src: addr(&h[8..24]),
        dst: addr(&h[24..40]),
        proto: h[6],
        ports: None,
    };
    finish(c, ip, off + 40, end, outer, true)
}

/// After an IP header: one level of tunnel to the inner IP, or the L4 ports.
fn finish(
    c: &Cursor,
    mut ip: IpHeader,
    payload: usize,
    end: usize,
    tunnel: bool,
    first_fragment: bool,
) -> Result<IpHeader, ParseError> {
    let inner = Cursor {
        frame: &c.frame[..end],
    };
    match ip.proto {
        PROTO_IPIP if tunnel => return ipv4(&inner, payload, false),
        PROTO_IPV6 if tunnel => return ipv6(&inner, payload, false),
        PROTO_GRE if tunnel => {
            if let Some(found) = gre(&inner, payload)? {
                return Ok(found);
            }
        }
        proto if has_ports(proto) && first_fragment => {
            let ports = inner.get(payload, 4, "L4")?;
            ip.ports = Some((
                u16::from_be_bytes([ports[0], ports[1]]),
                u16::from_be_bytes([ports[2], ports[3]]),
            ));
        }
        _ => {}
    }
    Ok(ip)
}

/// GRE version 0 carrying IPv4 or IPv6: the inner header; anything else keeps the outer.
fn gre(c: &Cursor, off: usize) -> Result<Option<IpHeader>, ParseError> {
    let h = c.get(off, 4, "GRE")?;
    if h[1] & 0x07 != 0 {
        return Ok(None);
    }
    let options = [0x80u8, 0x20, 0x10]
        .iter()
        .filter(|bit| h[0] & **bit != 0)
        .count()
        * 4;
    let inner = off + 4 + options;
    match u16::from_be_bytes([h[2], h[3]]) {
        ETHERTYPE_IPV4 => Ok(Some(ipv4(c, inner, false)?)),
        ETHERTYPE_IPV6 => Ok(Some(ipv6(c, inner, false)?)),
        _ => Ok(None),
    }
}
