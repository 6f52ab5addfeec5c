//! One memory budget for what a daemon holds for its clients, whatever the door (the
//! management API on its Unix socket or TCP, gNMI): the bytes of requests being received,
//! what they decompress and decode to, the replies being built and sent, subscriptions'
//! queues. Each holding is counted against three limits at once: all clients together, the
//! account that asks (a user, or before login the peer's address or Unix account), and the
//! connection it came on; of the whole, the last `kept_for_admins` bytes only admins may
//! take, so that no crowd of viewers keeps an admin out. A holding that would pass a limit
//! is refused before anything is built ([`OverBudget`], RESOURCE_EXHAUSTED naming the
//! setting); what is held is given back when its [`Held`] is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::listen::Peer;

const MIB: usize = 1024 * 1024;

/// The limits, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// All clients together.
    pub total: usize,
    /// One account (its connections and requests together).
    pub per_account: usize,
    /// One connection.
    pub per_connection: usize,
    /// Of `total`, what only admins may take.
    pub kept_for_admins: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            total: 96 * MIB,
            per_account: 48 * MIB,
            per_connection: 48 * MIB,
            kept_for_admins: 32 * MIB,
        }
    }
}

/// Who holds: the account (a user once identified, the peer before) and the connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Account {
    /// Not identified yet: its peer (an address, an IPv6 /64, a Unix account).
    Peer(Peer),
    User(String),
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Account::Peer(peer) => write!(f, "{peer} (not logged in)"),
            Account::User(user) => f.write_str(&efb_yang::text::escaped(user)),
        }
    }
}

/// The holder of some bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Holder {
    pub account: Account,
    /// The connection's number in its listener; none for a request that came another way.
    pub connection: Option<(&'static str, u64)>,
    pub admin: bool,
}

/// Which limit a holding would pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Total,
    KeptForAdmins,
    Account,
    Connection,
}

impl Limit {
    /// The setting that says it.
    pub fn setting(self) -> &'static str {
        match self {
            Limit::Total => "memory.clients_mib",
            Limit::KeptForAdmins => "memory.kept_for_admins_mib",
            Limit::Account => "memory.per_account_mib",
            Limit::Connection => "memory.per_connection_mib",
        }
    }
}

/// A holding refused: what it needed, what is held, and the limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct OverBudget {
    pub limit: Limit,
    pub wanted: usize,
    pub held: usize,
    pub allowed: usize,
    pub holder: String,
}

impl OverBudget {
    fn message(&self) -> String {
        let mib = |bytes: usize| format!("{:.1} MiB", bytes as f64 / MIB as f64);
        let setting = self.limit.setting();
        if self.wanted > self.allowed {
            return format!(
                "efbd's memory for clients: this needs {}, more than the {} {setting} allows in all; ask for less",
                mib(self.wanted),
                mib(self.allowed),
            );
        }
        let whose = match self.limit {
            Limit::Total => "of all clients".to_string(),
            Limit::KeptForAdmins => "of clients who are not admins".to_string(),
            Limit::Account => format!("of {}", self.holder),
            Limit::Connection => "of this connection".to_string(),
        };
        format!(
            "efbd's memory for clients is spent: this needs {} more, and requests and replies {whose} hold {} of the {} {setting} allows; retry when they are done, or ask for less",
            mib(self.wanted),
            mib(self.held),
            mib(self.allowed),
        )
    }

    pub fn status(&self) -> tonic::Status {
        tonic::Status::resource_exhausted(self.to_string())
    }
}

impl From<OverBudget> for tonic::Status {
    fn from(over: OverBudget) -> tonic::Status {
        over.status()
    }
}

/// The budget of one daemon (all its servers share it).
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    total: usize,
    /// Held by callers who are not admins.
    others: usize,
    by_account: HashMap<Account, usize>,
    by_connection: HashMap<(&'static str, u64), usize>,
    /// The most held at once, for the metrics and the tests.
    peak: usize,
}

impl Budget {
    pub fn new(limits: Limits) -> Arc<Budget> {
        Arc::new(Budget {
            limits,
            state: Mutex::default(),
        })
    }

    /// A budget that refuses nothing, for servers run without one (tests).
    pub fn unlimited() -> Arc<Budget> {
        Budget::new(Limits {
            total: usize::MAX,
            per_account: usize::MAX,
            per_connection: usize::MAX,
            kept_for_admins: 0,
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Bytes held now, and the most held at once.
    pub fn held(&self) -> (usize, usize) {
        let state = self.state();
        (state.total, state.peak)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Nothing held yet for `holder`: a handle to hold with.
    pub fn holding(self: &Arc<Self>, holder: Holder) -> Held {
        Held {
            budget: self.clone(),
            holder: Arc::new(holder),
            bytes: 0,
        }
    }

    fn take(&self, holder: &Holder, bytes: usize, forced: bool) -> Result<(), OverBudget> {
        let mut state = self.state();
        if !forced {
            self.check(&state, holder, bytes)?;
        }
        state.total = state.total.saturating_add(bytes);
        state.peak = state.peak.max(state.total);
        if !holder.admin {
            state.others = state.others.saturating_add(bytes);
        }
        *state.by_account.entry(holder.account.clone()).or_default() += bytes;
        if let Some(connection) = holder.connection {
            *state.by_connection.entry(connection).or_default() += bytes;
        }
        Ok(())
    }

    fn check(&self, state: &State, holder: &Holder, bytes: usize) -> Result<(), OverBudget> {
        let limits = &self.limits;
        let refuse = |limit, held: usize, allowed| OverBudget {
            limit,
            wanted: bytes,
            held,
            allowed,
            holder: holder.account.to_string(),
        };
        let fits = |held: usize, allowed: usize| held.saturating_add(bytes) <= allowed;
        if !fits(state.total, limits.total) {
            return Err(refuse(Limit::Total, state.total, limits.total));
        }
        let for_others = limits.total.saturating_sub(limits.kept_for_admins);
        if !holder.admin && !fits(state.others, for_others) {
            return Err(refuse(Limit::KeptForAdmins, state.others, for_others));
        }
        let of_account = state.by_account.get(&holder.account).copied().unwrap_or(0);
        if !fits(of_account, limits.per_account) {
            return Err(refuse(Limit::Account, of_account, limits.per_account));
        }
        if let Some(connection) = holder.connection {
            let of_connection = state.by_connection.get(&connection).copied().unwrap_or(0);
            if !fits(of_connection, limits.per_connection) {
                return Err(refuse(
                    Limit::Connection,
                    of_connection,
                    limits.per_connection,
                ));
            }
        }
        Ok(())
    }

    fn give_back(&self, holder: &Holder, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut state = self.state();
        state.total = state.total.saturating_sub(bytes);
        if !holder.admin {
            state.others = state.others.saturating_sub(bytes);
        }
        release(&mut state.by_account, &holder.account, bytes);
        if let Some(connection) = holder.connection {
            release(&mut state.by_connection, &connection, bytes);
        }
    }
}

fn release<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K, bytes: usize) {
    if let Some(held) = map.get_mut(key) {
        *held = held.saturating_sub(bytes);
        if *held == 0 {
            map.remove(key);
        }
    }
}

/// Bytes held for one holder, given back when this is dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    holder: Arc<Holder>,
    bytes: usize,
}

impl Held {
    /// Holds `bytes` more, unless that would pass a limit.
    pub fn grow(&mut self, bytes: usize) -> Result<(), OverBudget> {
        self.budget.take(&self.holder, bytes, false)?;
        self.bytes += bytes;
        Ok(())
    }

    /// Holds `bytes` more whatever the limits say: for what exists already (a reply's
    /// frame on its way out), so that what comes next is judged with it counted.
    pub fn grow_anyway(&mut self, bytes: usize) {
        let _ = self.budget.take(&self.holder, bytes, true);
        self.bytes += bytes;
    }

    /// Gives back `bytes` (at most what is held).
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.budget.give_back(&self.holder, bytes);
        self.bytes -= bytes;
    }

    /// A new, empty holding of the same holder (for something that goes its own way, such
    /// as a reply waiting in a subscription's queue).
    pub fn sibling(&self) -> Held {
        Held {
            budget: self.budget.clone(),
            holder: self.holder.clone(),
            bytes: 0,
        }
    }

    /// A new holding of `bytes` for the same holder.
    pub fn split(&self, bytes: usize) -> Result<Held, OverBudget> {
        let mut held = self.sibling();
        held.grow(bytes)?;
        Ok(held)
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(&self.holder, self.bytes);
    }
}

/// What a request holds, shared by the request's body (its messages), its handler (the
/// reply it builds) and the response's body (until the reply has left): put in the
/// request's extensions by [`crate::guard::Guard`].
#[derive(Clone, Debug)]
pub struct Spend(Arc<Mutex<Held>>);

impl Spend {
    pub fn new(held: Held) -> Spend {
        Spend(Arc::new(Mutex::new(held)))
    }

    /// The request's spending, if it came through a guard with a budget.
    pub fn of<T>(request: &tonic::Request<T>) -> Option<Spend> {
        request.extensions().get::<Spend>().cloned()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `bytes` more until the request has ended.
    pub fn take(&self, bytes: usize) -> Result<(), OverBudget> {
        self.held().grow(bytes)
    }

    pub(crate) fn take_anyway(&self, bytes: usize) {
        self.held().grow_anyway(bytes);
    }

    pub(crate) fn give_back(&self, bytes: usize) {
        self.held().shrink(bytes);
    }

    /// A holding of `bytes` of its own, for the same holder (given back when dropped).
    pub fn split(&self, bytes: usize) -> Result<Held, OverBudget> {
        self.held().split(bytes)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn holder(user: &str, connection: u64, admin: bool) -> Holder {
        Holder {
            account: Account::User(user.into()),
            connection: Some(("test", connection)),
            admin,
        }
    }

    fn budget() -> Arc<Budget> {
        Budget::new(Limits {
            total: 100,
            per_account: 50,
            per_connection: 30,
            kept_for_admins: 20,
        })
    }

    #[test]
    fn each_limit_refuses_and_names_its_setting() {
        let budget = budget();
        let mut a = budget.holding(holder("vic", 1, false));
        a.grow(30).unwrap();
        let refused = a.grow(1).unwrap_err();
        assert_eq!(refused.limit, Limit::Connection);
        let mut b = budget.holding(holder("vic", 2, false));
        b.grow(20).unwrap();
        assert_eq!(b.grow(1).unwrap_err().limit, Limit::Account);
        let mut c = budget.holding(holder("otto", 3, false));
        c.grow(30).unwrap();
        let refused = c.grow(1).unwrap_err();
        assert_eq!(refused.limit, Limit::KeptForAdmins);
        assert!(
            refused.to_string().contains("memory.kept_for_admins_mib"),
            "{refused}"
        );
        // The admin takes what is kept, up to the whole.
        let mut admin = budget.holding(holder("ada", 4, true));
        admin.grow(20).unwrap();
        assert_eq!(admin.grow(1).unwrap_err().limit, Limit::Total);
        assert_eq!(budget.held(), (100, 100));
    }

    #[test]
    fn what_is_held_comes_back_when_dropped_or_shrunk() {
        let budget = budget();
        let mut a = budget.holding(holder("vic", 1, false));
        a.grow(30).unwrap();
        a.shrink(10);
        a.grow(10).unwrap();
        let split = a.split(0).unwrap();
        drop(a);
        assert_eq!(budget.held().0, 0);
        drop(split);
        let mut again = budget.holding(holder("vic", 1, false));
        again.grow(30).unwrap();
        assert!(budget.state().by_account.len() == 1);
        drop(again);
        assert!(budget.state().by_account.is_empty() && budget.state().by_connection.is_empty());
        assert_eq!(budget.held(), (0, 30));
    }

    #[test]
    fn what_exists_already_is_counted_over_the_limit_and_holds_the_rest_back() {
        let budget = budget();
        let mut a = budget.holding(holder("vic", 1, false));
        a.grow_anyway(40);
        assert_eq!(a.grow(1).unwrap_err().limit, Limit::Connection);
        let mut other = budget.holding(holder("vic", 2, false));
        assert_eq!(other.grow(11).unwrap_err().limit, Limit::Account);
    }
}
