//! efbd's Prometheus metrics, served by efb-metrics at `GET /metrics`.
//!
//! Counters that only an event can tell are kept where every such event passes: a commit
//! finishing in the owner ([`Instruments::commit_finished`]), a validation in the datastore
//! (its observer). Everything else is read at scrape time from what `show` reads (the
//! owner's state, the chip driver, the gNMI server's counts), so no value can drift from
//! what the shell says.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use efb_datastore::{DatastoreError, ErrorKind, ValidationObserver};
use efb_gnmi::Activity;
use efb_liveness::{PairState, PairStatus};
use efb_metrics::prometheus_client::collector::Collector;
use efb_metrics::prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use efb_metrics::prometheus_client::metrics::MetricType;
use efb_metrics::prometheus_client::metrics::counter::{ConstCounter, Counter};
use efb_metrics::prometheus_client::metrics::histogram::Histogram;
use efb_metrics::prometheus_client::registry::{Registry, Unit};
use efb_metrics::{Labels, Scraped, Values};
use efb_model::Config;
use efb_p4::Driver;
use tokio::net::TcpListener;
use tracing::warn;

use crate::events::Origin;
use crate::liveness;
use crate::owner::{Owner, Status};
use crate::settings::Metrics as Settings;
use crate::state::Known;

/// An origin as a label value: Prometheus's convention is snake_case (`confirm_timeout`),
/// the log's kebab-case (`confirm-timeout`).
fn label(origin: Origin) -> &'static str {
    match origin {
        Origin::ConfirmTimeout => "confirm_timeout",
        other => other.as_str(),
    }
}

const RESULTS: [&str; 3] = ["ok", "refused", "failed"];

/// The index in [`RESULTS`]. Refused: the configuration or the request (invalid,
/// conflicting, too big for the chip); failed: efbd could not do it (storage, chip
/// unreachable).
fn result_of(error: Option<&DatastoreError>) -> usize {
    match error.map(DatastoreError::kind) {
        None => 0,
        Some(ErrorKind::Storage | ErrorKind::Locked | ErrorKind::ChipUnreachable) => 2,
        Some(_) => 1,
    }
}

/// Commits by origin and result, every series there from the start (a rate over a
/// series that appears later misses its first increase), written in a fixed order.
#[derive(Debug, Default)]
struct Commits([[AtomicU64; RESULTS.len()]; Origin::ALL.len()]);

impl Collector for Commits {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "efb_commits",
            "Commits by origin (shell: the management API; gnmi; confirm_timeout and cancel: \
             rollbacks of a commit confirmed) and result (ok, refused, failed); commit checks \
             are not commits.",
            None,
            MetricType::Counter,
        )?;
        for (origin, counts) in Origin::ALL.iter().zip(&self.0) {
            for (result, count) in RESULTS.iter().zip(counts) {
                let labels = [("origin", label(*origin)), ("result", *result)];
                ConstCounter::new(count.load(Ordering::Relaxed))
                    .encode(metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Seconds, from a quick change of a few entries to a 100 000-flow configuration.
const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Keep-alive round trips: from 50 us (the emulated filter's delay) to a quarter second.
const ROUND_TRIP_BUCKETS: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

/// The metrics kept as things happen; clones share them.
#[derive(Clone, Debug)]
pub struct Instruments {
    registry: Arc<Registry>,
    commits: Arc<Commits>,
    committed_changes: Counter,
    commit_duration: Histogram,
    validation_duration: Histogram,
    keepalive_round_trip: Histogram,
    started: SystemTime,
}

impl Default for Instruments {
    fn default() -> Instruments {
        Instruments::new()
    }
}

impl Instruments {
    pub fn new() -> Instruments {
        let commits = Arc::new(Commits::default());
        let commit_duration = Histogram::new(DURATION_BUCKETS);
        let validation_duration = Histogram::new(DURATION_BUCKETS);
        let keepalive_round_trip = Histogram::new(ROUND_TRIP_BUCKETS);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(commits.clone()));
        let committed_changes = Counter::default();
        registry.register(
            "efb_committed_changes",
            "Changes committed, counted as the shell counts them: the set / delete lines of \
             show | compare (commits, and the rollbacks of unconfirmed commits)",
            committed_changes.clone(),
        );
        registry.register_with_unit(
            "efb_commit_duration",
            "Time a commit took in the configuration owner, validation and chip programming \
             included, whatever its result",
            Unit::Seconds,
            commit_duration.clone(),
        );
        registry.register_with_unit(
            "efb_validation_duration",
            "Time a validation of a candidate took (commit, commit check, JSON load override)",
            Unit::Seconds,
            validation_duration.clone(),
        );
        registry.register_with_unit(
            "efb_keepalive_round_trip",
            "Wall-clock time from a keep-alive's packet-out leaving efbd to its packet-in \
             handled by liveness (both keep-alives of every returned round); a liveness interval \
             must be well above it",
            Unit::Seconds,
            keepalive_round_trip.clone(),
        );
        Instruments {
            registry: Arc::new(registry),
            commits,
            committed_changes,
            commit_duration,
            validation_duration,
            keepalive_round_trip,
            started: SystemTime::now(),
        }
    }

    /// A commit from `origin` finished after `took`, with `error` if it did not commit.
    pub fn commit_finished(&self, origin: Origin, error: Option<&DatastoreError>, took: Duration) {
        // `Origin::ALL` lists the origins in their declaration order.
        self.commits.0[origin as usize][result_of(error)].fetch_add(1, Ordering::Relaxed);
        self.commit_duration.observe(took.as_secs_f64());
    }

    /// A new running configuration came with `changes` changes.
    pub fn changes_committed(&self, changes: usize) {
        self.committed_changes.inc_by(changes as u64);
    }

    /// What liveness calls with each returned keep-alive's round trip.
    pub fn round_trip_observer(&self) -> impl Fn(Duration) + Send + 'static {
        let histogram = self.keepalive_round_trip.clone();
        move |took| histogram.observe(took.as_secs_f64())
    }

    /// What the datastore calls after each validation.
    pub fn validation_observer(&self) -> ValidationObserver {
        let histogram = self.validation_duration.clone();
        Box::new(move |took| histogram.observe(took.as_secs_f64()))
    }
}

/// Listens where the settings say, if metrics are on; an address in use stops efbd with
/// the setting named.
pub async fn bind(settings: &Settings) -> anyhow::Result<Option<TcpListener>> {
    if !settings.enabled {
        return Ok(None);
    }
    let hint = "give another address (metrics.listen, --metrics-listen) or turn metrics \
                off (metrics.enabled = false, --no-metrics)";
    Ok(Some(
        efb_metrics::bind(settings.listen, "metrics.listen", hint).await?,
    ))
}

/// The line efbd prints about metrics.
pub fn banner(listener: Option<&TcpListener>) -> String {
    match listener.map(TcpListener::local_addr) {
        Some(Ok(addr)) => format!("efbd: metrics on http://{addr}{}", efb_metrics::PATH),
        Some(Err(_)) | None => "efbd: metrics off".to_string(),
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
    /// Serves the metrics on `listener` until `shutdown` completes.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        let scrape = move || {
            let sources = self.clone();
            async move { sources.scrape().await }
        };
        efb_metrics::serve(listener, scrape, shutdown).await;
    }

    /// The instruments and everything read now.
    pub async fn scrape(&self) -> Scraped {
        let mut scraped = vec![self.instruments.registry.clone()];
        // The owner gone, efbd is stopping: what it held does not matter any more.
        let Ok((known, status)) = self.owner.call(|s| (s.known(), s.status())).await else {
            return scraped;
        };
        let sources = self.clone();
        // The chip's counters are read with blocking calls.
        match tokio::task::spawn_blocking(move || sources.read(&known, &status)).await {
            Ok(registry) => scraped.push(Arc::new(registry)),
            Err(e) => warn!(%e, "metrics: reading the state failed"),
        }
        scraped
    }

    fn read(&self, known: &Known, status: &Status) -> Registry {
        let mut out = Values::default();
        daemon(&mut out, status, self.instruments.started);
        gnmi(&mut out, self.gnmi.as_ref());
        units(&mut out, known);
        if let Some(driver) = &known.driver {
            chip(&mut out, driver);
            pairs(&mut out, &known.pairs);
            flows(&mut out, driver, &known.running.config, self.max_flows);
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

fn units(out: &mut Values, known: &Known) {
    let statuses = liveness::unit_statuses(&known.running.config, &known.live);
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
            .map(|name| (unit(name), known.live.mode(name).as_str())),
    );
    out.gauges(
        "efb_unit_active_pairs",
        "Pairs of the unit that take traffic",
        statuses
            .iter()
            .map(|(name, (_, live))| (unit(name), *live as i64)),
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
    fn commits_count_by_origin_and_result_from_zero() {
        let instruments = Instruments::new();
        instruments.commit_finished(Origin::Gnmi, None, Duration::from_millis(3));
        let refused = DatastoreError::Refused("too long".into());
        instruments.commit_finished(Origin::Shell, Some(&refused), Duration::from_millis(1));
        let storage = DatastoreError::Storage("disk".into());
        instruments.commit_finished(Origin::Shell, Some(&storage), Duration::from_millis(1));
        (instruments.validation_observer())(Duration::from_millis(2));
        instruments.changes_committed(56);
        let text = efb_metrics::render(std::slice::from_ref(&instruments.registry), false).unwrap();
        for line in [
            "efb_committed_changes_total 56",
            "efb_commits_total{origin=\"gnmi\",result=\"ok\"} 1",
            "efb_commits_total{origin=\"shell\",result=\"refused\"} 1",
            "efb_commits_total{origin=\"shell\",result=\"failed\"} 1",
            "efb_commits_total{origin=\"confirm_timeout\",result=\"ok\"} 0",
            "efb_commit_duration_seconds_count 3",
            "efb_validation_duration_seconds_count 1",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn the_flows_exported_are_the_highest_priority_ones() {
        let mut config = Config::default();
        for (name, priority) in [("b", 5), ("a", 5), ("low", 1), ("top", 9)] {
            config.flows.insert(
                name.to_string(),
                Arc::new(efb_model::Flow {
                    name: name.to_string(),
                    priority,
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
