//! TLS for PostgreSQL connections: libpq's `sslmode` and `sslrootcert` in the connection string,
//! carried out with rustls.
//!
//! tokio-postgres knows `sslmode` `disable`, `prefer` and `require` only, and no `sslrootcert`,
//! so [`parse`] takes both out of the connection string (URL or `key=value` form), hands the rest
//! to tokio-postgres, and builds the [`MakeTls`] that carries them out, as libpq does:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | when the server offers it | not checked, unless `sslrootcert` names a file |
//! | `require` | always | not checked, unless `sslrootcert` names a file |
//! | `verify-ca` | always | signed by a trusted CA |
//! | `verify-full` | always | signed by a trusted CA and issued for the host name |
//!
//! The trusted CAs are those of `sslrootcert=FILE` (PEM), or the system's when it is absent or
//! `system` (which, as in libpq, asks for `verify-full`). When a file is given, the chain is
//! checked in every mode that uses TLS (libpq does the same when its root file exists).

use std::error::Error as _;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use sha2::Digest as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

use crate::ConnectError;

/// The rustls crypto provider of every PostgreSQL connection (the one wsp uses everywhere).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// libpq's `sslmode` values that wsp carries out (`allow` is not one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS when the server offers it (libpq's default).
    Prefer,
    /// TLS always; the certificate is checked only against an `sslrootcert` file.
    Require,
    /// TLS always; the certificate must chain to a trusted CA.
    VerifyCa,
    /// TLS always; the certificate must chain to a trusted CA and name the host.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, ConnectError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            "allow" => {
                return Err(invalid(
                    "sslmode=allow is not supported: use prefer, or disable".into(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "sslmode={other:?} is not one of disable, prefer, require, verify-ca, \
                     verify-full"
                )));
            }
        })
    }

    /// The name as written in a connection string.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    fn driver_mode(self) -> tokio_postgres::config::SslMode {
        match self {
            Self::Disable => tokio_postgres::config::SslMode::Disable,
            Self::Prefer => tokio_postgres::config::SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

/// Where the trusted CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// The system's CA certificates.
    System,
    /// The certificates of a PEM file.
    File(PathBuf),
}

/// The TLS parameters taken out of a connection string.
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsParams {
    sslmode: Option<String>,
    sslrootcert: Option<String>,
}

fn invalid(reason: String) -> ConnectError {
    ConnectError::InvalidUrl { reason }
}

/// Parses a connection string (URL or `key=value` form) into tokio-postgres's settings and the
/// TLS connector that carries out its `sslmode` and `sslrootcert`. Errors never quote the
/// string, which may hold a password.
pub(crate) fn parse(conn: &str) -> Result<(tokio_postgres::Config, MakeTls), ConnectError> {
    let (rest, params) = take_tls_params(conn)?;
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e: tokio_postgres::Error| {
        invalid(match e.source() {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        })
    })?;
    let roots = match params.sslrootcert.as_deref() {
        None | Some("") => None,
        Some("system") => Some(Roots::System),
        Some(file) => Some(Roots::File(PathBuf::from(file))),
    };
    let mode = match params.sslmode.as_deref() {
        Some(value) => SslMode::parse(value)?,
        None if roots == Some(Roots::System) => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if roots == Some(Roots::System) && mode != SslMode::VerifyFull {
        return Err(invalid(format!(
            "sslrootcert=system needs sslmode=verify-full (as in libpq), not {}",
            mode.name()
        )));
    }
    config.ssl_mode(mode.driver_mode());
    let tls = MakeTls::new(mode, roots)?;
    Ok((config, tls))
}

/// The connection string without its `sslmode` and `sslrootcert`, and their values. Other
/// `ssl*` parameters that tokio-postgres does not know are refused by name.
fn take_tls_params(conn: &str) -> Result<(String, TlsParams), ConnectError> {
    let mut params = TlsParams::default();
    let mut take = |key: &str, value: String| -> Result<bool, ConnectError> {
        let slot = match key {
            "sslmode" => &mut params.sslmode,
            "sslrootcert" => &mut params.sslrootcert,
            // Known to tokio-postgres, passed on.
            "sslnegotiation" => return Ok(false),
            other if other.starts_with("ssl") => {
                return Err(invalid(format!(
                    "{other} is not supported (wsp understands sslmode, sslrootcert and \
                     sslnegotiation)"
                )));
            }
            _ => return Ok(false),
        };
        *slot = Some(value);
        Ok(true)
    };
    let rest = if let Some(after) = conn
        .strip_prefix("postgres://")
        .or_else(|| conn.strip_prefix("postgresql://"))
    {
        // Where the query starts, as tokio-postgres sees it: user info runs to the first `@`.
        let prefix = conn.len() - after.len();
        let from = after.find('@').map_or(0, |at| at + 1);
        match after[from..].find('?') {
            None => conn.to_owned(),
            Some(q) => {
                let query_start = prefix + from + q;
                let mut kept = Vec::new();
                for pair in conn[query_start + 1..].split('&') {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(&percent_decode(key)?, percent_decode(value)?)? {
                        kept.push(pair);
                    }
                }
                let mut rest = conn[..query_start].to_owned();
                if !kept.is_empty() {
                    rest.push('?');
                    rest.push_str(&kept.join("&"));
                }
                rest
            }
        }
    } else {
        let mut rest = String::with_capacity(conn.len());
        let mut copied = 0;
        for (key, value, span) in key_values(conn)? {
            if take(key, value)? {
                rest.push_str(&conn[copied..span.0]);
                copied = span.1;
            }
        }
        rest.push_str(&conn[copied..]);
        rest
    };
    Ok((rest, params))
}

/// Decodes `%XX` escapes (as tokio-postgres does for URL parts).
fn percent_decode(raw: &str) -> Result<String, ConnectError> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map(|text| text.into_owned())
        .map_err(|_| invalid("a parameter is not UTF-8 once decoded".into()))
}

/// One `key=value` pair of a keyword/value string: the key, the value unquoted, and the byte
/// range the pair takes.
type KeyValue<'a> = (&'a str, String, (usize, usize));

/// The `key=value` pairs of a libpq keyword/value string, read by tokio-postgres's rules
/// (whitespace around `=`, single quotes, backslash escapes).
fn key_values(conn: &str) -> Result<Vec<KeyValue<'_>>, ConnectError> {
    let bytes = conn.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let malformed = || invalid("malformed key=value connection string".into());
    loop {
        i = skip_ws(i);
        if i >= bytes.len() {
            return Ok(out);
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let key = &conn[start..i];
        i = skip_ws(i);
        if bytes.get(i) != Some(&b'=') {
            return Err(malformed());
        }
        i = skip_ws(i + 1);
        let mut value = Vec::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(malformed()),
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        value.push(bytes[i + 1]);
                        i += 2;
                    }
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    i += 1;
                }
                value.push(bytes[i]);
                i += 1;
            }
            if value.is_empty() {
                return Err(malformed());
            }
        }
        let value = String::from_utf8(value).map_err(|_| malformed())?;
        out.push((key, value, (start, i)));
    }
}

/// Makes the TLS connection of each PostgreSQL connection, as the `sslmode` asks.
#[derive(Clone)]
pub(crate) struct MakeTls {
    config: Arc<ClientConfig>,
    mode: SslMode,
    /// Where the trusted CAs came from, for certificate errors.
    trusted: Arc<str>,
}

impl fmt::Debug for MakeTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MakeTls")
            .field("mode", &self.mode)
            .field("trusted", &self.trusted)
            .finish()
    }
}

impl MakeTls {
    fn new(mode: SslMode, roots: Option<Roots>) -> Result<Self, ConnectError> {
        let provider = provider();
        let trusted: Arc<str> = match &roots {
            Some(Roots::File(path)) => format!("checked against sslrootcert {}", path.display()),
            _ => "checked against the system's CA certificates; set sslrootcert=FILE for a \
                  private CA"
                .to_owned(),
        }
        .into();
        let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
            (SslMode::Disable, _) | (SslMode::Prefer | SslMode::Require, None) => {
                Arc::new(Unverified(provider.signature_verification_algorithms))
            }
            (_, Some(Roots::File(path))) => {
                let store = read_roots(&path)?;
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                        .build()
                        .map_err(|e| invalid(format!("sslrootcert {}: {e}", path.display())))?;
                if mode == SslMode::VerifyFull {
                    webpki
                } else {
                    Arc::new(AnyName(webpki))
                }
            }
            (_, _) => {
                let system =
                    rustls_platform_verifier::Verifier::new(provider.clone()).map_err(|e| {
                        ConnectError::Tls {
                            mode: mode.name(),
                            reason: format!("cannot load the system's CA certificates: {e}"),
                        }
                    })?;
                if mode == SslMode::VerifyFull {
                    Arc::new(system)
                } else {
                    Arc::new(AnyName(Arc::new(system)))
                }
            }
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConnectError::Tls {
                mode: mode.name(),
                reason: e.to_string(),
            })?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        // PostgreSQL 17 asks for it with sslnegotiation=direct; older servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Self {
            config: Arc::new(config),
            mode,
            trusted,
        })
    }

    /// The `sslmode` this connector carries out.
    pub(crate) fn mode(&self) -> SslMode {
        self.mode
    }
}

/// The CA certificates of a PEM file, refused when it has none.
fn read_roots(path: &Path) -> Result<RootCertStore, ConnectError> {
    let bad = |why: String| invalid(format!("sslrootcert {}: {why}", path.display()));
    let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
        store
            .add(cert)
            .map_err(|e| bad(format!("unusable CA certificate: {e}")))?;
    }
    if store.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(store)
}

/// Takes any certificate (libpq's `prefer` and `require` without a root file), while still
/// checking that the server holds the certificate's key.
#[derive(Debug)]
struct Unverified(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `verify-ca`: the chain must verify, the host name is not looked at. rustls's WebPKI
/// verifier (also under the platform verifier on Linux) checks the name last, after the chain,
/// its validity period and its purpose, so a name error means everything else passed.
#[derive(Debug)]
struct AnyName(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl<S> MakeTlsConnect<S> for MakeTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = Connect;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, Self::Error> {
        Ok(Connect {
            config: self.config.clone(),
            domain: domain.to_owned(),
            trusted: self.trusted.clone(),
        })
    }
}

/// The TLS handshake of one connection.
pub(crate) struct Connect {
    config: Arc<ClientConfig>,
    domain: String,
    trusted: Arc<str>,
}

/// A failed TLS handshake, in rustls's words (and, for a certificate no trusted CA signed, which
/// CAs those were).
#[derive(Debug)]
pub(crate) struct HandshakeError(String);

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HandshakeError {}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = HandshakeError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream<S>, HandshakeError>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = ServerName::try_from(self.domain.clone()).map_err(|e| {
                HandshakeError(format!("{:?} cannot be checked by TLS: {e}", self.domain))
            })?;
            tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await
                .map(TlsStream)
                .map_err(|e| {
                    // A certificate no trusted CA signed: say which CAs those were.
                    let unknown_issuer = e.get_ref().is_some_and(|inner| {
                        matches!(
                            inner.downcast_ref::<rustls::Error>(),
                            Some(rustls::Error::InvalidCertificate(
                                CertificateError::UnknownIssuer
                            ))
                        )
                    });
                    HandshakeError(if unknown_issuer {
                        format!("{e} ({})", self.trusted)
                    } else {
                        e.to_string()
                    })
                })
        })
    }
}

/// A PostgreSQL connection over TLS.
pub(crate) struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for TlsStream<S> {
    /// `tls-server-end-point` (RFC 5929), so SCRAM logins can bind to this TLS session.
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|cert| end_point_hash(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// The hash of a DER certificate for `tls-server-end-point`: with the hash function of its
/// signature algorithm, SHA-256 for MD5 and SHA-1 (RFC 5929 §4.1). `None` for algorithms
/// without one (Ed25519, RSA-PSS): the login then goes without channel binding.
fn end_point_hash(cert: &[u8]) -> Option<Vec<u8>> {
    const RSA: [u8; 8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: [u8; 6] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    let (certificate, _) = der(cert, 0x30)?;
    let (_, after_tbs) = der(certificate, 0x30)?;
    let (algorithm, _) = der(after_tbs, 0x30)?;
    let (oid, _) = der(algorithm, 0x06)?;
    enum Hash {
        Sha256,
        Sha384,
        Sha512,
    }
    let hash = match oid {
        // md5, sha1, sha256 WithRSAEncryption
        [rsa @ .., 0x04 | 0x05 | 0x0b] if rsa == RSA => Hash::Sha256,
        [rsa @ .., 0x0c] if rsa == RSA => Hash::Sha384,
        [rsa @ .., 0x0d] if rsa == RSA => Hash::Sha512,
        // ecdsa-with-SHA1, ecdsa-with-SHA256/384/512
        [ec @ .., 0x01] if ec == ECDSA => Hash::Sha256,
        [ec @ .., 0x03, 0x02] if ec == ECDSA => Hash::Sha256,
        [ec @ .., 0x03, 0x03] if ec == ECDSA => Hash::Sha384,
        [ec @ .., 0x03, 0x04] if ec == ECDSA => Hash::Sha512,
        _ => return None,
    };
    Some(match hash {
        Hash::Sha256 => sha2::Sha256::digest(cert).to_vec(),
        Hash::Sha384 => sha2::Sha384::digest(cert).to_vec(),
        Hash::Sha512 => sha2::Sha512::digest(cert).to_vec(),
    })
}

/// One DER element with tag `tag` at the start of `input`: its contents and what follows it.
fn der(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = input.split_first()?;
    if first != tag {
        return None;
    }
    let (&len, rest) = rest.split_first()?;
    let (len, rest) = if len < 0x80 {
        (usize::from(len), rest)
    } else {
        let count = usize::from(len & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (digits, rest) = rest.split_at(count);
        let len = digits
            .iter()
            .fold(0usize, |acc, &d| (acc << 8) | usize::from(d));
        (len, rest)
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The TLS failure behind a failed connection attempt, in words for the operator: a refused
/// handshake (certificate errors say which CAs were trusted), or a server that does not do TLS.
pub(crate) fn failure(e: &tokio_postgres::Error) -> Option<String> {
    let cause = e.source()?;
    if let Some(handshake) = cause.downcast_ref::<HandshakeError>() {
        return Some(handshake.to_string());
    }
    // tokio-postgres's own TLS refusals ("server does not support TLS") carry only their text.
    e.to_string()
        .starts_with("error performing TLS handshake")
        .then(|| cause.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_percent_decoded_once() {
        assert_eq!(
            percent_decode("%2Fetc%2Fca%20x.pem").unwrap(),
            "/etc/ca x.pem"
        );
        assert_eq!(percent_decode("a%252F").unwrap(), "a%2F");
        assert_eq!(percent_decode("bad%zz%2").unwrap(), "bad%zz%2");
        assert_eq!(percent_decode("caf%C3%A9").unwrap(), "café");
        assert!(percent_decode("%FF").is_err(), "not UTF-8 once decoded");
    }

    fn taken(conn: &str) -> (String, TlsParams) {
        take_tls_params(conn).unwrap()
    }

    fn params(mode: Option<&str>, root: Option<&str>) -> TlsParams {
        TlsParams {
            sslmode: mode.map(str::to_owned),
            sslrootcert: root.map(str::to_owned),
        }
    }

    #[test]
    fn url_parameters_are_taken_out_and_the_rest_kept() {
        assert_eq!(
            taken("postgres://u:p@h:5432/db"),
            ("postgres://u:p@h:5432/db".into(), params(None, None))
        );
        assert_eq!(
            taken("postgres://u:p@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20x.pem"),
            (
                "postgres://u:p@h/db".into(),
                params(Some("verify-full"), Some("/etc/ca x.pem"))
            )
        );
        assert_eq!(
            taken("postgresql://h/db?application_name=a&sslmode=require&connect_timeout=3"),
            (
                "postgresql://h/db?application_name=a&connect_timeout=3".into(),
                params(Some("require"), None)
            )
        );
        // A `?` in the password belongs to the user info, as tokio-postgres reads it.
        assert_eq!(
            taken("postgres://u:p?x@h/db?sslmode=disable"),
            (
                "postgres://u:p?x@h/db".into(),
                params(Some("disable"), None)
            )
        );
        assert_eq!(
            taken("postgres://h/db?sslnegotiation=direct&sslmode=require").0,
            "postgres://h/db?sslnegotiation=direct"
        );
    }

    #[test]
    fn key_value_parameters_are_taken_out_and_the_rest_kept() {
        assert_eq!(
            taken("host=h user=u password='a b\\'c' sslmode = verify-ca dbname=db"),
            (
                "host=h user=u password='a b\\'c'  dbname=db".into(),
                params(Some("verify-ca"), None)
            )
        );
        assert_eq!(
            taken("sslrootcert='/tmp/my ca.pem' host=h"),
            (" host=h".into(), params(None, Some("/tmp/my ca.pem")))
        );
        let (rest, _) = taken("host=h sslmode=require");
        let config: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_hosts().len(), 1);
        assert!(take_tls_params("host=h sslmode").is_err());
        assert!(take_tls_params("host='h").is_err());
    }

    #[test]
    fn modes_and_roots_follow_libpq() {
        let mode = |conn: &str| parse(conn).map(|(_, tls)| tls.mode());
        assert_eq!(mode("postgres://h/db").unwrap(), SslMode::Prefer);
        assert_eq!(mode("host=h sslmode=disable").unwrap(), SslMode::Disable);
        assert_eq!(
            mode("postgres://h/db?sslmode=require").unwrap(),
            SslMode::Require
        );
        assert_eq!(
            mode("postgres://h/db?sslrootcert=system").unwrap(),
            SslMode::VerifyFull
        );
        let refused = [
            (
                "postgres://h/db?sslmode=allow",
                "sslmode=allow is not supported",
            ),
            ("postgres://h/db?sslmode=verify", "\"verify\" is not one of"),
            (
                "postgres://h/db?sslrootcert=system&sslmode=require",
                "sslrootcert=system needs sslmode=verify-full",
            ),
            ("postgres://h/db?sslcert=/c.pem", "sslcert is not supported"),
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
                "sslrootcert /nonexistent/ca.pem: cannot read it",
            ),
        ];
        for (conn, expected) in refused {
            let e = parse(conn).unwrap_err();
            assert!(
                matches!(e, ConnectError::InvalidUrl { .. }),
                "{conn}: {e:?}"
            );
            assert!(e.to_string().contains(expected), "{conn}: {e}");
        }
    }

    #[test]
    fn errors_never_quote_the_password() {
        for conn in [
            "postgres://u:hunter2@h/db?sslmode=bogus",
            "postgres://u:hunter2@h:notaport/db?sslmode=require",
            "host=h password=hunter2 sslmode=bogus",
            "host=h password='hunter2",
        ] {
            let e = parse(conn).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn a_root_file_without_certificates_is_refused() {
        let dir = std::env::temp_dir().join(format!("wsp-pg-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("empty.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let conn = format!(
            "postgres://h/db?sslmode=verify-ca&sslrootcert={}",
            file.display()
        );
        let e = parse(&conn).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("no PEM certificate"), "{e}");
    }

    fn certificate(alg: &'static rcgen::SignatureAlgorithm) -> Vec<u8> {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn channel_binding_hashes_follow_the_signature_algorithm() {
        let p256 = certificate(&rcgen::PKCS_ECDSA_P256_SHA256);
        assert_eq!(
            end_point_hash(&p256),
            Some(sha2::Sha256::digest(&p256).to_vec())
        );
        let p384 = certificate(&rcgen::PKCS_ECDSA_P384_SHA384);
        assert_eq!(
            end_point_hash(&p384),
            Some(sha2::Sha384::digest(&p384).to_vec())
        );
        assert_eq!(end_point_hash(&certificate(&rcgen::PKCS_ED25519)), None);
        assert_eq!(end_point_hash(&p256[..p256.len() / 2]), None);
        assert_eq!(end_point_hash(b"garbage"), None);
    }
}
