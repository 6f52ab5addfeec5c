//! The audit in the datastore directory, one JSON record a line, in two logs of their own:
//! changes (`audit.log`: accepted changes of configuration and state, an admin's logout,
//! a role that changed) and accesses (`access.log`: sessions opened and closed by their
//! clients, and every refusal, for the caller's role or for what was asked). Anyone with
//! an account can make accesses by the thousand; kept apart, they never push a change out.
//! Accesses are kept in full up to `per_minute` a caller; past that they are counted and
//! summarised in one record when the minute is over, or when efbd stops.
//!
//! Each log is a set of files of `audit.max_kib` at most: past it the file becomes
//! `NAME.1`, `NAME.1` becomes `NAME.2` and so on, `audit.keep_files` files in all. When
//! the oldest goes, efbd's log warns and the new file starts with a record of what was
//! removed (how many records, from when to when): nothing leaves the audit unsaid.
//! `show system audit` reads the last records across the files of both logs, in time
//! order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use efb_datastore::files;
use efb_northbound::audit::{Kind, Record, Sink, now_ms};
use tracing::{error, warn};

use crate::settings;

pub const FILE: &str = "audit.log";
pub const ACCESS_FILE: &str = "access.log";

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
    /// Opens (or starts) the logs in `dir`, with the files and the accesses per minute of
    /// `settings`.
    pub fn open(dir: &Path, settings: &settings::Audit) -> io::Result<AuditLog> {
        let (max_kib, keep) = (settings.max_kib, settings.keep_files);
        Ok(AuditLog {
            changes: Rotating::open(dir, FILE, Kind::Change, max_kib, keep)?,
            accesses: Rotating::open(dir, ACCESS_FILE, Kind::Access, max_kib, keep)?,
            per_minute: settings.access_per_minute,
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

    /// Writes the summary of every caller's window, ended or not: efbd stops, and what
    /// was counted must not stop with it.
    pub fn flush(&self) {
        self.flush_summaries(u64::MAX);
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

    /// Ends the windows that started a minute before `now_ms`: a caller's dropped accesses
    /// become one record.
    fn flush_summaries(&self, now_ms: u64) {
        let ended: Vec<Record> = {
            let Ok(mut counted) = self.counted.lock() else {
                return;
            };
            let over: Vec<String> = counted
                .iter()
                .filter(|(_, w)| now_ms >= w.started_ms.saturating_add(WINDOW.as_millis() as u64))
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

/// The last handle gone (efbd stops, or fails on its way): the counts are written.
impl Drop for AuditLog {
    fn drop(&mut self) {
        self.flush();
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

/// One log: the file written (NAME) and the older ones (NAME.1, the newest of them, ...).
struct Rotating {
    dir: PathBuf,
    name: &'static str,
    /// The log's kind, for the record of a removed file.
    kind: Kind,
    /// Bytes one file holds at most before it moves up.
    max_bytes: u64,
    /// Files in all, NAME included.
    keep: u32,
    open: Mutex<Open>,
}

/// The file written, while it is open, and its size.
struct Open {
    file: Option<File>,
    size: u64,
}

/// What the oldest file held when a rotation removed it.
struct Removed {
    file: String,
    /// Its records and the times of the first and the last, or why it could not be read.
    held: Result<Held, String>,
}

struct Held {
    records: usize,
    first_ms: Option<u64>,
    last_ms: Option<u64>,
}

impl Rotating {
    /// Opens the log, which must be efbd's (a file others wrote in or may write is no
    /// record); the older files, read back by `show system audit`, are judged now too, so
    /// that a planted one stops efbd at start instead of being skipped at every look.
    fn open(
        dir: &Path,
        name: &'static str,
        kind: Kind,
        max_kib: u64,
        keep: u32,
    ) -> io::Result<Rotating> {
        let file = append(&dir.join(name))?;
        let size = file.metadata()?.len();
        let rotating = Rotating {
            dir: dir.to_path_buf(),
            name,
            kind,
            max_bytes: max_kib.saturating_mul(1024),
            // One file would leave nothing but the record of its own removal.
            keep: keep.max(2),
            open: Mutex::new(Open {
                file: Some(file),
                size,
            }),
        };
        for n in 1..rotating.keep {
            files::check_trusted(&rotating.path(n))?;
        }
        Ok(rotating)
    }

    /// The file `n` rotations old: NAME, NAME.1, ...
    fn path(&self, n: u32) -> PathBuf {
        match n {
            0 => self.dir.join(self.name),
            n => self.dir.join(format!("{}.{n}", self.name)),
        }
    }

    /// The last `count` records, oldest first, read from the newest file back as far as
    /// needed.
    fn last(&self, count: usize) -> Vec<Record> {
        // Holding the lock: a rotation must not move the files between two reads.
        let _open = self.open.lock();
        let mut newest_first: Vec<Record> = Vec::new();
        for n in 0..self.keep {
            let wanted = count.saturating_sub(newest_first.len());
            if wanted == 0 {
                break;
            }
            // A file missing (none rotated yet, or removed by hand) leaves the others.
            let Some(text) = read_back(&self.path(n)) else {
                continue;
            };
            let records = text
                .lines()
                .rev()
                .filter_map(|l| serde_json::from_str(l).ok());
            newest_first.extend(records.take(wanted));
        }
        newest_first.reverse();
        newest_first
    }

    fn write(&self, record: &Record) {
        let Ok(line) = json_line(record) else {
            return;
        };
        if let Err(e) = self.append_line(&line) {
            error!(file = %self.path(0).display(), error = %e, "cannot write the audit log");
        }
    }

    fn append_line(&self, line: &str) -> io::Result<()> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| io::Error::other("the audit log's lock is poisoned"))?;
        if open.size > 0 && open.size + line.len() as u64 > self.max_bytes {
            self.rotate(&mut open);
        }
        open.append(&self.path(0), line)
    }

    /// Moves every file one up and starts a new one. Past `keep` files the oldest is
    /// removed, and said so: in efbd's log, and first in the new file. A rotation that
    /// fails leaves the file written as it is, appended to: a record is never dropped for
    /// want of a rename.
    fn rotate(&self, open: &mut Open) {
        // Closed before its name moves.
        open.file = None;
        let removed = self.remove_oldest();
        match self.move_up() {
            Ok(()) => open.size = 0,
            Err(e) => {
                error!(file = %self.path(0).display(), error = %e, "cannot rotate the audit log: it grows past audit.max_kib")
            }
        }
        let Some(removed) = removed else {
            return;
        };
        let record = self.removal_record(&removed);
        warn!(log = self.name, "{}", record.what);
        let written = json_line(&record).and_then(|line| open.append(&self.path(0), &line));
        if let Err(e) = written {
            error!(file = %self.path(0).display(), error = %e, "cannot write the audit log");
        }
    }

    /// The oldest file kept, read for what it held, then removed; none if there is none
    /// yet.
    fn remove_oldest(&self) -> Option<Removed> {
        let oldest = self.path(self.keep - 1);
        std::fs::symlink_metadata(&oldest).ok()?;
        let held = efb_datastore::files::read_trusted(&oldest)
            .map(|text| held(&text))
            .map_err(|e| e.to_string());
        // Not removed, it is still replaced by the next file's rename.
        if let Err(e) = std::fs::remove_file(&oldest) {
            error!(file = %oldest.display(), error = %e, "cannot remove the oldest audit file");
        }
        Some(Removed {
            file: oldest.display().to_string(),
            held,
        })
    }

    /// NAME.k becomes NAME.k+1, from the oldest kept down to NAME itself.
    fn move_up(&self) -> io::Result<()> {
        for n in (0..self.keep - 1).rev() {
            match std::fs::rename(self.path(n), self.path(n + 1)) {
                // A file missing (not rotated that often yet) leaves a gap that closes.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                moved => moved?,
            }
        }
        Ok(())
    }

    /// The record that opens the new file: what was removed, and why.
    fn removal_record(&self, removed: &Removed) -> Record {
        let why = format!(
            "to keep audit.keep_files = {} files of audit.max_kib = {} KiB",
            self.keep,
            self.max_bytes / 1024
        );
        let what = match &removed.held {
            Ok(held) => format!(
                "{} removed {why}: {} records, from {} to {}",
                removed.file,
                held.records,
                time(held.first_ms),
                time(held.last_ms)
            ),
            Err(e) => format!("{} removed {why}; it could not be read: {e}", removed.file),
        };
        Record {
            time_ms: now_ms(),
            user: "efbd".into(),
            role: None,
            from: "efbd (audit rotation)".into(),
            what,
            accepted: true,
            result: String::new(),
            kind: self.kind,
        }
    }
}

impl Open {
    /// Appends `line` to the file at `path`, opened (or made) if it is not.
    fn append(&mut self, path: &Path, line: &str) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(append(path)?),
        };
        file.write_all(line.as_bytes())?;
        self.size += line.len() as u64;
        Ok(())
    }
}

/// How many records `text` holds (a line each) and the times of the first and the last.
fn held(text: &str) -> Held {
    let time_of = |line: &str| serde_json::from_str::<Record>(line).ok().map(|r| r.time_ms);
    Held {
        records: text.lines().filter(|l| !l.trim().is_empty()).count(),
        first_ms: text.lines().find_map(time_of),
        last_ms: text.lines().rev().find_map(time_of),
    }
}

/// A record's time as the audit shows it; "?" when the file had none to read.
fn time(ms: Option<u64>) -> String {
    ms.map_or("?".into(), |ms| {
        let at = UNIX_EPOCH + Duration::from_millis(ms);
        humantime::format_rfc3339_seconds(at).to_string()
    })
}

fn json_line(record: &Record) -> io::Result<String> {
    let mut line = serde_json::to_string(record)?;
    line.push('\n');
    Ok(line)
}

/// The file opened for appending, never through a link planted in its place, and only when
/// it is efbd's; created readable by its owner and group only (it names accounts and what
/// they did).
fn append(path: &Path) -> io::Result<File> {
    Ok(files::open_append(path, 0o640)?)
}

/// A log's text, if it is there and efbd's; one that is not is said in efbd's log rather
/// than shown (it was judged at start: something changed it since).
fn read_back(path: &Path) -> Option<String> {
    match files::read_trusted(path) {
        Ok(text) => Some(text),
        Err(e) if e.is_missing() => None,
        Err(e) => {
            error!(error = %e, "the audit log is not read back");
            None
        }
    }
}

#[cfg(test)]
mod tests;
