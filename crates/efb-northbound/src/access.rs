//! Who may do what: the one place that decides, for the management API (the shell, over
//! the Unix socket or TCP) and for gNMI alike. Roles rank viewer < operator < admin; each
//! operation needs one of them, and a higher one may do it too.
//!
//! | operation                                                  | needs    |
//! |------------------------------------------------------------|----------|
//! | show (configuration, state, history, audit, log), sessions | viewer   |
//! | lookup (where a session goes; changes nothing)             | viewer   |
//! | call (the model's operations: set-bypass)                  | operator |
//! | clear statistics (counters count from zero again)          | operator |
//! | edit a candidate (set, delete, load, rollback)             | admin    |
//! | commit (and gNMI Set), confirm, save                       | admin    |
//! | record another user name than one's own (`--user`)         | admin    |
//! | close another's session (`request system logout`)          | admin    |

use tonic::Status;

use crate::auth::Role;

/// What a client asks to do, as far as permissions go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Reading configuration, state, history, the audit or efbd's recent events; opening a
    /// session.
    Show,
    /// lookup-session: where a session would go.
    Lookup,
    /// An operation of the model that changes state (set-bypass).
    Call,
    /// `clear ... statistics`: counters count from zero again, for every reader.
    Clear,
    /// Changing a candidate: set, delete, load, rollback, discard.
    Edit,
    /// A commit or a commit check (the shell), a Set (gNMI).
    Commit,
    /// Confirming a `commit confirmed`.
    Confirm,
    /// Running becomes startup.
    Save,
    /// Opening a session recorded under another name than the caller's own.
    ActAs,
    /// Closing anyone's session (`request system logout session N`).
    Logout,
}

impl Operation {
    /// The least role that may do it.
    pub fn needs(self) -> Role {
        match self {
            Operation::Show | Operation::Lookup => Role::Viewer,
            Operation::Call | Operation::Clear => Role::Operator,
            Operation::Edit
            | Operation::Commit
            | Operation::Confirm
            | Operation::Save
            | Operation::ActAs
            | Operation::Logout => Role::Admin,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Show => "show",
            Operation::Lookup => "lookup",
            Operation::Call => "call",
            Operation::Clear => "clear statistics",
            Operation::Edit => "configuration edit",
            Operation::Commit => "commit",
            Operation::Confirm => "confirm",
            Operation::Save => "save",
            Operation::ActAs => "recording another user name",
            Operation::Logout => "request system logout",
        }
    }

    /// Whether it changes the configuration or the state (what the audit records even
    /// when it is accepted).
    pub fn changes(self) -> bool {
        matches!(
            self,
            Operation::Call
                | Operation::Clear
                | Operation::Commit
                | Operation::Confirm
                | Operation::Save
                | Operation::Logout
        )
    }
}

fn rank(role: Role) -> u8 {
    match role {
        Role::Viewer => 1,
        Role::Operator => 2,
        Role::Admin => 3,
    }
}

/// A refusal: what was asked, the role it needs, the role the caller has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denied {
    pub operation: Operation,
    pub needs: Role,
    pub role: Option<Role>,
}

impl Denied {
    /// The refusal as people read it: "commit needs the admin role; ada has the viewer
    /// role".
    pub fn message(&self, who: &str) -> String {
        let has = match self.role {
            Some(role) => format!("has the {} role", role.as_str()),
            None => "has no role".to_string(),
        };
        format!(
            "permission denied: {} needs the {} role; {who} {has}",
            self.operation.as_str(),
            self.needs.as_str()
        )
    }

    /// PERMISSION_DENIED with [`Denied::message`].
    pub fn status(&self, who: &str) -> Status {
        Status::permission_denied(self.message(who))
    }
}

/// The decision: may a caller with `role` (none: an account in none of the groups) do
/// `operation`? Every operation of the management API and of gNMI asks here.
pub fn may(role: Option<Role>, operation: Operation) -> Result<(), Denied> {
    let needs = operation.needs();
    match role {
        Some(role) if rank(role) >= rank(needs) => Ok(()),
        _ => Err(Denied {
            operation,
            needs,
            role,
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const ALL: [Operation; 10] = [
        Operation::Show,
        Operation::Lookup,
        Operation::Call,
        Operation::Clear,
        Operation::Edit,
        Operation::Commit,
        Operation::Confirm,
        Operation::Save,
        Operation::ActAs,
        Operation::Logout,
    ];

    fn allowed(role: Option<Role>) -> Vec<Operation> {
        ALL.into_iter()
            .filter(|op| may(role, *op).is_ok())
            .collect()
    }

    #[test]
    fn each_role_may_do_what_the_table_says() {
        assert_eq!(allowed(Some(Role::Admin)), ALL.to_vec());
        assert_eq!(
            allowed(Some(Role::Operator)),
            [
                Operation::Show,
                Operation::Lookup,
                Operation::Call,
                Operation::Clear
            ]
        );
        assert_eq!(
            allowed(Some(Role::Viewer)),
            [Operation::Show, Operation::Lookup]
        );
        assert!(allowed(None).is_empty());
    }

    #[test]
    fn a_refusal_names_the_role_needed_and_the_role_held() {
        let denied = may(Some(Role::Operator), Operation::Commit).unwrap_err();
        assert_eq!(
            denied.message("ada"),
            "permission denied: commit needs the admin role; ada has the operator role"
        );
        let denied = may(Some(Role::Viewer), Operation::Clear).unwrap_err();
        assert_eq!(
            denied.message("vic"),
            "permission denied: clear statistics needs the operator role; vic has the viewer role"
        );
        let status = may(None, Operation::Show).unwrap_err().status("nobody");
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        assert!(
            status
                .message()
                .ends_with("show needs the viewer role; nobody has no role"),
            "{}",
            status.message()
        );
    }
}
