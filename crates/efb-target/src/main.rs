//! efb-target: the software chip. Serves P4Runtime (and its own control service) on a
//! loopback port and forwards frames through an emulation of p4/efb.p4.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use efb_p4info::PortMap;
use efb_target::{Device, DeviceOptions, Profile};

mod ctl;

/// The EcoFilter Balancer's software target: a P4Runtime server that behaves like the
/// Tofino running p4/efb.p4, with emulated filters behind pair ports. The control service
/// efb.target.v1.TargetControl (proto/efb/target/v1/control.proto) on the same address
/// injects and reads frames, sets filter faults and port state, and restarts the target.
#[derive(Parser, Debug)]
#[command(name = "efb-target", version)]
struct Args {
    /// Address to serve P4Runtime and TargetControl on (9559 is P4Runtime's IANA port).
    #[arg(long, default_value = "127.0.0.1:9559")]
    listen: SocketAddr,
    /// The P4Runtime device id.
    #[arg(long, default_value_t = 1)]
    device_id: u64,
    /// Strictness: `spec` (everything the P4Runtime specification allows) or
    /// `stratum-tofino` (also refuses what Stratum on Tofino refuses).
    #[arg(long, default_value = "stratum-tofino")]
    profile: Profile,
    /// Port map (front-panel port/lane -> device port); the 32-port board's by default.
    #[arg(long)]
    port_map: Option<PathBuf>,
    /// Frames kept per port for ReadFrames; 0 turns capture off.
    #[arg(long, default_value_t = 10_000)]
    capture_limit: usize,
    /// Cap every table at this many entries (0: the P4Info's sizes), e.g. to see a commit
    /// refused by a full table.
    #[arg(long, default_value_t = 0)]
    table_size_limit: u64,
    /// Serve Prometheus metrics of the emulated ports at http://ADDR/metrics (off by
    /// default: tests run many targets at once); port 0 picks a free port.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Web configuration of the metrics endpoint, as Prometheus exporters take it (YAML:
    /// tls_server_config, basic_auth_users with bcrypt hashes), as efbd's.
    #[arg(long, value_name = "FILE", requires = "metrics_listen")]
    web_config_file: Option<PathBuf>,
    /// Log filter (tracing-subscriber syntax), e.g. info, debug, efb_target=trace.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Instead of serving: act on a running target (the demo's hands on the cables).
    #[command(subcommand)]
    control: Option<ctl::Control>,
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    if let Some(control) = args.control {
        return Ok(ctl::run(control).await);
    }
    serve(args).await?;
    Ok(ExitCode::SUCCESS)
}

/// Serves until SIGINT or SIGTERM.
async fn serve(args: Args) -> anyhow::Result<()> {
    // The log on standard error, standard output being for the line scripts read; colour
    // only for a terminal, not for a log file.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&args.log_level).context("--log-level")?,
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let port_map = match &args.port_map {
        Some(path) => PortMap::from_file(path),
        None => PortMap::builtin(),
    }
    .context("port map")?;
    let device = Device::new(DeviceOptions {
        device_id: args.device_id,
        profile: args.profile,
        port_map,
        capture_limit: args.capture_limit,
        table_size_limit: args.table_size_limit,
        emulated_filters: true,
    });
    let servers = efb_target::serve(device, args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let metrics = match args.metrics_listen {
        Some(addr) => Some(metrics_endpoint(addr, args.web_config_file.as_deref()).await?),
        None => None,
    };
    // Ready for a TERM before saying where it listens: a supervisor may send one at once.
    let stopped = stop_signal()?;
    // Scripts and tests read these lines to find ports chosen by the system; written at
    // once, before anything else goes to standard output.
    let metrics_line = match &metrics {
        Some((listener, options)) => format!(
            "efb-target: metrics on {}://{}{}\n",
            options.scheme(),
            listener.local_addr()?,
            efb_metrics::PATH
        ),
        None => String::new(),
    };
    print!("efb-target: P4Runtime on {}\n{metrics_line}", servers.addr);
    std::io::Write::flush(&mut std::io::stdout())?;
    if let Some((listener, options)) = metrics {
        let device = servers.device.clone();
        // Ends with the process: the target has nothing to flush.
        tokio::spawn(efb_target::metrics::serve(
            device,
            listener,
            options,
            std::future::pending(),
        ));
    }
    tokio::select! {
        result = servers.wait() => result.context("server failed"),
        () = stopped => {
            tracing::info!("stopping");
            Ok(())
        }
    }
}

/// The metrics listener at `addr`, served as the web configuration at `web_config` says.
async fn metrics_endpoint(
    addr: SocketAddr,
    web_config: Option<&Path>,
) -> anyhow::Result<(tokio::net::TcpListener, efb_metrics::Options)> {
    let web = match web_config {
        Some(path) => Some(efb_metrics::Web::load(path, "--web-config-file")?),
        None => None,
    };
    let options = efb_metrics::Options {
        web,
        ..efb_metrics::Options::default()
    };
    let listener = efb_metrics::bind(addr, "--metrics-listen", "give another address").await?;
    if let Some(exposure) = options.exposure(addr) {
        tracing::warn!(listen = %addr, "metrics: {exposure}");
    }
    Ok((listener, options))
}

/// Completes at SIGINT or SIGTERM; the handlers are in place when this returns.
fn stop_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
