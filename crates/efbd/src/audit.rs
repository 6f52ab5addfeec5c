//! The audit log in the datastore directory: one JSON record a line (`audit.log`), bounded
//! in size: when it reaches half of `audit.max_kib` it becomes `audit.log.1` (replacing the
//! previous one) and a new file starts, so both together stay under the limit and the
//! newest half is always there. `show system audit` reads the last records of both.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use efb_gnmi::audit::{Record, Sink};
use tracing::error;

pub const FILE: &str = "audit.log";
pub const OLD_FILE: &str = "audit.log.1";

pub struct AuditLog {
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

impl AuditLog {
    /// Opens (or starts) the log in `dir`, `max_kib` in all.
    pub fn open(dir: &Path, max_kib: u64) -> io::Result<AuditLog> {
        let path = dir.join(FILE);
        let file = append(&path)?;
        let size = file.metadata()?.len();
        Ok(AuditLog {
            old: dir.join(OLD_FILE),
            path,
            half: max_kib.saturating_mul(1024) / 2,
            file: Mutex::new(Open {
                file: Some(file),
                size,
            }),
        })
    }

    /// The last `count` records, oldest first.
    pub fn last(&self, count: usize) -> Vec<Record> {
        // Holding the lock: a rotation must not happen between the two reads.
        let _open = self.file.lock();
        let mut records: Vec<Record> = [&self.old, &self.path]
            .into_iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
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

    fn write(&self, line: &str) -> io::Result<()> {
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

impl Sink for AuditLog {
    fn record(&self, record: &Record) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        if let Err(e) = self.write(&line) {
            error!(file = %self.path.display(), error = %e, "cannot write the audit log");
        }
    }
}

/// The file opened for appending; created readable by its owner and group only (it names
/// accounts and what they did).
fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .open(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(n: usize) -> Record {
        Record {
            time_ms: n as u64,
            user: "ada".into(),
            role: None,
            from: "unix socket, uid 1001, pid 1".into(),
            what: format!("commit {n}"),
            accepted: n.is_multiple_of(2),
            result: "x".repeat(200),
        }
    }

    #[test]
    fn the_log_stays_bounded_and_keeps_the_newest_records() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(dir.path(), 16).unwrap();
        for n in 0..1000 {
            log.record(&record(n));
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
        let log = AuditLog::open(dir.path(), 16).unwrap();
        log.record(&record(1000));
        assert_eq!(log.last(2)[1].time_ms, 1000);
        assert_eq!(log.last(2)[0].time_ms, 999);
    }
}
