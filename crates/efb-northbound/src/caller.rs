//! Who calls, whatever the door: the one caller every request carries once its head is
//! judged ([`crate::judge`]), for access, the audit and the sessions it opens.

use efb_datastore::Holder;

use crate::auth::{Login, Role};

/// A caller of the management API or of gNMI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The Unix account, or the user of the users file.
    pub name: String,
    /// None: an account in none of the groups.
    pub role: Option<Role>,
    /// Where it came from, as people read it: "unix socket, uid 1001, pid 4242", "TCP
    /// 10.0.0.1:5000 (password)", "gNMI 10.0.0.1:5000".
    pub from: String,
    /// The Unix account's uid (the Unix socket); none over TCP.
    pub uid: Option<u32>,
    /// Who holds the sessions this caller opens: the Unix account by uid, or the user of
    /// the users file.
    pub holder: Holder,
}

impl Caller {
    /// A user of the users file, logged in, coming `from` there.
    pub fn logged_in(login: Login, from: String) -> Caller {
        Caller {
            holder: Holder::new(format!("user {}", login.user)),
            name: login.user,
            role: Some(login.role),
            from,
            uid: None,
        }
    }

    /// Identified by the kernel (the Unix socket).
    pub fn unix(&self) -> bool {
        self.uid.is_some()
    }

    pub fn is_admin(&self) -> bool {
        self.role == Some(Role::Admin)
    }

    /// The role's name, "none" without one.
    pub fn role_name(&self) -> &'static str {
        self.role.map_or("none", Role::as_str)
    }
}
