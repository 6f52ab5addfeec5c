//! How the server runs: its settings, and the counts of what is open now. Below the
//! service and the subscriptions that read them, and below lib.rs, which starts them.

use std::sync::Arc;
use std::time::Duration;

use efb_northbound::auth::Users;
use efb_northbound::budget::Budget;
use efb_northbound::tls::TlsIdentity;
use efb_northbound::{audit, listen};

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub users: Arc<Users>,
    /// The certificate to serve TLS with; `None`: plain text (only when asked for).
    pub tls: Option<TlsIdentity>,
    /// Largest Set or reply message (a 100 000-flow configuration in JSON is about 17 MiB,
    /// four times gRPC's 4 MiB default); other requests may send 4 MiB at most.
    pub max_message_bytes: usize,
    /// Paths one Get or subscription list may name.
    pub max_paths: usize,
    /// What the server holds for its clients at most (shared with the daemon's other
    /// servers).
    pub budget: Arc<Budget>,
    /// Responses a subscriber may have waiting to be sent before its stream stops taking
    /// more from the target; a subscriber that stays behind by more than the daemon's
    /// change queue is ended with RESOURCE_EXHAUSTED.
    pub subscriber_queue: usize,
    /// The shortest SAMPLE interval served (also what 0 means).
    pub min_sample_interval: Duration,
    /// Updates per Notification in dumps and samples (bounds message size and latency).
    pub updates_per_notification: usize,
    /// Subscribe RPCs served at once, in all (each costs a task, a queue and CPU at every
    /// change).
    pub max_subscriptions: usize,
    /// Subscribe RPCs served at once for one user.
    pub max_subscriptions_per_user: usize,
    /// Connections: how many, how long a handshake may take, keepalive.
    pub connections: listen::Limits,
    /// Where Sets, accepted or refused, are recorded.
    pub audit: audit::Audit,
    /// What is open now, for metrics.
    pub activity: Activity,
}

/// Connections and Subscribe RPCs open now (clones share the counts): efbd's metrics read
/// them while the server counts.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    pub connections: listen::Open,
    pub subscriptions: listen::Open,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            users: Arc::new(Users::none()),
            tls: None,
            max_message_bytes: 32 * 1024 * 1024,
            max_paths: 1000,
            budget: Budget::unlimited(),
            subscriber_queue: 64,
            min_sample_interval: Duration::from_millis(100),
            updates_per_notification: 1000,
            max_subscriptions: 256,
            max_subscriptions_per_user: 64,
            connections: listen::Limits {
                max: 256,
                per_peer: 64,
                unproven_per_peer: 16,
                kept_for_admins: 16,
                handshake_timeout: Duration::from_secs(5),
                first_request_timeout: Duration::from_secs(10),
                keepalive: Some(Duration::from_secs(30)),
                streams: 32,
                window: 64 * 1024,
                name: "gNMI",
                settings: "gnmi.connections",
            },
            audit: audit::Audit::default(),
            activity: Activity::default(),
        }
    }
}
