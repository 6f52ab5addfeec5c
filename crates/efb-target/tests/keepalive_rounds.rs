#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Keep-alive rounds as a controller runs them over P4Runtime: a multicast group per
//! unit, one packet-out a round, a copy out of every pair port named by its replica's id,
//! the returns through the emulated filters recorded in the keep-alive registers; the
//! registers and the replication engine's groups written, read, refused and kept as on
//! Stratum/Tofino.

mod common;

use std::time::Duration;

use common::site::{PAIRS, site};
use common::{
    Bench, PUNT, Session, keepalive, multicast_group, packet_out, packet_out_to_group,
    register_entity, replication_entity, write_entity,
};
use efb_p4info::names::{RegisterName, packet_io as io, registers as r};
use efb_target::Profile;
use p4runtime_proto::p4::v1::{self as p4, packet_replication_engine_entry as pre, update::Type};
use tonic::Code;

/// The unit the site's two pairs (ids 1 and 2) belong to, and its group.
const UNIT: u8 = 1;
const GROUP: u32 = 1;
/// Each pair's filter delay, ns.
const DELAYS: [u64; 2] = [300_000, 40_000];

/// The register cell of a pair and direction (0: out of its LAN port, 1: WAN): the device
/// port the keep-alive left by.
fn cell(pair: usize, direction: usize) -> usize {
    let (lan, wan) = PAIRS[pair - 1];
    let port = if direction == 0 { lan } else { wan };
    efb_p4info::PortMap::builtin()
        .unwrap()
        .resolve(port)
        .unwrap() as usize
}

/// The cells of the site's pairs.
fn site_cells() -> [usize; 4] {
    [cell(1, 0), cell(1, 1), cell(2, 0), cell(2, 1)]
}

/// The unit's replicas: every pair port (instance 0: a copy is named by its port).
fn replicas(bench: &Bench) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (lan, wan) in PAIRS.iter() {
        out.push((bench.port(lan), 0));
        out.push((bench.port(wan), 0));
    }
    out
}

fn register_id(bench: &Bench, name: RegisterName) -> u32 {
    bench.index.register_by_name(name).unwrap().id
}

/// The site, its filters' delays set and the unit's group written.
async fn rounds_site(profile: Profile) -> (Bench, Session) {
    let (mut bench, session) = site(profile).await;
    for ((lan, wan), delay) in PAIRS.iter().zip(DELAYS) {
        bench.set_filter(lan, wan, delay, 0.0, false).await;
    }
    let group = multicast_group(GROUP, &replicas(&bench));
    bench
        .write(vec![write_entity(Type::Insert, group)])
        .await
        .unwrap();
    (bench, session)
}

/// Round `seq` of the unit: one packet-out to its group, pair and direction left to egress.
async fn send_round(bench: &Bench, session: &Session, seq: u32, flags: u8) {
    let frame = keepalive(0, seq, flags, UNIT);
    session
        .tx
        .send(packet_out_to_group(&bench.index, GROUP, frame))
        .await
        .unwrap();
}

/// Waits (up to 2 s) until every cell of the site's pairs has counted `n` returns.
async fn returns_reach(bench: &mut Bench, n: u32) -> Vec<u32> {
    let mut returns = Vec::new();
    for _ in 0..40 {
        returns = bench.register(r::KEEPALIVE_RETURNS).await;
        if site_cells().iter().all(|c| returns[*c] == n) {
            return returns;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "returns never reached {n}: {:?}",
        site_cells().map(|c| returns[c])
    );
}

/// Waits (up to 2 s) until the unit's newest round is `seq`.
async fn round_entered(bench: &mut Bench, seq: u32) {
    for _ in 0..40 {
        if bench.register(r::KEEPALIVE_ROUNDS).await[usize::from(UNIT)] == seq {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("round {seq} never entered");
}

/// The unit's tallies of its even and odd rounds: (copies, counted) each.
async fn tallies(bench: &mut Bench) -> [(u32, u32); 2] {
    let copies = bench.register(r::KEEPALIVE_COPIES).await;
    let counted = bench.register(r::KEEPALIVE_COUNTED).await;
    let others = (0..copies.len()).filter(|c| c >> 1 != usize::from(UNIT));
    assert!(
        others.clone().all(|c| copies[c] == 0 && counted[c] == 0),
        "no other unit's tally moves"
    );
    let cell = |parity: usize| usize::from(UNIT) << 1 | parity;
    [0, 1].map(|p| (copies[cell(p)], counted[cell(p)]))
}

fn pair_ports() -> Vec<&'static str> {
    PAIRS.iter().flat_map(|(l, w)| [*l, *w]).collect()
}

#[tokio::test]
async fn one_packet_out_a_round_leaves_by_every_pair_port_and_comes_back_into_the_registers() {
    let (mut bench, mut session) = rounds_site(Profile::StratumTofino).await;
    let drops_before = bench.drops().await;
    send_round(&bench, &session, 5, 0).await;
    let out = bench.frames(&pair_ports(), 4).await;
    assert_eq!(out.len(), 4, "one copy per replica: {out:?}");
    let mut departures = Vec::new();
    for (lan, wan) in PAIRS.iter() {
        for port in [lan, wan] {
            let copy = out.iter().find(|f| f.port_name == *port).unwrap();
            let p = &copy.payload;
            assert_eq!(p.len(), 30);
            assert_eq!(
                &p[14..16],
                &(bench.port(port) as u16).to_be_bytes(),
                "{port}: the port it leaves by, written by egress"
            );
            assert_eq!(&p[16..20], &5u32.to_be_bytes(), "the round as sent");
            assert_eq!(&p[28..30], &[0, UNIT], "flags and unit as sent");
            departures.push(u64::from_be_bytes(p[20..28].try_into().unwrap()));
        }
    }
    let tx = departures[0];
    assert!(
        tx > 0 && departures.iter().all(|t| *t == tx),
        "one departure time, written by egress: {departures:?}"
    );

    let returns = returns_reach(&mut bench, 1).await;
    assert_eq!(returns.iter().sum::<u32>(), 4, "no other cell counts");
    let seq = bench.register(r::KEEPALIVE_SEQ).await;
    let path = bench.register(r::KEEPALIVE_PATH).await;
    let arrival = bench.register(r::KEEPALIVE_ARRIVAL).await;
    for (i, delay) in DELAYS.iter().enumerate() {
        for direction in 0..2 {
            let c = cell(i + 1, direction);
            assert_eq!(seq[c], 5, "cell {c}: the newest round back");
            assert_eq!(path[c] as u64, *delay, "cell {c}: the filter's delay");
            assert_eq!(
                arrival[c],
                ((tx + delay) >> 10) as u32,
                "cell {c}: when, on the chip's clock in 1.024 us units"
            );
        }
    }
    assert_eq!(
        bench.register(r::KEEPALIVE_ROUNDS).await[usize::from(UNIT)],
        5,
        "the unit's newest round, recorded as it entered"
    );
    assert_eq!(
        tallies(&mut bench).await,
        [(0, 0), (4, 4)],
        "round 5 is odd: 4 copies left, 4 counted"
    );
    // The returns end in the chip: no packet-in, nothing out, no drop reason.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), session.packet_in())
            .await
            .is_err(),
        "no packet-in without the punt flag"
    );
    assert!(bench.frames(&[], 0).await.is_empty());
    assert_eq!(bench.drops().await, drops_before);
}

#[tokio::test]
async fn a_duplicate_an_older_or_a_late_return_is_not_counted() {
    let (mut bench, session) = rounds_site(Profile::StratumTofino).await;
    let (lan, wan) = PAIRS[0];
    send_round(&bench, &session, 5, 0).await;
    let copy = bench.frames(&[lan], 1).await[0].payload.clone();
    // Returns as they would come back by the WAN port: left by the LAN port.
    let left_by = bench.port(lan) as u16;
    returns_reach(&mut bench, 1).await;
    let path = bench.register(r::KEEPALIVE_PATH).await;

    // The same return again (a filter that duplicated it), an older round, and a round the
    // unit has not sent: none counts, nothing of the cell changes.
    bench.inject(wan, copy.clone()).await;
    bench.inject(wan, keepalive(left_by, 4, 0, UNIT)).await;
    bench.inject(wan, keepalive(left_by, 6, 0, UNIT)).await;
    assert_eq!(bench.register(r::KEEPALIVE_RETURNS).await[cell(1, 0)], 1);
    assert_eq!(bench.register(r::KEEPALIVE_SEQ).await[cell(1, 0)], 5);
    assert_eq!(bench.register(r::KEEPALIVE_PATH).await, path);

    // The next round counts, once per return.
    send_round(&bench, &session, 6, 0).await;
    returns_reach(&mut bench, 2).await;

    // Late: round 7's returns come after round 8 entered. The filters are dead, and the
    // returns are injected as they would have come.
    for ((lan, wan), delay) in PAIRS.iter().zip(DELAYS) {
        bench.set_filter(lan, wan, delay, 0.0, true).await;
    }
    send_round(&bench, &session, 7, 0).await;
    send_round(&bench, &session, 8, 0).await;
    round_entered(&mut bench, 8).await;
    bench.inject(wan, keepalive(left_by, 7, 0, UNIT)).await;
    assert_eq!(
        bench.register(r::KEEPALIVE_RETURNS).await[cell(1, 0)],
        2,
        "round 7 came back after round 8 entered: late"
    );
    bench.inject(wan, keepalive(left_by, 8, 0, UNIT)).await;
    assert_eq!(bench.register(r::KEEPALIVE_RETURNS).await[cell(1, 0)], 3);
    assert_eq!(bench.register(r::KEEPALIVE_SEQ).await[cell(1, 0)], 8);
    // Even rounds 6 and 8: 8 copies, 4 + 1 counted; odd 5 and 7: 8 copies, 4 counted (the
    // duplicate, the older, the unsent and the late ones are not).
    assert_eq!(tallies(&mut bench).await, [(8, 5), (8, 4)]);
}

#[tokio::test]
async fn a_round_with_the_punt_flag_reaches_the_controller_as_well() {
    let (mut bench, mut session) = rounds_site(Profile::StratumTofino).await;
    send_round(&bench, &session, 9, PUNT).await;
    let info = bench.index.packet_in().unwrap().clone();
    let port_id = info.field(io::INGRESS_PORT).unwrap().id;
    let mut came = Vec::new();
    for _ in 0..4 {
        let pin = session.packet_in().await;
        let port = pin
            .metadata
            .iter()
            .find(|m| m.metadata_id == port_id)
            .map(|m| efb_target::bytes::to_u128(&m.value) as u32)
            .unwrap();
        assert_eq!(&pin.payload[16..20], &9u32.to_be_bytes());
        let left_by = u16::from_be_bytes([pin.payload[14], pin.payload[15]]);
        came.push((port, u32::from(left_by)));
    }
    came.sort_unstable();
    let mut sent_back: Vec<(u32, u32)> = Vec::new();
    for (lan, wan) in PAIRS.iter() {
        // Out of the LAN port, back by the WAN port, and the other way round.
        sent_back.push((bench.port(wan), bench.port(lan)));
        sent_back.push((bench.port(lan), bench.port(wan)));
    }
    sent_back.sort_unstable();
    assert_eq!(came, sent_back, "each return by its pair's other port");
    returns_reach(&mut bench, 1).await;
}

#[tokio::test]
async fn registers_are_read_by_cell_register_or_all_and_reset_by_modify() {
    let (mut bench, session) = rounds_site(Profile::StratumTofino).await;
    send_round(&bench, &session, 1, 0).await;
    returns_reach(&mut bench, 1).await;
    let returns = register_id(&bench, r::KEEPALIVE_RETURNS);
    let seq = register_id(&bench, r::KEEPALIVE_SEQ);

    let one = bench
        .read(vec![register_entity(
            returns,
            Some(cell(1, 1) as i64),
            None,
        )])
        .await
        .unwrap();
    assert_eq!(
        one,
        vec![register_entity(returns, Some(cell(1, 1) as i64), Some(1))],
        "one cell, its value a canonical bitstring"
    );
    let all = bench
        .read(vec![register_entity(0, None, None)])
        .await
        .unwrap();
    let cells: u64 = bench.index.registers().map(|r| r.size).sum();
    assert_eq!(
        all.len() as u64,
        cells,
        "register_id 0: every register's cells"
    );
    let wildcard_index = bench
        .read(vec![register_entity(0, Some(300), None)])
        .await
        .unwrap();
    let with_300 = bench.index.registers().filter(|r| r.size > 300).count();
    assert_eq!(
        wildcard_index.len(),
        with_300,
        "cell 300 of each register that has one"
    );

    // One cell, then the whole register (index unset: a reset).
    let modify = |id, index, value| write_entity(Type::Modify, register_entity(id, index, value));
    bench
        .write(vec![modify(returns, Some(3), Some(7))])
        .await
        .unwrap();
    assert_eq!(bench.register(r::KEEPALIVE_RETURNS).await[3], 7);
    bench
        .write(vec![modify(returns, None, Some(0))])
        .await
        .unwrap();
    assert!(
        bench
            .register(r::KEEPALIVE_RETURNS)
            .await
            .iter()
            .all(|v| *v == 0)
    );
    assert_eq!(
        bench.register(r::KEEPALIVE_SEQ).await[cell(1, 0)],
        1,
        "another register is left alone"
    );
    // With the newest rounds reset too, the same round counts again.
    bench.write(vec![modify(seq, None, Some(0))]).await.unwrap();
    send_round(&bench, &session, 1, 0).await;
    returns_reach(&mut bench, 1).await;
}

#[tokio::test]
async fn register_writes_and_reads_are_refused_naming_what_is_accepted() {
    let (mut bench, _session) = Bench::ready(Profile::StratumTofino).await;
    let returns = register_id(&bench, r::KEEPALIVE_RETURNS);
    let write = |kind, index, value| write_entity(kind, register_entity(returns, index, value));
    for kind in [Type::Insert, Type::Delete] {
        let (code, message) = bench.write_one(write(kind, Some(0), Some(1))).await;
        assert_eq!(code, Code::InvalidArgument, "{message}");
        assert!(message.contains("MODIFY"), "{message}");
    }
    let cases: Vec<(p4::Update, Code, &[&str])> = vec![
        (
            write_entity(Type::Modify, register_entity(4242, Some(0), Some(1))),
            Code::NotFound,
            &["4242", "EfbEgress.keepalive_returns"],
        ),
        (
            write_entity(Type::Modify, register_entity(0, Some(0), Some(1))),
            Code::InvalidArgument,
            &["register_id 0"],
        ),
        (
            write(Type::Modify, Some(512), Some(1)),
            Code::OutOfRange,
            &["512 cells", "0..511"],
        ),
        (
            write(Type::Modify, Some(-1), Some(1)),
            Code::OutOfRange,
            &["-1", "0..511"],
        ),
        (
            write(Type::Modify, Some(0), Some(1 << 32)),
            Code::OutOfRange,
            &["0x0100000000", "32 bits"],
        ),
        (
            write(Type::Modify, Some(0), None),
            Code::InvalidArgument,
            &["needs data", "bitstring"],
        ),
    ];
    for (update, want, words) in cases {
        let (code, message) = bench.write_one(update).await;
        assert_eq!(code, want, "{message}");
        for w in words {
            assert!(message.contains(w), "{w:?} in {message:?}");
        }
    }
    // Not a bitstring; a padded one (Stratum wants the shortest form).
    let mut entity = register_entity(returns, Some(0), None);
    if let Some(p4::entity::Entity::RegisterEntry(e)) = &mut entity.entity {
        e.data = Some(p4::P4Data {
            data: Some(p4::p4_data::Data::Bool(true)),
        });
    }
    let (code, message) = bench.write_one(write_entity(Type::Modify, entity)).await;
    assert_eq!(code, Code::InvalidArgument, "{message}");
    assert!(
        message.contains("must be a bitstring, not a bool"),
        "{message}"
    );
    let mut entity = register_entity(returns, Some(0), None);
    if let Some(p4::entity::Entity::RegisterEntry(e)) = &mut entity.entity {
        e.data = Some(p4::P4Data {
            data: Some(p4::p4_data::Data::Bitstring(vec![0, 1])),
        });
    }
    let (code, message) = bench.write_one(write_entity(Type::Modify, entity)).await;
    assert_eq!(code, Code::InvalidArgument, "{message}");
    assert!(message.contains("not canonical"), "{message}");
    assert!(
        bench
            .register(r::KEEPALIVE_RETURNS)
            .await
            .iter()
            .all(|v| *v == 0),
        "nothing refused was written"
    );

    let err = bench
        .read(vec![register_entity(4242, None, None)])
        .await
        .unwrap_err();
    let details = common::WriteError::from(err).details;
    assert_eq!(details[0].canonical_code, Code::NotFound as i32);
    let err = bench
        .read(vec![register_entity(returns, Some(600), None)])
        .await
        .unwrap_err();
    let details = common::WriteError::from(err).details;
    assert_eq!(details[0].canonical_code, Code::OutOfRange as i32);
    assert!(details[0].message.contains("512 cells"), "{details:?}");
}

#[tokio::test]
async fn multicast_groups_are_inserted_modified_deleted_and_read_as_stratum_does() {
    let (mut bench, _session) = Bench::ready(Profile::StratumTofino).await;
    let (a, b, c) = (bench.port("p4-0"), bench.port("p4-3"), bench.port("p5-0"));
    let group = |id, replicas: &[(u32, u32)]| multicast_group(id, replicas);
    bench
        .write(vec![write_entity(
            Type::Insert,
            group(7, &[(b, 0x201), (a, 0x100), (c, 0x100)]),
        )])
        .await
        .unwrap();
    let mut sorted = vec![(a, 0x100), (c, 0x100), (b, 0x201)];
    sorted.sort_by_key(|(port, instance)| (*instance, *port));
    let read = bench.multicast_groups(7).await.unwrap();
    assert_eq!(
        vec![p4::Entity {
            entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
                p4::PacketReplicationEngineEntry {
                    r#type: Some(pre::Type::MulticastGroupEntry(read[0].clone())),
                },
            )),
        }],
        vec![group(7, &sorted)],
        "replicas read back by instance, then port"
    );

    let (code, message) = bench
        .write_one(write_entity(Type::Insert, group(7, &[])))
        .await;
    assert_eq!(code, Code::AlreadyExists, "{message}");
    assert!(message.contains("MODIFY"), "{message}");
    bench
        .write(vec![write_entity(Type::Modify, group(7, &[(c, 5)]))])
        .await
        .unwrap();
    let read = bench.multicast_groups(7).await.unwrap();
    assert_eq!(read[0].replicas.len(), 1, "MODIFY replaces the replicas");
    bench
        .write(vec![write_entity(Type::Insert, group(3, &[(a, 1)]))])
        .await
        .unwrap();
    let ids: Vec<u32> = bench
        .multicast_groups(0)
        .await
        .unwrap()
        .iter()
        .map(|g| g.multicast_group_id)
        .collect();
    assert_eq!(ids, vec![3, 7], "id 0 reads every group");
    bench
        .write(vec![write_entity(Type::Delete, group(7, &[]))])
        .await
        .unwrap();
    for kind in [Type::Modify, Type::Delete] {
        let (code, message) = bench.write_one(write_entity(kind, group(7, &[]))).await;
        assert_eq!(code, Code::NotFound, "{message}");
        assert!(message.contains("multicast group 7"), "{message}");
    }
    let err = bench.multicast_groups(7).await.unwrap_err();
    let details = common::WriteError::from(err).details;
    assert_eq!(details[0].canonical_code, Code::NotFound as i32);
}

#[tokio::test]
async fn replication_entries_are_refused_naming_what_is_accepted() {
    let (mut bench, _session) = Bench::ready(Profile::StratumTofino).await;
    let a = bench.port("p4-0");
    assert!(bench.map.name_of(511).is_none());
    let too_many: Vec<(u32, u32)> = (0..1025).map(|i| (a, i)).collect();
    let cases: Vec<(p4::Entity, Code, &[&str])> = vec![
        (
            multicast_group(0, &[]),
            Code::InvalidArgument,
            &["1..65535"],
        ),
        (
            multicast_group(65536, &[]),
            Code::InvalidArgument,
            &["65536", "1..65535"],
        ),
        (
            multicast_group(2, &[(511, 0)]),
            Code::InvalidArgument,
            &["replica 0", "egress_port 511", "front-panel"],
        ),
        (
            multicast_group(2, &[(a, 1), (a, 2), (a, 1)]),
            Code::InvalidArgument,
            &["replica 2", "once per group"],
        ),
        (
            multicast_group(2, &[(a, 65536)]),
            Code::InvalidArgument,
            &["instance 65536", "0..65535"],
        ),
        (
            multicast_group(2, &too_many),
            Code::ResourceExhausted,
            &["1025 replicas", "1024"],
        ),
        (
            replication_entity(pre::Type::CloneSessionEntry(p4::CloneSessionEntry {
                session_id: 1,
                ..Default::default()
            })),
            Code::Unimplemented,
            &["clone session", "multicast_group_entry"],
        ),
    ];
    for (entity, want, words) in cases {
        let (code, message) = bench.write_one(write_entity(Type::Insert, entity)).await;
        assert_eq!(code, want, "{message}");
        for w in words {
            assert!(message.contains(w), "{w:?} in {message:?}");
        }
    }
    let mut by_bytes = multicast_group(2, &[]);
    if let Some(p4::entity::Entity::PacketReplicationEngineEntry(e)) = &mut by_bytes.entity
        && let Some(pre::Type::MulticastGroupEntry(g)) = &mut e.r#type
    {
        g.replicas.push(p4::Replica {
            port_kind: Some(p4::replica::PortKind::Port(b"p4-0".to_vec())),
            instance: 0,
        });
    }
    let (code, message) = bench.write_one(write_entity(Type::Insert, by_bytes)).await;
    assert_eq!(code, Code::InvalidArgument, "{message}");
    assert!(
        message.contains("port translation") && message.contains("egress_port"),
        "{message}"
    );
    assert!(
        bench.multicast_groups(0).await.unwrap().is_empty(),
        "nothing refused was written"
    );
}

/// An atomic batch (the spec profile has them) takes back its registers and groups too.
#[tokio::test]
async fn a_failed_atomic_batch_takes_back_its_register_and_group_writes() {
    let (mut bench, _session) = Bench::ready(Profile::Spec).await;
    let returns = register_id(&bench, r::KEEPALIVE_RETURNS);
    let a = bench.port("p4-0");
    let updates = vec![
        write_entity(Type::Insert, multicast_group(5, &[(a, 1)])),
        write_entity(Type::Modify, register_entity(returns, None, Some(9))),
        write_entity(Type::Modify, register_entity(returns, Some(1), Some(3))),
        write_entity(Type::Insert, multicast_group(6, &[(511, 1)])),
    ];
    let rollback = p4::write_request::Atomicity::RollbackOnError as i32;
    let err = bench.write_as(10, updates, rollback).await.unwrap_err();
    assert_eq!(err.details[3].canonical_code, Code::InvalidArgument as i32);
    assert_eq!(err.details[0].canonical_code, Code::Aborted as i32);
    assert!(bench.multicast_groups(0).await.unwrap().is_empty());
    assert!(
        bench
            .register(r::KEEPALIVE_RETURNS)
            .await
            .iter()
            .all(|v| *v == 0)
    );
}

#[tokio::test]
async fn groups_and_registers_survive_a_restart_with_tables_only() {
    let (mut bench, session) = rounds_site(Profile::StratumTofino).await;
    send_round(&bench, &session, 3, 0).await;
    returns_reach(&mut bench, 1).await;
    drop(session);
    let restart = |keep_tables| efb_target::control_proto::RestartRequest { keep_tables };
    bench.control.restart(restart(true)).await.unwrap();
    assert_eq!(bench.multicast_groups(GROUP).await.unwrap().len(), 1);
    assert_eq!(bench.register(r::KEEPALIVE_SEQ).await[cell(1, 0)], 3);
    // The new controller's next round goes out by the group kept.
    let mut session = bench.arbitrate(10, "").await;
    assert_eq!(session.arbitration_code().await, Code::Ok as i32);
    bench.frames(&[], 0).await;
    send_round(&bench, &session, 4, 0).await;
    assert_eq!(bench.frames(&pair_ports(), 4).await.len(), 4);
    returns_reach(&mut bench, 2).await;

    // A new pipeline starts without groups, its registers at 0.
    bench.set_pipeline(10).await.unwrap();
    assert!(bench.multicast_groups(0).await.unwrap().is_empty());
    assert!(
        bench
            .register(r::KEEPALIVE_SEQ)
            .await
            .iter()
            .all(|v| *v == 0)
    );
    let group = multicast_group(GROUP, &replicas(&bench));
    bench
        .write(vec![write_entity(Type::Insert, group)])
        .await
        .unwrap();
    // A restart without tables forgets them with the pipeline.
    bench.control.restart(restart(false)).await.unwrap();
    let mut session = bench.arbitrate(10, "").await;
    assert_eq!(session.arbitration_code().await, Code::Ok as i32);
    bench.set_pipeline(10).await.unwrap();
    assert!(bench.multicast_groups(0).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_packet_out_to_a_missing_group_is_lost_without_a_drop_reason() {
    let (mut bench, session) = site(Profile::StratumTofino).await;
    let before = bench.drops().await;
    session
        .tx
        .send(packet_out_to_group(&bench.index, 9, keepalive(0, 11, 0, 9)))
        .await
        .unwrap();
    // A round enters its unit as its copies leave (egress): without a group, none does.
    // A packet-out behind it on the same stream, out of a port, fences the check.
    let (lan, _) = PAIRS[0];
    session
        .tx
        .send(packet_out(
            &bench.index,
            bench.port(lan),
            keepalive(0, 12, 0, 9),
        ))
        .await
        .unwrap();
    assert_eq!(bench.frames(&[lan], 1).await.len(), 1, "the fence left");
    assert_eq!(
        bench.register(r::KEEPALIVE_ROUNDS).await[9],
        0,
        "no copy left: the round did not enter; a unicast keep-alive is no round"
    );
    assert!(
        bench.frames(&[], 0).await.is_empty(),
        "nothing left the chip"
    );
    assert_eq!(bench.drops().await, before, "no drop reason counts it");
}
