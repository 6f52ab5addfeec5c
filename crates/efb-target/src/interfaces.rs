//! The chip's ports as OpenConfig interfaces, served over gNMI beside P4Runtime as Stratum
//! serves them: one interface per device port of the port map, named as the map names its
//! lanes (`p4-0`), `ifindex` the device port. A controller reads oper-status and counters
//! here and sets admin-status (`config/enabled`) and speed (`ethernet/config/port-speed`); tests pull cables through the control
//! service.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use efb_openconfig::{Change, Counter, Counters, Interface, Setting, Source};
use tokio::sync::watch;
use tonic::Status;

use crate::device::Device;
use crate::ports::PortCounters;

pub struct ChipInterfaces {
    device: Arc<Device>,
}

impl ChipInterfaces {
    pub fn new(device: Arc<Device>) -> ChipInterfaces {
        ChipInterfaces { device }
    }
}

fn counters(c: &PortCounters) -> Counters {
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut out = Counters::default();
    let (rx, rx_multi, rx_broad) = (n(&c.rx_frames), n(&c.rx_multicast), n(&c.rx_broadcast));
    let (tx, tx_multi, tx_broad) = (n(&c.tx_frames), n(&c.tx_multicast), n(&c.tx_broadcast));
    for (counter, value) in [
        (Counter::InOctets, n(&c.rx_bytes)),
        (Counter::InPkts, rx),
        (Counter::InUnicastPkts, rx - rx_multi - rx_broad),
        (Counter::InMulticastPkts, rx_multi),
        (Counter::InBroadcastPkts, rx_broad),
        (Counter::InDiscards, n(&c.drops)),
        (Counter::OutOctets, n(&c.tx_bytes)),
        (Counter::OutPkts, tx),
        (Counter::OutUnicastPkts, tx - tx_multi - tx_broad),
        (Counter::OutMulticastPkts, tx_multi),
        (Counter::OutBroadcastPkts, tx_broad),
        (Counter::OutDiscards, n(&c.tx_drops)),
        (Counter::CarrierTransitions, n(&c.transitions)),
    ] {
        out.set(counter, value);
    }
    out
}

#[tonic::async_trait]
impl Source for ChipInterfaces {
    async fn interfaces(&self) -> Result<Vec<Interface>, Status> {
        let ports = &self.device.ports;
        Ok(ports
            .all()
            .into_iter()
            .filter_map(|(port, c)| {
                Some(Interface {
                    name: ports.map().name_of(port)?.to_string(),
                    enabled: c.enabled.load(Ordering::Relaxed),
                    oper_up: c.oper_up(),
                    last_change_ns: c.last_change_ns.load(Ordering::Relaxed),
                    ifindex: Some(port),
                    speed_gbps: Some(c.speed_gbps.load(Ordering::Relaxed)).filter(|s| *s > 0),
                    counters: counters(c),
                    ..Interface::default()
                })
            })
            .collect())
    }

    fn events(&self) -> watch::Receiver<u64> {
        self.device.ports.events()
    }

    async fn set(&self, changes: &[Change]) -> Result<(), Status> {
        let ports = &self.device.ports;
        let mut resolved = Vec::new();
        for change in changes {
            let port = ports
                .map()
                .resolve(&change.interface)
                .ok()
                .filter(|p| ports.get(*p).is_some());
            let Some(port) = port else {
                return Err(Status::not_found(format!(
                    "no interface {:?}: interfaces are named by lane, p<port>-<lane> (p1-0 to p32-3)",
                    change.interface
                )));
            };
            resolved.push((port, change.setting));
        }
        for (port, setting) in resolved {
            match setting {
                Setting::Enabled(enabled) => ports.set_enabled(port, enabled),
                Setting::SpeedGbps(gbps) => ports.set_speed(port, gbps),
            };
            tracing::info!(port, ?setting, "set over gNMI");
        }
        Ok(())
    }
}
