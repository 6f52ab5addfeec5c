//! `[metrics]`: Prometheus metrics over HTTP.

use std::net::SocketAddr;

use serde::Deserialize;

/// Prometheus metrics over HTTP (GET /metrics on `listen`).
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Metrics {
    pub enabled: bool,
    pub listen: SocketAddr,
    /// Flows whose packet and byte counters are exported, the highest priority first: a
    /// series per flow, and 100 000 flows would swamp Prometheus.
    pub max_flows: usize,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            enabled: true,
            // 9464: the port Prometheus' list of default ports gives OpenTelemetry
            // exporters; loopback, as the endpoint has no login.
            listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
            max_flows: 256,
        }
    }
}
