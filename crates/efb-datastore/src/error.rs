//! Errors of the datastore, each saying what went wrong and what is left unchanged.

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
    #[error(
        "too many sessions: {max} are open, the most allowed; close one (leave a shell) and try again"
    )]
    TooManySessions { max: usize },
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
    Southbound(String),
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
