//! Candidate, running and startup configuration with real commit semantics, persisted in
//! an embedded sled database.
//!
//! - Each session edits a private candidate; a commit validates it (libyang and the rules
//!   of MODEL.md), gets it past the southbound (the chip), writes it to disk in one
//!   transaction, and only then makes it running.
//! - A candidate started before someone else's commit is rebased onto it, unless both
//!   changed the same paths: then the commit is refused, naming them.
//! - `commit check`, `commit confirmed` (rolled back by itself, also across restarts),
//!   comments, 50 commits of history, `rollback N`, `compare`, `discard`, `save`, `load`.

mod datastore;
mod error;
pub mod files;
mod limits;
mod sessions;
mod southbound;
mod store;
mod types;

pub use datastore::{Datastore, HISTORY_LENGTH, Opened, ValidationObserver};
pub use error::{DatastoreError, ErrorKind, SessionLimit};
pub use limits::{
    DEFAULT_CONFIRM_TIMEOUT, MAX_COMMENT_CHARS, MAX_CONFIRM_TIMEOUT, MAX_USER_CHARS, check_comment,
    check_confirm_timeout, check_user,
};
pub use sessions::{Holder, Opener, SessionId, SessionInfo, SessionLimits};
pub use southbound::{NoChip, Southbound};
pub use store::{COMMIT_BATCH_RECORDS, CommitKind};
pub use types::{
    CommitInfo, CommitOutcome, CommitRequest, DIGEST_LINES, Edit, EditOutcome, LoadMode,
    LoadOutcome, OpenOptions, Running, Written,
};
