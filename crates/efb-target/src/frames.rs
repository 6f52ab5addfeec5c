//! Frames byte by byte, with correct lengths unless a test breaks them on purpose: for the
//! tests of the target and of the driver, and for demos injecting traffic.

pub const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// Ethernet with VLAN tags (outer first, TPID 0x8100), then `ethertype` and `payload`.
pub fn eth(vlans: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&DST_MAC);
    f.extend_from_slice(&SRC_MAC);
    for vid in vlans {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    let mut h = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        proto,
        0,
        0,
    ];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(payload);
    h
}

pub fn ipv6(src: [u8; 16], dst: [u8; 16], next: u8, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut h = vec![0x60, 0, 0, 0, (len >> 8) as u8, len as u8, next, 64];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(payload);
    h
}

/// A TCP header (no options) and a little data.
pub fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    h.extend_from_slice(b"hello");
    h
}

pub fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&[0, 13, 0, 0]);
    h.extend_from_slice(b"hello");
    h
}

/// GRE (version 0, optional key) carrying `proto`.
pub fn gre(proto: u16, key: bool, inner: &[u8]) -> Vec<u8> {
    let mut h = vec![if key { 0x20 } else { 0 }, 0];
    h.extend_from_slice(&proto.to_be_bytes());
    if key {
        h.extend_from_slice(&[0, 0, 0, 7]);
    }
    h.extend_from_slice(inner);
    h
}

/// PPPoE session header and PPP protocol.
pub fn pppoe(ppp_proto: u16, inner: &[u8]) -> Vec<u8> {
    let len = inner.len() + 2;
    let mut h = vec![0x11, 0, 0x12, 0x34, (len >> 8) as u8, len as u8];
    h.extend_from_slice(&ppp_proto.to_be_bytes());
    h.extend_from_slice(inner);
    h
}

/// `n` MPLS labels, bottom of stack set on the last when `bos`.
pub fn mpls(n: usize, bos: bool, inner: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for i in 0..n {
        let last = bos && i + 1 == n;
        let label: u32 = 100 + i as u32;
        let word = (label << 12) | if last { 0x100 } else { 0 } | 64;
        h.extend_from_slice(&word.to_be_bytes());
    }
    h.extend_from_slice(inner);
    h
}

/// An IPv4 TCP session frame, untagged.
pub fn tcp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    eth(&[], 0x0800, &ipv4(src, dst, 6, &tcp(sport, dport)))
}

pub fn v6(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0x20;
    a[1] = 0x01;
    a[2] = 0x0d;
    a[3] = 0xb8;
    a[15] = last;
    a
}
