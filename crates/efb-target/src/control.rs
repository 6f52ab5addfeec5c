//! The target's control service (efb.target.v1.TargetControl): the world around the
//! chip, for tests and demos.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use efb_p4info::names::drop_reasons as dr;
use tonic::{Request, Response, Status};

use crate::control_proto::{self as pb, port_ref, target_control_server::TargetControl};
use crate::device::Device;
use crate::filters::Fault;

pub struct ControlService {
    device: Arc<Device>,
}

impl ControlService {
    pub fn new(device: Arc<Device>) -> ControlService {
        ControlService { device }
    }

    fn port(&self, port: Option<&pb::PortRef>) -> Result<u32, Status> {
        let map = self.device.ports.map();
        match port.and_then(|p| p.port.as_ref()) {
            Some(port_ref::Port::Name(name)) => map
                .resolve(name)
                .map_err(|e| Status::invalid_argument(e.to_string())),
            // The CPU port too: a frame injected there is a packet-out, its header first.
            Some(port_ref::Port::DevicePort(dev)) if *dev == map.cpu_port() => Ok(*dev),
            Some(port_ref::Port::DevicePort(dev)) => {
                map.name_of(*dev).map(|_| *dev).ok_or_else(|| {
                    Status::invalid_argument(format!(
                        "device port {dev} is neither a front-panel port nor the CPU port ({})",
                        map.cpu_port()
                    ))
                })
            }
            None => Err(Status::invalid_argument("no port given")),
        }
    }

    fn frame(&self, c: crate::ports::Captured) -> pb::Frame {
        let name = self
            .device
            .ports
            .map()
            .name_of(c.port)
            .map(|n| n.to_string())
            .unwrap_or_default();
        pb::Frame {
            device_port: c.port,
            port_name: name,
            payload: c.frame,
            time_ns: c.time_ns,
        }
    }
}

/// Names of the drop_reasons indexes, for people reading counters.
pub fn drop_reason_name(reason: u32) -> &'static str {
    match reason {
        dr::UNKNOWN_PORT => "unknown-port",
        dr::LINK_MISSING => "link-missing",
        dr::MALFORMED => "malformed",
        dr::FLOW_DROP => "flow-drop",
        dr::FROM_FILTER_UNTAGGED => "from-filter-untagged",
        dr::PACKET_OUT_PORT => "packet-out-port",
        dr::PORT_DOWN => "port-down",
        _ => "unused",
    }
}

#[tonic::async_trait]
impl TargetControl for ControlService {
    async fn inject_frames(
        &self,
        request: Request<pb::InjectFramesRequest>,
    ) -> Result<Response<pb::InjectFramesResponse>, Status> {
        let frames = request.into_inner().frames;
        let resolved = frames
            .into_iter()
            .map(|f| Ok((self.port(f.port.as_ref())?, f.payload)))
            .collect::<Result<Vec<_>, Status>>()?;
        let device = self.device.clone();
        let n = resolved.len() as u64;
        tokio::task::spawn_blocking(move || {
            for (port, payload) in resolved {
                device.inject(port, &payload);
            }
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::InjectFramesResponse { accepted: n }))
    }

    async fn read_frames(
        &self,
        request: Request<pb::ReadFramesRequest>,
    ) -> Result<Response<pb::ReadFramesResponse>, Status> {
        let req = request.into_inner();
        let ports = req
            .ports
            .iter()
            .map(|p| self.port(Some(p)))
            .collect::<Result<Vec<_>, _>>()?;
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(u64::from(req.timeout_ms));
        let want = req.min_frames as usize;
        loop {
            let arrived = self.device.ports.arrived.notified();
            if self.device.ports.count(&ports) >= want || tokio::time::Instant::now() >= deadline {
                break;
            }
            let _timed_out = tokio::time::timeout_at(deadline, arrived).await;
        }
        let frames = self
            .device
            .ports
            .take(&ports, req.keep)
            .into_iter()
            .map(|c| self.frame(c))
            .collect();
        Ok(Response::new(pb::ReadFramesResponse { frames }))
    }

    async fn set_filter(
        &self,
        request: Request<pb::SetFilterRequest>,
    ) -> Result<Response<pb::SetFilterResponse>, Status> {
        let req = request.into_inner();
        let a = self.port(req.port_a.as_ref())?;
        let b = self.port(req.port_b.as_ref())?;
        if !(0.0..=1.0).contains(&req.loss_ratio) {
            return Err(Status::invalid_argument(format!(
                "loss ratio {} is not between 0 and 1",
                req.loss_ratio
            )));
        }
        let fault = Fault {
            delay_ns: req.delay_ns,
            loss_ratio: req.loss_ratio,
            dead: req.dead,
        };
        self.device.filters.set(a, b, fault);
        tracing::info!(a, b, ?fault, "filter fault set");
        Ok(Response::new(pb::SetFilterResponse {}))
    }

    async fn get_ports(
        &self,
        _: Request<pb::GetPortsRequest>,
    ) -> Result<Response<pb::GetPortsResponse>, Status> {
        let map = self.device.ports.map();
        let ports = self
            .device
            .ports
            .all()
            .into_iter()
            .map(|(p, c)| pb::PortStatus {
                device_port: p,
                name: map.name_of(p).map(|n| n.to_string()).unwrap_or_default(),
                up: c.oper_up(),
                rx_frames: c.rx_frames.load(Ordering::Relaxed),
                rx_bytes: c.rx_bytes.load(Ordering::Relaxed),
                tx_frames: c.tx_frames.load(Ordering::Relaxed),
                tx_bytes: c.tx_bytes.load(Ordering::Relaxed),
                drops: c.drops.load(Ordering::Relaxed),
            })
            .collect();
        Ok(Response::new(pb::GetPortsResponse {
            ports,
            drops: self.drop_counts(),
            packet_in_dropped: self.device.packet_in_dropped.load(Ordering::Relaxed),
        }))
    }

    async fn set_port_state(
        &self,
        request: Request<pb::SetPortStateRequest>,
    ) -> Result<Response<pb::SetPortStateResponse>, Status> {
        let req = request.into_inner();
        let port = self.port(req.port.as_ref())?;
        self.device.ports.set_up(port, req.up);
        Ok(Response::new(pb::SetPortStateResponse {}))
    }

    async fn restart(
        &self,
        request: Request<pb::RestartRequest>,
    ) -> Result<Response<pb::RestartResponse>, Status> {
        self.device.restart(request.into_inner().keep_tables);
        Ok(Response::new(pb::RestartResponse {}))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let (loaded, bound) = self
            .device
            .state
            .read()
            .map(|s| {
                (
                    s.pipeline.is_some(),
                    s.pipeline.as_ref().is_some_and(|p| p.program.is_some()),
                )
            })
            .unwrap_or_default();
        Ok(Response::new(pb::GetStatusResponse {
            profile: self.device.profile().to_string(),
            device_id: self.device.options.device_id,
            pipeline_loaded: loaded,
            program_bound: bound,
            restarts: self.device.restarts(),
        }))
    }
}

impl ControlService {
    fn drop_counts(&self) -> Vec<pb::DropCount> {
        let Ok(state) = self.device.state.read() else {
            return Vec::new();
        };
        let Some(program) = state.pipeline.as_ref().and_then(|p| p.program.clone()) else {
            return Vec::new();
        };
        let cells = state
            .objects
            .counters
            .get(&program.drop_counter)
            .map(Vec::as_slice)
            .unwrap_or_default();
        cells
            .iter()
            .zip(0u32..)
            .map(|(cell, reason)| pb::DropCount {
                reason,
                name: drop_reason_name(reason).to_string(),
                frames: cell.packets.load(Ordering::Relaxed),
            })
            .filter(|d| d.frames > 0)
            .collect()
    }
}
