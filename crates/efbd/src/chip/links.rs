//! Operator links as the chip's ports make them: up when both ports are up, down naming
//! the port(s) down. The state tree shows it (`show ecofilter-balancer link`, gNMI), and a
//! change is an event (`show log link`, the journal): an uplink going down is the first
//! thing an operator looks for.

use std::collections::BTreeMap;

use efb_model::Config;
use efb_p4::Driver;
use tokio::sync::watch;

use crate::chip;
use crate::chip::board;
use crate::owner::{Owner, Request};

/// A link's status now: `up`, or `down` with which ports are down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkState {
    pub up: bool,
    /// `p2 (LAN) down`; empty when up.
    pub reason: String,
}

impl LinkState {
    pub fn word(&self) -> &'static str {
        if self.up { "up" } else { "down" }
    }
}

/// Each link whose status the chip's port states decide (a port the chip has not told of
/// leaves its link out: unknown, not made up).
pub fn link_states(config: &Config, ports_up: &BTreeMap<u32, bool>) -> BTreeMap<String, LinkState> {
    let Some(map) = board::port_map() else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for link in config.links.values() {
        let mut down = Vec::new();
        let mut known = true;
        for (side, port) in [("LAN", &link.lan_port), ("WAN", &link.wan_port)] {
            match chip::device_port(map, config, port).and_then(|d| ports_up.get(&d)) {
                Some(true) => {}
                Some(false) => down.push(format!("{port} ({side}) down")),
                None => known = false,
            }
        }
        if known || !down.is_empty() {
            let state = LinkState {
                up: down.is_empty(),
                reason: down.join(", "),
            };
            out.insert(link.name.clone(), state);
        }
    }
    out
}

/// Hands every change of the chip's port states to the owner, which tells the links that
/// went down or up, until efbd stops (`stopped`): the task holds the owner, which must
/// be let go for efbd to stop.
pub fn watch(driver: &Driver, owner: Owner, mut stopped: watch::Receiver<bool>) {
    let mut states = driver.watch_port_states();
    tokio::spawn(async move {
        // What the chip said before this task began is handed on first: the owner compares
        // each change with it (without it, the first cable pulled after a start made no
        // event: the owner had nothing to compare with).
        loop {
            let up = states.borrow_and_update().clone();
            if let Some(up) = up
                && owner.tell(Request::PortsChanged((*up).clone())).is_err()
            {
                return; // the owner is gone: efbd is stopping
            }
            tokio::select! {
                _ = stopped.wait_for(|stop| *stop) => return,
                changed = states.changed() => if changed.is_err() { return },
            }
        }
    });
}
