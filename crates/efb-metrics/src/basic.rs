//! HTTP basic authentication against `basic_auth_users` (bcrypt hashes), as exporters do
//! it, with bcrypt's work bounded. bcrypt is slow on purpose (cost 10: about 70 ms of a
//! core), and Prometheus sends the same credentials with every scrape: a password that
//! verified once is remembered as a keyed digest, so later scrapes cost a SHA-256, not a
//! bcrypt run. bcrypt runs one at a time, off the async threads; a name that is not a user
//! costs the same run against another user's hash, so refusal times do not tell which
//! names exist.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::header::HeaderValue;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use tracing::warn;

/// bcrypt runs at once. One: checks are for a scraper's first scrape and for wrong
/// passwords, and the server's cores have other work.
const CHECKS: usize = 1;

/// The users who may scrape, and the passwords already verified.
pub struct Users {
    /// Name -> bcrypt hash (checked when the file was read).
    hashes: BTreeMap<String, String>,
    /// Checked for names that are not users: a hash of the cost most users' have.
    decoy: Option<String>,
    /// Per user, the keyed digest of the last password that verified.
    verified: Mutex<HashMap<String, [u8; 32]>>,
    /// Random per process: the digests are worthless outside it.
    key: [u8; 32],
    /// Held by a bcrypt run until it ends, even when the request that wanted it is gone
    /// (its connection closed to make room): runs never exceed [`CHECKS`].
    checks: Arc<Semaphore>,
}

/// Why a request is not let in; each is answered 401 with `WWW-Authenticate: Basic`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("no credentials (HTTP basic authentication)")]
    NoCredentials,
    #[error("the Authorization header is not HTTP basic authentication")]
    NotBasic,
    #[error("wrong user name or password")]
    Wrong,
}

impl Users {
    /// `hashes` as [`crate::web::WebSettings`] checked them.
    pub fn new(hashes: BTreeMap<String, String>) -> Users {
        let decoy = most_common_cost(&hashes).cloned();
        Users {
            hashes,
            decoy,
            verified: Mutex::new(HashMap::new()),
            key: rand::random(),
            checks: Arc::new(Semaphore::new(CHECKS)),
        }
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The user `authorization` (a request's header) logs in as. Failures are logged with
    /// the peer.
    pub async fn admit(
        &self,
        authorization: Option<&HeaderValue>,
        peer: SocketAddr,
    ) -> Result<String, Refused> {
        let (user, password) = credentials(authorization)?;
        let digest = self.digest(&user, &password);
        if self.remembered(&user, &digest) {
            return Ok(user);
        }
        if self.check(&user, password, digest).await {
            return Ok(user);
        }
        warn!(user = %shown(&user), %peer, "metrics: scrape refused, wrong user name or password");
        Err(Refused::Wrong)
    }

    /// The bcrypt run, in turn: whether `password` is `user`'s.
    async fn check(&self, user: &str, password: Vec<u8>, digest: [u8; 32]) -> bool {
        let Ok(turn) = self.checks.clone().acquire_owned().await else {
            return false;
        };
        // The same scraper may have been verified while this waited.
        if self.remembered(user, &digest) {
            return true;
        }
        let known = self.hashes.get(user);
        let Some(hash) = known.or(self.decoy.as_ref()).cloned() else {
            return false;
        };
        let verified = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            bcrypt::verify(password, &hash)
        })
        .await
        .is_ok_and(|result| result.unwrap_or(false));
        if verified && known.is_some() {
            if let Ok(mut cache) = self.verified.lock() {
                cache.insert(user.to_string(), digest);
            }
            return true;
        }
        false
    }

    /// Every bcrypt turn, held until dropped: checks wait meanwhile.
    #[cfg(test)]
    pub async fn hold_checks(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.checks
            .clone()
            .acquire_many_owned(CHECKS as u32)
            .await
            .unwrap()
    }

    fn remembered(&self, user: &str, digest: &[u8; 32]) -> bool {
        let Ok(cache) = self.verified.lock() else {
            return false;
        };
        cache.get(user).is_some_and(|known| same(known, digest))
    }

    fn digest(&self, user: &str, password: &[u8]) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.key);
        hasher.update(user.as_bytes());
        hasher.update([0]);
        hasher.update(password);
        hasher.finalize().into()
    }
}

/// The user name and password of an `Authorization: Basic` header.
fn credentials(authorization: Option<&HeaderValue>) -> Result<(String, Vec<u8>), Refused> {
    let value = authorization.ok_or(Refused::NoCredentials)?.as_bytes();
    let (scheme, encoded) = value
        .iter()
        .position(|b| *b == b' ')
        .map(|at| value.split_at(at))
        .ok_or(Refused::NotBasic)?;
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return Err(Refused::NotBasic);
    }
    let decoded = STANDARD
        .decode(encoded.trim_ascii())
        .map_err(|_| Refused::NotBasic)?;
    let colon = decoded
        .iter()
        .position(|b| *b == b':')
        .ok_or(Refused::NotBasic)?;
    let (user, password) = decoded.split_at(colon);
    let user = String::from_utf8(user.to_vec()).map_err(|_| Refused::Wrong)?;
    Ok((user, password[1..].to_vec()))
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The hash of the cost most users' hashes have (bcrypt's cost is its 5th and 6th
/// characters, `$2y$10$...`).
fn most_common_cost(hashes: &BTreeMap<String, String>) -> Option<&String> {
    let cost = |h: &String| h.get(4..6).map(str::to_string);
    let count = |h: &String| hashes.values().filter(|o| cost(o) == cost(h)).count();
    hashes.values().max_by_key(|h| count(h))
}

/// A user name as logged: quoted and escaped, and cut.
fn shown(user: &str) -> String {
    let cut: String = user.chars().take(64).collect();
    let more = if cut.len() < user.len() { "..." } else { "" };
    format!("{cut:?}{more}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, Instant};

    use super::*;

    fn basic(user_password: &str) -> HeaderValue {
        HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(user_password))).unwrap()
    }

    fn users() -> Users {
        let hash = bcrypt::hash("secret", 4).unwrap();
        Users::new(BTreeMap::from([("prometheus".to_string(), hash)]))
    }

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1))
    }

    #[tokio::test]
    async fn the_right_password_lets_in_and_is_remembered() {
        let users = users();
        let header = basic("prometheus:secret");
        assert_eq!(
            users.admit(Some(&header), peer()).await,
            Ok("prometheus".to_string())
        );
        let digest = users.digest("prometheus", b"secret");
        assert!(users.remembered("prometheus", &digest));
        // Remembered: no bcrypt run, even with every check taken.
        let _all = users.hold_checks().await;
        let started = Instant::now();
        assert!(users.admit(Some(&header), peer()).await.is_ok());
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[tokio::test]
    async fn wrong_or_missing_credentials_are_refused() {
        let users = users();
        let admit = |header: Option<HeaderValue>| {
            let users = &users;
            async move { users.admit(header.as_ref(), peer()).await }
        };
        assert_eq!(admit(None).await, Err(Refused::NoCredentials));
        assert_eq!(
            admit(Some(basic("prometheus:wrong"))).await,
            Err(Refused::Wrong)
        );
        // A name that is not a user, with a user's password.
        assert_eq!(
            admit(Some(basic("nobody:secret"))).await,
            Err(Refused::Wrong)
        );
        assert_eq!(
            admit(Some(HeaderValue::from_static("Bearer abc"))).await,
            Err(Refused::NotBasic)
        );
        assert_eq!(
            admit(Some(HeaderValue::from_static("Basic !!!"))).await,
            Err(Refused::NotBasic)
        );
        assert_eq!(admit(Some(basic("no colon"))).await, Err(Refused::NotBasic));
        // The scheme is case-insensitive; a password may hold colons.
        let hash = bcrypt::hash("a:b", 4).unwrap();
        let users = Users::new(BTreeMap::from([("p".to_string(), hash)]));
        let header = HeaderValue::from_str(&format!("basic {}", STANDARD.encode("p:a:b"))).unwrap();
        assert!(users.admit(Some(&header), peer()).await.is_ok());
    }

    #[test]
    fn the_decoy_has_the_cost_most_users_have() {
        let at =
            |cost: &str| format!("$2y${cost}$0000000000000000000000000000000000000000000000000000");
        let hashes = BTreeMap::from([
            ("a".to_string(), at("12")),
            ("b".to_string(), at("10")),
            ("c".to_string(), at("10")),
        ]);
        assert_eq!(most_common_cost(&hashes), Some(&at("10")));
    }
}
