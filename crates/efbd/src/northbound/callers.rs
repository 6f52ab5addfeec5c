//! Who calls the management API. Over the Unix socket the kernel says (SO_PEERCRED: the
//! peer's uid and pid), and the account's groups give the role: the admin, operator and
//! viewer groups of the settings (`efb-admin`, `efb-operator`, `efb-viewer`); root and the
//! account efbd runs as are admin (they own its files anyway); an account in none of the
//! groups has no role. Over TCP, the users file decides (password or client certificate),
//! as for gNMI.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use efb_datastore::Holder;
use efb_northbound::access::{self, Operation};
use efb_northbound::audit::{self, Audit, Kind, Record};
use efb_northbound::caller::Caller;
use efb_northbound::listen::ConnInfo;
use efb_northbound::{Role, Users};
use nix::unistd::{Gid, Group, Uid, User, getgrouplist};
use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Status};

use crate::settings::Groups;

/// How long an account's role is remembered: group changes take effect within this.
const REMEMBERED: Duration = Duration::from_secs(5);

/// Accounts remembered at most (each entry is small; the bound keeps a flood of uids from
/// growing it).
const MAX_REMEMBERED: usize = 1024;

#[derive(Clone, Debug)]
struct Account {
    name: String,
    role: Option<Role>,
}

/// Identifies callers; remembers accounts' roles for a few seconds (the group database may
/// be a directory server).
pub struct Callers {
    groups: Groups,
    own_uid: u32,
    users: Option<Arc<Users>>,
    accounts: Mutex<HashMap<u32, (Instant, Account)>>,
    /// Where a role that changed is recorded.
    audit: Audit,
}

impl Callers {
    /// `users`: the users file, for TCP; none when TCP is off.
    pub fn new(groups: Groups, users: Option<Arc<Users>>) -> Callers {
        Callers {
            groups,
            own_uid: Uid::effective().as_raw(),
            users,
            accounts: Mutex::new(HashMap::new()),
            audit: Audit::default(),
        }
    }

    /// Roles that change (a Unix account added to or removed from a group) are recorded in
    /// `audit` when efbd finds out.
    pub fn with_audit(mut self, audit: Audit) -> Callers {
        self.audit = audit;
        self
    }

    /// Completes when `caller` may no longer do `operation`: a Unix account that lost its
    /// role, found out as often as roles are looked up again. Never for a user of the
    /// users file, which efbd reads once at start.
    pub async fn until_refused(&self, caller: &Caller, operation: Operation) {
        let Some(uid) = caller.uid else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(REMEMBERED).await;
            if access::may(self.account(uid).await.role, operation).is_err() {
                return;
            }
        }
    }

    /// Who sent `request` as far as the kernel tells, without a login: the Unix account;
    /// None over TCP.
    pub async fn known_without_login<T>(&self, request: &Request<T>) -> Option<Caller> {
        let info = request.extensions().get::<ConnInfo<UdsConnectInfo>>()?;
        let cred = info.transport.peer_cred?;
        let account = self.account(cred.uid()).await;
        Some(unix_caller(cred, account))
    }

    /// Who sent `request`. UNAUTHENTICATED when nobody can be told (a TCP login that
    /// failed, a socket without credentials).
    pub async fn identify<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        if let Some(info) = request.extensions().get::<ConnInfo<UdsConnectInfo>>() {
            let cred = info.transport.peer_cred.ok_or_else(|| {
                Status::unauthenticated("the kernel did not say who is connected (SO_PEERCRED)")
            })?;
            let account = self.account(cred.uid()).await;
            return Ok(unix_caller(cred, account));
        }
        let users = self.users.as_ref().ok_or_else(|| {
            Status::unauthenticated("this connection is neither the Unix socket nor TCP with TLS")
        })?;
        let login = users.identify(request).await?;
        let peer = login
            .peer
            .map_or_else(|| "?".to_string(), |p| p.to_string());
        let by = if login.certificate {
            "certificate"
        } else {
            "password"
        };
        Ok(Caller::logged_in(login, format!("TCP {peer} ({by})")))
    }

    /// What a refusal adds for a Unix caller: where roles come from.
    pub fn hint(&self, caller: &Caller) -> String {
        if !caller.unix() {
            return String::new();
        }
        let g = &self.groups;
        format!(
            " (efbd gives roles by Unix group: {} admin, {} operator, {} viewer)",
            g.admin, g.operator, g.viewer
        )
    }

    async fn account(&self, uid: u32) -> Account {
        if let Some(known) = self.remembered(uid) {
            return known;
        }
        let (groups, own_uid) = (self.groups.clone(), self.own_uid);
        // The group database may be a directory server: off the async threads.
        let account = tokio::task::spawn_blocking(move || lookup(uid, &groups, own_uid))
            .await
            .unwrap_or_else(|_| Account {
                name: format!("uid {uid}"),
                role: None,
            });
        let before = self.accounts.lock().ok().and_then(|mut accounts| {
            if accounts.len() >= MAX_REMEMBERED {
                accounts.clear();
            }
            accounts.insert(uid, (Instant::now(), account.clone()))
        });
        if let Some((_, before)) = before
            && before.role != account.role
        {
            self.role_changed(uid, &before, &account);
        }
        account
    }

    fn role_changed(&self, uid: u32, before: &Account, now: &Account) {
        let role = |a: &Account| a.role.map_or("none", Role::as_str);
        self.audit.record(Record {
            time_ms: audit::now_ms(),
            user: now.name.clone(),
            role: now.role,
            from: format!("Unix groups, uid {uid}"),
            what: format!(
                "role of {} changed: {} -> {}",
                now.name,
                role(before),
                role(now)
            ),
            accepted: true,
            result: "from now on".to_string(),
            kind: Kind::Change,
        });
    }

    fn remembered(&self, uid: u32) -> Option<Account> {
        let accounts = self.accounts.lock().ok()?;
        let (at, account) = accounts.get(&uid)?;
        (at.elapsed() < REMEMBERED).then(|| account.clone())
    }
}

/// The caller of the Unix socket the kernel names, with its account.
fn unix_caller(cred: tokio::net::unix::UCred, account: Account) -> Caller {
    let pid = cred
        .pid()
        .map_or_else(|| "?".to_string(), |p| p.to_string());
    Caller {
        name: account.name,
        role: account.role,
        from: format!("unix socket, uid {}, pid {pid}", cred.uid()),
        uid: Some(cred.uid()),
        holder: Holder::new(format!("uid {}", cred.uid())),
    }
}

/// The account's name and role: root and efbd's own account are admin; otherwise the
/// highest role among the groups it belongs to (primary or supplementary).
fn lookup(uid: u32, groups: &Groups, own_uid: u32) -> Account {
    let user = User::from_uid(Uid::from_raw(uid)).ok().flatten();
    let name = user
        .as_ref()
        .map_or_else(|| format!("uid {uid}"), |u| u.name.clone());
    if uid == 0 || uid == own_uid {
        return Account {
            name,
            role: Some(Role::Admin),
        };
    }
    let Some(user) = user else {
        return Account { name, role: None };
    };
    let member_of = CString::new(user.name.clone())
        .ok()
        .and_then(|n| getgrouplist(&n, user.gid).ok())
        .unwrap_or_else(|| vec![user.gid]);
    let role = [
        (Role::Admin, &groups.admin),
        (Role::Operator, &groups.operator),
        (Role::Viewer, &groups.viewer),
    ]
    .into_iter()
    .find(|(_, group)| gid(group).is_some_and(|g| member_of.contains(&g)))
    .map(|(role, _)| role);
    Account { name, role }
}

fn gid(group: &str) -> Option<Gid> {
    Group::from_name(group).ok().flatten().map(|g| g.gid)
}

/// The groups of the settings that do not exist: nobody has their role (said at start).
pub fn missing_groups(groups: &Groups) -> Vec<String> {
    [&groups.admin, &groups.operator, &groups.viewer]
        .into_iter()
        .filter(|g| gid(g).is_none())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_efbds_own_account_are_admin() {
        let groups = Groups::default();
        let root = lookup(0, &groups, 12345);
        assert_eq!((root.name.as_str(), root.role), ("root", Some(Role::Admin)));
        let own = lookup(54321, &groups, 54321);
        assert_eq!(own.role, Some(Role::Admin));
        assert_eq!(own.name, "uid 54321", "no passwd entry: named by its uid");
    }

    #[test]
    fn an_account_in_no_group_has_no_role() {
        let groups = Groups {
            admin: "no-such-group-a".into(),
            operator: "no-such-group-o".into(),
            viewer: "no-such-group-v".into(),
        };
        // nobody (65534) exists on Linux systems; in none of these groups.
        assert_eq!(lookup(65534, &groups, 0).role, None);
        assert_eq!(missing_groups(&groups).len(), 3);
    }
}
