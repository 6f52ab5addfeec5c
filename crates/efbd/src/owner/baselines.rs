//! `clear ... statistics`, as Junos's `clear interfaces statistics`: the chip's counters
//! are never written (another controller, the metrics and a restarted efbd read them as
//! they are); efbd keeps the value each counter had when it was cleared, and every reader
//! of the state tree (`show`, gNMI Get and Subscribe) sees the counts since.
//!
//! Kept in memory: efbd restarted shows the chip's own counts again.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use efb_model::Config;
use efb_p4::platform::PortCounters;
use efb_yang::text::excerpt;

use crate::chip::{Counters, CountersToRead, Flows};

/// The baselines, shared by every copy of the state the owner hands out.
#[derive(Clone, Debug, Default)]
pub struct Baselines(Arc<Mutex<Taken>>);

#[derive(Debug, Default)]
struct Taken {
    /// A port's counters as [`port_counts`] orders them.
    ports: BTreeMap<String, [u64; 8]>,
    /// A flow's packets and bytes.
    flows: BTreeMap<String, [u64; 2]>,
}

/// The counters of a port a clear resets (oper-status is no counter).
fn port_counts(c: &PortCounters) -> [u64; 8] {
    [
        c.in_frames,
        c.in_bytes,
        c.out_frames,
        c.out_bytes,
        c.in_discards,
        c.in_errors,
        c.out_discards,
        c.out_errors,
    ]
}

fn set_port_counts(c: &mut PortCounters, counts: [u64; 8]) {
    [
        c.in_frames,
        c.in_bytes,
        c.out_frames,
        c.out_bytes,
        c.in_discards,
        c.in_errors,
        c.out_discards,
        c.out_errors,
    ] = counts;
}

impl Baselines {
    fn taken(&self) -> MutexGuard<'_, Taken> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// From now on the ports of `read` count from the values read.
    pub fn clear_ports(&self, read: &BTreeMap<String, PortCounters>) {
        let mut taken = self.taken();
        for (name, counters) in read {
            taken.ports.insert(name.clone(), port_counts(counters));
        }
    }

    /// From now on the flows of `read` count from the values read (packets, bytes).
    pub fn clear_flows(&self, read: &BTreeMap<String, (u64, u64)>) {
        let mut taken = self.taken();
        for (name, (packets, bytes)) in read {
            taken.flows.insert(name.clone(), [*packets, *bytes]);
        }
    }

    /// The counters read from the chip made counts since the last clear. A counter below
    /// its baseline means the chip counts from zero again (restarted, or the flow's
    /// entries written anew): that entry's baseline goes, and the chip's count is shown.
    pub fn apply(&self, counters: &mut Counters) {
        let mut taken = self.taken();
        for (name, port) in &mut counters.ports {
            if let Some(counts) = since(&mut taken.ports, name, port_counts(port)) {
                set_port_counts(port, counts);
            }
        }
        let Some(flows) = &mut counters.flows else {
            return;
        };
        // A flow read but missing from the map counted nothing: zero.
        for name in counters.entries.keys() {
            let (packets, bytes) = flows.get(name).copied().unwrap_or_default();
            if let Some([packets, bytes]) = since(&mut taken.flows, name, [packets, bytes]) {
                flows.insert(name.clone(), (packets, bytes));
            }
        }
    }

    /// From now on the ports or flows `names` (configured, as [`configured`] gives them)
    /// count from the counters `read` for them now; `None`: there is no chip to read.
    pub fn clear(
        &self,
        counted: Counted,
        names: &[String],
        read: Option<Counters>,
    ) -> Result<(), ClearError> {
        let read = read.ok_or(ClearError::NoChip)?;
        let entry = counted.entry();
        match counted {
            Counted::Ports => {
                let ports: BTreeMap<String, PortCounters> = names
                    .iter()
                    .map(|n| read.ports.get(n).map(|c| (n.clone(), c.clone())))
                    .collect::<Option<_>>()
                    .ok_or(ClearError::Unreadable { entry })?;
                self.clear_ports(&ports);
            }
            Counted::Flows => {
                let counted = read.flows.ok_or(ClearError::Unreadable { entry })?;
                // A flow nothing hit has no count: zero.
                let flows = names
                    .iter()
                    .map(|n| (n.clone(), counted.get(n).copied().unwrap_or_default()))
                    .collect();
                self.clear_flows(&flows);
            }
        }
        Ok(())
    }
}

/// What `clear ... statistics` clears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    Ports,
    Flows,
}

impl Counted {
    fn entry(self) -> &'static str {
        match self {
            Counted::Ports => "port",
            Counted::Flows => "flow",
        }
    }

    fn show(self) -> &'static str {
        match self {
            Counted::Ports => "show ports",
            Counted::Flows => "show ecofilter-balancer flow",
        }
    }

    /// The chip's counters a clear of `names` reads.
    pub fn to_read(self, names: &[String]) -> CountersToRead {
        match self {
            Counted::Ports => CountersToRead {
                ports: true,
                ..CountersToRead::NOTHING
            },
            Counted::Flows => CountersToRead {
                flows: Flows::Only(names.to_vec()),
                ..CountersToRead::NOTHING
            },
        }
    }
}

/// Why nothing was cleared.
#[derive(Debug, thiserror::Error)]
pub enum ClearError {
    #[error("{entry} {names}: not configured ({show} lists them); nothing cleared")]
    NotConfigured {
        entry: &'static str,
        names: String,
        show: &'static str,
    },
    #[error("efbd runs without a chip: there are no counters to clear")]
    NoChip,
    #[error(
        "the chip's {entry} counters cannot be read now (show system status says why): nothing cleared"
    )]
    Unreadable { entry: &'static str },
}

/// `names` (deduplicated), each configured, or every configured name when there is none.
pub fn configured(
    config: &Config,
    counted: Counted,
    names: &[String],
) -> Result<Vec<String>, ClearError> {
    let exists = |name: &str| match counted {
        Counted::Ports => config.ports.contains_key(name),
        Counted::Flows => config.flows.contains_key(name),
    };
    if names.is_empty() {
        return Ok(match counted {
            Counted::Ports => config.ports.keys().cloned().collect(),
            Counted::Flows => config.flows.keys().cloned().collect(),
        });
    }
    let mut unique: Vec<String> = Vec::new();
    for name in names {
        if !unique.contains(name) {
            unique.push(name.clone());
        }
    }
    let unknown: Vec<String> = unique
        .iter()
        .filter(|n| !exists(n))
        .map(|n| excerpt(n).into_owned())
        .collect();
    if !unknown.is_empty() {
        return Err(ClearError::NotConfigured {
            entry: counted.entry(),
            names: unknown.join(", "),
            show: counted.show(),
        });
    }
    Ok(unique)
}

/// `now` less the baseline of `name`, when it has one and no counter went below it; a
/// baseline a counter went below is dropped.
fn since<const N: usize>(
    baselines: &mut BTreeMap<String, [u64; N]>,
    name: &str,
    now: [u64; N],
) -> Option<[u64; N]> {
    let base = *baselines.get(name)?;
    if now.iter().zip(&base).any(|(n, b)| n < b) {
        baselines.remove(name);
        return None;
    }
    Some(std::array::from_fn(|i| now[i] - base[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(in_frames: u64, in_bytes: u64) -> PortCounters {
        PortCounters {
            device_port: 1,
            up: true,
            in_frames,
            in_bytes,
            out_frames: 7,
            out_bytes: 700,
            in_discards: 1,
            ..PortCounters::default()
        }
    }

    fn read(ports: &[(&str, PortCounters)], flows: &[(&str, (u64, u64))]) -> Counters {
        Counters {
            flows: Some(flows.iter().map(|(n, c)| (n.to_string(), *c)).collect()),
            entries: flows.iter().map(|(n, _)| (n.to_string(), 1)).collect(),
            ports: ports
                .iter()
                .map(|(n, c)| (n.to_string(), c.clone()))
                .collect(),
            ..Counters::default()
        }
    }

    #[test]
    fn cleared_counters_count_from_the_clear_and_others_are_untouched() {
        let baselines = Baselines::default();
        let first = read(&[("p1", port(5, 320)), ("p2", port(3, 192))], &[]);
        baselines.clear_ports(&[("p1".to_string(), port(5, 320))].into());
        let mut now = first.clone();
        baselines.apply(&mut now);
        assert_eq!(port_counts(&now.ports["p1"]), [0; 8]);
        assert!(now.ports["p1"].up, "the status is no counter");
        assert_eq!(port_counts(&now.ports["p2"]), [3, 192, 7, 700, 1, 0, 0, 0]);
        let mut later = read(&[("p1", port(8, 512))], &[]);
        baselines.apply(&mut later);
        assert_eq!(port_counts(&later.ports["p1"]), [3, 192, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_counter_below_its_baseline_counts_from_the_chips_zero() {
        let baselines = Baselines::default();
        baselines.clear_flows(&[("dns".to_string(), (10, 1000))].into());
        let mut same = read(&[], &[("dns", (12, 1200))]);
        baselines.apply(&mut same);
        assert_eq!(same.flows.as_ref().unwrap()["dns"], (2, 200));
        // The chip restarted: 4 packets since, not a negative count nor a wrapped one.
        let mut restarted = read(&[], &[("dns", (4, 1500))]);
        baselines.apply(&mut restarted);
        assert_eq!(restarted.flows.as_ref().unwrap()["dns"], (4, 1500));
        // And from then on the chip's count, the baseline gone.
        let mut after = read(&[], &[("dns", (20, 2000))]);
        baselines.apply(&mut after);
        assert_eq!(after.flows.as_ref().unwrap()["dns"], (20, 2000));
        // A flow the chip has no count for (nothing hit it since a rewrite) is zero too.
        baselines.clear_flows(&[("bgp".to_string(), (3, 300))].into());
        let mut missing = read(&[], &[]);
        missing.entries.insert("bgp".into(), 1);
        baselines.apply(&mut missing);
        assert!(!missing.flows.as_ref().unwrap().contains_key("bgp"));
        let mut back = read(&[], &[("bgp", (5, 500))]);
        baselines.apply(&mut back);
        assert_eq!(back.flows.as_ref().unwrap()["bgp"], (5, 500));
    }
}
