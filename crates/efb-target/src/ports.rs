//! Front-panel ports as the target sees them: the link (a cable, up or down), the
//! admin-status a controller sets, counters, and a capture of what left each port
//! (bounded: the oldest frames go first), which tests read. A port is up (oper-status)
//! when its link is up and it is enabled; each change of that is an event
//! ([`Ports::events`]) that gNMI ON_CHANGE subscribers hear.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use efb_p4info::PortMap;
use tokio::sync::{Notify, watch};

#[derive(Debug, Default)]
pub struct PortCounters {
    /// The link (cable and far end): what a test's cable pull sets.
    pub up: AtomicBool,
    /// Admin-status: what a controller sets over gNMI (`config/enabled`).
    pub enabled: AtomicBool,
    /// The speed a controller set (`ethernet/config/port-speed`) in Gbit/s; 0 until it
    /// does, as Stratum knows a port's speed only from its chassis configuration.
    pub speed_gbps: AtomicU32,
    pub rx_frames: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub rx_multicast: AtomicU64,
    pub rx_broadcast: AtomicU64,
    pub tx_frames: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub tx_multicast: AtomicU64,
    pub tx_broadcast: AtomicU64,
    pub drops: AtomicU64,
    /// Frames that were to leave by this port while it was down.
    pub tx_drops: AtomicU64,
    /// Times oper-status changed, and when it last did (ns since the Unix epoch).
    pub transitions: AtomicU64,
    pub last_change_ns: AtomicU64,
}

impl PortCounters {
    pub fn oper_up(&self) -> bool {
        self.up.load(Ordering::Relaxed) && self.enabled.load(Ordering::Relaxed)
    }
}

/// Whether a frame was sent to one station, a group, or everyone (its destination MAC).
fn cast(frame: &[u8]) -> (bool, bool) {
    let broadcast = frame.len() >= 6 && frame[..6] == [0xff; 6];
    let multicast = !broadcast && frame.first().is_some_and(|b| b & 1 == 1);
    (multicast, broadcast)
}

fn count_cast(frame: &[u8], multicast: &AtomicU64, broadcast: &AtomicU64) {
    match cast(frame) {
        (true, _) => multicast.fetch_add(1, Ordering::Relaxed),
        (_, true) => broadcast.fetch_add(1, Ordering::Relaxed),
        _ => 0,
    };
}

/// A frame as it left the chip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    pub port: u32,
    pub frame: Vec<u8>,
    pub time_ns: u64,
}

pub struct Ports {
    map: PortMap,
    counters: HashMap<u32, PortCounters>,
    captures: Mutex<BTreeMap<u32, VecDeque<Captured>>>,
    capture_limit: usize,
    pub arrived: Notify,
    /// Bumped at every change of a port's link or admin-status.
    events: watch::Sender<u64>,
}

impl Ports {
    pub fn new(map: PortMap, capture_limit: usize) -> Ports {
        let counters = map
            .device_ports()
            .into_iter()
            .map(|p| {
                let c = PortCounters::default();
                c.up.store(true, Ordering::Relaxed);
                c.enabled.store(true, Ordering::Relaxed);
                (p, c)
            })
            .collect();
        Ports {
            map,
            counters,
            captures: Mutex::new(BTreeMap::new()),
            capture_limit,
            arrived: Notify::new(),
            events: watch::channel(0).0,
        }
    }

    pub fn map(&self) -> &PortMap {
        &self.map
    }

    pub fn get(&self, port: u32) -> Option<&PortCounters> {
        self.counters.get(&port)
    }

    /// Whether frames pass the port (oper-status up).
    pub fn is_up(&self, port: u32) -> bool {
        self.get(port).is_some_and(PortCounters::oper_up)
    }

    /// Sets the port's link (a cable pulled or put back).
    pub fn set_up(&self, port: u32, up: bool) -> bool {
        self.change(port, |c| c.up.store(up, Ordering::Relaxed))
    }

    /// Sets the port's admin-status.
    pub fn set_enabled(&self, port: u32, enabled: bool) -> bool {
        self.change(port, |c| c.enabled.store(enabled, Ordering::Relaxed))
    }

    /// Sets the port's speed.
    pub fn set_speed(&self, port: u32, gbps: u32) -> bool {
        self.change(port, |c| c.speed_gbps.store(gbps, Ordering::Relaxed))
    }

    fn change(&self, port: u32, set: impl Fn(&PortCounters)) -> bool {
        let Some(c) = self.get(port) else {
            return false;
        };
        let before = c.oper_up();
        set(c);
        if c.oper_up() != before {
            c.transitions.fetch_add(1, Ordering::Relaxed);
            c.last_change_ns.store(wall_clock_ns(), Ordering::Relaxed);
        }
        self.events.send_modify(|n| *n += 1);
        true
    }

    /// Ticks at every change of a port's link or admin-status.
    pub fn events(&self) -> watch::Receiver<u64> {
        self.events.subscribe()
    }

    pub fn count_rx(&self, port: u32, frame: &[u8]) {
        if let Some(c) = self.get(port) {
            c.rx_frames.fetch_add(1, Ordering::Relaxed);
            c.rx_bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
            count_cast(frame, &c.rx_multicast, &c.rx_broadcast);
        }
    }

    /// A frame that was to leave by `port` while it was down.
    pub fn count_tx_drop(&self, port: u32) {
        if let Some(c) = self.get(port) {
            c.tx_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn count_drop(&self, port: u32) {
        if let Some(c) = self.get(port) {
            c.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a frame out of `port` and keeps it in the capture.
    pub fn transmit(&self, port: u32, frame: &[u8], time_ns: u64) {
        if let Some(c) = self.get(port) {
            c.tx_frames.fetch_add(1, Ordering::Relaxed);
            c.tx_bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
            count_cast(frame, &c.tx_multicast, &c.tx_broadcast);
        }
        if self.capture_limit == 0 {
            return;
        }
        if let Ok(mut captures) = self.captures.lock() {
            let queue = captures.entry(port).or_default();
            if queue.len() >= self.capture_limit {
                queue.pop_front();
            }
            queue.push_back(Captured {
                port,
                frame: frame.to_vec(),
                time_ns,
            });
        }
        self.arrived.notify_waiters();
    }

    /// Frames captured on `ports` (every port when empty), oldest first, taken out of the
    /// capture unless `keep`.
    pub fn take(&self, ports: &[u32], keep: bool) -> Vec<Captured> {
        let Ok(mut captures) = self.captures.lock() else {
            return Vec::new();
        };
        let mut out: Vec<Captured> = Vec::new();
        for (port, queue) in captures.iter_mut() {
            if !ports.is_empty() && !ports.contains(port) {
                continue;
            }
            if keep {
                out.extend(queue.iter().cloned());
            } else {
                out.extend(queue.drain(..));
            }
        }
        out.sort_by_key(|c| c.time_ns);
        out
    }

    pub fn count(&self, ports: &[u32]) -> usize {
        let Ok(captures) = self.captures.lock() else {
            return 0;
        };
        captures
            .iter()
            .filter(|(p, _)| ports.is_empty() || ports.contains(p))
            .map(|(_, q)| q.len())
            .sum()
    }

    pub fn clear_captures(&self) {
        if let Ok(mut captures) = self.captures.lock() {
            captures.clear();
        }
    }

    /// Every port of the board, ascending: a chip counts on all of its ports, traffic or
    /// not, so the management plane shows zeros rather than unknown.
    pub fn all(&self) -> Vec<(u32, &PortCounters)> {
        let mut out: Vec<(u32, &PortCounters)> =
            self.counters.iter().map(|(p, c)| (*p, c)).collect();
        out.sort_by_key(|(p, _)| *p);
        out
    }
}

fn wall_clock_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}
