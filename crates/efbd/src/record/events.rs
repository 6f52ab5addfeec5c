//! The events whoever runs a balancer looks for: commits, rollbacks, confirm timeouts,
//! liveness and unit status changes, chip refusals and connection changes, links going
//! down and up. Each is one
//! tracing event (target `efbd::record::events`) with named fields and a stable `event` field, so
//! the JSON log and the journal carry the same fields; the last ones are also kept in
//! memory for `show log` ([`Events::recent`]). [`Events::emit`] does both, and is called at
//! the one place each thing happens.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use efb_chip::ChipError;
use serde::Serialize;
use tracing::{error, info, warn};

/// Logs the same fields at INFO when `good` (something back to normal is news), at WARN
/// otherwise.
macro_rules! info_or_warn {
    ($good:expr, $($fields:tt)+) => {
        if $good {
            info!($($fields)+)
        } else {
            warn!($($fields)+)
        }
    };
}

/// Events kept when the settings do not say (`log.recent_events`).
pub const DEFAULT_RECENT: usize = 1000;

/// Events a watcher may be behind before it misses some.
pub const WATCH_QUEUE: usize = 256;

/// The most `log.recent_events` may keep: each event is a few hundred bytes.
pub const MAX_RECENT: usize = 100_000;

/// Who asked for a change of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The management API (the shell, scripts).
    Shell,
    Gnmi,
    /// efbd itself, undoing a `commit confirmed` nobody confirmed.
    ConfirmTimeout,
    /// gNMI's cancel of a pending `commit confirmed`: rolled back at once.
    Cancel,
    /// efbd itself, loading startup (or the factory default) at start-up.
    Boot,
}

impl Origin {
    /// Every origin, in declaration order (metrics keep a series for each from the start).
    pub const ALL: [Origin; 5] = [
        Origin::Shell,
        Origin::Gnmi,
        Origin::ConfirmTimeout,
        Origin::Cancel,
        Origin::Boot,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Shell => "shell",
            Origin::Gnmi => "gnmi",
            Origin::ConfirmTimeout => "confirm-timeout",
            Origin::Cancel => "cancel",
            Origin::Boot => "boot",
        }
    }
}

/// A new running configuration, committed by a client.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Commit {
    pub id: u64,
    pub user: String,
    pub origin: Origin,
    pub comment: String,
    /// Configuration entries changed.
    pub changes: usize,
    /// The balancing-config-hash after the commit (crossed balancers must agree on it).
    pub hash: String,
}

/// A pending `commit confirmed` undone on request (gNMI's cancel): `id` is the commit
/// that restored the configuration before `undone`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rollback {
    pub id: u64,
    pub undone: u64,
    pub origin: Origin,
    pub changes: usize,
    pub hash: String,
}

/// A pending `commit confirmed` undone because nobody confirmed it in time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfirmTimeout {
    pub id: u64,
    pub undone: u64,
    pub changes: usize,
    pub hash: String,
}

/// Keep-alives found a pair's status changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Liveness {
    pub unit: String,
    pub pair: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// A unit started or stopped filtering (its traffic bypasses the filters).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnitStatus {
    pub unit: String,
    pub from: String,
    pub to: String,
    pub live_pairs: usize,
    pub reason: String,
}

/// The chip did not take a write: `during` a commit, a bypass mode or a liveness change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChipRefusal {
    pub during: String,
    /// The table that refused, when the chip named one.
    pub table: String,
    pub error: String,
}

/// An operator link went down or came back: its ports' oper-status on the chip.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkStatus {
    pub link: String,
    pub from: String,
    pub to: String,
    /// Which port is down (`p2 (LAN) down`), or why the link is up again.
    pub reason: String,
}

/// efbd's connection to the chip changed: disconnected, backup or primary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChipConnection {
    pub from: String,
    pub to: String,
    /// The driver's words: the chip's address, or why not connected. Not `message`:
    /// tracing's message is the event's own text.
    pub status: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Commit(Commit),
    Rollback(Rollback),
    ConfirmTimeout(ConfirmTimeout),
    Liveness(Liveness),
    UnitStatus(UnitStatus),
    ChipRefusal(ChipRefusal),
    ChipConnection(ChipConnection),
    LinkStatus(LinkStatus),
}

/// Every kind (the `event` field), with the word of `show log` that selects it too.
pub const KINDS: [(&str, &str); 8] = [
    ("commit", "commit"),
    ("rollback", "commit"),
    ("confirm-timeout", "commit"),
    ("liveness", "liveness"),
    ("unit-status", "liveness"),
    ("chip-refusal", "chip"),
    ("chip-connection", "chip"),
    ("link-status", "link"),
];

impl Event {
    /// The `event` field: stable, for log queries.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Commit(_) => "commit",
            Event::Rollback(_) => "rollback",
            Event::ConfirmTimeout(_) => "confirm-timeout",
            Event::Liveness(_) => "liveness",
            Event::UnitStatus(_) => "unit-status",
            Event::ChipRefusal(_) => "chip-refusal",
            Event::ChipConnection(_) => "chip-connection",
            Event::LinkStatus(_) => "link-status",
        }
    }

    /// The refusal of a chip write `during` something.
    pub fn chip_refusal(during: &str, e: &ChipError) -> Event {
        let table = match e {
            ChipError::TableFull { table, .. } => table.clone(),
            ChipError::Refused(refusals) => refusals
                .shown
                .first()
                .map(|r| r.table.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        Event::ChipRefusal(ChipRefusal {
            during: during.to_string(),
            table,
            error: e.to_string(),
        })
    }

    /// The event's fields by name, in the order they are declared (as the log has them).
    pub fn fields(&self) -> Vec<(String, String)> {
        let value = match self {
            Event::Commit(e) => serde_json::to_value(e),
            Event::Rollback(e) => serde_json::to_value(e),
            Event::ConfirmTimeout(e) => serde_json::to_value(e),
            Event::Liveness(e) => serde_json::to_value(e),
            Event::UnitStatus(e) => serde_json::to_value(e),
            Event::ChipRefusal(e) => serde_json::to_value(e),
            Event::ChipConnection(e) => serde_json::to_value(e),
            Event::LinkStatus(e) => serde_json::to_value(e),
        };
        let Ok(serde_json::Value::Object(map)) = value else {
            return Vec::new();
        };
        map.into_iter()
            .map(|(name, value)| {
                let text = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (name, text)
            })
            .collect()
    }

    /// The tracing event: the same fields, under the same names.
    fn log(&self) {
        match self {
            Event::Commit(e) => info!(
                event = "commit",
                id = e.id,
                user = e.user.as_str(),
                origin = e.origin.as_str(),
                comment = e.comment.as_str(),
                changes = e.changes,
                hash = e.hash.as_str(),
                "committed"
            ),
            Event::Rollback(e) => warn!(
                event = "rollback",
                id = e.id,
                undone = e.undone,
                origin = e.origin.as_str(),
                changes = e.changes,
                hash = e.hash.as_str(),
                "commit confirmed rolled back on request"
            ),
            Event::ConfirmTimeout(e) => warn!(
                event = "confirm-timeout",
                id = e.id,
                undone = e.undone,
                changes = e.changes,
                hash = e.hash.as_str(),
                "commit confirmed was not confirmed in time: previous configuration restored"
            ),
            Event::Liveness(e) => self.log_liveness(e),
            Event::UnitStatus(e) => warn!(
                event = "unit-status",
                unit = e.unit.as_str(),
                from = e.from.as_str(),
                to = e.to.as_str(),
                live_pairs = e.live_pairs,
                reason = e.reason.as_str(),
                "unit status changed"
            ),
            Event::ChipRefusal(e) => error!(
                event = "chip-refusal",
                during = e.during.as_str(),
                table = e.table.as_str(),
                error = e.error.as_str(),
                "the chip refused a write"
            ),
            Event::ChipConnection(e) => self.log_connection(e),
            Event::LinkStatus(e) => self.log_link(e),
        }
    }

    /// A link back up is news; one going down is a warning: it carries nothing.
    fn log_link(&self, e: &LinkStatus) {
        info_or_warn!(
            e.to == "up",
            event = "link-status",
            link = e.link.as_str(),
            from = e.from.as_str(),
            to = e.to.as_str(),
            reason = e.reason.as_str(),
            "link status changed"
        );
    }

    /// A pair back up is news; one going down is a warning.
    fn log_liveness(&self, e: &Liveness) {
        info_or_warn!(
            e.to == "up",
            event = "liveness",
            unit = e.unit.as_str(),
            pair = e.pair.as_str(),
            from = e.from.as_str(),
            to = e.to.as_str(),
            reason = e.reason.as_str(),
            "pair liveness changed"
        );
    }

    /// The chip primary again is news; anything else a warning.
    fn log_connection(&self, e: &ChipConnection) {
        info_or_warn!(
            e.to == "primary",
            event = "chip-connection",
            from = e.from.as_str(),
            to = e.to.as_str(),
            status = e.status.as_str(),
            "chip connection changed"
        );
    }
}

/// An event and when it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub time: SystemTime,
    pub event: Event,
}

/// Logs events and keeps the last ones; clones share them.
#[derive(Clone, Debug)]
pub struct Events {
    ring: Arc<Mutex<VecDeque<Recorded>>>,
    capacity: usize,
    /// Every event as it happens, for the shells watching (a confirm timeout is told to
    /// every open shell). Nobody listening costs nothing.
    live: tokio::sync::broadcast::Sender<Recorded>,
}

impl Events {
    /// Keeps the last `capacity` events (at least one).
    pub fn new(capacity: usize) -> Events {
        let capacity = capacity.clamp(1, MAX_RECENT);
        Events {
            ring: Arc::new(Mutex::new(VecDeque::with_capacity(capacity.min(1024)))),
            capacity,
            live: tokio::sync::broadcast::channel(WATCH_QUEUE).0,
        }
    }

    /// Events from now on. A watcher more than [`WATCH_QUEUE`] events behind misses some
    /// (it is told how many).
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<Recorded> {
        self.live.subscribe()
    }

    /// Logs `event` and keeps it, dropping the oldest past the capacity.
    pub fn emit(&self, event: Event) {
        event.log();
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        let recorded = Recorded {
            time: SystemTime::now(),
            event,
        };
        // No watcher is no error.
        let _ = self.live.send(recorded.clone());
        ring.push_back(recorded);
    }

    /// The newest `max` events of `kinds` (none: every kind), oldest first.
    pub fn recent(&self, max: usize, kinds: &[&str]) -> Vec<Recorded> {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<Recorded> = ring
            .iter()
            .rev()
            .filter(|r| kinds.is_empty() || kinds.contains(&r.event.kind()))
            .take(max)
            .cloned()
            .collect();
        found.reverse();
        found
    }
}

/// A word that is neither an event kind nor a group of kinds.
#[derive(Debug, thiserror::Error)]
#[error("no event kind {word:?}; kinds are: {}", accepted.join(", "))]
pub struct UnknownKind {
    /// The word, cut to what a message shows.
    pub word: String,
    /// Groups and kinds, each once, in the order `show log` lists them.
    pub accepted: Vec<&'static str>,
}

/// The kinds that `words` select: each a kind (`liveness`) or the word of a group of kinds
/// (`commit`: commits, rollbacks and confirm timeouts). An unknown word is refused with the
/// words accepted.
pub fn kinds_of(words: &[String]) -> Result<Vec<&'static str>, UnknownKind> {
    let mut kinds = Vec::new();
    for word in words {
        let selected: Vec<&'static str> = KINDS
            .iter()
            .filter(|(kind, group)| kind == word || group == word)
            .map(|(kind, _)| *kind)
            .collect();
        if selected.is_empty() {
            let mut accepted: Vec<&'static str> = Vec::new();
            for word in KINDS.iter().flat_map(|(kind, group)| [*group, *kind]) {
                if !accepted.contains(&word) {
                    accepted.push(word);
                }
            }
            return Err(UnknownKind {
                word: efb_yang::text::excerpt(word).to_string(),
                accepted,
            });
        }
        kinds.extend(selected);
    }
    Ok(kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn liveness(pair: &str, to: &str) -> Event {
        Event::Liveness(Liveness {
            unit: "ef1".into(),
            pair: pair.into(),
            from: "up".into(),
            to: to.into(),
            reason: "4 keep-alives lost".into(),
        })
    }

    fn commit(id: u64) -> Event {
        Event::Commit(Commit {
            id,
            user: "ada".into(),
            origin: Origin::Shell,
            comment: String::new(),
            changes: 3,
            hash: "abc".into(),
        })
    }

    #[test]
    fn the_ring_keeps_the_newest_and_filters_by_kind() {
        let events = Events::new(3);
        for id in 1..=4 {
            events.emit(commit(id));
        }
        events.emit(liveness("p1", "down"));
        let all = events.recent(usize::MAX, &[]);
        let kinds: Vec<&str> = all.iter().map(|r| r.event.kind()).collect();
        assert_eq!(
            kinds,
            ["commit", "commit", "liveness"],
            "the oldest dropped"
        );
        assert_eq!(all[0].event, commit(3));
        let commits = events.recent(1, &["commit"]);
        assert_eq!(commits.len(), 1);
        assert_eq!(commits[0].event, commit(4), "the newest one");
    }

    #[test]
    fn fields_are_named_as_in_the_log() {
        let fields = commit(7).fields();
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["id", "user", "origin", "comment", "changes", "hash"]
        );
        assert_eq!(fields[0].1, "7");
        assert_eq!(fields[2].1, "shell");
    }

    #[test]
    fn show_log_words_select_kinds_or_groups() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kinds_of(&words(&["commit"])).unwrap(),
            ["commit", "rollback", "confirm-timeout"]
        );
        assert_eq!(
            kinds_of(&words(&["liveness", "chip-refusal"])).unwrap(),
            ["liveness", "unit-status", "chip-refusal"]
        );
        let err = kinds_of(&words(&["commits"])).unwrap_err();
        assert_eq!(err.word, "commits");
        let err = err.to_string();
        assert!(
            err.contains("\"commits\"") && err.contains("commit, rollback"),
            "{err}"
        );
    }
}
