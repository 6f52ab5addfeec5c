//! efbd's settings: built-in defaults, then a TOML file, then command-line flags. Each
//! section of the file (`[gnmi]`, `[management]`...) is a file of its own here, with its
//! defaults and what it accepts; this one reads them and checks the whole.

use std::path::{Path, PathBuf};

use serde::Deserialize;

mod audit;
mod connections;
mod flags;
mod gnmi;
mod log;
mod management;
mod memory;
mod metrics;
mod p4runtime;
mod refusal;

pub use audit::Audit;
pub use connections::Connections;
pub use flags::Flags;
pub use gnmi::Gnmi;
pub use log::{Log, log_format};
pub use management::{Groups, Management};
pub use memory::Memory;
pub use metrics::Metrics;
pub use p4runtime::P4Runtime;
pub use refusal::SettingRefused;

/// The default of `max_input_mib` and `gnmi.max_message_mib`: twice it fits in the default
/// `memory.per_account_mib`.
pub const MAX_INPUT_MIB: u64 = 32;

/// Every setting, with the defaults that let plain `efbd` run from the repository.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub datastore: PathBuf,
    pub factory_default: Option<PathBuf>,
    /// The largest configuration read (factory default file, load content), in MiB: 100 000
    /// flows are 17 MiB of JSON, 32 indented.
    pub max_input_mib: u64,
    pub management: Management,
    pub p4runtime: P4Runtime,
    pub gnmi: Gnmi,
    pub audit: Audit,
    pub memory: Memory,
    pub metrics: Metrics,
    pub log: Log,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            datastore: PathBuf::from("datastore"),
            factory_default: None,
            max_input_mib: MAX_INPUT_MIB,
            management: Management::default(),
            p4runtime: P4Runtime::default(),
            gnmi: Gnmi::default(),
            audit: Audit::default(),
            memory: Memory::default(),
            metrics: Metrics::default(),
            log: Log::default(),
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
    #[error("{path}: {source}")]
    Refused {
        path: String,
        source: SettingRefused,
    },
}

impl Settings {
    /// Each listener's file descriptors at worst, for the open-file limit.
    pub fn descriptors(&self) -> Vec<(&'static str, usize)> {
        let management = self.management.connections.limits("", "").descriptors();
        let mut listeners = vec![("management socket", management)];
        if self.management.listen.is_some() {
            listeners.push(("management TCP", management));
        }
        if self.gnmi.enabled {
            listeners.push(("gNMI", self.gnmi.connections.limits("", "").descriptors()));
        }
        if self.metrics.enabled {
            listeners.push(("metrics", self.metrics.max_connections));
        }
        listeners
    }

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
        if let Some(file) = &flags.web_config_file {
            settings.metrics.web_config = Some(file.clone());
        }
        settings
            .check_limits()
            .map_err(|source| SettingsError::Refused {
                path: flags
                    .config
                    .as_ref()
                    .map_or_else(|| "settings".to_string(), |p| p.display().to_string()),
                source,
            })?;
        Ok(settings)
    }

    /// Limits of 0 would refuse everything (or, for timeouts, close every connection at
    /// once): refused before efbd starts.
    fn check_limits(&self) -> Result<(), SettingRefused> {
        let gnmi = &self.gnmi;
        for (value, setting) in [
            (gnmi.password_checks as u64, "gnmi.password_checks"),
            (gnmi.max_paths as u64, "gnmi.max_paths"),
            (gnmi.login_window_s, "gnmi.login_window_s"),
            (gnmi.max_subscriptions as u64, "gnmi.max_subscriptions"),
            (
                self.metrics.max_connections as u64,
                "metrics.max_connections",
            ),
            (
                gnmi.max_subscriptions_per_user as u64,
                "gnmi.max_subscriptions_per_user",
            ),
        ] {
            if value == 0 {
                return Err(SettingRefused::Zero {
                    setting: setting.to_string(),
                });
            }
        }
        gnmi.check_logins()?;
        gnmi.connections.check("gnmi.connections")?;
        self.management.check_sessions()?;
        self.management.socket_mode_bits()?;
        self.audit.check()?;
        self.log.check()?;
        self.memory.check(&[
            (self.max_input_mib as usize, "max_input_mib"),
            (self.gnmi.max_message_mib, "gnmi.max_message_mib"),
        ])?;
        if self.management.listen.is_some() && self.gnmi.users.is_none() {
            return Err(SettingRefused::TcpWithoutUsers);
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
            "[gnmi]\nlisten = \"127.0.0.1:9000\"\nusers = \"/etc/efb/users.toml\"\nmax_message_mib = 24\n",
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
        assert_eq!(gnmi.max_message_mib, 24);
        let off = Flags {
            no_gnmi: true,
            ..Flags::default()
        };
        assert!(!Settings::from_flags(&off).unwrap().gnmi.enabled);
    }

    #[test]
    fn a_configuration_larger_than_an_account_may_hold_is_refused_at_start() {
        let mut settings: Settings = toml::from_str("max_input_mib = 48\n").unwrap();
        let refused = settings.check_limits().unwrap_err().to_string();
        assert!(
            refused.starts_with(
                "max_input_mib = 48: a configuration that large could not be taken in"
            ) && refused.contains("memory.per_account_mib (80)"),
            "{refused}"
        );
        settings.memory.per_account_mib = 97;
        assert!(settings.check_limits().is_ok());
        settings.memory.kept_for_admins_mib = settings.memory.clients_mib;
        let refused = settings.check_limits().unwrap_err().to_string();
        assert!(refused.contains("memory.kept_for_admins_mib"), "{refused}");
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
            "[gnmi]\nlogin_failures_per_user_address = 3\nlogin_slowdown_ms = 1500\n\
             max_subscriptions_per_user = 2\n\
             [gnmi.connections]\nmax = 8\nhandshake_timeout_s = 2\n",
        )
        .unwrap();
        let logins = settings.gnmi.login_limits();
        assert_eq!(logins.failures_per_user_address, 3);
        assert_eq!(logins.slowdown, std::time::Duration::from_millis(1500));
        assert_eq!(
            defaults.gnmi.login_limits(),
            efb_northbound::auth::LoginLimits::default(),
            "one place of the numbers"
        );
        let renamed: Settings = toml::from_str("[gnmi]\nlogin_failures = 7\n").unwrap();
        assert_eq!(
            renamed.gnmi.login_failures_per_address, 7,
            "the old name still read"
        );
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
    fn audit_files_default_to_8_of_4_mib_and_too_few_or_too_small_are_refused() {
        let defaults = Settings::default().audit;
        assert_eq!((defaults.max_kib, defaults.keep_files), (4096, 8));
        assert_eq!(defaults.access_per_minute, 20);
        let dir = tempfile::tempdir().unwrap();
        for (text, expected) in [
            (
                "[audit]\nmax_kib = 8\n",
                "audit.max_kib must be at least 16",
            ),
            (
                "[audit]\nkeep_files = 0\n",
                "audit.keep_files = 0: expected 2 to 1000",
            ),
            (
                "[audit]\nkeep_files = 1\n",
                "audit.keep_files = 1: expected 2 to 1000",
            ),
            (
                "[audit]\nkeep_files = 5000\n",
                "audit.keep_files = 5000: expected 2 to 1000",
            ),
        ] {
            let err = refusal(dir.path(), text);
            assert!(err.contains("efbd.toml") && err.contains(expected), "{err}");
        }
        let settings: Settings = toml::from_str("[audit]\nkeep_files = 3\n").unwrap();
        assert_eq!(
            (settings.audit.max_kib, settings.audit.keep_files),
            (4096, 3)
        );
    }

    #[test]
    fn a_login_slowdown_past_ten_seconds_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = refusal(dir.path(), "[gnmi]\nlogin_slowdown_ms = 60000\n");
        assert!(
            err.contains("gnmi.login_slowdown_ms = 60000: expected 0 to 10000"),
            "{err}"
        );
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
        assert_eq!((defaults.max_connections, defaults.web_config), (16, None));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("efbd.toml");
        std::fs::write(
            &file,
            "[metrics]\nlisten = \"0.0.0.0:9100\"\nmax_flows = 10\nmax_connections = 4\n\
             web_config = \"/etc/efb/web.yml\"\n",
        )
        .unwrap();
        let from_file = Settings::from_flags(&Flags {
            config: Some(file.clone()),
            ..Flags::default()
        })
        .unwrap()
        .metrics;
        assert_eq!((from_file.listen.port(), from_file.max_flows), (9100, 10));
        assert_eq!(from_file.max_connections, 4);
        assert_eq!(from_file.web_config, Some("/etc/efb/web.yml".into()));
        let flagged = Settings::from_flags(&Flags {
            config: Some(file.clone()),
            metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
            web_config_file: Some("/elsewhere/web.yml".into()),
            ..Flags::default()
        })
        .unwrap()
        .metrics;
        assert_eq!(flagged.listen.to_string(), "127.0.0.1:0");
        assert_eq!(flagged.web_config, Some("/elsewhere/web.yml".into()));
        std::fs::write(&file, "[metrics]\nmax_connections = 0\n").unwrap();
        let err = Settings::from_flags(&Flags {
            config: Some(file),
            ..Flags::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("metrics.max_connections"), "{err}");
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
