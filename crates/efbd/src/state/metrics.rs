//! efbd's Prometheus metrics, served by efb-metrics at `GET /metrics`.
//!
//! Counters that only an event can tell are kept where every such event passes
//! ([`Instruments`]: a commit finishing in the owner, a validation in the datastore).
//! Everything else is read at scrape time from what `show` reads (the owner's state, the
//! chip driver, the gNMI server's counts), so no value can drift from what the shell says.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use efb_gnmi::Activity;
use efb_liveness::{PairState, PairStatus};
use efb_metrics::prometheus_client::registry::Registry;
use efb_metrics::{Labels, Scraped, Values};
use efb_model::Config;
use efb_p4::Driver;
use tokio::net::TcpListener;
use tracing::warn;

use crate::chip::liveness;
use crate::owner::{Owner, Request as R, Status};
use crate::settings::Metrics as Settings;
use crate::state::StateInputs;
use crate::state::instruments::Instruments;

/// The metrics listener, and how it serves.
pub struct Endpoint {
    pub listener: TcpListener,
    pub options: efb_metrics::Options,
}

/// The setting that names the web configuration file, as errors name it.
const WEB_CONFIG: &str = "metrics.web_config (--web-config-file)";

/// Reads the web configuration and listens where the settings say, if metrics are on. A
/// bad web configuration, or an address in use, stops efbd with the setting named.
pub async fn bind(settings: &Settings) -> anyhow::Result<Option<Endpoint>> {
    if !settings.enabled {
        return Ok(None);
    }
    let web = match &settings.web_config {
        Some(path) => Some(efb_metrics::Web::load(path, WEB_CONFIG)?),
        None => None,
    };
    let options = efb_metrics::Options {
        max_connections: settings.max_connections,
        web,
        ..efb_metrics::Options::default()
    };
    let hint = "give another address (metrics.listen, --metrics-listen) or turn metrics \
                off (metrics.enabled = false, --no-metrics)";
    let listener = efb_metrics::bind(settings.listen, "metrics.listen", hint).await?;
    if let Some(exposure) = options.exposure(settings.listen) {
        warn!(listen = %settings.listen, "metrics: {exposure}");
    }
    Ok(Some(Endpoint { listener, options }))
}

/// The line efbd prints about metrics.
pub fn banner(endpoint: Option<&Endpoint>) -> String {
    let Some(endpoint) = endpoint else {
        return "efbd: metrics off".to_string();
    };
    match endpoint.listener.local_addr() {
        Ok(addr) => format!(
            "efbd: metrics on {}://{addr}{}",
            endpoint.options.scheme(),
            efb_metrics::PATH
        ),
        Err(_) => "efbd: metrics off".to_string(),
    }
}

/// What a scrape reads from.
#[derive(Clone)]
pub struct Sources {
    pub instruments: Instruments,
    pub owner: Owner,
    /// The gNMI server's counts, when it serves.
    pub gnmi: Option<Activity>,
    pub max_flows: usize,
}

impl Sources {
    /// Serves the metrics at `endpoint` until `shutdown` completes.
    pub async fn serve(self, endpoint: Endpoint, shutdown: impl Future<Output = ()>) {
        let scrape = move || {
            let sources = self.clone();
            async move { sources.scrape().await }
        };
        efb_metrics::serve(endpoint.listener, endpoint.options, scrape, shutdown).await;
    }

    /// The instruments and everything read now.
    pub async fn scrape(&self) -> Scraped {
        let mut scraped = vec![self.instruments.registry()];
        // The owner gone, efbd is stopping: what it held does not matter any more.
        let (Ok(inputs), Ok(status)) = (
            self.owner.ask(R::StateInputs).await,
            self.owner.ask(R::Status).await,
        ) else {
            return scraped;
        };
        let sources = self.clone();
        // The chip's counters are read with blocking calls.
        match tokio::task::spawn_blocking(move || sources.read(&inputs, &status)).await {
            Ok(registry) => scraped.push(Arc::new(registry)),
            Err(e) => warn!(%e, "metrics: reading the state failed"),
        }
        scraped
    }

    fn read(&self, inputs: &StateInputs, status: &Status) -> Registry {
        let mut out = Values::default();
        daemon(&mut out, status, self.instruments.started());
        gnmi(&mut out, self.gnmi.as_ref());
        units(&mut out, inputs);
        if let Some(driver) = &inputs.driver {
            chip(&mut out, driver);
            links(&mut out, &inputs.running.config, driver);
            pairs(&mut out, &inputs.pairs);
            flows(&mut out, driver, &inputs.running.config, self.max_flows);
        }
        process(&mut out);
        out.into_registry()
    }
}

fn bool_value(b: bool) -> i64 {
    i64::from(b)
}

fn daemon(out: &mut Values, status: &Status, started: SystemTime) {
    out.gauges(
        "efb_build_info",
        "efbd's version (always 1)",
        [(vec![("version", env!("CARGO_PKG_VERSION").to_string())], 1)],
    );
    out.gauge(
        "efb_running_commit_id",
        "Number of the running configuration's commit",
        i64::try_from(status.running_commit_id).unwrap_or(i64::MAX),
    );
    out.gauge(
        "efb_commit_confirm_pending",
        "1 while a commit confirmed waits for its confirmation",
        bool_value(status.confirm_deadline.is_some()),
    );
    out.gauge(
        "efb_management_sessions",
        "Sessions of the management API open (shells, scripts)",
        status.sessions as i64,
    );
    let start = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    out.seconds(
        "efb_process_start_time",
        "When efbd started, in seconds since the Unix epoch",
        [(Labels::new(), start.as_secs_f64())],
    );
}

fn gnmi(out: &mut Values, activity: Option<&Activity>) {
    let (connections, subscriptions) =
        activity.map_or((0, 0), |a| (a.connections.now(), a.subscriptions.now()));
    out.gauge(
        "efb_gnmi_connections",
        "gNMI client connections open (0 when gNMI is off)",
        connections as i64,
    );
    out.gauge(
        "efb_gnmi_subscriptions",
        "gNMI Subscribe RPCs under way",
        subscriptions as i64,
    );
}

fn chip(out: &mut Values, driver: &Driver) {
    let status = driver.status();
    let counts = driver.counts();
    out.gauge(
        "efb_chip_connected",
        "1 while efbd is connected to the chip's P4Runtime server",
        bool_value(status.connected),
    );
    out.gauge(
        "efb_chip_primary",
        "1 while efbd is the chip's primary controller",
        bool_value(status.primary),
    );
    out.gauge(
        "efb_chip_in_sync",
        "1 while the chip holds exactly the running configuration",
        bool_value(status.in_sync),
    );
    out.gauge(
        "efb_chip_entries",
        "Table entries the chip holds for the configuration",
        status.entries as i64,
    );
    out.counter(
        "efb_chip_entries_written",
        "Table updates the chip took (commits, liveness and bypass changes, reconciles, undos)",
        counts.entries_written,
    );
    out.counter(
        "efb_chip_refusals",
        "Writes the chip refused (the commit or change was refused, nothing kept)",
        counts.refusals,
    );
    out.counters(
        "efb_chip_reconciles",
        "Reconciles of the chip with the running configuration (at every connection), by result",
        [
            (vec![("result", "ok".to_string())], counts.reconciles),
            (
                vec![("result", "failed".to_string())],
                counts.reconciles_failed,
            ),
        ],
    );
    out.counter(
        "efb_chip_reconcile_entries_written",
        "Table updates written by reconciles",
        counts.reconcile_entries_written,
    );
    out.seconds(
        "efb_chip_last_reconcile_duration",
        "Time the last reconcile took",
        [(Labels::new(), status.reconcile_time.as_secs_f64())],
    );
}

fn units(out: &mut Values, inputs: &StateInputs) {
    let statuses = liveness::unit_statuses(&inputs.running.config, &inputs.live);
    let unit = |name: &String| vec![("unit", name.clone())];
    out.state_set(
        "efb_unit_status",
        "Unit status: active (filters traffic) or bypass; 1 for the current one",
        "status",
        &["active", "bypass"],
        statuses
            .iter()
            .map(|(name, (active, _))| (unit(name), liveness::unit_status_name(*active))),
    );
    out.state_set(
        "efb_unit_bypass_mode",
        "Bypass mode an operator set: auto (liveness decides), bypass or primary; 1 for the \
         current one",
        "mode",
        &["auto", "bypass", "primary"],
        statuses
            .keys()
            .map(|name| (unit(name), inputs.live.mode(name).as_str())),
    );
    out.gauges(
        "efb_unit_active_pairs",
        "Pairs of the unit that take traffic",
        statuses
            .iter()
            .map(|(name, (_, live))| (unit(name), *live as i64)),
    );
}

/// Each link's status from the chip's port states (none while the chip has not told).
fn links(out: &mut Values, config: &efb_model::Config, driver: &efb_p4::Driver) {
    let Some(up) = driver.port_states_now() else {
        return;
    };
    out.state_set(
        "efb_link_status",
        "Operator link status from its ports' oper-status: up (both ports up) or down; 1 for \
         the current one",
        "status",
        &["up", "down"],
        crate::chip::links::link_states(config, &up)
            .into_iter()
            .map(|(name, state)| (vec![("link", name)], state.word())),
    );
}

fn pairs(out: &mut Values, pairs: &[PairState]) {
    let pair = |p: &PairState| vec![("unit", p.unit.clone()), ("pair", p.pair.clone())];
    let statuses = [PairStatus::Init, PairStatus::Up, PairStatus::Down].map(PairStatus::as_str);
    out.state_set(
        "efb_pair_status",
        "Pair liveness found by keep-alives: init (not judged yet), up or down; 1 for the \
         current one",
        "status",
        &statuses,
        pairs.iter().map(|p| (pair(p), p.status.as_str())),
    );
    // A keep-alive sent out of the LAN port comes back on the WAN side: "to WAN".
    let on_path = pairs.iter().flat_map(|p| {
        [("to_wan", 0), ("to_lan", 1)]
            .into_iter()
            .filter_map(move |(direction, i)| {
                let ns = p.time_on_path_ns[i]?;
                let mut labels = pair(p);
                labels.push(("direction", direction.to_string()));
                Some((labels, Duration::from_nanos(ns).as_secs_f64()))
            })
    });
    out.seconds(
        "efb_pair_time_on_path",
        "Time the last keep-alive back took through the filter, by direction",
        on_path.collect::<Vec<_>>(),
    );
    out.counters(
        "efb_pair_probes_sent",
        "Keep-alives sent through the pair",
        pairs.iter().map(|p| (pair(p), p.sent.iter().sum())),
    );
    out.counters(
        "efb_pair_probes_lost",
        "Keep-alives that did not come back",
        pairs.iter().map(|p| (pair(p), p.probes_lost())),
    );
    out.counters(
        "efb_pair_status_changes",
        "Status changes of the pair since it was first probed",
        pairs.iter().map(|p| (pair(p), p.changes)),
    );
}

/// The flows whose counters are exported: the `max` of highest priority (then by name).
pub fn exported_flows(config: &Config, max: usize) -> Vec<String> {
    let mut flows: Vec<_> = config.flows.values().collect();
    flows.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(&b.name)));
    flows
        .into_iter()
        .take(max)
        .map(|f| f.name.clone())
        .collect()
}

fn flows(out: &mut Values, driver: &Driver, config: &Config, max: usize) {
    out.gauge(
        "efb_flows",
        "Flows in the running configuration (counters are exported for metrics.max_flows of \
         them, the highest priority first)",
        config.flows.len() as i64,
    );
    let names = exported_flows(config, max);
    if names.is_empty() {
        return;
    }
    let entries = driver.flow_entries(Some(&names));
    let flow = |name: &String| vec![("flow", name.clone())];
    out.gauges(
        "efb_flow_entries",
        "Table entries the flow compiled to",
        names
            .iter()
            .map(|name| (flow(name), entries.get(name).map_or(0, |n| *n as i64))),
    );
    // Not connected: no counters, rather than zeros that would look like a reset.
    let Some(counted) = driver.flow_counters(Some(&names)) else {
        return;
    };
    let counts = |pick: fn(&(u64, u64)) -> u64| {
        names
            .iter()
            .map(|name| (flow(name), counted.get(name).map_or(0, pick)))
            .collect::<Vec<_>>()
    };
    out.counters(
        "efb_flow_packets",
        "Packets the flow's entries matched",
        counts(|c| c.0),
    );
    out.counters(
        "efb_flow_bytes",
        "Bytes the flow's entries matched",
        counts(|c| c.1),
    );
}

/// Memory and file descriptors from /proc (Linux); left out where it cannot be read.
fn process(out: &mut Values) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let fields: BTreeMap<&str, &str> = status
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k, v.trim()))
        .collect();
    let kib = |field: &str| -> Option<i64> {
        let number = fields.get(field)?.strip_suffix(" kB")?;
        number.trim().parse::<i64>().ok().map(|k| k * 1024)
    };
    for (field, name, help) in [
        (
            "VmRSS",
            "efb_process_resident_memory",
            "efbd's resident memory",
        ),
        (
            "VmSize",
            "efb_process_virtual_memory",
            "efbd's virtual memory",
        ),
    ] {
        if let Some(bytes) = kib(field) {
            out.bytes(name, help, bytes);
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        out.gauge(
            "efb_process_open_fds",
            "File descriptors efbd has open",
            fds.count() as i64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flows_exported_are_the_highest_priority_ones() {
        let mut config = Config::default();
        for (name, priority) in [("b", 5), ("a", 5), ("low", 1), ("top", 9)] {
            config.flows.insert(
                name.to_string(),
                Arc::new(efb_model::Flow {
                    name: name.to_string(),
                    priority,
                    direction: Default::default(),
                    links: Vec::new(),
                    matches: Default::default(),
                    action: efb_model::Action::Bypass,
                    description: None,
                }),
            );
        }
        assert_eq!(exported_flows(&config, 3), ["top", "a", "b"]);
        assert!(exported_flows(&config, 0).is_empty());
    }
}
