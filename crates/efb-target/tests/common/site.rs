//! The site most forwarding tests run on: one link, one unit of two pairs with three
//! cores, written over P4Runtime as the driver writes it, and where efb-balancing says a
//! session goes.

use std::net::IpAddr;

use efb_balancing::{UnitLayout, bucket_table, session_hash};
use efb_model::BalancingMethod;
use efb_p4info::names::{actions as a, fields as f, tables as t};
use efb_target::Profile;
use p4runtime_proto::p4::v1 as p4;

use super::{Bench, M, Session, entry, frame_class, insert, ip_flows};

pub const LINK: u128 = 1;
pub const LAN: &str = "p6-2";
pub const WAN: &str = "p6-1";
/// Pair ids 1 and 2, in the unit's order: (LAN port, WAN port).
pub const PAIRS: [(&str, &str); 2] = [("p4-0", "p4-1"), ("p4-2", "p4-3")];
pub const CORES: usize = 3;
pub const UNIT: u128 = 1;
/// The class bit of the link's frames, and of those with an L4 header.
pub const CLASS_LINK: u128 = 0b01;
pub const CLASS_L4: u128 = 0b10;

/// One link, one unit of two pairs with three cores, everything to the unit but BGP
/// (bypassed) and UDP port 9 (dropped).
pub async fn site(profile: Profile) -> (Bench, Session) {
    let (mut bench, session) = Bench::ready(profile).await;
    let ix = bench.index.clone();
    let port = |b: &Bench, n: &str| u128::from(b.port(n));
    let mut updates = vec![
        insert(entry(
            &ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(&bench, LAN)))],
            a::FROM_LINK_LAN,
            &[(f::LINK_ID, LINK)],
            0,
        )),
        insert(entry(
            &ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(&bench, WAN)))],
            a::FROM_LINK_WAN,
            &[(f::LINK_ID, LINK)],
            0,
        )),
        insert(entry(
            &ix,
            t::LINK_PORTS,
            &[(f::LINK_ID, M::Exact(LINK))],
            a::SET_LINK_PORTS,
            &[
                (f::LAN_PORT, port(&bench, LAN)),
                (f::WAN_PORT, port(&bench, WAN)),
            ],
            0,
        )),
    ];
    for (i, (lan, wan)) in PAIRS.iter().enumerate() {
        let id = i as u128 + 1;
        updates.push(insert(entry(
            &ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(&bench, lan)))],
            a::FROM_PAIR_LAN,
            &[(f::PAIR_ID, id)],
            0,
        )));
        updates.push(insert(entry(
            &ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(&bench, wan)))],
            a::FROM_PAIR_WAN,
            &[(f::PAIR_ID, id)],
            0,
        )));
        updates.extend(pair_up(&bench, id, lan, wan).into_iter().map(insert));
    }
    let layout = UnitLayout {
        pairs: PAIRS.len(),
        cores: CORES,
    };
    // The unit's region of the bucket table: the second one of its size, so that a
    // program that ignored the base would read slots never written (and bypass).
    let bucket_base = layout.buckets() as u128;
    updates.push(insert(entry(
        &ix,
        t::UNITS,
        &[(f::UNIT_ID, M::Exact(UNIT))],
        a::UNIT_ACTIVE,
        &[
            (f::BUCKET_MASK, layout.buckets() as u128 - 1),
            (f::BUCKET_BASE, bucket_base),
        ],
        0,
    )));
    for (bucket, slot) in bucket_table(layout, &[true, true], false)
        .into_iter()
        .enumerate()
    {
        let (pair, core) = layout.pair_core(slot.unwrap());
        let key = [(f::INDEX, M::Exact(bucket_base + bucket as u128))];
        updates.push(insert(entry(
            &ix,
            t::BUCKETS,
            &key,
            a::TO_PAIR,
            &[(f::PAIR_ID, pair as u128 + 1), (f::CORE, u128::from(core))],
            0,
        )));
    }
    // The link's frames get a class, those with an L4 header one more bit, as the
    // driver gives each criterion of its flows a bit of the class.
    updates.extend([
        insert(frame_class(
            &ix,
            &[(f::LINK_ID, M::Ternary(LINK, 0xff))],
            CLASS_LINK,
            1,
        )),
        insert(frame_class(
            &ix,
            &[
                (f::LINK_ID, M::Ternary(LINK, 0xff)),
                (f::L4_VALID, M::Ternary(1, 1)),
            ],
            CLASS_LINK | CLASS_L4,
            2,
        )),
    ]);
    let link = (f::FRAME_CLASS, M::Ternary(CLASS_LINK, CLASS_LINK));
    let with_l4 = CLASS_LINK | CLASS_L4;
    // A flow is one entry per flow table its frames can meet: non-IP frames never go to
    // a filter, so everything-to-the-unit is written into the IP tables only.
    updates.extend(ip_flows(
        &ix,
        std::slice::from_ref(&link),
        super::to_unit,
        &[(f::UNIT_ID, UNIT)],
        1,
    ));
    let bgp = [
        (f::FRAME_CLASS, M::Ternary(with_l4, with_l4)),
        (f::IP_PROTO, M::Ternary(6, 0xff)),
        (f::L4_DST_PORT, M::Ternary(179, 0xffff)),
    ];
    updates.extend(ip_flows(&ix, &bgp, |t| t.bypass, &[], 100));
    let discard = [
        (f::FRAME_CLASS, M::Ternary(with_l4, with_l4)),
        (f::IP_PROTO, M::Ternary(17, 0xff)),
        (f::L4_DST_PORT, M::Ternary(9, 0xffff)),
    ];
    updates.extend(ip_flows(&ix, &discard, |t| t.drop, &[], 90));
    // The board's CPU port, as the driver writes it (packet-outs need it).
    updates.extend(super::cpu_port_updates(&ix, bench.map.cpu_port()));
    bench.write(updates).await.unwrap();
    (bench, session)
}

/// A pair's two entries, keyed by pair and side: a frame that entered by the link's LAN
/// port leaves by the pair's LAN port, and the same for WAN.
pub fn pair_up(bench: &Bench, id: u128, lan: &str, wan: &str) -> [p4::TableEntry; 2] {
    [(0, lan), (1, wan)].map(|(side_wan, port)| {
        entry(
            &bench.index,
            t::PAIRS,
            &[
                (f::PAIR_ID, M::Exact(id)),
                (f::SIDE_WAN, M::Exact(side_wan)),
            ],
            a::PAIR_UP,
            &[(f::PORT, u128::from(bench.port(port)))],
            0,
        )
    })
}

/// Where efb-balancing says a session goes: (pair index, core).
pub fn expected(
    method: BalancingMethod,
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    ports: (u16, u16),
) -> (usize, u8) {
    let s = efb_balancing::Session {
        src,
        dst,
        ip_proto: proto,
        src_port: ports.0,
        dst_port: ports.1,
        link: None,
    };
    let layout = UnitLayout {
        pairs: PAIRS.len(),
        cores: CORES,
    };
    let bucket = layout.bucket_of(session_hash(method, &s).unwrap());
    let (pair, core) =
        layout.pair_core(bucket_table(layout, &[true, true], false)[bucket].unwrap());
    (pair, u8::try_from(core).unwrap())
}

pub fn tagged(frame: &[u8], core: u8) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&[0x88, 0xb5, LINK as u8, core]);
    out.extend_from_slice(&frame[12..]);
    out
}

/// Injects a frame and returns the one frame that left towards a filter.
pub async fn to_filter(bench: &mut Bench, port: &str, frame: Vec<u8>) -> super::frames_out::Out {
    bench.inject(port, frame).await;
    let pair_ports: Vec<&str> = PAIRS.iter().flat_map(|(l, w)| [*l, *w]).collect();
    let out = bench.frames(&pair_ports, 1).await;
    assert_eq!(out.len(), 1, "exactly one frame towards a filter: {out:?}");
    super::frames_out::Out {
        port: out[0].port_name.clone(),
        payload: out[0].payload.clone(),
    }
}
