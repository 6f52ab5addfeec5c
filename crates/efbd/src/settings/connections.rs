//! `[gnmi.connections]` and `[management.connections]`: the connections one listener
//! takes, and the limits they make.

use serde::Deserialize;

use super::SettingRefused;

/// The connections of one listener.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Connections {
    /// Open at once; past it, the oldest connection that made no admitted request yet is
    /// closed to make room, or the new one refused when there is none.
    pub max: usize,
    /// Open at once from one peer: a Unix account, an address, an IPv6 /64.
    pub per_peer: usize,
    /// Of those, open at once without a request admitted yet (logins under way).
    pub unproven_per_peer: usize,
    /// Of `max`, the places only admins' connections may take [default: an eighth].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_for_admins: Option<usize>,
    /// Seconds from accept to the end of the handshake (TLS, then HTTP/2's preface).
    pub handshake_timeout_s: u64,
    /// Seconds from accept to a first request the server admits (a caller identified,
    /// whose role may make it); a connection without one is closed then.
    pub first_request_timeout_s: u64,
    /// Seconds of silence after which a connection is pinged (HTTP/2); one that does not
    /// answer within as long again is closed. 0: no pings.
    pub keepalive_s: u64,
    /// Calls one connection may have open at once (HTTP/2 streams).
    pub streams: u32,
    /// HTTP/2 flow-control window of a connection and of each call, in KiB: what a client
    /// may send before efbd reads it.
    pub window_kib: u32,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            max: 256,
            per_peer: 64,
            unproven_per_peer: 16,
            kept_for_admins: None,
            handshake_timeout_s: 5,
            first_request_timeout_s: 10,
            keepalive_s: 30,
            streams: 32,
            window_kib: 64,
        }
    }
}

impl Connections {
    pub(super) fn check(&self, section: &str) -> Result<(), SettingRefused> {
        for (value, field) in [
            (self.max as u64, "max"),
            (self.per_peer as u64, "per_peer"),
            (self.unproven_per_peer as u64, "unproven_per_peer"),
            (u64::from(self.streams), "streams"),
            (self.handshake_timeout_s, "handshake_timeout_s"),
            (self.first_request_timeout_s, "first_request_timeout_s"),
        ] {
            if value == 0 {
                return Err(SettingRefused::Zero {
                    setting: format!("{section}.{field}"),
                });
            }
        }
        // Under a frame's 16 KiB, every frame would wait for a window update; HTTP/2's
        // windows stop at 2^31 - 1 bytes.
        if !(16..=16 * 1024).contains(&self.window_kib) {
            return Err(SettingRefused::OutOfRange {
                setting: format!("{section}.window_kib"),
                value: self.window_kib as usize,
                least: 16,
                most: 16 * 1024,
            });
        }
        if self.kept_for_admins() >= self.max {
            return Err(SettingRefused::NothingLeft {
                setting: format!("{section}.kept_for_admins"),
                kept: self.kept_for_admins(),
                what: "connection",
                limit_setting: format!("{section}.max"),
                limit: self.max,
            });
        }
        Ok(())
    }

    fn kept_for_admins(&self) -> usize {
        self.kept_for_admins.unwrap_or(self.max / 8)
    }

    /// The listener's limits; `section` names the settings ("gnmi.connections").
    pub fn limits(
        &self,
        name: &'static str,
        section: &'static str,
    ) -> efb_northbound::listen::Limits {
        efb_northbound::listen::Limits {
            max: self.max,
            per_peer: self.per_peer,
            unproven_per_peer: self.unproven_per_peer,
            kept_for_admins: self.kept_for_admins(),
            handshake_timeout: std::time::Duration::from_secs(self.handshake_timeout_s),
            first_request_timeout: std::time::Duration::from_secs(self.first_request_timeout_s),
            keepalive: (self.keepalive_s > 0)
                .then(|| std::time::Duration::from_secs(self.keepalive_s)),
            streams: self.streams,
            window: self.window_kib.saturating_mul(1024),
            name,
            settings: section,
        }
    }
}
