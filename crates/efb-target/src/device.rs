//! The emulated switch: its pipeline and tables, its controllers, its ports and the
//! filters cabled to them. One `RwLock` guards the forwarding state: a Write batch holds
//! it exclusively (so packets see the state before or after a batch, never inside one),
//! packets share it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use efb_p4info::names::{PacketFieldName, drop_reasons, packet_io};
use efb_p4info::{P4InfoIndex, PortMap};
use p4runtime_proto::p4::v1::{
    self as p4, ForwardingPipelineConfig, PacketMetadata, stream_message_response,
};
use tokio::sync::watch;

use crate::arbitration::Arbitration;
use crate::bytes;
use crate::filters::Filters;
use crate::ports::Ports;
use crate::profile::Profile;
use crate::program::{PACKET_IN_BYTES, Program, Verdict, egress_keepalive};
use crate::tables::Objects;

#[derive(Clone, Debug)]
pub struct DeviceOptions {
    pub device_id: u64,
    pub profile: Profile,
    pub port_map: PortMap,
    /// Frames kept per port for ReadFrames (0: no capture).
    pub capture_limit: usize,
    /// Caps every table below its P4Info size (0: the P4Info's sizes), so that tests can
    /// fill a table.
    pub table_size_limit: u64,
    /// Filters behind the pair ports return what they are sent (off: a frame out of a
    /// pair port stays out, as on a bench with nothing cabled, for replaying tests frame
    /// by frame).
    pub emulated_filters: bool,
}

/// An installed (or saved) pipeline.
#[derive(Clone)]
pub struct Pipeline {
    pub config: ForwardingPipelineConfig,
    pub index: Arc<P4InfoIndex>,
    /// The efb program bound to this P4Info, when it is that program.
    pub program: Option<Arc<Program>>,
}

#[derive(Default)]
pub struct State {
    pub pipeline: Option<Pipeline>,
    /// Saved by VERIFY_AND_SAVE, waiting for COMMIT.
    pub saved: Option<Pipeline>,
    pub objects: Objects,
    /// Pair port -> the other port of its pair (where its filter returns frames).
    pub pair_peers: std::collections::HashMap<u32, u32>,
}

impl State {
    /// Recomputes the filter cabling after the `ingress_port` table changed.
    pub fn refresh_peers(&mut self) {
        self.pair_peers.clear();
        let Some(program) = self.pipeline.as_ref().and_then(|p| p.program.clone()) else {
            return;
        };
        for (lan, wan) in program.pair_peers(&self.objects) {
            self.pair_peers.insert(lan, wan);
            self.pair_peers.insert(wan, lan);
        }
    }
}

pub struct Device {
    pub options: DeviceOptions,
    pub state: RwLock<State>,
    pub arbitration: Mutex<Arbitration>,
    pub ports: Ports,
    pub filters: Filters,
    start: Instant,
    restarts: AtomicU64,
    /// Bumped by every restart; streams end when it changes.
    pub epoch: watch::Sender<u64>,
    pub packet_in_dropped: AtomicU64,
    /// Packet-outs taken from the controller, packet-ins sent to it (the CPU port's load).
    pub packet_outs: AtomicU64,
    pub packet_ins: AtomicU64,
    /// Held while frames are handled in the chip's clock order (see `packet_out`).
    chip_order: Mutex<()>,
    next_stream: AtomicU64,
}

impl Device {
    /// A target with no pipeline, as after power-on. Needs a tokio runtime (the filters'
    /// delay line runs as a task).
    pub fn new(options: DeviceOptions) -> Arc<Device> {
        let ports = Ports::new(options.port_map.clone(), options.capture_limit);
        let device = Arc::new(Device {
            arbitration: Mutex::new(Arbitration::new(options.device_id)),
            options,
            state: RwLock::new(State::default()),
            ports,
            filters: Filters::default(),
            start: Instant::now(),
            restarts: AtomicU64::new(0),
            epoch: watch::channel(0).0,
            packet_in_dropped: AtomicU64::new(0),
            packet_outs: AtomicU64::new(0),
            packet_ins: AtomicU64::new(0),
            chip_order: Mutex::new(()),
            next_stream: AtomicU64::new(1),
        });
        tokio::spawn(delay_line(Arc::downgrade(&device)));
        device
    }

    pub fn profile(&self) -> Profile {
        self.options.profile
    }

    /// Chip time: ns since the target started.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    pub fn new_stream_id(&self) -> u64 {
        self.next_stream.fetch_add(1, Ordering::Relaxed)
    }

    /// A frame entering by front-panel port `port` now.
    pub fn inject(&self, port: u32, frame: &[u8]) {
        self.receive(port, frame, self.now_ns());
    }

    /// A frame entering by `port` at chip time `rx_ns`: the program runs, its verdict is
    /// carried out.
    pub fn receive(&self, port: u32, frame: &[u8], rx_ns: u64) {
        self.ports.count_rx(port, frame);
        let Ok(state) = self.state.read() else { return };
        // The CPU port has no link to be down.
        if port != self.ports.map().cpu_port() && !self.ports.is_up(port) {
            return self.dropped(&state, port, drop_reasons::PORT_DOWN, frame.len());
        }
        self.run(&state, port, frame, rx_ns);
    }

    /// The program on a frame entering by `port` (front panel, or a CPU port for a
    /// packet-out), and what becomes of it.
    fn run(&self, state: &State, port: u32, frame: &[u8], rx_ns: u64) {
        let Some(program) = state.pipeline.as_ref().and_then(|p| p.program.clone()) else {
            // No program runs: the chip forwards nothing.
            return self.ports.count_drop(port);
        };
        match program.process(&state.objects, port, frame, rx_ns) {
            Verdict::Emit {
                port: out,
                mut frame,
                stamp_departure,
            } => {
                // The emulated pipeline takes no time: it leaves when it came in.
                if stamp_departure {
                    egress_keepalive(&mut frame, rx_ns, out);
                }
                self.emit(state, port, out, &frame, rx_ns);
            }
            Verdict::Replicate { group, frame } => {
                self.replicate(state, port, group, &frame, rx_ns);
            }
            Verdict::Drop { reason, bytes } => self.dropped_counted(state, port, reason, bytes),
            Verdict::Lost => self.ports.count_drop(port),
        }
    }

    /// A frame the target drops before the program runs (its port is down): counted as
    /// the program counts, with the FCS.
    fn dropped(&self, state: &State, port: u32, reason: u32, len: usize) {
        self.dropped_counted(state, port, reason, len + 4);
    }

    fn dropped_counted(&self, state: &State, port: u32, reason: u32, bytes: usize) {
        self.ports.count_drop(port);
        let counter = state
            .pipeline
            .as_ref()
            .and_then(|p| p.program.as_ref())
            .map(|p| p.drop_counter);
        let cell = counter
            .and_then(|c| state.objects.counters.get(&c))
            .and_then(|cells| cells.get(reason as usize));
        if let Some(cell) = cell {
            cell.count(bytes);
        }
    }

    /// A frame leaving by `port`: to the controller when it is the CPU port (its packet-in
    /// header becomes the PacketIn's metadata); otherwise counted, captured, and handed to
    /// the filter when the port is a pair's. A port this chip lacks loses it, as the
    /// traffic manager does.
    fn emit(&self, state: &State, ingress: u32, port: u32, frame: &[u8], time_ns: u64) {
        if port == self.ports.map().cpu_port() {
            return self.packet_in(state, frame);
        }
        if self.ports.map().name_of(port).is_none() {
            tracing::debug!(port, "frame sent to a port this chip lacks: lost");
            return self.ports.count_drop(ingress);
        }
        if !self.ports.is_up(port) {
            self.ports.count_tx_drop(port);
            return self.dropped(state, ingress, drop_reasons::PORT_DOWN, frame.len());
        }
        self.ports.transmit(port, frame, time_ns);
        if !self.options.emulated_filters {
            return;
        }
        if let Some(peer) = state.pair_peers.get(&port) {
            self.filters.send(port, *peer, frame, time_ns);
        }
    }

    /// The traffic manager's multicast: a copy of `frame` per replica of `group`, each
    /// through egress (its departure time and the port it leaves by) and out of the
    /// replica's port, through the filter there like any frame. A group
    /// that does not exist (or has no replica) loses the frame, counted by no drop reason,
    /// as a port the chip lacks does.
    fn replicate(&self, state: &State, ingress: u32, group: u16, frame: &[u8], time_ns: u64) {
        let replicas = state
            .objects
            .multicast
            .get(&u32::from(group))
            .map(|g| g.replicas.as_slice())
            .unwrap_or_default();
        if replicas.is_empty() {
            tracing::debug!(
                group,
                "packet-out to a multicast group without replicas: lost"
            );
            return self.ports.count_drop(ingress);
        }
        let program = state.pipeline.as_ref().and_then(|p| p.program.as_ref());
        for replica in replicas {
            let mut copy = frame.to_vec();
            egress_keepalive(&mut copy, time_ns, replica.port);
            if let Some(program) = program {
                program.round_enters(&state.objects, &copy);
            }
            self.emit(state, ingress, replica.port, &copy, time_ns);
        }
    }

    /// A packet-out from the primary: in by the CPU port with its header (the egress port
    /// and the multicast group it names), through the program like any frame.
    pub fn packet_out(&self, port: u32, group: u32, frame: Vec<u8>) {
        // The chip handles frames in the order of its clock: a filter's return due before
        // this packet-out entered is in before it (the delay line's task may be late).
        let _in_order = self.chip_order.lock();
        self.deliver_due();
        self.packet_outs.fetch_add(1, Ordering::Relaxed);
        let Ok(state) = self.state.read() else { return };
        let cpu = self.ports.map().cpu_port();
        let field = |v: u32| u16::try_from(v).unwrap_or(u16::MAX).to_be_bytes();
        let mut wire = Vec::with_capacity(frame.len() + 4);
        wire.extend_from_slice(&field(port));
        wire.extend_from_slice(&field(group));
        wire.extend_from_slice(&frame);
        self.run(&state, cpu, &wire, self.now_ns());
    }

    /// A frame for the controller: its packet-in header (ingress port, arrival time)
    /// becomes the PacketIn's metadata, the rest its payload.
    fn packet_in(&self, state: &State, frame: &[u8]) {
        let Some((header, payload)) = frame.split_at_checked(PACKET_IN_BYTES) else {
            return;
        };
        let port = u32::from(u16::from_be_bytes([header[0], header[1]]));
        let rx_ns = header[2..]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let Some(metadata) = packet_in_metadata(state, port, rx_ns) else {
            return;
        };
        let message = p4::StreamMessageResponse {
            update: Some(stream_message_response::Update::Packet(p4::PacketIn {
                payload: payload.to_vec(),
                metadata,
            })),
        };
        let primaries = self
            .arbitration
            .lock()
            .map(|a| a.primaries())
            .unwrap_or_default();
        let mut delivered = false;
        for tx in primaries {
            delivered |= tx.try_send(Ok(message.clone())).is_ok();
        }
        self.packet_ins.fetch_add(1, Ordering::Relaxed);
        if !delivered {
            self.packet_in_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn packet_in_metadata(state: &State, port: u32, rx_ns: u64) -> Option<Vec<PacketMetadata>> {
    let info = state.pipeline.as_ref()?.index.packet_in()?.clone();
    let value = |name: &str| match PacketFieldName::find(name) {
        Some(packet_io::INGRESS_PORT) => u128::from(port),
        Some(packet_io::RX_TSTAMP) => u128::from(rx_ns),
        _ => 0,
    };
    Some(
        info.fields
            .iter()
            .map(|f| PacketMetadata {
                metadata_id: f.id,
                value: bytes::from_u128(value(&f.name)),
            })
            .collect(),
    )
}

impl Device {
    /// The filters' returns due by now, received at the chip time each was due. Returns
    /// when the next one is due.
    fn deliver_due(&self) -> Option<u64> {
        let (due, next) = self.filters.due(self.now_ns());
        for f in due {
            self.receive(f.port, &f.frame, f.due_ns);
        }
        next
    }

    /// Restarts the target: streams break, election ids are forgotten; the forwarding
    /// state survives only with `keep_tables`.
    pub fn restart(&self, keep_tables: bool) {
        let status = tonic::Status::unavailable("the target restarted");
        if let Ok(mut arbitration) = self.arbitration.lock() {
            arbitration.reset(&status);
        }
        if !keep_tables && let Ok(mut state) = self.state.write() {
            *state = State::default();
        }
        self.filters.clear_in_flight();
        let n = self.restarts.fetch_add(1, Ordering::Relaxed) + 1;
        self.epoch.send_replace(n);
        tracing::info!(keep_tables, "target restarted");
    }
}

/// Returns frames from the filters when they are due. Tokio's timer has millisecond
/// resolution, so frames may come back late in wall time; the chip time they carry is
/// exact.
async fn delay_line(device: Weak<Device>) {
    loop {
        let Some(dev) = device.upgrade() else { return };
        let next = {
            let _in_order = dev.chip_order.lock();
            dev.deliver_due()
        };
        let wait = next.map(|n| Duration::from_nanos(n.saturating_sub(dev.now_ns())));
        let notify = dev.filters.wake.clone();
        drop(dev);
        let idle = Duration::from_millis(200);
        tokio::select! {
            () = notify.notified() => {}
            () = tokio::time::sleep(wait.unwrap_or(idle).min(idle)) => {}
        }
    }
}
