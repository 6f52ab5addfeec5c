//! efbd: starts the configuration owner on the datastore and serves the management API
//! and gNMI until SIGTERM or SIGINT, then stops cleanly (every commit is on disk when it
//! returns).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use efb_datastore::{Datastore, DatastoreError, OpenOptions};
use efb_mgmt_proto::v1::management_server::ManagementServer;
use efb_northbound::audit::Audit;
use efb_northbound::budget::Budget;
use efb_northbound::decoded::Methods;
use efb_northbound::guard::{Door, Guard};
use efb_northbound::listen;
use efb_yang::Schema;
use efbd::chip::liveness::Liveness;
use efbd::chip::{self, CounterLists};
use efbd::northbound::admission::{self, ManagementJudge};
use efbd::northbound::callers::{self, Callers};
use efbd::northbound::gnmi_server as gnmi;
use efbd::northbound::service::Service;
use efbd::northbound::socket;
use efbd::owner::{Owner, OwnerState, Request};
use efbd::process::{notify, open_files, state_dir};
use efbd::record::audit::AuditLog;
use efbd::record::events::Events;
use efbd::settings::{Flags, Settings};
use efbd::state::instruments::Instruments;
use efbd::state::metrics;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream, UnixListenerStream};
use tracing::{info, warn};

/// Snapshots a telemetry subscriber may be behind before it is cut off.
const SNAPSHOT_QUEUE: usize = 1024;

fn main() -> ExitCode {
    efbd::process::memory::return_large_buffers();
    let flags = Flags::parse();
    let settings = match Settings::from_flags(&flags) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("efbd: {e}");
            return ExitCode::from(2);
        }
    };
    if flags.print_settings {
        print!("{}", settings.to_toml());
        return ExitCode::SUCCESS;
    }
    if flags.hash_password {
        return gnmi::hash_password();
    }
    if let Err(e) = efbd::record::logging::init(&settings.log) {
        eprintln!("efbd: {e}");
        return ExitCode::from(2);
    }
    let boot_id = flags.boot_id.clone();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("efbd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(settings, boot_id)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("efbd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(settings: Settings, boot_id: Option<String>) -> Result<()> {
    open_files::raise(&settings.descriptors());
    state_dir::check(&settings.datastore)?;
    let schema = Arc::new(Schema::load().context("loading the YANG module")?);
    let mut options = OpenOptions::new(&settings.datastore);
    options.factory_default = settings.factory_default.clone();
    options.max_input = efb_yang::input::Limit::mib(
        settings.max_input_mib,
        "efbd's setting max_input_mib (--max-input-mib)",
    );
    options.boot_id = boot_id;
    let datastore = tokio::task::block_in_place(|| Datastore::open(schema.clone(), options));
    let datastore = match datastore {
        Ok(ds) => ds,
        // Each says which file or directory, and the fix.
        Err(e @ (DatastoreError::Locked { .. } | DatastoreError::Untrusted { .. })) => {
            anyhow::bail!("{e}")
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("opening datastore {}", settings.datastore.display()));
        }
    };
    info!(
        datastore = %settings.datastore.display(),
        commit = datastore.running().commit_id,
        "datastore open"
    );
    // Subscribers that fall this many snapshots behind are told so and dropped.
    let (snapshots, _) = tokio::sync::broadcast::channel(SNAPSHOT_QUEUE);
    let counter_lists = CounterLists::of(&schema).context("the lists with counters")?;
    let events = Events::new(settings.log.recent_events);
    let mut state = OwnerState::new(datastore, snapshots.clone(), events.clone());
    state.set_session_limits(settings.management.session_limits());
    let instruments = Instruments::new();
    state.attach_metrics(instruments.clone());
    let driver = start_driver(&settings, &state)?;
    let mut probing = None;
    if let Some(driver) = &driver {
        chip::watch_connection(driver, events.clone());
        state.attach_driver(driver.clone());
        let (liveness, task) = Liveness::new(state.running_config());
        state.attach_liveness(liveness);
        probing = Some((task, driver.clone()));
    }
    let (owner, owner_thread) = Owner::start(state).context("starting the configuration owner")?;
    let stopper = owner.clone();
    let (stop, stopped) = watch::channel(false);
    if let Some(driver) = &driver {
        efbd::chip::links::watch(driver, owner.clone(), stopped.clone());
    }
    let probing = probing.map(|(task, driver)| {
        let owner = owner.clone();
        // The owner gone, efbd is stopping: the changes do not matter any more.
        let to_owner = move |changes| {
            let _ = owner.tell(Request::LivenessChanged(changes));
        };
        task.spawn(
            driver,
            to_owner,
            instruments.liveness_observers(),
            stopped.clone(),
        )
    });

    let limits = settings
        .management
        .connections
        .limits("management API", "management.connections");
    let management = &settings.management;
    let socket_path = management.socket_path(&settings.datastore);
    let (socket, socket_file) = socket::bind(&socket_path, management)?;
    let tcp = match management.listen {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("management.listen: listening on {addr}"))?,
        ),
        None => None,
    };
    let audit_log = Arc::new(
        AuditLog::open(&settings.datastore, &settings.audit).with_context(|| {
            format!("opening the audit log in {}", settings.datastore.display())
        })?,
    );
    // Kept to the end: the counts of refusals within the last minute are written at stop.
    let audit_at_stop = audit_log.clone();
    // One budget for what every client makes efbd hold, whatever the door.
    let budget = Budget::new(settings.memory.limits());
    let shared = gnmi::Shared::load(&settings, Audit::new(audit_log.clone()), budget.clone())?;
    let gnmi = gnmi::prepare(
        &settings,
        owner.clone(),
        schema.clone(),
        snapshots,
        counter_lists.clone(),
        shared.clone(),
    )
    .await?;
    // Bound last: efbd refused for anything else does not hold the port meanwhile.
    let metrics_endpoint = metrics::bind(&settings.metrics).await?;
    let tcp_banner = match &tcp {
        Some(listener) => format!("efbd: management API on {} (TLS)\n", listener.local_addr()?),
        None => String::new(),
    };
    // Scripts and tests read these lines to find ports chosen by the system; written at
    // once, before anything else goes to standard output.
    let banner = format!(
        "efbd: management API on unix:{}\n{}\n{tcp_banner}{}\n",
        socket_path.display(),
        gnmi.as_ref()
            .map_or("efbd: gNMI off".to_string(), gnmi::Server::banner),
        metrics::banner(metrics_endpoint.as_ref()),
    );
    let signalled = shutdown_signal()?;
    print!("{banner}");
    std::io::Write::flush(&mut std::io::stdout())?;
    // Every listener is bound: under systemd (Type=notify), efbd has started.
    let status = banner.trim_end().replace("efbd: ", "").replace('\n', "; ");
    notify::tell(&format!("READY=1\nSTATUS={status}"));
    info!(socket = %socket_path.display(), tcp = ?management.listen, p4runtime = %settings.p4runtime.target, "serving the management API");
    let missing = callers::missing_groups(&management.groups);
    if !missing.is_empty() {
        warn!(groups = ?missing, "these groups do not exist: no Unix account has their role (management.groups)");
    }

    tokio::spawn(async move {
        signalled.await;
        notify::tell("STOPPING=1");
        let _ = stop.send(true);
    });
    let metrics_task = metrics_endpoint.map(|endpoint| {
        let sources = metrics::Sources {
            instruments,
            owner: owner.clone(),
            gnmi: gnmi.as_ref().map(gnmi::Server::activity),
            max_flows: settings.metrics.max_flows,
        };
        tokio::spawn(sources.serve(endpoint, until(stopped.clone())))
    });
    let gnmi_task = gnmi.map(|server| tokio::spawn(server.serve(until(stopped.clone()))));

    let tcp_users = tcp.is_some().then(|| shared.users.clone());
    let callers = Arc::new(
        Callers::new(management.groups.clone(), tcp_users)
            .with_audit(Audit::new(audit_log.clone())),
    );
    // A Load or EditLines carries a configuration of at most max_input_mib, and its framing.
    let max_message = usize::try_from(settings.max_input_mib)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .saturating_mul(1024 * 1024);
    let judge = Arc::new(admission::judge(
        callers.clone(),
        Audit::new(audit_log.clone()),
        max_message,
    ));
    let door = Arc::new(Door {
        budget,
        methods: Arc::new(
            Methods::new(&[efb_mgmt_proto::FILE_DESCRIPTOR_SET])
                .context("the management API's descriptors")?,
        ),
        gzip: false,
    });
    let service = Arc::new(
        Service::new(
            owner,
            schema,
            counter_lists,
            settings.datastore.display().to_string(),
            callers,
            audit_log,
            events,
        )
        .ending_streams_on(stopped.clone()),
    );
    let tcp_task = match (tcp, shared.tls) {
        (Some(listener), Some(identity)) => {
            let incoming = incoming(listener, limits.clone(), Some(identity.acceptor()?));
            let server = listen::server(&limits)
                .add_service(management_server(
                    service.clone(),
                    judge.clone(),
                    &door,
                    max_message,
                ))
                .serve_with_incoming_shutdown(incoming, until(stopped.clone()));
            Some(tokio::spawn(server))
        }
        _ => None,
    };
    let unix = listen::incoming(UnixListenerStream::new(socket), limits.clone(), None);
    listen::server(&limits)
        .add_service(management_server(service, judge, &door, max_message))
        .serve_with_incoming_shutdown(unix, until(stopped))
        .await
        .context("serving the management API")?;
    drop(socket_file);
    if let Some(task) = tcp_task {
        task.await
            .context("the management API's TCP server panicked")?
            .context("serving the management API on TCP")?;
    }
    if let Some(task) = gnmi_task {
        task.await.context("the gNMI server panicked")??;
    }
    if let Some(task) = metrics_task {
        task.await.context("the metrics server panicked")?;
    }
    if let Some(probing) = probing {
        probing.await.context("the liveness task panicked")?;
    }
    // The servers and liveness are gone; a connection a client kept open may still hold a
    // handle on the owner: it is told to stop, and answers UNAVAILABLE after.
    let _ = stopper.tell(Request::Stop);
    drop(stopper);
    tokio::task::block_in_place(|| owner_thread.join())
        .map_err(|_| anyhow::anyhow!("the configuration owner panicked"))?;
    if let Some(driver) = driver {
        driver.stop().await;
    }
    audit_at_stop.flush();
    info!("stopped");
    Ok(())
}

/// The southbound driver for the running configuration, unless efbd runs without a data
/// plane. It connects in the background: efbd serves while the chip is still unreachable.
fn start_driver(settings: &Settings, state: &OwnerState) -> Result<Option<efb_p4::Driver>> {
    let p4runtime = &settings.p4runtime;
    if !p4runtime.enabled {
        info!("no data plane: commits change the configuration only");
        return Ok(None);
    }
    let running = state.running_config();
    chip::start(
        &p4runtime.target,
        p4runtime.device_id,
        &settings.datastore,
        running,
    )
    .context("starting the southbound driver")
    .map(Some)
}

/// Completes when `stopped` turns true (SIGTERM or SIGINT).
async fn until(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// The management API behind its guard: callers judged before a request's body is read,
/// its messages held against the budget. Replies (a configuration shown) are as large as
/// the largest configuration taken in.
fn management_server(
    service: Arc<Service>,
    judge: Arc<ManagementJudge>,
    door: &Arc<Door>,
    max_message: usize,
) -> Guard<ManagementServer<Service>, ManagementJudge> {
    let server = ManagementServer::from_arc(service)
        .max_decoding_message_size(max_message)
        .max_encoding_message_size(max_message.saturating_mul(2));
    Guard::new(server, judge, door.clone())
}

/// Accepted TCP connections within `limits`, after TLS, without Nagle's delay: a shell's
/// requests are small, and waiting for delayed acknowledgements would add 40 ms to every
/// Tab.
fn incoming(
    listener: TcpListener,
    limits: listen::Limits,
    tls: Option<listen::TlsAcceptor>,
) -> ReceiverStream<std::io::Result<listen::Conn<TcpStream>>> {
    let accepted = TcpListenerStream::new(listener).map(|stream| {
        // Fails only for a connection already reset, which its first read will find.
        stream.inspect(|s| {
            let _ = s.set_nodelay(true);
        })
    });
    listen::incoming(accepted, limits, tls)
}

/// Completes at SIGTERM or SIGINT; the handlers are in place when this returns, so that a
/// supervisor may stop efbd as soon as it has said where it listens.
fn shutdown_signal() -> Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => info!("SIGTERM: stopping"),
            _ = int.recv() => info!("SIGINT: stopping"),
        }
    })
}
