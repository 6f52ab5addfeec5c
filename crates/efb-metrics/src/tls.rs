//! The TLS side of the metrics server, from `tls_server_config`: the certificate and key
//! (the key, like the web configuration file, must be root's or efbd's alone), the TLS
//! versions, and client certificates verified against the client CA when asked for.
//! HTTP/1.1 only: the server bounds connections, not streams within them.

use std::path::Path;
use std::sync::Arc;

use efb_datastore::files::{self, FileError};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::server::danger::ClientCertVerifier;
use tokio_rustls::rustls::{self, ServerConfig, SupportedProtocolVersion};

use crate::web::{ClientAuth, TlsSettings, TlsVersion};

/// A file `tls_server_config` names is refused: `key: problem`.
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    /// Unreadable, or (the key, the client CA) writable by others.
    #[error("tls_server_config.{key}: {error}")]
    File { key: &'static str, error: FileError },
    #[error("tls_server_config.{key}: {path}: {message}")]
    Invalid {
        key: &'static str,
        path: String,
        message: String,
    },
}

/// The acceptor `settings` describe; the files are read now.
pub fn acceptor(settings: &TlsSettings) -> Result<TlsAcceptor, TlsFileError> {
    let certs = certificates("cert_file", &settings.cert_file, files::read_configured)?;
    let key = private_key(&settings.key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings.versions))
        .map_err(|e| invalid("min_version", &settings.cert_file, e.to_string()))?;
    let builder = match &settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::IfGiven(ca) => {
            builder.with_client_cert_verifier(verifier(ca, provider, false)?)
        }
        ClientAuth::Required(ca) => {
            builder.with_client_cert_verifier(verifier(ca, provider, true)?)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        invalid(
            "key_file",
            &settings.key_file,
            format!("with cert_file: {e}"),
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn versions((min, max): (TlsVersion, TlsVersion)) -> Vec<&'static SupportedProtocolVersion> {
    [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(version, _)| (min..=max).contains(version))
    .map(|(_, supported)| supported)
    .collect()
}

fn invalid(key: &'static str, path: &Path, message: String) -> TlsFileError {
    TlsFileError::Invalid {
        key,
        path: path.display().to_string(),
        message,
    }
}

/// The certificates in the PEM file at `path`, read with `read`: at least one.
fn certificates(
    key: &'static str,
    path: &Path,
    read: fn(&Path) -> Result<String, FileError>,
) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let pem = read(path).map_err(|error| TlsFileError::File { key, error })?;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(key, path, format!("not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(key, path, "no certificate in the file".into()));
    }
    Ok(certs)
}

/// The server's key: whoever may write it may pose as the server.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsFileError> {
    let pem = files::read_configured(path).map_err(|error| TlsFileError::File {
        key: "key_file",
        error,
    })?;
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| invalid("key_file", path, format!("not a PEM private key: {e}")))
}

/// Verifies client certificates against the CA at `ca` (whoever may write it may let
/// anyone in); without `required`, a client without a certificate is let through.
fn verifier(
    ca: &Path,
    provider: Arc<rustls::crypto::CryptoProvider>,
    required: bool,
) -> Result<Arc<dyn ClientCertVerifier>, TlsFileError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates("client_ca_file", ca, files::read_configured)? {
        roots
            .add(cert)
            .map_err(|e| invalid("client_ca_file", ca, format!("not a CA certificate: {e}")))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if required {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder
        .build()
        .map_err(|e| invalid("client_ca_file", ca, e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn pair(dir: &Path) -> TlsSettings {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        TlsSettings {
            cert_file: cert,
            key_file: key,
            client_auth: ClientAuth::None,
            versions: (TlsVersion::Tls12, TlsVersion::Tls13),
        }
    }

    #[test]
    fn a_certificate_and_its_key_make_an_acceptor() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = pair(dir.path());
        assert!(acceptor(&settings).is_ok());
        settings.client_auth = ClientAuth::Required(settings.cert_file.clone());
        assert!(
            acceptor(&settings).is_ok(),
            "a self-signed CA verifies clients"
        );
        assert_eq!(versions((TlsVersion::Tls13, TlsVersion::Tls13)).len(), 1);
    }

    #[test]
    fn a_key_others_may_write_is_refused_naming_the_key_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let settings = pair(dir.path());
        std::fs::set_permissions(&settings.key_file, std::fs::Permissions::from_mode(0o666))
            .unwrap();
        let err = acceptor(&settings).err().unwrap().to_string();
        let key = settings.key_file.display();
        assert!(
            err.starts_with(&format!("tls_server_config.key_file: {key}: writable by"))
                && err.contains(&format!("chmod go-w {key}")),
            "{err}"
        );
    }

    #[test]
    fn files_that_are_not_what_they_should_be_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let settings = pair(dir.path());
        std::fs::write(&settings.cert_file, "not PEM").unwrap();
        let err = acceptor(&settings).err().unwrap().to_string();
        assert!(
            err.starts_with("tls_server_config.cert_file: ") && err.contains("no certificate"),
            "{err}"
        );
        let settings = pair(dir.path());
        std::fs::write(&settings.key_file, "not a key").unwrap();
        let err = acceptor(&settings).err().unwrap().to_string();
        assert!(err.contains("not a PEM private key"), "{err}");
        let missing = TlsSettings {
            key_file: dir.path().join("missing.pem"),
            ..pair(dir.path())
        };
        let err = acceptor(&missing).err().unwrap().to_string();
        assert!(
            err.starts_with("tls_server_config.key_file: cannot read"),
            "{err}"
        );
    }
}
