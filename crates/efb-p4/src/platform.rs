//! Port counters. P4Runtime has none: on the box they come from the switch platform (Stratum
//! serves them through gNMI); the software target serves them through its control service,
//! at the same address. When neither answers, they stay unknown.

use efb_target_proto::{GetPortsRequest, target_control_client::TargetControlClient};
use tonic::transport::Channel;

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

/// The platform's port service, asked over one kept connection: a new connection for every
/// question cost a pair's port-down reason tens of milliseconds on a loaded target.
#[derive(Clone)]
pub struct Platform {
    /// None when the address is not a URI (then nothing is served).
    client: Option<TargetControlClient<Channel>>,
}

impl Platform {
    /// The service at `address` (host:port or a URI); connected at the first question and
    /// again by the channel whenever the connection is lost. Needs a tokio runtime.
    pub fn new(address: &str) -> Platform {
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let client = Channel::from_shared(uri)
            .ok()
            .map(|endpoint| TargetControlClient::new(endpoint.tcp_nodelay(true).connect_lazy()));
        Platform { client }
    }

    /// The counters of every port, or `None` when the platform does not serve them.
    pub async fn port_counters(&self) -> Option<Vec<PortCounters>> {
        let mut client = self.client.clone()?;
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
}
