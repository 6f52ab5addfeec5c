//! Budgets of failed password logins ([`Budgets`]), counted by what the failures came from:
//!
//! | budget                      | counts failures         | once spent, for the window   |
//! |-----------------------------|-------------------------|------------------------------|
//! | `failures_per_user_address` | as a user from a peer   | that user from there REFUSED |
//! | `failures_per_address`      | from a peer, any names  | that peer REFUSED            |
//! | `failures_per_user`         | as a user from anywhere | that user's logins SLOWED    |
//! | `failures_total`            | of everyone together    | every password login SLOWED  |
//!
//! A peer is an address (IPv6 per /64: one host usually has the whole prefix). Refusals
//! cost no Argon2 run and stop one address. What counts from anywhere only slows logins
//! down: refusing there let 100 wrong passwords from 10 addresses lock every user out for
//! the window, whereas a slowdown lets a user who types the right password from a new
//! address in after one delay. A slowed login waits `slowdown` before its check, one at a
//! time per user and peer, so a guesser from N addresses gets at most N guesses per delay,
//! each address until its own budgets are spent.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tracing::warn;

/// Keys remembered at most per budget; beyond, the oldest record is forgotten first.
const MAX_PEERS: usize = 4096;
/// Slowed logins waiting at most from one peer (as different users: one per user), and
/// in all: a peer cannot take every place, and the places are bounded.
const MAX_SLOWED_PER_PEER: usize = 8;
const MAX_SLOWED: usize = 1024;

pub(crate) use crate::listen::Peer;

/// How logins are bounded: the one place of these numbers (efbd's settings default to
/// [`LoginLimits::default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginLimits {
    /// Argon2 checks running at once, each with working memory of its own (the hash's
    /// `m`, 19 MiB for standard hashes), allocated once and reused.
    pub checks: usize,
    /// Failed logins as one user name from one peer within `window` after which logins
    /// as that user from that peer are refused, without a check, for `window`; 0: no
    /// limit.
    pub failures_per_user_address: u32,
    /// Failed logins from one peer, whatever the names, after which every login from it is
    /// refused for `window` (a peer guessing names); 0: no limit.
    pub failures_per_address: u32,
    /// Failed logins as one user name from anywhere after which that user's logins are
    /// slowed (each waits `slowdown`) for `window`; 0: no limit.
    pub failures_per_user: u32,
    /// The same for all password logins together: past it every password login is slowed.
    pub failures_total: u32,
    pub window: Duration,
    /// How long a slowed login waits before its check; zero: not slowed.
    pub slowdown: Duration,
}

impl Default for LoginLimits {
    fn default() -> LoginLimits {
        LoginLimits {
            checks: default_checks(),
            failures_per_user_address: 5,
            failures_per_address: 20,
            failures_per_user: 20,
            failures_total: 100,
            window: Duration::from_secs(60),
            slowdown: Duration::from_secs(1),
        }
    }
}

/// One check per CPU, at most 4: more would not be faster, only hold more memory.
pub fn default_checks() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// Why a login is refused before its check (RESOURCE_EXHAUSTED); each names its setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginRefused {
    #[error(
        "too many failed logins as {user} from {peer} ({limit} within {window} s, \
         gnmi.login_failures_per_user_address and gnmi.login_window_s): logins as this user \
         from there are refused; retry in {retry} s"
    )]
    UserAtPeer {
        user: String,
        peer: Peer,
        limit: u32,
        window: u64,
        retry: u64,
    },
    #[error(
        "too many failed logins from {peer} ({limit} within {window} s, \
         gnmi.login_failures_per_address and gnmi.login_window_s): logins from there are \
         refused; retry in {retry} s"
    )]
    Peer {
        peer: Peer,
        limit: u32,
        window: u64,
        retry: u64,
    },
    #[error("a login as {user} from {peer} is waiting already: {slowed}; send one at a time")]
    AlreadyWaiting {
        user: String,
        peer: Peer,
        slowed: Slowed,
    },
    #[error("{waiting} logins from {peer} are waiting already: {slowed}; send fewer at a time")]
    PeerWaiting {
        peer: Peer,
        waiting: usize,
        slowed: Slowed,
    },
    #[error("{waiting} slowed logins are waiting already: {slowed}; retry in a few seconds")]
    TooManyWaiting { waiting: usize, slowed: Slowed },
}

/// Why logins are slowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slowed {
    User {
        user: String,
        limit: u32,
        window: u64,
        delay_ms: u128,
    },
    Everyone {
        limit: u32,
        window: u64,
        delay_ms: u128,
    },
}

impl std::fmt::Display for Slowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slowed::User {
                user,
                limit,
                window,
                delay_ms,
            } => write!(
                f,
                "logins as {user} are slowed ({limit} failed within {window} s, \
                 gnmi.login_failures_per_user): each waits {delay_ms} ms (gnmi.login_slowdown_ms)"
            ),
            Slowed::Everyone {
                limit,
                window,
                delay_ms,
            } => write!(
                f,
                "password logins are slowed ({limit} failed within {window} s on this efbd, \
                 gnmi.login_failures_total): each waits {delay_ms} ms (gnmi.login_slowdown_ms)"
            ),
        }
    }
}

/// A user name as the budgets key it: a keyed digest, so that a name of 16 KiB (a
/// header's most) takes no more room than a short one, and nobody outside efbd can make
/// two names collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Name([u8; 16]);

/// The budgets of failed logins, and the slowed logins waiting.
pub(crate) struct Budgets {
    limits: LoginLimits,
    /// Random per process: see [`Name`].
    key: [u8; 32],
    user_at_peer: Failures<(Name, Peer)>,
    peer: Failures<Peer>,
    user: Failures<Name>,
    all: Failures<()>,
    slowed: Mutex<Waiting>,
}

/// Slowed logins waiting, by peer: one per user name.
#[derive(Default)]
struct Waiting {
    by_peer: HashMap<Peer, Vec<Name>>,
    count: usize,
}

impl Budgets {
    pub fn new(limits: LoginLimits) -> Budgets {
        let window = limits.window;
        Budgets {
            key: rand::random(),
            user_at_peer: Failures::new(limits.failures_per_user_address, window),
            peer: Failures::new(limits.failures_per_address, window),
            user: Failures::new(limits.failures_per_user, window),
            all: Failures::new(limits.failures_total, window),
            slowed: Mutex::new(Waiting::default()),
            limits,
        }
    }

    fn name(&self, user: &str) -> Name {
        let digest = Sha256::new()
            .chain_update(self.key)
            .chain_update(user.as_bytes())
            .finalize();
        let mut name = [0u8; 16];
        name.copy_from_slice(&digest[..16]);
        Name(name)
    }

    /// Why a login as `user` from `peer` is refused before its check: a budget that
    /// refuses is spent.
    pub fn refusal(&self, user: &str, peer: Peer) -> Option<LoginRefused> {
        let window = self.limits.window.as_secs();
        let retry = |left: Duration| left.as_secs().max(1);
        if let Some(left) = self.user_at_peer.spent(&(self.name(user), peer)) {
            return Some(LoginRefused::UserAtPeer {
                user: shown(user),
                peer,
                limit: self.limits.failures_per_user_address,
                window,
                retry: retry(left),
            });
        }
        let left = self.peer.spent(&peer)?;
        Some(LoginRefused::Peer {
            peer,
            limit: self.limits.failures_per_address,
            window,
            retry: retry(left),
        })
    }

    /// Why logins as `user` are slowed, if they are.
    pub fn slowed(&self, user: &str) -> Option<Slowed> {
        let (window, delay_ms) = (
            self.limits.window.as_secs(),
            self.limits.slowdown.as_millis(),
        );
        if delay_ms == 0 {
            return None;
        }
        if self.user.spent(&self.name(user)).is_some() {
            return Some(Slowed::User {
                user: shown(user),
                limit: self.limits.failures_per_user,
                window,
                delay_ms,
            });
        }
        self.all.spent(&()).map(|_| Slowed::Everyone {
            limit: self.limits.failures_total,
            window,
            delay_ms,
        })
    }

    /// Waits the slowdown of a login as `user` from `peer`, slowed for `why`: refused at
    /// once when that peer has a login as that user waiting already (so that each peer
    /// gets one guess at a user per delay, however many it sends), or too many waiting.
    pub async fn slow_down(&self, user: &str, peer: Peer, why: Slowed) -> Result<(), LoginRefused> {
        let _place = self.take_place(self.name(user), user, peer, why)?;
        tokio::time::sleep(self.limits.slowdown).await;
        Ok(())
    }

    fn take_place(
        &self,
        name: Name,
        user: &str,
        peer: Peer,
        slowed: Slowed,
    ) -> Result<Place<'_>, LoginRefused> {
        let mut waiting = self.slowed.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.count >= MAX_SLOWED {
            let waiting = waiting.count;
            return Err(LoginRefused::TooManyWaiting { waiting, slowed });
        }
        let count = waiting.count;
        let names = waiting.by_peer.entry(peer).or_default();
        if names.contains(&name) {
            let user = shown(user);
            return Err(LoginRefused::AlreadyWaiting { user, peer, slowed });
        }
        if names.len() >= MAX_SLOWED_PER_PEER {
            let waiting = names.len();
            return Err(LoginRefused::PeerWaiting {
                peer,
                waiting,
                slowed,
            });
        }
        names.push(name);
        waiting.count = count + 1;
        Ok(Place {
            budgets: self,
            peer,
            name,
        })
    }

    fn leave(&self, peer: Peer, name: Name) {
        let mut waiting = self.slowed.lock().unwrap_or_else(|e| e.into_inner());
        let Some(names) = waiting.by_peer.get_mut(&peer) else {
            return;
        };
        names.retain(|n| *n != name);
        if names.is_empty() {
            waiting.by_peer.remove(&peer);
        }
        waiting.count = waiting.count.saturating_sub(1);
    }

    /// Counts and logs a failed login (the budgets it spent, once each).
    pub fn failed(&self, user: &str, peer: Peer) {
        let name = self.name(user);
        let at_peer = self.user_at_peer.failed((name, peer));
        let from_peer = self.peer.failed(peer);
        let as_user = self.user.failed(name);
        let all = self.all.failed(());
        let (user, window) = (shown(user), self.limits.window.as_secs());
        warn!(%user, %peer, failures = at_peer.count, "gNMI login failed: wrong username or password");
        if at_peer.spent_now {
            warn!(%user, %peer, failures = at_peer.count, refused_for_secs = window, "gNMI logins as this user from this peer refused for a while: too many failures (gnmi.login_failures_per_user_address)");
        }
        if from_peer.spent_now {
            warn!(%peer, failures = from_peer.count, refused_for_secs = window, "gNMI logins from this peer refused for a while: too many failures (gnmi.login_failures_per_address)");
        }
        let slowdown_ms = self.limits.slowdown.as_millis();
        if as_user.spent_now {
            warn!(%user, failures = as_user.count, slowed_for_secs = window, slowdown_ms, "gNMI logins as this user slowed for a while: too many failures (gnmi.login_failures_per_user)");
        }
        if all.spent_now {
            warn!(
                failures = all.count,
                slowed_for_secs = window,
                slowdown_ms,
                "gNMI password logins slowed for a while: too many failures in all (gnmi.login_failures_total)"
            );
        }
    }

    /// A login as `user` from `peer` succeeded: that pair starts afresh. The peer's,
    /// the user's and everyone's failures stay: one account's right password must not
    /// renew a peer's budget for guessing others, nor the user's success end the slowdown
    /// of an attack that goes on.
    pub fn succeeded(&self, user: &str, peer: Peer) {
        self.user_at_peer.forget(&(self.name(user), peer));
    }
}

/// A place among the slowed logins, left when dropped (also when the call is dropped).
struct Place<'a> {
    budgets: &'a Budgets,
    peer: Peer,
    name: Name,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.budgets.leave(self.peer, self.name);
    }
}

/// A user name as logged and as messages show it: quoted and escaped, and cut (a header
/// may hold 16 KiB).
pub(crate) fn shown(user: &str) -> String {
    let cut: String = user.chars().take(64).collect();
    let more = if cut.len() < user.len() { "..." } else { "" };
    format!("{cut:?}{more}")
}

struct Record {
    count: u32,
    first: Instant,
    spent_until: Option<Instant>,
}

impl Record {
    fn relevant(&self, now: Instant, window: Duration) -> bool {
        self.first + window > now || self.spent_until.is_some_and(|b| b > now)
    }
}

/// Failures counted per key: after `limit` within `window`, the key's budget is spent for
/// `window` (what that means is the caller's: a refusal or a slowdown).
pub(crate) struct Failures<K> {
    /// 0: no limit.
    limit: u32,
    window: Duration,
    records: Mutex<HashMap<K, Record>>,
}

/// One failure, as counted.
pub(crate) struct Failure {
    pub count: u32,
    /// This failure spent the budget.
    pub spent_now: bool,
}

impl<K: Hash + Eq + Clone> Failures<K> {
    pub fn new(limit: u32, window: Duration) -> Failures<K> {
        Failures {
            limit,
            window,
            records: Mutex::new(HashMap::new()),
        }
    }

    /// How long the key's budget is still spent, if it is.
    pub fn spent(&self, key: &K) -> Option<Duration> {
        let now = Instant::now();
        let records = self.records.lock().ok()?;
        let until = records.get(key)?.spent_until?;
        (until > now).then(|| until - now)
    }

    pub fn failed(&self, key: K) -> Failure {
        let now = Instant::now();
        let Ok(mut records) = self.records.lock() else {
            return Failure {
                count: 0,
                spent_now: false,
            };
        };
        if !records.contains_key(&key) && records.len() >= MAX_PEERS {
            make_room(&mut records, now, self.window);
        }
        let fresh = || Record {
            count: 0,
            first: now,
            spent_until: None,
        };
        let record = records.entry(key).or_insert_with(fresh);
        if !record.relevant(now, self.window) {
            *record = fresh();
        }
        record.count += 1;
        let reached = self.limit > 0 && record.count >= self.limit && record.spent_until.is_none();
        if reached {
            record.spent_until = Some(now + self.window);
        }
        Failure {
            count: record.count,
            spent_now: reached,
        }
    }

    /// The key starts afresh.
    pub fn forget(&self, key: &K) {
        if let Ok(mut records) = self.records.lock() {
            records.remove(key);
        }
    }
}

fn make_room<K: Hash + Eq + Clone>(
    records: &mut HashMap<K, Record>,
    now: Instant,
    window: Duration,
) {
    records.retain(|_, r| r.relevant(now, window));
    if records.len() >= MAX_PEERS
        && let Some(oldest) = records
            .iter()
            .min_by_key(|(_, r)| r.first)
            .map(|(k, _)| k.clone())
    {
        records.remove(&oldest);
    }
}

#[cfg(test)]
mod tests;
