//! The box's ports as OpenConfig interfaces on efbd's gNMI (origin `openconfig`), so that
//! standard collectors and their dashboards read them unchanged: every configured port
//! under its name (its description, enabled, MTU and speed from the configuration), and
//! every free physical port or lane under the board's name (`p7`, `p4-3`). Admin- and
//! oper-status of a free port, oper-status and counters of all, are the chip's, read from
//! the platform's own interfaces (its counters as they are: `clear ... statistics` changes
//! what the shell shows, not what collectors compute rates from).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use efb_model::{Config, Port};
use efb_northbound::published::Snapshot;
use efb_openconfig::{Interface, Source};
use tokio::sync::{broadcast, watch};
use tonic::Status;

use crate::chip::board::{self, Usage};
use crate::owner::{Owner, Request as R};

pub struct BoxInterfaces {
    owner: Owner,
    events: watch::Sender<u64>,
}

impl BoxInterfaces {
    /// Interfaces whose events are commits (`snapshots`) and the chip's port changes.
    pub fn start(owner: Owner, snapshots: &broadcast::Sender<Arc<Snapshot>>) -> Arc<BoxInterfaces> {
        let interfaces = Arc::new(BoxInterfaces {
            owner,
            events: watch::channel(0).0,
        });
        // Weak: the task must not keep the owner (efbd stops when every handle is gone).
        let events = Arc::downgrade(&interfaces);
        let commits = snapshots.subscribe();
        tokio::spawn(follow_events(events, commits));
        interfaces
    }
}

/// Ticks the interfaces' events at every commit and every change of the chip's ports,
/// until the interfaces or the commits are gone.
async fn follow_events(
    interfaces: Weak<BoxInterfaces>,
    mut commits: broadcast::Receiver<Arc<Snapshot>>,
) {
    let Some(owner) = interfaces.upgrade().map(|i| i.owner.clone()) else {
        return;
    };
    let driver = owner.ask(R::StateInputs).await.ok().and_then(|i| i.driver);
    drop(owner);
    let mut ports = driver.map(|d| d.watch_port_states());
    loop {
        let alive = tokio::select! {
            commit = commits.recv() => !matches!(commit, Err(broadcast::error::RecvError::Closed)),
            changed = async {
                match ports.as_mut() {
                    Some(p) => p.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            } => changed,
        };
        let Some(interfaces) = interfaces.upgrade().filter(|_| alive) else {
            return;
        };
        interfaces.events.send_modify(|n| *n += 1);
    }
}

#[tonic::async_trait]
impl Source for BoxInterfaces {
    async fn interfaces(&self) -> Result<Vec<Interface>, Status> {
        let inputs = self
            .owner
            .ask(R::StateInputs)
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let chip = match &inputs.driver {
            Some(driver) => driver.chip_interfaces().await.unwrap_or_default(),
            None => BTreeMap::new(),
        };
        Ok(box_interfaces(&inputs.running.config, &chip))
    }

    fn events(&self) -> watch::Receiver<u64> {
        self.events.subscribe()
    }

    async fn set(&self, _changes: &[efb_openconfig::Change]) -> Result<(), Status> {
        Err(Status::invalid_argument(
            "OpenConfig interfaces are read-only on efbd: configure ports in the \
             ecofilter-balancer model (/ports/port[name=NAME]/enabled)",
        ))
    }
}

/// The configured ports, then the free ones, each with the chip's state of its device port.
fn box_interfaces(config: &Config, chip: &BTreeMap<u32, Interface>) -> Vec<Interface> {
    let Some(map) = board::port_map() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for physical in board::board(map, config) {
        let lanes = physical.lanes.iter();
        match physical.usage {
            Usage::Free => {
                if let Some(lane) = physical.lanes.first() {
                    out.push(free(
                        format!("p{}", physical.number),
                        lane.device_port,
                        chip,
                    ));
                }
            }
            Usage::Whole | Usage::BrokenOut => {
                for lane in lanes {
                    match lane.port.as_ref().and_then(|p| config.ports.get(p)) {
                        // A whole port is its first lane's device port.
                        Some(port)
                            if port
                                .lane
                                .map_or(lane.lane == 0, |l| u32::from(l) == lane.lane) =>
                        {
                            out.push(configured(port, lane.device_port, chip));
                        }
                        Some(_) => {}
                        None => out.push(free(
                            format!("p{}-{}", physical.number, lane.lane),
                            lane.device_port,
                            chip,
                        )),
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn chip_state(device_port: u32, chip: &BTreeMap<u32, Interface>) -> Interface {
    chip.get(&device_port).cloned().unwrap_or_default()
}

fn configured(port: &Port, device_port: u32, chip: &BTreeMap<u32, Interface>) -> Interface {
    let state = chip_state(device_port, chip);
    Interface {
        name: port.name.clone(),
        description: port.description.clone(),
        enabled: port.enabled,
        ifindex: Some(device_port),
        mtu: Some(port.mtu),
        speed_gbps: Some(port.speed.gbps()),
        ..state
    }
}

fn free(name: String, device_port: u32, chip: &BTreeMap<u32, Interface>) -> Interface {
    Interface {
        name,
        ifindex: Some(device_port),
        ..chip_state(device_port, chip)
    }
}
