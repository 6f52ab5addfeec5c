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
//! configuration, never a mix.

use std::path::Path;

use efb_yang::diff::{self, RecordKey};
use efb_yang::inactive::Inactive;
use efb_yang::json;
use efb_yang::{DataTree, Schema};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::ConflictableTransactionError;

use crate::error::DatastoreError;

const LAST_COMMIT: &str = "last-commit";
const BOOT_ID: &str = "boot-id";
const PENDING: &str = "pending-confirm";
const STARTUP_SAVED: &str = "startup-saved";
const MODEL: &str = "model-revision";
const INACTIVE: &str = "inactive";
const STARTUP_INACTIVE: &str = "startup-inactive";

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
}

type TxResult = Result<(), ConflictableTransactionError<()>>;

impl Store {
    pub(crate) fn open(dir: &Path) -> Result<Store, DatastoreError> {
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
        Ok(Store {
            running: db.open_tree("running")?,
            startup: db.open_tree("startup")?,
            history: db.open_tree("history")?,
            meta: db.open_tree("meta")?,
            db,
        })
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
    /// `keep_from`), the last commit id and the pending confirmation, atomically.
    pub(crate) fn write_commit(
        &self,
        entry: &HistoryEntry,
        pending: Option<&PendingConfirm>,
        keep_from: u64,
        revision: &str,
    ) -> Result<(), DatastoreError> {
        let entry_bytes = encode(entry)?;
        let pending_bytes = pending.map(encode).transpose()?;
        let stale: Vec<sled::IVec> = self
            .history
            .range(..keep_from.to_be_bytes())
            .keys()
            .collect::<Result<_, _>>()?;
        let result = (&self.running, &self.history, &self.meta).transaction(
            |(running, history, meta)| -> TxResult {
                for record in &entry.records {
                    match &record.after {
                        Some(value) => running.insert(record.key.as_bytes(), value.as_bytes())?,
                        None => running.remove(record.key.as_bytes())?,
                    };
                }
                history.insert(&entry.id.to_be_bytes(), entry_bytes.as_slice())?;
                for key in &stale {
                    history.remove(key)?;
                }
                meta.insert(LAST_COMMIT, &entry.id.to_be_bytes())?;
                if let Some(change) = &entry.inactive {
                    meta.insert(INACTIVE, change.after.as_bytes())?;
                }
                meta.insert(MODEL, revision.as_bytes())?;
                match &pending_bytes {
                    Some(p) => meta.insert(PENDING, p.as_slice())?,
                    None => meta.remove(PENDING)?,
                };
                Ok(())
            },
        );
        result.map_err(|e| DatastoreError::Storage(format!("commit {}: {e:?}", entry.id)))?;
        self.db.flush()?;
        Ok(())
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
