//! efbd's gNMI server: its settings turned into a running server (users, TLS, limits),
//! bound before efbd says where it listens.

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use efb_gnmi::ServerConfig;
use efb_northbound::audit::Audit;
use efb_northbound::auth::{Cost, Users, hash_password as hash};
use efb_northbound::budget::Budget;
use efb_northbound::published::Snapshot;
use efb_northbound::tls::Origin;
use efb_northbound::{TlsIdentity, tls};
use efb_yang::Schema;
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tracing::{info, warn};

use crate::chip::CounterLists;
use crate::northbound::gnmi_backend::GnmiBackend;
use crate::owner::Owner;
use crate::settings::Settings;

/// A gNMI server ready to serve: listening, users and certificate loaded.
pub struct Server {
    listener: TcpListener,
    backend: Arc<GnmiBackend>,
    config: ServerConfig,
}

impl Server {
    /// The line efbd prints: `efbd: gNMI on ADDR (TLS); certificate PATH` or
    /// `(plaintext)`. Clients must trust that certificate, so the path is told where the
    /// engineer looks, not only in the log.
    pub fn banner(&self) -> String {
        let address = self
            .listener
            .local_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        match &self.config.tls {
            Some(identity) => {
                let made = match identity.origin {
                    Origin::Generated => " (self-signed, made now)",
                    Origin::Renewed { .. } => " (self-signed, renewed now)",
                    Origin::Configured | Origin::Kept => "",
                };
                format!(
                    "efbd: gNMI on {address} (TLS); certificate {}{made}",
                    identity.cert_path.display()
                )
            }
            None => format!("efbd: gNMI on {address} (plaintext)"),
        }
    }

    /// The server's open connections and subscriptions (metrics).
    pub fn activity(&self) -> efb_gnmi::Activity {
        self.config.activity.clone()
    }

    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        efb_gnmi::serve(self.backend, self.config, self.listener, shutdown)
            .await
            .context("serving gNMI")
    }
}

/// What gNMI shares with the management API's TCP listener: one users file, one
/// certificate, one audit.
#[derive(Clone)]
pub struct Shared {
    pub users: Arc<Users>,
    /// None when neither gNMI with TLS nor the management API's TCP is on.
    pub tls: Option<TlsIdentity>,
    pub audit: Audit,
    /// What every client makes efbd hold, whatever the door.
    pub budget: Arc<Budget>,
}

impl Shared {
    /// The users file and the certificate the settings name, loaded once.
    pub fn load(settings: &Settings, audit: Audit, budget: Arc<Budget>) -> Result<Shared> {
        let gnmi = &settings.gnmi;
        let users = match &gnmi.users {
            Some(path) => {
                let users = Users::load(path)?;
                info!(file = %path.display(), users = users.len(), "users file loaded");
                users
            }
            None => {
                if gnmi.enabled {
                    warn!("no gNMI users file (gnmi.users, --gnmi-users): gNMI accepts no logins");
                }
                Users::none()
            }
        };
        let wanted = (gnmi.enabled && !gnmi.plaintext) || settings.management.listen.is_some();
        let tls = if wanted {
            Some(identity(settings)?)
        } else {
            None
        };
        Ok(Shared {
            users: Arc::new(users.with_limits(gnmi.login_limits())),
            tls,
            audit,
            budget,
        })
    }
}

/// The server certificate (configured, or generated once in the datastore directory) and
/// the client CA, if any.
fn identity(settings: &Settings) -> Result<TlsIdentity> {
    let gnmi = &settings.gnmi;
    let mut identity = tls::load_or_generate(
        gnmi.tls_cert.as_deref(),
        gnmi.tls_key.as_deref(),
        &settings.datastore,
    )?;
    tell_certificate(&identity);
    if let Some(ca) = &gnmi.client_ca {
        identity = identity
            .with_client_ca(ca)
            .context("gnmi.client_ca (--gnmi-client-ca)")?;
        info!(ca = %ca.display(), "client certificates signed by this CA log in as the user their CN names");
    }
    // Refused at start, not at the first client: a key that does not fit, a CA that is not one.
    identity.acceptor()?;
    Ok(identity)
}

/// Says which certificate efbd serves and until when. A new one (made or renewed) is a
/// warning: clients must be given it to trust the server, so it shows at the levels that
/// hide the rest, and in the log's format (a bare line would break JSON). So is a
/// configured one near or past its end, which efbd never replaces.
fn tell_certificate(identity: &TlsIdentity) {
    let cert = identity.cert_path.display();
    let until = identity.not_after.map_or_else(
        || "?".to_string(),
        |t| humantime::format_rfc3339_seconds(t).to_string(),
    );
    match identity.origin {
        Origin::Generated => {
            warn!(%cert, %until, "generated a self-signed gNMI certificate: clients must trust it");
        }
        Origin::Renewed { previous_end } => {
            let ended = previous_end.map_or_else(
                || "?".to_string(),
                |t| humantime::format_rfc3339_seconds(t).to_string(),
            );
            let renew_before_days = tls::RENEW_BEFORE.as_secs() / (24 * 3600);
            warn!(%cert, %until, previous_end = %ended, renew_before_days, "renewed the self-signed gNMI certificate, with a new key, as the old one had ended or was near its end: clients must trust the new one");
        }
        Origin::Configured | Origin::Kept => info!(%cert, %until, "TLS certificate"),
    }
    if let Some(warning) = identity.ending_warning(std::time::SystemTime::now()) {
        warn!("{warning}");
    }
}

/// Binds and loads what the gNMI settings name; `None` when gNMI is off.
pub async fn prepare(
    settings: &Settings,
    owner: Owner,
    schema: Arc<Schema>,
    snapshots: broadcast::Sender<Arc<Snapshot>>,
    counter_lists: CounterLists,
    shared: Shared,
) -> Result<Option<Server>> {
    let gnmi = &settings.gnmi;
    if !gnmi.enabled {
        info!("gNMI is off (gnmi.enabled = false)");
        return Ok(None);
    }
    let tls = if gnmi.plaintext {
        warn!("gNMI without TLS (gnmi.plaintext): passwords cross the network in clear");
        None
    } else {
        shared.tls
    };
    let listener = TcpListener::bind(gnmi.listen)
        .await
        .with_context(|| format!("gNMI: listening on {}", gnmi.listen))?;
    let config = ServerConfig {
        users: shared.users,
        audit: shared.audit,
        tls,
        max_message_bytes: gnmi.max_message_mib.saturating_mul(1024 * 1024),
        max_paths: gnmi.max_paths,
        budget: shared.budget,
        subscriber_queue: gnmi.subscriber_queue,
        max_subscriptions: gnmi.max_subscriptions,
        max_subscriptions_per_user: gnmi.max_subscriptions_per_user,
        connections: gnmi.connections.limits("gNMI", "gnmi.connections"),
        ..ServerConfig::default()
    };
    let interfaces = crate::northbound::openconfig::BoxInterfaces::start(owner.clone(), &snapshots);
    let backend = Arc::new(GnmiBackend {
        owner,
        schema,
        snapshots,
        counter_lists,
        interfaces,
    });
    Ok(Some(Server {
        listener,
        backend,
        config,
    }))
}

/// `efbd --hash-password`: a password on standard input (one line), its hash on output.
pub fn hash_password() -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("efbd: cannot read the password: {e}");
        return ExitCode::FAILURE;
    }
    let password = input.strip_suffix('\n').unwrap_or(&input);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        eprintln!("efbd: give the password on standard input");
        return ExitCode::from(2);
    }
    match hash(password, Cost::Standard) {
        Ok(phc) => {
            println!("{phc}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("efbd: {e}");
            ExitCode::FAILURE
        }
    }
}
