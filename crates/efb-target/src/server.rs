//! The P4Runtime service (and the target's control service) on one gRPC server.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use efb_openconfig::InterfacesService;
use efb_p4info::names::packet_io::{EGRESS_PORT, MCAST_GRP};
use efb_p4info::{MatchKind, P4InfoIndex};
use futures::{Stream, StreamExt};
use gnmi_proto::gnmi::g_nmi_server::GNmiServer;
use p4runtime_proto::p4::v1::{
    self as p4, get_forwarding_pipeline_config_request::ResponseType, p4_runtime_server::P4Runtime,
    p4_runtime_server::P4RuntimeServer,
    set_forwarding_pipeline_config_request::Action as SetAction, stream_message_request,
    stream_message_response,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming};

use crate::arbitration::StreamTx;
use crate::bytes;
use crate::control::ControlService;
use crate::control_proto::target_control_server::TargetControlServer;
use crate::device::{Device, Pipeline};
use crate::error::TargetError;
use crate::interfaces::ChipInterfaces;
use crate::program::Program;
use crate::tables::Objects;

/// Large enough for a batch of a hundred thousand entries.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

pub struct P4RuntimeService {
    device: Arc<Device>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl P4Runtime for P4RuntimeService {
    async fn write(
        &self,
        request: Request<p4::WriteRequest>,
    ) -> Result<Response<p4::WriteResponse>, Status> {
        let device = self.device.clone();
        let req = request.into_inner();
        let n = req.updates.len();
        let result = tokio::task::spawn_blocking(move || crate::write::write(&device, &req))
            .await
            .map_err(|e| Status::internal(format!("write task: {e}")))?;
        if let Err(status) = &result {
            tracing::debug!(updates = n, code = ?status.code(), "write refused: {}", status.message());
        }
        result.map(|()| Response::new(p4::WriteResponse {}))
    }

    type ReadStream = BoxStream<p4::ReadResponse>;

    async fn read(
        &self,
        request: Request<p4::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let device = self.device.clone();
        let req = request.into_inner();
        let (responses, status) =
            tokio::task::spawn_blocking(move || crate::read::read(&device, &req))
                .await
                .map_err(|e| Status::internal(format!("read task: {e}")))??;
        let items = responses.into_iter().map(Ok).chain(status.map(Err));
        Ok(Response::new(Box::pin(tokio_stream::iter(items))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<p4::SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::SetForwardingPipelineConfigResponse>, Status> {
        set_pipeline(&self.device, request.into_inner())?;
        Ok(Response::new(p4::SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<p4::GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4::GetForwardingPipelineConfigResponse>, Status> {
        let req = request.into_inner();
        if req.device_id != self.device.options.device_id {
            return Err(Status::not_found(format!("no device {}", req.device_id)));
        }
        let state = self
            .device
            .state
            .read()
            .map_err(|_| Status::internal("state poisoned"))?;
        let config = state.pipeline.as_ref().map(|p| {
            let c = p.config.clone();
            match ResponseType::try_from(req.response_type).unwrap_or(ResponseType::All) {
                ResponseType::All => c,
                ResponseType::CookieOnly => p4::ForwardingPipelineConfig {
                    cookie: c.cookie,
                    ..Default::default()
                },
                ResponseType::P4infoAndCookie => p4::ForwardingPipelineConfig {
                    p4info: c.p4info,
                    cookie: c.cookie,
                    ..Default::default()
                },
                ResponseType::DeviceConfigAndCookie => p4::ForwardingPipelineConfig {
                    p4_device_config: c.p4_device_config,
                    cookie: c.cookie,
                    ..Default::default()
                },
            }
        });
        Ok(Response::new(p4::GetForwardingPipelineConfigResponse {
            config,
        }))
    }

    type StreamChannelStream = ReceiverStream<Result<p4::StreamMessageResponse, Status>>;

    async fn stream_channel(
        &self,
        request: Request<Streaming<p4::StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(4096);
        tokio::spawn(run_stream(self.device.clone(), inbound, tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn capabilities(
        &self,
        _: Request<p4::CapabilitiesRequest>,
    ) -> Result<Response<p4::CapabilitiesResponse>, Status> {
        Ok(Response::new(p4::CapabilitiesResponse {
            p4runtime_api_version: p4runtime_proto::P4RUNTIME_API_VERSION.to_string(),
        }))
    }
}

/// One controller's stream: arbitration updates and packet-outs in, until the client
/// leaves, breaks an arbitration rule, or the target restarts.
async fn run_stream(
    device: Arc<Device>,
    mut inbound: Streaming<p4::StreamMessageRequest>,
    tx: StreamTx,
) {
    let stream = device.new_stream_id();
    let mut epoch = device.epoch.subscribe();
    let mut assigned: Option<u64> = None;
    loop {
        tokio::select! {
            msg = inbound.message() => match msg {
                Ok(Some(m)) => {
                    if let Err(e) = handle(&device, stream, &mut assigned, &tx, m) {
                        let _stream_may_be_gone = tx.send(Err(e.to_status())).await;
                        break;
                    }
                }
                Ok(None) | Err(_) => break,
            },
            _ = epoch.changed() => {
                let _stream_may_be_gone = tx.try_send(Err(Status::unavailable("the target restarted")));
                break;
            }
        }
    }
    if let Ok(mut arbitration) = device.arbitration.lock() {
        arbitration.remove(stream);
    }
}

fn handle(
    device: &Device,
    stream: u64,
    assigned: &mut Option<u64>,
    tx: &StreamTx,
    m: p4::StreamMessageRequest,
) -> Result<(), TargetError> {
    match m.update {
        Some(stream_message_request::Update::Arbitration(a)) => {
            match *assigned {
                None if a.device_id != device.options.device_id => {
                    return Err(TargetError::not_found(format!("no device {}", a.device_id)));
                }
                Some(d) if d != a.device_id => {
                    return Err(TargetError::precondition(format!(
                        "this stream is for device {d}"
                    )));
                }
                _ => {}
            }
            device
                .arbitration
                .lock()
                .map_err(|_| TargetError::new(tonic::Code::Internal, "arbitration state poisoned"))?
                .update(stream, &a, tx)?;
            *assigned = Some(a.device_id);
        }
        Some(stream_message_request::Update::Packet(p)) => {
            if let Err(e) = packet_out(device, stream, &p) {
                stream_error(tx, &e, p);
            }
        }
        Some(stream_message_request::Update::DigestAck(_)) => {
            let e = TargetError::invalid("the program has no digests");
            send_error(
                tx,
                &e,
                p4::stream_error::Details::DigestListAck(p4::DigestListAckError::default()),
            );
        }
        Some(stream_message_request::Update::Other(_)) | None => {
            let e = TargetError::unimplemented("unknown stream message");
            send_error(
                tx,
                &e,
                p4::stream_error::Details::Other(p4::StreamOtherError::default()),
            );
        }
    }
    Ok(())
}

fn packet_out(device: &Device, stream: u64, p: &p4::PacketOut) -> Result<(), TargetError> {
    let primary = device
        .arbitration
        .lock()
        .map(|a| a.is_primary_stream(stream))
        .unwrap_or(false);
    if !primary {
        return Err(TargetError::permission(
            "only the primary controller may send packets",
        ));
    }
    let info = {
        let state = device
            .state
            .read()
            .map_err(|_| TargetError::new(tonic::Code::Internal, "state poisoned"))?;
        let pipeline = state
            .pipeline
            .as_ref()
            .ok_or_else(|| TargetError::precondition("no pipeline is set"))?;
        pipeline
            .index
            .packet_out()
            .cloned()
            .ok_or_else(|| TargetError::invalid("the program has no packet_out header"))?
    };
    // Every field of the header is required, as Stratum's deparser requires it ("Missing
    // metadata with Id"); a P4Info without mcast_grp sends no group.
    let mut port = None;
    let mut group = 0;
    for field in &info.fields {
        let mut given = p.metadata.iter().filter(|m| m.metadata_id == field.id);
        let (Some(m), None) = (given.next(), given.next()) else {
            return Err(TargetError::invalid(format!(
                "packet_out metadata {} must be given exactly once",
                field.name
            )));
        };
        let value = bytes::check(
            &m.value,
            field.bitwidth,
            device.profile().canonical_bytes_required(),
        )
        .map_err(|e| e.context(format!("packet_out metadata {}", field.name)))?;
        let value = u32::try_from(bytes::to_u128(&value)).ok();
        if field.name == EGRESS_PORT.as_str() {
            port = value;
        } else if field.name == MCAST_GRP.as_str() {
            group = value.unwrap_or(0);
        }
    }
    if let Some(unknown) = p
        .metadata
        .iter()
        .find(|m| info.fields.iter().all(|f| f.id != m.metadata_id))
    {
        return Err(TargetError::invalid(format!(
            "unknown packet_out metadata id {}",
            unknown.metadata_id
        )));
    }
    let port = port.ok_or_else(|| TargetError::invalid("packet_out names no egress port"))?;
    device.packet_out(port, group, p.payload.clone());
    Ok(())
}

fn stream_error(tx: &StreamTx, e: &TargetError, p: p4::PacketOut) {
    send_error(
        tx,
        e,
        p4::stream_error::Details::PacketOut(p4::PacketOutError {
            packet_out: Some(p),
        }),
    );
}

fn send_error(tx: &StreamTx, e: &TargetError, details: p4::stream_error::Details) {
    let error = p4::StreamError {
        canonical_code: e.code as i32,
        message: e.message.clone(),
        space: crate::error::ERROR_SPACE.to_string(),
        code: 0,
        details: Some(details),
    };
    let msg = p4::StreamMessageResponse {
        update: Some(stream_message_response::Update::Error(error)),
    };
    if tx.try_send(Ok(msg)).is_err() {
        tracing::debug!("stream error dropped: the controller's stream is full");
    }
}

/// SetForwardingPipelineConfig, in the specification's order of checks.
fn set_pipeline(
    device: &Device,
    req: p4::SetForwardingPipelineConfigRequest,
) -> Result<(), Status> {
    if req.device_id != device.options.device_id {
        return Err(Status::not_found(format!("no device {}", req.device_id)));
    }
    device
        .arbitration
        .lock()
        .map_err(|_| Status::internal("arbitration state poisoned"))?
        .check_primary(&req.role, req.election_id.as_ref())?;
    let action = SetAction::try_from(req.action).unwrap_or(SetAction::Unspecified);
    let mut state = device
        .state
        .write()
        .map_err(|_| Status::internal("state poisoned"))?;
    match action {
        SetAction::Unspecified => {
            return Err(Status::invalid_argument("the action is UNSPECIFIED"));
        }
        SetAction::Verify => {
            verify(device, req.config)?;
        }
        SetAction::VerifyAndSave => state.saved = Some(verify(device, req.config)?),
        SetAction::VerifyAndCommit => {
            let pipeline = verify(device, req.config)?;
            state.objects = Objects::new(&pipeline.index);
            state.pipeline = Some(pipeline);
            state.saved = None;
        }
        SetAction::Commit => {
            if req.config.is_some() {
                return Err(Status::invalid_argument(
                    "COMMIT takes no config: it commits the saved one",
                ));
            }
            let pipeline = state
                .saved
                .take()
                .ok_or_else(|| Status::not_found("no config was saved (VERIFY_AND_SAVE)"))?;
            state.objects = Objects::new(&pipeline.index);
            state.pipeline = Some(pipeline);
        }
        SetAction::ReconcileAndCommit => {
            if device.profile().is_stratum() {
                return Err(Status::unimplemented(
                    "RECONCILE_AND_COMMIT is not supported on Tofino",
                ));
            }
            let pipeline = verify(device, req.config)?;
            reconcile(&state, &pipeline)?;
            for t in pipeline.index.tables() {
                state.objects.tables.entry(t.id).or_default();
            }
            state.objects.fit_registers(&pipeline.index);
            state.pipeline = Some(pipeline);
        }
    }
    state.refresh_peers();
    tracing::info!(
        ?action,
        bound = state.pipeline.as_ref().is_some_and(|p| p.program.is_some()),
        "forwarding pipeline config"
    );
    Ok(())
}

/// Checks that the target can run a config, and binds the efb program when it is that.
fn verify(
    device: &Device,
    config: Option<p4::ForwardingPipelineConfig>,
) -> Result<Pipeline, Status> {
    let config = config.ok_or_else(|| Status::invalid_argument("no config given"))?;
    let p4info = config
        .p4info
        .as_ref()
        .ok_or_else(|| Status::invalid_argument("the config has no P4Info"))?;
    let index = P4InfoIndex::new(p4info).map_err(|e| Status::invalid_argument(e.to_string()))?;
    if device.profile().is_stratum() {
        let program = crate::device_config::check(&index, &config.p4_device_config)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        tracing::debug!(program, "device config accepted");
    }
    for table in index.tables() {
        for field in &table.fields {
            let refused = match field.kind {
                MatchKind::Other => true,
                MatchKind::Optional => device.profile().is_stratum(),
                _ => false,
            };
            if refused {
                return Err(Status::invalid_argument(format!(
                    "table {} field {}: match kind {} is not supported by this target",
                    table.name,
                    field.name,
                    field.kind.as_str()
                )));
            }
        }
    }
    if let Some(wide) = index
        .registers()
        .find(|r| r.bitwidth > crate::registers::MAX_BITWIDTH)
    {
        return Err(Status::invalid_argument(format!(
            "register {} is bit<{}>: this target keeps cells of at most {} bits, as Tofino does",
            wide.name,
            wide.bitwidth,
            crate::registers::MAX_BITWIDTH
        )));
    }
    let program = match Program::bind(&index) {
        Ok(p) => Some(Arc::new(p)),
        Err(why) => {
            tracing::warn!(
                "the P4Info is not the EcoFilter Balancer program; packets will be dropped: {why}"
            );
            None
        }
    };
    Ok(Pipeline {
        config,
        index: Arc::new(index),
        program,
    })
}

/// RECONCILE_AND_COMMIT keeps the entries only when every table that holds some keeps its
/// id, fields and actions in the new P4Info.
fn reconcile(state: &crate::device::State, new: &Pipeline) -> Result<(), Status> {
    let Some(old) = state.pipeline.as_ref() else {
        return Ok(());
    };
    for (id, table) in &state.objects.tables {
        if table.entries.is_empty() && table.default.is_none() {
            continue;
        }
        let same = match (old.index.table(*id), new.index.table(*id)) {
            (Some(a), Some(b)) => {
                a.fields == b.fields
                    && a.actions == b.actions
                    && a.implementation_id == b.implementation_id
            }
            _ => false,
        };
        let actions_same = old.index.table(*id).is_some_and(|a| {
            a.actions.iter().all(|(aid, _)| {
                old.index.action(*aid).map(|x| &x.params)
                    == new.index.action(*aid).map(|x| &x.params)
            })
        });
        if !same || !actions_same {
            return Err(Status::invalid_argument(format!(
                "table {id} holds entries that the new P4Info cannot keep"
            )));
        }
    }
    Ok(())
}

/// The running servers.
pub struct Servers {
    pub addr: SocketAddr,
    pub device: Arc<Device>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

/// Why serving ended.
#[derive(Debug, thiserror::Error)]
pub enum ServeFailed {
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    #[error("the server's task ended: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl Servers {
    /// Stops serving and waits for the server to end.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _already_stopped = tx.send(());
        }
        let _result = (&mut self.task).await;
    }

    /// Serves until the server fails.
    pub async fn wait(self) -> Result<(), ServeFailed> {
        Ok(self.task.await??)
    }
}

/// Serves P4Runtime, gNMI (the ports as OpenConfig interfaces) and the control service at
/// `addr` (port 0 picks a free port).
pub async fn serve(device: Arc<Device>, addr: SocketAddr) -> std::io::Result<Servers> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let p4rt = P4RuntimeServer::new(P4RuntimeService {
        device: device.clone(),
    })
    .max_decoding_message_size(MAX_MESSAGE)
    .max_encoding_message_size(MAX_MESSAGE);
    let control = TargetControlServer::new(ControlService::new(device.clone()))
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let gnmi = GNmiServer::new(InterfacesService::new(Arc::new(ChipInterfaces::new(
        device.clone(),
    ))));
    // Without Nagle's delay, as a switch's gRPC server runs: a packet-in (a keep-alive
    // back) is a small write, and waiting for the controller's delayed acknowledgement
    // held each one up to 40 ms, longer than a short liveness interval. tonic's own
    // `tcp_nodelay` does not apply to connections handed to `serve_with_incoming`.
    let incoming = TcpListenerStream::new(listener).map(|stream| {
        // Fails only for a connection already reset, which its first read will find.
        stream.inspect(|s| {
            let _ = s.set_nodelay(true);
        })
    });
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(p4rt)
            .add_service(control)
            .add_service(gnmi)
            .serve_with_incoming_shutdown(incoming, async {
                let _sender_dropped_means_stop = rx.await;
            }),
    );
    tracing::info!(%addr, device_id = device.options.device_id, profile = %device.profile(), "efb-target serving P4Runtime, gNMI (OpenConfig interfaces) and TargetControl");
    Ok(Servers {
        addr,
        device,
        shutdown: Some(tx),
        task,
    })
}
