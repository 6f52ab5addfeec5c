//! Errors of the datastore and of the chip behind it, each saying what went wrong and what
//! is left unchanged, and the kind of each (what a protocol makes a code of).

use efb_yang::Problem;

use crate::chip_writes::UpdateKind;

#[derive(Debug, thiserror::Error)]
pub enum DatastoreError {
    /// The candidate breaks YANG or the rules: nothing was committed.
    #[error("configuration is not valid:\n{}", lines(.errors))]
    Invalid {
        errors: Vec<Problem>,
        warnings: Vec<Problem>,
    },
    /// An edit or a load was refused; the candidate is as it was.
    #[error("{}", edit_lines(.0))]
    Edit(Vec<Problem>),
    /// Others committed changes to the same paths since this session's candidate was started.
    #[error(
        "commit refused: since your candidate was started, commit {since} changed the same configuration:\n{}\nrun `rollback 0` (or `discard`) to start again from the running configuration",
        path_lines(.paths)
    )]
    Conflict { paths: Vec<String>, since: String },
    #[error("no session {0}")]
    UnknownSession(u64),
    /// The session was closed for being idle; its candidate is gone.
    #[error(
        "session expired: session {session} had no request for {}, longer than the idle timeout; your uncommitted changes were dropped",
        humantime::format_duration(*.idle)
    )]
    SessionExpired {
        session: u64,
        idle: std::time::Duration,
    },
    /// As many sessions are open as the limits allow.
    #[error("too many sessions: {0}")]
    TooManySessions(SessionLimit),
    /// Input beyond a limit (a user name, a comment, a commit confirmed wait): nothing
    /// changed; the message names the limit.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    NotFound(String),
    #[error("datastore {path} is in use by another process (is another efbd running?)")]
    Locked { path: String },
    /// The database could not be read or written: nothing was committed.
    #[error("datastore storage: {0}")]
    Storage(String),
    /// The southbound (the chip) refused the configuration: nothing was committed.
    #[error("the chip refused the configuration: {0}")]
    Southbound(ChipError),
}

/// What kind of failure an error is, whatever the protocol that reports it: the one table
/// that gives each a gRPC code is `efb_northbound::status::code`, used by gNMI and by efbd's
/// management API alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The configuration, an edit or an input beyond a limit is refused: nothing changed.
    Invalid,
    /// Others committed changes to the same paths meanwhile.
    Conflict,
    /// A session, a commit or a rollback number that is not there (any more).
    NotFound,
    /// As many sessions are open as allowed.
    TooMany,
    /// The datastore is held by another process.
    Locked,
    /// The datastore's database could not be read or written.
    Storage,
    /// The chip cannot be reached, or the connection to it failed under way.
    ChipUnreachable,
    /// A table of the chip has no room for the configuration.
    ChipFull,
    /// The chip refused the configuration for another reason (the path says which part).
    ChipRefused,
}

impl DatastoreError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            DatastoreError::Invalid { .. }
            | DatastoreError::Edit(_)
            | DatastoreError::Refused(_) => ErrorKind::Invalid,
            DatastoreError::Conflict { .. } => ErrorKind::Conflict,
            DatastoreError::UnknownSession(_)
            | DatastoreError::SessionExpired { .. }
            | DatastoreError::NotFound(_) => ErrorKind::NotFound,
            DatastoreError::TooManySessions(_) => ErrorKind::TooMany,
            DatastoreError::Locked { .. } => ErrorKind::Locked,
            DatastoreError::Storage(_) => ErrorKind::Storage,
            DatastoreError::Southbound(e) => e.kind(),
        }
    }
}

/// The session limit a new session would pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionLimit {
    /// As many are open as allowed in all.
    All { max: usize },
    /// The rest are kept for admins.
    KeptForAdmins { open: usize, kept: usize },
    /// The account has as many open as one account may.
    PerAccount { max: usize },
}

impl std::fmt::Display for SessionLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionLimit::All { max } => write!(
                f,
                "{max} are open, the most allowed; close one (leave a shell) and try again"
            ),
            SessionLimit::KeptForAdmins { open, kept } => write!(
                f,
                "{open} are open and the last {kept} are kept for admins; close one (leave a shell) and try again"
            ),
            SessionLimit::PerAccount { max } => write!(
                f,
                "this account has {max} open, the most one account may have; close one of yours (leave a shell) and try again"
            ),
        }
    }
}

fn lines(problems: &[Problem]) -> String {
    efb_yang::text::problem_lines(problems, "  ")
}

/// The first paths, then how many more: a conflict over 100 000 flows is not a
/// 10 MB message.
fn path_lines(paths: &[String]) -> String {
    let problems: Vec<Problem> = paths.iter().map(|p| Problem::new("", p.as_str())).collect();
    efb_yang::text::problem_lines(&problems, "")
}

/// One problem on its line; several as an indented list under the first line's place.
fn edit_lines(problems: &[Problem]) -> String {
    match problems {
        [one] => one.to_string(),
        _ => lines(problems),
    }
}

impl From<sled::Error> for DatastoreError {
    fn from(e: sled::Error) -> DatastoreError {
        DatastoreError::Storage(e.to_string())
    }
}

impl From<efb_yang::Error> for DatastoreError {
    fn from(e: efb_yang::Error) -> DatastoreError {
        DatastoreError::Edit(e.problems())
    }
}

impl From<efb_yang::EditError> for DatastoreError {
    fn from(e: efb_yang::EditError) -> DatastoreError {
        DatastoreError::Edit(vec![e.into()])
    }
}

/// Why the chip does not hold what was asked; what was written for it has been undone.
#[derive(Debug, thiserror::Error)]
pub enum ChipError {
    /// No connection as the primary controller (none, or another controller holds the
    /// chip): nothing was written.
    #[error("the chip is not reachable (P4Runtime {address}): {message}")]
    Unreachable { address: String, message: String },
    /// The connection failed under way (a read or a write got no answer).
    #[error("{0}")]
    Lost(String),
    /// The chip refused a whole write, before looking at its updates: what it said.
    #[error("the chip refused the write: {0}")]
    WriteRefused(String),
    /// The chip refused updates for a reason other than room.
    #[error("{0}")]
    Refused(Refusals),
    /// A table had no room for the updates (the chip's messages give its capacity: the
    /// P4Info's size is only the most a chip may hold).
    #[error("{refusals}")]
    TableFull { table: String, refusals: Refusals },
    /// The configuration needs more entries than a table of the chip holds as its program
    /// was compiled: refused before anything is written.
    #[error("{0}")]
    OverCapacity(String),
    /// The configuration cannot be made into entries for this chip (a port the platform
    /// does not have, ids used up).
    #[error(transparent)]
    Compile(Box<dyn std::error::Error + Send + Sync>),
}

impl ChipError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            ChipError::Unreachable { .. } | ChipError::Lost(_) => ErrorKind::ChipUnreachable,
            ChipError::TableFull { .. } | ChipError::OverCapacity(_) => ErrorKind::ChipFull,
            ChipError::WriteRefused(_) | ChipError::Refused(_) | ChipError::Compile(_) => {
                ErrorKind::ChipRefused
            }
        }
    }
}

/// One update the chip refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The configuration path the entry comes from.
    pub path: String,
    pub update: UpdateKind,
    pub table: String,
    /// The chip's status code, as gRPC names it (`ResourceExhausted`).
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} in table {} refused ({}): {}",
            self.path, self.update, self.table, self.code, self.message
        )
    }
}

/// The first refused updates of a write, and how many more there were: a full table
/// would otherwise give a line per flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    pub shown: Vec<Refusal>,
    pub more: usize,
}

impl std::fmt::Display for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut lines: Vec<String> = self.shown.iter().map(ToString::to_string).collect();
        if self.more > 0 {
            lines.push(format!("... and {} more updates refused", self.more));
        }
        f.write_str(&lines.join("\n"))
    }
}
