//! `[metrics]`: Prometheus metrics over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Connections open at once. Prometheus holds one per target; past the limit, a new
    /// connection closes the oldest idle one, so idle clients cannot keep a scraper out.
    pub max_connections: usize,
    /// A web configuration file in the format Prometheus exporters take
    /// (`tls_server_config`, `basic_auth_users` with bcrypt hashes): TLS and logins for
    /// an endpoint that leaves loopback.
    pub web_config: Option<PathBuf>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            enabled: true,
            // 9464: the port Prometheus' list of default ports gives OpenTelemetry
            // exporters; loopback, as the endpoint has no login without a web_config.
            listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
            max_flows: 256,
            max_connections: efb_metrics::DEFAULT_MAX_CONNECTIONS,
            web_config: None,
        }
    }
}
