//! The target's Prometheus metrics (efb-target --metrics-listen): what each emulated
//! front-panel port counted, read at scrape time from the same counters the control
//! service and the platform's port counters serve.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use efb_metrics::{Labels, Scraped, Values};
use tokio::net::TcpListener;

use crate::Device;
use crate::ports::PortCounters;

/// Serves the metrics of `device` on `listener` as `options` say until `shutdown`
/// completes.
pub async fn serve(
    device: Arc<Device>,
    listener: TcpListener,
    options: efb_metrics::Options,
    shutdown: impl Future<Output = ()>,
) {
    let scrape = move || {
        let device = device.clone();
        async move { scrape(&device) }
    };
    efb_metrics::serve(listener, options, scrape, shutdown).await;
}

/// One of a port's counters.
type Field = fn(&PortCounters) -> &AtomicU64;

/// Every port's counters now, in device port order.
pub fn scrape(device: &Device) -> Scraped {
    let ports = device.ports.all();
    let map = device.ports.map();
    let labels = |port: u32| -> Labels {
        let name = map.name_of(port).map(|n| n.to_string()).unwrap_or_default();
        vec![("port", name), ("device_port", port.to_string())]
    };
    let mut values = Values::default();
    values.gauges(
        "efb_target_port_up",
        "1 while the emulated port is up",
        ports
            .iter()
            .map(|(port, c)| (labels(*port), i64::from(c.oper_up()))),
    );
    values.counters(
        "efb_target_packet_outs",
        "Packet-outs taken from the controller (the CPU port's load towards the chip)",
        [(Vec::new(), device.packet_outs.load(Ordering::Relaxed))],
    );
    values.counters(
        "efb_target_packet_ins",
        "Packet-ins sent to the controller",
        [(Vec::new(), device.packet_ins.load(Ordering::Relaxed))],
    );
    let counters: [(&str, &str, Field); 5] = [
        ("efb_target_port_rx_frames", "Frames received", |c| {
            &c.rx_frames
        }),
        ("efb_target_port_rx_bytes", "Bytes received", |c| {
            &c.rx_bytes
        }),
        ("efb_target_port_tx_frames", "Frames sent", |c| &c.tx_frames),
        ("efb_target_port_tx_bytes", "Bytes sent", |c| &c.tx_bytes),
        (
            "efb_target_port_drops",
            "Frames dropped: received while down, or dropped by the pipeline",
            |c| &c.drops,
        ),
    ];
    for (name, help, field) in counters {
        values.counters(
            name,
            help,
            ports
                .iter()
                .map(|(port, c)| (labels(*port), field(c).load(Ordering::Relaxed))),
        );
    }
    values.counter(
        "efb_target_restarts",
        "Restarts of the target (TargetControl Restart)",
        device.restarts(),
    );
    vec![Arc::new(values.into_registry())]
}

#[cfg(test)]
mod tests {
    use efb_p4info::PortMap;

    use super::*;
    use crate::{DeviceOptions, Profile};

    #[tokio::test]
    async fn ports_count_what_entered_and_what_was_dropped() {
        let port_map = PortMap::builtin().unwrap();
        let port = port_map.resolve("p2-1").unwrap();
        let device = Device::new(DeviceOptions {
            device_id: 1,
            profile: Profile::Spec,
            port_map,
            capture_limit: 0,
            table_size_limit: 0,
            emulated_filters: true,
        });
        // No pipeline yet: the frame counts in and is dropped.
        device.inject(port, &[0u8; 64]);
        let text = efb_metrics::render(&scrape(&device), false).unwrap();
        let series = format!("{{port=\"p2-1\",device_port=\"{port}\"}}");
        for line in [
            format!("efb_target_port_rx_frames_total{series} 1"),
            format!("efb_target_port_rx_bytes_total{series} 64"),
            format!("efb_target_port_drops_total{series} 1"),
            format!("efb_target_port_up{series} 1"),
        ] {
            assert!(text.contains(&line), "{line} missing from:\n{text}");
        }
    }
}
