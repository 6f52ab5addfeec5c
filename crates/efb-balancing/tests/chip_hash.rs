//! The chip's hash, as the Tofino compiler placed it, is MODEL.md's. Each of efb.p4's six
//! `Hash` externs is read from the compiler's own description (p4/compiled/pipe/context.json:
//! the algorithm with its polynomial, reflection, initial value and final xor; the fields of
//! its field list in order, with their widths), computed here from that description alone,
//! and compared, on random sessions of every method and address family, with
//! `session_hash` (zlib's CRC-32 of MODEL.md's key bytes). No constant of the CRC is
//! written here: a compiler that placed another algorithm or another field order fails it.

#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use efb_balancing::{Session, has_ports, session_hash};
use efb_model::BalancingMethod;
use rand::Rng;
use serde_json::Value;

/// One dynamic hash calculation of context.json.
struct ChipHash {
    name: String,
    width: u32,
    poly: u64,
    reverse: bool,
    msb: bool,
    extend: bool,
    init: u64,
    final_xor: u64,
    /// (field name, width in bits), in the field list's order.
    fields: Vec<(String, u32)>,
}

fn hex(v: &Value) -> u64 {
    let text = v.as_str().unwrap();
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

fn chip_hashes() -> Vec<ChipHash> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../p4/compiled/pipe/context.json"
    );
    let context: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    context["dynamic_hash_calculations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|calc| {
            let algorithms = calc["algorithms"].as_array().unwrap();
            let algorithm = algorithms
                .iter()
                .find(|a| a["is_default"] == true)
                .unwrap_or(&algorithms[0]);
            assert_eq!(algorithm["type"], "crc", "{calc}");
            let list = calc["field_lists"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["is_default"] == true)
                .unwrap();
            let fields = list["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    assert_eq!(f["start_bit"], 0, "a whole field: {f}");
                    (
                        f["name"].as_str().unwrap().to_string(),
                        f["bit_width"].as_u64().unwrap() as u32,
                    )
                })
                .collect();
            let width = calc["hash_bit_width"].as_u64().unwrap() as u32;
            ChipHash {
                name: calc["name"].as_str().unwrap().to_string(),
                width,
                // The polynomial as written includes its top bit (x^width).
                poly: hex(&algorithm["poly"]) & ((1u64 << width) - 1),
                reverse: algorithm["reverse"].as_bool().unwrap(),
                msb: algorithm["msb"].as_bool().unwrap(),
                extend: algorithm["extend"].as_bool().unwrap(),
                init: hex(&algorithm["init"]),
                final_xor: hex(&algorithm["final_xor"]),
                fields,
            }
        })
        .collect()
}

impl ChipHash {
    /// The CRC this description defines, over `bits` (most significant first, as the
    /// field list concatenates its fields).
    fn compute(&self, bits: &[bool]) -> u64 {
        assert!(
            !self.msb && !self.extend,
            "{}: msb/extend hashes are not modelled",
            self.name
        );
        assert_eq!(bits.len() % 8, 0, "{}: whole bytes", self.name);
        let mask = (1u64 << self.width) - 1;
        let top = 1u64 << (self.width - 1);
        let mut crc = self.init;
        for byte in bits.chunks(8) {
            // A reflected CRC takes each byte least significant bit first.
            let order: Vec<bool> = if self.reverse {
                byte.iter().rev().copied().collect()
            } else {
                byte.to_vec()
            };
            for bit in order {
                let feedback = ((crc & top) != 0) ^ bit;
                crc = (crc << 1) & mask;
                if feedback {
                    crc ^= self.poly;
                }
            }
        }
        if self.reverse {
            crc = reflect(crc, self.width);
        }
        (crc ^ self.final_xor) & mask
    }
}

fn reflect(value: u64, width: u32) -> u64 {
    (0..width).fold(0, |acc, i| acc | (((value >> i) & 1) << (width - 1 - i)))
}

/// The values the program puts in a field of a hash's list, for a session.
fn field_value(name: &str, s: &Session) -> u128 {
    let addr = |a: IpAddr| match a {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    };
    let (sport, dport) = s.effective_ports();
    match name {
        "md.xor_v4" | "md.xor_v6" => addr(s.src) ^ addr(s.dst),
        "md.lkp.ipv4_dst" | "md.lkp.ipv6_dst" => addr(s.dst),
        "md.lkp.ip_proto" => u128::from(s.ip_proto),
        "md.xor_port" => u128::from(sport ^ dport),
        other => panic!("a field the test does not know: {other}"),
    }
}

fn bits_of(hash: &ChipHash, s: &Session) -> Vec<bool> {
    hash.fields
        .iter()
        .flat_map(|(name, width)| {
            let value = field_value(name, s);
            (0..*width).rev().map(move |i| (value >> i) & 1 == 1)
        })
        .collect()
}

/// The method and address family a hash of efb.p4 serves, from its name.
fn serves(name: &str) -> (BalancingMethod, bool) {
    let method = if name.contains("_l4") {
        BalancingMethod::Layer4
    } else if name.contains("_dst") {
        BalancingMethod::DstIp
    } else {
        BalancingMethod::Layer3
    };
    (method, name.contains("_v6"))
}

fn random_session(rng: &mut impl Rng, v6: bool) -> Session {
    let (src, dst) = if v6 {
        (
            IpAddr::V6(Ipv6Addr::from(rng.random::<u128>())),
            IpAddr::V6(Ipv6Addr::from(rng.random::<u128>())),
        )
    } else {
        (
            IpAddr::V4(Ipv4Addr::from(rng.random::<u32>())),
            IpAddr::V4(Ipv4Addr::from(rng.random::<u32>())),
        )
    };
    let ip_proto = [6u8, 17, 1, 47, 132, 58, rng.random()][rng.random_range(0..7)];
    Session {
        src,
        dst,
        ip_proto,
        src_port: rng.random(),
        dst_port: rng.random(),
        link: None,
    }
}

#[test]
fn each_hash_the_compiler_placed_is_model_md_s() {
    let hashes = chip_hashes();
    assert_eq!(hashes.len(), 6, "three methods, two address families");
    let mut rng = rand::rng();
    for hash in &hashes {
        let (method, v6) = serves(&hash.name);
        for _ in 0..2000 {
            let s = random_session(&mut rng, v6);
            let chip = hash.compute(&bits_of(hash, &s));
            let model = u64::from(session_hash(method, &s).unwrap());
            assert_eq!(
                chip,
                model,
                "{}: the chip's hash differs from MODEL.md's for {s:?} (ports hashed: {})",
                hash.name,
                has_ports(s.ip_proto)
            );
        }
    }
}

#[test]
fn the_description_is_read_not_assumed() {
    // A description with another initial value gives other hashes: the comparison above
    // depends on what context.json says.
    let mut hash = chip_hashes().remove(0);
    let s = random_session(&mut rand::rng(), serves(&hash.name).1);
    let bits = bits_of(&hash, &s);
    let placed = hash.compute(&bits);
    hash.init ^= 1;
    assert_ne!(hash.compute(&bits), placed);
}
