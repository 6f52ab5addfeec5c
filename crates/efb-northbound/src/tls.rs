//! The server's TLS identity: the configured certificate and key, or a self-signed pair
//! generated at first start (kept, so clients can pin it across restarts).
//!
//! The generated pair lives in efbd's datastore directory and is made, and read back, the
//! way [`efb_datastore::files`] keeps files there: created new with its mode (key 0600,
//! certificate 0644), never through a symbolic link. A configured key must be writable by
//! nobody but root or efbd's account, and so must the client CA (whoever can write it may
//! log in as anyone).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Made just now (first start without a configured certificate).
    pub generated: bool,
    /// The CA that signs client certificates (PEM) and its file: with one, a client may
    /// present a certificate signed by it (mTLS) instead of a password; without, clients
    /// are not asked for one.
    pub client_ca: Option<(String, PathBuf)>,
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
            Ok(TlsIdentity {
                cert_pem: read(cert)?,
                key_pem,
                cert_path: cert.to_path_buf(),
                key_path: key.to_path_buf(),
                generated: false,
                client_ca: None,
            })
        }
        (None, None) => {
            let (cert, key) = (dir.join(GENERATED_CERT), dir.join(GENERATED_KEY));
            match (present(&cert)?, present(&key)?) {
                (true, true) => read_generated(&cert, &key),
                (false, false) => generate(&cert, &key),
                // Generation stopped halfway (the key is written first): the half left is
                // of no use without the other, and a new pair replaces it.
                (cert_left, _) => {
                    let left = if cert_left { &cert } else { &key };
                    std::fs::remove_file(left).map_err(|source| TlsError::Write {
                        path: left.display().to_string(),
                        source,
                    })?;
                    generate(&cert, &key)
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
    Ok(TlsIdentity {
        cert_pem: files::read_trusted(cert).map_err(generated_file)?,
        key_pem: files::read_trusted(key).map_err(generated_file)?,
        cert_path: cert.to_path_buf(),
        key_path: key.to_path_buf(),
        generated: false,
        client_ca: None,
    })
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

fn generate(cert_path: &Path, key_path: &Path) -> Result<TlsIdentity, TlsError> {
    let certified = rcgen::generate_simple_self_signed(subject_names())
        .map_err(|e| TlsError::Generate(e.to_string()))?;
    let cert_pem = certified.cert.pem();
    let key_pem = certified.signing_key.serialize_pem();
    if let Some(dir) = key_path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    write(key_path, &key_pem, 0o600)?;
    write(cert_path, &cert_pem, 0o644)?;
    Ok(TlsIdentity {
        cert_pem,
        key_pem,
        cert_path: cert_path.to_path_buf(),
        key_path: key_path.to_path_buf(),
        generated: true,
        client_ca: None,
    })
}

/// Writes a new file created with `mode` (the key is never readable by others, not even
/// between its creation and a chmod), never through a link.
fn write(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    let fail = |source| TlsError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut file = files::create_new(path, mode).map_err(generated_file)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)
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
        assert!(first.generated);
        assert!(first.cert_pem.contains("BEGIN CERTIFICATE"));
        let mode = std::fs::metadata(&first.key_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is private");
        let again = load_or_generate(None, None, dir.path()).unwrap();
        assert!(!again.generated);
        assert_eq!(again.cert_pem, first.cert_pem);
        assert!(again.acceptor().is_ok());
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
        assert!(second.generated && second.key_pem != first.key_pem);
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
