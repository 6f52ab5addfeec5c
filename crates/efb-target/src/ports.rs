//! Front-panel ports as the target sees them: state (up/down), counters, and a capture
//! of what left each port (bounded: the oldest frames go first), which tests read.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use efb_p4info::PortMap;
use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct PortCounters {
    pub up: AtomicBool,
    pub rx_frames: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_frames: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub drops: AtomicU64,
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
}

impl Ports {
    pub fn new(map: PortMap, capture_limit: usize) -> Ports {
        let counters = map
            .device_ports()
            .into_iter()
            .map(|p| {
                let c = PortCounters::default();
                c.up.store(true, Ordering::Relaxed);
                (p, c)
            })
            .collect();
        Ports {
            map,
            counters,
            captures: Mutex::new(BTreeMap::new()),
            capture_limit,
            arrived: Notify::new(),
        }
    }

    pub fn map(&self) -> &PortMap {
        &self.map
    }

    pub fn get(&self, port: u32) -> Option<&PortCounters> {
        self.counters.get(&port)
    }

    pub fn is_up(&self, port: u32) -> bool {
        self.get(port).is_some_and(|c| c.up.load(Ordering::Relaxed))
    }

    pub fn set_up(&self, port: u32, up: bool) -> bool {
        let Some(c) = self.get(port) else {
            return false;
        };
        c.up.store(up, Ordering::Relaxed);
        true
    }

    pub fn count_rx(&self, port: u32, len: usize) {
        if let Some(c) = self.get(port) {
            c.rx_frames.fetch_add(1, Ordering::Relaxed);
            c.rx_bytes.fetch_add(len as u64, Ordering::Relaxed);
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
