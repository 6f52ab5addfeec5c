//! The command line: each flag overrides the same setting of the TOML file.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

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
    /// of a load [default: 32].
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
    /// Web configuration of the metrics endpoint, as Prometheus exporters take it (YAML:
    /// tls_server_config, basic_auth_users with bcrypt hashes) [default: none, plain HTTP
    /// without login].
    #[arg(long, value_name = "FILE", conflicts_with = "no_metrics")]
    pub web_config_file: Option<PathBuf>,
    /// Read a password on standard input, print its Argon2id hash for the users file, exit.
    #[arg(long)]
    pub hash_password: bool,
    /// Print the effective settings as TOML and exit.
    #[arg(long)]
    pub print_settings: bool,
}
