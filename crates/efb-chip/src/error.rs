//! Why the chip does not hold what was asked.

use crate::writes::UpdateKind;

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
    #[error(transparent)]
    OverCapacity(OverCapacity),
    /// The configuration cannot be made into entries for this chip (a port the platform
    /// does not have, ids used up).
    #[error(transparent)]
    Compile(Box<dyn std::error::Error + Send + Sync>),
}

/// What kind of failure a [`ChipError`] is, as the APIs answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChipErrorKind {
    /// The chip could not be reached, or stopped answering.
    Unreachable,
    /// A table of the chip has no room.
    Full,
    /// The chip (or the program it runs) cannot take the entries.
    Refused,
}

impl ChipError {
    pub fn kind(&self) -> ChipErrorKind {
        match self {
            ChipError::Unreachable { .. } | ChipError::Lost(_) => ChipErrorKind::Unreachable,
            ChipError::TableFull { .. } | ChipError::OverCapacity(_) => ChipErrorKind::Full,
            ChipError::WriteRefused(_) | ChipError::Refused(_) | ChipError::Compile(_) => {
                ChipErrorKind::Refused
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

/// More entries than a table of the chip holds, as its program was compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the chip holds {capacity} {what} and this configuration needs {needed}{hint}")]
pub struct OverCapacity {
    /// What the table holds ("IPv4 flow entries", "entries in table buckets").
    pub what: String,
    pub needed: usize,
    pub capacity: u64,
    /// How entries add up, for the operator who has to remove some.
    pub hint: &'static str,
}
