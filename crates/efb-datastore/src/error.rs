//! Errors of the datastore (the chip's own are efb-chip's), each saying what went wrong
//! and what is left unchanged, and the kind of each (what a protocol makes a code of).

use efb_chip::{ChipError, ChipErrorKind};
use efb_yang::Problem;

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
    /// A file or directory of the datastore that efbd may not trust as it is (a link,
    /// another account's, writable by others): nothing was loaded or committed. `what` names
    /// it for the operator; `hint` adds another way out, if there is one.
    #[error("{what}: {error}{hint}")]
    Untrusted {
        what: &'static str,
        error: crate::files::FileError,
        hint: &'static str,
    },
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
    /// A file of the datastore that could not be opened (`Storage`) or may not be trusted
    /// (`Untrusted`), named by `what`.
    pub(crate) fn file(
        what: &'static str,
        error: crate::files::FileError,
        hint: &'static str,
    ) -> DatastoreError {
        match error {
            crate::files::FileError::Io { .. } => {
                DatastoreError::Storage(format!("{what}: {error}"))
            }
            error => DatastoreError::Untrusted { what, error, hint },
        }
    }

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
            DatastoreError::Storage(_) | DatastoreError::Untrusted { .. } => ErrorKind::Storage,
            DatastoreError::Southbound(e) => e.kind().into(),
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

impl From<ChipErrorKind> for ErrorKind {
    fn from(kind: ChipErrorKind) -> ErrorKind {
        match kind {
            ChipErrorKind::Unreachable => ErrorKind::ChipUnreachable,
            ChipErrorKind::Full => ErrorKind::ChipFull,
            ChipErrorKind::Refused => ErrorKind::ChipRefused,
        }
    }
}
