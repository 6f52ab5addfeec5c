//! One P4Runtime connection as a controller: the stream channel and primary election, the
//! pipeline, batched writes with their per-update errors, reads, packet-out, and what the
//! stream brings (packet-ins, losing primary).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use p4runtime_proto::google::rpc::Status as RpcStatus;
use p4runtime_proto::p4::config::v1::P4Info;
use p4runtime_proto::p4::v1::{self as p4, p4_runtime_client::P4RuntimeClient};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tracing::{info, warn};

use crate::plan::Op;

/// Large enough for reading 100 000 entries at once.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the P4Runtime server at {address}: {message}")]
    Unreachable { address: String, message: String },
    #[error("not primary: {0}")]
    NotPrimary(String),
    #[error("P4Runtime {call}: {status}")]
    Rpc {
        call: &'static str,
        status: tonic::Status,
    },
}

/// What the stream channel brings besides the election.
#[derive(Debug)]
pub enum StreamEvent {
    PacketIn(p4::PacketIn),
    /// Another controller took over, or the target dropped the stream.
    Lost(String),
}

/// Per-update outcome of a write that failed: for each update, `None` when it was applied.
#[derive(Debug)]
pub struct WriteFailure {
    pub errors: Vec<Option<(tonic::Code, String)>>,
    /// The whole write failed before any update (no per-update details).
    pub overall: Option<tonic::Status>,
}

pub struct Connection {
    client: P4RuntimeClient<Channel>,
    /// Shared by the readers made from this connection.
    identity: Arc<()>,
    requests: mpsc::Sender<p4::StreamMessageRequest>,
    pub device_id: u64,
    pub election_id: u128,
    primary: Arc<AtomicBool>,
}

/// How an election went.
pub enum Opened {
    /// Elected: [`Backup::into_primary`] makes the connection.
    Primary(Backup),
    /// Another controller is primary: wait with [`Backup::take_over`].
    Backup(Backup),
}

/// A stream that asked to be primary and is not (yet).
pub struct Backup {
    address: String,
    client: P4RuntimeClient<Channel>,
    requests: mpsc::Sender<p4::StreamMessageRequest>,
    responses: tonic::Streaming<p4::StreamMessageResponse>,
    device_id: u64,
    election_id: u128,
    /// The highest election id the target has seen, as its last answer said.
    highest: Option<u128>,
}

impl Backup {
    pub fn election_id(&self) -> u128 {
        self.election_id
    }

    /// Who holds the chip, in words, for `show system status`.
    pub fn holder(&self) -> String {
        held_by(self.highest)
    }

    async fn ask(&mut self, election_id: u128) -> Result<(), ClientError> {
        self.election_id = election_id;
        let ask = p4::StreamMessageRequest {
            update: Some(p4::stream_message_request::Update::Arbitration(
                p4::MasterArbitrationUpdate {
                    device_id: self.device_id,
                    election_id: Some(uint128(election_id)),
                    ..Default::default()
                },
            )),
        };
        self.requests
            .send(ask)
            .await
            .map_err(|_| ClientError::Unreachable {
                address: self.address.clone(),
                message: "the stream closed".into(),
            })
    }

    /// Acts on an answer: `None` when the election was asked again (above the highest id
    /// the target has seen, the only way to win once no controller is primary).
    async fn follow(&mut self, answer: Election) -> Result<Option<Election>, ClientError> {
        match answer {
            Election::Primary => Ok(Some(answer)),
            Election::NoPrimary { highest } if highest.is_some_and(|h| h >= self.election_id) => {
                self.highest = highest;
                // Just above it; at the very top, equal wins (its holder has left).
                let next = highest.map_or(self.election_id, |h| h.saturating_add(1));
                info!(
                    election_id = next,
                    "P4Runtime: asking again above the highest election id the target has seen"
                );
                self.ask(next).await?;
                Ok(None)
            }
            Election::NoPrimary { .. } => Err(ClientError::NotPrimary(
                "the target elected no primary although no other controller is primary".into(),
            )),
            Election::OtherPrimary { highest } => {
                self.highest = highest;
                Ok(Some(answer))
            }
        }
    }

    /// Waits, as long as it takes, until the controller holding the chip leaves, then
    /// becomes primary.
    pub async fn take_over(mut self) -> Result<Backup, ClientError> {
        warn!(holder = %self.holder(), "P4Runtime: another controller is primary; waiting as backup");
        loop {
            let answer = next_arbitration(&mut self.responses).await?;
            if let Some(Election::Primary) = self.follow(answer).await? {
                return Ok(self);
            }
        }
    }

    /// The connection, once elected: packet-ins and the loss of the election go to
    /// `events` from now on.
    pub fn into_primary(self, events: mpsc::Sender<StreamEvent>) -> Connection {
        let primary = Arc::new(AtomicBool::new(true));
        tokio::spawn(watch_stream(self.responses, events, primary.clone()));
        info!(address = %self.address, device_id = self.device_id, election_id = self.election_id, "P4Runtime: primary");
        Connection {
            client: self.client,
            identity: Arc::new(()),
            requests: self.requests,
            device_id: self.device_id,
            election_id: self.election_id,
            primary,
        }
    }
}

fn uint128(value: u128) -> p4::Uint128 {
    p4::Uint128 {
        high: (value >> 64) as u64,
        low: value as u64,
    }
}

impl Connection {
    /// Connects, opens the stream and asks to be primary with `election_id`. When the
    /// target has seen a higher id (a controller that came and went), it says so in its
    /// answer and the election is asked again above it. Every step is bounded in time:
    /// while another controller is primary, the answer is a [`Backup`] to wait on.
    pub async fn open(
        address: &str,
        device_id: u64,
        election_id: u128,
    ) -> Result<Opened, ClientError> {
        let unreachable = |message: String| ClientError::Unreachable {
            address: address.to_string(),
            message,
        };
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let channel = Channel::from_shared(uri)
            .map_err(|e| unreachable(e.to_string()))?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let mut client = P4RuntimeClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let (requests, rx) = mpsc::channel(1024);
        let responses = client
            .stream_channel(ReceiverStream::new(rx))
            .await
            .map_err(|status| ClientError::Rpc {
                call: "StreamChannel",
                status,
            })?
            .into_inner();
        let mut candidate = Backup {
            address: address.to_string(),
            client,
            requests,
            responses,
            device_id,
            election_id,
            highest: None,
        };
        candidate.ask(election_id).await?;
        loop {
            let answer = tokio::time::timeout(
                Duration::from_secs(5),
                next_arbitration(&mut candidate.responses),
            )
            .await
            .map_err(|_| unreachable("no answer to the election within 5 s".into()))??;
            match candidate.follow(answer).await? {
                Some(Election::Primary) => return Ok(Opened::Primary(candidate)),
                Some(_) => return Ok(Opened::Backup(candidate)),
                // Asked again above the highest id: its answer comes next.
                None => {}
            }
        }
    }

    pub fn is_primary(&self) -> bool {
        self.primary.load(Ordering::Relaxed)
    }

    /// A way to send packet-outs that does not need the connection itself (keep-alives
    /// must go out while a long write holds it).
    pub fn packet_sender(&self) -> PacketSender {
        PacketSender {
            requests: self.requests.clone(),
            primary: self.primary.clone(),
        }
    }

    /// Pushes the pipeline unless the target already runs it (same cookie): pushing wipes
    /// every table. Returns whether it pushed.
    pub async fn ensure_pipeline(
        &mut self,
        p4info: &P4Info,
        device_config: &[u8],
        cookie: u64,
    ) -> Result<bool, ClientError> {
        let current = self
            .client
            .get_forwarding_pipeline_config(p4::GetForwardingPipelineConfigRequest {
                device_id: self.device_id,
                response_type: p4::get_forwarding_pipeline_config_request::ResponseType::CookieOnly
                    as i32,
            })
            .await;
        let running_cookie = match current {
            Ok(reply) => reply
                .into_inner()
                .config
                .and_then(|c| c.cookie)
                .map(|c| c.cookie),
            // No pipeline yet.
            Err(status) if status.code() == tonic::Code::FailedPrecondition => None,
            Err(status) => {
                return Err(ClientError::Rpc {
                    call: "GetForwardingPipelineConfig",
                    status,
                });
            }
        };
        if running_cookie == Some(cookie) {
            return Ok(false);
        }
        self.client
            .set_forwarding_pipeline_config(p4::SetForwardingPipelineConfigRequest {
                device_id: self.device_id,
                election_id: Some(uint128(self.election_id)),
                action: p4::set_forwarding_pipeline_config_request::Action::VerifyAndCommit as i32,
                config: Some(p4::ForwardingPipelineConfig {
                    p4info: Some(p4info.clone()),
                    p4_device_config: device_config.to_vec(),
                    cookie: Some(p4::forwarding_pipeline_config::Cookie { cookie }),
                }),
                ..Default::default()
            })
            .await
            .map_err(|status| ClientError::Rpc {
                call: "SetForwardingPipelineConfig",
                status,
            })?;
        warn!(
            cookie,
            "P4Runtime: pipeline pushed (every table starts empty)"
        );
        Ok(true)
    }

    /// One batch, CONTINUE_ON_ERROR. On failure, says which updates failed and why.
    pub async fn write(&mut self, ops: &[Op]) -> Result<(), WriteFailure> {
        let updates = ops
            .iter()
            .map(|op| p4::Update {
                r#type: match op {
                    Op::Insert(_) => p4::update::Type::Insert,
                    Op::Modify { .. } => p4::update::Type::Modify,
                    Op::Delete(_) => p4::update::Type::Delete,
                } as i32,
                entity: Some(p4::Entity {
                    entity: Some(p4::entity::Entity::TableEntry(op.entry().entry.clone())),
                }),
            })
            .collect();
        self.write_updates(updates).await
    }

    /// Updates of any entity in one batch, CONTINUE_ON_ERROR.
    pub async fn write_updates(&mut self, updates: Vec<p4::Update>) -> Result<(), WriteFailure> {
        if !self.is_primary() {
            return Err(WriteFailure {
                errors: Vec::new(),
                overall: Some(tonic::Status::permission_denied(
                    "efbd is no longer the primary controller",
                )),
            });
        }
        let count = updates.len();
        let request = p4::WriteRequest {
            device_id: self.device_id,
            election_id: Some(uint128(self.election_id)),
            updates,
            atomicity: p4::write_request::Atomicity::ContinueOnError as i32,
            ..Default::default()
        };
        match self.client.write(request).await {
            Ok(_) => Ok(()),
            Err(status) => Err(write_failure(status, count)),
        }
    }

    /// Every entry of the tables (one wildcard read per table), default entries included.
    pub async fn read_tables(
        &mut self,
        tables: &[u32],
    ) -> Result<Vec<p4::TableEntry>, ClientError> {
        let mut entities = Vec::new();
        for table in tables {
            entities.push(table_entity(p4::TableEntry {
                table_id: *table,
                ..Default::default()
            }));
            entities.push(table_entity(p4::TableEntry {
                table_id: *table,
                is_default_action: true,
                ..Default::default()
            }));
        }
        self.read(entities).await
    }

    /// Entries of a table with their direct counters.
    pub async fn read_counters(
        &mut self,
        tables: &[u32],
    ) -> Result<Vec<p4::TableEntry>, ClientError> {
        let entities = tables
            .iter()
            .map(|table| {
                table_entity(p4::TableEntry {
                    table_id: *table,
                    counter_data: Some(p4::CounterData::default()),
                    ..Default::default()
                })
            })
            .collect();
        self.read(entities).await
    }

    /// Reads the given entries (match and priority; the action is not part of the key)
    /// with their counters: a handful of entries, where a table read returns all of them.
    pub async fn read_counters_of(
        &mut self,
        entries: &[p4::TableEntry],
    ) -> Result<Vec<p4::TableEntry>, ClientError> {
        let entities = entries
            .iter()
            .map(|e| {
                table_entity(p4::TableEntry {
                    table_id: e.table_id,
                    r#match: e.r#match.clone(),
                    priority: e.priority,
                    counter_data: Some(p4::CounterData::default()),
                    ..Default::default()
                })
            })
            .collect();
        self.read(entities).await
    }

    async fn read(
        &mut self,
        entities: Vec<p4::Entity>,
    ) -> Result<Vec<p4::TableEntry>, ClientError> {
        let entities = read_entities(&mut self.client, self.device_id, entities).await?;
        Ok(entities
            .into_iter()
            .filter_map(|entity| match entity.entity {
                Some(p4::entity::Entity::TableEntry(e)) => Some(e),
                _ => None,
            })
            .collect())
    }

    /// Every multicast group of the replication engine.
    pub async fn read_multicast_groups(
        &mut self,
    ) -> Result<Vec<p4::MulticastGroupEntry>, ClientError> {
        let all = p4::Entity {
            entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
                p4::PacketReplicationEngineEntry {
                    r#type: Some(
                        p4::packet_replication_engine_entry::Type::MulticastGroupEntry(
                            p4::MulticastGroupEntry::default(),
                        ),
                    ),
                },
            )),
        };
        let entities = read_entities(&mut self.client, self.device_id, vec![all]).await?;
        Ok(entities
            .into_iter()
            .filter_map(|entity| match entity.entity {
                Some(p4::entity::Entity::PacketReplicationEngineEntry(
                    p4::PacketReplicationEngineEntry {
                        r#type:
                            Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)),
                    },
                )) => Some(g),
                _ => None,
            })
            .collect())
    }

    /// A reader of the chip's registers that does not need the connection (keep-alive
    /// records are read while a long write holds it).
    pub fn reader(&self) -> Reader {
        Reader {
            client: self.client.clone(),
            device_id: self.device_id,
            connection: self.identity.clone(),
        }
    }

    /// Sends a frame out of the chip (keep-alives).
    pub async fn packet_out(&self, packet: p4::PacketOut) -> Result<(), ClientError> {
        self.requests
            .send(p4::StreamMessageRequest {
                update: Some(p4::stream_message_request::Update::Packet(packet)),
            })
            .await
            .map_err(|_| ClientError::NotPrimary("the stream is closed".into()))
    }
}

/// Reads entities on a connection's channel, beside whatever else the connection does.
#[derive(Clone, Debug)]
pub struct Reader {
    client: P4RuntimeClient<Channel>,
    device_id: u64,
    /// Which connection it came from.
    connection: Arc<()>,
}

impl Reader {
    pub fn same_channel(&self, other: &Reader) -> bool {
        Arc::ptr_eq(&self.connection, &other.connection)
    }

    pub async fn read(&self, entities: Vec<p4::Entity>) -> Result<Vec<p4::Entity>, ClientError> {
        read_entities(&mut self.client.clone(), self.device_id, entities).await
    }
}

/// One Read: every entity of the answer's stream.
async fn read_entities(
    client: &mut P4RuntimeClient<Channel>,
    device_id: u64,
    entities: Vec<p4::Entity>,
) -> Result<Vec<p4::Entity>, ClientError> {
    let rpc = |status| ClientError::Rpc {
        call: "Read",
        status,
    };
    let mut stream = client
        .read(p4::ReadRequest {
            device_id,
            entities,
            ..Default::default()
        })
        .await
        .map_err(rpc)?
        .into_inner();
    let mut out = Vec::new();
    while let Some(reply) = stream.next().await {
        out.extend(reply.map_err(rpc)?.entities);
    }
    Ok(out)
}

/// Sends packet-outs on a connection's stream.
#[derive(Clone, Debug)]
pub struct PacketSender {
    requests: mpsc::Sender<p4::StreamMessageRequest>,
    primary: Arc<AtomicBool>,
}

impl PacketSender {
    /// Queues a packet-out without waiting: a full stream drops it (a keep-alive that
    /// never left counts as lost, which is what a congested control path is).
    pub fn send(&self, packet: p4::PacketOut) -> Result<(), ClientError> {
        if !self.primary.load(Ordering::Relaxed) {
            return Err(ClientError::NotPrimary("not primary".into()));
        }
        self.requests
            .try_send(p4::StreamMessageRequest {
                update: Some(p4::stream_message_request::Update::Packet(packet)),
            })
            .map_err(|e| ClientError::NotPrimary(format!("the stream refused it: {e}")))
    }
}

fn table_entity(entry: p4::TableEntry) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::TableEntry(entry)),
    }
}

/// What an arbitration answer says about us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Election {
    Primary,
    /// Nobody is primary; `highest` is the highest id the target has seen.
    NoPrimary {
        highest: Option<u128>,
    },
    /// Another controller is primary, with the highest id (`highest`).
    OtherPrimary {
        highest: Option<u128>,
    },
}

fn held_by(highest: Option<u128>) -> String {
    match highest {
        Some(id) => format!("another controller holds the chip (election id {id})"),
        None => "another controller holds the chip".to_string(),
    }
}

/// The next arbitration answer of the stream (packet-ins before it are not ours yet).
async fn next_arbitration(
    responses: &mut tonic::Streaming<p4::StreamMessageResponse>,
) -> Result<Election, ClientError> {
    loop {
        match responses.next().await {
            Some(Ok(p4::StreamMessageResponse {
                update: Some(p4::stream_message_response::Update::Arbitration(a)),
            })) => {
                let highest = a.election_id.map(|id| u128_of(&id));
                let code = a.status.map_or(tonic::Code::Ok as i32, |s| s.code);
                return Ok(if code == tonic::Code::Ok as i32 {
                    Election::Primary
                } else if code == tonic::Code::NotFound as i32 {
                    Election::NoPrimary { highest }
                } else {
                    Election::OtherPrimary { highest }
                });
            }
            Some(Ok(_)) => continue,
            Some(Err(status)) => {
                return Err(ClientError::Rpc {
                    call: "StreamChannel",
                    status,
                });
            }
            None => {
                return Err(ClientError::NotPrimary(
                    "the target closed the stream".into(),
                ));
            }
        }
    }
}

fn u128_of(id: &p4::Uint128) -> u128 {
    (u128::from(id.high) << 64) | u128::from(id.low)
}

/// Reads the stream for as long as it lasts: packet-ins go to `events`; a lost election or
/// the end of the stream clears `primary` and says so.
async fn watch_stream(
    mut responses: tonic::Streaming<p4::StreamMessageResponse>,
    events: mpsc::Sender<StreamEvent>,
    primary: Arc<AtomicBool>,
) {
    let reason = loop {
        match responses.next().await {
            Some(Ok(message)) => match message.update {
                Some(p4::stream_message_response::Update::Packet(p)) => {
                    // A full queue drops keep-alives rather than stalling the stream.
                    let _ = events.try_send(StreamEvent::PacketIn(p));
                }
                Some(p4::stream_message_response::Update::Arbitration(a)) => {
                    let code = a.status.map_or(0, |s| s.code);
                    if code != tonic::Code::Ok as i32 {
                        break held_by(a.election_id.map(|id| u128_of(&id)));
                    }
                }
                Some(p4::stream_message_response::Update::Error(e)) => {
                    warn!(?e, "P4Runtime stream error");
                }
                _ => {}
            },
            Some(Err(status)) => break format!("stream failed: {}", status.message()),
            None => break "the target closed the stream".to_string(),
        }
    };
    primary.store(false, Ordering::Relaxed);
    warn!(%reason, "P4Runtime: no longer primary");
    let _ = events.send(StreamEvent::Lost(reason)).await;
}

/// Per-update errors travel in `grpc-status-details-bin` as a google.rpc.Status whose
/// details are one p4.v1.Error per update (OK for the ones applied).
fn write_failure(status: tonic::Status, updates: usize) -> WriteFailure {
    let details = RpcStatus::decode(status.details()).ok();
    let errors: Vec<Option<(tonic::Code, String)>> = details
        .map(|d| {
            d.details
                .iter()
                .map(|any| {
                    p4::Error::decode(any.value.as_slice())
                        .ok()
                        .filter(|e| e.canonical_code != 0)
                        .map(|e| (tonic::Code::from_i32(e.canonical_code), e.message))
                })
                .collect()
        })
        .unwrap_or_default();
    if errors.len() == updates {
        WriteFailure {
            errors,
            overall: None,
        }
    } else {
        WriteFailure {
            errors: Vec::new(),
            overall: Some(status),
        }
    }
}
