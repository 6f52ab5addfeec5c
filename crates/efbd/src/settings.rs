//! efbd's settings: built-in defaults, then a TOML file, then command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Parser;
use serde::Deserialize;

mod log;

pub use log::{Log, log_format};

/// Command-line flags; each overrides the same setting of the TOML file.
#[derive(Parser, Debug, Default)]
#[command(name = "efbd", version, about = "EcoFilter Balancer daemon")]
pub struct Flags {
    /// TOML settings file (see `efbd --print-settings` for every setting and its default).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Datastore directory (the database lives in DIR/db).
    #[arg(long, value_name = "DIR")]
    pub datastore: Option<PathBuf>,
    /// Configuration loaded when nothing was saved [default: DIR/factory-default.json].
    #[arg(long, value_name = "FILE")]
    pub factory_default: Option<PathBuf>,
    /// The largest configuration efbd reads, in MiB: the factory default file, the content
    /// of a load [default: 256].
    #[arg(long, value_name = "MIB")]
    pub max_input_mib: Option<u64>,
    /// Unix socket of the management API (the shell connects here) [default:
    /// DIR/efbd.sock].
    #[arg(long, value_name = "PATH")]
    pub mgmt_socket: Option<PathBuf>,
    /// Also serve the management API on TCP, with TLS and the users file (off by default);
    /// port 0 picks a free port.
    #[arg(long, value_name = "ADDR")]
    pub mgmt_listen: Option<SocketAddr>,
    /// P4Runtime server of the chip (or of efb-target).
    #[arg(long, value_name = "ADDR")]
    pub p4runtime: Option<String>,
    /// P4Runtime device id.
    #[arg(long, value_name = "ID")]
    pub device_id: Option<u64>,
    /// Run without a data plane: commits change the configuration only (a lab or a
    /// configuration-preparation host).
    #[arg(long, conflicts_with = "p4runtime")]
    pub no_data_plane: bool,
    /// Log filter: error, warn, info, debug, trace, or a tracing filter (efbd=debug,info).
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log format: auto (the journal when systemd runs efbd, else text), text, json (one
    /// object per line) or journal.
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Identity of this boot of the machine [default: the kernel's boot id]. Running
    /// configuration survives a restart of efbd within one boot; after a reboot the box boots
    /// with startup. Tests give another id to simulate a reboot.
    #[arg(long, value_name = "ID")]
    pub boot_id: Option<String>,
    /// gNMI address; port 0 picks a free port [default: 0.0.0.0:9339].
    #[arg(long, value_name = "ADDR")]
    pub gnmi_listen: Option<SocketAddr>,
    /// Serve gNMI without TLS (plain text: for tests and labs only).
    #[arg(long)]
    pub gnmi_plaintext: bool,
    /// Do not serve gNMI at all.
    #[arg(long)]
    pub no_gnmi: bool,
    /// gNMI users file (TOML: name, Argon2 password hash, role); without one, gNMI accepts
    /// no logins.
    #[arg(long, value_name = "FILE")]
    pub gnmi_users: Option<PathBuf>,
    /// TLS certificate of the gNMI server (PEM) [default: generated at first start in the
    /// datastore directory].
    #[arg(long, value_name = "FILE", requires = "gnmi_tls_key")]
    pub gnmi_tls_cert: Option<PathBuf>,
    /// TLS private key of the gNMI server (PEM).
    #[arg(long, value_name = "FILE", requires = "gnmi_tls_cert")]
    pub gnmi_tls_key: Option<PathBuf>,
    /// CA certificate (PEM) of client certificates: a client may log in with a certificate
    /// whose subject CN is a user of the users file (gNMI and the management API's TCP).
    #[arg(long, value_name = "FILE")]
    pub gnmi_client_ca: Option<PathBuf>,
    /// Prometheus metrics address (GET /metrics); port 0 picks a free port [default:
    /// 127.0.0.1:9464].
    #[arg(long, value_name = "ADDR", conflicts_with = "no_metrics")]
    pub metrics_listen: Option<SocketAddr>,
    /// Do not serve metrics at all.
    #[arg(long)]
    pub no_metrics: bool,
    /// Read a password on standard input, print its Argon2id hash for the users file, exit.
    #[arg(long)]
    pub hash_password: bool,
    /// Print the effective settings as TOML and exit.
    #[arg(long)]
    pub print_settings: bool,
}

/// Every setting, with the defaults that let plain `efbd` run from the repository.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub datastore: PathBuf,
    pub factory_default: Option<PathBuf>,
    /// The largest configuration read (factory default file, load content), in MiB.
    pub max_input_mib: u64,
    pub management: Management,
    pub p4runtime: P4Runtime,
    pub gnmi: Gnmi,
    pub audit: Audit,
    pub metrics: Metrics,
    pub log: Log,
}

/// The audit: who changed what, or was refused (DIR/audit.log), and who came and went or
/// was refused for their role (DIR/access.log).
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Audit {
    /// Each log's size at most, in KiB (the older half is dropped past it).
    pub max_kib: u64,
    /// Accesses of one caller kept in full per minute; more are counted in one record.
    pub access_per_minute: u32,
}

impl Default for Audit {
    fn default() -> Audit {
        Audit {
            max_kib: 4096,
            access_per_minute: 20,
        }
    }
}

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
    /// Largest gRPC message, in MiB (gRPC's default is 4).
    pub max_message_mib: usize,
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

/// The connections of one listener.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Connections {
    /// Open at once; past it, the oldest connection that made no admitted request yet is
    /// closed to make room, or the new one refused when there is none.
    pub max: usize,
    /// Open at once from one peer: a Unix account, an address, an IPv6 /64.
    pub per_peer: usize,
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
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            max: 256,
            per_peer: 64,
            kept_for_admins: None,
            handshake_timeout_s: 5,
            first_request_timeout_s: 10,
            keepalive_s: 30,
        }
    }
}

impl Connections {
    fn check(&self, section: &str) -> Result<(), String> {
        for (value, field) in [
            (self.max as u64, "max"),
            (self.per_peer as u64, "per_peer"),
            (self.handshake_timeout_s, "handshake_timeout_s"),
            (self.first_request_timeout_s, "first_request_timeout_s"),
        ] {
            if value == 0 {
                return Err(format!("{section}.{field} must be at least 1"));
            }
        }
        if self.kept_for_admins() >= self.max {
            return Err(format!(
                "{section}.kept_for_admins = {} leaves no connection for other roles: it must be below {section}.max ({})",
                self.kept_for_admins(),
                self.max
            ));
        }
        Ok(())
    }

    fn kept_for_admins(&self) -> usize {
        self.kept_for_admins.unwrap_or(self.max / 8)
    }

    /// The listener's limits; `section` names the settings ("gnmi.connections").
    pub fn limits(&self, name: &'static str, section: &'static str) -> efb_gnmi::listen::Limits {
        efb_gnmi::listen::Limits {
            max: self.max,
            per_peer: self.per_peer,
            kept_for_admins: self.kept_for_admins(),
            handshake_timeout: std::time::Duration::from_secs(self.handshake_timeout_s),
            first_request_timeout: std::time::Duration::from_secs(self.first_request_timeout_s),
            keepalive: (self.keepalive_s > 0)
                .then(|| std::time::Duration::from_secs(self.keepalive_s)),
            name,
            settings: section,
        }
    }
}

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

#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct P4Runtime {
    /// False: no data plane, commits change the configuration only.
    pub enabled: bool,
    pub target: String,
    pub device_id: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            datastore: PathBuf::from("datastore"),
            factory_default: None,
            max_input_mib: efb_yang::input::DEFAULT_MAX_INPUT_MIB,
            management: Management::default(),
            p4runtime: P4Runtime::default(),
            gnmi: Gnmi::default(),
            audit: Audit::default(),
            metrics: Metrics::default(),
            log: Log::default(),
        }
    }
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
            max_message_mib: 256,
            subscriber_queue: 64,
            password_checks: efb_gnmi::auth::default_checks(),
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
        kept_for_admins: Option<usize>,
        handshake_timeout_s: Option<u64>,
        first_request_timeout_s: Option<u64>,
        keepalive_s: Option<u64>,
    }
    let given = Given::deserialize(deserializer)?;
    let default = Management::default().connections;
    Ok(Connections {
        max: given.max.unwrap_or(default.max),
        per_peer: given.per_peer.unwrap_or(default.per_peer),
        kept_for_admins: given.kept_for_admins.or(default.kept_for_admins),
        handshake_timeout_s: given
            .handshake_timeout_s
            .unwrap_or(default.handshake_timeout_s),
        first_request_timeout_s: given
            .first_request_timeout_s
            .unwrap_or(default.first_request_timeout_s),
        keepalive_s: given.keepalive_s.unwrap_or(default.keepalive_s),
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
    pub fn socket_mode_bits(&self) -> Result<u32, String> {
        let text = self.socket_mode.trim_start_matches("0o");
        u32::from_str_radix(text, 8)
            .ok()
            .filter(|bits| *bits <= 0o777 && !text.is_empty())
            .ok_or_else(|| {
                format!(
                    "management.socket_mode = {:?}: expected permission bits in octal, 0000 to 0777 (\"0660\")",
                    self.socket_mode
                )
            })
    }

    fn check_sessions(&self) -> Result<(), String> {
        if self.max_sessions == 0 || self.max_sessions_per_account == 0 {
            return Err(
                "management.max_sessions and management.max_sessions_per_account must be at least 1"
                    .to_string(),
            );
        }
        if self.kept_for_admins() >= self.max_sessions {
            return Err(format!(
                "management.sessions_kept_for_admins = {} leaves no session for other roles: it must be below management.max_sessions ({})",
                self.kept_for_admins(),
                self.max_sessions
            ));
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
                keepalive_s: 0,
                ..Connections::default()
            },
        }
    }
}

impl Default for P4Runtime {
    fn default() -> P4Runtime {
        P4Runtime {
            enabled: true,
            target: "127.0.0.1:9559".to_string(),
            device_id: 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Settings {
    /// Defaults, overridden by the TOML file named by `--config`, overridden by flags.
    pub fn from_flags(flags: &Flags) -> Result<Settings, SettingsError> {
        let mut settings = match &flags.config {
            Some(path) => Settings::from_file(path)?,
            None => Settings::default(),
        };
        if let Some(dir) = &flags.datastore {
            settings.datastore = dir.clone();
        }
        if let Some(file) = &flags.factory_default {
            settings.factory_default = Some(file.clone());
        }
        if let Some(mib) = flags.max_input_mib {
            settings.max_input_mib = mib;
        }
        if let Some(path) = &flags.mgmt_socket {
            settings.management.socket = Some(path.clone());
        }
        if let Some(addr) = flags.mgmt_listen {
            settings.management.listen = Some(addr);
        }
        if let Some(target) = &flags.p4runtime {
            settings.p4runtime.target = target.clone();
        }
        if let Some(id) = flags.device_id {
            settings.p4runtime.device_id = id;
        }
        settings.p4runtime.enabled &= !flags.no_data_plane;
        if let Some(level) = &flags.log_level {
            settings.log.level = level.clone();
        }
        if let Some(format) = &flags.log_format {
            settings.log.format = format.clone();
        }
        settings.apply_gnmi_flags(flags);
        if let Some(addr) = flags.metrics_listen {
            settings.metrics.listen = addr;
        }
        settings.metrics.enabled &= !flags.no_metrics;
        settings
            .check_limits()
            .map_err(|message| SettingsError::Invalid {
                path: flags
                    .config
                    .as_ref()
                    .map_or_else(|| "settings".to_string(), |p| p.display().to_string()),
                message,
            })?;
        Ok(settings)
    }

    /// Limits of 0 would refuse everything (or, for timeouts, close every connection at
    /// once): refused before efbd starts.
    fn check_limits(&self) -> Result<(), String> {
        let gnmi = &self.gnmi;
        for (value, setting) in [
            (gnmi.password_checks as u64, "gnmi.password_checks"),
            (gnmi.login_window_s, "gnmi.login_window_s"),
            (gnmi.max_subscriptions as u64, "gnmi.max_subscriptions"),
            (
                gnmi.max_subscriptions_per_user as u64,
                "gnmi.max_subscriptions_per_user",
            ),
        ] {
            if value == 0 {
                return Err(format!("{setting} must be at least 1"));
            }
        }
        gnmi.connections.check("gnmi.connections")?;
        self.management.check_sessions()?;
        self.management.socket_mode_bits()?;
        if self.audit.max_kib < 16 {
            return Err("audit.max_kib must be at least 16".to_string());
        }
        self.log.check()?;
        if self.management.listen.is_some() && self.gnmi.users.is_none() {
            return Err(
                "management.listen (TCP) needs gnmi.users: over TCP, clients log in as users of that file"
                    .to_string(),
            );
        }
        self.management.connections.check("management.connections")
    }

    fn apply_gnmi_flags(&mut self, flags: &Flags) {
        let gnmi = &mut self.gnmi;
        if let Some(addr) = flags.gnmi_listen {
            gnmi.listen = addr;
        }
        gnmi.plaintext |= flags.gnmi_plaintext;
        gnmi.enabled &= !flags.no_gnmi;
        if let Some(file) = &flags.gnmi_users {
            gnmi.users = Some(file.clone());
        }
        if let (Some(cert), Some(key)) = (&flags.gnmi_tls_cert, &flags.gnmi_tls_key) {
            gnmi.tls_cert = Some(cert.clone());
            gnmi.tls_key = Some(key.clone());
        }
        if let Some(ca) = &flags.gnmi_client_ca {
            gnmi.client_ca = Some(ca.clone());
        }
    }

    pub fn from_file(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| SettingsError::Invalid {
            path: path.display().to_string(),
            message: toml_error(&text, &e),
        })
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

/// One line for a settings file TOML refuses: where (line, column), which setting, what is
/// wrong, and where to find the accepted settings. toml's own text spans several lines
/// (the source line, a caret), which a journal shows as unrelated messages.
fn toml_error(text: &str, error: &toml::de::Error) -> String {
    let mut message = error.message().replace('\n', "; ");
    // Rust's type names mean nothing to an operator.
    for number in ["usize", "u64", "u32", "u16", "u8"] {
        message = message.replace(&format!("expected {number}"), "expected a whole number");
    }
    let hint = "(`efbd --print-settings` prints every setting with its default)";
    let Some(start) = error.span().map(|span| span.start.min(text.len())) else {
        return format!("{message} {hint}");
    };
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count();
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    match setting_on_line(text, line) {
        Some(setting) => format!(
            "line {}, column {column}: setting `{setting}`: {message} {hint}",
            line + 1
        ),
        None => format!("line {}, column {column}: {message} {hint}", line + 1),
    }
}

/// The setting (`table.key`) assigned on line `line` (from 0), if it assigns one.
fn setting_on_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (key, _) = lines.get(line)?.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || key.starts_with(['[', '#']) {
        return None;
    }
    let table = lines[..line]
        .iter()
        .map(|l| l.trim())
        .rfind(|l| l.starts_with('['))
        .map(|header| header.trim_matches(['[', ']']).trim());
    Some(match table {
        Some(table) if !table.is_empty() => format!("{table}.{key}"),
        _ => key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_which_overrides_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("efbd.toml");
        std::fs::write(
            &file,
            "datastore = \"/var/lib/efb\"\n[management]\nlisten = \"127.0.0.1:6000\"\n\
             [gnmi]\nusers = \"/etc/efb/users.toml\"\n",
        )
        .unwrap();
        let flags = Flags {
            config: Some(file),
            mgmt_listen: Some("127.0.0.1:7000".parse().unwrap()),
            ..Flags::default()
        };
        let settings = Settings::from_flags(&flags).unwrap();
        assert_eq!(settings.datastore, PathBuf::from("/var/lib/efb"));
        assert_eq!(settings.management.listen.map(|a| a.port()), Some(7000));
        assert_eq!(settings.p4runtime.target, "127.0.0.1:9559");
    }

    #[test]
    fn a_malformed_file_is_one_line_naming_the_line_and_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        for (text, expected) in [
            (
                "datastore = \"/var/lib/efb\"\n\n[management]\nmax_sessions = \"ten\"\n",
                "efbd.toml: line 4, column 16: setting `management.max_sessions`: invalid type: string \"ten\", expected a whole number",
            ),
            (
                "[gnmi.connections]\nmax = 8\nhandshake = 2\n",
                "efbd.toml: line 3, column 1: setting `gnmi.connections.handshake`: unknown field `handshake`",
            ),
            (
                "datastore = \"/var/lib/efb\n",
                "efbd.toml: line 1, column 26: setting `datastore`: invalid basic string",
            ),
            ("[gnmi\n", "efbd.toml: line 1, column 6: "),
        ] {
            let file = dir.path().join("efbd.toml");
            std::fs::write(&file, text).unwrap();
            let err = Settings::from_file(&file).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
            assert!(
                err.ends_with("prints every setting with its default)"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_partial_management_connections_table_keeps_the_management_defaults() {
        let settings: Settings =
            toml::from_str("[management.connections]\nmax = 64\n[gnmi.connections]\n").unwrap();
        let management = &settings.management.connections;
        assert_eq!((management.max, management.keepalive_s), (64, 0));
        assert_eq!(settings.gnmi.connections, Connections::default());
        let empty: Settings = toml::from_str("[management.connections]\n").unwrap();
        assert_eq!(empty, Settings::default());
    }

    #[test]
    fn unknown_settings_are_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("efbd.toml");
        std::fs::write(&file, "datastor = \"x\"\n").unwrap();
        let err = Settings::from_file(&file).unwrap_err().to_string();
        assert!(
            err.contains("efbd.toml") && err.contains("datastor"),
            "{err}"
        );
    }

    #[test]
    fn gnmi_defaults_file_and_flags() {
        let defaults = Settings::default().gnmi;
        assert!(defaults.enabled && !defaults.plaintext && defaults.users.is_none());
        assert_eq!(defaults.listen.port(), 9339);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("efbd.toml");
        std::fs::write(
            &file,
            "[gnmi]\nlisten = \"127.0.0.1:9000\"\nusers = \"/etc/efb/users.toml\"\nmax_message_mib = 64\n",
        )
        .unwrap();
        let flags = Flags {
            config: Some(file),
            gnmi_plaintext: true,
            gnmi_listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Flags::default()
        };
        let gnmi = Settings::from_flags(&flags).unwrap().gnmi;
        assert_eq!(gnmi.listen.port(), 0);
        assert!(gnmi.plaintext);
        assert_eq!(gnmi.users, Some(PathBuf::from("/etc/efb/users.toml")));
        assert_eq!(gnmi.max_message_mib, 64);
        let off = Flags {
            no_gnmi: true,
            ..Flags::default()
        };
        assert!(!Settings::from_flags(&off).unwrap().gnmi.enabled);
    }

    #[test]
    fn session_limits_default_and_from_the_file() {
        let limits = Settings::default().management.session_limits();
        assert_eq!(limits.max_sessions, 100);
        assert_eq!(
            limits.idle_timeout,
            Some(std::time::Duration::from_secs(8 * 3600))
        );
        let settings: Settings =
            toml::from_str("[management]\nmax_sessions = 3\nsession_idle_timeout_s = 0\n").unwrap();
        let limits = settings.management.session_limits();
        assert_eq!(limits.max_sessions, 3);
        assert_eq!(limits.idle_timeout, None);
    }

    #[test]
    fn connection_and_login_limits_default_and_from_the_file() {
        let defaults = Settings::default();
        assert_eq!(defaults.gnmi.connections.max, 256);
        assert_eq!(defaults.management.connections.max, 128);
        assert!((1..=4).contains(&defaults.gnmi.password_checks));
        let settings: Settings = toml::from_str(
            "[gnmi]\nlogin_failures = 3\nmax_subscriptions_per_user = 2\n\
             [gnmi.connections]\nmax = 8\nhandshake_timeout_s = 2\n",
        )
        .unwrap();
        assert_eq!(settings.gnmi.login_failures, 3);
        assert_eq!(settings.gnmi.max_subscriptions_per_user, 2);
        let limits = settings.gnmi.connections.limits("gNMI", "gnmi.connections");
        assert_eq!(limits.max, 8);
        assert_eq!(limits.handshake_timeout, std::time::Duration::from_secs(2));
        assert_eq!(limits.keepalive, Some(std::time::Duration::from_secs(30)));
        let management = defaults
            .management
            .connections
            .limits("management API", "management.connections");
        assert_eq!(
            management.keepalive, None,
            "efb-cli does not answer pings at its prompt"
        );
    }

    /// Why efbd refuses a settings file holding `text`.
    fn refusal(dir: &Path, text: &str) -> String {
        let file = dir.join("efbd.toml");
        std::fs::write(&file, text).unwrap();
        let flags = Flags {
            config: Some(file),
            ..Flags::default()
        };
        Settings::from_flags(&flags).unwrap_err().to_string()
    }

    #[test]
    fn zero_limits_are_refused_naming_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        for (text, setting) in [
            ("[gnmi]\npassword_checks = 0\n", "gnmi.password_checks"),
            ("[gnmi.connections]\nmax = 0\n", "gnmi.connections.max"),
            (
                "[management.connections]\nhandshake_timeout_s = 0\n",
                "management.connections.handshake_timeout_s",
            ),
        ] {
            let err = refusal(dir.path(), text);
            assert!(
                err.contains("efbd.toml") && err.contains(setting) && err.contains("at least 1"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_management_api_is_a_unix_socket_by_default_and_tcp_needs_users() {
        let defaults = Settings::default();
        assert_eq!(defaults.management.listen, None);
        assert_eq!(
            defaults.management.socket_path(Path::new("/var/lib/efb")),
            PathBuf::from("/var/lib/efb/efbd.sock")
        );
        assert_eq!(defaults.management.socket_mode_bits(), Ok(0o666));
        assert_eq!(defaults.management.groups.operator, "efb-operator");
        let dir = tempfile::tempdir().unwrap();
        for (text, expected) in [
            (
                "[management]\nlisten = \"127.0.0.1:6000\"\n",
                "management.listen (TCP) needs gnmi.users",
            ),
            (
                "[management]\nsocket_mode = \"0999\"\n",
                "management.socket_mode = \"0999\": expected permission bits in octal",
            ),
        ] {
            let err = refusal(dir.path(), text);
            assert!(err.contains(expected), "{err}");
        }
        let settings: Settings = toml::from_str(
            "[management]\nsocket = \"/run/efbd/efbd.sock\"\nsocket_mode = \"0660\"\n\
             [management.groups]\nadmin = \"netadmins\"\n",
        )
        .unwrap();
        assert_eq!(settings.management.socket_mode_bits(), Ok(0o660));
        assert_eq!(settings.management.groups.admin, "netadmins");
        assert_eq!(settings.management.groups.viewer, "efb-viewer");
    }

    #[test]
    fn metrics_default_to_loopback_and_follow_the_file_and_flags() {
        let defaults = Settings::default().metrics;
        assert!(defaults.enabled);
        assert_eq!(defaults.listen.to_string(), "127.0.0.1:9464");
        assert_eq!(defaults.max_flows, 256);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("efbd.toml");
        std::fs::write(
            &file,
            "[metrics]\nlisten = \"0.0.0.0:9100\"\nmax_flows = 10\n",
        )
        .unwrap();
        let from_file = Settings::from_flags(&Flags {
            config: Some(file.clone()),
            ..Flags::default()
        })
        .unwrap()
        .metrics;
        assert_eq!((from_file.listen.port(), from_file.max_flows), (9100, 10));
        let flagged = Settings::from_flags(&Flags {
            config: Some(file),
            metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
            ..Flags::default()
        })
        .unwrap()
        .metrics;
        assert_eq!(flagged.listen.to_string(), "127.0.0.1:0");
        let off = Flags {
            no_metrics: true,
            ..Flags::default()
        };
        assert!(!Settings::from_flags(&off).unwrap().metrics.enabled);
    }

    #[test]
    fn printed_settings_read_back() {
        let settings = Settings::default();
        assert_eq!(
            toml::from_str::<Settings>(&settings.to_toml()).unwrap(),
            settings
        );
    }
}
