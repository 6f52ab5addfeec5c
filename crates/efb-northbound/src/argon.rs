//! Argon2 password checks in bounded memory and bounded concurrency.
//!
//! Every check of the users file's Argon2 hashes needs its `m` KiB of working memory
//! (19 MiB with the standard parameters). Allocating that per check, on as many blocking
//! threads as there are callers, let wrong passwords grow efbd by gigabytes and starve
//! the configuration owner of CPU. Here a check first takes one of a few permits, then a
//! buffer from a pool that holds at most as many buffers as there are permits, each
//! allocated once and reused: memory is `permits × largest m`, whatever the load.
//!
//! New hashes ([`hash_password`]) are made here too, so that everything that runs Argon2
//! is in one file.

use std::sync::{Arc, Mutex};

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::Semaphore;

/// Largest `m` (KiB of working memory per check) a users file may ask for: 256 MiB.
pub const MAX_MEMORY_KIB: u32 = 256 * 1024;
/// Largest `t` (passes over the memory).
pub const MAX_PASSES: u32 = 16;
/// Largest `p` (lanes).
pub const MAX_LANES: u32 = 8;

/// Why a stored password hash is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HashError {
    #[error("the password must be an Argon2 PHC string (efbd --hash-password prints one): {0}")]
    NotPhc(String),
    #[error("{0} is not an Argon2 hash")]
    NotArgon2(String),
    #[error("version {version}: {message}")]
    Version { version: u32, message: String },
    #[error("parameters: {0}")]
    Parameters(String),
    /// A cost above the maximums: every login would pay it.
    #[error("the hash asks for {what} = {value}; efbd accepts at most {max}")]
    TooCostly {
        what: &'static str,
        value: u32,
        max: u32,
    },
    #[error("the hash has no salt")]
    NoSalt,
    #[error("salt: {0}")]
    Salt(String),
    #[error("the hash has no output")]
    NoOutput,
}

/// Why a new password hash could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot hash the password: {0}")]
pub struct HashingFailed(String);

/// A stored hash, parsed once: what a check recomputes and what it must find.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    algorithm: Algorithm,
    version: Version,
    params: Params,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

impl Stored {
    /// An Argon2 PHC string, refused when its parameters exceed the maximums above.
    pub fn parse(phc: &str) -> Result<Stored, HashError> {
        let parsed = PasswordHash::new(phc).map_err(|e| HashError::NotPhc(e.to_string()))?;
        let algorithm = Algorithm::try_from(parsed.algorithm)
            .map_err(|_| HashError::NotArgon2(parsed.algorithm.to_string()))?;
        let version = match parsed.version {
            Some(v) => Version::try_from(v).map_err(|e| HashError::Version {
                version: v,
                message: e.to_string(),
            })?,
            None => Version::default(),
        };
        let params = Params::try_from(&parsed).map_err(|e| HashError::Parameters(e.to_string()))?;
        check_cost(&params)?;
        let mut salt = [0u8; 64];
        let salt = parsed
            .salt
            .ok_or(HashError::NoSalt)?
            .decode_b64(&mut salt)
            .map_err(|e| HashError::Salt(e.to_string()))?
            .to_vec();
        let hash = parsed.hash.ok_or(HashError::NoOutput)?.as_bytes().to_vec();
        Ok(Stored {
            algorithm,
            version,
            params,
            salt,
            hash,
        })
    }

    /// A hash no password matches, costing what this one costs: checked for names that
    /// are not users, so that they take as long to refuse as users' wrong passwords.
    pub fn decoy(&self) -> Stored {
        let salt: [u8; 16] = rand::random();
        Stored {
            salt: salt.to_vec(),
            hash: (0..self.hash.len()).map(|_| rand::random()).collect(),
            ..self.clone()
        }
    }

    /// The Argon2 blocks (KiB) a check needs.
    pub fn blocks(&self) -> usize {
        self.params.block_count()
    }

    /// The parameters as the PHC string writes them, to compare hashes' costs.
    pub fn cost(&self) -> (u32, u32, u32) {
        (
            self.params.m_cost(),
            self.params.t_cost(),
            self.params.p_cost(),
        )
    }

    fn matches(&self, password: &[u8], memory: &mut [Block]) -> bool {
        let argon = Argon2::new(self.algorithm, self.version, self.params.clone());
        let mut out = vec![0u8; self.hash.len()];
        argon
            .hash_password_into_with_memory(password, &self.salt, &mut out, memory)
            .is_ok()
            && same(&out, &self.hash)
    }
}

fn check_cost(params: &Params) -> Result<(), HashError> {
    let costs = [
        ("m (KiB per check)", params.m_cost(), MAX_MEMORY_KIB),
        ("t (passes)", params.t_cost(), MAX_PASSES),
        ("p (lanes)", params.p_cost(), MAX_LANES),
    ];
    match costs.into_iter().find(|(_, value, max)| value > max) {
        Some((what, value, max)) => Err(HashError::TooCostly { what, value, max }),
        None => Ok(()),
    }
}

/// Compares without stopping at the first difference.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Runs checks, at most `permits` at a time, each in a buffer of the pool.
pub(crate) struct Checker {
    permits: Arc<Semaphore>,
    pool: Arc<Mutex<Vec<Vec<Block>>>>,
    /// Blocks of each buffer: enough for the costliest hash of the users file.
    blocks: usize,
}

impl Checker {
    pub fn new(permits: usize, blocks: usize) -> Checker {
        Checker {
            permits: Arc::new(Semaphore::new(permits.max(1))),
            pool: Arc::new(Mutex::new(Vec::new())),
            blocks,
        }
    }

    /// Waits for a permit, then checks `password` against `stored` on a blocking thread.
    /// `still_wanted` runs once the permit is held: a check no longer needed (a password
    /// verified meanwhile, a peer blocked meanwhile) costs nothing.
    pub async fn check<T: Send + 'static>(
        &self,
        stored: Arc<Stored>,
        password: Vec<u8>,
        still_wanted: impl FnOnce() -> Option<T>,
    ) -> Checked<T> {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return Checked::Failed;
        };
        if let Some(early) = still_wanted() {
            return Checked::Skipped(early);
        }
        let mut buffer = Buffer::take(&self.pool, self.blocks);
        let done = tokio::task::spawn_blocking(move || {
            let ok = stored.matches(&password, &mut buffer.memory);
            drop(buffer);
            drop(permit);
            ok
        })
        .await;
        match done {
            Ok(true) => Checked::Match,
            Ok(false) => Checked::NoMatch,
            Err(_) => Checked::Failed,
        }
    }
}

/// What a check found.
pub(crate) enum Checked<T> {
    Match,
    NoMatch,
    /// `still_wanted` answered first.
    Skipped(T),
    /// The check could not run (a panic, the runtime stopping).
    Failed,
}

/// A buffer of the pool, given back when dropped (also when the check panics).
struct Buffer {
    memory: Vec<Block>,
    pool: Arc<Mutex<Vec<Vec<Block>>>>,
}

impl Buffer {
    fn take(pool: &Arc<Mutex<Vec<Vec<Block>>>>, blocks: usize) -> Buffer {
        let reused = pool.lock().ok().and_then(|mut p| p.pop());
        Buffer {
            // Only while the pool has fewer buffers than permits: never more than that.
            memory: reused.unwrap_or_else(|| vec![Block::default(); blocks]),
            pool: pool.clone(),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.pool.lock() {
            pool.push(std::mem::take(&mut self.memory));
        }
    }
}

/// How much work a new password hash costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Argon2id with the crate's defaults (19 MiB, 2 passes): for real users.
    Standard,
    /// Minimal parameters: for tests, which start many daemons in debug builds.
    Test,
}

/// An Argon2id PHC string for `password`.
pub fn hash_password(password: &str, cost: Cost) -> Result<String, HashingFailed> {
    let failed = |e: argon2::password_hash::Error| HashingFailed(e.to_string());
    let params = match cost {
        Cost::Standard => Params::default(),
        Cost::Test => Params::new(256, 1, 1, None).map_err(|e| HashingFailed(e.to_string()))?,
    };
    let argon = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let salt_bytes: [u8; 16] = rand::random();
    let salt = SaltString::encode_b64(&salt_bytes).map_err(failed)?;
    argon
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn costs_above_the_maximums_are_refused() {
        let salt = "c29tZXNhbHRzb21lc2FsdA";
        let out = "V/KPtmYYYPS1lEGdOCc1ib8a9lu6naGl7zHwJiT0gf0";
        let phc = |m: u32, t: u32, p: u32| format!("$argon2id$v=19$m={m},t={t},p={p}${salt}${out}");
        assert!(Stored::parse(&phc(19456, 2, 1)).is_ok());
        let err = Stored::parse(&phc(MAX_MEMORY_KIB + 1, 2, 1)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("m (KiB per check)") && text.contains("262144"),
            "{text}"
        );
        assert_eq!(
            Stored::parse(&phc(19456, 17, 1)).unwrap_err(),
            HashError::TooCostly {
                what: "t (passes)",
                value: 17,
                max: MAX_PASSES
            }
        );
        let lanes = Stored::parse(&phc(19456, 2, 9)).unwrap_err();
        assert!(lanes.to_string().contains("p (lanes)"), "{lanes}");
    }

    #[tokio::test]
    async fn the_pool_never_holds_more_buffers_than_permits() {
        let stored = Arc::new(Stored::parse(&hash_password("pw", Cost::Test).unwrap()).unwrap());
        let checker = Arc::new(Checker::new(2, stored.blocks()));
        let mut tasks = Vec::new();
        for i in 0..20 {
            let (checker, stored) = (checker.clone(), stored.clone());
            let password = if i % 2 == 0 { "pw" } else { "no" };
            tasks.push(tokio::spawn(async move {
                checker
                    .check(stored, password.as_bytes().to_vec(), || None::<()>)
                    .await
            }));
        }
        for (i, task) in tasks.into_iter().enumerate() {
            let found = task.await.unwrap();
            assert_eq!(matches!(found, Checked::Match), i % 2 == 0);
        }
        assert!(checker.pool.lock().unwrap().len() <= 2);
        assert!(
            !stored
                .decoy()
                .matches(b"pw", &mut vec![Block::default(); stored.blocks()])
        );
    }
}
