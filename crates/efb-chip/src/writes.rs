//! What a commit wrote to the chip, as data: the southbound returns it, the commit reply
//! carries it, and each client says it in its own words.

/// What a commit wrote to the chip, or what a check would write: data, which each client
/// says in its own words (the shell: `chip programmed: 12 entries written`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ChipWrites {
    /// No data plane: nothing to say.
    #[default]
    NoChip,
    /// The chip holds the commit: this many entries were written for it.
    Written { entries: usize },
    /// Committed while the chip could not be reached: it is programmed (reconciled) when
    /// it can be, and out of sync until then.
    Offline,
    /// What a check would write.
    Planned(Planned),
    /// A check whose configuration cannot be made into entries (a commit would be
    /// refused): why.
    NotCompiled(String),
}

/// The writes a check found: how many, how many per table and kind, and each of them when
/// they are few.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Planned {
    pub writes: usize,
    /// By table, then kind of update.
    pub per_table: Vec<TableWrites>,
    /// Each write with the configuration it comes from, when there are few (a thousand
    /// are the counts above).
    pub listed: Vec<EntryWrite>,
}

/// How many updates of one kind a table gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableWrites {
    pub table: String,
    pub update: UpdateKind,
    pub count: usize,
}

/// One write: the configuration path the entry comes from, the update, the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryWrite {
    pub source: String,
    pub update: UpdateKind,
    pub table: String,
}

/// P4Runtime's kinds of update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UpdateKind {
    Insert,
    Modify,
    Delete,
}

impl UpdateKind {
    /// As P4Runtime's `Update.Type` names it, in lower case.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateKind::Insert => "insert",
            UpdateKind::Modify => "modify",
            UpdateKind::Delete => "delete",
        }
    }
}

impl std::fmt::Display for UpdateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
