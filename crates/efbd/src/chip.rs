//! efbd's side of the chip: starting the southbound driver, and what it tells about the chip
//! (status, counters) for `show` and the state tree.

pub mod board;
pub mod links;
pub mod liveness;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use efb_model::{Config, ModelIds, ReadError};
use efb_p4::platform::PortCounters;
use efb_p4::{Driver, DriverSettings, DriverStatus};
use efb_p4info::{PortMap, PortName};
use efb_yang::{DataPath, Schema, Segment};

use crate::record::events::{ChipConnection, Event, Events};

/// Starts the driver for `running` (inside the runtime): it connects, reconciles and keeps
/// the chip in sync from then on.
pub fn start(
    target: &str,
    device_id: u64,
    datastore: &Path,
    running: Arc<Config>,
) -> anyhow::Result<Driver> {
    let ports = PortMap::builtin()?;
    let settings = DriverSettings {
        target: target.to_string(),
        device_id,
        state_file: datastore.join("southbound.json"),
        batch: efb_p4::driver::DEFAULT_BATCH,
    };
    Ok(Driver::start(settings, ports, running)?)
}

/// Emits a `chip-connection` event each time the driver's connection to the chip changes
/// (disconnected, backup, primary), from a task that ends with the driver.
pub fn watch_connection(driver: &Driver, events: Events) {
    let mut status = driver.watch_status();
    tokio::spawn(async move {
        let mut was = connection(&status.borrow_and_update());
        while status.changed().await.is_ok() {
            let (now, words) = {
                let s = status.borrow_and_update();
                (connection(&s), s.message.clone())
            };
            if now != was {
                events.emit(Event::ChipConnection(ChipConnection {
                    from: was.into(),
                    to: now.into(),
                    status: words,
                }));
                was = now;
            }
        }
    });
}

fn connection(status: &DriverStatus) -> &'static str {
    match (status.connected, status.primary) {
        (true, true) => "primary",
        (true, false) => "backup",
        _ => "disconnected",
    }
}

/// The chip in one line for `show system status`.
pub fn describe(status: &DriverStatus) -> String {
    let when = status
        .last_reconcile
        .map(|t| humantime::format_rfc3339_seconds(t).to_string())
        .unwrap_or_else(|| "never".into());
    let sync = if status.in_sync {
        "in sync"
    } else {
        "out of sync"
    };
    if status.connected {
        format!(
            "{sync}: {} entries; last reconcile {when} wrote {} entries in {} ms; {}",
            status.entries,
            status.reconcile_written,
            status.reconcile_time.as_millis(),
            status.message
        )
    } else {
        format!("not connected, {sync}: {}", status.message)
    }
}

/// Counters read from the chip, by configuration name.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Packets and bytes per flow (`None`: the chip could not be read).
    pub flows: Option<BTreeMap<String, (u64, u64)>>,
    /// Entries each flow compiled to.
    pub entries: BTreeMap<String, usize>,
    /// Per configured port name.
    pub ports: BTreeMap<String, PortCounters>,
    /// Per device port of the front panel, configured or not (`/board`).
    pub board: BTreeMap<u32, PortCounters>,
}

impl Counters {
    /// The board's device ports of configured ports count as those ports do, since their
    /// last clear too: the two places show one count.
    pub fn ports_onto_board(&mut self) {
        for port in self.ports.values() {
            if let Some(lane) = self.board.get_mut(&port.device_port) {
                *lane = port.clone();
            }
        }
    }
}

/// Which of the chip's counters to read for a request: reading every flow's counters for
/// `show ports` would cost a read of the whole flow table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountersToRead {
    pub flows: Flows,
    /// The configured ports' (`/ports`).
    pub ports: bool,
    /// Every device port's, configured or free (`/board`).
    pub board: bool,
}

/// Which flows' counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flows {
    None,
    /// These flows' entries, read one by one (`show ecofilter-balancer flow NAME`).
    Only(Vec<String>),
    /// The whole flow table, in one read.
    All,
}

/// The lists whose entries carry counters, resolved once from the typed model's names.
#[derive(Clone, Debug)]
pub struct CounterLists {
    flows: DataPath,
    ports: DataPath,
    board: DataPath,
}

impl CounterLists {
    pub fn of(schema: &Schema) -> Result<CounterLists, ReadError> {
        let ids = ModelIds::new(schema)?;
        let every_entry = |list| DataPath {
            segments: schema.lineage(list).into_iter().map(Segment::new).collect(),
        };
        const BOARD: &str = "/board/port";
        let board = schema.find(BOARD).ok_or_else(|| ReadError {
            path: BOARD.to_string(),
            message: "the schema has no such node, but efbd fills it".to_string(),
        })?;
        Ok(CounterLists {
            flows: every_entry(ids.flow_list()),
            ports: every_entry(ids.port_list()),
            board: every_entry(board),
        })
    }

    /// The counters under `path` (or above it: the root wants all).
    pub fn under(&self, path: &DataPath) -> CountersToRead {
        let flows = if self.flows.overlaps(path) {
            one_flow(&self.flows, path)
                .map(|name| Flows::Only(vec![name]))
                .unwrap_or(Flows::All)
        } else {
            Flows::None
        };
        CountersToRead {
            flows,
            ports: self.ports.overlaps(path),
            board: self.board.overlaps(path),
        }
    }

    /// Every entry's counters of the lists `covers` accepts (gNMI patterns).
    pub fn covered(&self, covers: impl Fn(&DataPath) -> bool) -> CountersToRead {
        CountersToRead {
            flows: if covers(&self.flows) {
                Flows::All
            } else {
                Flows::None
            },
            ports: covers(&self.ports),
            board: covers(&self.board),
        }
    }
}

impl CountersToRead {
    /// No counters: nothing to read from the chip.
    pub const NOTHING: CountersToRead = CountersToRead {
        flows: Flows::None,
        ports: false,
        board: false,
    };

    pub fn is_nothing(&self) -> bool {
        *self == CountersToRead::NOTHING
    }
}

/// The flow a path names, when it is at or below one entry of the flow list.
fn one_flow(flows: &DataPath, path: &DataPath) -> Option<String> {
    let list = flows.segments.last()?;
    let entry = path.segments.get(flows.segments.len() - 1)?;
    let name = entry.keys.first().filter(|_| entry.node == list.node)?;
    Some(name.as_str().to_string())
}

/// Reads the counters (blocking: not to be called on the runtime's threads).
pub fn counters(driver: &Driver, config: &Config, wanted: &CountersToRead) -> Counters {
    let mut out = Counters::default();
    // Some(None): every flow. Only configured names: counters for another would make it
    // appear.
    let flows: Option<Option<Vec<String>>> = match &wanted.flows {
        Flows::None => None,
        Flows::Only(names) => Some(Some(
            names
                .iter()
                .filter(|n| config.flows.contains_key(n.as_str()))
                .cloned()
                .collect(),
        )),
        Flows::All => Some(None),
    };
    if let Some(only) = flows {
        out.flows = driver.flow_counters(only.as_deref());
        out.entries = driver.flow_entries(only.as_deref());
    }
    if !wanted.ports && !wanted.board {
        return out;
    }
    let (Some(by_device), Some(map)) = (driver.port_counters(), crate::chip::board::port_map())
    else {
        return out;
    };
    // The board's lanes of configured ports show the ports' counts (cleared ones too):
    // those are read for the board as well, from the same read.
    for port in config.ports.values() {
        if let Some(c) = device_port(map, config, &port.name).and_then(|d| by_device.get(&d)) {
            out.ports.insert(port.name.clone(), c.clone());
        }
    }
    if wanted.board {
        out.board = map
            .device_ports()
            .into_iter()
            .filter_map(|d| Some((d, by_device.get(&d)?.clone())))
            .collect();
    }
    out
}

/// The chip's device port of a configured port.
pub fn device_port(map: &PortMap, config: &Config, name: &str) -> Option<u32> {
    let port = config.ports.get(name)?;
    map.device_port(PortName {
        port: u32::from(port.number),
        lane: port.lane.map(u32::from),
    })
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(path: &str) -> CountersToRead {
        let schema = Schema::load().expect("schema");
        let path = DataPath::parse(&schema, path).expect("a path");
        CounterLists::of(&schema).expect("lists").under(&path)
    }

    #[test]
    fn a_path_reads_the_counters_under_it_and_no_more() {
        let all = wanted("/");
        assert_eq!((all.flows, all.ports, all.board), (Flows::All, true, true));
        let one = wanted("/ecofilter-balancer:ecofilter-balancer/flow[name='dns']/state");
        assert_eq!(
            (one.flows, one.ports),
            (Flows::Only(vec!["dns".into()]), false)
        );
        let flows = wanted("/ecofilter-balancer:ecofilter-balancer/flow");
        assert_eq!(flows.flows, Flows::All);
        let ports = wanted("/ecofilter-balancer:ports/port[name='p1']");
        assert_eq!(
            (ports.flows, ports.ports, ports.board),
            (Flows::None, true, false)
        );
        let board = wanted("/ecofilter-balancer:board");
        assert_eq!(
            (board.flows, board.ports, board.board),
            (Flows::None, false, true)
        );
        let lane = wanted("/ecofilter-balancer:board/port[number='5']/lane[lane='0']/counters");
        assert!(lane.board && !lane.ports);
        let units = wanted("/ecofilter-balancer:ecofilter-balancer/ecofilter-unit");
        assert!(units.is_nothing());
    }

    #[test]
    fn the_counter_lists_are_the_flow_and_port_lists() {
        let schema = Schema::load().expect("schema");
        let lists = CounterLists::of(&schema).expect("lists");
        assert_eq!(
            lists.flows.display(&schema),
            "/ecofilter-balancer:ecofilter-balancer/flow"
        );
        assert_eq!(
            lists.ports.display(&schema),
            "/ecofilter-balancer:ports/port"
        );
        assert_eq!(
            lists.board.display(&schema),
            "/ecofilter-balancer:board/port"
        );
        let covered = lists.covered(|list| list == &lists.ports);
        assert_eq!(
            (covered.flows, covered.ports, covered.board),
            (Flows::None, true, false)
        );
    }
}
