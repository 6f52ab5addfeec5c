//! Values computed independently with Python (zlib, hashlib), the reference MODEL.md names.
#![allow(clippy::unwrap_used)]

mod common;

use common::{config, session, unit};
use efb_balancing::{config_hash, config_hash_text, session_hash, session_key};
use efb_model::BalancingMethod::{DstIp, Layer3, Layer4};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// Version 2 keys: X = A XOR B, then the protocol, then (layer-4) PA XOR PB, big-endian.
// python3 -c 'import zlib,ipaddress as i; a=i.ip_address("192.0.2.7").packed;
//   b=i.ip_address("10.0.0.1").packed; k=bytes(x^y for x,y in zip(a,b))+bytes([6]);
//   print(k.hex(), hex(zlib.crc32(k)))'
// -> ca00020606 0xd93ad1ba
#[test]
fn layer3_ipv4() {
    let s = session("192.0.2.7", "10.0.0.1", 6, 443, 40000);
    assert_eq!(hex(&session_key(Layer3, &s).unwrap()), "ca00020606");
    assert_eq!(session_hash(Layer3, &s).unwrap(), 0xd93a_d1ba);
}

// python3 -c 'import zlib; k=bytes.fromhex("ca00020606")+(443^40000).to_bytes(2,"big");
//   print(k.hex(), hex(zlib.crc32(k)))'
// -> ca000206069dfb 0x40a7b076
#[test]
fn layer4_ipv4_tcp() {
    let s = session("192.0.2.7", "10.0.0.1", 6, 443, 40000);
    assert_eq!(hex(&session_key(Layer4, &s).unwrap()), "ca000206069dfb");
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0x40a7_b076);
}

// python3 -c 'import zlib; k=bytes.fromhex("ca000206010000"); print(hex(zlib.crc32(k)))'
// -> 0xab687930 (ICMP has no ports: both count as 0 whatever the session says)
// python3 -c 'import zlib; print(hex(zlib.crc32(bytes.fromhex("ca00020601"))))' -> 0x475e4419
#[test]
fn icmp_ports_are_zero() {
    let s = session("10.0.0.1", "192.0.2.7", 1, 1234, 80);
    assert_eq!(hex(&session_key(Layer4, &s).unwrap()), "ca000206010000");
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0xab68_7930);
    assert_eq!(hex(&session_key(Layer3, &s).unwrap()), "ca00020601");
    assert_eq!(session_hash(Layer3, &s).unwrap(), 0x475e_4419);
}

// python3 -c 'import zlib; k=bytes(4)+bytes([17])+(5000^53).to_bytes(2,"big");
//   print(k.hex(), hex(zlib.crc32(k)))'
// -> 000000001113bd 0x54b7989a (same address both ends: X is all zeros, the ports remain)
#[test]
fn layer4_same_address() {
    let s = session("198.51.100.9", "198.51.100.9", 17, 5000, 53);
    assert_eq!(hex(&session_key(Layer4, &s).unwrap()), "000000001113bd");
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0x54b7_989a);
}

// python3 -c 'import zlib,ipaddress as i; a=i.ip_address("2001:db8::2").packed;
//   b=i.ip_address("2001:db8::1").packed; k=bytes(x^y for x,y in zip(a,b))+bytes([17]);
//   print(k.hex(), hex(zlib.crc32(k)))'
// -> 0000000000000000000000000000000311 0x8872828c
#[test]
fn layer3_ipv6() {
    let s = session("2001:db8::2", "2001:db8::1", 17, 1, 2);
    assert_eq!(
        hex(&session_key(Layer3, &s).unwrap()),
        "0000000000000000000000000000000311"
    );
    assert_eq!(session_hash(Layer3, &s).unwrap(), 0x8872_828c);
}

// python3 -c 'import zlib,ipaddress as i; a=i.ip_address("2001:db8:ffff::53").packed;
//   b=i.ip_address("2001:db8::1").packed;
//   k=bytes(x^y for x,y in zip(a,b))+bytes([17])+(53^51000).to_bytes(2,"big");
//   print(k.hex(), hex(zlib.crc32(k)))'
// -> 00000000ffff0000000000000000005211c70d 0x7f39fbee
#[test]
fn layer4_ipv6_udp() {
    let s = session("2001:db8:ffff::53", "2001:db8::1", 17, 53, 51000);
    assert_eq!(
        hex(&session_key(Layer4, &s).unwrap()),
        "00000000ffff0000000000000000005211c70d"
    );
    assert_eq!(session_hash(Layer4, &s).unwrap(), 0x7f39_fbee);
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

const EXPECTED_TEXT: &str = "efb-balancing-v2\n\
method layer-4\n\
unit Zeta cores 3 pairs 1 rebalance true\n\
pair Zeta-p0\n\
unit core cores 1 pairs 0 rebalance false\n\
unit edge cores 7 pairs 2 rebalance false\n\
pair edge-p0\n\
pair edge-p1\n";

// python3 -c 'import hashlib; t="efb-balancing-v2\nmethod layer-4\nunit Zeta cores 3 pairs 1
//   rebalance true\npair Zeta-p0\nunit core cores 1 pairs 0 rebalance false\nunit edge cores 7
//   pairs 2 rebalance false\npair edge-p0\npair edge-p1\n";
//   print(hashlib.sha256(t.encode()).hexdigest())'
// (one line per `\n`; "Zeta" sorts before "core" in byte order)
const EXPECTED_HASH: &str = "03bee51cd3a4b623926c1d963f096e31793d2ae0df3d8a377fde26405bd76f8a";

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

// python3 -c 'import hashlib; print(hashlib.sha256(b"efb-balancing-v2\nmethod layer-3\n").hexdigest())'
#[test]
fn config_hash_of_empty_config() {
    let c = efb_model::Config::default();
    assert_eq!(config_hash_text(&c), "efb-balancing-v2\nmethod layer-3\n");
    assert_eq!(
        config_hash(&c),
        "32b0cfe81639bc016481f7a1fd93b3d3d22a01f60128cd0fec697525771c6073"
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
