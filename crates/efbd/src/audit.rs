//! The audit in the datastore directory, one JSON record a line, in two logs of their own:
//! changes (`audit.log`: accepted changes of configuration and state, an admin's logout,
//! a role that changed) and accesses (`access.log`: sessions opened and closed by their
//! clients, and every refusal, for the caller's role or for what was asked). Anyone with
//! an account can make accesses by the thousand; kept apart, they never push a change out.
//! Accesses are kept in full up to `per_minute` a caller; past that they are counted and
//! summarised in one record when the minute is over.
//!
//! Each log is bounded: when it reaches half of `audit.max_kib` it becomes `NAME.1`
//! (replacing the previous one) and a new file starts, so both together stay under the
//! limit and the newest half is always there. `show system audit` reads the last records
//! of all four files, in time order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use efb_northbound::audit::{Kind, Record, Sink, now_ms};
use tracing::error;

pub const FILE: &str = "audit.log";
pub const OLD_FILE: &str = "audit.log.1";
pub const ACCESS_FILE: &str = "access.log";
pub const OLD_ACCESS_FILE: &str = "access.log.1";

/// The window over which a caller's accesses are counted.
const WINDOW: Duration = Duration::from_secs(60);

/// Callers whose accesses are counted at most (a flood of names makes room by summarising
/// the oldest).
const MAX_CALLERS: usize = 1024;

pub struct AuditLog {
    changes: Rotating,
    accesses: Rotating,
    /// Accesses kept in full per caller and minute.
    per_minute: u32,
    counted: Mutex<HashMap<String, Window>>,
}

/// One caller's accesses in the current minute.
struct Window {
    started_ms: u64,
    count: u32,
    /// Not kept: summarised when the window ends.
    dropped: u32,
    /// The last one dropped, for the summary's role and origin.
    last: Option<Record>,
}

impl AuditLog {
    /// Opens (or starts) the logs in `dir`, `max_kib` each, keeping `per_minute` accesses
    /// of a caller in full.
    pub fn open(dir: &Path, max_kib: u64, per_minute: u32) -> io::Result<AuditLog> {
        Ok(AuditLog {
            changes: Rotating::open(dir, FILE, OLD_FILE, max_kib)?,
            accesses: Rotating::open(dir, ACCESS_FILE, OLD_ACCESS_FILE, max_kib)?,
            per_minute,
            counted: Mutex::new(HashMap::new()),
        })
    }

    /// The last `count` records of both logs, oldest first.
    pub fn last(&self, count: usize) -> Vec<Record> {
        self.flush_summaries(now_ms());
        let mut records = self.changes.last(count);
        records.extend(self.accesses.last(count));
        // Stable: records of one millisecond keep each log's order.
        records.sort_by_key(|r| r.time_ms);
        let skip = records.len().saturating_sub(count);
        records.drain(..skip);
        records
    }

    /// Keeps an access unless its caller made `per_minute` already this minute.
    fn access(&self, record: &Record) {
        let now = record.time_ms;
        self.flush_summaries(now);
        let keep = {
            let Ok(mut counted) = self.counted.lock() else {
                return;
            };
            if counted.len() >= MAX_CALLERS && !counted.contains_key(&record.user) {
                let summaries: Vec<Record> =
                    counted.drain().filter_map(|(_, w)| summary(w)).collect();
                self.write_all(&summaries);
            }
            let window = counted.entry(record.user.clone()).or_insert(Window {
                started_ms: now,
                count: 0,
                dropped: 0,
                last: None,
            });
            window.count += 1;
            if window.count > self.per_minute {
                window.dropped += 1;
                window.last = Some(record.clone());
                false
            } else {
                true
            }
        };
        if keep {
            self.accesses.write(record);
        }
    }

    /// Ends the windows of a minute ago: a caller's dropped accesses become one record.
    fn flush_summaries(&self, now_ms: u64) {
        let ended: Vec<Record> = {
            let Ok(mut counted) = self.counted.lock() else {
                return;
            };
            let over: Vec<String> = counted
                .iter()
                .filter(|(_, w)| now_ms >= w.started_ms + WINDOW.as_millis() as u64)
                .map(|(user, _)| user.clone())
                .collect();
            over.iter()
                .filter_map(|user| counted.remove(user))
                .filter_map(summary)
                .collect()
        };
        self.write_all(&ended);
    }

    fn write_all(&self, records: &[Record]) {
        for record in records {
            self.accesses.write(record);
        }
    }
}

/// The record that stands for a window's dropped accesses, if any were.
fn summary(window: Window) -> Option<Record> {
    let last = window.last?;
    Some(Record {
        time_ms: last.time_ms,
        what: format!(
            "{} more accesses of {} within a minute, not kept one by one (the last: {})",
            window.dropped, last.user, last.what
        ),
        result: String::new(),
        ..last
    })
}

impl Sink for AuditLog {
    /// Files by kind; the audit made every refusal an access before it came here.
    fn record(&self, record: &Record) {
        match record.kind {
            Kind::Change => self.changes.write(record),
            Kind::Access => self.access(record),
        }
    }
}

/// One log and its older half.
struct Rotating {
    path: PathBuf,
    old: PathBuf,
    /// Bytes one file holds at most before it becomes the old one.
    half: u64,
    file: Mutex<Open>,
}

struct Open {
    file: Option<File>,
    size: u64,
}

impl Rotating {
    fn open(dir: &Path, name: &str, old: &str, max_kib: u64) -> io::Result<Rotating> {
        let path = dir.join(name);
        let file = append(&path)?;
        let size = file.metadata()?.len();
        Ok(Rotating {
            old: dir.join(old),
            path,
            half: max_kib.saturating_mul(1024) / 2,
            file: Mutex::new(Open {
                file: Some(file),
                size,
            }),
        })
    }

    /// The last `count` records, oldest first.
    fn last(&self, count: usize) -> Vec<Record> {
        // Holding the lock: a rotation must not happen between the two reads.
        let _open = self.file.lock();
        let mut records: Vec<Record> = [&self.old, &self.path]
            .into_iter()
            .filter_map(|p| efb_datastore::files::read_trusted(p).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect::<Vec<Record>>()
            })
            .collect();
        let skip = records.len().saturating_sub(count);
        records.drain(..skip);
        records
    }

    fn write(&self, record: &Record) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        if let Err(e) = self.append_line(&line) {
            error!(file = %self.path.display(), error = %e, "cannot write the audit log");
        }
    }

    fn append_line(&self, line: &str) -> io::Result<()> {
        let mut open = self
            .file
            .lock()
            .map_err(|_| io::Error::other("the audit log's lock is poisoned"))?;
        let len = line.len() as u64;
        if open.size > 0 && open.size + len > self.half {
            open.file = None;
            std::fs::rename(&self.path, &self.old)?;
            open.file = Some(append(&self.path)?);
            open.size = 0;
        }
        let file = match &mut open.file {
            Some(file) => file,
            None => open.file.insert(append(&self.path)?),
        };
        file.write_all(line.as_bytes())?;
        open.size += len;
        Ok(())
    }
}

/// The file opened for appending, never through a link planted in its place; created
/// readable by its owner and group only (it names accounts and what they did).
fn append(path: &Path) -> io::Result<File> {
    Ok(efb_datastore::files::open_append(path, 0o640)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(n: usize, kind: Kind) -> Record {
        Record {
            time_ms: n as u64,
            user: "ada".into(),
            role: None,
            from: "unix socket, uid 1001, pid 1".into(),
            what: format!("commit {n}"),
            accepted: n.is_multiple_of(2),
            result: "x".repeat(200),
            kind,
        }
    }

    #[test]
    fn the_log_stays_bounded_and_keeps_the_newest_records() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(dir.path(), 16, 20).unwrap();
        for n in 0..1000 {
            log.record(&record(n, Kind::Change));
        }
        let size = |name| std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(size(FILE) + size(OLD_FILE) <= 16 * 1024);
        let last = log.last(5);
        assert_eq!(
            last.iter().map(|r| r.time_ms).collect::<Vec<_>>(),
            [995, 996, 997, 998, 999]
        );
        // Reopened (efbd restarted): the records are still there, and appended to.
        drop(log);
        let log = AuditLog::open(dir.path(), 16, 20).unwrap();
        log.record(&record(1000, Kind::Change));
        assert_eq!(log.last(2)[1].time_ms, 1000);
        assert_eq!(log.last(2)[0].time_ms, 999);
    }

    #[test]
    fn a_link_planted_as_a_log_is_refused_and_what_it_names_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "root's\n").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(ACCESS_FILE)).unwrap();
        let err = AuditLog::open(dir.path(), 16, 20).err().unwrap();
        assert!(err.to_string().contains("link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's\n");
    }

    #[test]
    fn a_change_refused_through_the_audit_goes_to_the_access_log_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(AuditLog::open(dir.path(), 16, 20).unwrap());
        let audit = efb_northbound::audit::Audit::new(log.clone());
        audit.record(Record {
            time_ms: now_ms(),
            accepted: false,
            what: "call set-bypass-ecofilter-unit {\"mode\":\"sideways\"}".into(),
            ..record(1, Kind::Change)
        });
        let text = |name| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(text(FILE), "");
        assert!(text(ACCESS_FILE).contains("sideways"));
    }

    #[test]
    fn a_flood_of_accesses_neither_pushes_changes_out_nor_fills_the_access_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(dir.path(), 16, 20).unwrap();
        let now = now_ms() as usize;
        log.record(&Record {
            what: "commit 0".into(),
            ..record(now, Kind::Change)
        });
        let refused = |n: usize| Record {
            user: "mallory".into(),
            accepted: false,
            what: format!("commit {n}"),
            ..record(now + n, Kind::Access)
        };
        for n in 1..6001 {
            log.record(&refused(n));
        }
        let records = log.last(10_000);
        assert_eq!(records[0].what, "commit 0", "the change is still there");
        let kept = records.iter().filter(|r| r.user == "mallory").count();
        assert_eq!(kept, 20, "one minute's worth in full, the rest counted");
        // A minute later, the count comes out as one record.
        log.record(&refused(60_001));
        assert!(now_ms() < (now + 60_000) as u64, "the test took a minute");
        let records = log.last(10_000);
        let summary = records
            .iter()
            .find(|r| r.what.starts_with("5980 more accesses of mallory"))
            .expect("a summary of the dropped ones");
        assert!(
            summary.what.contains("(the last: commit 6000)"),
            "{}",
            summary.what
        );
    }
}
