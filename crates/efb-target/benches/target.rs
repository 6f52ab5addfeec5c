//! Benchmark of the software target: flow entries written per second over P4Runtime in
//! batches (as many as the IPv4 flow table holds as compiled), and frames per second
//! through the emulated pipeline (in process, and over the control service).
//! EFB_BENCH_QUICK=1 runs a tiny round.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use efb_p4info::names::flows::IPV4;
use efb_p4info::names::{ActionName, FieldName, TableName, actions as a, fields as f, tables as t};
use efb_p4info::{P4InfoIndex, PortMap};
use efb_target::control_proto::{self as pb, target_control_client::TargetControlClient};
use efb_target::{Device, DeviceOptions, Profile};
use p4runtime_proto::p4::v1::{self as p4, p4_runtime_client::P4RuntimeClient};

fn b(v: u128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let first = bytes.iter().position(|x| *x != 0).unwrap_or(15);
    bytes[first..].to_vec()
}

enum M {
    Exact(u128),
    Ternary(u128, u128),
}

fn entry(
    ix: &P4InfoIndex,
    table: TableName,
    matches: &[(FieldName, M)],
    action: ActionName,
    params: &[(FieldName, u128)],
    priority: i32,
) -> p4::Update {
    let tinfo = ix.table_by_name(table).unwrap();
    let ainfo = ix.action_by_name(action).unwrap();
    let r#match = matches
        .iter()
        .map(|&(name, ref m)| p4::FieldMatch {
            field_id: tinfo.field(name).unwrap().id,
            field_match_type: Some(match m {
                M::Exact(v) => {
                    p4::field_match::FieldMatchType::Exact(p4::field_match::Exact { value: b(*v) })
                }
                M::Ternary(v, k) => {
                    p4::field_match::FieldMatchType::Ternary(p4::field_match::Ternary {
                        value: b(*v),
                        mask: b(*k),
                    })
                }
            }),
        })
        .collect();
    let params = params
        .iter()
        .map(|&(n, v)| p4::action::Param {
            param_id: ainfo.param(n).unwrap().id,
            value: b(v),
        })
        .collect();
    let action = p4::TableAction {
        r#type: Some(p4::table_action::Type::Action(p4::Action {
            action_id: ainfo.id,
            params,
        })),
    };
    let e = p4::TableEntry {
        table_id: tinfo.id,
        r#match,
        action: Some(action),
        priority,
        ..Default::default()
    };
    p4::Update {
        r#type: p4::update::Type::Insert as i32,
        entity: Some(p4::Entity {
            entity: Some(p4::entity::Entity::TableEntry(e)),
        }),
    }
}

/// One link (p6-2 LAN, p6-1 WAN), one unit of 2 pairs x 8 cores, 256 buckets.
fn site(ix: &P4InfoIndex, map: &PortMap) -> Vec<p4::Update> {
    let port = |n: &str| u128::from(map.resolve(n).unwrap());
    let mut u = vec![
        entry(
            ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port("p6-2")))],
            a::FROM_LINK_LAN,
            &[(f::LINK_ID, 1)],
            0,
        ),
        entry(
            ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port("p6-1")))],
            a::FROM_LINK_WAN,
            &[(f::LINK_ID, 1)],
            0,
        ),
        entry(
            ix,
            t::LINK_PORTS,
            &[(f::LINK_ID, M::Exact(1))],
            a::SET_LINK_PORTS,
            &[(f::LAN_PORT, port("p6-2")), (f::WAN_PORT, port("p6-1"))],
            0,
        ),
        entry(
            ix,
            t::UNITS,
            &[(f::UNIT_ID, M::Exact(1))],
            a::UNIT_ACTIVE,
            &[(f::BUCKET_MASK, 255), (f::BUCKET_BASE, 0)],
            0,
        ),
    ];
    for (i, (lan, wan)) in [("p4-0", "p4-1"), ("p4-2", "p4-3")].iter().enumerate() {
        let id = i as u128 + 1;
        u.push(entry(
            ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(lan)))],
            a::FROM_PAIR_LAN,
            &[(f::PAIR_ID, id)],
            0,
        ));
        u.push(entry(
            ix,
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, M::Exact(port(wan)))],
            a::FROM_PAIR_WAN,
            &[(f::PAIR_ID, id)],
            0,
        ));
        for (side_wan, out) in [(0, lan), (1, wan)] {
            u.push(entry(
                ix,
                t::PAIRS,
                &[
                    (f::PAIR_ID, M::Exact(id)),
                    (f::SIDE_WAN, M::Exact(side_wan)),
                ],
                a::PAIR_UP,
                &[(f::PORT, port(out))],
                0,
            ));
        }
    }
    for bucket in 0..256u128 {
        let slot = bucket % 16;
        let key = [(f::INDEX, M::Exact(bucket))];
        u.push(entry(
            ix,
            t::BUCKETS,
            &key,
            a::TO_PAIR,
            &[(f::PAIR_ID, slot / 8 + 1), (f::CORE, slot % 8)],
            0,
        ));
    }
    // The link's frames are class 1.
    u.push(entry(
        ix,
        t::FRAME_CLASSES,
        &[(f::LINK_ID, M::Ternary(1, 0xff))],
        a::SET_FRAME_CLASS,
        &[(f::FRAME_CLASS, 1)],
        1,
    ));
    // The frames are IPv4: they meet the IPv4 flow table only.
    u.push(entry(
        ix,
        IPV4.table,
        &[(f::FRAME_CLASS, M::Ternary(1, 0xff))],
        to_unit(),
        &[(f::UNIT_ID, 1)],
        1,
    ));
    u
}

fn to_unit() -> ActionName {
    IPV4.to_unit.expect("the IPv4 flow table has to_unit")
}

/// Flow `i`: a /32, a protocol and a port on link 1, to the unit (as the datastore
/// benchmark's flows).
fn flow(ix: &P4InfoIndex, i: u32) -> p4::Update {
    let m = [
        (f::FRAME_CLASS, M::Ternary(1, 0xff)),
        (
            f::IPV4_DST,
            M::Ternary(u128::from(0x0a00_0000 | i), 0xffff_ffff),
        ),
        (f::IP_PROTO, M::Ternary(6, 0xff)),
        (
            f::L4_DST_PORT,
            M::Ternary(u128::from(1024 + i % 1000), 0xffff),
        ),
    ];
    entry(
        ix,
        IPV4.table,
        &m,
        to_unit(),
        &[(f::UNIT_ID, 1)],
        10 + i as i32,
    )
}

fn frame(i: u32) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let src = (0xc000_0200u32 | (i & 0xff)).to_be_bytes();
    let dst = (0x0b00_0000u32 | (i % 65_536)).to_be_bytes();
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&(40_000u16 + (i % 1000) as u16).to_be_bytes());
    f.extend_from_slice(&443u16.to_be_bytes());
    f.extend_from_slice(&[0; 16]);
    f
}

struct Ctl {
    p4rt: P4RuntimeClient<tonic::transport::Channel>,
    control: TargetControlClient<tonic::transport::Channel>,
    _stream: tokio::sync::mpsc::Sender<p4::StreamMessageRequest>,
}

async fn start_target(capture: usize) -> (Ctl, std::sync::Arc<Device>) {
    let map = PortMap::builtin().unwrap();
    let device = Device::new(DeviceOptions {
        device_id: 1,
        profile: Profile::StratumTofino,
        port_map: map,
        capture_limit: capture,
        table_size_limit: 0,
        emulated_filters: true,
    });
    let servers = efb_target::serve(device.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = format!("http://{}", servers.addr);
    std::mem::forget(servers);
    let mut p4rt = P4RuntimeClient::connect(url.clone())
        .await
        .unwrap()
        .max_encoding_message_size(usize::MAX);
    let control = TargetControlClient::connect(url).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let arb = p4::MasterArbitrationUpdate {
        device_id: 1,
        election_id: Some(p4::Uint128 { high: 0, low: 1 }),
        ..Default::default()
    };
    tx.send(p4::StreamMessageRequest {
        update: Some(p4::stream_message_request::Update::Arbitration(arb)),
    })
    .await
    .unwrap();
    let mut inbound = p4rt
        .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    inbound.message().await.unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = inbound.message().await {} });
    let req = p4::SetForwardingPipelineConfigRequest {
        device_id: 1,
        election_id: Some(p4::Uint128 { high: 0, low: 1 }),
        action: p4::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
        config: Some(p4::ForwardingPipelineConfig {
            p4info: Some(efb_p4info::p4info().unwrap()),
            p4_device_config: efb_p4info::device_config::device_config(),
            ..Default::default()
        }),
        ..Default::default()
    };
    p4rt.set_forwarding_pipeline_config(req).await.unwrap();
    (
        Ctl {
            p4rt,
            control,
            _stream: tx,
        },
        device,
    )
}

async fn write(ctl: &mut Ctl, updates: Vec<p4::Update>) {
    let req = p4::WriteRequest {
        device_id: 1,
        election_id: Some(p4::Uint128 { high: 0, low: 1 }),
        updates,
        ..Default::default()
    };
    ctl.p4rt.write(req).await.unwrap();
}

fn rate(n: usize, d: Duration) -> String {
    format!("{:>10.0}/s", n as f64 / d.as_secs_f64())
}

async fn bench(quick: bool) {
    let ix = efb_p4info::index().unwrap();
    let map = PortMap::builtin().unwrap();
    // The chip's capacity: the IPv4 flow table's compiled size, less the site's one flow.
    let capacity = ix.table_by_name(IPV4.table).unwrap().size;
    let flows = if quick {
        2_000
    } else {
        u32::try_from(capacity).unwrap() - 1
    };
    let batch = 1_000;
    let frames = if quick { 5_000 } else { 200_000 };

    let (mut ctl, device) = start_target(0).await;
    write(&mut ctl, site(&ix, &map)).await;
    let lan = map.resolve("p6-2").unwrap();
    let pipeline = |n: u32| {
        let start = Instant::now();
        for i in 0..n {
            device.inject(lan, &frame(i));
        }
        start.elapsed()
    };
    let d = pipeline(frames);
    println!(
        "frames through the pipeline, 1 flow, in process:     {} ({frames} frames)",
        rate(frames as usize, d)
    );

    let updates: Vec<p4::Update> = (0..flows).map(|i| flow(&ix, i)).collect();
    let start = Instant::now();
    let mut it = updates.into_iter().peekable();
    while it.peek().is_some() {
        let chunk: Vec<p4::Update> = it.by_ref().take(batch).collect();
        write(&mut ctl, chunk).await;
    }
    let d = start.elapsed();
    println!(
        "flow entries written over P4Runtime, batches of {batch}: {} ({flows} entries in {:.2} s)",
        rate(flows as usize, d),
        d.as_secs_f64()
    );

    let start = Instant::now();
    let mut stream = ctl
        .p4rt
        .read(p4::ReadRequest {
            device_id: 1,
            entities: vec![p4::Entity {
                entity: Some(p4::entity::Entity::TableEntry(p4::TableEntry {
                    table_id: ix.table_by_name(IPV4.table).unwrap().id,
                    ..Default::default()
                })),
            }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut read = 0;
    while let Some(r) = stream.message().await.unwrap() {
        read += r.entities.len();
    }
    let d = start.elapsed();
    println!(
        "flow entries read back (one wildcard read):          {} ({read} entries)",
        rate(read, d)
    );

    let few = frames / 20;
    let d = pipeline(few);
    println!(
        "frames through the pipeline, {flows} flows, in process: {} ({few} frames, worst case: no flow matches)",
        rate(few as usize, d)
    );

    // Over the control service, in batches, with capture on (what tests do).
    let (mut ctl, _device) = start_target(10_000).await;
    write(&mut ctl, site(&ix, &map)).await;
    let start = Instant::now();
    let mut sent = 0;
    while sent < frames {
        let n = 1_000.min(frames - sent);
        let batch = (sent..sent + n)
            .map(|i| pb::InjectedFrame {
                port: Some(pb::PortRef {
                    port: Some(pb::port_ref::Port::DevicePort(lan)),
                }),
                payload: frame(i),
            })
            .collect();
        ctl.control
            .inject_frames(pb::InjectFramesRequest { frames: batch })
            .await
            .unwrap();
        sent += n;
    }
    let d = start.elapsed();
    println!(
        "frames injected over gRPC (InjectFrames, 1000 a call): {} ({frames} frames)",
        rate(frames as usize, d)
    );
}

fn main() {
    let quick = std::env::var("EFB_BENCH_QUICK").is_ok_and(|v| v == "1");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "efb-target benchmark{}",
        if quick { " (quick round)" } else { "" }
    );
    runtime.block_on(bench(quick));
}
