//! The metrics only an event can tell, counted where every such event passes: a commit
//! finishing in the owner ([`Instruments::commit_finished`]), a validation in the datastore
//! (its observer), a keep-alive back in liveness. Apart from the scrape (`metrics.rs`), so
//! that the owner counts without knowing how metrics are served.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use efb_datastore::{DatastoreError, ErrorKind, ValidationObserver};
use efb_metrics::prometheus_client::collector::Collector;
use efb_metrics::prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use efb_metrics::prometheus_client::metrics::MetricType;
use efb_metrics::prometheus_client::metrics::counter::{ConstCounter, Counter};
use efb_metrics::prometheus_client::metrics::histogram::Histogram;
use efb_metrics::prometheus_client::registry::{Registry, Unit};

use crate::chip::liveness::Observers;
use crate::record::events::Origin;

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
             rollbacks of a commit confirmed; boot: startup or the factory default loaded at \
             start-up) and result (ok, refused, failed); commit checks are not commits.",
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
    /// Reads of the keep-alive records: of the units' tallies only, of the pairs' cells.
    keepalive_reads: [Counter; 2],
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
            "Wall-clock time from a keep-alive round's packet-out leaving efbd to the read of \
             the chip's records that found the round taken in (one per round): the control \
             path liveness waits on, which the chip's timing of keep-alives leaves out",
            Unit::Seconds,
            keepalive_round_trip.clone(),
        );
        let keepalive_reads = [Counter::default(), Counter::default()];
        registry.register(
            "efb_keepalive_unit_reads",
            "Reads of the chip's keep-alive records that read only the units' newest rounds \
             and tallies: the tallies said every copy of the rounds judged came back",
            keepalive_reads[0].clone(),
        );
        registry.register(
            "efb_keepalive_pair_reads",
            "Reads of the chip's keep-alive records that read every pair's cells too: a \
             copy missing, a pair starting, or once a second (for the time on path)",
            keepalive_reads[1].clone(),
        );
        Instruments {
            registry: Arc::new(registry),
            commits,
            committed_changes,
            commit_duration,
            validation_duration,
            keepalive_round_trip,
            keepalive_reads,
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

    /// What the probing task tells: each round's round trip, each read of the records.
    pub fn liveness_observers(&self) -> Observers {
        let histogram = self.keepalive_round_trip.clone();
        let reads = self.keepalive_reads.clone();
        Observers {
            round_trip: Box::new(move |took| histogram.observe(took.as_secs_f64())),
            read: Box::new(move |of_pairs| {
                reads[usize::from(of_pairs)].inc();
            }),
        }
    }

    /// The metrics counted so far, for a scrape.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// When these instruments (efbd) started counting.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// What the datastore calls after each validation.
    pub fn validation_observer(&self) -> ValidationObserver {
        let histogram = self.validation_duration.clone();
        Box::new(move |took| histogram.observe(took.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_count_by_origin_and_result_from_zero() {
        let instruments = Instruments::new();
        instruments.commit_finished(Origin::Gnmi, None, Duration::from_millis(3));
        instruments.commit_finished(Origin::Boot, None, Duration::from_millis(9));
        let refused = DatastoreError::Refused("too long".into());
        instruments.commit_finished(Origin::Shell, Some(&refused), Duration::from_millis(1));
        let storage = DatastoreError::Storage("disk".into());
        instruments.commit_finished(Origin::Shell, Some(&storage), Duration::from_millis(1));
        (instruments.validation_observer())(Duration::from_millis(2));
        instruments.changes_committed(56);
        let liveness = instruments.liveness_observers();
        (liveness.read)(false);
        (liveness.read)(false);
        (liveness.read)(true);
        let text = efb_metrics::render(std::slice::from_ref(&instruments.registry), false).unwrap();
        for line in [
            "efb_committed_changes_total 56",
            "efb_commits_total{origin=\"gnmi\",result=\"ok\"} 1",
            "efb_commits_total{origin=\"shell\",result=\"refused\"} 1",
            "efb_commits_total{origin=\"shell\",result=\"failed\"} 1",
            "efb_commits_total{origin=\"confirm_timeout\",result=\"ok\"} 0",
            "efb_commits_total{origin=\"boot\",result=\"ok\"} 1",
            "efb_commit_duration_seconds_count 4",
            "efb_validation_duration_seconds_count 1",
            "efb_keepalive_unit_reads_total 2",
            "efb_keepalive_pair_reads_total 1",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }
}
