//! HTTPS: rustls, trusting the system's CA certificates and any the caller adds (a private CA).

use std::fmt;
use std::path::Path;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::Error;

/// CA certificates to trust besides the system's, e.g. the private CA that signed a host's
/// certificate.
///
/// ```no_run
/// # fn demo() -> Result<(), wsp_client::Error> {
/// let ca = wsp_client::CaCerts::from_pem_file("ca.pem".as_ref())?;
/// let client = wsp_client::Client::builder("https://wsp.internal").ca_certs(ca).build()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CaCerts {
    certs: Vec<CertificateDer<'static>>,
}

impl CaCerts {
    /// The certificates of a PEM text (one or more `CERTIFICATE` blocks; other blocks are
    /// skipped). Refused when it holds none, or one that is not a usable CA certificate.
    pub fn from_pem(pem: &[u8]) -> Result<Self, Error> {
        Self::parse(pem, "CA certificates")
    }

    /// The certificates of a PEM file; errors name the file.
    pub fn from_pem_file(path: &Path) -> Result<Self, Error> {
        let what = format!("CA certificates {}", path.display());
        let pem =
            std::fs::read(path).map_err(|e| Error::InvalidArgument(format!("{what}: {e}")))?;
        Self::parse(&pem, &what)
    }

    /// [`CaCerts::from_pem`], its errors starting with `what`.
    fn parse(pem: &[u8], what: &str) -> Result<Self, Error> {
        let bad = |why: String| Error::InvalidArgument(format!("{what}: {why}"));
        let mut certs = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
            // The same check rustls makes when it trusts the certificate, made now.
            RootCertStore::empty()
                .add(cert.clone())
                .map_err(|e| bad(format!("unusable CA certificate: {e}")))?;
            certs.push(cert);
        }
        if certs.is_empty() {
            return Err(bad("no PEM certificate in it".into()));
        }
        Ok(Self { certs })
    }

    /// How many certificates there are.
    pub fn len(&self) -> usize {
        self.certs.len()
    }

    /// True when there are none (only the system's CAs are trusted).
    pub fn is_empty(&self) -> bool {
        self.certs.is_empty()
    }

    /// `builder`, trusting these certificates as well as the system's.
    pub fn configure(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, Error> {
        let certs = self
            .certs
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                Error::InvalidArgument(format!("CA certificates: unusable CA certificate: {e}"))
            })?;
        Ok(builder.tls_certs_merge(certs))
    }
}

impl fmt::Debug for CaCerts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CaCerts({} certificates)", self.certs.len())
    }
}

/// The reason rustls refused the host's certificate, when that is why `error` happened.
pub(crate) fn refused_certificate(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(error);
    while let Some(mut e) = current {
        // An I/O error's `source` skips the error it wraps: unwrap those by hand (the TLS
        // stack wraps rustls's error in one or more of them).
        while let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            e = inner;
        }
        if let Some(rustls::Error::InvalidCertificate(why)) = e.downcast_ref::<rustls::Error>() {
            return Some(rustls::Error::InvalidCertificate(why.clone()).to_string());
        }
        current = e.source();
    }
    None
}
