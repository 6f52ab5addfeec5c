//! Who may do what over gNMI: users from a TOML file (name, Argon2id password hash as a PHC
//! string, role), the username and password every call carries in its metadata (as pygnmi
//! and gnmic send them), and roles:
//!
//! | role     | Capabilities, Get, Subscribe | Set |
//! |----------|------------------------------|-----|
//! | admin    | yes                          | yes |
//! | operator | yes                          | no  |
//! | viewer   | yes                          | no  |
//!
//! (decided by [`crate::access::may`], as for the management API; the operator role also
//! runs the model's RPCs, which gNMI does not carry). With a client CA configured, a
//! client certificate whose subject CN is a user logs in as that user without a password.
//!
//! Argon2id is slow on purpose; a password that was checked once is remembered as a keyed
//! digest, so later calls of a client cost a hash, not an Argon2 run. Argon2 runs are
//! bounded (see [`crate::argon`]): a few at a time, in memory allocated once. A name that
//! is not a user costs the same Argon2 run against a decoy hash, so refusal times do not
//! tell which names exist. Failed logins are logged (warn, with the user and the peer) and
//! counted against budgets ([`crate::login`]): past those of a user at an address and of
//! an address, logins from there are refused at once for a while; past those of a user
//! from anywhere and of everyone, logins are slowed, not refused, so that guessers cannot
//! lock a user out. Client certificates never meet these budgets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};
use tracing::{debug, warn};

use crate::argon::{Checked, Checker, HashError, Stored};
use crate::listen::ConnHandle;
use crate::login::{Budgets, Peer, shown};

pub use crate::argon::{Cost, HashingFailed, hash_password};
pub use crate::login::{LoginLimits, LoginRefused, Slowed, default_checks};

/// Password checks waiting for their turn at most; more are refused at once.
const MAX_WAITING: usize = 1024;

/// What a user may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Operator,
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Viewer => "viewer",
        }
    }
}

/// A user of the users file, logged in (a password or a client certificate): what a door
/// makes its [`crate::caller::Caller`] from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub role: Role,
    /// The client's address, when known.
    pub peer: Option<SocketAddr>,
    /// Identified by a client certificate (mTLS) rather than a password.
    pub certificate: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Invalid {
        path: String,
        source: UsersFileError,
    },
    /// Whoever may write the file decides who logs in: it must be root's or efbd's alone.
    #[error("gnmi.users (--gnmi-users): {0}")]
    Untrusted(efb_datastore::files::FileError),
}

/// What is wrong in a users file's text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UsersFileError {
    /// Not TOML, or not the file's shape (an unknown role, a missing field).
    #[error("{0}")]
    Toml(String),
    #[error("user {name}: {message}")]
    BadName { name: String, message: String },
    #[error("user {0} is listed twice")]
    Twice(String),
    #[error("user {user}: {source}")]
    Password { user: String, source: HashError },
}

/// The users file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    #[serde(default)]
    user: Vec<UserEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    name: String,
    /// An Argon2 PHC string (`efbd --hash-password` prints one).
    password: String,
    role: Role,
}

struct User {
    role: Role,
    hash: Arc<Stored>,
}

/// The users allowed in, and the passwords already checked.
pub struct Users {
    users: HashMap<String, User>,
    /// Checked for names that are not users: the parameters most users' hashes have.
    decoy: Option<Arc<Stored>>,
    /// Per user, the keyed digest of the last password that verified.
    verified: Mutex<HashMap<String, [u8; 32]>>,
    /// Random per process: the digests are worthless outside it.
    key: [u8; 32],
    checker: Checker,
    /// Failed logins counted, and what they cost the next.
    budgets: Budgets,
    /// Checks waiting for a turn (slowed or for an Argon2 permit).
    waiting: AtomicUsize,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users")
            .field("count", &self.users.len())
            .finish()
    }
}

impl Users {
    /// Nobody: every call is refused (efbd without a users file).
    pub fn none() -> Users {
        Users::from_entries(Vec::new())
    }

    /// Reads the users file at `path`: a regular file (links followed) owned by root or
    /// efbd's account and writable by nobody else.
    pub fn load(path: &Path) -> Result<Users, UsersError> {
        use efb_datastore::files::{self, FileError};
        let text = files::read_configured(path).map_err(|e| match e {
            FileError::Io { error, .. } => UsersError::Read {
                path: path.display().to_string(),
                source: error,
            },
            other => UsersError::Untrusted(other),
        })?;
        Users::parse(&text).map_err(|source| UsersError::Invalid {
            path: path.display().to_string(),
            source,
        })
    }

    pub fn parse(text: &str) -> Result<Users, UsersFileError> {
        let file: UsersFile =
            toml::from_str(text).map_err(|e| UsersFileError::Toml(e.to_string()))?;
        for entry in &file.user {
            // The name goes into the commit history others read: bounded and printable.
            efb_datastore::check_user(&entry.name).map_err(|e| UsersFileError::BadName {
                name: efb_yang::text::excerpt(&entry.name.escape_debug().to_string()).into_owned(),
                message: e.to_string(),
            })?;
        }
        let mut names: Vec<&str> = file.user.iter().map(|u| u.name.as_str()).collect();
        names.sort();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(UsersFileError::Twice(twice[0].to_string()));
        }
        let entries = file
            .user
            .into_iter()
            .map(|e| match Stored::parse(&e.password) {
                Ok(hash) => Ok((e.name, e.role, hash)),
                Err(source) => Err(UsersFileError::Password {
                    user: e.name,
                    source,
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Users::from_entries(entries))
    }

    fn from_entries(entries: Vec<(String, Role, Stored)>) -> Users {
        let decoy = most_common(entries.iter().map(|(_, _, h)| h)).map(|h| Arc::new(h.decoy()));
        let limits = LoginLimits::default();
        let mut users = Users {
            users: entries
                .into_iter()
                .map(|(name, role, hash)| {
                    let hash = Arc::new(hash);
                    (name, User { role, hash })
                })
                .collect(),
            decoy,
            verified: Mutex::new(HashMap::new()),
            key: rand::random(),
            checker: Checker::new(1, 0),
            budgets: Budgets::new(limits.clone()),
            waiting: AtomicUsize::new(0),
        };
        users.set_limits(limits);
        users
    }

    /// The same users, their logins bounded by `limits`.
    pub fn with_limits(mut self, limits: LoginLimits) -> Users {
        self.set_limits(limits);
        self
    }

    fn set_limits(&mut self, limits: LoginLimits) {
        let blocks = self
            .users
            .values()
            .map(|u| u.hash.blocks())
            .max()
            .unwrap_or(0);
        self.checker = Checker::new(limits.checks, blocks);
        self.budgets = Budgets::new(limits);
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// The caller of `request`: the user its client certificate names (mTLS: the
    /// certificate's subject CN is a user of this file), else the user its `username` /
    /// `password` metadata log in as (see [`Users::authenticate`]).
    pub async fn identify<T>(self: &Arc<Self>, request: &Request<T>) -> Result<Login, Status> {
        let peer = crate::listen::remote_addr(request);
        let Some(cert) = crate::listen::client_certificate(request) else {
            let conn = crate::listen::conn_of(request.extensions());
            return self
                .authenticate(request.metadata(), peer, conn.as_ref())
                .await;
        };
        let name = crate::tls::subject_cn(&cert).map_err(|e| {
            warn!(?peer, error = %e, "gNMI login refused: the client certificate names no one user");
            Status::unauthenticated(e.to_string())
        })?;
        let Some(user) = self.users.get(&name) else {
            warn!(user = %shown(&name), ?peer, "gNMI login refused: the client certificate names no user of the users file");
            return Err(Status::unauthenticated(format!(
                "the client certificate's subject CN {} is not a user of the users file",
                shown(&name)
            )));
        };
        let claimed = metadata_text(request.metadata(), "username");
        if !claimed.is_empty() && claimed != name {
            return Err(Status::unauthenticated(format!(
                "the client certificate is for {}, the call's username says {}",
                shown(&name),
                shown(&claimed)
            )));
        }
        Ok(Login {
            user: name,
            role: user.role,
            peer,
            certificate: true,
        })
    }

    /// Checks the `username` / `password` metadata of a call from `peer` on connection
    /// `conn`. UNAUTHENTICATED for missing or wrong credentials (one message for both, so
    /// names cannot be probed); RESOURCE_EXHAUSTED when failed logins as the user from the
    /// peer, or from the peer, passed their budget ([`LoginRefused`]), or too many checks
    /// wait. Past the budgets of the user from anywhere and of everyone, the check waits a
    /// delay first ([`Slowed`]). A connection that logged in keeps working with the same
    /// credentials whatever the budgets say: others' failures do not cut off a client
    /// already in.
    pub async fn authenticate(
        self: &Arc<Self>,
        metadata: &MetadataMap,
        peer: Option<SocketAddr>,
        conn: Option<&ConnHandle>,
    ) -> Result<Login, Status> {
        if self.users.is_empty() {
            return Err(Status::unauthenticated(
                "no gNMI users are configured on this efbd (settings: gnmi.users); gNMI logins are refused",
            ));
        }
        let (user, password) = credentials(metadata)?;
        let digest = self.digest(&user, &password);
        let caller = |user, role| Login {
            user,
            role,
            peer,
            certificate: false,
        };
        let already_in = conn.is_some_and(|c| c.logged_in(&digest));
        if already_in && let Some(role) = self.remembered(&user, &digest) {
            return Ok(caller(user, role));
        }
        let from = Peer::of_addr(peer);
        if let Some(refused) = self.budgets.refusal(&user, from) {
            debug!(user = %shown(&user), peer = %from, "gNMI login refused: too many failures");
            return Err(Status::resource_exhausted(refused.to_string()));
        }
        // A password verified before is not slowed: only its owner can send it, and a
        // guesser learns nothing from a fast answer it gets only when it is in anyway.
        let role = match self.remembered(&user, &digest) {
            Some(role) => role,
            None => self.verify(&user, password, digest, from).await?,
        };
        if let Some(conn) = conn {
            conn.remember_login(digest);
        }
        Ok(caller(user, role))
    }

    /// Waits for a turn (and the slowdown, if logins as `user` are slowed), checks the
    /// password, and counts the outcome.
    async fn verify(
        self: &Arc<Self>,
        user: &str,
        password: String,
        digest: [u8; 32],
        from: Peer,
    ) -> Result<Role, Status> {
        let _turn = Waiting::enter(&self.waiting).ok_or_else(|| {
            warn!(peer = %from, waiting = MAX_WAITING, "gNMI login refused: too many password checks waiting");
            Status::resource_exhausted(format!(
                "efbd has {MAX_WAITING} password checks waiting already; retry in a few seconds"
            ))
        })?;
        if let Some(slowed) = self.budgets.slowed(user) {
            debug!(user = %shown(user), peer = %from, "gNMI login slowed: too many failures");
            self.budgets
                .slow_down(user, from, slowed)
                .await
                .map_err(|refused| Status::resource_exhausted(refused.to_string()))?;
        }
        match self.check(user, password, digest, from).await? {
            Some(role) => {
                self.budgets.succeeded(user, from);
                Ok(role)
            }
            None => {
                self.budgets.failed(user, from);
                Err(Status::unauthenticated("wrong username or password"))
            }
        }
    }

    /// The Argon2 check, in turn: the user's role if the password is theirs. Unknown
    /// names are checked against the decoy, at the same cost.
    async fn check(
        self: &Arc<Self>,
        user: &str,
        password: String,
        digest: [u8; 32],
        peer: Peer,
    ) -> Result<Option<Role>, Status> {
        let known = self.users.get(user);
        let Some(stored) = known.map(|u| u.hash.clone()).or_else(|| self.decoy.clone()) else {
            return Ok(None);
        };
        let users = self.clone();
        let name = user.to_string();
        // Calls that waited for their turn may no longer need the check.
        let still_wanted = move || match users.budgets.refusal(&name, peer) {
            Some(refused) => Some(Err(Status::resource_exhausted(refused.to_string()))),
            None => users.remembered(&name, &digest).map(Ok),
        };
        match self
            .checker
            .check(stored, password.into_bytes(), still_wanted)
            .await
        {
            Checked::Skipped(done) => done.map(Some),
            Checked::Match => Ok(known.map(|u| {
                self.remember(user, digest);
                u.role
            })),
            Checked::NoMatch => Ok(None),
            Checked::Failed => Err(Status::internal("password check failed")),
        }
    }

    fn remembered(&self, user: &str, digest: &[u8; 32]) -> Option<Role> {
        let entry = self.users.get(user)?;
        let known = self
            .verified
            .lock()
            .ok()
            .and_then(|cache| cache.get(user).copied());
        known
            .is_some_and(|d| crate::argon::same(&d, digest))
            .then_some(entry.role)
    }

    fn remember(&self, user: &str, digest: [u8; 32]) {
        if let Ok(mut cache) = self.verified.lock() {
            cache.insert(user.to_string(), digest);
        }
    }

    fn digest(&self, user: &str, password: &str) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.key);
        hasher.update(user.as_bytes());
        hasher.update([0]);
        hasher.update(password.as_bytes());
        hasher.finalize().into()
    }
}

/// The `username` and `password` of a call's metadata.
fn credentials(metadata: &MetadataMap) -> Result<(String, String), Status> {
    let (user, password) = (
        metadata_text(metadata, "username"),
        metadata_text(metadata, "password"),
    );
    if user.is_empty() {
        return Err(Status::unauthenticated(
            "credentials required: send `username` and `password` in the call metadata",
        ));
    }
    Ok((user, password))
}

fn metadata_text(metadata: &MetadataMap, name: &str) -> String {
    metadata
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The hash whose parameters most users have (the first of equals).
fn most_common<'a>(hashes: impl Iterator<Item = &'a Stored>) -> Option<&'a Stored> {
    let hashes: Vec<&Stored> = hashes.collect();
    let count = |h: &Stored| hashes.iter().filter(|o| o.cost() == h.cost()).count();
    hashes
        .iter()
        .copied()
        .enumerate()
        .max_by_key(|(i, h)| (count(h), std::cmp::Reverse(*i)))
        .map(|(_, h)| h)
}

/// A place among the checks waiting, left when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Option<Waiting<'a>> {
        if count.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Waiting(count))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, Instant};

    use super::*;

    /// How long a slowed login waits here.
    const SLOWDOWN: Duration = Duration::from_millis(300);

    fn users() -> Arc<Users> {
        let admin = hash_password("secret", Cost::Test).unwrap();
        let viewer = hash_password("look", Cost::Test).unwrap();
        let users = Users::parse(&format!(
            "[[user]]\nname = \"ada\"\npassword = \"{admin}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"vic\"\npassword = \"{viewer}\"\nrole = \"viewer\"\n"
        ))
        .unwrap();
        Arc::new(users.with_limits(LoginLimits {
            checks: 2,
            failures_per_user_address: 3,
            failures_per_address: 6,
            failures_per_user: 5,
            failures_total: 10,
            window: Duration::from_secs(60),
            slowdown: SLOWDOWN,
        }))
    }

    fn credentials(user: &str, password: &str) -> MetadataMap {
        let mut md = MetadataMap::new();
        md.insert("username", user.parse().unwrap());
        md.insert("password", password.parse().unwrap());
        md
    }

    async fn login(
        users: &Arc<Users>,
        user: &str,
        password: &str,
        from: &str,
    ) -> Result<Role, Status> {
        let peer = Some(SocketAddr::new(from.parse().unwrap(), 5000));
        users
            .authenticate(&credentials(user, password), peer, None)
            .await
            .map(|c| c.role)
    }

    #[tokio::test]
    async fn passwords_and_roles() {
        let users = users();
        let here = "10.0.0.1";
        assert_eq!(
            login(&users, "ada", "secret", here).await.unwrap(),
            Role::Admin
        );
        // Remembered: the second check takes the digest path and still says yes.
        assert_eq!(
            login(&users, "ada", "secret", here).await.unwrap(),
            Role::Admin
        );
        let wrong = login(&users, "ada", "Secret", here).await.unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
        assert_eq!(
            login(&users, "vic", "look", here).await.unwrap(),
            Role::Viewer
        );
        let nobody = login(&users, "nobody", "secret", here).await.unwrap_err();
        assert_eq!(nobody.message(), wrong.message(), "one message for both");
    }

    #[tokio::test]
    async fn failures_refuse_the_user_at_the_peer_then_the_peer() {
        let users = users();
        for _ in 0..3 {
            let err = login(&users, "ada", "guess", "10.0.0.2").await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unauthenticated);
        }
        // Even the right password: ada from there is refused before any check.
        let err = login(&users, "ada", "secret", "10.0.0.2")
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        let message = err.message();
        assert!(
            message.contains("retry in")
                && message.contains("10.0.0.2")
                && message.contains("gnmi.login_failures_per_user_address"),
            "{message}"
        );
        // Another user from there, and ada from elsewhere, log in.
        assert_eq!(
            login(&users, "vic", "look", "10.0.0.2").await.unwrap(),
            Role::Viewer
        );
        assert_eq!(
            login(&users, "ada", "secret", "10.0.0.3").await.unwrap(),
            Role::Admin
        );
        // A peer guessing names: six failures whatever the names refuse it.
        for name in ["bob", "bob", "eve"] {
            let _ = login(&users, name, "guess", "10.0.0.2").await;
        }
        let err = login(&users, "vic", "look", "10.0.0.2").await.unwrap_err();
        assert!(
            err.message().contains("gnmi.login_failures_per_address"),
            "{}",
            err.message()
        );
    }

    /// One wrong guess as `user` from each of `from`: no address reaches a budget of its own.
    async fn guesses(users: &Arc<Users>, user: &str, from: impl Iterator<Item = String>) {
        for peer in from {
            let err = login(users, user, "guess", &peer).await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
        }
    }

    async fn timed(users: &Arc<Users>, user: &str, password: &str, from: &str) -> Duration {
        let started = Instant::now();
        login(users, user, password, from).await.unwrap();
        started.elapsed()
    }

    #[tokio::test]
    async fn past_the_budget_of_a_user_its_logins_are_slowed_not_refused() {
        let users = users();
        guesses(&users, "ada", (0..5).map(|i| format!("10.0.1.{i}"))).await;
        let took = timed(&users, "ada", "secret", "10.0.1.9").await;
        assert!(took >= SLOWDOWN, "{took:?}");
        // A password verified before is not slowed, nor are other users.
        assert!(timed(&users, "ada", "secret", "10.0.1.8").await < SLOWDOWN);
        assert!(timed(&users, "vic", "look", "10.0.1.9").await < SLOWDOWN);
        // Past the total (10), everyone is slowed (vic's password is remembered: a guess).
        guesses(&users, "nobody", (0..5).map(|i| format!("10.0.2.{i}"))).await;
        let started = Instant::now();
        let err = login(&users, "vic", "guess", "10.0.3.1").await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        assert!(started.elapsed() >= SLOWDOWN, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_slowed_peer_has_one_guess_at_a_user_waiting() {
        let users = users();
        guesses(&users, "ada", (0..5).map(|i| format!("10.0.1.{i}"))).await;
        let started = Instant::now();
        let (first, second, elsewhere) = tokio::join!(
            login(&users, "ada", "guess-1", "10.0.4.1"),
            async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let refused = login(&users, "ada", "guess-2", "10.0.4.1").await;
                (refused, started.elapsed())
            },
            login(&users, "ada", "guess-3", "10.0.4.2"),
        );
        assert_eq!(first.unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(elsewhere.unwrap_err().code(), tonic::Code::Unauthenticated);
        let (second, when) = second;
        let second = second.unwrap_err();
        assert_eq!(second.code(), tonic::Code::ResourceExhausted);
        assert!(
            second.message().contains("waiting already")
                && second.message().contains("gnmi.login_failures_per_user"),
            "{}",
            second.message()
        );
        assert!(
            when < SLOWDOWN,
            "refused at once, not after a delay: {when:?}"
        );
        assert!(started.elapsed() >= SLOWDOWN);
    }

    /// Wrong guesses as ada from `from`, one after another: the codes of the answers.
    async fn attack(users: Arc<Users>, from: String, count: usize) -> Vec<Status> {
        let mut answers = Vec::new();
        for g in 0..count {
            let guess = format!("guess-{g}");
            answers.push(login(&users, "ada", &guess, &from).await.unwrap_err());
        }
        answers
    }

    #[tokio::test]
    async fn during_an_attack_the_right_password_from_a_new_address_gets_in() {
        let users = users();
        let attackers: Vec<_> = (0..10)
            .map(|i| tokio::spawn(attack(users.clone(), format!("10.0.5.{i}"), 5)))
            .collect();
        // Budgets of the user (5) and of everyone (10) are spent while the attack runs.
        tokio::time::sleep(SLOWDOWN / 2).await;
        let took = timed(&users, "ada", "secret", "10.0.6.1").await;
        assert!(took < SLOWDOWN * 3, "in after one delay: {took:?}");
        let mut wrong = 0;
        for attacker in attackers {
            let answers = attacker.await.unwrap();
            let checked = answers
                .iter()
                .filter(|s| s.code() == tonic::Code::Unauthenticated)
                .count();
            assert!(
                checked <= 3,
                "its budget as ada (3) stops each address: {answers:?}"
            );
            let last = answers.last().unwrap();
            assert!(
                last.message()
                    .contains("gnmi.login_failures_per_user_address"),
                "{answers:?}"
            );
            wrong += checked;
        }
        assert_eq!(wrong, 30);
    }

    #[test]
    fn unknown_names_are_checked_against_a_decoy_of_the_common_cost() {
        let standard = hash_password("a", Cost::Standard).unwrap();
        let test = hash_password("b", Cost::Test).unwrap();
        let users = Users::parse(&format!(
            "[[user]]\nname = \"a\"\npassword = \"{test}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"b\"\npassword = \"{standard}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"c\"\npassword = \"{standard}\"\nrole = \"admin\"\n"
        ))
        .unwrap();
        assert_eq!(users.decoy.unwrap().cost(), (19456, 2, 1));
    }

    #[tokio::test]
    async fn standard_hashes_verify() {
        let hash = hash_password("admin", Cost::Standard).unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        let users = Arc::new(
            Users::parse(&format!(
                "[[user]]\nname = \"admin\"\npassword = \"{hash}\"\nrole = \"admin\"\n"
            ))
            .unwrap(),
        );
        assert_eq!(
            login(&users, "admin", "admin", "::1").await.unwrap(),
            Role::Admin
        );
    }

    #[test]
    fn bad_files_say_why() {
        let err = Users::parse("[[user]]\nname = \"a\"\npassword = \"admin\"\nrole = \"admin\"\n")
            .err()
            .unwrap();
        assert!(
            matches!(&err, UsersFileError::Password { user, source: HashError::NotPhc(_) } if user == "a"),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("PHC") && err.to_string().contains("user a"),
            "{err}"
        );
        let err = Users::parse("[[user]]\nname = \"a\"\npassword = \"x\"\nrole = \"root\"\n")
            .err()
            .unwrap();
        assert!(err.to_string().contains("root"), "{err}");
        let hash = hash_password("x", Cost::Test).unwrap();
        let twice = format!(
            "[[user]]\nname = \"a\"\npassword = \"{hash}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"a\"\npassword = \"{hash}\"\nrole = \"viewer\"\n"
        );
        assert_eq!(
            Users::parse(&twice).err(),
            Some(UsersFileError::Twice("a".into()))
        );
        let costly = "$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$V/KPtmYYYPS1lEGdOCc1ib8a9lu6naGl7zHwJiT0gf0";
        let err = Users::parse(&format!(
            "[[user]]\nname = \"a\"\npassword = \"{costly}\"\nrole = \"admin\"\n"
        ))
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("user a") && err.contains("at most 262144"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn metadata_checks() {
        let users = users();
        let mut md = MetadataMap::new();
        let err = users.authenticate(&md, None, None).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        md.insert("username", "ada".parse().unwrap());
        md.insert("password", "wrong".parse().unwrap());
        assert_eq!(
            users
                .authenticate(&md, None, None)
                .await
                .unwrap_err()
                .code(),
            tonic::Code::Unauthenticated
        );
        md.insert("password", "secret".parse().unwrap());
        assert_eq!(
            users.authenticate(&md, None, None).await.unwrap().role,
            Role::Admin
        );
        let nobody = Arc::new(Users::none());
        let err = nobody.authenticate(&md, None, None).await.unwrap_err();
        assert!(err.message().contains("no gNMI users"), "{}", err.message());
    }
}
