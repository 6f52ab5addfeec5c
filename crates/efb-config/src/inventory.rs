//! Which balancers to compare and how to reach each: from the command line
//! (`NAME=FILE`, `NAME=gnmi://USER@HOST:PORT`) and from a TOML inventory file, mixed.
//!
//! A gNMI setting a balancer does not give itself comes from the command-line flags, then
//! from the inventory's `[defaults]`. Passwords are read when the balancer is contacted, so
//! a missing one is that balancer's problem and the others are still compared.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The gNMI port efbd listens on by default (IANA's for gNMI).
pub const DEFAULT_GNMI_PORT: u16 = 9339;

/// The environment variable read for a password when nothing else names one.
pub const PASSWORD_VARIABLE: &str = "EFB_GNMI_PASSWORD";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InventoryError {
    #[error("cannot read the inventory {path}: {message}")]
    Read { path: String, message: String },
    #[error("inventory {path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{spec}: {fault}")]
    Spec { spec: String, fault: SpecFault },
    #[error("two balancers are named {0}: names must be unique (NAME=... sets one)")]
    DuplicateName(String),
    #[error(
        "no balancers to compare: give NAME=FILE or NAME=gnmi://USER@HOST:PORT, or --inventory FILE"
    )]
    Empty,
}

/// What is wrong with one balancer as given (`NAME=...` or an inventory entry).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SpecFault {
    #[error("nothing after NAME=")]
    NothingAfterName,
    #[error("{0:?}: a balancer name is one word")]
    NotOneWord(String),
    #[error("unknown scheme {0}://: a balancer is gnmi://USER@HOST:PORT or a configuration file")]
    UnknownScheme(String),
    #[error("{0:?}: expected HOST:PORT (an IPv6 address in brackets: [::1]:9339)")]
    NotHostPort(String),
    #[error("{0:?}: a % must be followed by two hex digits")]
    BadPercent(String),
    #[error("{0:?}: not UTF-8 once decoded")]
    NotUtf8(String),
}

/// A password named but not there.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("the environment variable {0} holds no password")]
    NoVariable(String),
    #[error("cannot read the password file {path}: {error}")]
    File { path: String, error: std::io::Error },
}

/// One balancer to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balancer {
    pub name: String,
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A saved configuration (RFC 7951 JSON, as `load` takes it).
    File(PathBuf),
    Gnmi(GnmiTarget),
}

impl Source {
    /// How the source is shown in the table: a password never is.
    pub fn describe(&self) -> String {
        match self {
            Source::File(path) => format!("file {}", path.display()),
            Source::Gnmi(g) => format!(
                "gnmi {}{}",
                g.address,
                if g.plaintext {
                    " (plaintext)"
                } else {
                    " (TLS)"
                }
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GnmiTarget {
    /// HOST:PORT, as tonic takes it (IPv6 in brackets).
    pub address: String,
    pub username: Option<String>,
    pub password: Option<Password>,
    pub plaintext: bool,
    /// PEM certificates the server's certificate must chain to (efbd's self-signed
    /// `gnmi-cert.pem` itself will do); several may be concatenated.
    pub ca_file: Option<PathBuf>,
    /// The name the certificate must carry, when not the host of the address.
    pub tls_server_name: Option<String>,
}

/// Where a password comes from; read only when the balancer is contacted.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    Given(String),
    Env(String),
    File(PathBuf),
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Password::Given(_) => f.write_str("Given(..)"),
            Password::Env(v) => write!(f, "Env({v})"),
            Password::File(p) => write!(f, "File({})", p.display()),
        }
    }
}

impl Password {
    pub fn read(&self) -> Result<String, PasswordError> {
        match self {
            Password::Given(p) => Ok(p.clone()),
            Password::Env(variable) => {
                std::env::var(variable).map_err(|_| PasswordError::NoVariable(variable.clone()))
            }
            Password::File(path) => std::fs::read_to_string(path)
                // The first line: a file written with `echo` ends with a newline that is
                // no part of the password.
                .map(|text| text.lines().next().unwrap_or_default().to_string())
                .map_err(|error| PasswordError::File {
                    path: path.display().to_string(),
                    error,
                }),
        }
    }
}

/// gNMI settings that may be given once for many balancers; `None`: not given here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GnmiSettings {
    pub username: Option<String>,
    /// Discouraged (it sits in a file in clear); password-env or password-file are better.
    pub password: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    pub plaintext: Option<bool>,
    pub ca_file: Option<PathBuf>,
    pub tls_server_name: Option<String>,
}

impl GnmiSettings {
    /// `self` where it says something, else `fallback`.
    pub fn or(&self, fallback: &GnmiSettings) -> GnmiSettings {
        GnmiSettings {
            username: self.username.clone().or_else(|| fallback.username.clone()),
            password: self.password.clone().or_else(|| fallback.password.clone()),
            password_env: self
                .password_env
                .clone()
                .or_else(|| fallback.password_env.clone()),
            password_file: self
                .password_file
                .clone()
                .or_else(|| fallback.password_file.clone()),
            plaintext: self.plaintext.or(fallback.plaintext),
            ca_file: self.ca_file.clone().or_else(|| fallback.ca_file.clone()),
            tls_server_name: self
                .tls_server_name
                .clone()
                .or_else(|| fallback.tls_server_name.clone()),
        }
    }

    /// Paths in an inventory are relative to the inventory's directory.
    fn relative_to(mut self, dir: &Path) -> GnmiSettings {
        self.password_file = self.password_file.map(|p| dir.join(p));
        self.ca_file = self.ca_file.map(|p| dir.join(p));
        self
    }

    /// The first layer's that names a password at all, whatever its kind: a password file
    /// given for one balancer must not lose to a site-wide variable.
    fn password(&self) -> Option<Password> {
        self.password
            .clone()
            .map(Password::Given)
            .or_else(|| self.password_file.clone().map(Password::File))
            .or_else(|| self.password_env.clone().map(Password::Env))
    }

    /// A target from settings in layers, the first that says something winning.
    fn target(layers: &[&GnmiSettings], address: String) -> GnmiTarget {
        let merged = layers
            .iter()
            .fold(GnmiSettings::default(), |acc, layer| acc.or(layer));
        GnmiTarget {
            address,
            username: merged.username,
            password: layers
                .iter()
                .find_map(|layer| layer.password())
                .or_else(|| Some(Password::Env(PASSWORD_VARIABLE.to_string()))),
            plaintext: merged.plaintext.unwrap_or(false),
            ca_file: merged.ca_file,
            tls_server_name: merged.tls_server_name,
        }
    }
}

/// The inventory file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct InventoryFile {
    #[serde(default)]
    defaults: GnmiSettings,
    #[serde(default)]
    balancer: Vec<InventoryEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct InventoryEntry {
    name: String,
    /// HOST:PORT or gnmi://[USER@]HOST[:PORT].
    gnmi: Option<String>,
    file: Option<PathBuf>,
    username: Option<String>,
    password: Option<String>,
    password_env: Option<String>,
    password_file: Option<PathBuf>,
    plaintext: Option<bool>,
    ca_file: Option<PathBuf>,
    tls_server_name: Option<String>,
}

impl InventoryEntry {
    fn settings(&self) -> GnmiSettings {
        GnmiSettings {
            username: self.username.clone(),
            password: self.password.clone(),
            password_env: self.password_env.clone(),
            password_file: self.password_file.clone(),
            plaintext: self.plaintext,
            ca_file: self.ca_file.clone(),
            tls_server_name: self.tls_server_name.clone(),
        }
    }
}

/// Balancers of an inventory file. `flags` are the command line's gNMI settings, which
/// come before the file's `[defaults]`.
pub fn read_inventory(path: &Path, flags: &GnmiSettings) -> Result<Vec<Balancer>, InventoryError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| InventoryError::Read {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let file: InventoryFile = toml::from_str(&text).map_err(|e| InventoryError::Invalid {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    let file_defaults = file.defaults.clone().relative_to(dir);
    let invalid = |message: String| InventoryError::Invalid {
        path: shown.clone(),
        message,
    };
    file.balancer
        .iter()
        .map(|entry| {
            let source = match (&entry.gnmi, &entry.file) {
                (Some(address), None) => {
                    let url =
                        parse_gnmi(address).map_err(|m| invalid(format!("{}: {m}", entry.name)))?;
                    let mut own = entry.settings().relative_to(dir);
                    own.username = own.username.or(url.username);
                    own.password = own.password.or(url.password);
                    Source::Gnmi(GnmiSettings::target(
                        &[&own, flags, &file_defaults],
                        url.address,
                    ))
                }
                (None, Some(file)) => Source::File(dir.join(file)),
                _ => {
                    return Err(invalid(format!(
                        "balancer {}: give exactly one of gnmi = \"HOST:PORT\" and file = \"FILE\"",
                        entry.name
                    )));
                }
            };
            check_name(&entry.name).map_err(|fault| invalid(fault.to_string()))?;
            Ok(Balancer {
                name: entry.name.clone(),
                source,
            })
        })
        .collect()
}

/// `[NAME=]FILE` or `[NAME=]gnmi://[USER[:PASSWORD]@]HOST[:PORT]`; without a NAME, the
/// file's stem or HOST:PORT.
pub fn parse_spec(spec: &str, flags: &GnmiSettings) -> Result<Balancer, InventoryError> {
    let error = |fault: SpecFault| InventoryError::Spec {
        spec: redact(spec),
        fault,
    };
    let (name, target) = match spec.split_once('=') {
        Some((name, target)) if !name.contains(['/', ':']) => (Some(name), target),
        _ => (None, spec),
    };
    if target.is_empty() {
        return Err(error(SpecFault::NothingAfterName));
    }
    let (default_name, source) = if target.contains("://") {
        let url = parse_gnmi(target).map_err(error)?;
        let own = GnmiSettings {
            username: url.username,
            password: url.password,
            ..GnmiSettings::default()
        };
        let address = url.address.clone();
        (
            address.clone(),
            Source::Gnmi(GnmiSettings::target(&[&own, flags], address)),
        )
    } else {
        let path = PathBuf::from(target);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| target.to_string());
        (stem, Source::File(path))
    };
    let name = name.map_or(default_name, str::to_string);
    check_name(&name).map_err(error)?;
    Ok(Balancer { name, source })
}

fn check_name(name: &str) -> Result<(), SpecFault> {
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        Err(SpecFault::NotOneWord(name.to_string()))
    } else {
        Ok(())
    }
}

/// Every balancer once, by name.
pub fn check_unique(balancers: &[Balancer]) -> Result<(), InventoryError> {
    if balancers.is_empty() {
        return Err(InventoryError::Empty);
    }
    let mut seen = BTreeSet::new();
    for b in balancers {
        if !seen.insert(b.name.as_str()) {
            return Err(InventoryError::DuplicateName(b.name.clone()));
        }
    }
    Ok(())
}

/// A spec as it may be shown: a password in it is replaced.
fn redact(spec: &str) -> String {
    let Some((scheme_end, rest)) = spec.split_once("://") else {
        return spec.to_string();
    };
    match rest.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{scheme_end}://{user}:***@{host}"),
            None => spec.to_string(),
        },
        None => spec.to_string(),
    }
}

#[derive(Debug, PartialEq, Eq)]
struct GnmiUrl {
    address: String,
    username: Option<String>,
    password: Option<String>,
}

/// `gnmi://[USER[:PASSWORD]@]HOST[:PORT]` or plain `HOST[:PORT]`; user and password may be
/// percent-encoded.
fn parse_gnmi(text: &str) -> Result<GnmiUrl, SpecFault> {
    let rest = match text.split_once("://") {
        Some(("gnmi", rest)) => rest,
        Some((scheme, _)) => return Err(SpecFault::UnknownScheme(scheme.to_string())),
        None => text,
    };
    let rest = rest.trim_end_matches('/');
    let (user_info, host_port) = match rest.rsplit_once('@') {
        Some((user_info, host_port)) => (Some(user_info), host_port),
        None => (None, rest),
    };
    let (username, password) = match user_info {
        None => (None, None),
        Some(info) => match info.split_once(':') {
            Some((user, password)) => (Some(decode(user)?), Some(decode(password)?)),
            None => (Some(decode(info)?), None),
        },
    };
    Ok(GnmiUrl {
        address: host_and_port(host_port)?,
        username: username.filter(|u| !u.is_empty()),
        password,
    })
}

fn host_and_port(text: &str) -> Result<String, SpecFault> {
    let bad = || SpecFault::NotHostPort(text.to_string());
    if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or_else(bad)?;
        return match after.strip_prefix(':') {
            Some(port) => Ok(format!("[{host}]:{}", port_number(port).ok_or_else(bad)?)),
            None if after.is_empty() => Ok(format!("[{host}]:{DEFAULT_GNMI_PORT}")),
            None => Err(bad()),
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Err(bad()),
        Some((host, port)) if !host.is_empty() => {
            Ok(format!("{host}:{}", port_number(port).ok_or_else(bad)?))
        }
        None if !text.is_empty() => Ok(format!("{text}:{DEFAULT_GNMI_PORT}")),
        _ => Err(bad()),
    }
}

fn port_number(text: &str) -> Option<u16> {
    text.parse::<u16>().ok().filter(|p| *p != 0)
}

fn decode(text: &str) -> Result<String, SpecFault> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| SpecFault::BadPercent(text.to_string()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| SpecFault::NotUtf8(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gnmi(b: &Balancer) -> &GnmiTarget {
        match &b.source {
            Source::Gnmi(g) => g,
            Source::File(_) => panic!("not gNMI: {b:?}"),
        }
    }

    #[test]
    fn command_line_specs() {
        let flags = GnmiSettings::default();
        let b = parse_spec("efb-a=gnmi://viewer@10.0.0.1:9339", &flags).unwrap();
        assert_eq!(b.name, "efb-a");
        let g = gnmi(&b);
        assert_eq!(g.address, "10.0.0.1:9339");
        assert_eq!(g.username.as_deref(), Some("viewer"));
        assert_eq!(g.password, Some(Password::Env(PASSWORD_VARIABLE.into())));
        assert!(!g.plaintext);

        let b = parse_spec("gnmi://op:p%40ss@[::1]", &flags).unwrap();
        assert_eq!(b.name, "[::1]:9339");
        assert_eq!(gnmi(&b).password, Some(Password::Given("p@ss".into())));

        let b = parse_spec("saved/site-b.json", &flags).unwrap();
        assert_eq!(b.name, "site-b");
        assert_eq!(b.source, Source::File("saved/site-b.json".into()));
        let b = parse_spec("old=saved/site-b.json", &flags).unwrap();
        assert_eq!(b.name, "old");

        let err = parse_spec("x=http://a:1", &flags).unwrap_err();
        assert!(err.to_string().contains("unknown scheme"), "{err}");
        let fault = |err| match err {
            InventoryError::Spec { fault, .. } => fault,
            other => panic!("{other:?}"),
        };
        assert_eq!(fault(err), SpecFault::UnknownScheme("http".into()));
        let err = parse_spec("x=gnmi://u:secret@a:notaport", &flags).unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert_eq!(fault(err), SpecFault::NotHostPort("a:notaport".into()));
        let err = parse_spec("x=gnmi://u%4@a:1", &flags).unwrap_err();
        assert_eq!(fault(err), SpecFault::BadPercent("u%4".into()));
        let err = parse_spec("x=", &flags).unwrap_err();
        assert_eq!(fault(err), SpecFault::NothingAfterName);
    }

    #[test]
    fn a_missing_password_says_where_it_was_looked_for() {
        let unset = Password::Env("EFB_TEST_NO_SUCH_VARIABLE".into()).read();
        assert!(
            matches!(unset, Err(PasswordError::NoVariable(v)) if v == "EFB_TEST_NO_SUCH_VARIABLE")
        );
        let missing = Password::File("/nonexistent/efb-password".into()).read();
        let Err(err @ PasswordError::File { .. }) = missing else {
            panic!("{missing:?}");
        };
        assert!(
            err.to_string()
                .starts_with("cannot read the password file /nonexistent/efb-password: "),
            "{err}"
        );
    }

    #[test]
    fn flags_fill_what_a_spec_leaves_out() {
        let flags = GnmiSettings {
            username: Some("viewer".into()),
            password_file: Some("/run/pw".into()),
            plaintext: Some(true),
            ..GnmiSettings::default()
        };
        let b = parse_spec("a=gnmi://h:1", &flags).unwrap();
        let g = gnmi(&b);
        assert_eq!(g.username.as_deref(), Some("viewer"));
        assert_eq!(g.password, Some(Password::File("/run/pw".into())));
        assert!(g.plaintext);
        let b = parse_spec("a=gnmi://admin:x@h:1", &flags).unwrap();
        assert_eq!(gnmi(&b).username.as_deref(), Some("admin"));
        assert_eq!(gnmi(&b).password, Some(Password::Given("x".into())));
    }

    #[test]
    fn inventory_entries_defaults_and_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("site.toml");
        std::fs::write(
            &path,
            r#"
[defaults]
username = "viewer"
password-env = "SITE_PW"
ca-file = "certs.pem"

[[balancer]]
name = "efb-a"
gnmi = "10.0.0.1:9339"

[[balancer]]
name = "efb-b"
gnmi = "gnmi://operator@10.0.0.2"
password-file = "b.pw"
plaintext = true

[[balancer]]
name = "saved"
file = "saved.json"
"#,
        )
        .unwrap();
        let list = read_inventory(&path, &GnmiSettings::default()).unwrap();
        assert_eq!(list.len(), 3);
        let a = gnmi(&list[0]);
        assert_eq!(a.username.as_deref(), Some("viewer"));
        assert_eq!(a.password, Some(Password::Env("SITE_PW".into())));
        assert_eq!(a.ca_file, Some(dir.path().join("certs.pem")));
        let b = gnmi(&list[1]);
        assert_eq!(b.address, "10.0.0.2:9339");
        assert_eq!(b.username.as_deref(), Some("operator"));
        assert_eq!(b.password, Some(Password::File(dir.path().join("b.pw"))));
        assert!(b.plaintext);
        assert_eq!(list[2].source, Source::File(dir.path().join("saved.json")));

        std::fs::write(&path, "[[balancer]]\nname = \"x\"\n").unwrap();
        let err = read_inventory(&path, &GnmiSettings::default()).unwrap_err();
        assert!(err.to_string().contains("exactly one of"), "{err}");
        std::fs::write(
            &path,
            "[[balancer]]\nname = \"x\"\nfile = \"a\"\ncolour = 1\n",
        )
        .unwrap();
        let err = read_inventory(&path, &GnmiSettings::default()).unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn names_are_unique() {
        let flags = GnmiSettings::default();
        let list = vec![
            parse_spec("a=x.json", &flags).unwrap(),
            parse_spec("a=y.json", &flags).unwrap(),
        ];
        assert_eq!(
            check_unique(&list),
            Err(InventoryError::DuplicateName("a".into()))
        );
        assert_eq!(check_unique(&[]), Err(InventoryError::Empty));
    }
}
