//! The ingress parser of `p4/efb.p4`, state for state: what it extracts, which headers end
//! up valid, and the two ways a parse goes wrong as the chip sees them: the frame ends
//! inside a header (Tofino sets `parser_err`; the headers extracted before stay valid) or a
//! state for wrong IP versions and header lengths sets the program's `malformed` flag (a
//! `reject` in P4 would just end the parse on Tofino, without any error). Kept as close to
//! the P4 as Rust allows, so that a difference shows in a diff of the two; the generated
//! tests of p4testgen (p4/testgen/) judge it.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The CPU (PCIe) ports of Tofino 1: the parser takes a packet-out from either.
pub const CPU_PORT_2_PIPES: u32 = 192;
pub const CPU_PORT_4_PIPES: u32 = 320;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MC: u16 = 0x8848;
const ETHERTYPE_PPPOE: u16 = 0x8864;
const ETHERTYPE_EFB_TAG: u16 = 0x88B5;
const ETHERTYPE_KEEPALIVE: u16 = 0x88B6;
/// IEEE 802.3: values up to this are lengths (an LLC header follows).
const MAX_8023_LENGTH: u16 = 1500;
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;
const PROTO_IPIP: u8 = 4;
const PROTO_IPV6: u8 = 41;
const PROTO_GRE: u8 = 47;
/// TCP, UDP, DCCP, SCTP, UDP-Lite: the protocols whose ports the parser reads.
const PROTOS_WITH_PORTS: [u8; 5] = [6, 17, 33, 132, 136];
const MAX_VLANS: usize = 3;
const MAX_MPLS: u8 = 6;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ethernet {
    pub dst: u64,
    pub src: u64,
    pub ether_type: u16,
}

/// The balancer's tag, after the source MAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub link_id: u8,
    pub core: u8,
    pub ether_type: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag {
    pub vid: u16,
    pub ether_type: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4 {
    pub version: u8,
    pub ihl: u8,
    pub total_len: u16,
    pub frag_offset: u16,
    pub protocol: u8,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6 {
    pub version: u8,
    pub payload_len: u16,
    pub next_hdr: u8,
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
}

/// The controller's header before a packet-out (by a CPU port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketOut {
    /// A device port, when `mcast_grp` is 0.
    pub egress_port: u16,
    /// A multicast group of the replication engine, or 0.
    pub mcast_grp: u16,
}

/// A keep-alive's payload, after its EtherType.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// The device port it left by (egress writes it): its register cell on the way back.
    pub out_port: u16,
    /// The round.
    pub seq: u32,
    /// The departure time (ns, chip clock) egress wrote.
    pub tx_tstamp: u64,
    /// Bit 0: the controller wants the return as a packet-in too.
    pub flags: u8,
    /// The unit whose round it is (its multicast group).
    pub unit_id: u8,
}

impl Keepalive {
    /// Bytes of the header after the EtherType.
    pub const BYTES: usize = 16;

    pub fn punt(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The header at the start of `b`, when `b` holds all of it.
    pub fn read(b: &[u8]) -> Option<Keepalive> {
        (b.len() >= Self::BYTES).then(|| Self::of(b))
    }

    fn of(b: &[u8]) -> Keepalive {
        Keepalive {
            out_port: u16::from_be_bytes([b[0], b[1]]),
            seq: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
            tx_tstamp: be_number(&b[6..14]),
            flags: b[14],
            unit_id: b[15],
        }
    }
}

/// The headers the parser made valid, and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    pub packet_out: Option<PacketOut>,
    pub ethernet: Option<Ethernet>,
    pub efb_tag: Option<Tag>,
    pub keepalive: Option<Keepalive>,
    pub vlan: Vec<VlanTag>,
    /// MPLS labels extracted.
    pub mpls: u8,
    pub pppoe: bool,
    /// (DSAP, SSAP) of an 802.3 frame's LLC header.
    pub llc: Option<(u8, u8)>,
    pub ipv4: Option<Ipv4>,
    pub ipv6: Option<Ipv6>,
    pub inner_ipv4: Option<Ipv4>,
    pub inner_ipv6: Option<Ipv6>,
    /// (source, destination) port.
    pub l4: Option<(u16, u16)>,
    /// The frame ended inside a header.
    pub parser_err: bool,
    /// A wrong IP version or header length (the program's own flag).
    pub malformed: bool,
}

/// Parses `frame` as it enters by device port `ingress_port`.
pub fn parse(ingress_port: u32, frame: &[u8]) -> Headers {
    let mut p = Parser {
        frame,
        at: 0,
        h: Headers::default(),
    };
    if ingress_port == CPU_PORT_2_PIPES || ingress_port == CPU_PORT_4_PIPES {
        p.packet_out();
    } else {
        p.ethernet();
    }
    p.h
}

struct Parser<'a> {
    frame: &'a [u8],
    at: usize,
    h: Headers,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// A big-endian number of up to 8 bytes.
fn be_number(b: &[u8]) -> u64 {
    b.iter().fold(0, |acc, x| (acc << 8) | u64::from(*x))
}

impl<'a> Parser<'a> {
    /// Extracts `n` bytes; a frame that ends first is a parser error.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.frame.get(self.at..self.at + n);
        match b {
            Some(_) => self.at += n,
            None => self.h.parser_err = true,
        }
        b
    }

    fn malformed(&mut self) {
        self.h.malformed = true;
    }

    /// The controller's header, then (so that ingress can record a keep-alive round as
    /// it enters) the frame's Ethernet header and keep-alive, nothing deeper.
    fn packet_out(&mut self) {
        let Some(b) = self.take(4) else { return };
        self.h.packet_out = Some(PacketOut {
            egress_port: be16(&b[0..2]),
            mcast_grp: be16(&b[2..4]),
        });
        let Some(eth) = self.ethernet_header() else {
            return;
        };
        if eth.ether_type == ETHERTYPE_KEEPALIVE {
            self.keepalive();
        }
    }

    fn ethernet_header(&mut self) -> Option<Ethernet> {
        let b = self.take(14)?;
        let eth = Ethernet {
            dst: be_number(&b[0..6]),
            src: be_number(&b[6..12]),
            ether_type: be16(&b[12..14]),
        };
        self.h.ethernet = Some(eth);
        Some(eth)
    }

    fn ethernet(&mut self) {
        let Some(eth) = self.ethernet_header() else {
            return;
        };
        match eth.ether_type {
            ETHERTYPE_EFB_TAG => self.efb_tag(),
            ETHERTYPE_KEEPALIVE => self.keepalive(),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ => self.vlan(),
            other => self.after_ethertype(other),
        }
    }

    fn efb_tag(&mut self) {
        if let Some(b) = self.take(4) {
            self.h.efb_tag = Some(Tag {
                link_id: b[0],
                core: b[1],
                ether_type: be16(&b[2..4]),
            });
        }
    }

    fn keepalive(&mut self) {
        if let Some(b) = self.take(Keepalive::BYTES) {
            self.h.keepalive = Some(Keepalive::of(b));
        }
    }

    /// Up to three tags; a fourth leaves the frame as it is (non-IP).
    fn vlan(&mut self) {
        let Some(b) = self.take(4) else { return };
        let tag = VlanTag {
            vid: be16(&b[0..2]) & 0x0FFF,
            ether_type: be16(&b[2..4]),
        };
        self.h.vlan.push(tag);
        match tag.ether_type {
            ETHERTYPE_VLAN | ETHERTYPE_QINQ if self.h.vlan.len() == MAX_VLANS => {}
            ETHERTYPE_VLAN | ETHERTYPE_QINQ => self.vlan(),
            other => self.after_ethertype(other),
        }
    }

    fn after_ethertype(&mut self, ether_type: u16) {
        match ether_type {
            ETHERTYPE_IPV4 => self.ipv4(),
            ETHERTYPE_IPV6 => self.ipv6(),
            ETHERTYPE_MPLS | ETHERTYPE_MPLS_MC => self.mpls(),
            ETHERTYPE_PPPOE => self.pppoe(),
            length if length <= MAX_8023_LENGTH => {
                if let Some(b) = self.take(3) {
                    self.h.llc = Some((b[0], b[1]));
                }
            }
            _ => {}
        }
    }

    /// Up to six labels; after the bottom of the stack, the first nibble tells IPv4 from
    /// IPv6. A seventh label leaves the frame non-IP.
    fn mpls(&mut self) {
        while self.h.mpls < MAX_MPLS {
            let Some(b) = self.take(4) else { return };
            self.h.mpls += 1;
            if b[2] & 0x01 == 1 {
                // The lookahead of one nibble: past the end is a parser error too.
                match self.frame.get(self.at).map(|x| x >> 4) {
                    Some(4) => self.ipv4(),
                    Some(6) => self.ipv6(),
                    Some(_) => {}
                    None => self.h.parser_err = true,
                }
                return;
            }
        }
    }

    fn pppoe(&mut self) {
        let Some(b) = self.take(8) else { return };
        let protocol = be16(&b[6..8]);
        self.h.pppoe = true;
        match protocol {
            PPP_IPV4 => self.ipv4(),
            PPP_IPV6 => self.ipv6(),
            _ => {}
        }
    }

    fn ipv4_header(&mut self) -> Option<Ipv4> {
        let b = self.take(20)?;
        Some(Ipv4 {
            version: b[0] >> 4,
            ihl: b[0] & 0x0F,
            total_len: be16(&b[2..4]),
            frag_offset: be16(&b[6..8]) & 0x1FFF,
            protocol: b[9],
            src: Ipv4Addr::new(b[12], b[13], b[14], b[15]),
            dst: Ipv4Addr::new(b[16], b[17], b[18], b[19]),
        })
    }

    fn ipv6_header(&mut self) -> Option<Ipv6> {
        let b = self.take(40)?;
        let addr = |s: &[u8]| {
            let mut a = [0u8; 16];
            a.copy_from_slice(s);
            Ipv6Addr::from(a)
        };
        Some(Ipv6 {
            version: b[0] >> 4,
            payload_len: be16(&b[4..6]),
            next_hdr: b[6],
            src: addr(&b[8..24]),
            dst: addr(&b[24..40]),
        })
    }

    fn ipv4(&mut self) {
        let Some(ip) = self.ipv4_header() else { return };
        self.h.ipv4 = Some(ip);
        match (ip.version, ip.ihl) {
            (4, 5) => self.ipv4_payload(ip),
            (4, 0..=4) => self.malformed(),
            (4, ihl) => {
                // The option words are extracted (so that the deparser puts them back).
                for _ in 5..ihl {
                    if self.take(4).is_none() {
                        return;
                    }
                }
                self.ipv4_payload(ip);
            }
            _ => self.malformed(),
        }
    }

    fn ipv4_payload(&mut self, ip: Ipv4) {
        if ip.frag_offset != 0 {
            return;
        }
        self.next_protocol(ip.protocol);
    }

    /// After an outer IP header: a tunnel, the ports, or nothing more.
    fn next_protocol(&mut self, protocol: u8) {
        match protocol {
            PROTO_IPIP => self.inner_ipv4(),
            PROTO_IPV6 => self.inner_ipv6(),
            PROTO_GRE => self.gre(),
            p if PROTOS_WITH_PORTS.contains(&p) => self.l4(),
            _ => {}
        }
    }

    fn ipv6(&mut self) {
        let Some(ip) = self.ipv6_header() else { return };
        self.h.ipv6 = Some(ip);
        if ip.version == 6 {
            self.next_protocol(ip.next_hdr);
        } else {
            self.malformed();
        }
    }

    /// GRE version 0: its option words (checksum, key, sequence), then IPv4 or IPv6.
    /// Other versions keep the outer header for balancing.
    fn gre(&mut self) {
        let Some(b) = self.take(4) else { return };
        let (flags, version, protocol) = (b[0], b[1] & 0x07, be16(&b[2..4]));
        if version != 0 {
            return;
        }
        let options = [0x80u8, 0x20, 0x10]
            .iter()
            .filter(|bit| flags & **bit != 0)
            .count();
        for _ in 0..options {
            if self.take(4).is_none() {
                return;
            }
        }
        match protocol {
            ETHERTYPE_IPV4 => self.inner_ipv4(),
            ETHERTYPE_IPV6 => self.inner_ipv6(),
            _ => {}
        }
    }

    /// An inner IPv4 header with options is accepted; its ports are not read.
    fn inner_ipv4(&mut self) {
        let Some(ip) = self.ipv4_header() else { return };
        self.h.inner_ipv4 = Some(ip);
        match (ip.version, ip.ihl) {
            (4, 5) if ip.frag_offset == 0 && PROTOS_WITH_PORTS.contains(&ip.protocol) => self.l4(),
            (4, 0..=4) => self.malformed(),
            (4, _) => {}
            _ => self.malformed(),
        }
    }

    fn inner_ipv6(&mut self) {
        let Some(ip) = self.ipv6_header() else { return };
        self.h.inner_ipv6 = Some(ip);
        match ip.version {
            6 if PROTOS_WITH_PORTS.contains(&ip.next_hdr) => self.l4(),
            6 => {}
            _ => self.malformed(),
        }
    }

    fn l4(&mut self) {
        if let Some(b) = self.take(4) {
            self.h.l4 = Some((be16(&b[0..2]), be16(&b[2..4])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ethernet(ether_type: u16) -> Vec<u8> {
        let mut f = vec![0xAA; 12];
        f.extend(ether_type.to_be_bytes());
        f
    }

    fn ipv4(ihl: u8, protocol: u8) -> Vec<u8> {
        let mut h = vec![0x40 | ihl, 0, 0, 40, 0, 0, 0, 0, 64, protocol, 0, 0];
        h.extend([10, 0, 0, 1, 10, 0, 0, 2]);
        h.extend(std::iter::repeat_n(
            0,
            usize::from(ihl.saturating_sub(5)) * 4,
        ));
        h
    }

    #[test]
    fn lengths_up_to_1500_are_802_3_and_1501_is_neither() {
        let mut f = ethernet(1500);
        f.extend([0x42, 0x43, 0x03]);
        assert_eq!(parse(1, &f).llc, Some((0x42, 0x43)));
        let mut f = ethernet(1501);
        f.extend([0x42, 0x43, 0x03]);
        let h = parse(1, &f);
        assert_eq!(h.llc, None);
        assert!(!h.parser_err && !h.malformed);
    }

    #[test]
    fn wrong_ip_headers_set_the_flag_truncated_ones_the_error() {
        let mut f = ethernet(ETHERTYPE_IPV4);
        f.extend(ipv4(4, 6));
        let h = parse(1, &f);
        assert!(h.malformed && !h.parser_err && h.ipv4.is_some());
        let mut f = ethernet(ETHERTYPE_IPV4);
        f.extend(&ipv4(5, 6)[..12]);
        let h = parse(1, &f);
        assert!(h.parser_err && h.ipv4.is_none() && h.ethernet.is_some());
    }

    #[test]
    fn an_inner_ipv4_with_options_is_kept_without_its_ports() {
        let mut f = ethernet(ETHERTYPE_IPV4);
        f.extend(ipv4(5, PROTO_IPIP));
        f.extend(ipv4(6, 6));
        f.extend([0, 80, 0, 81]);
        let h = parse(1, &f);
        assert!(h.inner_ipv4.is_some() && h.l4.is_none() && !h.malformed);
    }

    #[test]
    fn a_packet_out_is_parsed_by_the_cpu_ports_only() {
        let f = [0x00, 0x84, 0x01, 0x02, 3];
        let header = PacketOut {
            egress_port: 0x84,
            mcast_grp: 0x0102,
        };
        assert_eq!(parse(192, &f).packet_out, Some(header));
        assert_eq!(parse(320, &f).packet_out, Some(header));
        assert_eq!(parse(191, &f).packet_out, None);
    }

    fn keepalive_frame() -> Vec<u8> {
        let mut f = ethernet(ETHERTYPE_KEEPALIVE);
        f.extend([7, 1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0x30, 0x39, 0x01, 3]);
        f
    }

    #[test]
    fn a_keepalive_is_30_bytes_with_its_flags_and_unit() {
        let f = keepalive_frame();
        assert_eq!(f.len(), 30);
        let ka = Keepalive {
            out_port: 0x0701,
            seq: 0x0102,
            tx_tstamp: 12345,
            flags: 1,
            unit_id: 3,
        };
        assert_eq!(parse(1, &f).keepalive, Some(ka));
        assert!(ka.punt());
        let h = parse(1, &f[..29]);
        assert!(h.parser_err && h.keepalive.is_none());
    }

    #[test]
    fn a_packet_outs_keepalive_is_parsed_behind_its_header() {
        let mut f = vec![0, 0, 0, 9];
        f.extend(keepalive_frame());
        let h = parse(192, &f);
        assert_eq!(h.keepalive.map(|k| k.seq), Some(0x0102));
        assert!(!h.parser_err);
        // Not deeper than the keep-alive: an IP frame's headers are left alone.
        let mut f = vec![0, 5, 0, 0];
        f.extend(ethernet(ETHERTYPE_IPV4));
        f.extend(ipv4(5, 6));
        let h = parse(192, &f);
        assert!(h.ethernet.is_some() && h.ipv4.is_none() && h.keepalive.is_none());
    }
}
