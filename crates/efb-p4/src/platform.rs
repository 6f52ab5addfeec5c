//! Port counters. P4Runtime has none: on the box they come from the switch platform (Stratum
//! serves them through gNMI); the software target serves them through its control service,
//! at the same address. When neither answers, they stay unknown.

use efb_target_proto::{GetPortsRequest, target_control_client::TargetControlClient};

/// Counters of one device port since the chip started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub device_port: u32,
    pub up: bool,
    pub in_frames: u64,
    pub in_bytes: u64,
    pub out_frames: u64,
    pub out_bytes: u64,
    pub in_discards: u64,
}

/// The counters of every port, or `None` when the platform does not serve them.
pub async fn port_counters(address: &str) -> Option<Vec<PortCounters>> {
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let mut client = TargetControlClient::connect(uri).await.ok()?;
    let reply = client
        .get_ports(GetPortsRequest {})
        .await
        .ok()?
        .into_inner();
    Some(
        reply
            .ports
            .into_iter()
            .map(|p| PortCounters {
                device_port: p.device_port,
                up: p.up,
                in_frames: p.rx_frames,
                in_bytes: p.rx_bytes,
                out_frames: p.tx_frames,
                out_bytes: p.tx_bytes,
                in_discards: p.drops,
            })
            .collect(),
    )
}
