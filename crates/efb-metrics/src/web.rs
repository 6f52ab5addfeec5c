//! The web configuration file, in the format Prometheus' exporters take
//! (exporter-toolkit's `--web.config.file`, YAML): TLS (`tls_server_config`) and users who
//! may scrape, with bcrypt password hashes (`basic_auth_users`). Whoever can write the file
//! or the TLS key decides who reads the metrics, so both pass the trust check of files an
//! administrator names ([`efb_datastore::files::read_configured`]).
//!
//! Unknown keys are refused by name, as exporter-toolkit does. Keys exporter-toolkit knows
//! and this server does not implement (cipher suites, inline certificates, rate limits...)
//! are refused too, naming the key and why, rather than ignored: a file that asks for
//! something it would not get is a mistake to show at start. Relative paths are taken
//! from the file's directory, as exporter-toolkit takes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use efb_datastore::files::{self, FileError};
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio_rustls::TlsAcceptor;

use crate::basic::Users;
use crate::tls;

/// The costliest bcrypt hash accepted. Each step doubles the work: cost 10 takes about
/// 70 ms on a server core, 14 over a second; a scraper whose password is not yet verified,
/// or a wrong password, makes the server pay it.
pub const MAX_BCRYPT_COST: u32 = 14;

/// What the web configuration asks of the server, ready to serve.
#[derive(Clone)]
pub struct Web {
    /// TLS, when `tls_server_config` names a certificate.
    pub tls: Option<TlsAcceptor>,
    /// Users who may scrape, when `basic_auth_users` names any; without, no login.
    pub users: Option<Arc<Users>>,
    /// Clients must show a certificate the client CA signed.
    pub client_certificates: bool,
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Web")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.as_ref().map_or(0, |u| u.len()))
            .field("client_certificates", &self.client_certificates)
            .finish()
    }
}

impl Web {
    /// Reads the web configuration at `path`, and the files it names. An error starts
    /// with `setting` (where the path comes from) and names the file and what is wrong.
    pub fn load(path: &Path, setting: &str) -> Result<Web, WebConfigError> {
        let setting = setting.to_string();
        let text = files::read_configured(path).map_err(|error| WebConfigError::File {
            setting: setting.clone(),
            error,
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let settings =
            WebSettings::parse(&text, dir).map_err(|problem| WebConfigError::Invalid {
                setting: setting.clone(),
                path: path.display().to_string(),
                problem,
            })?;
        let client_certificates = settings
            .tls
            .as_ref()
            .is_some_and(|tls| matches!(tls.client_auth, ClientAuth::Required(_)));
        let tls = match &settings.tls {
            Some(tls) => {
                Some(tls::acceptor(tls).map_err(|error| WebConfigError::Tls { setting, error })?)
            }
            None => None,
        };
        let users = (!settings.users.is_empty()).then(|| Arc::new(Users::new(settings.users)));
        Ok(Web {
            tls,
            users,
            client_certificates,
        })
    }
}

/// The web configuration file is refused; each message starts with the setting that names
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    /// Unreadable, or writable by others (the error names the file, and the fix).
    #[error("{setting}: {error}")]
    File { setting: String, error: FileError },
    #[error("{setting}: {path}: {problem}")]
    Invalid {
        setting: String,
        path: String,
        problem: Problem,
    },
    /// A file `tls_server_config` names (the error names the key and the file).
    #[error("{setting}: {error}")]
    Tls {
        setting: String,
        error: tls::TlsFileError,
    },
}

/// What is wrong with a web configuration file.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// Not YAML, or not the file's shape: YAML's message names the key and the line.
    #[error("{0}")]
    Shape(String),
    #[error("{key}: exporter-toolkit's setting is not supported by this server ({why}); remove it")]
    Unsupported {
        key: &'static str,
        why: &'static str,
    },
    #[error(
        "tls_server_config: {0} is missing; TLS needs the certificate (cert_file) and its key (key_file)"
    )]
    Missing(&'static str),
    #[error(
        "tls_server_config.client_auth_type: {0} takes client certificates no CA verified; \
         use RequireAndVerifyClientCert (or VerifyClientCertIfGiven) with client_ca_file"
    )]
    Unverified(&'static str),
    #[error(
        "tls_server_config.client_auth_type: {0} needs client_ca_file, the CA that signs the \
         client certificates"
    )]
    NoClientCa(&'static str),
    #[error(
        "tls_server_config.client_ca_file is given but client_auth_type is NoClientCert (the \
         default), so no client certificate would be asked for; set client_auth_type: \
         RequireAndVerifyClientCert"
    )]
    CaUnused,
    #[error(
        "tls_server_config.{key}: {version}: this server speaks TLS 1.2 and 1.3 only (rustls); \
         give TLS12 or TLS13"
    )]
    OldTls {
        key: &'static str,
        version: &'static str,
    },
    #[error("tls_server_config: min_version {min} is above max_version {max}")]
    Versions {
        min: &'static str,
        max: &'static str,
    },
    #[error("basic_auth_users: user {user:?}: {fault}")]
    User { user: String, fault: UserFault },
}

/// What is wrong with a user of `basic_auth_users`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UserFault {
    #[error("the name is empty")]
    EmptyName,
    /// Basic authentication sends `name:password`: a colon ends the name.
    #[error("the name holds a colon, which HTTP basic authentication cannot send")]
    Colon,
    #[error(
        "the password is not a bcrypt hash ({0}); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"
    )]
    NotBcrypt(String),
    #[error(
        "the bcrypt cost {0} is out of range: 4 to {MAX_BCRYPT_COST} (each step doubles the \
         work of every check; 10 is usual)"
    )]
    Cost(u32),
}

/// TLS as the file asks for it, paths resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub client_auth: ClientAuth,
    /// The lowest and highest TLS version spoken.
    pub versions: (TlsVersion, TlsVersion),
}

/// Whether clients show a certificate, and which CA signs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    /// Verified against the CA when given; a client without one is let through (to basic
    /// authentication, if configured).
    IfGiven(PathBuf),
    Required(PathBuf),
}

/// The web configuration file, checked, its paths resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    pub tls: Option<TlsSettings>,
    /// Users and their bcrypt hashes, checked.
    pub users: BTreeMap<String, String>,
}

impl WebSettings {
    /// Checks the text of a web configuration file; relative paths are taken from `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<WebSettings, Problem> {
        // An empty file (or only comments) is no TLS and no users, as for exporters.
        let file: Shape = if text.lines().all(blank_or_comment) {
            Shape::default()
        } else {
            serde_norway::from_str(text).map_err(|e| Problem::Shape(e.to_string()))?
        };
        file.refuse_unsupported()?;
        let tls = match file.tls_server_config {
            Some(tls) if !tls.is_empty() => Some(tls.settings(dir)?),
            _ => None,
        };
        let users = file.basic_auth_users.unwrap_or_default();
        for (user, hash) in &users {
            check_user(user, hash).map_err(|fault| Problem::User {
                user: user.clone(),
                fault,
            })?;
        }
        Ok(WebSettings { tls, users })
    }
}

fn blank_or_comment(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with('#') || line == "---"
}

fn check_user(user: &str, hash: &str) -> Result<(), UserFault> {
    if user.is_empty() {
        return Err(UserFault::EmptyName);
    }
    if user.contains(':') {
        return Err(UserFault::Colon);
    }
    let parts =
        bcrypt::HashParts::from_str(hash).map_err(|e| UserFault::NotBcrypt(e.to_string()))?;
    let cost = parts.get_cost();
    if !(4..=MAX_BCRYPT_COST).contains(&cost) {
        return Err(UserFault::Cost(cost));
    }
    Ok(())
}

/// The file as YAML gives it.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Shape {
    tls_server_config: Option<TlsShape>,
    http_server_config: Option<HttpShape>,
    #[serde(default, deserialize_with = "unique_users")]
    basic_auth_users: Option<BTreeMap<String, String>>,
    rate_limit: Option<IgnoredAny>,
}

/// `basic_auth_users`, a user named twice refused (YAML would keep the last silently;
/// exporter-toolkit's strict parsing refuses it too).
fn unique_users<'de, D>(deserializer: D) -> Result<Option<BTreeMap<String, String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = Option<BTreeMap<String, String>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("user names and their bcrypt hashes")
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_map<M: serde::de::MapAccess<'de>>(
            self,
            mut map: M,
        ) -> Result<Self::Value, M::Error> {
            let mut users = BTreeMap::new();
            while let Some((user, hash)) = map.next_entry::<String, String>()? {
                if users.contains_key(&user) {
                    return Err(serde::de::Error::custom(format!(
                        "basic_auth_users: user {user:?} is listed twice"
                    )));
                }
                users.insert(user, hash);
            }
            Ok(Some(users))
        }
    }
    deserializer.deserialize_any(Unique)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TlsShape {
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    client_auth_type: Option<ClientAuthType>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<TlsVersion>,
    max_version: Option<TlsVersion>,
    cert: Option<IgnoredAny>,
    key: Option<IgnoredAny>,
    client_ca: Option<IgnoredAny>,
    client_allowed_sans: Option<IgnoredAny>,
    cipher_suites: Option<IgnoredAny>,
    prefer_server_cipher_suites: Option<IgnoredAny>,
    curve_preferences: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpShape {
    /// Accepted, and without effect: the server speaks HTTP/1.1 only, which every
    /// Prometheus speaks.
    #[allow(dead_code)]
    http2: Option<bool>,
    headers: Option<IgnoredAny>,
}

/// exporter-toolkit's names (Go's tls.ClientAuthType).
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuthType {
    NoClientCert,
    RequestClientCert,
    RequireAnyClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

impl ClientAuthType {
    fn name(self) -> &'static str {
        match self {
            ClientAuthType::NoClientCert => "NoClientCert",
            ClientAuthType::RequestClientCert => "RequestClientCert",
            ClientAuthType::RequireAnyClientCert => "RequireAnyClientCert",
            ClientAuthType::VerifyClientCertIfGiven => "VerifyClientCertIfGiven",
            ClientAuthType::RequireAndVerifyClientCert => "RequireAndVerifyClientCert",
        }
    }
}

/// A TLS version as exporter-toolkit names it.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    #[serde(rename = "TLS10")]
    Tls10,
    #[serde(rename = "TLS11")]
    Tls11,
    #[serde(rename = "TLS12")]
    Tls12,
    #[serde(rename = "TLS13")]
    Tls13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls10 => "TLS10",
            TlsVersion::Tls11 => "TLS11",
            TlsVersion::Tls12 => "TLS12",
            TlsVersion::Tls13 => "TLS13",
        }
    }
}

impl Shape {
    /// Keys of exporter-toolkit this server does not implement, refused by name.
    fn refuse_unsupported(&self) -> Result<(), Problem> {
        let unsupported = |present: bool, key, why| match present {
            true => Err(Problem::Unsupported { key, why }),
            false => Ok(()),
        };
        if let Some(tls) = &self.tls_server_config {
            let inline = "give the PEM in a file, whose owner and mode are checked";
            let chosen = "rustls chooses them, modern ones only";
            unsupported(tls.cert.is_some(), "tls_server_config.cert", inline)?;
            unsupported(tls.key.is_some(), "tls_server_config.key", inline)?;
            unsupported(
                tls.client_ca.is_some(),
                "tls_server_config.client_ca",
                inline,
            )?;
            unsupported(
                tls.client_allowed_sans.is_some(),
                "tls_server_config.client_allowed_sans",
                "any certificate the client CA signed is let in",
            )?;
            unsupported(
                tls.cipher_suites.is_some(),
                "tls_server_config.cipher_suites",
                chosen,
            )?;
            unsupported(
                tls.prefer_server_cipher_suites.is_some(),
                "tls_server_config.prefer_server_cipher_suites",
                chosen,
            )?;
            unsupported(
                tls.curve_preferences.is_some(),
                "tls_server_config.curve_preferences",
                chosen,
            )?;
        }
        let headers = self
            .http_server_config
            .as_ref()
            .is_some_and(|h| h.headers.is_some());
        unsupported(
            headers,
            "http_server_config.headers",
            "the answers are metrics, not pages a browser shows",
        )?;
        unsupported(
            self.rate_limit.is_some(),
            "rate_limit",
            "connections are bounded by the server's settings instead",
        )
    }
}

impl TlsShape {
    /// No key given (or all empty): no TLS, as for exporters.
    fn is_empty(&self) -> bool {
        self.cert_file.is_none()
            && self.key_file.is_none()
            && self.client_auth_type.is_none()
            && self.client_ca_file.is_none()
            && self.min_version.is_none()
            && self.max_version.is_none()
    }

    fn settings(self, dir: &Path) -> Result<TlsSettings, Problem> {
        let cert_file = self.cert_file.ok_or(Problem::Missing("cert_file"))?;
        let key_file = self.key_file.ok_or(Problem::Missing("key_file"))?;
        let client_auth = client_auth(
            self.client_auth_type
                .unwrap_or(ClientAuthType::NoClientCert),
            self.client_ca_file.map(|ca| dir.join(ca)),
        )?;
        let min = self.min_version.unwrap_or(TlsVersion::Tls12);
        let max = self.max_version.unwrap_or(TlsVersion::Tls13);
        for (key, version) in [("min_version", min), ("max_version", max)] {
            if version < TlsVersion::Tls12 {
                return Err(Problem::OldTls {
                    key,
                    version: version.name(),
                });
            }
        }
        if min > max {
            return Err(Problem::Versions {
                min: min.name(),
                max: max.name(),
            });
        }
        Ok(TlsSettings {
            cert_file: dir.join(cert_file),
            key_file: dir.join(key_file),
            client_auth,
            versions: (min, max),
        })
    }
}

fn client_auth(kind: ClientAuthType, ca: Option<PathBuf>) -> Result<ClientAuth, Problem> {
    match (kind, ca) {
        (ClientAuthType::NoClientCert, None) => Ok(ClientAuth::None),
        (ClientAuthType::NoClientCert, Some(_)) => Err(Problem::CaUnused),
        (ClientAuthType::RequestClientCert | ClientAuthType::RequireAnyClientCert, _) => {
            Err(Problem::Unverified(kind.name()))
        }
        (_, None) => Err(Problem::NoClientCa(kind.name())),
        (ClientAuthType::VerifyClientCertIfGiven, Some(ca)) => Ok(ClientAuth::IfGiven(ca)),
        (ClientAuthType::RequireAndVerifyClientCert, Some(ca)) => Ok(ClientAuth::Required(ca)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A bcrypt hash of "secret" at cost 4 (the cheapest: tests stay fast).
    const SECRET: &str = "$2b$04$/l0SF84cDoOLnP7rQH88pOeSWlwaP4TdzULq8j3iB7NXzxBqsYfne";

    fn parse(text: &str) -> Result<WebSettings, Problem> {
        WebSettings::parse(text, Path::new("/etc/efb"))
    }

    fn refused(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn every_key_supported_is_read() {
        let text = format!(
            "tls_server_config:\n  cert_file: cert.pem\n  key_file: /keys/key.pem\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  \
             min_version: TLS13\n  max_version: TLS13\n\
             http_server_config:\n  http2: false\n\
             basic_auth_users:\n  prometheus: '{SECRET}'\n  grafana: \"{SECRET}\"\n"
        );
        let settings = parse(&text).unwrap();
        assert_eq!(
            settings.tls,
            Some(TlsSettings {
                cert_file: "/etc/efb/cert.pem".into(),
                key_file: "/keys/key.pem".into(),
                client_auth: ClientAuth::Required("/etc/efb/ca.pem".into()),
                versions: (TlsVersion::Tls13, TlsVersion::Tls13),
            })
        );
        assert_eq!(
            settings.users.keys().collect::<Vec<_>>(),
            ["grafana", "prometheus"]
        );
        let if_given = "tls_server_config:\n  cert_file: c\n  key_file: k\n  \
             client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca\n";
        let tls = parse(if_given).unwrap().tls.unwrap();
        assert_eq!(tls.client_auth, ClientAuth::IfGiven("/etc/efb/ca".into()));
        assert_eq!(tls.versions, (TlsVersion::Tls12, TlsVersion::Tls13));
    }

    #[test]
    fn the_documented_example_is_read() {
        let example = include_str!("../../../examples/metrics-web-config.yml");
        let settings = parse(example).unwrap();
        let tls = settings.tls.unwrap();
        assert_eq!(tls.cert_file, Path::new("/etc/efb/metrics-cert.pem"));
        assert_eq!(tls.client_auth, ClientAuth::None);
        assert_eq!(settings.users.keys().collect::<Vec<_>>(), ["prometheus"]);
    }

    #[test]
    fn an_empty_file_or_empty_sections_ask_for_nothing() {
        let nothing = WebSettings {
            tls: None,
            users: BTreeMap::new(),
        };
        for text in [
            "",
            "# nothing yet\n\n",
            "---\n",
            "tls_server_config:\nbasic_auth_users:\n",
            "tls_server_config: {}\nbasic_auth_users: {}\nhttp_server_config:\n  http2: true\n",
        ] {
            assert_eq!(parse(text).unwrap(), nothing, "{text:?}");
        }
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let err = refused("tls_server_config:\n  cert_file: c\n  keyfile: k\n");
        assert!(
            err.contains("tls_server_config") && err.contains("unknown field `keyfile`"),
            "{err}"
        );
        let err = refused("basic_auth:\n  a: b\n");
        assert!(err.contains("unknown field `basic_auth`"), "{err}");
        let err = refused("http_server_config:\n  http3: true\n");
        assert!(err.contains("unknown field `http3`"), "{err}");
    }

    #[test]
    fn keys_known_to_exporters_but_not_served_here_are_refused_by_name() {
        for (text, key) in [
            ("tls_server_config:\n  cert: x\n", "tls_server_config.cert"),
            ("tls_server_config:\n  key: x\n", "tls_server_config.key"),
            (
                "tls_server_config:\n  client_ca: x\n",
                "tls_server_config.client_ca",
            ),
            (
                "tls_server_config:\n  client_allowed_sans: [a]\n",
                "tls_server_config.client_allowed_sans",
            ),
            (
                "tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
                "tls_server_config.cipher_suites",
            ),
            (
                "tls_server_config:\n  prefer_server_cipher_suites: true\n",
                "tls_server_config.prefer_server_cipher_suites",
            ),
            (
                "tls_server_config:\n  curve_preferences: [X25519]\n",
                "tls_server_config.curve_preferences",
            ),
            (
                "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
                "http_server_config.headers",
            ),
            ("rate_limit:\n  interval: 1s\n  burst: 5\n", "rate_limit"),
        ] {
            match parse(text) {
                Err(Problem::Unsupported { key: named, .. }) => assert_eq!(named, key),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn tls_needs_a_certificate_and_its_key() {
        assert!(matches!(
            parse("tls_server_config:\n  key_file: k\n"),
            Err(Problem::Missing("cert_file"))
        ));
        assert!(matches!(
            parse("tls_server_config:\n  cert_file: c\n"),
            Err(Problem::Missing("key_file"))
        ));
        // min_version alone is TLS asked for, not forgotten.
        assert!(matches!(
            parse("tls_server_config:\n  min_version: TLS13\n"),
            Err(Problem::Missing("cert_file"))
        ));
    }

    #[test]
    fn client_certificates_are_verified_against_a_ca_or_not_asked_for() {
        let with = |kind: &str, ca: bool| {
            let ca = if ca { "  client_ca_file: ca\n" } else { "" };
            parse(&format!(
                "tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: {kind}\n{ca}"
            ))
        };
        assert!(matches!(
            with("RequestClientCert", true),
            Err(Problem::Unverified("RequestClientCert"))
        ));
        assert!(matches!(
            with("RequireAnyClientCert", false),
            Err(Problem::Unverified("RequireAnyClientCert"))
        ));
        assert!(matches!(
            with("RequireAndVerifyClientCert", false),
            Err(Problem::NoClientCa("RequireAndVerifyClientCert"))
        ));
        assert!(matches!(with("NoClientCert", true), Err(Problem::CaUnused)));
        assert_eq!(
            with("NoClientCert", false)
                .unwrap()
                .tls
                .unwrap()
                .client_auth,
            ClientAuth::None
        );
        let err = with("VerifyAll", true).unwrap_err().to_string();
        assert!(err.contains("unknown variant `VerifyAll`"), "{err}");
    }

    #[test]
    fn tls_versions_below_1_2_or_crossed_are_refused() {
        let with = |versions: &str| {
            parse(&format!(
                "tls_server_config:\n  cert_file: c\n  key_file: k\n{versions}"
            ))
        };
        assert!(matches!(
            with("  min_version: TLS10\n"),
            Err(Problem::OldTls {
                key: "min_version",
                version: "TLS10"
            })
        ));
        assert!(matches!(
            with("  max_version: TLS11\n"),
            Err(Problem::OldTls {
                key: "max_version",
                ..
            })
        ));
        assert!(matches!(
            with("  min_version: TLS13\n  max_version: TLS12\n"),
            Err(Problem::Versions { .. })
        ));
        let err = with("  min_version: SSL3\n").unwrap_err().to_string();
        assert!(err.contains("unknown variant `SSL3`"), "{err}");
    }

    #[test]
    fn users_need_a_bcrypt_hash_of_bounded_cost_and_a_name_basic_auth_can_send() {
        let user = |name: &str, hash: &str| match parse(&format!(
            "basic_auth_users:\n  '{name}': '{hash}'\n"
        )) {
            Err(Problem::User { user, fault }) => {
                assert_eq!(user, name);
                Err(fault)
            }
            Err(other) => panic!("{other}"),
            Ok(_) => Ok(()),
        };
        assert_eq!(user("prometheus", SECRET), Ok(()));
        assert!(matches!(
            user("prometheus", "secret"),
            Err(UserFault::NotBcrypt(_))
        ));
        // An Argon2 hash (efbd's users file) is not what exporters take.
        assert!(matches!(
            user(
                "p",
                "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
            ),
            Err(UserFault::NotBcrypt(_))
        ));
        let costly = SECRET.replace("$04$", "$15$");
        assert_eq!(user("p", &costly), Err(UserFault::Cost(15)));
        assert_eq!(
            user("p", &SECRET.replace("$04$", "$03$")),
            Err(UserFault::Cost(3))
        );
        assert_eq!(user("a:b", SECRET), Err(UserFault::Colon));
        assert_eq!(user("", SECRET), Err(UserFault::EmptyName));
        let err = refused(&format!("basic_auth_users:\n  p: 12\n  q: {SECRET}\n"));
        assert!(
            err.contains("\"p\"") && err.contains("not a bcrypt hash"),
            "{err}"
        );
    }

    #[test]
    fn a_user_named_twice_is_refused() {
        let err = refused(&format!(
            "basic_auth_users:\n  p: '{SECRET}'\n  p: '{SECRET}'\n"
        ));
        assert!(err.contains("user \"p\" is listed twice"), "{err}");
    }

    #[test]
    fn what_is_not_yaml_is_refused_with_its_line() {
        let err = refused("tls_server_config:\n  cert_file: [unclosed\n");
        assert!(err.contains("line"), "{err}");
        let err = refused("- a list\n");
        assert!(err.contains("expected struct"), "{err}");
    }
}
