#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Frames through the emulated program over the control service, with the tables written
//! by hand over P4Runtime as the compiler will: towards the filters with the 4-byte tag,
//! back untagged and unchanged, the same pair and core for both directions of a session
//! (computed with efb-balancing, as lookup-session does), bypass, drop, non-IP, every
//! encapsulation, malformed frames, keep-alives, faults.

mod common;

use std::net::IpAddr;
use std::time::Duration;

use common::frames::{eth, gre, ipv4, ipv6, mpls, pppoe, tcp, tcp4, udp, v6};
use common::site::{
    CLASS_L4, CLASS_LINK, LAN, LINK, PAIRS, UNIT, WAN, expected, site, tagged, to_filter,
};
use common::{Bench, M, entry, frame_class, insert, packet_out, update};
use efb_model::BalancingMethod;
use efb_p4info::names::flows;
use efb_p4info::names::{PacketFieldName, actions as a, fields as f, packet_io as io, tables as t};
use efb_target::Profile;
use p4runtime_proto::p4::v1::{self as p4, update::Type};

#[tokio::test]
async fn a_lan_frame_visits_its_filter_and_leaves_the_wan_port_unchanged() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let frame = tcp4([10, 1, 2, 3], [8, 8, 8, 8], 40000, 443);
    let (pair, core) = expected(
        BalancingMethod::Layer3,
        "10.1.2.3".parse().unwrap(),
        "8.8.8.8".parse().unwrap(),
        6,
        (0, 0),
    );
    let out = to_filter(&mut bench, LAN, frame.clone()).await;
    assert_eq!(
        out.port, PAIRS[pair].0,
        "towards the filter by the pair's LAN port"
    );
    assert_eq!(
        out.payload,
        tagged(&frame, core),
        "the 4-byte header after the source MAC"
    );
    // The filter sends it back into the pair's WAN port; it leaves the link's WAN port.
    let back = bench.frames(&[WAN], 1).await;
    assert_eq!(back.len(), 1);
    assert_eq!(
        back[0].payload, frame,
        "untagged and byte-identical to what entered"
    );
    assert!(bench.frames(&[LAN], 0).await.is_empty());
}

#[tokio::test]
async fn both_directions_of_a_session_reach_the_same_pair_and_core() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let mut seen = std::collections::HashSet::new();
    for method in [BalancingMethod::Layer3, BalancingMethod::Layer4] {
        if method == BalancingMethod::Layer4 {
            let mut d = entry(&bench.index, t::BALANCING, &[], a::HASH_LAYER4, &[], 0);
            d.is_default_action = true;
            bench.write(vec![update(Type::Modify, d)]).await.unwrap();
        }
        for i in 0..40u8 {
            let (a4, b4) = ([10, 0, i, 1], [192, 0, 2, i]);
            let (sp, dp) = (1024 + u16::from(i), 80 + u16::from(i % 3));
            let there = to_filter(&mut bench, LAN, tcp4(a4, b4, sp, dp)).await;
            let back = to_filter(&mut bench, WAN, tcp4(b4, a4, dp, sp)).await;
            let (pair, core) = expected(method, IpAddr::from(a4), IpAddr::from(b4), 6, (sp, dp));
            assert_eq!(
                (there.port.as_str(), there.payload[15]),
                (PAIRS[pair].0, core),
                "{method:?} LAN side"
            );
            assert_eq!(
                (back.port.as_str(), back.payload[15]),
                (PAIRS[pair].1, core),
                "{method:?} WAN side"
            );
            seen.insert((pair, core));
            // IPv6 too.
            let fwd = eth(&[], 0x86dd, &ipv6(v6(i), v6(200), 17, &udp(sp, dp)));
            let rev = eth(&[], 0x86dd, &ipv6(v6(200), v6(i), 17, &udp(dp, sp)));
            let x = to_filter(&mut bench, LAN, fwd).await;
            let y = to_filter(&mut bench, WAN, rev).await;
            let (pair, core) = expected(
                method,
                IpAddr::from(v6(i)),
                IpAddr::from(v6(200)),
                17,
                (sp, dp),
            );
            assert_eq!(
                (
                    x.port.as_str(),
                    x.payload[15],
                    y.port.as_str(),
                    y.payload[15]
                ),
                (PAIRS[pair].0, core, PAIRS[pair].1, core)
            );
        }
        bench.frames(&[], 0).await;
    }
    assert!(
        seen.len() >= 4,
        "sessions spread over pairs and cores: {seen:?}"
    );
}

#[tokio::test]
async fn bypass_and_drop_flows_never_reach_a_filter() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let bgp = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 50000, 179);
    bench.inject(LAN, bgp.clone()).await;
    let out = bench.frames(&[], 1).await;
    assert_eq!((out[0].port_name.as_str(), &out[0].payload), (WAN, &bgp));
    let discard = eth(
        &[],
        0x0800,
        &ipv4([10, 0, 0, 1], [10, 0, 0, 2], 17, &udp(5, 9)),
    );
    bench.inject(WAN, discard).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    assert!(bench.drops().await.contains(&("flow-drop".to_string(), 1)));
    // Each flow entry of the IPv4 table counted its frame; the IPv6 table saw none.
    let counted = |entries: Vec<p4::TableEntry>| -> Vec<(i32, i64)> {
        entries
            .into_iter()
            .map(|e| (e.priority, e.counter_data.unwrap().packet_count))
            .collect()
    };
    let v4 = counted(bench.read_table(flows::IPV4.table).await);
    assert!(
        v4.contains(&(100, 1)) && v4.contains(&(90, 1)) && v4.contains(&(1, 0)),
        "{v4:?}"
    );
    let v6 = counted(bench.read_table(flows::IPV6.table).await);
    assert_eq!(v6.len(), 3);
    assert!(v6.iter().all(|(_, n)| *n == 0), "{v6:?}");
}

#[tokio::test]
async fn non_ip_frames_pass_to_the_other_port_even_for_a_unit() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let arp = eth(&[], 0x0806, &[0u8; 28]);
    let llc = eth(&[], 46, &[0x42, 0x42, 0x03, 0, 0, 0, 0]);
    let mpls_l2 = eth(&[], 0x8847, &mpls(2, true, &[0u8; 40]));
    for (port, frame, other) in [(WAN, arp, LAN), (LAN, llc, WAN), (LAN, mpls_l2, WAN)] {
        bench.inject(port, frame.clone()).await;
        let out = bench.frames(&[], 1).await;
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].port_name.as_str(), &out[0].payload),
            (other, &frame)
        );
    }
}

#[tokio::test]
async fn every_encapsulation_is_parsed_to_the_inner_ip() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    // Bypass exactly the inner destination 192.0.2.99: only a parser that reached the
    // inner header can match it.
    // The frame meets the IPv4 table by its innermost IP header, whatever carries it.
    let m = [(f::IPV4_DST, M::Ternary(0xc000_0263, 0xffff_ffff))];
    bench
        .write(vec![insert(entry(
            &bench.index,
            flows::IPV4.table,
            &m,
            flows::IPV4.bypass,
            &[],
            50,
        ))])
        .await
        .unwrap();
    let inner = ipv4([198, 51, 100, 7], [192, 0, 2, 99], 6, &tcp(1000, 80));
    let inner6 = ipv6(v6(1), v6(2), 6, &tcp(1000, 80));
    let outer =
        |proto: u8, payload: &[u8]| ipv4([203, 0, 113, 1], [203, 0, 113, 2], proto, payload);
    let mut vlan3 = eth(&[100, 200], 0x88a8, &[]);
    vlan3.truncate(vlan3.len() - 2);
    vlan3.extend_from_slice(&[0x88, 0xa8, 0x01, 0x2c, 0x08, 0x00]);
    vlan3.extend_from_slice(&inner);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("one VLAN tag", eth(&[100], 0x0800, &inner)),
        ("three VLAN tags, 802.1ad inner", vlan3),
        ("one MPLS label", eth(&[], 0x8847, &mpls(1, true, &inner))),
        (
            "six MPLS labels",
            eth(&[100], 0x8847, &mpls(6, true, &inner)),
        ),
        ("PPPoE", eth(&[7], 0x8864, &pppoe(0x0021, &inner))),
        (
            "GRE",
            eth(&[], 0x0800, &outer(47, &gre(0x0800, false, &inner))),
        ),
        (
            "GRE with a key",
            eth(&[], 0x0800, &outer(47, &gre(0x0800, true, &inner))),
        ),
        ("IPv4 in IPv4", eth(&[], 0x0800, &outer(4, &inner))),
        (
            "IPv4 in IPv6",
            eth(&[], 0x86dd, &ipv6(v6(9), v6(10), 4, &inner)),
        ),
    ];
    for (what, frame) in cases {
        bench.inject(LAN, frame.clone()).await;
        let out = bench.frames(&[], 1).await;
        assert_eq!(out.len(), 1, "{what}");
        assert_eq!(
            (out[0].port_name.as_str(), &out[0].payload),
            (WAN, &frame),
            "{what}: the inner destination matched"
        );
    }
    // IPv6 inside: balanced on the inner session (not the outer one).
    let (pair, core) = expected(
        BalancingMethod::Layer3,
        IpAddr::from(v6(1)),
        IpAddr::from(v6(2)),
        6,
        (0, 0),
    );
    for (what, frame) in [
        (
            "IPv6 in GRE",
            eth(&[], 0x0800, &outer(47, &gre(0x86dd, false, &inner6))),
        ),
        ("IPv6 in IPv4", eth(&[], 0x0800, &outer(41, &inner6))),
        ("IPv6 over PPPoE", eth(&[], 0x8864, &pppoe(0x0057, &inner6))),
        ("IPv6 over MPLS", eth(&[], 0x8847, &mpls(3, true, &inner6))),
    ] {
        let out = to_filter(&mut bench, LAN, frame.clone()).await;
        assert_eq!(
            (out.port.as_str(), out.payload[15]),
            (PAIRS[pair].0, core),
            "{what}"
        );
        assert_eq!(
            out.payload,
            tagged(&frame, core),
            "{what}: never stripped or changed"
        );
        bench.frames(&[], 1).await;
    }
}

#[tokio::test]
async fn flows_match_vlan_and_mpls_depth_and_tags() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let ix = bench.index.clone();
    // The Ethernet layers are classified, each criterion a bit of the class: depths are
    // ternary, 2..=3 tags is one prefix, 4..=6 labels two (4..=5 and 6).
    let (by_vlan, by_mpls) = (0b100, 0b1000);
    let link = (f::LINK_ID, M::Ternary(LINK, 0xff));
    let l4 = (f::L4_VALID, M::Ternary(1, 1));
    let by_vlan_entry = [
        link.clone(),
        l4.clone(),
        (f::VLAN_DEPTH, M::Ternary(2, 0b10)),
        (f::VLAN1_VID, M::Ternary(200, 0xfff)),
    ];
    let by_mpls_4_5 = [
        link.clone(),
        l4.clone(),
        (f::MPLS_DEPTH, M::Ternary(4, 0b110)),
    ];
    let by_mpls_6 = [link, l4, (f::MPLS_DEPTH, M::Ternary(6, 0b111))];
    let base = CLASS_LINK | CLASS_L4;
    let (table, drop) = (flows::IPV4.table, flows::IPV4.drop);
    let class = |bit: u128| [(f::FRAME_CLASS, M::Ternary(bit, bit))];
    bench
        .write(vec![
            insert(frame_class(&ix, &by_vlan_entry, base | by_vlan, 10)),
            insert(frame_class(&ix, &by_mpls_4_5, base | by_mpls, 10)),
            insert(frame_class(&ix, &by_mpls_6, base | by_mpls, 10)),
            insert(entry(&ix, table, &class(by_vlan), drop, &[], 60)),
            insert(entry(&ix, table, &class(by_mpls), drop, &[], 61)),
        ])
        .await
        .unwrap();
    let inner = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, &tcp(1, 2));
    bench.inject(LAN, eth(&[100, 200], 0x0800, &inner)).await;
    for labels in [5, 6] {
        bench
            .inject(LAN, eth(&[], 0x8847, &mpls(labels, true, &inner)))
            .await;
    }
    assert!(
        bench.frames(&[], 0).await.is_empty(),
        "all dropped by their flows"
    );
    assert!(bench.drops().await.contains(&("flow-drop".to_string(), 3)));
    // One tag less, or fewer labels: not matched, to the filter as usual.
    bench.inject(LAN, eth(&[200], 0x0800, &inner)).await;
    bench
        .inject(LAN, eth(&[], 0x8847, &mpls(3, true, &inner)))
        .await;
    assert_eq!(
        bench.frames(&[WAN], 2).await.len(),
        2,
        "back from the filters"
    );
}

#[tokio::test]
async fn malformed_frames_are_dropped_or_passed_as_the_program_says() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let good = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, &tcp(1, 2));
    let mut bad_ihl = good.clone();
    bad_ihl[0] = 0x44;
    let mut too_long = good.clone();
    too_long[3] = 0xff;
    let dropped: Vec<(&str, Vec<u8>)> = vec![
        ("truncated Ethernet", vec![0x02; 10]),
        ("truncated VLAN tag", eth(&[], 0x8100, &[0x00])),
        ("truncated IPv4", eth(&[], 0x0800, &good[..12])),
        ("IPv4 header length below 20", eth(&[], 0x0800, &bad_ihl)),
        (
            "truncated TCP ports",
            eth(&[], 0x0800, &ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, &[0, 1])),
        ),
        ("truncated MPLS label", eth(&[], 0x8847, &[0, 0, 0])),
        (
            "truncated GRE inner header",
            eth(
                &[],
                0x0800,
                &ipv4(
                    [1, 1, 1, 1],
                    [2, 2, 2, 2],
                    47,
                    &gre(0x0800, false, &good[..10]),
                ),
            ),
        ),
    ];
    for (what, frame) in &dropped {
        bench.inject(LAN, frame.clone()).await;
        assert!(bench.frames(&[], 0).await.is_empty(), "{what} is dropped");
    }
    assert!(
        bench
            .drops()
            .await
            .contains(&("malformed".to_string(), dropped.len() as u64)),
        "{:?}",
        bench.drops().await
    );
    // An IP length past the end of the frame: egress drops it, uncounted, as the chip's
    // egress does (`ip_length` in efb.p4).
    let past_the_end = [
        eth(&[], 0x0800, &too_long),
        eth(&[], 0x86dd, &ipv6(v6(1), v6(2), 6, &tcp(1, 2))[..50]),
    ];
    for frame in past_the_end {
        bench.inject(LAN, frame).await;
        assert!(bench.frames(&[], 0).await.is_empty(), "dropped by egress");
    }
    assert!(
        bench
            .drops()
            .await
            .contains(&("malformed".to_string(), dropped.len() as u64)),
        "not counted: {:?}",
        bench.drops().await
    );
    // Deeper than the parser goes: passed on untouched as non-IP, never to a filter.
    let four_vlans = eth(&[1, 2, 3, 4], 0x0800, &good);
    let seven_labels = eth(&[], 0x8847, &mpls(7, true, &good));
    for frame in [four_vlans, seven_labels] {
        bench.inject(LAN, frame.clone()).await;
        let out = bench.frames(&[], 1).await;
        assert_eq!((out[0].port_name.as_str(), &out[0].payload), (WAN, &frame));
    }
    // Random bytes of random lengths: no crash, and the target still forwards.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut frames = Vec::new();
    for _ in 0..3000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 120) as usize;
        let mut f: Vec<u8> = (0..len).map(|i| (seed >> (i % 56)) as u8).collect();
        if len > 14 {
            f[12] = [0x08, 0x86, 0x81, 0x88][(seed % 4) as usize];
            f[13] = [0x00, 0xdd, 0x00, 0x47][(seed % 4) as usize];
        }
        frames.push(efb_target::control_proto::InjectedFrame {
            port: Some(common::port_ref(LAN)),
            payload: f,
        });
    }
    bench
        .control
        .inject_frames(efb_target::control_proto::InjectFramesRequest { frames })
        .await
        .unwrap();
    bench.frames(&[], 0).await;
    let frame = tcp4([10, 9, 9, 9], [10, 8, 8, 8], 1, 179);
    bench.inject(LAN, frame.clone()).await;
    assert_eq!(bench.frames(&[WAN], 1).await[0].payload, frame);
}

/// A keep-alive as the controller builds it: pair id, direction, sequence, time; asking
/// for its return as a packet-in (what these tests are about).
fn keepalive(pair: u8, direction: u8, seq: u32) -> Vec<u8> {
    common::keepalive(
        u16::from(pair) << 8 | u16::from(direction),
        seq,
        common::PUNT,
        0,
    )
}

#[tokio::test]
async fn keepalives_go_round_the_filter_and_reach_the_controller_with_times() {
    let (mut bench, mut session) = site(Profile::StratumTofino).await;
    let (lan, wan) = PAIRS[0];
    bench.set_filter(lan, wan, 300_000, 0.0, false).await;
    session
        .tx
        .send(packet_out(
            &bench.index,
            bench.port(lan),
            keepalive(1, 0, 7),
        ))
        .await
        .unwrap();
    let pin = session.packet_in().await;
    let info = bench.index.packet_in().unwrap().clone();
    let meta = |name: PacketFieldName| {
        let id = info.field(name).unwrap().id;
        pin.metadata
            .iter()
            .find(|m| m.metadata_id == id)
            .map(|m| efb_target::bytes::to_u128(&m.value))
            .unwrap()
    };
    assert_eq!(
        meta(io::INGRESS_PORT),
        u128::from(bench.port(wan)),
        "came back by the pair's other port"
    );
    let tx = u64::from_be_bytes(pin.payload[20..28].try_into().unwrap());
    assert_eq!(
        meta(io::RX_TSTAMP) as u64 - tx,
        300_000,
        "time on path is the filter's delay, on the chip's clock"
    );
    // Egress wrote the port it left by (the pair's LAN port) over what was sent.
    let out_port = (bench.port(lan) as u16).to_be_bytes();
    assert_eq!(
        &pin.payload[14..20],
        &[out_port[0], out_port[1], 0, 0, 0, 7]
    );

    // A dead filter returns nothing; a backup may not send.
    bench.set_filter(wan, lan, 25_000, 0.0, true).await;
    session
        .tx
        .send(packet_out(
            &bench.index,
            bench.port(wan),
            keepalive(1, 1, 8),
        ))
        .await
        .unwrap();
    let mut backup = bench.arbitrate(3, "").await;
    assert_eq!(
        backup.arbitration_code().await,
        tonic::Code::AlreadyExists as i32
    );
    backup
        .tx
        .send(packet_out(
            &bench.index,
            bench.port(lan),
            keepalive(1, 0, 9),
        ))
        .await
        .unwrap();
    match backup.next().await.unwrap().update {
        Some(p4::stream_message_response::Update::Error(e)) => {
            assert_eq!(e.canonical_code, tonic::Code::PermissionDenied as i32)
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = bench.frames(&[lan, wan], 1).await;
    assert_eq!(out.len(), 2, "both keep-alives left the chip: {out:?}");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), session.packet_in())
            .await
            .is_err(),
        "nothing came back"
    );
}

/// A keep-alive back from a filter goes to the port `platform` names: a packet-in only when
/// that is the chip's CPU port; out of a front-panel port (with the packet-in header the
/// program put before it), or lost, otherwise.
#[tokio::test]
async fn keepalives_reach_the_controller_only_by_the_chips_cpu_port() {
    let (mut bench, mut session) = site(Profile::StratumTofino).await;
    let ix = bench.index.clone();
    let wan = PAIRS[0].1;
    let front_panel = bench.port("p30");
    bench
        .write(vec![update(
            Type::Modify,
            common::platform(&ix, front_panel),
        )])
        .await
        .unwrap();
    bench.inject(wan, keepalive(1, 1, 1)).await;
    let out = bench.frames(&["p30"], 1).await;
    assert_eq!(out.len(), 1, "out of the port platform names: {out:?}");
    let (header, frame) = out[0].payload.split_at(8);
    assert_eq!(frame, keepalive(1, 1, 1));
    let came_in = u32::from(u16::from_be_bytes([header[0], header[1]]));
    assert_eq!(came_in, bench.port(wan), "the packet-in header names where");
    // A port the chip does not have: nowhere.
    assert!(bench.map.name_of(511).is_none());
    bench
        .write(vec![update(Type::Modify, common::platform(&ix, 511))])
        .await
        .unwrap();
    bench.inject(wan, keepalive(1, 1, 2)).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    // The chip's CPU port: the controller gets it, and it is the first it gets.
    let cpu = bench.map.cpu_port();
    bench
        .write(vec![update(Type::Modify, common::platform(&ix, cpu))])
        .await
        .unwrap();
    bench.inject(wan, keepalive(1, 1, 3)).await;
    let pin = session.packet_in().await;
    assert_eq!(&pin.payload[14..20], &[1, 1, 0, 0, 0, 3]);
    assert!(bench.frames(&[], 0).await.is_empty());
}

/// Waits (up to 2 s) until `reason` has counted `n` drops; false if it never does.
async fn drops_reach(bench: &mut Bench, reason: &str, n: u64) -> bool {
    for _ in 0..40 {
        if bench.drops().await.contains(&(reason.to_string(), n)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A packet-out enters by the CPU port: without the `ingress_port` entry marking it as the
/// CPU's it is dropped and counted, as on the chip.
#[tokio::test]
async fn a_packet_out_needs_the_cpu_ports_from_cpu_entry() {
    let (mut bench, session) = site(Profile::StratumTofino).await;
    let ix = bench.index.clone();
    let cpu = bench.map.cpu_port();
    let lan = PAIRS[0].0;
    bench
        .write(vec![update(Type::Delete, common::from_cpu(&ix, cpu))])
        .await
        .unwrap();
    let send: Vec<_> = (0..4)
        .map(|seq| packet_out(&bench.index, bench.port(lan), keepalive(1, 0, seq)))
        .collect();
    session.tx.send(send[1].clone()).await.unwrap();
    assert!(
        drops_reach(&mut bench, "unknown-port", 1).await,
        "{:?}",
        bench.drops().await
    );
    // The CPU port taken for a front-panel port: dropped as a packet-out with no way out.
    let wrong = entry(
        &ix,
        t::INGRESS_PORT,
        &[(f::INGRESS_PORT, M::Exact(cpu.into()))],
        a::FROM_LINK_LAN,
        &[(f::LINK_ID, LINK)],
        0,
    );
    bench.write(vec![insert(wrong)]).await.unwrap();
    session.tx.send(send[2].clone()).await.unwrap();
    assert!(
        drops_reach(&mut bench, "packet-out-port", 1).await,
        "{:?}",
        bench.drops().await
    );
    // With the entry back, the next one leaves by the port it names, and only it.
    bench
        .write(vec![update(Type::Modify, common::from_cpu(&ix, cpu))])
        .await
        .unwrap();
    session.tx.send(send[3].clone()).await.unwrap();
    let out = bench.frames(&[lan], 1).await;
    assert_eq!(out.len(), 1, "{out:?}");
    let out_port = (bench.port(lan) as u16).to_be_bytes();
    assert_eq!(
        &out[0].payload[14..20],
        &[out_port[0], out_port[1], 0, 0, 0, 3]
    );
}

#[tokio::test]
async fn filter_loss_and_death_lose_traffic_and_software_bypass_saves_it() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let frames: Vec<Vec<u8>> = (0..60u8)
        .map(|i| tcp4([10, 0, i, 1], [10, 9, 0, i], 1000, 80))
        .collect();
    for (lan, wan) in PAIRS {
        bench.set_filter(lan, wan, 25_000, 1.0, false).await;
    }
    for f in &frames {
        bench.inject(LAN, f.clone()).await;
    }
    assert_eq!(
        bench.frames(&[WAN], 60).await.len(),
        0,
        "lost in the filters"
    );
    // The controller marks pair 1 down and sets the unit... pair 1's sessions bypass.
    let down = |side_wan| {
        let key = [(f::PAIR_ID, M::Exact(1)), (f::SIDE_WAN, M::Exact(side_wan))];
        update(
            Type::Modify,
            entry(&bench.index, t::PAIRS, &key, a::PAIR_DOWN, &[], 0),
        )
    };
    bench.write(vec![down(0), down(1)]).await.unwrap();
    bench.frames(&[], 0).await;
    for f in &frames {
        bench.inject(LAN, f.clone()).await;
    }
    let through = bench.frames(&[WAN], 0).await;
    let expected_bypass = frames
        .iter()
        .filter(|f| {
            expected(
                BalancingMethod::Layer3,
                IpAddr::from([f[26], f[27], f[28], f[29]]),
                IpAddr::from([f[30], f[31], f[32], f[33]]),
                6,
                (0, 0),
            )
            .0 == 0
        })
        .count();
    assert!(expected_bypass > 0);
    assert_eq!(
        through.len(),
        expected_bypass,
        "exactly pair 1's sessions go round the dead filters"
    );
    // The whole unit in bypass: everything passes, untagged.
    let unit_bypass = entry(
        &bench.index,
        t::UNITS,
        &[(f::UNIT_ID, M::Exact(UNIT))],
        a::UNIT_BYPASS,
        &[],
        0,
    );
    bench
        .write(vec![update(Type::Modify, unit_bypass)])
        .await
        .unwrap();
    for f in &frames {
        bench.inject(LAN, f.clone()).await;
    }
    let through = bench.frames(&[WAN], 60).await;
    assert_eq!(
        through
            .iter()
            .map(|f| f.payload.clone())
            .collect::<Vec<_>>(),
        frames
    );
}

#[tokio::test]
async fn frames_from_filters_need_the_tag_and_a_known_link() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let plain = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2);
    bench.inject(PAIRS[0].1, plain.clone()).await;
    let mut unknown_link = plain[..12].to_vec();
    unknown_link.extend_from_slice(&[0x88, 0xb5, 9, 0]);
    unknown_link.extend_from_slice(&plain[12..]);
    bench.inject(PAIRS[0].1, unknown_link).await;
    // An unknown port.
    bench.inject("p30", plain.clone()).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    let drops = bench.drops().await;
    for reason in ["from-filter-untagged", "link-missing", "unknown-port"] {
        assert!(
            drops.contains(&(reason.to_string(), 1)),
            "{reason}: {drops:?}"
        );
    }
    // A tagged frame from a filter's LAN side returns to the link's LAN port.
    bench.inject(PAIRS[1].0, tagged(&plain, 2)).await;
    let out = bench.frames(&[], 1).await;
    assert_eq!((out[0].port_name.as_str(), &out[0].payload), (LAN, &plain));
}

#[tokio::test]
async fn a_port_that_is_down_sends_nothing() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    bench
        .control
        .set_port_state(efb_target::control_proto::SetPortStateRequest {
            port: Some(common::port_ref(WAN)),
            up: false,
        })
        .await
        .unwrap();
    bench
        .inject(LAN, tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 179))
        .await;
    assert!(bench.frames(&[], 0).await.is_empty());
    assert!(bench.drops().await.contains(&("port-down".to_string(), 1)));
    let ports = bench
        .control
        .get_ports(efb_target::control_proto::GetPortsRequest {})
        .await
        .unwrap()
        .into_inner();
    let wan = ports.ports.iter().find(|p| p.name == WAN).unwrap();
    assert!(!wan.up);
    let lan = ports.ports.iter().find(|p| p.name == LAN).unwrap();
    assert_eq!((lan.rx_frames, lan.drops), (1, 1));
}
