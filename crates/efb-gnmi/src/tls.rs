//! The server's TLS identity: the configured certificate and key, or a self-signed pair
//! generated at first start (kept, so clients can pin it across restarts).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl TlsIdentity {
    /// The same identity, with client certificates signed by the CA in `path` accepted.
    pub fn with_client_ca(mut self, path: &Path) -> Result<TlsIdentity, TlsError> {
        self.client_ca = Some((read(path)?, path.to_path_buf()));
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

/// The subject's common name (CN) of a DER certificate.
pub fn subject_cn(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = parsed.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_string)
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
        (Some(cert), Some(key)) => read_pair(cert, key, false),
        (None, None) => {
            let (cert, key) = (dir.join(GENERATED_CERT), dir.join(GENERATED_KEY));
            if cert.exists() && key.exists() {
                return read_pair(&cert, &key, false);
            }
            generate(&cert, &key)
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

fn read_pair(cert: &Path, key: &Path, generated: bool) -> Result<TlsIdentity, TlsError> {
    Ok(TlsIdentity {
        cert_pem: read(cert)?,
        key_pem: read(key)?,
        cert_path: cert.to_path_buf(),
        key_path: key.to_path_buf(),
        generated,
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

/// Writes a file created with `mode` (the key is never readable by others, not even
/// between its creation and a chmod).
fn write(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |source| TlsError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(fail)?;
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
