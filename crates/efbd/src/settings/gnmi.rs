//! `[gnmi]`: the gNMI server, its TLS and logins, and what one client may hold.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::connections::Connections;

/// The gNMI server.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Gnmi {
    pub enabled: bool,
    pub listen: SocketAddr,
    /// No TLS: only when asked for.
    pub plaintext: bool,
    /// Users file; none: no gNMI logins.
    pub users: Option<PathBuf>,
    /// Certificate and key (PEM); none: a self-signed pair generated at first start in the
    /// datastore directory (gnmi-cert.pem, gnmi-key.pem).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// CA of client certificates (PEM); none: clients log in with passwords only.
    pub client_ca: Option<PathBuf>,
    /// Largest gRPC message of a Set or a reply, in MiB (gRPC's default is 4; other
    /// requests may send 4 at most).
    pub max_message_mib: usize,
    /// Paths one Get or subscription list may name.
    pub max_paths: usize,
    /// Responses a subscriber may have waiting before it stops taking more.
    pub subscriber_queue: usize,
    /// Argon2 password checks running at once, each with the hash's working memory
    /// (19 MiB for standard hashes) allocated once [default: the CPUs, at most 4].
    pub password_checks: usize,
    /// Failed logins from one address (IPv6: one /64) within `login_window_s` after which
    /// its logins are refused for `login_window_s`; 0: no limit.
    pub login_failures: u32,
    /// The same for logins as one user name, from any address (a guesser with many
    /// addresses); connections already logged in keep working.
    pub login_failures_per_user: u32,
    /// The same for all password logins together: the most guesses efbd takes in a window.
    pub login_failures_total: u32,
    pub login_window_s: u64,
    /// Subscribe RPCs served at once, in all and for one user.
    pub max_subscriptions: usize,
    pub max_subscriptions_per_user: usize,
    pub connections: Connections,
}

impl Default for Gnmi {
    fn default() -> Gnmi {
        Gnmi {
            enabled: true,
            // 9339: the IANA port for gNMI; every address, as automation runs elsewhere.
            listen: SocketAddr::from(([0, 0, 0, 0], 9339)),
            plaintext: false,
            users: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            max_message_mib: super::MAX_INPUT_MIB as usize,
            max_paths: 1000,
            subscriber_queue: 64,
            password_checks: efb_northbound::auth::default_checks(),
            login_failures: 10,
            login_failures_per_user: 20,
            login_failures_total: 100,
            login_window_s: 60,
            max_subscriptions: 256,
            max_subscriptions_per_user: 64,
            connections: Connections::default(),
        }
    }
}
