//! `[management]`: the management API's socket, the groups that give roles, its TCP
//! listener, and the sessions and connections it takes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::SettingRefused;

use super::connections::Connections;

#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Management {
    /// The Unix socket; none: DIR/efbd.sock.
    pub socket: Option<PathBuf>,
    /// The socket's permissions, in octal: who may connect at all (each request is then
    /// judged by the caller's role).
    pub socket_mode: String,
    /// The socket's group; none: efbd's.
    pub socket_group: Option<String>,
    /// The groups that give roles to Unix accounts (root and efbd's own account are admin).
    pub groups: Groups,
    /// TCP address, with TLS and gNMI's users file; none: no TCP.
    pub listen: Option<SocketAddr>,
    /// Sessions (shells, programs) open at one time at most; OpenSession past it is
    /// refused with RESOURCE_EXHAUSTED.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// Of `max_sessions`, how many only admins may open: however many sessions other
    /// accounts open, an admin can still log in (and `request system logout` them)
    /// [default: a tenth of max_sessions].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions_kept_for_admins: Option<usize>,
    /// Sessions one account (a Unix account, a user of the users file) may have open at
    /// one time.
    #[serde(default = "default_max_sessions_per_account")]
    pub max_sessions_per_account: usize,
    /// Seconds a session may go without a request before efbd closes it and drops its
    /// uncommitted changes (the shell says so at its next command); 0: never.
    #[serde(default = "default_session_idle_timeout_s")]
    pub session_idle_timeout_s: u64,
    /// Connections: shells and scripts, one each.
    #[serde(deserialize_with = "management_connections")]
    pub connections: Connections,
}

/// Unix groups whose members have a role.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Groups {
    pub admin: String,
    pub operator: String,
    pub viewer: String,
}

impl Default for Groups {
    fn default() -> Groups {
        Groups {
            admin: "efb-admin".to_string(),
            operator: "efb-operator".to_string(),
            viewer: "efb-viewer".to_string(),
        }
    }
}

/// More shells and scripts than a team opens at once, far fewer than would exhaust memory.
fn default_max_sessions() -> usize {
    100
}

/// More shells than one person keeps open, and scripts running side by side; a runaway
/// script of one account does not take every session.
fn default_max_sessions_per_account() -> usize {
    20
}

/// A working day: a shell left over lunch keeps its candidate, an abandoned one does not
/// hold it forever.
fn default_session_idle_timeout_s() -> u64 {
    8 * 3600
}

/// `[management.connections]`: a setting the table leaves out keeps the management API's
/// default (no pings, 128 connections), not gNMI's, which `Connections`' own defaults are.
fn management_connections<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Connections, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Given {
        max: Option<usize>,
        per_peer: Option<usize>,
        unproven_per_peer: Option<usize>,
        kept_for_admins: Option<usize>,
        handshake_timeout_s: Option<u64>,
        first_request_timeout_s: Option<u64>,
        keepalive_s: Option<u64>,
        streams: Option<u32>,
        window_kib: Option<u32>,
    }
    let given = Given::deserialize(deserializer)?;
    let default = Management::default().connections;
    Ok(Connections {
        max: given.max.unwrap_or(default.max),
        per_peer: given.per_peer.unwrap_or(default.per_peer),
        unproven_per_peer: given.unproven_per_peer.unwrap_or(default.unproven_per_peer),
        kept_for_admins: given.kept_for_admins.or(default.kept_for_admins),
        handshake_timeout_s: given
            .handshake_timeout_s
            .unwrap_or(default.handshake_timeout_s),
        first_request_timeout_s: given
            .first_request_timeout_s
            .unwrap_or(default.first_request_timeout_s),
        keepalive_s: given.keepalive_s.unwrap_or(default.keepalive_s),
        streams: given.streams.unwrap_or(default.streams),
        window_kib: given.window_kib.unwrap_or(default.window_kib),
    })
}

impl Management {
    /// The Unix socket's path: `socket`, or efbd.sock in the datastore directory.
    pub fn socket_path(&self, datastore: &Path) -> PathBuf {
        self.socket
            .clone()
            .unwrap_or_else(|| datastore.join("efbd.sock"))
    }

    /// `socket_mode` as permission bits.
    pub fn socket_mode_bits(&self) -> Result<u32, SettingRefused> {
        let text = self.socket_mode.trim_start_matches("0o");
        u32::from_str_radix(text, 8)
            .ok()
            .filter(|bits| *bits <= 0o777 && !text.is_empty())
            .ok_or_else(|| SettingRefused::SocketMode(self.socket_mode.clone()))
    }

    pub(super) fn check_sessions(&self) -> Result<(), SettingRefused> {
        if self.max_sessions == 0 || self.max_sessions_per_account == 0 {
            return Err(SettingRefused::NoSessions);
        }
        if self.kept_for_admins() >= self.max_sessions {
            return Err(SettingRefused::NothingLeft {
                setting: "management.sessions_kept_for_admins".into(),
                kept: self.kept_for_admins(),
                what: "session",
                limit_setting: "management.max_sessions".into(),
                limit: self.max_sessions,
            });
        }
        Ok(())
    }

    /// Room for a few admins to log in while everything else is taken: as set, or a tenth
    /// of the sessions.
    fn kept_for_admins(&self) -> usize {
        self.sessions_kept_for_admins
            .unwrap_or(self.max_sessions / 10)
    }

    /// The datastore's session limits these settings make.
    pub fn session_limits(&self) -> efb_datastore::SessionLimits {
        efb_datastore::SessionLimits {
            max_sessions: self.max_sessions,
            kept_for_admins: self.kept_for_admins(),
            max_per_holder: self.max_sessions_per_account,
            idle_timeout: (self.session_idle_timeout_s > 0)
                .then(|| std::time::Duration::from_secs(self.session_idle_timeout_s)),
        }
    }
}

impl Default for Management {
    fn default() -> Management {
        Management {
            socket: None,
            // Anyone may connect; what they may do is their role's (no role: nothing).
            socket_mode: "0666".to_string(),
            socket_group: None,
            groups: Groups::default(),
            listen: None,
            max_sessions: default_max_sessions(),
            sessions_kept_for_admins: None,
            max_sessions_per_account: default_max_sessions_per_account(),
            session_idle_timeout_s: default_session_idle_timeout_s(),
            // No pings: efb-cli answers them only while it runs a command, and a shell
            // waits at its prompt for hours. On loopback, a dead peer's socket is closed by
            // its kernel anyway.
            connections: Connections {
                max: 128,
                // Scripts of one account run side by side; a runaway one of an account
                // without a role cannot take every connection.
                per_peer: 32,
                // A shell opens one connection and waits at its prompt: more than a few
                // unproven ones of one account are a script gone wrong, or worse.
                unproven_per_peer: 8,
                keepalive_s: 0,
                ..Connections::default()
            },
        }
    }
}
