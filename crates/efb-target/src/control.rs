//! The target's control service (efb.target.v1.TargetControl): the world around the
//! chip, for tests and demos.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use efb_p4info::PortMapError;
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
            Some(port_ref::Port::Name(name)) => map.resolve(name).map_err(|e| {
                let message = format!("no port {name}: {}", map.summary());
                match e {
                    PortMapError::BadName(_) => Status::invalid_argument(message),
                    _ => Status::not_found(message),
                }
            }),
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

    /// The chip's name of a device port (`p9-0`), or its number.
    fn name(&self, port: u32) -> String {
        self.device
            .ports
            .map()
            .name_of(port)
            .map_or_else(|| port.to_string(), |n| n.to_string())
    }

    /// Pair port -> the other port of its pair, as the controller cabled them.
    fn pair_peers(&self) -> HashMap<u32, u32> {
        self.device
            .state
            .read()
            .map(|s| s.pair_peers.clone())
            .unwrap_or_default()
    }

    /// Refuses two ports that are not the pair of one filter, naming the filters there are:
    /// a fault set there would change nothing that frames go through.
    fn cabled(&self, a: u32, b: u32) -> Result<(), Status> {
        let peers = self.pair_peers();
        if peers.get(&a) == Some(&b) {
            return Ok(());
        }
        let there = match self.filters(&peers).as_slice() {
            [] => {
                "no filter is cabled yet (a controller cables the pairs when it programs the chip)"
                    .to_string()
            }
            filters => {
                let pairs: Vec<String> = filters
                    .iter()
                    .map(|f| format!("{} and {}", f.port_a, f.port_b))
                    .collect();
                format!("the filters are between {}", pairs.join(", "))
            }
        };
        Err(Status::not_found(format!(
            "{} and {} are not the two ports of one filter; {there}",
            self.name(a),
            self.name(b)
        )))
    }

    /// The filter between `a` and `b`, its lower port first.
    fn filter(&self, a: u32, b: u32) -> pb::Filter {
        let map = self.device.ports.map();
        let (a, b) = if map.name_of(a) <= map.name_of(b) {
            (a, b)
        } else {
            (b, a)
        };
        let fault = self.device.filters.fault(a, b);
        pb::Filter {
            port_a: self.name(a),
            port_b: self.name(b),
            delay_ns: fault.delay_ns,
            loss_ratio: fault.loss_ratio,
            dead: fault.dead,
        }
    }

    /// Every filter `peers` cables, by its lower port.
    fn filters(&self, peers: &HashMap<u32, u32>) -> Vec<pb::Filter> {
        let map = self.device.ports.map();
        let mut lower: Vec<(u32, u32)> = peers
            .iter()
            .filter(|(a, b)| map.name_of(**a) < map.name_of(**b))
            .map(|(a, b)| (*a, *b))
            .collect();
        lower.sort_by_key(|(a, _)| map.name_of(*a));
        lower.into_iter().map(|(a, b)| self.filter(a, b)).collect()
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

/// What a SetFilter request changes: the fields its update mask names, or all three.
#[derive(Clone, Copy, Debug)]
struct FaultChange {
    delay_ns: Option<u64>,
    loss_ratio: Option<f64>,
    dead: Option<bool>,
}

impl FaultChange {
    fn of(req: &pb::SetFilterRequest) -> Result<FaultChange, Status> {
        let paths = match &req.update_mask {
            Some(mask) if !mask.paths.is_empty() => mask.paths.clone(),
            _ => vec!["delay_ns".into(), "loss_ratio".into(), "dead".into()],
        };
        let mut change = FaultChange {
            delay_ns: None,
            loss_ratio: None,
            dead: None,
        };
        for path in paths {
            match path.as_str() {
                "delay_ns" => change.delay_ns = Some(req.delay_ns),
                "loss_ratio" => change.loss_ratio = Some(loss_ratio(req.loss_ratio)?),
                "dead" => change.dead = Some(req.dead),
                other => {
                    return Err(Status::invalid_argument(format!(
                        "update mask path {other:?}: a filter has delay_ns, loss_ratio and dead"
                    )));
                }
            }
        }
        Ok(change)
    }

    fn apply(self, fault: Fault) -> Fault {
        Fault {
            delay_ns: self.delay_ns.unwrap_or(fault.delay_ns),
            loss_ratio: self.loss_ratio.unwrap_or(fault.loss_ratio),
            dead: self.dead.unwrap_or(fault.dead),
        }
    }
}

fn loss_ratio(ratio: f64) -> Result<f64, Status> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(Status::invalid_argument(format!(
            "loss ratio {ratio} is not between 0 and 1"
        )))
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
        self.cabled(a, b)?;
        let change = FaultChange::of(&req)?;
        let fault = self.device.filters.update(a, b, |f| change.apply(f));
        tracing::info!(a, b, ?fault, "filter fault set");
        Ok(Response::new(pb::SetFilterResponse {
            filter: Some(self.filter(a, b)),
        }))
    }

    async fn get_filters(
        &self,
        request: Request<pb::GetFiltersRequest>,
    ) -> Result<Response<pb::GetFiltersResponse>, Status> {
        let req = request.into_inner();
        if req.port_a.is_none() && req.port_b.is_none() {
            let filters = self.filters(&self.pair_peers());
            return Ok(Response::new(pb::GetFiltersResponse { filters }));
        }
        let a = self.port(req.port_a.as_ref())?;
        let b = self.port(req.port_b.as_ref())?;
        self.cabled(a, b)?;
        Ok(Response::new(pb::GetFiltersResponse {
            filters: vec![self.filter(a, b)],
        }))
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
        if !self.device.ports.set_up(port, req.up) {
            return Err(Status::invalid_argument(format!(
                "device port {port} is the CPU port: it has no cable"
            )));
        }
        Ok(Response::new(pb::SetPortStateResponse {
            name: self.name(port),
        }))
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
