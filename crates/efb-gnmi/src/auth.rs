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
//! (The operator role also runs the model's RPCs, which gNMI does not carry.)
//!
//! Argon2id is slow on purpose; a password that was checked once is remembered as a keyed
//! digest, so later calls of a client cost a hash, not an Argon2 run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Argon2, Params};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tonic::Status;
use tonic::metadata::MetadataMap;

/// What a user may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Operator,
    Viewer,
}

impl Role {
    pub fn may_set(self) -> bool {
        self == Role::Admin
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Viewer => "viewer",
        }
    }
}

/// The caller of one RPC, once authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub role: Role,
}

#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
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
    hash: String,
}

/// The users allowed in, and the passwords already checked.
pub struct Users {
    users: HashMap<String, User>,
    /// Per user, the keyed digest of the last password that verified.
    verified: Mutex<HashMap<String, [u8; 32]>>,
    /// Random per process: the digests are worthless outside it.
    key: [u8; 32],
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

    pub fn load(path: &Path) -> Result<Users, UsersError> {
        let text = std::fs::read_to_string(path).map_err(|source| UsersError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Users::parse(&text).map_err(|message| UsersError::Invalid {
            path: path.display().to_string(),
            message,
        })
    }

    pub fn parse(text: &str) -> Result<Users, String> {
        let file: UsersFile = toml::from_str(text).map_err(|e| e.to_string())?;
        for entry in &file.user {
            PasswordHash::new(&entry.password).map_err(|e| {
                format!(
                    "user {}: the password must be an Argon2 PHC string (efbd --hash-password prints one): {e}",
                    entry.name
                )
            })?;
        }
        let mut names: Vec<&str> = file.user.iter().map(|u| u.name.as_str()).collect();
        names.sort();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("user {} is listed twice", twice[0]));
        }
        Ok(Users::from_entries(file.user))
    }

    fn from_entries(entries: Vec<UserEntry>) -> Users {
        Users {
            users: entries
                .into_iter()
                .map(|e| {
                    (
                        e.name,
                        User {
                            role: e.role,
                            hash: e.password,
                        },
                    )
                })
                .collect(),
            verified: Mutex::new(HashMap::new()),
            key: rand::random(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Checks the `username` / `password` metadata of a call. UNAUTHENTICATED for missing
    /// or wrong credentials (one message for both, so names cannot be probed).
    pub async fn authenticate(self: &Arc<Self>, metadata: &MetadataMap) -> Result<Caller, Status> {
        if self.users.is_empty() {
            return Err(Status::unauthenticated(
                "no gNMI users are configured on this efbd (settings: gnmi.users); gNMI logins are refused",
            ));
        }
        let field = |name: &str| {
            metadata
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        };
        let (user, password) = (field("username").to_string(), field("password").to_string());
        if user.is_empty() {
            return Err(Status::unauthenticated(
                "credentials required: send `username` and `password` in the call metadata",
            ));
        }
        let users = self.clone();
        let name = user.clone();
        let role = tokio::task::spawn_blocking(move || users.verify(&name, &password))
            .await
            .map_err(|_| Status::internal("password check failed"))?;
        match role {
            Some(role) => Ok(Caller { user, role }),
            None => Err(Status::unauthenticated("wrong username or password")),
        }
    }

    /// The user's role if the password is theirs.
    pub fn verify(&self, user: &str, password: &str) -> Option<Role> {
        let entry = self.users.get(user)?;
        let digest = self.digest(user, password);
        let known = self
            .verified
            .lock()
            .ok()
            .and_then(|cache| cache.get(user).copied());
        if known.is_some_and(|d| same(&d, &digest)) {
            return Some(entry.role);
        }
        let hash = PasswordHash::new(&entry.hash).ok()?;
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .ok()?;
        if let Ok(mut cache) = self.verified.lock() {
            cache.insert(user.to_string(), digest);
        }
        Some(entry.role)
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

/// Compares without stopping at the first difference.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
pub fn hash_password(password: &str, cost: Cost) -> Result<String, String> {
    let params = match cost {
        Cost::Standard => Params::default(),
        Cost::Test => Params::new(256, 1, 1, None).map_err(|e| e.to_string())?,
    };
    let argon = Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let salt_bytes: [u8; 16] = rand::random();
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| e.to_string())?;
    argon
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn users() -> Users {
        let admin = hash_password("secret", Cost::Test).unwrap();
        let viewer = hash_password("look", Cost::Test).unwrap();
        Users::parse(&format!(
            "[[user]]\nname = \"ada\"\npassword = \"{admin}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"vic\"\npassword = \"{viewer}\"\nrole = \"viewer\"\n"
        ))
        .unwrap()
    }

    #[test]
    fn passwords_and_roles() {
        let users = users();
        assert_eq!(users.verify("ada", "secret"), Some(Role::Admin));
        // Remembered: the second check takes the digest path and still says yes.
        assert_eq!(users.verify("ada", "secret"), Some(Role::Admin));
        assert_eq!(users.verify("ada", "Secret"), None);
        assert_eq!(users.verify("vic", "look"), Some(Role::Viewer));
        assert_eq!(users.verify("nobody", "secret"), None);
        assert!(Role::Admin.may_set() && !Role::Operator.may_set() && !Role::Viewer.may_set());
    }

    #[test]
    fn standard_hashes_verify() {
        let hash = hash_password("admin", Cost::Standard).unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        let users = Users::parse(&format!(
            "[[user]]\nname = \"admin\"\npassword = \"{hash}\"\nrole = \"admin\"\n"
        ))
        .unwrap();
        assert_eq!(users.verify("admin", "admin"), Some(Role::Admin));
    }

    #[test]
    fn bad_files_say_why() {
        let err = Users::parse("[[user]]\nname = \"a\"\npassword = \"admin\"\nrole = \"admin\"\n")
            .err()
            .unwrap();
        assert!(err.contains("PHC"), "{err}");
        let err = Users::parse("[[user]]\nname = \"a\"\npassword = \"x\"\nrole = \"root\"\n")
            .err()
            .unwrap();
        assert!(err.contains("root"), "{err}");
        let hash = hash_password("x", Cost::Test).unwrap();
        let twice = format!(
            "[[user]]\nname = \"a\"\npassword = \"{hash}\"\nrole = \"admin\"\n\
             [[user]]\nname = \"a\"\npassword = \"{hash}\"\nrole = \"viewer\"\n"
        );
        assert!(Users::parse(&twice).err().unwrap().contains("twice"));
    }

    #[tokio::test]
    async fn metadata_checks() {
        let users = Arc::new(users());
        let mut md = MetadataMap::new();
        let err = users.authenticate(&md).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        md.insert("username", "ada".parse().unwrap());
        md.insert("password", "wrong".parse().unwrap());
        assert_eq!(
            users.authenticate(&md).await.unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        md.insert("password", "secret".parse().unwrap());
        assert_eq!(users.authenticate(&md).await.unwrap().role, Role::Admin);
        let nobody = Arc::new(Users::none());
        let err = nobody.authenticate(&md).await.unwrap_err();
        assert!(err.message().contains("no gNMI users"), "{}", err.message());
    }
}
