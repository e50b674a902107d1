//! TLS on the listener: the certificate and key the server presents, read from PEM files and
//! re-read on demand, and the handshake of one connection, run under its first header's clock.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{ConfigBuilder, InconsistentKeys, ServerConfig, WantsVerifier};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::ConnectionLimits;
use crate::conn::ConnState;

/// The application protocol offered in the handshake (ALPN): HTTP/1.1, the only one served.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The first byte of every TLS ClientHello: the record type "handshake".
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// The answer to a client that speaks plain HTTP to the TLS port, before the connection
/// closes.
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
    content-type: text/plain; charset=utf-8\r\n\
    content-length: 49\r\n\
    connection: close\r\n\
    \r\n\
    This port speaks HTTPS: use https:// in the URL.\n";

/// The server's TLS: a certificate chain and its private key, read from two PEM files, and
/// the rustls configuration made of them (ALPN `http/1.1`, no client certificates).
///
/// Each handshake uses the configuration current when it begins; [`ServerTls::reload`]
/// re-reads both files and replaces it only when they make a whole new one, so a bad file
/// never leaves the server without a certificate, and connections already open keep the
/// certificate they began with.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use wsp_listener::{ConnectionLimits, Listener, ServerTls};
///
/// let tls = Arc::new(ServerTls::load("/etc/wsp/cert.pem", "/etc/wsp/key.pem")?);
/// let tcp = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
/// let server = wsp_listener::serve(
///     Listener::new(tcp, Some(tls.clone())),
///     app,
///     ConnectionLimits::default(),
///     std::future::pending(),
/// );
/// // Later, when the files were renewed: tls.reload()?;
/// server.await?;
/// # Ok(()) }
/// ```
pub struct ServerTls {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<Arc<ServerConfig>>,
}

impl ServerTls {
    /// Reads the certificate chain (PEM `CERTIFICATE` blocks, the server's own first) from
    /// `cert_file` and its private key (PEM PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or
    /// SEC1 `EC PRIVATE KEY`) from `key_file`, and checks that they belong together.
    pub fn load(
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> Result<Self, TlsError> {
        let (cert_file, key_file) = (cert_file.into(), key_file.into());
        let config = server_config(&cert_file, &key_file)?;
        Ok(Self {
            cert_file,
            key_file,
            current: RwLock::new(Arc::new(config)),
        })
    }

    /// Re-reads both files. On success, handshakes from now on present the new certificate;
    /// on failure, the one in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = Arc::new(server_config(&self.cert_file, &self.key_file)?);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = config;
        Ok(())
    }

    /// The configuration the next handshake uses.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The certificate chain file.
    pub fn cert_file(&self) -> &Path {
        &self.cert_file
    }

    /// The private key file.
    pub fn key_file(&self) -> &Path {
        &self.key_file
    }
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .finish_non_exhaustive()
    }
}

/// Which of the two files a [`TlsError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFile {
    /// The certificate chain.
    Certificate,
    /// The private key.
    PrivateKey,
}

impl fmt::Display for TlsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Certificate => "TLS certificate",
            Self::PrivateKey => "TLS private key",
        })
    }
}

/// What is wrong with a file (see [`TlsError`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The file could not be read: missing, not readable, a directory.
    Unreadable(io::Error),
    /// The file is not PEM text, or a PEM block in it is malformed.
    NotPem(String),
    /// The certificate file holds no `CERTIFICATE` block.
    NoCertificate,
    /// The key file holds no private key block.
    NoPrivateKey,
    /// The key file holds only an encrypted private key.
    EncryptedKey,
    /// The private key is not the key of the certificate (the first one of the chain).
    KeyMismatch,
    /// rustls refused the key or the certificate (an unsupported key type, a certificate
    /// that does not parse).
    Refused(rustls::Error),
}

/// Why [`ServerTls::load`] or [`ServerTls::reload`] failed: the file, and what is wrong
/// with it. Its text names both on one line, e.g. `TLS private key /etc/wsp/key.pem: it does
/// not match the certificate in /etc/wsp/cert.pem`.
#[derive(Debug)]
pub struct TlsError {
    file: TlsFile,
    path: PathBuf,
    problem: TlsProblem,
    /// The certificate file, for [`TlsProblem::KeyMismatch`].
    other: Option<PathBuf>,
}

impl TlsError {
    fn new(file: TlsFile, path: &Path, problem: TlsProblem) -> Self {
        Self {
            file,
            path: path.to_owned(),
            problem,
            other: None,
        }
    }

    /// Which file is at fault.
    pub fn file(&self) -> TlsFile {
        self.file
    }

    /// The path of that file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &TlsProblem {
        &self.problem
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.file, self.path.display())?;
        match &self.problem {
            TlsProblem::Unreadable(e) => write!(f, "cannot be read: {e}"),
            TlsProblem::NotPem(why) => write!(f, "not a PEM file ({why})"),
            TlsProblem::NoCertificate => {
                f.write_str("no certificate in it (expected -----BEGIN CERTIFICATE-----)")
            }
            TlsProblem::NoPrivateKey => f.write_str(
                "no private key in it (expected -----BEGIN PRIVATE KEY-----, \
                 -----BEGIN RSA PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)",
            ),
            TlsProblem::EncryptedKey => f.write_str(
                "the private key is encrypted; write it out unencrypted \
                 (openssl pkey -in KEY -out KEY.plain) and keep that file private",
            ),
            TlsProblem::KeyMismatch => match &self.other {
                Some(cert) => write!(f, "it does not match the certificate in {}", cert.display()),
                None => f.write_str("it does not match the certificate"),
            },
            TlsProblem::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            TlsProblem::Unreadable(e) => Some(e),
            TlsProblem::Refused(e) => Some(e),
            _ => None,
        }
    }
}

/// The server configuration of the two files.
fn server_config(cert_file: &Path, key_file: &Path) -> Result<ServerConfig, TlsError> {
    let certs = read_certificates(cert_file)?;
    let key = read_private_key(key_file)?;
    let builder = config_builder();
    let signing_key = builder
        .crypto_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::new(TlsFile::PrivateKey, key_file, TlsProblem::Refused(e)))?;
    let certified = CertifiedKey::new(certs, signing_key);
    match certified.keys_match() {
        // A key that cannot tell its public half cannot be compared: rustls serves it anyway.
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            let mut e = TlsError::new(TlsFile::PrivateKey, key_file, TlsProblem::KeyMismatch);
            e.other = Some(cert_file.to_owned());
            return Err(e);
        }
        Err(e) => {
            return Err(TlsError::new(
                TlsFile::Certificate,
                cert_file,
                TlsProblem::Refused(e),
            ));
        }
    }
    let mut config = builder
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(config)
}

/// The start of every server configuration, and the one place that decides the crypto
/// provider: the process's default ([`rustls::crypto::CryptoProvider::get_default`]) when one
/// was installed, else the one rustls is built with. No provider is named here, so the
/// workspace can switch providers in its manifest alone.
fn config_builder() -> ConfigBuilder<ServerConfig, WantsVerifier> {
    ServerConfig::builder()
}

/// The text of `path`, for `file`.
fn read(file: TlsFile, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::new(file, path, TlsProblem::Unreadable(e)))
}

/// Every PEM block of `text`, the text of `path`, for `file`.
fn pem_blocks(
    file: TlsFile,
    path: &Path,
    text: &[u8],
) -> Result<Vec<(SectionKind, Vec<u8>)>, TlsError> {
    let bad = |problem| TlsError::new(file, path, problem);
    let blocks = <(SectionKind, Vec<u8>)>::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(TlsProblem::NotPem(format!("a malformed block: {e}"))))?;
    if blocks.is_empty() && !contains(text, b"-----BEGIN ") {
        return Err(bad(TlsProblem::NotPem("no -----BEGIN line".into())));
    }
    Ok(blocks)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = read(TlsFile::Certificate, path)?;
    let certs: Vec<_> = pem_blocks(TlsFile::Certificate, path, &text)?
        .into_iter()
        .filter(|(kind, _)| *kind == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der))
        .collect();
    if certs.is_empty() {
        return Err(TlsError::new(
            TlsFile::Certificate,
            path,
            TlsProblem::NoCertificate,
        ));
    }
    Ok(certs)
}

fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = read(TlsFile::PrivateKey, path)?;
    let key = pem_blocks(TlsFile::PrivateKey, path, &text)?
        .into_iter()
        .find_map(|(kind, der)| PrivateKeyDer::from_pem(kind, der));
    if let Some(key) = key {
        return Ok(key);
    }
    // Encrypted keys are PEM blocks rustls does not know: say what they are.
    let problem = if contains(&text, b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || contains(&text, b"Proc-Type: 4,ENCRYPTED")
    {
        TlsProblem::EncryptedKey
    } else {
        TlsProblem::NoPrivateKey
    };
    Err(TlsError::new(TlsFile::PrivateKey, path, problem))
}

/// The TLS handshake of an accepted connection, in the connection's own task and under its
/// first header's clock ([`ConnState::before_first_request`]): a client that never finishes
/// it is closed when the header timeout passes, and the registry may shed it like any idle
/// connection. A client that speaks plain HTTP is answered 400 and closed. Every failure is
/// logged at debug level and ends only this connection.
pub(crate) async fn handshake(
    stream: TcpStream,
    tls: &ServerTls,
    conn: &ConnState,
    limits: &ConnectionLimits,
) -> Option<TlsStream<TcpStream>> {
    let config = tls.config();
    let accept = async move {
        let mut first = [0u8; 1];
        if stream.peek(&mut first).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the client closed the connection before the TLS handshake",
            ));
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            answer_plain_http(&stream);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a TLS handshake (plain HTTP?): answered 400",
            ));
        }
        tokio_rustls::TlsAcceptor::from(config).accept(stream).await
    };
    match conn.before_first_request(limits, accept).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(outcome) => {
            tracing::debug!(%outcome, "connection closed during the TLS handshake");
            None
        }
    }
}

/// Tells a plain HTTP client to use `https://`, without waiting for anything: the request
/// that has arrived is read and dropped (so closing sends a FIN, not a reset that could
/// destroy the answer), and the answer, far smaller than a socket buffer, is written once.
fn answer_plain_http(stream: &TcpStream) {
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.try_read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let _ = stream.try_write(PLAIN_HTTP_ANSWER);
}
