#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The P4Runtime surface of the target over real gRPC: arbitration, pipeline config,
//! writes with their refusals (per update, in the status details), reads, counters, the
//! two strictness profiles, restarts, and garbage on the port.

mod common;

use common::{Bench, M, b, entity, entry, insert, update};
use efb_p4info::names::flows::{IPV4, IPV6};
use efb_p4info::names::{actions as a, fields as f, tables as t};
use efb_target::Profile;
use p4runtime_proto::p4::v1::{
    self as p4, set_forwarding_pipeline_config_request::Action as SetAction, update::Type,
};
use tonic::Code;

fn flow(bench: &Bench, priority: i32, dst_port: u16) -> p4::TableEntry {
    entry(
        &bench.index,
        IPV4.table,
        &[
            (f::FRAME_CLASS, M::Ternary(1, 0xff)),
            (f::L4_DST_PORT, M::Ternary(u128::from(dst_port), 0xffff)),
        ],
        IPV4.bypass,
        &[],
        priority,
    )
}

fn link_ports(bench: &Bench, link: u128, lan: u32, wan: u32) -> p4::TableEntry {
    entry(
        &bench.index,
        t::LINK_PORTS,
        &[(f::LINK_ID, M::Exact(link))],
        a::SET_LINK_PORTS,
        &[
            (f::LAN_PORT, u128::from(lan)),
            (f::WAN_PORT, u128::from(wan)),
        ],
        0,
    )
}

#[tokio::test]
async fn arbitration_elects_the_highest_id_and_remembers_it() {
    let mut bench = Bench::start(Profile::StratumTofino).await;
    let mut first = bench.arbitrate(10, "").await;
    assert_eq!(first.arbitration_code().await, Code::Ok as i32);
    let mut backup = bench.arbitrate(5, "").await;
    assert_eq!(backup.arbitration_code().await, Code::AlreadyExists as i32);

    // Only the primary may set the pipeline or write.
    let err = bench.set_pipeline(5).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    bench.set_pipeline(10).await.unwrap();
    let err = bench
        .write_as(5, vec![insert(link_ports(&bench, 1, 1, 2))], 0)
        .await
        .unwrap_err();
    assert_eq!(err.status.code(), Code::PermissionDenied);

    // The same election id twice for a role ends the newcomer's stream.
    let mut dup = bench.arbitrate(10, "").await;
    assert_eq!(dup.next().await.unwrap_err().code(), Code::InvalidArgument);

    // The primary leaves: the backup hears there is none, and still may not write.
    drop(first);
    assert_eq!(backup.arbitration_code().await, Code::NotFound as i32);
    let err = bench
        .write_as(5, vec![insert(link_ports(&bench, 1, 1, 2))], 0)
        .await
        .unwrap_err();
    assert_eq!(err.status.code(), Code::PermissionDenied);

    // The highest id (10) is remembered: 7 stays backup; 11 takes over and the others hear.
    let mut seven = bench.arbitrate(7, "").await;
    assert_eq!(seven.arbitration_code().await, Code::NotFound as i32);
    let mut eleven = bench.arbitrate(11, "").await;
    assert_eq!(eleven.arbitration_code().await, Code::Ok as i32);
    assert_eq!(backup.arbitration_code().await, Code::AlreadyExists as i32);
    bench
        .write_as(11, vec![insert(link_ports(&bench, 1, 1, 2))], 0)
        .await
        .unwrap();

    // A stream for another device is ended with NOT_FOUND.
    let mut other = bench.open_stream().await;
    other.tx.send(common::arbitration(99, 1, "")).await.unwrap();
    assert_eq!(other.next().await.unwrap_err().code(), Code::NotFound);
}

#[tokio::test]
async fn roles_elect_separately() {
    let mut bench = Bench::start(Profile::StratumTofino).await;
    let mut default = bench.arbitrate(10, "").await;
    assert_eq!(default.arbitration_code().await, Code::Ok as i32);
    let mut other = bench.arbitrate(3, "liveness").await;
    assert_eq!(other.arbitration_code().await, Code::Ok as i32);
    // A write for a role nobody arbitrated for names no role of the device.
    let req = p4::WriteRequest {
        device_id: 1,
        role: "nobody".into(),
        election_id: Some(p4::Uint128 { high: 0, low: 3 }),
        ..Default::default()
    };
    assert_eq!(
        bench.p4rt.write(req).await.unwrap_err().code(),
        Code::NotFound
    );
}

#[tokio::test]
async fn rpc_wide_checks_come_first() {
    let mut bench = Bench::start(Profile::StratumTofino).await;
    let mut s = bench.arbitrate(10, "").await;
    assert_eq!(s.arbitration_code().await, Code::Ok as i32);
    let mut req = p4::WriteRequest {
        device_id: 7,
        election_id: Some(p4::Uint128 { high: 0, low: 10 }),
        ..Default::default()
    };
    assert_eq!(
        bench.p4rt.write(req.clone()).await.unwrap_err().code(),
        Code::NotFound
    );
    req.device_id = 1;
    assert_eq!(
        bench.p4rt.write(req).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    let read = bench
        .read(vec![entity(p4::TableEntry::default())])
        .await
        .unwrap_err();
    assert_eq!(read.code(), Code::FailedPrecondition);
    let get = p4::GetForwardingPipelineConfigRequest {
        device_id: 1,
        response_type: 0,
    };
    assert!(
        bench
            .p4rt
            .get_forwarding_pipeline_config(get)
            .await
            .unwrap()
            .into_inner()
            .config
            .is_none()
    );
}

#[tokio::test]
async fn every_bad_update_is_refused_with_its_code() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    let good = flow(&bench, 10, 179);
    assert_eq!(bench.write_one(insert(good.clone())).await.0, Code::Ok);

    let mut cases: Vec<(&str, p4::Update, Code)> = Vec::new();
    let mut e = good.clone();
    e.table_id = 0x0200_00ff;
    cases.push(("unknown table id", insert(e), Code::InvalidArgument));
    let mut e = good.clone();
    e.r#match[0].field_id = 99;
    cases.push(("unknown field id", insert(e), Code::InvalidArgument));
    let mut e = flow(&bench, 11, 179);
    e.r#match[0].field_match_type = Some(p4::field_match::FieldMatchType::Ternary(
        p4::field_match::Ternary {
            value: vec![1, 0],
            mask: vec![1, 0xff],
        },
    ));
    cases.push(("value wider than the field", insert(e), Code::OutOfRange));
    let mut e = flow(&bench, 12, 179);
    e.r#match[0].field_match_type = Some(p4::field_match::FieldMatchType::Ternary(
        p4::field_match::Ternary {
            value: vec![0, 1],
            mask: vec![0xff],
        },
    ));
    cases.push(("non-canonical bytes", insert(e), Code::InvalidArgument));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::IPV4_DST, M::Ternary(0x0a00_0001, 0xffff_ff00))],
        IPV4.bypass,
        &[],
        13,
    );
    cases.push((
        "value bits outside the mask",
        insert(e),
        Code::InvalidArgument,
    ));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::IPV4_DST, M::Ternary(0, 0))],
        IPV4.bypass,
        &[],
        14,
    );
    cases.push((
        "zero mask instead of leaving the field out",
        insert(e),
        Code::InvalidArgument,
    ));
    // The flow tables are all ternary (ranges are written as prefixes).
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::L4_DST_PORT, M::Range(1024, 2047))],
        IPV4.bypass,
        &[],
        15,
    );
    cases.push(("range on a ternary field", insert(e), Code::InvalidArgument));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Ternary(3, 0xff))],
        IPV6.bypass,
        &[],
        16,
    );
    cases.push((
        "action of another flow table",
        insert(e),
        Code::InvalidArgument,
    ));
    cases.push((
        "missing priority",
        insert(flow(&bench, 0, 80)),
        Code::InvalidArgument,
    ));
    cases.push((
        "priority of 2^24",
        insert(flow(&bench, 1 << 24, 80)),
        Code::InvalidArgument,
    ));
    let mut e = link_ports(&bench, 2, 1, 2);
    e.priority = 5;
    cases.push((
        "priority on an exact table",
        insert(e),
        Code::InvalidArgument,
    ));
    cases.push((
        "duplicate insert",
        insert(good.clone()),
        Code::AlreadyExists,
    ));
    cases.push((
        "modify of a missing entry",
        update(Type::Modify, flow(&bench, 10, 443)),
        Code::NotFound,
    ));
    cases.push((
        "delete of a missing entry",
        update(Type::Delete, flow(&bench, 10, 443)),
        Code::NotFound,
    ));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Exact(1))],
        IPV4.bypass,
        &[],
        17,
    );
    cases.push((
        "exact match on a ternary field",
        insert(e),
        Code::InvalidArgument,
    ));
    let e = entry(
        &bench.index,
        t::LINK_PORTS,
        &[],
        a::SET_LINK_PORTS,
        &[(f::LAN_PORT, 1), (f::WAN_PORT, 2)],
        0,
    );
    cases.push(("missing exact field", insert(e), Code::InvalidArgument));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Ternary(2, 0xff))],
        a::TO_PAIR,
        &[(f::PAIR_ID, 1), (f::CORE, 0)],
        18,
    );
    cases.push(("action of another table", insert(e), Code::InvalidArgument));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Ternary(2, 0xff))],
        IPV4.to_unit.unwrap(),
        &[],
        19,
    );
    cases.push(("missing action parameter", insert(e), Code::InvalidArgument));
    let e = entry(
        &bench.index,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Ternary(2, 0xff))],
        IPV4.to_unit.unwrap(),
        &[(f::UNIT_ID, 256)],
        20,
    );
    cases.push(("parameter wider than declared", insert(e), Code::OutOfRange));
    let e = entry(
        &bench.index,
        t::LINK_PORTS,
        &[(f::LINK_ID, M::Exact(1))],
        a::LINK_MISSING,
        &[],
        0,
    );
    cases.push((
        "default-only action in an entry",
        insert(e),
        Code::PermissionDenied,
    ));
    let mut e = entry(&bench.index, t::INGRESS_PORT, &[], a::UNKNOWN_PORT, &[], 0);
    e.is_default_action = true;
    cases.push((
        "modify of a const default action",
        update(Type::Modify, e),
        Code::PermissionDenied,
    ));
    let mut e = entry(&bench.index, IPV4.table, &[], IPV4.drop, &[], 0);
    e.is_default_action = true;
    cases.push((
        "insert of a default entry",
        insert(e),
        Code::InvalidArgument,
    ));
    let e = entry(&bench.index, t::BALANCING, &[], a::HASH_LAYER4, &[], 0);
    cases.push((
        "insert into a keyless table",
        insert(e),
        Code::InvalidArgument,
    ));
    cases.push((
        "no entity",
        p4::Update {
            r#type: Type::Insert as i32,
            entity: None,
        },
        Code::InvalidArgument,
    ));
    cases.push((
        "update type unspecified",
        update(Type::Unspecified, flow(&bench, 30, 1)),
        Code::InvalidArgument,
    ));

    for (what, u, code) in cases {
        let (got, message) = bench.write_one(u).await;
        assert_eq!(got, code, "{what}: {message}");
        assert!(!message.is_empty(), "{what}: refusals explain themselves");
    }
    // Nothing but the one good entry went in.
    assert_eq!(bench.read_table(IPV4.table).await.len(), 1);
}

/// Range fields (efb.p4's flow tables have none: ranges are written as prefixes) are still
/// checked on a program that has them: a full range is a don't-care to leave out, and low
/// may not be above high.
#[tokio::test]
async fn range_fields_are_checked_on_a_program_that_has_them() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    let p4info = efb_p4info::p4info_from_text(
        r#"
tables { preamble { id: 33554540 name: "t_range" alias: "t_range" }
  match_fields { id: 1 name: "port" bitwidth: 16 match_type: RANGE }
  action_refs { id: 16777326 } size: 16 }
actions { preamble { id: 16777326 name: "hit" alias: "hit" } }
"#,
    )
    .unwrap();
    bench
        .set_config(10, p4info.clone(), SetAction::VerifyAndCommit)
        .await
        .unwrap();
    // Another program's names: by the ids of its P4Info above.
    let range = |lo: u128, hi: u128| {
        insert(p4::TableEntry {
            table_id: 33554540,
            r#match: vec![p4::FieldMatch {
                field_id: 1,
                field_match_type: Some(p4::field_match::FieldMatchType::Range(
                    p4::field_match::Range {
                        low: b(lo),
                        high: b(hi),
                    },
                )),
            }],
            action: Some(p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(p4::Action {
                    action_id: 16777326,
                    params: vec![],
                })),
            }),
            priority: 10,
            ..Default::default()
        })
    };
    for (what, update, code) in [
        (
            "full range instead of leaving the field out",
            range(0, 65535),
            Code::InvalidArgument,
        ),
        ("low above high", range(80, 79), Code::InvalidArgument),
        ("a range", range(1024, 2047), Code::Ok),
    ] {
        let (got, message) = bench.write_one(update).await;
        assert_eq!(got, code, "{what}: {message}");
    }
}

#[tokio::test]
async fn a_batch_reports_each_update_and_continues() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    let batch = vec![
        insert(flow(&bench, 10, 22)),
        insert(flow(&bench, 10, 22)),
        insert(flow(&bench, 11, 23)),
    ];
    let err = bench.write(batch).await.unwrap_err();
    assert_eq!(err.status.code(), Code::Unknown);
    let codes: Vec<i32> = err.details.iter().map(|e| e.canonical_code).collect();
    assert_eq!(
        codes,
        vec![Code::Ok as i32, Code::AlreadyExists as i32, Code::Ok as i32]
    );
    assert_eq!(bench.read_table(IPV4.table).await.len(), 2);
}

#[tokio::test]
async fn a_huge_failed_batch_reaches_the_client_with_its_reason() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    bench
        .write(vec![insert(flow(&bench, 10, 22))])
        .await
        .unwrap();
    // 20 000 duplicates: their per-update errors would be megabytes in the trailer.
    let batch = vec![insert(flow(&bench, 10, 22)); 20_000];
    let err = bench.write(batch).await.unwrap_err();
    assert_eq!(err.status.code(), Code::Unknown, "{:?}", err.status);
    let message = err.status.message();
    assert!(
        message.starts_with("Write failure: 20000 of 20000 failed")
            && message.contains("the first: update 0: AlreadyExists"),
        "{message}"
    );
    assert!(err.details.is_empty());
}

#[tokio::test]
async fn stratum_refuses_what_tofino_cannot_do() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    for atomicity in [1, 2] {
        let err = bench
            .write_as(10, vec![insert(flow(&bench, 10, 22))], atomicity)
            .await
            .unwrap_err();
        assert_eq!(
            err.status.code(),
            Code::Unimplemented,
            "atomicity {atomicity}"
        );
    }
    let err = bench
        .set_config(
            10,
            efb_p4info::p4info().unwrap(),
            SetAction::ReconcileAndCommit,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    // A filtered wildcard read.
    let q = p4::TableEntry {
        table_id: bench.index.table_by_name(IPV4.table).unwrap().id,
        priority: 10,
        ..Default::default()
    };
    let err = common::WriteError::from(bench.read(vec![entity(q)]).await.unwrap_err());
    assert_eq!(err.status.code(), Code::Unknown);
    assert_eq!(err.details[0].canonical_code, Code::Unimplemented as i32);
    // The OPTIONAL match kind, and member weights other than 1.
    let err = bench
        .set_config(10, test_p4info(true), SetAction::VerifyAndCommit)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("optional"), "{}", err.message());
    two_members_on_the_test_program(&mut bench, false).await;
    let (code, msg) = bench
        .write_one(group_update(Type::Insert, &[(1, 1), (2, 2)]))
        .await;
    assert_eq!(code, Code::InvalidArgument, "{msg}");
    assert_eq!(
        bench
            .write_one(group_update(Type::Insert, &[(1, 1), (2, 1)]))
            .await
            .0,
        Code::Ok
    );
}

#[tokio::test]
async fn the_spec_profile_allows_what_the_specification_allows() {
    let (mut bench, _s) = Bench::ready(Profile::Spec).await;
    // Zero-padded bytes are accepted and read back canonical.
    let mut e = flow(&bench, 1 << 24, 22);
    e.r#match[0].field_match_type = Some(p4::field_match::FieldMatchType::Ternary(
        p4::field_match::Ternary {
            value: vec![0, 1],
            mask: vec![0, 0xff],
        },
    ));
    bench.write(vec![insert(e)]).await.unwrap();
    let read = bench.read_table(IPV4.table).await;
    assert_eq!(read[0].priority, 1 << 24);
    match &read[0].r#match[0].field_match_type {
        Some(p4::field_match::FieldMatchType::Ternary(t)) => {
            assert_eq!((t.value.clone(), t.mask.clone()), (vec![1], vec![0xff]))
        }
        other => panic!("{other:?}"),
    }
    // ROLLBACK_ON_ERROR: all or nothing.
    let batch = vec![
        insert(flow(&bench, 5, 80)),
        insert(flow(&bench, 1 << 24, 22)),
    ];
    let err = bench.write_as(10, batch, 1).await.unwrap_err();
    let codes: Vec<i32> = err.details.iter().map(|e| e.canonical_code).collect();
    assert_eq!(
        codes,
        vec![Code::Aborted as i32, Code::AlreadyExists as i32]
    );
    assert_eq!(
        bench.read_table(IPV4.table).await.len(),
        1,
        "the first insert was rolled back"
    );
    bench
        .write_as(10, vec![insert(flow(&bench, 5, 80))], 2)
        .await
        .unwrap();
    // Filtered wildcard reads.
    let q = p4::TableEntry {
        table_id: bench.index.table_by_name(IPV4.table).unwrap().id,
        priority: 5,
        ..Default::default()
    };
    assert_eq!(bench.read(vec![entity(q)]).await.unwrap().len(), 1);
    // RECONCILE_AND_COMMIT keeps the entries.
    bench
        .set_config(
            10,
            efb_p4info::p4info().unwrap(),
            SetAction::ReconcileAndCommit,
        )
        .await
        .unwrap();
    assert_eq!(bench.read_table(IPV4.table).await.len(), 2);
    // OPTIONAL and weights above 1.
    two_members_on_the_test_program(&mut bench, true).await;
    assert_eq!(
        bench
            .write_one(group_update(Type::Insert, &[(1, 1), (2, 3)]))
            .await
            .0,
        Code::Ok
    );
    let (code, _) = bench.write_one(member_update(Type::Delete, 2)).await;
    assert_eq!(
        code,
        Code::FailedPrecondition,
        "a member in a group cannot go"
    );
}

#[tokio::test]
async fn reads_return_what_was_written_with_counters() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    let mut e = flow(&bench, 10, 179);
    e.metadata = b"flow bgp".to_vec();
    bench
        .write(vec![insert(e.clone()), insert(link_ports(&bench, 1, 8, 9))])
        .await
        .unwrap();
    // Everything, from every table.
    let all = bench
        .read(vec![entity(p4::TableEntry::default())])
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    // One entry by its key, with read-write symmetry.
    let mut q = e.clone();
    q.action = None;
    q.metadata.clear();
    let one = bench.read(vec![entity(q)]).await.unwrap();
    assert_eq!(one, vec![entity(e.clone())]);
    // Counters start at zero and can be set (MODIFY of the direct counter).
    let dc = p4::DirectCounterEntry {
        table_entry: Some(p4::TableEntry {
            action: None,
            metadata: vec![],
            ..e.clone()
        }),
        data: Some(p4::CounterData {
            byte_count: 64,
            packet_count: 1,
        }),
    };
    let u = p4::Update {
        r#type: Type::Modify as i32,
        entity: Some(p4::Entity {
            entity: Some(p4::entity::Entity::DirectCounterEntry(dc.clone())),
        }),
    };
    bench.write(vec![u]).await.unwrap();
    let flows = bench.read_table(IPV4.table).await;
    assert_eq!(
        flows[0].counter_data,
        Some(p4::CounterData {
            byte_count: 64,
            packet_count: 1
        })
    );
    let q = p4::Entity {
        entity: Some(p4::entity::Entity::DirectCounterEntry(
            p4::DirectCounterEntry::default(),
        )),
    };
    assert_eq!(bench.read(vec![q]).await.unwrap().len(), 1);
    // The default entry, as the program set it, and a changed one.
    let table_id = bench.index.table_by_name(IPV4.table).unwrap().id;
    let q = p4::TableEntry {
        table_id,
        is_default_action: true,
        ..Default::default()
    };
    let default = bench.read(vec![entity(q.clone())]).await.unwrap();
    let bypass = bench.index.action_by_name(IPV4.bypass).unwrap().id;
    assert!(
        matches!(&default[0].entity, Some(p4::entity::Entity::TableEntry(t)) if matches!(&t.action, Some(p4::TableAction { r#type: Some(p4::table_action::Type::Action(x)) }) if x.action_id == bypass))
    );
    let mut d = entry(&bench.index, IPV4.table, &[], IPV4.drop, &[], 0);
    d.is_default_action = true;
    bench
        .write(vec![update(Type::Modify, d.clone())])
        .await
        .unwrap();
    let default = bench.read(vec![entity(q)]).await.unwrap();
    assert_eq!(default, vec![entity(d)]);
    // table_id 0 with a filter is a bad request; the good request of the batch is answered.
    let bad = p4::TableEntry {
        priority: 3,
        ..Default::default()
    };
    let err = common::WriteError::from(
        bench
            .read(vec![entity(bad), entity(p4::TableEntry::default())])
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.details
            .iter()
            .map(|e| e.canonical_code)
            .collect::<Vec<_>>(),
        vec![Code::InvalidArgument as i32, 0]
    );
    // Indexed counters: the drop reasons.
    let q = p4::Entity {
        entity: Some(p4::entity::Entity::CounterEntry(p4::CounterEntry::default())),
    };
    assert_eq!(bench.read(vec![q]).await.unwrap().len(), 8);
}

#[tokio::test]
async fn pipeline_config_round_trips_and_can_be_saved_then_committed() {
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    let get = |t: i32| p4::GetForwardingPipelineConfigRequest {
        device_id: 1,
        response_type: t,
    };
    let all = bench
        .p4rt
        .get_forwarding_pipeline_config(get(0))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert_eq!(all.p4info.unwrap(), efb_p4info::p4info().unwrap());
    assert_eq!(all.cookie.unwrap().cookie, 42);
    let cookie = bench
        .p4rt
        .get_forwarding_pipeline_config(get(1))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(
        cookie.p4info.is_none() && cookie.p4_device_config.is_empty() && cookie.cookie.is_some()
    );
    bench
        .write(vec![insert(flow(&bench, 10, 179))])
        .await
        .unwrap();
    bench
        .set_config(10, efb_p4info::p4info().unwrap(), SetAction::VerifyAndSave)
        .await
        .unwrap();
    assert_eq!(
        bench.read_table(IPV4.table).await.len(),
        1,
        "saving leaves the forwarding state"
    );
    let commit = p4::SetForwardingPipelineConfigRequest {
        device_id: 1,
        election_id: Some(p4::Uint128 { high: 0, low: 10 }),
        action: SetAction::Commit as i32,
        ..Default::default()
    };
    bench
        .p4rt
        .set_forwarding_pipeline_config(commit.clone())
        .await
        .unwrap();
    assert!(
        bench.read_table(IPV4.table).await.is_empty(),
        "commit starts from empty tables"
    );
    assert_eq!(
        bench
            .p4rt
            .set_forwarding_pipeline_config(commit)
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    let mut broken = efb_p4info::p4info().unwrap();
    broken.tables[1].preamble.as_mut().unwrap().id = broken.tables[0].preamble.as_ref().unwrap().id;
    let err = bench
        .set_config(10, broken, SetAction::Verify)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let caps = bench
        .p4rt
        .capabilities(p4::CapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(caps.p4runtime_api_version, "1.4.1");
}

#[tokio::test]
async fn restart_forgets_controllers_and_optionally_tables() {
    let (mut bench, mut s) = Bench::ready(Profile::StratumTofino).await;
    bench
        .write(vec![insert(flow(&bench, 10, 179))])
        .await
        .unwrap();
    bench
        .control
        .restart(efb_target::control_proto::RestartRequest { keep_tables: true })
        .await
        .unwrap();
    assert_eq!(s.next().await.unwrap_err().code(), Code::Unavailable);
    assert_eq!(
        bench.read_table(IPV4.table).await.len(),
        1,
        "tables survive a warm restart"
    );
    // Election ids are forgotten: a lower id than before becomes primary.
    let mut low = bench.arbitrate(1, "").await;
    assert_eq!(low.arbitration_code().await, Code::Ok as i32);
    bench
        .control
        .restart(efb_target::control_proto::RestartRequest { keep_tables: false })
        .await
        .unwrap();
    let err = bench
        .read(vec![entity(p4::TableEntry::default())])
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Code::FailedPrecondition,
        "a cold restart comes back without a pipeline"
    );
}

#[tokio::test]
async fn garbage_on_the_port_does_not_take_the_server_down() {
    use tokio::io::AsyncWriteExt;
    let (mut bench, _s) = Bench::ready(Profile::StratumTofino).await;
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0u8; 4096][..],
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ] {
        let mut sock = tokio::net::TcpStream::connect(bench.servers.addr)
            .await
            .unwrap();
        let _ = sock.write_all(garbage).await;
        drop(sock);
    }
    // A gRPC call with a body that is not a WriteRequest.
    let mut raw = tonic::client::Grpc::new(
        tonic::transport::Channel::from_shared(format!("http://{}", bench.servers.addr))
            .unwrap()
            .connect()
            .await
            .unwrap(),
    );
    raw.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<p4::Uint128, p4::WriteResponse>::default();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/p4.v1.P4Runtime/Write");
    let result = raw
        .unary(
            tonic::Request::new(p4::Uint128 {
                high: u64::MAX,
                low: 7,
            }),
            path,
            codec,
        )
        .await;
    assert!(result.is_err());
    bench
        .write(vec![insert(flow(&bench, 10, 179))])
        .await
        .unwrap();
    assert_eq!(b(0x1ff), vec![1, 0xff]);
}

/// The test program (with the OPTIONAL match kind or not) and two action-profile members.
async fn two_members_on_the_test_program(bench: &mut Bench, with_optional: bool) {
    bench
        .set_config(10, test_p4info(with_optional), SetAction::VerifyAndCommit)
        .await
        .unwrap();
    bench
        .write(vec![
            member_update(Type::Insert, 1),
            member_update(Type::Insert, 2),
        ])
        .await
        .unwrap();
}

/// A small P4Info with an action selector (and, when asked, an OPTIONAL field).
fn test_p4info(with_optional: bool) -> p4runtime_proto::p4::config::v1::P4Info {
    let mut text = String::from(
        r#"
tables { preamble { id: 33554530 name: "t_sel" alias: "t_sel" }
  match_fields { id: 1 name: "k" bitwidth: 8 match_type: EXACT }
  action_refs { id: 16777316 } implementation_id: 285212772 size: 16 }
actions { preamble { id: 16777316 name: "set" alias: "set" } params { id: 1 name: "v" bitwidth: 8 } }
action_profiles { preamble { id: 285212772 name: "sel" alias: "sel" } table_ids: 33554530 with_selector: true size: 64 max_group_size: 8 }
"#,
    );
    if with_optional {
        text.push_str(
            r#"tables { preamble { id: 33554531 name: "t_opt" alias: "t_opt" }
  match_fields { id: 1 name: "k" bitwidth: 8 match_type: OPTIONAL } action_refs { id: 16777316 } size: 16 }"#,
        );
    }
    efb_p4info::p4info_from_text(&text).unwrap()
}

fn member_update(kind: Type, id: u32) -> p4::Update {
    let m = p4::ActionProfileMember {
        action_profile_id: 285_212_772,
        member_id: id,
        action: Some(p4::Action {
            action_id: 16_777_316,
            params: vec![p4::action::Param {
                param_id: 1,
                value: b(u128::from(id)),
            }],
        }),
    };
    p4::Update {
        r#type: kind as i32,
        entity: Some(p4::Entity {
            entity: Some(p4::entity::Entity::ActionProfileMember(m)),
        }),
    }
}

fn group_update(kind: Type, members: &[(u32, i32)]) -> p4::Update {
    let g = p4::ActionProfileGroup {
        action_profile_id: 285_212_772,
        group_id: 1,
        members: members
            .iter()
            .map(|(id, w)| p4::action_profile_group::Member {
                member_id: *id,
                weight: *w,
                watch_kind: None,
            })
            .collect(),
        max_size: 0,
    };
    p4::Update {
        r#type: kind as i32,
        entity: Some(p4::Entity {
            entity: Some(p4::entity::Entity::ActionProfileGroup(g)),
        }),
    }
}
