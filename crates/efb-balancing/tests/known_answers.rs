//! Values computed independently with Python (zlib, hashlib), the reference MODEL.md names.
#![allow(clippy::unwrap_used)]

mod common;

use common::{config, session, unit};
use efb_balancing::{config_hash, config_hash_text, session_hash, session_key};
use efb_model::BalancingMethod::{DstIp, Layer3, Layer4};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// python3 -c 'import zlib; k=bytes.fromhex("0a000001c000020706"); print(hex(zlib.crc32(k)))'
// -> 0xf4c842d2 (10.0.0.1 < 192.0.2.7, then protocol 6)
#[test]
fn layer3_ipv4() {
    let s = session("192.0.2.7", "10.0.0.1", 6, 443, 40000);
    assert_eq!(hex(&session_key(Layer3, &s).unwrap()), "0a000001c000020706");
    assert_eq!(session_hash(Layer3, &s).unwrap(), 0xf4c8_42d2);
}

// python3 -c 'import zlib; print(hex(zlib.crc32(bytes.fromhex("0a000001c0000207069c4001bb"))))'
// -> 0xa550147a ((10.0.0.1, 40000) < (192.0.2.7, 443): lo_port 0x9c40, hi_port 0x01bb)
#[test]
fn layer4_ipv4_tcp() {
    let s = session("192.0.2.7", "10.0.0.1", 6, 443, 40000);
    assert_eq!(
        hex(&session_key(Layer4, &s).unwrap()),
        "0a000001c0000207069c4001bb"
    );
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0xa550_147a);
}

// python3 -c 'import zlib; print(hex(zlib.crc32(bytes.fromhex("0a000001c00002070100000000"))))'
// -> 0xd5d440f3 (ICMP has no ports: both count as 0 whatever the session says)
#[test]
fn layer4_icmp_ports_are_zero() {
    let s = session("10.0.0.1", "192.0.2.7", 1, 1234, 80);
    assert_eq!(
        hex(&session_key(Layer4, &s).unwrap()),
        "0a000001c00002070100000000"
    );
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0xd5d4_40f3);
}

// python3 -c 'import zlib; print(hex(zlib.crc32(bytes.fromhex("c6336409c63364091100351388"))))'
// -> 0xa81cc3cc (same address both ends: the ports decide the order, 53 before 5000)
#[test]
fn layer4_same_address_orders_by_port() {
    let s = session("198.51.100.9", "198.51.100.9", 17, 5000, 53);
    assert_eq!(
        hex(&session_key(Layer4, &s).unwrap()),
        "c6336409c63364091100351388"
    );
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0xa81c_c3cc);
}

// python3 -c 'import zlib,ipaddress as i; a=i.ip_address("2001:db8::1").packed;
//   b=i.ip_address("2001:db8::2").packed; print(hex(zlib.crc32(a+b+bytes([17]))))'
// -> 0xe92a151c
#[test]
fn layer3_ipv6() {
    let s = session("2001:db8::2", "2001:db8::1", 17, 1, 2);
    assert_eq!(session_hash(Layer3, &s).unwrap(), 0xe92a_151c);
}

// python3 -c 'import zlib,ipaddress as i; a=i.ip_address("2001:db8::1").packed;
//   b=i.ip_address("2001:db8:ffff::53").packed;
//   print(hex(zlib.crc32(a+b+bytes([17])+(51000).to_bytes(2,"big")+(53).to_bytes(2,"big"))))'
// -> 0xd293b22b
#[test]
fn layer4_ipv6_udp() {
    let s = session("2001:db8:ffff::53", "2001:db8::1", 17, 53, 51000);
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0xd293_b22b);
}

// python3 -c 'import zlib,ipaddress as i;
//   print(hex(zlib.crc32(i.ip_address("2001:db8:ffff::53").packed)))'  -> 0xd6d5624f
// python3 -c 'import zlib; print(hex(zlib.crc32(bytes([192,0,2,7]))))'  -> 0xfb5bc63b
#[test]
fn dst_ip_is_the_destination_only() {
    let s = session("2001:db8::1", "2001:db8:ffff::53", 17, 51000, 53);
    assert_eq!(
        hex(&session_key(DstIp, &s).unwrap()),
        "20010db8ffff00000000000000000053"
    );
    assert_eq!(session_hash(DstIp, &s).unwrap(), 0xd6d5_624f);
    let s = session("10.0.0.1", "192.0.2.7", 6, 1, 2);
    assert_eq!(session_hash(DstIp, &s).unwrap(), 0xfb5b_c63b);
}

#[test]
fn mixed_families_are_refused() {
    let s = session("10.0.0.1", "2001:db8::1", 6, 1, 2);
    for method in [Layer3, Layer4, DstIp] {
        let err = session_hash(method, &s).unwrap_err();
        assert!(err.to_string().contains("address family"), "{err}");
    }
}

const EXPECTED_TEXT: &str = "efb-balancing-v1\n\
method layer-4\n\
unit Zeta cores 3 pairs 1 rebalance true\n\
pair Zeta-p0\n\
unit core cores 1 pairs 0 rebalance false\n\
unit edge cores 7 pairs 2 rebalance false\n\
pair edge-p0\n\
pair edge-p1\n";

// python3 -c 'import hashlib; t="efb-balancing-v1\nmethod layer-4\nunit Zeta cores 3 pairs 1
//   rebalance true\npair Zeta-p0\nunit core cores 1 pairs 0 rebalance false\nunit edge cores 7
//   pairs 2 rebalance false\npair edge-p0\npair edge-p1\n";
//   print(hashlib.sha256(t.encode()).hexdigest())'
// (one line per `\n`; "Zeta" sorts before "core" in byte order)
const EXPECTED_HASH: &str = "4bc16c9f90cd1ab544cb85e47bfd6f3236ca9476f36e883a43c5f8fe82f9f9b5";

fn hash_config() -> efb_model::Config {
    let mut c = config(
        vec![
            unit("edge", 2, 7, false),
            unit("core", 0, 1, false),
            unit("Zeta", 1, 3, true),
        ],
        vec![],
    );
    c.balancing_method = Layer4;
    c
}

#[test]
fn config_hash_known_answer() {
    let c = hash_config();
    assert_eq!(config_hash_text(&c), EXPECTED_TEXT);
    assert_eq!(config_hash(&c), EXPECTED_HASH);
}

// python3 -c 'import hashlib; print(hashlib.sha256(b"efb-balancing-v1\nmethod layer-3\n").hexdigest())'
#[test]
fn config_hash_of_empty_config() {
    let c = efb_model::Config::default();
    assert_eq!(config_hash_text(&c), "efb-balancing-v1\nmethod layer-3\n");
    assert_eq!(
        config_hash(&c),
        "89736e915609b99f5af5eba68274aab264818f9d72f8d9ef38a09e6e961526d8"
    );
}

#[test]
fn config_hash_ignores_ports_but_not_pair_order() {
    let base = hash_config();
    let mut ports_changed = base.clone();
    let edge = ports_changed.units.get_mut("edge").unwrap();
    edge.pairs[0].lan_port = "p31-1".to_string();
    assert_eq!(config_hash(&ports_changed), config_hash(&base));

    let mut reordered = base.clone();
    reordered.units.get_mut("edge").unwrap().pairs.swap(0, 1);
    assert_ne!(config_hash(&reordered), config_hash(&base));
}
