//! The certificate authority of wsp's TLS tests (a development crate, never published).
//!
//! **Invariant:** every certificate here is made in memory, for the test that asks, by a CA made
//! in memory for that test; no key is ever read from or kept in the repository, and nothing
//! trusts these certificates but a configuration made from the same [`TestCa`].
//!
//! A [`TestCa`] issues [`Leaf`] certificates for the names a test gives (IP addresses or DNS
//! names), each with its own key, as PEM (what `--tls-cert` and `--tls-key` files hold) and as
//! DER (what a TLS peer presents). [`Leaf::files`] writes one into a temporary directory of its
//! own; [`TestCa::client_config`] and [`Leaf::server_config`] are the rustls configurations of the
//! two ends (aws-lc-rs, the crypto provider of the workspace).
//!
//! ```
//! use wsp_testca::TestCa;
//!
//! let ca = TestCa::new("wsp test CA");
//! let leaf = ca.leaf();
//! let files = leaf.files();
//! assert_eq!(std::fs::read_to_string(files.cert()).unwrap(), leaf.cert_pem);
//! assert!(ca.pem().starts_with("-----BEGIN CERTIFICATE-----"));
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// A certificate authority made in memory: a self-signed CA certificate and its key.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
    pem: String,
}

impl TestCa {
    /// A new CA whose certificate has the common name `name`, with a fresh key.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::new()).expect("empty names are valid");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("a key pair");
        let cert = params
            .self_signed(&key)
            .expect("a self-signed CA certificate");
        Self {
            der: cert.der().clone(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA certificate as PEM (what a `--cacert` or `sslrootcert` file holds).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The CA certificate as DER.
    pub fn der(&self) -> &CertificateDer<'static> {
        &self.der
    }

    /// A server certificate this CA signed for 127.0.0.1 and `localhost`, with a fresh key.
    pub fn leaf(&self) -> Leaf {
        self.issue(&["127.0.0.1", "localhost"])
    }

    /// A server certificate this CA signed for `names`, with a fresh key: a name that parses as
    /// an IP address is an IP address, any other a DNS name.
    ///
    /// # Panics
    ///
    /// When a name is neither an IP address nor a valid DNS name.
    pub fn issue(&self, names: &[&str]) -> Leaf {
        let mut params = CertificateParams::new(Vec::new()).expect("empty names are valid");
        params.subject_alt_names = names
            .iter()
            .map(|name| match name.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(
                    (*name)
                        .try_into()
                        .unwrap_or_else(|e| panic!("{name:?} is no DNS name: {e}")),
                ),
            })
            .collect();
        let key = KeyPair::generate().expect("a key pair");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a certificate signed by the CA");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }

    /// A rustls client configuration that trusts this CA alone and offers HTTP/1.1 by ALPN.
    pub fn client_config(&self) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots
            .add(self.der.clone())
            .expect("the CA certificate parses");
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("the provider supports the default versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// A server certificate a [`TestCa`] signed, and its private key.
pub struct Leaf {
    /// The certificate as PEM (what a `--tls-cert` file holds).
    pub cert_pem: String,
    /// The private key as PKCS #8 PEM (what a `--tls-key` file holds).
    pub key_pem: String,
    /// The certificate as DER (what the server presents in a handshake).
    pub der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl Leaf {
    /// The private key as DER.
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key_der.clone()).into()
    }

    /// A rustls server configuration presenting this certificate alone (no chain), with the
    /// safe default protocol versions and no client authentication.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("the provider supports the default versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.der.clone()], self.key_der())
            .expect("the certificate and its key match");
        Arc::new(config)
    }

    /// This certificate and its key as `cert.pem` and `key.pem` in a new temporary directory.
    pub fn files(&self) -> Files {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let files = Files {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            dir,
        };
        files.write(self);
        files
    }
}

/// A certificate file and a key file in a temporary directory of their own, removed when this
/// is dropped.
pub struct Files {
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

impl Files {
    /// The directory that holds the two files (a test may put files of its own there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The certificate file, `cert.pem`.
    pub fn cert(&self) -> &Path {
        &self.cert
    }

    /// The key file, `key.pem`.
    pub fn key(&self) -> &Path {
        &self.key
    }

    /// Writes `leaf` over the certificate and key files, as a renewal does.
    pub fn write(&self, leaf: &Leaf) {
        std::fs::write(&self.cert, &leaf.cert_pem).expect("writing the certificate file");
        std::fs::write(&self.key, &leaf.key_pem).expect("writing the key file");
    }

    /// Writes `text` to the file `name` of [`dir`](Self::dir) and returns its path.
    pub fn add(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }
}

/// The crypto provider of every configuration here: aws-lc-rs, as in the workspace's rustls.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_names_what_it_was_issued_for_and_its_files_hold_it() {
        let ca = TestCa::new("wsp test CA");
        let leaf = ca.issue(&["::1", "wsp.example"]);
        let files = leaf.files();
        assert_eq!(
            std::fs::read_to_string(files.cert()).unwrap(),
            leaf.cert_pem
        );
        assert_eq!(std::fs::read_to_string(files.key()).unwrap(), leaf.key_pem);
        assert!(leaf.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let other = ca.leaf();
        files.write(&other);
        assert_eq!(
            std::fs::read_to_string(files.cert()).unwrap(),
            other.cert_pem
        );
        assert_ne!(leaf.der, other.der);
        let extra = files.add("ca.pem", ca.pem());
        assert_eq!(extra.parent(), Some(files.dir()));
        let dir = files.dir().to_path_buf();
        drop(files);
        assert!(!dir.exists());
    }

    #[test]
    fn a_client_trusting_the_ca_accepts_its_leaf_and_no_other() {
        let ca = TestCa::new("wsp test CA");
        let leaf = ca.leaf();
        let handshake = |client: Arc<ClientConfig>, name: &'static str| {
            let name = rustls::pki_types::ServerName::try_from(name).unwrap();
            let mut client = rustls::ClientConnection::new(client, name).unwrap();
            let mut server = rustls::ServerConnection::new(leaf.server_config()).unwrap();
            let mut wire = Vec::new();
            while client.is_handshaking() || server.is_handshaking() {
                wire.clear();
                client.write_tls(&mut wire).unwrap();
                server.read_tls(&mut wire.as_slice()).unwrap();
                server.process_new_packets().map_err(|e| e.to_string())?;
                wire.clear();
                server.write_tls(&mut wire).unwrap();
                client.read_tls(&mut wire.as_slice()).unwrap();
                client.process_new_packets().map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(client.alpn_protocol().map(<[u8]>::to_vec))
        };
        assert_eq!(handshake(ca.client_config(), "localhost"), Ok(None));
        assert_eq!(handshake(ca.client_config(), "127.0.0.1"), Ok(None));
        let wrong_name = handshake(ca.client_config(), "wsp.example").unwrap_err();
        assert!(wrong_name.contains("not valid for name"), "{wrong_name}");
        let stranger = TestCa::new("another CA");
        let refused = handshake(stranger.client_config(), "localhost").unwrap_err();
        assert!(refused.contains("UnknownIssuer"), "{refused}");
    }
}
