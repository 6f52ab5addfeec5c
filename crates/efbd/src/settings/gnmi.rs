//! `[gnmi]`: the gNMI server, its TLS and logins, and what one client may hold.

use std::net::SocketAddr;
use std::path::PathBuf;

use std::time::Duration;

use efb_northbound::auth::LoginLimits;
use serde::Deserialize;

use super::SettingRefused;
use super::connections::Connections;

/// The longest `login_slowdown_ms`: a slowed login holds a place among the checks waiting.
const MAX_SLOWDOWN_MS: u64 = 10_000;

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
    /// Failed logins as one user name from one address (IPv6: one /64) within
    /// `login_window_s` after which logins as that user from there are refused, without a
    /// check, for `login_window_s`; 0: no limit.
    pub login_failures_per_user_address: u32,
    /// Failed logins from one address whatever the names (a peer guessing names) after
    /// which every login from there is refused for `login_window_s`; 0: no limit.
    #[serde(alias = "login_failures")]
    pub login_failures_per_address: u32,
    /// Failed logins as one user name from any address after which logins as that user
    /// are slowed (each waits `login_slowdown_ms`, one at a time per address) for
    /// `login_window_s`, not refused: the user gets in from a new address; 0: no limit.
    pub login_failures_per_user: u32,
    /// The same for all password logins together: past it every password login is slowed.
    pub login_failures_total: u32,
    pub login_window_s: u64,
    /// How long a slowed login waits before its check (0: not slowed; at most 10 000).
    pub login_slowdown_ms: u64,
    /// Subscribe RPCs served at once, in all and for one user.
    pub max_subscriptions: usize,
    pub max_subscriptions_per_user: usize,
    pub connections: Connections,
}

impl Default for Gnmi {
    fn default() -> Gnmi {
        let logins = LoginLimits::default();
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
            password_checks: logins.checks,
            login_failures_per_user_address: logins.failures_per_user_address,
            login_failures_per_address: logins.failures_per_address,
            login_failures_per_user: logins.failures_per_user,
            login_failures_total: logins.failures_total,
            login_window_s: logins.window.as_secs(),
            login_slowdown_ms: millis(logins.slowdown),
            max_subscriptions: 256,
            max_subscriptions_per_user: 64,
            connections: Connections::default(),
        }
    }
}

impl Gnmi {
    /// How logins are bounded, as the northbound takes it.
    pub fn login_limits(&self) -> LoginLimits {
        LoginLimits {
            checks: self.password_checks,
            failures_per_user_address: self.login_failures_per_user_address,
            failures_per_address: self.login_failures_per_address,
            failures_per_user: self.login_failures_per_user,
            failures_total: self.login_failures_total,
            window: Duration::from_secs(self.login_window_s),
            slowdown: Duration::from_millis(self.login_slowdown_ms),
        }
    }

    /// A slowdown longer than [`MAX_SLOWDOWN_MS`] would hold the places of the checks
    /// waiting for that long: refused.
    pub(super) fn check_logins(&self) -> Result<(), SettingRefused> {
        if self.login_slowdown_ms > MAX_SLOWDOWN_MS {
            return Err(SettingRefused::OutOfRange {
                setting: "gnmi.login_slowdown_ms".into(),
                value: usize::try_from(self.login_slowdown_ms).unwrap_or(usize::MAX),
                least: 0,
                most: MAX_SLOWDOWN_MS as usize,
            });
        }
        Ok(())
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
