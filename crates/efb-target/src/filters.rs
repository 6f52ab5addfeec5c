//! The filters behind pair ports, emulated: a frame that leaves one port of a pair comes
//! back into the other after the filter's delay, unless the filter loses it or is dead.
//! Keep-alives and tagged frames alike. The arrival time the chip sees is the departure
//! time plus the delay (not when the emulation gets round to it), so that time on path
//! measured from keep-alives is the configured delay.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

use rand::Rng;

/// The default time a frame spends in a filter (DOMAIN.md: normal is 20-30 us).
pub const DEFAULT_DELAY_NS: u64 = 25_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fault {
    pub delay_ns: u64,
    pub loss_ratio: f64,
    pub dead: bool,
}

impl Default for Fault {
    fn default() -> Fault {
        Fault {
            delay_ns: DEFAULT_DELAY_NS,
            loss_ratio: 0.0,
            dead: false,
        }
    }
}

/// A frame on its way back from a filter.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InFlight {
    pub due_ns: u64,
    pub seq: u64,
    pub port: u32,
    pub frame: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    faults: HashMap<(u32, u32), Fault>,
    queue: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
}

#[derive(Default)]
pub struct Filters {
    inner: Mutex<Inner>,
    pub wake: std::sync::Arc<tokio::sync::Notify>,
}

fn key(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

impl Filters {
    pub fn set(&self, a: u32, b: u32, fault: Fault) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.faults.insert(key(a, b), fault);
        }
    }

    /// Changes the filter's fault as `change` says, at once (no other change between the
    /// read and the write), and returns the new one.
    pub fn update(&self, a: u32, b: u32, change: impl FnOnce(Fault) -> Fault) -> Fault {
        // A panic elsewhere while holding the lock leaves the faults whole: keep using them.
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fault = inner.faults.entry(key(a, b)).or_default();
        *fault = change(*fault);
        *fault
    }

    pub fn fault(&self, a: u32, b: u32) -> Fault {
        self.inner
            .lock()
            .ok()
            .and_then(|i| i.faults.get(&key(a, b)).copied())
            .unwrap_or_default()
    }

    /// A frame left `from` towards the filter whose other side is `to`.
    pub fn send(&self, from: u32, to: u32, frame: &[u8], now_ns: u64) {
        let fault = self.fault(from, to);
        if fault.dead || (fault.loss_ratio > 0.0 && rand::rng().random::<f64>() < fault.loss_ratio)
        {
            return;
        }
        if let Ok(mut inner) = self.inner.lock() {
            inner.seq += 1;
            let seq = inner.seq;
            inner.queue.push(Reverse(InFlight {
                due_ns: now_ns + fault.delay_ns,
                seq,
                port: to,
                frame: frame.to_vec(),
            }));
        }
        self.wake.notify_one();
    }

    /// Frames due by `now_ns`, and when the next one is due.
    pub fn due(&self, now_ns: u64) -> (Vec<InFlight>, Option<u64>) {
        let Ok(mut inner) = self.inner.lock() else {
            return (Vec::new(), None);
        };
        let mut out = Vec::new();
        while inner
            .queue
            .peek()
            .is_some_and(|Reverse(f)| f.due_ns <= now_ns)
        {
            if let Some(Reverse(f)) = inner.queue.pop() {
                out.push(f);
            }
        }
        let next = inner.queue.peek().map(|Reverse(f)| f.due_ns);
        (out, next)
    }

    /// Forgets frames in flight and faults (a restart of the test bed, not of filters).
    pub fn clear_in_flight(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.queue.clear();
        }
    }
}
