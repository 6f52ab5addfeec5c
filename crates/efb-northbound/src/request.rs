//! Every request a client can make of the balancer, whatever its protocol: what the access
//! decision and the audit read of it. The management API and gNMI translate their
//! messages into a [`Request`]; the role it needs ([`Request::operation`]) and the words
//! the audit records ([`Request::describe`]) are decided here, once.
//!
//! [`Kind`] is a request before its body is read (the management API judges a caller from
//! the head of the request): the least role of anything of that kind, and whether it may
//! be large.

use crate::access::Operation;

/// A commit as asked (the shell's `commit ...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitAsk {
    /// `commit check`: validated and planned, nothing changed.
    pub check_only: bool,
    /// `commit confirmed`: rolled back unless confirmed within this many seconds (0: no).
    pub confirm_seconds: u32,
    /// Committed without writing the chip (it is not reachable).
    pub offline: bool,
    pub comment: String,
}

/// The counters a `clear ... statistics` starts from zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counters {
    Ports,
    Flows,
    /// A value the request's protocol does not know.
    Unknown,
}

impl Counters {
    /// The list's name as the shell says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Counters::Ports => "ports",
            Counters::Flows => "ecofilter-balancer flow",
            Counters::Unknown => "(unknown counters)",
        }
    }
}

/// What a client asks, with what the access decision and the audit need of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A shell connects (the daemon's version, the model).
    Hello,
    Status,
    OpenSession,
    /// Opening a session recorded under another user name than the caller's.
    OpenSessionAs {
        user: String,
    },
    CloseSession,
    /// Closing anyone's session.
    Logout {
        session: u64,
    },
    EditLines {
        lines: String,
    },
    Load {
        bytes: usize,
    },
    Discard,
    Rollback {
        index: u32,
    },
    Compare,
    Commit(CommitAsk),
    Confirm,
    Save,
    History,
    CommitChanges,
    /// Reading configuration or state at a path.
    Show {
        path: String,
    },
    ListKeys,
    /// An operation of the model that changes nothing (where a session would go).
    Lookup {
        rpc: String,
        input: String,
    },
    /// An operation of the model that changes state.
    Call {
        rpc: String,
        input: String,
    },
    Audit,
    RecentEvents,
    WatchEvents,
    ClearStatistics {
        counters: Counters,
        names: Vec<String>,
    },
    /// gNMI: edits committed at once, each its operation and path ("delete /ports/port[name=p1]").
    Set {
        operations: Vec<String>,
    },
}

/// Names a `clear ... statistics` lists in its audit record before it says how many.
const LISTED_NAMES: usize = 20;

impl Request {
    /// What it is as far as permissions go.
    pub fn operation(&self) -> Operation {
        match self {
            Request::OpenSessionAs { .. } => Operation::ActAs,
            Request::Lookup { .. } => Operation::Lookup,
            Request::Call { .. } => Operation::Call,
            other => other.kind().operation(),
        }
    }

    /// The request before its body is read.
    pub fn kind(&self) -> Kind {
        match self {
            Request::Hello => Kind::Hello,
            Request::Status => Kind::Status,
            Request::OpenSession | Request::OpenSessionAs { .. } => Kind::OpenSession,
            Request::CloseSession => Kind::CloseSession,
            Request::Logout { .. } => Kind::Logout,
            Request::EditLines { .. } => Kind::EditLines,
            Request::Load { .. } => Kind::Load,
            Request::Discard => Kind::Discard,
            Request::Rollback { .. } => Kind::Rollback,
            Request::Compare => Kind::Compare,
            Request::Commit(_) => Kind::Commit,
            Request::Confirm => Kind::Confirm,
            Request::Save => Kind::Save,
            Request::History => Kind::History,
            Request::CommitChanges => Kind::CommitChanges,
            Request::Show { .. } => Kind::Show,
            Request::ListKeys => Kind::ListKeys,
            Request::Lookup { .. } | Request::Call { .. } => Kind::Call,
            Request::Audit => Kind::Audit,
            Request::RecentEvents => Kind::RecentEvents,
            Request::WatchEvents => Kind::WatchEvents,
            Request::ClearStatistics { .. } => Kind::ClearStatistics,
            Request::Set { .. } => Kind::Set,
        }
    }

    /// The request in the audit's words (the shell's, where it has them); what a client
    /// sent is cut to its first line.
    pub fn describe(&self) -> String {
        match self {
            Request::OpenSessionAs { user } => format!("open a session as {user}"),
            Request::Logout { session } => format!("request system logout session {session}"),
            Request::EditLines { lines } => format!("edit: {}", first_line(lines)),
            Request::Load { bytes } => format!("load ({bytes} bytes)"),
            Request::Rollback { index } => format!("rollback {index}"),
            Request::Commit(ask) => describe_commit(ask),
            Request::Show { path } => format!("show {}", first_line(path)),
            Request::Lookup { rpc, input } | Request::Call { rpc, input } => {
                format!("call {rpc} {}", first_line(input))
            }
            Request::ClearStatistics { counters, names } => describe_clear(*counters, names),
            Request::Set { operations } => describe_set(operations),
            other => other.kind().words().to_string(),
        }
    }
}

fn describe_commit(ask: &CommitAsk) -> String {
    let mut what = if ask.check_only {
        "commit check".to_string()
    } else {
        "commit".to_string()
    };
    if ask.confirm_seconds > 0 {
        what += &format!(" confirmed {} s", ask.confirm_seconds);
    }
    if ask.offline {
        what += " offline";
    }
    if !ask.comment.is_empty() {
        what += &format!(" comment {:?}", first_line(&ask.comment));
    }
    what
}

fn describe_clear(counters: Counters, names: &[String]) -> String {
    let mut what = format!("clear {} statistics", counters.as_str());
    for name in names.iter().take(LISTED_NAMES) {
        what += &format!(" {}", first_line(name));
    }
    if names.len() > LISTED_NAMES {
        what += &format!(" ... ({} names)", names.len());
    }
    what
}

/// Operations a Set lists in its audit record before it says how many more.
const LISTED_OPERATIONS: usize = 5;

fn describe_set(operations: &[String]) -> String {
    if operations.is_empty() {
        return "Set: nothing".to_string();
    }
    let listed: Vec<String> = operations
        .iter()
        .take(LISTED_OPERATIONS)
        .map(|o| first_line(o))
        .collect();
    let mut what = format!("Set: {}", listed.join(", "));
    if operations.len() > LISTED_OPERATIONS {
        what += &format!(" and {} more", operations.len() - LISTED_OPERATIONS);
    }
    what
}

/// The first line of what a client sent, at most 200 characters ("..." when cut).
pub fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    cut
}

/// A request before its body is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Hello,
    Status,
    OpenSession,
    CloseSession,
    Logout,
    EditLines,
    Load,
    Discard,
    Rollback,
    Compare,
    Commit,
    Confirm,
    Save,
    History,
    CommitChanges,
    Show,
    ListKeys,
    Call,
    Audit,
    RecentEvents,
    WatchEvents,
    ClearStatistics,
    /// gNMI: what the server supports.
    Capabilities,
    /// gNMI: a stream of updates.
    Subscribe,
    /// gNMI: edits committed at once.
    Set,
}

impl Kind {
    pub const ALL: [Kind; 25] = [
        Kind::Hello,
        Kind::Status,
        Kind::OpenSession,
        Kind::CloseSession,
        Kind::Logout,
        Kind::EditLines,
        Kind::Load,
        Kind::Discard,
        Kind::Rollback,
        Kind::Compare,
        Kind::Commit,
        Kind::Confirm,
        Kind::Save,
        Kind::History,
        Kind::CommitChanges,
        Kind::Show,
        Kind::ListKeys,
        Kind::Call,
        Kind::Audit,
        Kind::RecentEvents,
        Kind::WatchEvents,
        Kind::ClearStatistics,
        Kind::Capabilities,
        Kind::Subscribe,
        Kind::Set,
    ];

    /// The least role of any request of this kind: a call may be a lookup, which a viewer
    /// may make (the request, once read, says which).
    pub fn operation(self) -> Operation {
        match self {
            Kind::Hello
            | Kind::Status
            | Kind::OpenSession
            | Kind::CloseSession
            | Kind::Compare
            | Kind::History
            | Kind::CommitChanges
            | Kind::Show
            | Kind::ListKeys
            | Kind::Audit
            | Kind::RecentEvents
            | Kind::WatchEvents
            | Kind::Capabilities
            | Kind::Subscribe => Operation::Show,
            Kind::Call => Operation::Lookup,
            Kind::ClearStatistics => Operation::Clear,
            Kind::EditLines | Kind::Load | Kind::Discard | Kind::Rollback => Operation::Edit,
            Kind::Commit | Kind::Set => Operation::Commit,
            Kind::Confirm => Operation::Confirm,
            Kind::Save => Operation::Save,
            Kind::Logout => Operation::Logout,
        }
    }

    /// It carries configuration: its messages may be large (and only admins send it).
    pub fn large(self) -> bool {
        matches!(self, Kind::EditLines | Kind::Load | Kind::Set)
    }

    /// Its method in the management API (`proto/efb/mgmt/v1/mgmt.proto`), which the
    /// judge admits by it; none for gNMI's own.
    pub fn management_method(self) -> Option<&'static str> {
        Some(match self {
            Kind::Hello => "Hello",
            Kind::Status => "Status",
            Kind::OpenSession => "OpenSession",
            Kind::CloseSession => "CloseSession",
            Kind::Logout => "Logout",
            Kind::EditLines => "EditLines",
            Kind::Load => "Load",
            Kind::Discard => "Discard",
            Kind::Rollback => "Rollback",
            Kind::Compare => "Compare",
            Kind::Commit => "Commit",
            Kind::Confirm => "Confirm",
            Kind::Save => "Save",
            Kind::History => "History",
            Kind::CommitChanges => "CommitChanges",
            Kind::Show => "Get",
            Kind::ListKeys => "ListKeys",
            Kind::Call => "Call",
            Kind::Audit => "Audit",
            Kind::RecentEvents => "RecentEvents",
            Kind::WatchEvents => "WatchEvents",
            Kind::ClearStatistics => "ClearStatistics",
            Kind::Capabilities | Kind::Subscribe | Kind::Set => return None,
        })
    }

    /// The shell's words for it: what the audit says of a request refused before its body
    /// was read, and of one whose body adds nothing.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Hello => "connect a shell",
            Kind::Status => "show system status",
            Kind::OpenSession => "open a session",
            Kind::CloseSession => "close a session",
            Kind::Logout => "request system logout",
            Kind::EditLines => "edit",
            Kind::Load => "load",
            Kind::Discard => "discard",
            Kind::Rollback => "rollback",
            Kind::Compare => "show | compare",
            Kind::Commit => "commit",
            Kind::Confirm => "commit confirm",
            Kind::Save => "save (running becomes startup)",
            Kind::History => "show system commit",
            Kind::CommitChanges => "show system commit N",
            Kind::Show => "show",
            Kind::ListKeys => "list keys",
            Kind::Call => "call",
            Kind::Audit => "show system audit",
            Kind::RecentEvents => "show log",
            Kind::WatchEvents => "watch events",
            Kind::ClearStatistics => "clear statistics",
            Kind::Capabilities => "capabilities",
            Kind::Subscribe => "subscribe",
            Kind::Set => "Set",
        }
    }
}

#[cfg(test)]
mod tests;
