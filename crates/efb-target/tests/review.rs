#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The review of efb.p4 against efb-target (issue 24) found frames the two treated
//! differently. Each is settled the way the program (as bf-p4c compiles it, and as
//! p4testgen executes it: tests/testgen.rs) treats the frame, and pinned here at the
//! target's boundary: frames in by a port, frames out, P4Runtime counters.

mod common;

use std::net::IpAddr;

use common::frames::{eth, ipv4, ipv6, tcp, tcp4, v6};
use common::site::{LAN, PAIRS, WAN, expected, site, tagged, to_filter};
use efb_model::BalancingMethod;
use efb_p4info::names::flows;
use efb_target::Profile;

/// An IPv4 header of `ihl` words, its option words numbered 1, 2, ... so that an order
/// change shows.
fn ipv4_with_options(ihl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut packet = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto, payload);
    let words = usize::from(ihl - 5);
    let options: Vec<u8> = (1..=words)
        .flat_map(|w| [0x01, 0x01, 0x01, w as u8])
        .collect();
    packet.splice(20..20, options);
    packet[0] = 0x40 | ihl;
    let total = (packet.len() as u16).to_be_bytes();
    packet[2..4].copy_from_slice(&total);
    packet
}

/// GRE with checksum, key and sequence number (the three optional words, distinct).
fn gre_with_all_fields(inner: &[u8]) -> Vec<u8> {
    let mut h = vec![0xB0, 0x00, 0x08, 0x00];
    h.extend_from_slice(&[0xC5, 0xC5, 0, 0]);
    h.extend_from_slice(&[0x4B, 0x45, 0x59, 0x21]);
    h.extend_from_slice(&[0, 0, 0, 0x2A]);
    h.extend_from_slice(inner);
    h
}

/// Frames the program leaves as they came (but for the tag): forwarded untouched, every
/// option word in its place.
#[tokio::test]
async fn option_words_and_gre_fields_leave_in_the_order_they_came() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let inner = ipv4([198, 51, 100, 7], [192, 0, 2, 99], 6, &tcp(1000, 80));
    let cases = [
        (
            "IPv4, 2 option words",
            eth(&[], 0x0800, &ipv4_with_options(7, 6, &tcp(1, 2))),
        ),
        (
            "IPv4, 10 option words",
            eth(&[], 0x0800, &ipv4_with_options(15, 6, &tcp(1, 2))),
        ),
        (
            "GRE with checksum, key and sequence",
            eth(
                &[],
                0x0800,
                &ipv4([1, 1, 1, 1], [2, 2, 2, 2], 47, &gre_with_all_fields(&inner)),
            ),
        ),
    ];
    for (what, frame) in cases {
        let out = to_filter(&mut bench, LAN, frame.clone()).await;
        let core = out.payload[15];
        assert_eq!(
            out.payload,
            tagged(&frame, core),
            "{what}: towards the filter"
        );
        let back = bench.frames(&[WAN], 1).await;
        assert_eq!(back[0].payload, frame, "{what}: out of the link");
    }
}

/// `pkt_length` in egress counts the frame with its 4-byte FCS, not the bridged header:
/// an unpadded IP frame fits exactly; one byte more of IP length is past the end. The
/// end is a saturating sum: a length near 65535 does not wrap round to a small end.
#[tokio::test]
async fn the_ip_end_counts_the_fcs_and_does_not_wrap() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let exact = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2);
    assert_eq!(exact.len(), 14 + 20 + 25, "no padding after the IP packet");
    to_filter(&mut bench, LAN, exact.clone()).await;
    assert_eq!(
        bench.frames(&[WAN], 1).await[0].payload,
        exact,
        "unpadded fits"
    );

    let mut one_more = exact.clone();
    one_more[17] += 1;
    let mut huge_v4 = eth(
        &[7, 8],
        0x0800,
        &ipv4([10, 0, 0, 1], [10, 0, 0, 2], 6, &tcp(1, 2)),
    );
    huge_v4[22 + 2..22 + 4].copy_from_slice(&0xFFFFu16.to_be_bytes());
    let mut huge_v6 = eth(&[], 0x86dd, &ipv6(v6(1), v6(2), 6, &tcp(1, 2)));
    huge_v6[14 + 4..14 + 6].copy_from_slice(&0xFFFFu16.to_be_bytes());
    for (what, frame) in [
        ("one byte past the end", one_more),
        (
            "IPv4 length 65535 after two tags (22 + 65535 + 4 wraps at 16 bits)",
            huge_v4,
        ),
        (
            "IPv6 payload length 65535 (65535 + 40 wraps at 16 bits)",
            huge_v6,
        ),
    ] {
        bench.inject(LAN, frame).await;
        assert!(
            bench.frames(&[], 0).await.is_empty(),
            "{what}: dropped by egress"
        );
    }
    assert!(
        !bench.drops().await.iter().any(|(_, n)| *n > 0),
        "egress drops are not counted by ingress: {:?}",
        bench.drops().await
    );
}

/// What the program does not check, the target does not either: a total length shorter
/// than the header, layer-4 ports beyond the outer IP length, an inner length longer than
/// the outer one. Such frames are balanced and matched like any other.
#[tokio::test]
async fn lengths_the_program_does_not_check_pass() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let mut short_total = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2);
    short_total[16..18].copy_from_slice(&10u16.to_be_bytes());
    // BGP (bypassed by its flow) whose ports lie past an IP length of 20..23.
    let mut bgp_ports_outside = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 50000, 179);
    bgp_ports_outside[16..18].copy_from_slice(&22u16.to_be_bytes());
    let mut v6_empty = eth(&[], 0x86dd, &ipv6(v6(1), v6(2), 6, &tcp(50000, 179)));
    v6_empty[18..20].copy_from_slice(&0u16.to_be_bytes());
    let mut inner = ipv4([198, 51, 100, 7], [192, 0, 2, 99], 6, &tcp(1000, 80));
    inner[2..4].copy_from_slice(&1400u16.to_be_bytes());
    let inner_longer = eth(&[], 0x0800, &ipv4([1, 1, 1, 1], [2, 2, 2, 2], 4, &inner));

    for (what, frame) in [
        ("total length 10", short_total),
        ("inner length 1400", inner_longer),
    ] {
        to_filter(&mut bench, LAN, frame.clone()).await;
        assert_eq!(bench.frames(&[WAN], 1).await[0].payload, frame, "{what}");
    }
    for (what, frame) in [
        ("IPv4 length 22", bgp_ports_outside),
        ("IPv6 payload 0", v6_empty),
    ] {
        bench.inject(LAN, frame.clone()).await;
        let out = bench.frames(&[], 1).await;
        assert_eq!(
            (out[0].port_name.as_str(), &out[0].payload),
            (WAN, &frame),
            "{what}: its ports read, bypassed as BGP"
        );
    }
}

/// A flow's counter counts in ingress: a frame egress then drops for its length is
/// counted; and bytes are counted as the chip's MAC sees them, with the 4-byte FCS.
#[tokio::test]
async fn flow_counters_count_as_the_chip_does() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let good = tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2);
    let mut too_long = good.clone();
    too_long[17] += 1;
    to_filter(&mut bench, LAN, good.clone()).await;
    bench.frames(&[], 1).await;
    bench.inject(LAN, too_long.clone()).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    let everything = bench
        .read_table(flows::IPV4.table)
        .await
        .into_iter()
        .find(|e| e.priority == 1)
        .unwrap()
        .counter_data
        .unwrap();
    assert_eq!(everything.packet_count, 2, "the dropped frame too");
    assert_eq!(
        everything.byte_count,
        (good.len() + 4 + too_long.len() + 4) as i64,
        "each with its FCS"
    );
}

/// An inner IPv4 header with options is balanced and matched on its addresses and protocol
/// (its ports, after the options, are not read), as the program's parser accepts it.
#[tokio::test]
async fn inner_ipv4_with_options_is_balanced_on_its_addresses() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    let inner = ipv4_with_options(6, 17, &[0; 8]);
    let frame = eth(&[], 0x0800, &ipv4([1, 1, 1, 1], [2, 2, 2, 2], 4, &inner));
    let (pair, core) = expected(
        BalancingMethod::Layer3,
        IpAddr::from([10, 0, 0, 1]),
        IpAddr::from([10, 0, 0, 2]),
        17,
        (0, 0),
    );
    let out = to_filter(&mut bench, LAN, frame.clone()).await;
    assert_eq!((out.port.as_str(), out.payload[15]), (PAIRS[pair].0, core));
    assert_eq!(out.payload, tagged(&frame, core));
}

/// IEEE 802.3: a type field up to 1500 is a length (an LLC header follows, and a frame
/// that ends inside it is malformed); 1536 and up an EtherType; between, neither.
#[tokio::test]
async fn lengths_up_to_1500_are_802_3_and_the_rest_ethertypes() {
    let (mut bench, _s) = site(Profile::StratumTofino).await;
    for value in [0u16, 46, 1023, 1024, 1500] {
        bench.inject(LAN, eth(&[], value, &[0x42, 0x42])).await;
    }
    assert!(
        bench.frames(&[], 0).await.is_empty(),
        "an LLC header cut short"
    );
    assert!(bench.drops().await.contains(&("malformed".to_string(), 5)));
    let llc = eth(&[], 1500, &[0x42, 0x42, 0x03]);
    bench.inject(LAN, llc.clone()).await;
    assert_eq!(
        bench.frames(&[WAN], 1).await[0].payload,
        llc,
        "a whole LLC header"
    );
    for value in [1501u16, 1535, 1536, 0x0801] {
        let frame = eth(&[], value, &[0x42, 0x42]);
        bench.inject(LAN, frame.clone()).await;
        let out = bench.frames(&[], 1).await;
        assert_eq!(
            (out[0].port_name.as_str(), &out[0].payload),
            (WAN, &frame),
            "type {value}: non-IP, to the link's other port"
        );
    }
}

/// From a pair, a frame that ends inside a keep-alive (30 bytes) or inside the tag is
/// malformed (reason 4), not a packet-in and not untagged (reason 2). A packet-out to a
/// port the chip does not have is lost in the traffic manager, counted by no drop reason.
#[tokio::test]
async fn frames_cut_short_and_packet_outs_nowhere() {
    let (mut bench, session) = site(Profile::StratumTofino).await;
    let wan = PAIRS[0].1;
    let keepalive = common::keepalive(0x0101, 1, common::PUNT, 0);
    assert_eq!(keepalive.len(), 30);
    bench.inject(wan, keepalive[..29].to_vec()).await;
    bench.inject(wan, eth(&[], 0x88b5, &[1])).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    assert!(
        bench.drops().await.contains(&("malformed".to_string(), 2)),
        "{:?}",
        bench.drops().await
    );
    let before = bench.drops().await;
    assert!(bench.map.name_of(511).is_none());
    let nowhere = common::packet_out(&bench.index, 511, keepalive);
    session.tx.send(nowhere).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(bench.frames(&[], 0).await.is_empty());
    assert_eq!(bench.drops().await, before, "no drop reason counts it");
}
