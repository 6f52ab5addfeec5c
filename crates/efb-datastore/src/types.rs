//! What the datastore takes and gives: plain data, no behaviour beyond a few accessors.
//! Kept apart so that the southbound (which sees [`Running`]) and the sessions need not
//! import the datastore itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use efb_model::Config;
use efb_yang::digest::{self, Digest};
use efb_yang::inactive::Inactive;
use efb_yang::input::{self, Limit};
use efb_yang::validate::Scope;
use efb_yang::{DataPath, DataTree, Problem, Schema, Value};

use crate::store::CommitKind;
use efb_chip::ChipWrites;

/// Where and how to open a datastore.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The datastore directory; the database lives in `<dir>/db`.
    pub dir: PathBuf,
    /// Loaded when there is no startup configuration; `<dir>/factory-default.json` by
    /// default, and an empty configuration when that file does not exist either.
    pub factory_default: Option<PathBuf>,
    /// Identity of this boot of the machine. A running configuration written during another
    /// boot is replaced by startup, as a device does when it reboots; within one boot (efbd
    /// restarted) running is kept. Read from the kernel when not given.
    pub boot_id: Option<String>,
    /// The largest configuration read: the factory default file, a load's content.
    pub max_input: Limit,
    /// A commit of more records than this is written in batches of this size
    /// ([`crate::COMMIT_BATCH_RECORDS`]; the crash test makes it small).
    pub commit_batch_records: usize,
}

impl OpenOptions {
    pub fn new(dir: impl Into<PathBuf>) -> OpenOptions {
        OpenOptions {
            dir: dir.into(),
            factory_default: None,
            boot_id: None,
            max_input: Limit::mib(input::DEFAULT_MAX_INPUT_MIB, "max_input_mib"),
            commit_batch_records: crate::store::COMMIT_BATCH_RECORDS,
        }
    }
}

/// The running configuration, with its typed view.
#[derive(Clone, Debug)]
pub struct Running {
    /// What is applied: validated, on the chip, served over gNMI.
    pub tree: DataTree,
    /// What is kept but not applied (`deactivate`).
    pub inactive: Inactive,
    pub config: Arc<Config>,
    /// The commit that made it.
    pub commit_id: u64,
}

/// A configuration as written: the tree applied, and what it keeps inactive.
pub type Written = (DataTree, Inactive);

/// One edit of a candidate.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Merge-set one node (a leaf's value, a leaf-list item, a list entry).
    Set {
        path: DataPath,
        value: Option<Value>,
    },
    /// Merge `data` (a tree holding the node at `path` and its ancestors) at `path`.
    Merge { path: DataPath, data: DataTree },
    /// Replace the node at `path` with what `data` holds there.
    Replace { path: DataPath, data: DataTree },
    /// Create the node at `path` from `data`; an error if it exists.
    Create { path: DataPath, data: DataTree },
    /// Remove the node at `path`; an error if it does not exist.
    Delete { path: DataPath },
    /// Remove the node at `path` if it exists.
    Remove { path: DataPath },
}

/// How a load treats the candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadMode {
    /// Merge the file into the candidate.
    Merge,
    /// The file becomes the candidate.
    Override,
}

/// What an edit did.
#[derive(Clone, Debug, Default)]
pub struct EditOutcome {
    /// Lines applied.
    pub applied: usize,
    /// References the edit broke (`delete ports port p5` while link l3 uses it): the
    /// candidate keeps the edit, and a commit is refused until they are fixed.
    pub broken: Vec<Problem>,
}

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadOutcome {
    /// Problems the loaded configuration still has (a commit would be refused until they
    /// are fixed): after `load override`, everything a commit checks (YANG and the rules
    /// of MODEL.md); after `load merge`, nothing (the merged candidate is checked at commit).
    pub incomplete: Vec<Problem>,
}

/// What to commit.
#[derive(Clone, Debug, Default)]
pub struct CommitRequest {
    pub comment: Option<String>,
    /// `commit confirmed`: roll back by itself unless confirmed within this time.
    pub confirm_timeout: Option<Duration>,
    /// `commit check`: validate and report, change nothing.
    pub check_only: bool,
    /// Commit even when the chip cannot be reached (it is programmed when it can be).
    pub offline: bool,
}

/// What a commit (or commit check) did.
#[derive(Clone, Debug)]
pub struct CommitOutcome {
    /// The new commit; `None` for a check, or when there was nothing to commit.
    pub commit_id: Option<u64>,
    pub warnings: Vec<Problem>,
    /// How much of the configuration libyang validated.
    pub scope: Scope,
    /// When a `commit confirmed` rolls back unless confirmed.
    pub confirm_deadline: Option<SystemTime>,
    /// This commit confirmed a pending `commit confirmed`.
    pub confirmed: Option<u64>,
    /// What the chip was (or, for a check, would be) written.
    pub chip: ChipWrites,
    /// Warnings left out of `warnings` because an earlier commit told them and they still
    /// hold: set by efbd's owner, which remembers what it told.
    pub earlier_warnings: usize,
    /// The configuration before and after (snapshots: free to keep).
    before: DataTree,
    after: DataTree,
    schema: Arc<Schema>,
    /// The typed configurations before and after, once the candidate was found valid.
    configs: Option<(Arc<Config>, Arc<Config>)>,
    /// The changes in brief, once asked for (the reply and the event both need them).
    digest: std::sync::OnceLock<Digest>,
}

/// Change lines a commit's digest keeps (its count is always exact).
pub const DIGEST_LINES: usize = 1000;

impl CommitOutcome {
    pub(crate) fn new(
        schema: Arc<Schema>,
        before: DataTree,
        after: DataTree,
        scope: Scope,
    ) -> CommitOutcome {
        CommitOutcome {
            commit_id: None,
            warnings: Vec::new(),
            scope,
            confirm_deadline: None,
            confirmed: None,
            chip: ChipWrites::NoChip,
            earlier_warnings: 0,
            before,
            after,
            schema,
            configs: None,
            digest: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn set_configs(&mut self, before: Arc<Config>, after: Arc<Config>) {
        self.configs = Some((before, after));
    }

    /// The typed configurations before and after (none when nothing was committed): what
    /// the balancing-config-hash and the buckets' moves are worked out from.
    pub fn configs(&self) -> Option<(&Config, &Config)> {
        self.configs.as_ref().map(|(b, a)| (&**b, &**a))
    }

    /// The changes in brief (count, summary, first [`DIGEST_LINES`] lines), in one walk: a
    /// commit of 100 000 new flows need not list 700 000 changes nobody reads. A commit
    /// works it out beside its writing; a check, when first asked for.
    pub fn digest(&self) -> &Digest {
        self.digest
            .get_or_init(|| digest::digest(&self.schema, &self.before, &self.after, DIGEST_LINES))
    }

    /// How many changes: the `set` / `delete` lines `show | compare` lists for them.
    pub fn change_count(&self) -> usize {
        self.digest().count
    }

    pub fn has_changes(&self) -> bool {
        self.before != self.after
    }
}

/// A commit as `show system commit` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    /// `rollback N` number: 0 is the running configuration.
    pub index: usize,
    pub id: u64,
    pub time: String,
    pub user: String,
    pub comment: Option<String>,
    pub kind: CommitKind,
    pub records: usize,
    /// Still waiting for confirmation.
    pub pending_confirm: bool,
}
