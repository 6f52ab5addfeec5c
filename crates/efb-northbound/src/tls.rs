//! The server's TLS identity: the configured certificate and key, or a self-signed pair
//! generated at first start (kept, so clients can pin it across restarts).
//!
//! A generated certificate is good for a year ([`GENERATED_LIFE`]) and renewed at a start
//! when less than [`RENEW_BEFORE`] is left, with a new key: clients trust the certificate
//! as its own root, and a trust anchor is a name and a key, so a client that trusts it
//! would accept any certificate that key signs, with any dates; only a new key ends what
//! the old one was trusted for (a copy of it in a backup, on a disk sent back). Clients
//! must trust the new certificate either way. A configured certificate is never replaced:
//! efbd says when it is near its end.
//!
//! The generated pair lives in efbd's datastore directory and is made, and read back, the
//! way [`efb_datastore::files`] keeps files there: created new with its mode (key 0600,
//! certificate 0644), never through a symbolic link. A configured key must be writable by
//! nobody but root or efbd's account, and so must the client CA (whoever can write it may
//! log in as anyone).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use efb_datastore::files::{self, FileError};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// Certificate and key in PEM, and where they are.
#[derive(Clone, Debug)]
pub struct TlsIdentity {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    /// Configured, or generated (now or earlier).
    pub origin: Origin,
    /// The end of the certificate's validity (its first, when the file holds a chain);
    /// None when it cannot be read, which [`TlsIdentity::acceptor`] refuses.
    pub not_after: Option<SystemTime>,
    /// The CA that signs client certificates (PEM) and its file: with one, a client may
    /// present a certificate signed by it (mTLS) instead of a password; without, clients
    /// are not asked for one.
    pub client_ca: Option<(String, PathBuf)>,
}

/// Where the server's certificate comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `gnmi.tls_cert` and `gnmi.tls_key`: the administrator's, never replaced.
    Configured,
    /// Generated at an earlier start, with time left.
    Kept,
    /// Generated now: there was none.
    Generated,
    /// Generated now in place of one that had ended, or had less than [`RENEW_BEFORE`]
    /// left: that one's end (None if it could not be read).
    Renewed { previous_end: Option<SystemTime> },
}

/// How long a generated certificate is good for.
pub const GENERATED_LIFE: Duration = Duration::from_secs(365 * 24 * 3600);

/// A generated certificate starts this much before it is made, so that a client whose
/// clock is a little behind efbd's accepts it at once.
pub const CLOCK_SKEW: Duration = Duration::from_secs(3600);

/// A generated certificate with less left than this is renewed at start, and a configured
/// one is warned of: a month to hand the new one to clients, or to replace the old.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);

/// What is left of a certificate's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    Good,
    /// Less than [`RENEW_BEFORE`] left: whole days (0: ends within a day).
    Ending {
        days_left: u64,
    },
    Ended,
}

impl Life {
    pub fn at(not_after: SystemTime, now: SystemTime) -> Life {
        match not_after.duration_since(now) {
            Ok(left) if left >= RENEW_BEFORE => Life::Good,
            Ok(left) if !left.is_zero() => Life::Ending {
                days_left: left.as_secs() / (24 * 3600),
            },
            _ => Life::Ended,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("gnmi.tls_cert and gnmi.tls_key go together: give both or neither")]
    Half,
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot generate a certificate: {0}")]
    Generate(String),
    /// A file that may not be trusted or written as it is (a link, a mode others may
    /// write); `what` names the setting or the generated file.
    #[error("{what}: {error}")]
    File {
        what: &'static str,
        error: FileError,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl TlsIdentity {
    /// The same identity, with client certificates signed by the CA in `path` accepted.
    pub fn with_client_ca(mut self, path: &Path) -> Result<TlsIdentity, TlsError> {
        let pem = files::read_configured(path).map_err(|error| TlsError::File {
            what: "gnmi.client_ca (--gnmi-client-ca)",
            error,
        })?;
        self.client_ca = Some((pem, path.to_path_buf()));
        Ok(self)
    }

    /// For a configured certificate near or past its end, what to tell the operator (the
    /// date, and that efbd will not replace it); None otherwise. A generated one is
    /// renewed instead.
    pub fn ending_warning(&self, now: SystemTime) -> Option<String> {
        let not_after = self
            .not_after
            .filter(|_| self.origin == Origin::Configured)?;
        let date = humantime::format_rfc3339_seconds(not_after);
        let cert = self.cert_path.display();
        let when = match Life::at(not_after, now) {
            Life::Good => return None,
            Life::Ending { days_left: 0 } => format!("ends on {date}, within a day"),
            Life::Ending { days_left: 1 } => format!("ends on {date}, in 1 day"),
            Life::Ending { days_left } => format!("ends on {date}, in {days_left} days"),
            Life::Ended => format!("ended on {date}: clients refuse it"),
        };
        Some(format!(
            "gnmi.tls_cert (--gnmi-tls-cert): {cert}: the certificate {when}; efbd does not \
             replace a configured certificate: put a new one (and its key) in its place and \
             restart efbd"
        ))
    }

    /// The TLS side of the server: this certificate, HTTP/2 by ALPN; client certificates
    /// optional, and verified against the client CA when there is one (without, users log
    /// in with passwords only).
    pub fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let invalid = |path: &Path, message: String| TlsError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let certs = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(&self.cert_path, format!("not a PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(invalid(
                &self.cert_path,
                "no certificate in the file".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| invalid(&self.key_path, format!("not a PEM private key: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(&self.cert_path, e.to_string()))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some((pem, path)) => {
                builder.with_client_cert_verifier(client_verifier(pem, path, provider)?)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| invalid(&self.cert_path, format!("certificate and key: {e}")))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// Verifies client certificates against the CA in `pem`; a client without one is let
/// through (it logs in with a password).
fn client_verifier(
    pem: &str,
    path: &Path,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let invalid = |message: String| TlsError::Invalid {
        path: path.display().to_string(),
        message,
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        let cert = cert.map_err(|e| invalid(format!("not a PEM certificate: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| invalid(format!("not a CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(invalid("no certificate in the file".into()));
    }
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| invalid(e.to_string()))
}

/// Why a client certificate names no user.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CnError {
    #[error("the client certificate cannot be read: {0}")]
    Unreadable(String),
    /// None, or several: several would let the certificate be read as one user here and
    /// as another elsewhere (the first, the last); one is needed, the user it logs in as.
    #[error("{}", count_message(*.0))]
    Count(usize),
    #[error("the client certificate's subject common name (CN) is not UTF-8 text")]
    NotText,
}

fn count_message(count: usize) -> String {
    let has = match count {
        0 => "no subject common name (CN)".to_string(),
        n => format!("{n} subject common names (CN)"),
    };
    format!("the client certificate has {has}; one is needed, naming the user it logs in as")
}

/// The subject's common name (CN) of a DER certificate: exactly one.
pub fn subject_cn(cert: &CertificateDer<'_>) -> Result<String, CnError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| CnError::Unreadable(e.to_string()))?;
    let names: Vec<_> = parsed.subject().iter_common_name().collect();
    let [cn] = names.as_slice() else {
        return Err(CnError::Count(names.len()));
    };
    cn.as_str()
        .map(str::to_string)
        .map_err(|_| CnError::NotText)
}

/// File names of the generated pair inside the directory efbd gives (its datastore).
pub const GENERATED_CERT: &str = "gnmi-cert.pem";
pub const GENERATED_KEY: &str = "gnmi-key.pem";

/// The configured pair, else the pair generated earlier in `dir`, else a new one there.
pub fn load_or_generate(
    cert: Option<&Path>,
    key: Option<&Path>,
    dir: &Path,
) -> Result<TlsIdentity, TlsError> {
    match (cert, key) {
        (Some(cert), Some(key)) => {
            // The certificate is public; the key is the server's identity.
            let key_pem = files::read_configured(key).map_err(|error| TlsError::File {
                what: "gnmi.tls_key (--gnmi-tls-key)",
                error,
            })?;
            let cert_pem = read(cert)?;
            Ok(TlsIdentity {
                not_after: not_after(&cert_pem),
                cert_pem,
                key_pem,
                cert_path: cert.to_path_buf(),
                key_path: key.to_path_buf(),
                origin: Origin::Configured,
                client_ca: None,
            })
        }
        (None, None) => {
            let (cert, key) = (dir.join(GENERATED_CERT), dir.join(GENERATED_KEY));
            match (present(&cert)?, present(&key)?) {
                (true, true) => renew_if_ending(read_generated(&cert, &key)?, SystemTime::now()),
                (false, false) => generate(&cert, &key, Origin::Generated),
                // Generation stopped halfway (the key is written first): the half left is
                // of no use without the other, and a new pair replaces it.
                (cert_left, _) => {
                    let left = if cert_left { &cert } else { &key };
                    std::fs::remove_file(left).map_err(|source| TlsError::Write {
                        path: left.display().to_string(),
                        source,
                    })?;
                    generate(&cert, &key, Origin::Generated)
                }
            }
        }
        _ => Err(TlsError::Half),
    }
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Whether a generated file is there; a symbolic link in its place is refused (never
/// followed, never removed: someone put it there).
fn present(path: &Path) -> Result<bool, TlsError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(generated_file(FileError::Symlink {
            path: path.display().to_string(),
        })),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(TlsError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn generated_file(error: FileError) -> TlsError {
    TlsError::File {
        what: "the generated gNMI certificate",
        error,
    }
}

/// The pair generated at an earlier start: efbd's own files, read as such.
fn read_generated(cert: &Path, key: &Path) -> Result<TlsIdentity, TlsError> {
    let cert_pem = files::read_trusted(cert).map_err(generated_file)?;
    Ok(TlsIdentity {
        not_after: not_after(&cert_pem),
        cert_pem,
        key_pem: files::read_trusted(key).map_err(generated_file)?,
        cert_path: cert.to_path_buf(),
        key_path: key.to_path_buf(),
        origin: Origin::Kept,
        client_ca: None,
    })
}

/// A generated pair with less than [`RENEW_BEFORE`] left at `now` (or ended) is replaced
/// by a new one, key included (see the module's documentation). One whose end cannot be
/// read is kept as it is, for [`TlsIdentity::acceptor`] to refuse with its reason.
fn renew_if_ending(kept: TlsIdentity, now: SystemTime) -> Result<TlsIdentity, TlsError> {
    match kept.not_after.map(|end| Life::at(end, now)) {
        Some(Life::Ending { .. } | Life::Ended) => generate(
            &kept.cert_path,
            &kept.key_path,
            Origin::Renewed {
                previous_end: kept.not_after,
            },
        ),
        Some(Life::Good) | None => Ok(kept),
    }
}

/// The end of the first certificate in `pem`; None when there is none to read.
fn not_after(pem: &str) -> Option<SystemTime> {
    let der = CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    // Before 1970 is long past: as good as the epoch.
    let secs = u64::try_from(cert.validity().not_after.timestamp()).unwrap_or(0);
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Names the certificate is good for: loopback by name and address, and this host.
fn subject_names() -> Vec<String> {
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        let host = host.trim();
        if !host.is_empty() && !names.iter().any(|n| n == host) {
            names.push(host.to_string());
        }
    }
    names
}

/// A new self-signed pair, good from a little before now for [`GENERATED_LIFE`], written
/// in place of whatever is at the paths. The key goes first: a stop between the two
/// leaves the old certificate, ending, which the next start renews again.
fn generate(cert_path: &Path, key_path: &Path, origin: Origin) -> Result<TlsIdentity, TlsError> {
    let now = SystemTime::now();
    let (cert_pem, key_pem) = self_signed(now - CLOCK_SKEW, now + GENERATED_LIFE)?;
    if let Some(dir) = key_path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    replace(key_path, &key_pem, 0o600)?;
    replace(cert_path, &cert_pem, 0o644)?;
    Ok(TlsIdentity {
        not_after: not_after(&cert_pem),
        cert_pem,
        key_pem,
        cert_path: cert_path.to_path_buf(),
        key_path: key_path.to_path_buf(),
        origin,
        client_ca: None,
    })
}

/// A self-signed certificate for this host's names, valid between the two times, and its
/// new key, in PEM.
fn self_signed(
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<(String, String), TlsError> {
    let failed = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let mut params = rcgen::CertificateParams::new(subject_names()).map_err(failed)?;
    params.not_before = not_before.into();
    params.not_after = not_after.into();
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes `text` to a new file beside `path`, created with `mode` (the key is never
/// readable by others, not even between its creation and a chmod) and never through a
/// link, then renames it over `path`: whatever stops efbd, `path` holds the old file or
/// the whole new one, never half of it.
fn replace(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    let fail = |source| TlsError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".new");
    let new = path.with_file_name(name);
    // Left by a stop between creating and renaming it (removing a link removes the link).
    match std::fs::remove_file(&new) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
        _ => {}
    }
    let mut file = files::create_new(&new, mode).map_err(generated_file)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&new, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn generated_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_generate(None, None, dir.path()).unwrap();
        assert_eq!(first.origin, Origin::Generated);
        assert!(first.cert_pem.contains("BEGIN CERTIFICATE"));
        let mode = std::fs::metadata(&first.key_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is private");
        let again = load_or_generate(None, None, dir.path()).unwrap();
        assert_eq!(again.origin, Origin::Kept);
        assert_eq!(again.cert_pem, first.cert_pem);
        assert!(again.acceptor().is_ok());
    }

    const DAY: Duration = Duration::from_secs(24 * 3600);

    /// The validity of the first certificate in `pem`, in seconds since the epoch.
    fn validity(pem: &str) -> (i64, i64) {
        let der = CertificateDer::pem_slice_iter(pem.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
        let validity = cert.validity();
        (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        )
    }

    fn unix(time: SystemTime) -> i64 {
        time.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// Writes a generated pair valid from `not_before` to `not_after` into `dir`, as an
    /// earlier efbd would have (the key 0600, the certificate 0644).
    fn generated_between(dir: &Path, not_before: SystemTime, not_after: SystemTime) -> String {
        let (cert, key) = self_signed(not_before, not_after).unwrap();
        replace(&dir.join(GENERATED_KEY), &key, 0o600).unwrap();
        replace(&dir.join(GENERATED_CERT), &cert, 0o644).unwrap();
        cert
    }

    #[test]
    fn a_generated_certificate_is_good_for_a_year_from_a_little_before_now() {
        let dir = tempfile::tempdir().unwrap();
        let before = unix(SystemTime::now());
        let made = load_or_generate(None, None, dir.path()).unwrap();
        let after = unix(SystemTime::now());
        let (not_before, not_after) = validity(&made.cert_pem);
        let skew = CLOCK_SKEW.as_secs() as i64;
        let life = GENERATED_LIFE.as_secs() as i64;
        assert!((before - skew..=after - skew).contains(&not_before));
        assert!((before + life..=after + life).contains(&not_after));
        assert!(not_after - not_before <= 366 * 24 * 3600);
        assert_eq!(made.not_after.map(unix), Some(not_after));
    }

    #[test]
    fn a_generated_certificate_near_its_end_or_past_it_is_renewed_with_a_new_key() {
        let now = SystemTime::now();
        for (not_before, not_after) in [
            (now - 355 * DAY, now + 10 * DAY),
            (now - 400 * DAY, now - DAY),
            (
                now - 336 * DAY,
                now + RENEW_BEFORE - Duration::from_secs(60),
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let old_cert = generated_between(dir.path(), not_before, not_after);
            let old_key = std::fs::read_to_string(dir.path().join(GENERATED_KEY)).unwrap();
            let renewed = load_or_generate(None, None, dir.path()).unwrap();
            let Origin::Renewed { previous_end } = renewed.origin else {
                panic!("not renewed: {:?}", renewed.origin);
            };
            assert_eq!(previous_end.map(unix), Some(unix(not_after)));
            assert!(renewed.cert_pem != old_cert && renewed.key_pem != old_key);
            let (_, end) = validity(&renewed.cert_pem);
            assert!(end >= unix(now + GENERATED_LIFE));
            // On disk with their modes, nothing left beside them; served as it is.
            let on_disk = |name| std::fs::read_to_string(dir.path().join(name)).unwrap();
            assert_eq!(on_disk(GENERATED_CERT), renewed.cert_pem);
            assert_eq!(on_disk(GENERATED_KEY), renewed.key_pem);
            assert_eq!(mode(&renewed.key_path), 0o600);
            assert_eq!(mode(&renewed.cert_path), 0o644);
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
            assert!(renewed.acceptor().is_ok());
            // The next start keeps it.
            let again = load_or_generate(None, None, dir.path()).unwrap();
            assert_eq!(again.origin, Origin::Kept);
            assert_eq!(again.cert_pem, renewed.cert_pem);
        }
    }

    #[test]
    fn a_generated_certificate_with_time_left_is_kept() {
        let now = SystemTime::now();
        let dir = tempfile::tempdir().unwrap();
        let cert = generated_between(dir.path(), now - 100 * DAY, now + RENEW_BEFORE + DAY);
        let kept = load_or_generate(None, None, dir.path()).unwrap();
        assert_eq!(kept.origin, Origin::Kept);
        assert_eq!(kept.cert_pem, cert);
        assert_eq!(kept.ending_warning(now), None, "renewed, not warned of");
    }

    #[test]
    fn a_configured_certificate_near_its_end_is_warned_of_never_replaced() {
        let now = SystemTime::now();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        for (not_after, when) in [
            (
                now + 12 * DAY + Duration::from_secs(60),
                "ends on DATE, in 12 days",
            ),
            (
                now + Duration::from_secs(2 * 3600),
                "ends on DATE, within a day",
            ),
            (now - DAY, "ended on DATE: clients refuse it"),
        ] {
            let (cert_pem, key_pem) = self_signed(now - 300 * DAY, not_after).unwrap();
            std::fs::write(&cert, &cert_pem).unwrap();
            std::fs::write(&key, &key_pem).unwrap();
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
            let loaded = load_or_generate(Some(&cert), Some(&key), dir.path()).unwrap();
            assert_eq!(loaded.origin, Origin::Configured);
            assert_eq!(loaded.cert_pem, cert_pem, "never replaced");
            // The certificate holds whole seconds.
            let date = humantime::format_rfc3339_seconds(
                UNIX_EPOCH + Duration::from_secs(unix(not_after) as u64),
            );
            assert_eq!(
                loaded.ending_warning(now).unwrap(),
                format!(
                    "gnmi.tls_cert (--gnmi-tls-cert): {}: the certificate {}; efbd does not \
                     replace a configured certificate: put a new one (and its key) in its \
                     place and restart efbd",
                    cert.display(),
                    when.replace("DATE", &date.to_string())
                )
            );
        }
        assert!(!dir.path().join(GENERATED_CERT).exists());
        let (cert_pem, _) = self_signed(now - DAY, now + 90 * DAY).unwrap();
        std::fs::write(&cert, &cert_pem).unwrap();
        let loaded = load_or_generate(Some(&cert), Some(&key), dir.path()).unwrap();
        assert_eq!(loaded.ending_warning(now), None);
    }

    #[test]
    fn the_life_left_is_judged_against_a_month() {
        let now = SystemTime::now();
        assert_eq!(Life::at(now + RENEW_BEFORE, now), Life::Good);
        assert_eq!(
            Life::at(now + RENEW_BEFORE - Duration::from_secs(1), now),
            Life::Ending { days_left: 29 }
        );
        assert_eq!(
            Life::at(now + Duration::from_secs(1), now),
            Life::Ending { days_left: 0 }
        );
        assert_eq!(Life::at(now, now), Life::Ended);
        assert_eq!(Life::at(UNIX_EPOCH, now), Life::Ended);
    }

    #[test]
    fn a_key_that_is_not_pem_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut made = load_or_generate(None, None, dir.path()).unwrap();
        made.key_pem = "not a key".into();
        let err = made.acceptor().err().unwrap().to_string();
        assert!(
            err.contains("gnmi-key.pem") && err.contains("private key"),
            "{err}"
        );
    }

    /// A self-signed certificate whose subject has these CNs, at most two (the second
    /// under the CN's OID spelled out: rcgen keeps one value per attribute type).
    fn with_cns(cns: &[&str]) -> CertificateDer<'static> {
        use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "efb tests");
        for (i, cn) in cns.iter().enumerate() {
            let ty = match i {
                0 => DnType::CommonName,
                1 => DnType::CustomDnType(vec![2, 5, 4, 3]),
                _ => panic!("at most two CNs"),
            };
            params.distinguished_name.push(ty, *cn);
        }
        let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap();
        CertificateDer::from(cert.der().to_vec())
    }

    #[test]
    fn a_client_certificate_names_exactly_one_user() {
        assert_eq!(subject_cn(&with_cns(&["ada"])), Ok("ada".to_string()));
        let two = subject_cn(&with_cns(&["ada", "admin"])).unwrap_err();
        assert_eq!(two, CnError::Count(2));
        assert_eq!(
            two.to_string(),
            "the client certificate has 2 subject common names (CN); one is needed, naming the user it logs in as"
        );
        let none = subject_cn(&with_cns(&[])).unwrap_err();
        assert_eq!(
            none.to_string(),
            "the client certificate has no subject common name (CN); one is needed, naming the user it logs in as"
        );
        assert!(matches!(
            subject_cn(&CertificateDer::from(vec![1, 2, 3])),
            Err(CnError::Unreadable(_))
        ));
    }

    #[test]
    fn a_link_planted_for_the_generated_key_is_refused_and_its_target_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("shadow");
        std::fs::write(&precious, "root:secret\n").unwrap();
        std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o600)).unwrap();
        let key = dir.path().join(GENERATED_KEY);
        std::os::unix::fs::symlink(&precious, &key).unwrap();
        for _ in 0..2 {
            // Without the certificate (a first start), then with it (a later start).
            let err = load_or_generate(None, None, dir.path())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("{}: is a symbolic link", key.display())),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root:secret\n");
            assert!(std::fs::symlink_metadata(&key).unwrap().is_symlink());
            std::fs::write(dir.path().join(GENERATED_CERT), "x").unwrap();
        }
    }

    #[test]
    fn half_a_generated_pair_is_replaced_by_a_new_pair() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_generate(None, None, dir.path()).unwrap();
        std::fs::remove_file(&first.cert_path).unwrap();
        let second = load_or_generate(None, None, dir.path()).unwrap();
        assert!(second.origin == Origin::Generated && second.key_pem != first.key_pem);
        assert!(second.acceptor().is_ok());
    }

    #[test]
    fn a_configured_key_or_client_ca_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let made = load_or_generate(None, None, dir.path()).unwrap();
        std::fs::set_permissions(&made.key_path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = load_or_generate(Some(&made.cert_path), Some(&made.key_path), dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "gnmi.tls_key (--gnmi-tls-key): {}: writable by group and others (mode 0666)",
                made.key_path.display()
            )) && err.ends_with(&format!("chmod go-w {}", made.key_path.display())),
            "{err}"
        );
        // The generated one too, read back at the next start.
        let err = load_or_generate(None, None, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("writable by group and others"), "{err}");
        std::fs::set_permissions(&made.cert_path, std::fs::Permissions::from_mode(0o646)).unwrap();
        let cert = made.cert_path.clone();
        let err = made.with_client_ca(&cert).unwrap_err().to_string();
        assert!(
            err.starts_with("gnmi.client_ca (--gnmi-client-ca): ")
                && err.contains("writable by others (mode 0646)"),
            "{err}"
        );
    }

    #[test]
    fn configured_pairs_are_read_and_halves_refused() {
        let dir = tempfile::tempdir().unwrap();
        let made = load_or_generate(None, None, dir.path()).unwrap();
        let read = load_or_generate(
            Some(&made.cert_path),
            Some(&made.key_path),
            Path::new("/nonexistent"),
        )
        .unwrap();
        assert_eq!(read.key_pem, made.key_pem);
        assert!(matches!(
            load_or_generate(Some(&made.cert_path), None, dir.path()),
            Err(TlsError::Half)
        ));
    }
}
