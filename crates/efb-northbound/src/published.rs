//! What the configuration owner publishes to every API: the configuration and state at one
//! moment, and the `commit confirmed` waiting for its confirmation.

use std::time::SystemTime;

use efb_yang::DataTree;

/// The configuration and state at one moment, as committed (never ahead of a commit).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The commit running reflects.
    pub commit_id: u64,
    /// Bumped at every change of state (a bypass mode, later pair liveness).
    pub state_version: u64,
    /// When this snapshot was taken, in nanoseconds since the Unix epoch.
    pub timestamp_ns: u64,
    /// Running configuration.
    pub running: DataTree,
    /// Running configuration and the state the daemon knows.
    pub operational: DataTree,
}

/// A `commit confirmed` waiting for its confirmation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub commit_id: u64,
    pub deadline: SystemTime,
}

/// Says which commit waits for its confirmation, and until when.
pub fn pending_message(pending: &Pending) -> String {
    let left = pending
        .deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .as_secs();
    format!(
        "commit {} (commit confirmed) waits for its confirmation for {left} more seconds: confirm or cancel it first",
        pending.commit_id
    )
}
