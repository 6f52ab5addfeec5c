//! Certificates for the tests of client certificates (mTLS): a CA of their own.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A new CA ("efb test CA"), its certificate written to `dir/ca.pem`: what signs the
/// client certificates of a test.
pub fn ca(dir: &Path) -> Issuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "efb test CA");
    let key = KeyPair::generate().unwrap();
    let ca = params.self_signed(&key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    Issuer::new(params, key)
}
