//! A running target and a hand-written P4Runtime controller for the tests: entries are
//! built by name through the P4Info (as the compiler will), frames byte by byte.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[allow(unused_imports)]
pub use efb_target::frames;

use std::sync::OnceLock;
use std::time::Duration;

use efb_p4info::names::flows::{self, FlowTable};
use efb_p4info::names::{
    ActionName, FieldName, TableName, actions as a, fields as f, packet_io as io, tables as t,
};
use efb_p4info::{P4InfoIndex, PortMap};
use efb_target::control_proto::{self as pb, target_control_client::TargetControlClient};
use efb_target::{Device, DeviceOptions, Profile, Servers};
use p4runtime_proto::p4::config::v1::P4Info;
use p4runtime_proto::p4::v1::{self as p4, p4_runtime_client::P4RuntimeClient};
use prost::Message;
use tokio::sync::mpsc;
use tonic::transport::Channel;

pub const DEVICE_ID: u64 = 1;

pub struct Bench {
    pub servers: Servers,
    pub p4rt: P4RuntimeClient<Channel>,
    pub control: TargetControlClient<Channel>,
    pub index: P4InfoIndex,
    pub map: PortMap,
}

/// A controller session: the stream and what the target sent on it.
pub struct Session {
    pub tx: mpsc::Sender<p4::StreamMessageRequest>,
    pub rx: tonic::Streaming<p4::StreamMessageResponse>,
    pub election_id: u64,
}

impl Session {
    pub async fn next(&mut self) -> Result<p4::StreamMessageResponse, tonic::Status> {
        match tokio::time::timeout(Duration::from_secs(5), self.rx.message()).await {
            Ok(Ok(Some(m))) => Ok(m),
            Ok(Ok(None)) => Err(tonic::Status::cancelled("stream ended")),
            Ok(Err(s)) => Err(s),
            Err(_) => Err(tonic::Status::deadline_exceeded(
                "nothing on the stream for 5 s",
            )),
        }
    }

    /// The next arbitration answer's status code.
    pub async fn arbitration_code(&mut self) -> i32 {
        loop {
            if let Some(p4::stream_message_response::Update::Arbitration(a)) =
                self.next().await.unwrap().update
            {
                return a.status.unwrap().code;
            }
        }
    }

    pub async fn packet_in(&mut self) -> p4::PacketIn {
        loop {
            if let Some(p4::stream_message_response::Update::Packet(p)) =
                self.next().await.unwrap().update
            {
                return p;
            }
        }
    }
}

impl Bench {
    pub async fn start(profile: Profile) -> Bench {
        Bench::start_with(profile, true).await
    }

    /// A target with the efb pipeline, a primary controller and no filters cabled to the
    /// pair ports: what leaves stays out, as a replayed test expects.
    pub async fn ready_for_replay() -> (Bench, Session) {
        let mut bench = Bench::start_with(Profile::StratumTofino, false).await;
        let mut session = bench.arbitrate(10, "").await;
        assert_eq!(session.arbitration_code().await, tonic::Code::Ok as i32);
        bench.set_pipeline(10).await.unwrap();
        (bench, session)
    }

    async fn start_with(profile: Profile, emulated_filters: bool) -> Bench {
        let map = PortMap::builtin().unwrap();
        let device = Device::new(DeviceOptions {
            device_id: DEVICE_ID,
            profile,
            port_map: map.clone(),
            capture_limit: 10_000,
            table_size_limit: 0,
            emulated_filters,
        });
        let servers = efb_target::serve(device, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let url = format!("http://{}", servers.addr);
        let p4rt = P4RuntimeClient::connect(url.clone())
            .await
            .unwrap()
            .max_decoding_message_size(usize::MAX);
        let control = TargetControlClient::connect(url).await.unwrap();
        Bench {
            servers,
            p4rt,
            control,
            index: efb_index().clone(),
            map,
        }
    }

    /// A target with the efb pipeline and a primary controller (election id 10).
    pub async fn ready(profile: Profile) -> (Bench, Session) {
        let mut bench = Bench::start(profile).await;
        let mut session = bench.arbitrate(10, "").await;
        assert_eq!(session.arbitration_code().await, tonic::Code::Ok as i32);
        bench.set_pipeline(10).await.unwrap();
        (bench, session)
    }

    pub async fn open_stream(&mut self) -> Session {
        let (tx, rx) = mpsc::channel(64);
        let outbound = tokio_stream::wrappers::ReceiverStream::new(rx);
        let rx = self
            .p4rt
            .stream_channel(outbound)
            .await
            .unwrap()
            .into_inner();
        Session {
            tx,
            rx,
            election_id: 0,
        }
    }

    pub async fn arbitrate(&mut self, election_id: u64, role: &str) -> Session {
        let mut s = self.open_stream().await;
        s.election_id = election_id;
        s.tx.send(arbitration(DEVICE_ID, election_id, role))
            .await
            .unwrap();
        s
    }

    pub async fn set_pipeline(&mut self, election_id: u64) -> Result<(), tonic::Status> {
        self.set_config(
            election_id,
            efb_p4info_parsed().clone(),
            p4::set_forwarding_pipeline_config_request::Action::VerifyAndCommit,
        )
        .await
    }

    pub async fn set_config(
        &mut self,
        election_id: u64,
        p4info: P4Info,
        action: p4::set_forwarding_pipeline_config_request::Action,
    ) -> Result<(), tonic::Status> {
        let req = p4::SetForwardingPipelineConfigRequest {
            device_id: DEVICE_ID,
            election_id: Some(p4::Uint128 {
                high: 0,
                low: election_id,
            }),
            action: action as i32,
            config: Some(p4::ForwardingPipelineConfig {
                p4_device_config: device_config_for(&p4info),
                p4info: Some(p4info),
                cookie: Some(p4::forwarding_pipeline_config::Cookie { cookie: 42 }),
            }),
            ..Default::default()
        };
        self.p4rt
            .set_forwarding_pipeline_config(req)
            .await
            .map(|_| ())
    }

    /// Writes a batch as the primary with election id 10; returns per-update codes on
    /// failure.
    pub async fn write(&mut self, updates: Vec<p4::Update>) -> Result<(), WriteError> {
        self.write_as(10, updates, 0).await
    }

    pub async fn write_as(
        &mut self,
        election_id: u64,
        updates: Vec<p4::Update>,
        atomicity: i32,
    ) -> Result<(), WriteError> {
        let req = p4::WriteRequest {
            device_id: DEVICE_ID,
            election_id: Some(p4::Uint128 {
                high: 0,
                low: election_id,
            }),
            updates,
            atomicity,
            ..Default::default()
        };
        self.p4rt
            .write(req)
            .await
            .map(|_| ())
            .map_err(WriteError::from)
    }

    /// Writes one update and returns its code and message (OK when it went through).
    pub async fn write_one(&mut self, update: p4::Update) -> (tonic::Code, String) {
        match self.write(vec![update]).await {
            Ok(()) => (tonic::Code::Ok, String::new()),
            Err(e) => {
                assert_eq!(
                    e.status.code(),
                    tonic::Code::Unknown,
                    "batch errors are UNKNOWN: {:?}",
                    e.status
                );
                assert_eq!(e.details.len(), 1, "one p4.v1.Error per update");
                (
                    tonic::Code::from_i32(e.details[0].canonical_code),
                    e.details[0].message.clone(),
                )
            }
        }
    }

    pub async fn read(
        &mut self,
        entities: Vec<p4::Entity>,
    ) -> Result<Vec<p4::Entity>, tonic::Status> {
        let req = p4::ReadRequest {
            device_id: DEVICE_ID,
            entities,
            ..Default::default()
        };
        let mut stream = self.p4rt.read(req).await?.into_inner();
        let mut out = Vec::new();
        while let Some(r) = stream.message().await? {
            out.extend(r.entities);
        }
        Ok(out)
    }

    pub async fn read_table(&mut self, table: TableName) -> Vec<p4::TableEntry> {
        let table_id = self.index.table_by_name(table).unwrap().id;
        let q = p4::TableEntry {
            table_id,
            counter_data: Some(p4::CounterData::default()),
            ..Default::default()
        };
        self.read(vec![entity(q)])
            .await
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.entity {
                Some(p4::entity::Entity::TableEntry(t)) => Some(t),
                _ => None,
            })
            .collect()
    }

    pub fn port(&self, name: &str) -> u32 {
        self.map.resolve(name).unwrap()
    }

    pub async fn inject(&mut self, port: &str, frame: Vec<u8>) {
        let req = pb::InjectFramesRequest {
            frames: vec![pb::InjectedFrame {
                port: Some(port_ref(port)),
                payload: frame,
            }],
        };
        self.control.inject_frames(req).await.unwrap();
    }

    /// Frames out of `ports` (all when empty), waiting up to a second for `min` of them.
    pub async fn frames(&mut self, ports: &[&str], min: u32) -> Vec<pb::Frame> {
        let req = pb::ReadFramesRequest {
            ports: ports.iter().map(|p| port_ref(p)).collect(),
            min_frames: min,
            timeout_ms: 1000,
            keep: false,
        };
        self.control
            .read_frames(req)
            .await
            .unwrap()
            .into_inner()
            .frames
    }

    pub async fn set_filter(
        &mut self,
        a: &str,
        b: &str,
        delay_ns: u64,
        loss_ratio: f64,
        dead: bool,
    ) {
        let req = pb::SetFilterRequest {
            port_a: Some(port_ref(a)),
            port_b: Some(port_ref(b)),
            delay_ns,
            loss_ratio,
            dead,
            update_mask: None,
        };
        self.control.set_filter(req).await.unwrap();
    }

    pub async fn drops(&mut self) -> Vec<(String, u64)> {
        let resp = self
            .control
            .get_ports(pb::GetPortsRequest {})
            .await
            .unwrap()
            .into_inner();
        resp.drops.into_iter().map(|d| (d.name, d.frames)).collect()
    }
}

/// The `p4_device_config` that goes with a P4Info (Stratum on Tofino refuses a P4Info that
/// is not its program's): the compiled efb program for efb's; for a test program, the
/// same with a bfrt.json naming the test program's tables and counters instead.
/// The embedded P4Info, parsed once per test binary (tests start hundreds of targets).
pub fn efb_p4info_parsed() -> &'static P4Info {
    static PARSED: OnceLock<P4Info> = OnceLock::new();
    PARSED.get_or_init(|| efb_p4info::p4info().unwrap())
}

fn efb_index() -> &'static P4InfoIndex {
    static INDEX: OnceLock<P4InfoIndex> = OnceLock::new();
    INDEX.get_or_init(|| P4InfoIndex::new(efb_p4info_parsed()).unwrap())
}

pub fn device_config_for(p4info: &P4Info) -> Vec<u8> {
    if p4info == efb_p4info_parsed() {
        static EFB: OnceLock<Vec<u8>> = OnceLock::new();
        return EFB
            .get_or_init(efb_p4info::device_config::device_config)
            .clone();
    }
    let objects = p4info
        .tables
        .iter()
        .map(|t| (t.preamble.as_ref(), Some(t.size)))
        .chain(p4info.counters.iter().map(|c| (c.preamble.as_ref(), None)));
    let tables: Vec<serde_json::Value> = objects
        .map(|(preamble, size)| {
            let preamble = preamble.unwrap();
            serde_json::json!({
                "name": format!("pipe.{}", preamble.name),
                "id": preamble.id,
                "size": size,
            })
        })
        .collect();
    let mut config = efb_p4info::device_config::bf_pipeline_config();
    config.p4_name = "test".into();
    config.bfruntime_info = serde_json::json!({ "tables": tables })
        .to_string()
        .into_bytes();
    config.encode_to_vec()
}

pub fn port_ref(name: &str) -> pb::PortRef {
    pb::PortRef {
        port: Some(pb::port_ref::Port::Name(name.to_string())),
    }
}

pub fn arbitration(device_id: u64, election_id: u64, role: &str) -> p4::StreamMessageRequest {
    p4::StreamMessageRequest {
        update: Some(p4::stream_message_request::Update::Arbitration(
            p4::MasterArbitrationUpdate {
                device_id,
                role: (!role.is_empty()).then(|| p4::Role {
                    name: role.to_string(),
                    ..Default::default()
                }),
                election_id: Some(p4::Uint128 {
                    high: 0,
                    low: election_id,
                }),
                status: None,
            },
        )),
    }
}

#[derive(Debug)]
pub struct WriteError {
    pub status: tonic::Status,
    pub details: Vec<p4::Error>,
}

impl From<tonic::Status> for WriteError {
    fn from(status: tonic::Status) -> WriteError {
        let details = p4runtime_proto::google::rpc::Status::decode(status.details())
            .map(|s| {
                s.details
                    .iter()
                    .map(|any| {
                        assert_eq!(any.type_url, "type.googleapis.com/p4.v1.Error");
                        p4::Error::decode(any.value.as_slice()).unwrap()
                    })
                    .collect()
            })
            .unwrap_or_default();
        WriteError { status, details }
    }
}

pub fn entity(e: p4::TableEntry) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::TableEntry(e)),
    }
}

pub fn update(kind: p4::update::Type, e: p4::TableEntry) -> p4::Update {
    p4::Update {
        r#type: kind as i32,
        entity: Some(entity(e)),
    }
}

pub fn insert(e: p4::TableEntry) -> p4::Update {
    update(p4::update::Type::Insert, e)
}

/// The `ingress_port` entry that lets packet-outs in by the CPU port.
pub fn from_cpu(index: &P4InfoIndex, cpu_port: u32) -> p4::TableEntry {
    entry(
        index,
        t::INGRESS_PORT,
        &[(f::INGRESS_PORT, M::Exact(cpu_port.into()))],
        a::FROM_CPU,
        &[],
        0,
    )
}

/// `platform`'s default entry: the port keep-alives from the filters are sent to.
pub fn platform(index: &P4InfoIndex, cpu_port: u32) -> p4::TableEntry {
    let mut e = entry(
        index,
        t::PLATFORM,
        &[],
        a::SET_CPU_PORT,
        &[(f::PORT, cpu_port.into())],
        0,
    );
    e.is_default_action = true;
    e
}

/// What the driver writes for the board's CPU port (the compiler's platform group).
pub fn cpu_port_updates(index: &P4InfoIndex, cpu_port: u32) -> Vec<p4::Update> {
    vec![
        update(p4::update::Type::Modify, platform(index, cpu_port)),
        insert(from_cpu(index, cpu_port)),
    ]
}

/// An entry of each IP flow table (IPv4, IPv6), the action picked per table.
pub fn ip_flows(
    index: &P4InfoIndex,
    matches: &[(FieldName, M)],
    action: impl Fn(&FlowTable) -> ActionName,
    params: &[(FieldName, u128)],
    priority: i32,
) -> Vec<p4::Update> {
    [flows::IPV4, flows::IPV6]
        .iter()
        .map(|table| {
            insert(entry(
                index,
                table.table,
                matches,
                action(table),
                params,
                priority,
            ))
        })
        .collect()
}

/// A `frame_classes` entry giving the frames `matches` selects the class `class`.
pub fn frame_class(
    index: &P4InfoIndex,
    matches: &[(FieldName, M)],
    class: u128,
    priority: i32,
) -> p4::TableEntry {
    entry(
        index,
        t::FRAME_CLASSES,
        matches,
        a::SET_FRAME_CLASS,
        &[(f::FRAME_CLASS, class)],
        priority,
    )
}

/// A flow table's `to_unit` action (the IP tables have one).
pub fn to_unit(table: &FlowTable) -> ActionName {
    table.to_unit.expect("an IP flow table has to_unit")
}

/// A match value for a field, by kind.
#[derive(Clone, Debug)]
pub enum M {
    Exact(u128),
    Ternary(u128, u128),
    Range(u128, u128),
}

/// Canonical bytes of a number.
pub fn b(v: u128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let first = bytes.iter().position(|x| *x != 0).unwrap_or(15);
    bytes[first..].to_vec()
}

/// An entry of `table` by names: fields, action, parameters.
pub fn entry(
    index: &P4InfoIndex,
    table: TableName,
    matches: &[(FieldName, M)],
    action: ActionName,
    params: &[(FieldName, u128)],
    priority: i32,
) -> p4::TableEntry {
    let t = index.table_by_name(table).unwrap();
    let r#match = matches
        .iter()
        .map(|&(name, ref m)| {
            let field_id = t
                .field(name)
                .unwrap_or_else(|| panic!("no field {name}"))
                .id;
            let kind = match m {
                M::Exact(v) => {
                    p4::field_match::FieldMatchType::Exact(p4::field_match::Exact { value: b(*v) })
                }
                M::Ternary(v, mask) => {
                    p4::field_match::FieldMatchType::Ternary(p4::field_match::Ternary {
                        value: b(*v),
                        mask: b(*mask),
                    })
                }
                M::Range(lo, hi) => {
                    p4::field_match::FieldMatchType::Range(p4::field_match::Range {
                        low: b(*lo),
                        high: b(*hi),
                    })
                }
            };
            p4::FieldMatch {
                field_id,
                field_match_type: Some(kind),
            }
        })
        .collect();
    p4::TableEntry {
        table_id: t.id,
        r#match,
        action: Some(action_of(index, action, params)),
        priority,
        ..Default::default()
    }
}

pub fn action_of(
    index: &P4InfoIndex,
    action: ActionName,
    params: &[(FieldName, u128)],
) -> p4::TableAction {
    let a = index.action_by_name(action).unwrap();
    let params = params
        .iter()
        .map(|&(name, v)| p4::action::Param {
            param_id: a.param(name).unwrap().id,
            value: b(v),
        })
        .collect();
    p4::TableAction {
        r#type: Some(p4::table_action::Type::Action(p4::Action {
            action_id: a.id,
            params,
        })),
    }
}

pub mod site;

pub mod frames_out {
    /// A frame that left the chip: the port's front-panel name and the bytes.
    #[derive(Debug)]
    pub struct Out {
        pub port: String,
        pub payload: Vec<u8>,
    }
}

/// A packet-out as a controller sends it: out of device port `port`.
pub fn packet_out(index: &P4InfoIndex, port: u32, frame: Vec<u8>) -> p4::StreamMessageRequest {
    packet_out_with(index, port, 0, frame)
}

/// A packet-out to multicast group `group`: a copy out of each of its replicas.
pub fn packet_out_to_group(
    index: &P4InfoIndex,
    group: u32,
    frame: Vec<u8>,
) -> p4::StreamMessageRequest {
    packet_out_with(index, 0, group, frame)
}

fn packet_out_with(
    index: &P4InfoIndex,
    port: u32,
    group: u32,
    frame: Vec<u8>,
) -> p4::StreamMessageRequest {
    let header = index.packet_out().unwrap();
    let field = |name, value: u32| p4::PacketMetadata {
        metadata_id: header.field(name).unwrap().id,
        value: b(u128::from(value)),
    };
    p4::StreamMessageRequest {
        update: Some(p4::stream_message_request::Update::Packet(p4::PacketOut {
            payload: frame,
            metadata: vec![field(io::EGRESS_PORT, port), field(io::MCAST_GRP, group)],
        })),
    }
}

/// The keep-alive flag asking for the return as a packet-in too.
pub const PUNT: u8 = 1;

/// A keep-alive as the controller builds it: pair id, direction, round, departure time
/// (egress writes it), flags, unit.
pub fn keepalive(out_port: u16, seq: u32, flags: u8, unit: u8) -> Vec<u8> {
    let mut payload = out_port.to_be_bytes().to_vec();
    payload.extend_from_slice(&seq.to_be_bytes());
    payload.extend_from_slice(&0u64.to_be_bytes());
    payload.extend_from_slice(&[flags, unit]);
    frames::eth(&[], 0x88b6, &payload)
}

/// A multicast group of the replication engine: (device port, instance) per replica.
pub fn multicast_group(id: u32, replicas: &[(u32, u32)]) -> p4::Entity {
    #[allow(deprecated)]
    let replicas = replicas
        .iter()
        .map(|&(port, instance)| p4::Replica {
            port_kind: Some(p4::replica::PortKind::EgressPort(port)),
            instance,
        })
        .collect();
    replication_entity(
        p4::packet_replication_engine_entry::Type::MulticastGroupEntry(p4::MulticastGroupEntry {
            multicast_group_id: id,
            replicas,
        }),
    )
}

pub fn replication_entity(t: p4::packet_replication_engine_entry::Type) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
            p4::PacketReplicationEngineEntry { r#type: Some(t) },
        )),
    }
}

/// A register cell (`index` None: every cell), with a bit-string value when given.
pub fn register_entity(register_id: u32, index: Option<i64>, value: Option<u128>) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::RegisterEntry(p4::RegisterEntry {
            register_id,
            index: index.map(|index| p4::Index { index }),
            data: value.map(|v| p4::P4Data {
                data: Some(p4::p4_data::Data::Bitstring(b(v))),
            }),
        })),
    }
}

pub fn write_entity(kind: p4::update::Type, entity: p4::Entity) -> p4::Update {
    p4::Update {
        r#type: kind as i32,
        entity: Some(entity),
    }
}

impl Bench {
    /// Every cell of a register, by name, in index order.
    pub async fn register(&mut self, name: efb_p4info::names::RegisterName) -> Vec<u32> {
        let id = self.index.register_by_name(name).unwrap().id;
        let read = self
            .read(vec![register_entity(id, None, None)])
            .await
            .unwrap();
        read.into_iter()
            .enumerate()
            .map(|(i, e)| match e.entity {
                Some(p4::entity::Entity::RegisterEntry(r)) => {
                    assert_eq!(r.register_id, id);
                    assert_eq!(r.index.unwrap().index, i as i64, "cells in index order");
                    match r.data.unwrap().data {
                        Some(p4::p4_data::Data::Bitstring(v)) => {
                            u32::try_from(efb_target::bytes::to_u128(&v)).unwrap()
                        }
                        other => panic!("a register cell reads as a bitstring: {other:?}"),
                    }
                }
                other => panic!("a register read returned {other:?}"),
            })
            .collect()
    }

    /// The multicast groups a read of `id` (0: every group) returns.
    pub async fn multicast_groups(
        &mut self,
        id: u32,
    ) -> Result<Vec<p4::MulticastGroupEntry>, tonic::Status> {
        let read = self.read(vec![multicast_group(id, &[])]).await?;
        Ok(read
            .into_iter()
            .map(|e| match e.entity {
                Some(p4::entity::Entity::PacketReplicationEngineEntry(
                    p4::PacketReplicationEngineEntry {
                        r#type:
                            Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)),
                    },
                )) => g,
                other => panic!("a multicast group read returned {other:?}"),
            })
            .collect())
    }
}
