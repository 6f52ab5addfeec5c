//! Why a setting is refused: each case names the setting and what it accepts, so that
//! efbd stops before it starts with a message an operator can act on.

use super::log::{FORMATS, LEVEL_WORDS};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingRefused {
    /// A limit of 0 would refuse everything (or close every connection at once).
    #[error("{setting} must be at least 1")]
    Zero { setting: String },
    #[error("management.max_sessions and management.max_sessions_per_account must be at least 1")]
    NoSessions,
    /// What is kept for admins leaves nothing for the other roles.
    #[error(
        "{setting} = {kept} leaves no {what} for other roles: it must be below {limit_setting} ({limit})"
    )]
    NothingLeft {
        setting: String,
        kept: usize,
        what: &'static str,
        limit_setting: String,
        limit: usize,
    },
    #[error("{setting} = {value}: expected {least} to {most}")]
    OutOfRange {
        setting: String,
        value: usize,
        least: usize,
        most: usize,
    },
    /// A message that may be this large could never fit in the budget of one account.
    #[error(
        "{setting} = {mib}: a configuration that large could not be taken in: it is held as sent and as read, so twice {mib} MiB must be less than memory.per_account_mib ({per_account_mib}); lower {setting} or raise memory.per_account_mib"
    )]
    Unfit {
        setting: &'static str,
        mib: usize,
        per_account_mib: usize,
    },
    #[error("audit.max_kib must be at least 16")]
    AuditTooSmall,
    #[error(
        "management.socket_mode = {0:?}: expected permission bits in octal, 0000 to 0777 (\"0660\")"
    )]
    SocketMode(String),
    #[error(
        "log.level (--log-level) = {level:?}: {why}; expected {}, or TARGET=LEVEL directives \
         separated by commas (efbd=debug,info)",
        LEVEL_WORDS
    )]
    LogLevel { level: String, why: String },
    #[error("log.format (--log-format) = {format:?}: expected one of {}", FORMATS.join(", "))]
    LogFormat { format: String },
    #[error("log.format (--log-format) = \"journal\": the journal cannot be reached: {0}")]
    NoJournal(String),
    #[error(
        "management.listen (TCP) needs gnmi.users: over TCP, clients log in as users of that file"
    )]
    TcpWithoutUsers,
}
