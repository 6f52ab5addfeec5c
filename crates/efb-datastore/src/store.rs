//! The on-disk layout, in one sled database:
//! - `running` and `startup`: one key per record (a port, a link, a unit, a flow, a profile,
//!   or the rest of a top-level container), its RFC 7951 JSON as the value;
//! - `history`: one entry per commit, keyed by commit id (big-endian), holding each record
//!   changed with its value before and after;
//! - `meta`: the last commit id, the boot the running configuration belongs to, a pending
//!   `commit confirmed`, whether startup was saved, the model revision, and what running
//!   and startup keep inactive (`deactivate`; a JSON array, absent when nothing is).
//!   A history entry holds the inactive nodes before and after when its commit changed
//!   them.
//!
//! A commit writes its records, its history entry and the meta keys in one sled
//! transaction, then flushes: killed at any point, the database holds the old or the new
//! configuration, never a mix. A commit of more records than a batch holds (sled keeps
//! every version of the nodes a transaction rewrites until it ends: 100 000 records at
//! once held about 500 MiB) writes its history entry first, with an `applying` mark that
//! names it; the entry is then the commit's redo log: its records are written batch by
//! batch, and the meta keys and the mark's removal end it. Opening a database whose mark
//! is set finishes that commit from its entry: killed after the entry was flushed, the
//! database holds the new configuration.

use std::path::Path;

use efb_yang::diff::{self, RecordKey};
use efb_yang::inactive::Inactive;
use efb_yang::json;
use efb_yang::{DataTree, Schema};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionalTree};
use tracing::warn;

use crate::error::DatastoreError;

const LAST_COMMIT: &str = "last-commit";
const BOOT_ID: &str = "boot-id";
const PENDING: &str = "pending-confirm";
const STARTUP_SAVED: &str = "startup-saved";
const MODEL: &str = "model-revision";
const INACTIVE: &str = "inactive";
const STARTUP_INACTIVE: &str = "startup-inactive";
const APPLYING: &str = "applying";

/// The records a commit writes in one sled transaction, and a larger one per batch.
pub const COMMIT_BATCH_RECORDS: usize = 2048;

/// What kind of event made a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitKind {
    /// A user's commit.
    Commit,
    /// The configuration loaded at start-up (startup, or factory default).
    Boot,
    /// The automatic rollback of a `commit confirmed` that was not confirmed in time.
    ConfirmTimeout,
}

/// One record's value before and after a commit (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordChange {
    pub key: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A commit as history keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub id: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub user: String,
    pub comment: Option<String>,
    pub kind: CommitKind,
    /// Seconds to confirm, for `commit confirmed`.
    pub confirm_timeout_s: Option<u64>,
    pub records: Vec<RecordChange>,
    /// The inactive nodes before and after, when the commit changed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive: Option<InactiveChange>,
}

/// What a commit did to the inactive nodes: each side as [`Inactive::to_json`] writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InactiveChange {
    pub before: String,
    pub after: String,
}

/// A `commit confirmed` waiting for its confirmation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingConfirm {
    /// The latest `commit confirmed`.
    pub commit_id: u64,
    /// The first commit not yet confirmed: the rollback goes back to before it.
    pub since_commit_id: u64,
    /// Milliseconds since the Unix epoch: the rollback time survives a restart.
    pub deadline_ms: u64,
}

pub(crate) struct Store {
    db: sled::Db,
    running: sled::Tree,
    startup: sled::Tree,
    history: sled::Tree,
    meta: sled::Tree,
    batch: usize,
}

type TxResult = Result<(), ConflictableTransactionError<()>>;

/// What ends a commit once its records are written: the meta keys, and the history entries
/// it pushes out. Kept under the `applying` mark while a large commit is written.
#[derive(Debug, Serialize, Deserialize)]
struct Ending {
    id: u64,
    pending: Option<PendingConfirm>,
    /// History entries before this commit id are dropped.
    keep_from: u64,
    revision: String,
    /// The inactive nodes after the commit, when it changed them.
    inactive: Option<String>,
}

impl Ending {
    fn write(
        &self,
        history: &TransactionalTree,
        meta: &TransactionalTree,
        stale: &[sled::IVec],
    ) -> TxResult {
        for key in stale {
            history.remove(key)?;
        }
        meta.insert(LAST_COMMIT, &self.id.to_be_bytes())?;
        if let Some(after) = &self.inactive {
            meta.insert(INACTIVE, after.as_bytes())?;
        }
        meta.insert(MODEL, self.revision.as_bytes())?;
        match &self.pending {
            Some(p) => meta.insert(PENDING, encode(p).map_err(|_| abort())?)?,
            None => meta.remove(PENDING)?,
        };
        meta.remove(APPLYING)?;
        Ok(())
    }

    /// A transaction of this commit that sled refused.
    fn failed(&self, e: impl std::fmt::Debug) -> DatastoreError {
        DatastoreError::Storage(format!("commit {}: {e:?}", self.id))
    }
}

fn abort() -> ConflictableTransactionError<()> {
    ConflictableTransactionError::Abort(())
}

impl Store {
    /// Opens the database under `dir`; a commit of more than `batch` records is written
    /// in batches. A commit cut short is finished first.
    pub(crate) fn open(dir: &Path, batch: usize) -> Result<Store, DatastoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| DatastoreError::Storage(format!("{}: {e}", dir.display())))?;
        let path = dir.join("db");
        // sled creates its files under the umask (readable by everyone under 022): the
        // directory's mode keeps the configuration and its history from other accounts.
        crate::files::private_dir(&path)
            .map_err(|e| DatastoreError::file("the database's directory", e, ""))?;
        // sled caches up to 1 GiB by default; configuration is read once at start and then
        // held in memory by the datastore, so a small cache is enough.
        let db = sled::Config::new()
            .path(&path)
            .cache_capacity(64 * 1024 * 1024)
            .open()
            .map_err(|e| match e {
                sled::Error::Io(io)
                    if io.kind() == std::io::ErrorKind::WouldBlock
                        || io.to_string().contains("lock") =>
                {
                    DatastoreError::Locked {
                        path: dir.display().to_string(),
                    }
                }
                other => DatastoreError::Storage(format!("{}: {other}", path.display())),
            })?;
        let store = Store {
            running: db.open_tree("running")?,
            startup: db.open_tree("startup")?,
            history: db.open_tree("history")?,
            meta: db.open_tree("meta")?,
            db,
            batch: batch.max(1),
        };
        store.finish_cut_short()?;
        Ok(store)
    }

    /// A commit whose history entry was written but not all its records: written now from
    /// the entry, as if it had not been stopped.
    fn finish_cut_short(&self) -> Result<(), DatastoreError> {
        let Some(mark) = self.meta.get(APPLYING)? else {
            return Ok(());
        };
        let ending: Ending = serde_json::from_slice(&mark)
            .map_err(|e| DatastoreError::Storage(format!("{APPLYING}: {e}")))?;
        let entry = self.history.get(ending.id.to_be_bytes())?.ok_or_else(|| {
            DatastoreError::Storage(format!(
                "{APPLYING}: commit {} has no history entry",
                ending.id
            ))
        })?;
        let entry: HistoryEntry = serde_json::from_slice(&entry)
            .map_err(|e| DatastoreError::Storage(format!("history entry {}: {e}", ending.id)))?;
        warn!(
            id = ending.id,
            records = entry.records.len(),
            "finishing a commit that was stopped while its records were written"
        );
        self.write_records_and_end(&entry.records, &ending)?;
        self.db.flush()?;
        Ok(())
    }

    pub(crate) fn last_commit(&self) -> Result<Option<u64>, DatastoreError> {
        Ok(self.meta.get(LAST_COMMIT)?.and_then(|v| decode_id(&v)))
    }

    pub(crate) fn boot_id(&self) -> Result<Option<String>, DatastoreError> {
        Ok(self
            .meta
            .get(BOOT_ID)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    pub(crate) fn set_boot_id(&self, boot: &str) -> Result<(), DatastoreError> {
        self.meta.insert(BOOT_ID, boot.as_bytes())?;
        self.db.flush()?;
        Ok(())
    }

    pub(crate) fn model_revision(&self) -> Result<Option<String>, DatastoreError> {
        Ok(self
            .meta
            .get(MODEL)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    pub(crate) fn pending(&self) -> Result<Option<PendingConfirm>, DatastoreError> {
        match self.meta.get(PENDING)? {
            Some(v) => Ok(serde_json::from_slice(&v).ok()),
            None => Ok(None),
        }
    }

    pub(crate) fn set_pending(
        &self,
        pending: Option<&PendingConfirm>,
    ) -> Result<(), DatastoreError> {
        match pending {
            Some(p) => self.meta.insert(PENDING, encode(p)?)?,
            None => self.meta.remove(PENDING)?,
        };
        self.db.flush()?;
        Ok(())
    }

    pub(crate) fn startup_saved(&self) -> Result<bool, DatastoreError> {
        Ok(self.meta.get(STARTUP_SAVED)?.is_some())
    }

    pub(crate) fn running_tree(&self, schema: &Schema) -> Result<DataTree, DatastoreError> {
        load_records(schema, &self.running)
    }

    pub(crate) fn running_inactive(&self, schema: &Schema) -> Result<Inactive, DatastoreError> {
        self.inactive(schema, INACTIVE)
    }

    pub(crate) fn startup_inactive(&self, schema: &Schema) -> Result<Inactive, DatastoreError> {
        self.inactive(schema, STARTUP_INACTIVE)
    }

    fn inactive(&self, schema: &Schema, key: &str) -> Result<Inactive, DatastoreError> {
        let Some(value) = self.meta.get(key)? else {
            return Ok(Inactive::default());
        };
        Inactive::from_json(schema, &String::from_utf8_lossy(&value))
            .map_err(|e| DatastoreError::Storage(format!("{key}: {e}")))
    }

    pub(crate) fn startup_tree(&self, schema: &Schema) -> Result<Option<DataTree>, DatastoreError> {
        if !self.startup_saved()? {
            return Ok(None);
        }
        load_records(schema, &self.startup).map(Some)
    }

    /// Writes a commit: changed records, its history entry (dropping entries older than
    /// `keep_from`), the last commit id and the pending confirmation, atomically (see the
    /// module's comment for a commit of more records than a batch).
    pub(crate) fn write_commit(
        &self,
        entry: &HistoryEntry,
        pending: Option<&PendingConfirm>,
        keep_from: u64,
        revision: &str,
    ) -> Result<(), DatastoreError> {
        let entry_bytes = encode(entry)?;
        let ending = Ending {
            id: entry.id,
            pending: pending.cloned(),
            keep_from,
            revision: revision.to_string(),
            inactive: entry.inactive.as_ref().map(|c| c.after.clone()),
        };
        if entry.records.len() <= self.batch {
            let stale = self.stale_history(keep_from)?;
            (&self.running, &self.history, &self.meta)
                .transaction(|(running, history, meta)| -> TxResult {
                    for record in &entry.records {
                        write_record(running, record)?;
                    }
                    history.insert(&entry.id.to_be_bytes(), entry_bytes.as_slice())?;
                    ending.write(history, meta, &stale)
                })
                .map_err(|e| ending.failed(e))?;
        } else {
            self.begin_large(&entry_bytes, &ending)?;
            self.write_records_and_end(&entry.records, &ending)?;
        }
        self.db.flush()?;
        Ok(())
    }

    /// A large commit's history entry and the mark naming it, flushed: from here the
    /// commit is done whatever happens, the entry redoes it.
    fn begin_large(&self, entry_bytes: &[u8], ending: &Ending) -> Result<(), DatastoreError> {
        let mark = encode(ending)?;
        (&self.history, &self.meta)
            .transaction(|(history, meta)| -> TxResult {
                history.insert(&ending.id.to_be_bytes(), entry_bytes)?;
                meta.insert(APPLYING, mark.as_slice())?;
                Ok(())
            })
            .map_err(|e| ending.failed(e))?;
        self.db.flush()?;
        Ok(())
    }

    /// The records of a large commit, batch by batch, then its ending.
    fn write_records_and_end(
        &self,
        records: &[RecordChange],
        ending: &Ending,
    ) -> Result<(), DatastoreError> {
        for chunk in records.chunks(self.batch) {
            let mut batch = sled::Batch::default();
            for record in chunk {
                match &record.after {
                    Some(value) => batch.insert(record.key.as_bytes(), value.as_bytes()),
                    None => batch.remove(record.key.as_bytes()),
                }
            }
            self.running.apply_batch(batch)?;
        }
        let stale = self.stale_history(ending.keep_from)?;
        (&self.history, &self.meta)
            .transaction(|(history, meta)| ending.write(history, meta, &stale))
            .map_err(|e| ending.failed(e))
    }

    fn stale_history(&self, keep_from: u64) -> Result<Vec<sled::IVec>, DatastoreError> {
        Ok(self
            .history
            .range(..keep_from.to_be_bytes())
            .keys()
            .collect::<Result<_, _>>()?)
    }

    /// Replaces startup with `records` and what it keeps inactive, atomically.
    pub(crate) fn save_startup(
        &self,
        records: &[(String, String)],
        inactive: &str,
    ) -> Result<(), DatastoreError> {
        let old: Vec<sled::IVec> = self.startup.iter().keys().collect::<Result<_, _>>()?;
        let result = (&self.startup, &self.meta).transaction(|(startup, meta)| -> TxResult {
            for key in &old {
                startup.remove(key)?;
            }
            for (key, value) in records {
                startup.insert(key.as_bytes(), value.as_bytes())?;
            }
            meta.insert(STARTUP_SAVED, b"1")?;
            meta.insert(STARTUP_INACTIVE, inactive.as_bytes())?;
            Ok(())
        });
        result.map_err(|e| DatastoreError::Storage(format!("save: {e:?}")))?;
        self.db.flush()?;
        Ok(())
    }

    /// History, newest first.
    pub(crate) fn history(&self) -> Result<Vec<HistoryEntry>, DatastoreError> {
        let mut entries = Vec::new();
        for item in self.history.iter().rev() {
            let (_, value) = item?;
            let entry: HistoryEntry = serde_json::from_slice(&value)
                .map_err(|e| DatastoreError::Storage(format!("history entry: {e}")))?;
            entries.push(entry);
        }
        Ok(entries)
    }
}

fn write_record(running: &TransactionalTree, record: &RecordChange) -> TxResult {
    match &record.after {
        Some(value) => running.insert(record.key.as_bytes(), value.as_bytes())?,
        None => running.remove(record.key.as_bytes())?,
    };
    Ok(())
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, DatastoreError> {
    serde_json::to_vec(value).map_err(|e| DatastoreError::Storage(e.to_string()))
}

fn decode_id(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

fn load_records(schema: &Schema, tree: &sled::Tree) -> Result<DataTree, DatastoreError> {
    let mut data = DataTree::new();
    for item in tree.iter() {
        let (key, value) = item?;
        let key_text = String::from_utf8_lossy(&key);
        let record = RecordKey::parse(schema, &key_text)
            .map_err(|e| DatastoreError::Storage(format!("record {key_text}: {e}")))?;
        let text = String::from_utf8_lossy(&value);
        let part = json::from_trusted_json(schema, &text)
            .map_err(|e| DatastoreError::Storage(format!("record {key_text}: {e}")))?;
        diff::put_record(schema, &mut data, &record, Some(&part));
    }
    Ok(data)
}

/// Every record of a tree as (key, JSON), for saving.
pub(crate) fn encode_records(schema: &Schema, tree: &DataTree) -> Vec<(String, String)> {
    diff::records(schema, tree)
        .into_iter()
        .map(|(key, data)| (key.display(schema), record_json(schema, &data)))
        .collect()
}

pub(crate) fn record_json(schema: &Schema, data: &DataTree) -> String {
    json::to_json(schema, data, json::PrintOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, records: usize) -> HistoryEntry {
        HistoryEntry {
            id,
            time: "2026-12-06T12:00:00Z".into(),
            user: "admin".into(),
            comment: None,
            kind: CommitKind::Commit,
            confirm_timeout_s: None,
            records: (0..records)
                .map(|i| RecordChange {
                    key: format!("flow/f{i}"),
                    before: None,
                    after: Some(format!("{{\"name\":\"f{i}\"}}")),
                })
                .collect(),
            inactive: None,
        }
    }

    fn ending(id: u64) -> Ending {
        Ending {
            id,
            pending: None,
            keep_from: 0,
            revision: "2026-01-01".into(),
            inactive: None,
        }
    }

    #[test]
    fn a_large_commit_stopped_after_its_entry_is_finished_when_the_database_opens() {
        let dir = tempfile::tempdir().unwrap();
        let entry = entry(1, 5);
        {
            let store = Store::open(dir.path(), 2).unwrap();
            // Stopped before its first batch: only the entry and its mark are written.
            store
                .begin_large(&encode(&entry).unwrap(), &ending(1))
                .unwrap();
            assert_eq!(store.running.len(), 0);
            assert_eq!(store.last_commit().unwrap(), None);
        }
        let store = Store::open(dir.path(), 2).unwrap();
        assert_eq!(store.running.len(), 5, "every record written");
        assert_eq!(store.last_commit().unwrap(), Some(1));
        assert!(
            store.meta.get(APPLYING).unwrap().is_none(),
            "the mark is gone"
        );
        assert_eq!(store.history().unwrap(), vec![entry]);
    }

    #[test]
    fn a_large_commit_writes_in_batches_what_a_small_one_writes_at_once() {
        let (small, large) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let entry = entry(1, 7);
        for (dir, batch) in [(&small, 100), (&large, 3)] {
            let store = Store::open(dir.path(), batch).unwrap();
            store.write_commit(&entry, None, 0, "2026-01-01").unwrap();
        }
        let small = Store::open(small.path(), 100).unwrap();
        let large = Store::open(large.path(), 3).unwrap();
        let contents = |store: &Store| -> Vec<(sled::IVec, sled::IVec)> {
            store.running.iter().collect::<Result<_, _>>().unwrap()
        };
        assert_eq!(contents(&small).len(), 7);
        assert_eq!(contents(&small), contents(&large));
        assert_eq!(large.last_commit().unwrap(), Some(1));
        assert_eq!(large.history().unwrap(), small.history().unwrap());
    }
}
