//! The client's error: a typed envelope, a transport failure, or a body that did not parse.

use serde_json::{Map, Value};
use wsp_types::ErrorCode;

/// A host's error envelope `{error, message, details?}` with its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// The wire code as sent (see [`ApiError::code`] for the typed form).
    pub error: String,
    /// The host's message.
    pub message: String,
    /// Structured details, if any.
    pub details: Option<Map<String, Value>>,
}

impl ApiError {
    /// The typed code, when this version of wsp knows it.
    pub fn code(&self) -> Option<ErrorCode> {
        ErrorCode::from_wire(&self.error)
    }

    /// `details[key]`, if present.
    pub fn detail(&self, key: &str) -> Option<&Value> {
        self.details.as_ref()?.get(key)
    }
}

/// Everything a call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The host answered with a well-formed error envelope.
    #[error("{} {}: {}", .0.status, .0.error, .0.message)]
    Api(ApiError),
    /// The request never got an HTTP answer (connect, timeout, reset, TLS).
    #[error("transport failure: {}", chain(.0))]
    Transport(#[source] reqwest::Error),
    /// The host's TLS certificate was refused: not signed by a trusted CA (see
    /// [`CaCerts`](crate::CaCerts)), expired, or issued for another name.
    #[error("the host's TLS certificate was refused: {reason}")]
    Certificate {
        /// rustls's reason, e.g. `invalid peer certificate: UnknownIssuer`.
        reason: String,
        /// Whether the client trusted CA certificates besides the system's
        /// ([`ClientBuilder::ca_certs`](crate::ClientBuilder::ca_certs)): they did not sign it
        /// either.
        extra_ca: bool,
        /// The failed request.
        #[source]
        source: reqwest::Error,
    },
    /// The host answered with a redirect to another origin, which the client does not follow:
    /// the key is never sent to an origin the caller did not name.
    #[error(
        "the host redirected (HTTP {status}) to {to}, another origin, which is not followed so \
         that the key is never sent there; if that host is the one you mean, use its URL"
    )]
    Redirected {
        /// The HTTP status (301, 302, 303, 307 or 308).
        status: u16,
        /// The origin it pointed to (`scheme://host:port`, never a path or credentials).
        to: String,
    },
    /// The answer's body is larger than the client reads
    /// ([`ClientBuilder::max_response_bytes`](crate::ClientBuilder::max_response_bytes)).
    #[error(
        "the host's answer is larger than {max} bytes, the most this client reads (the bound \
         follows the host's advertised maxFileBytes)"
    )]
    ResponseTooLarge {
        /// The bound, in bytes.
        max: u64,
    },
    /// The host answered, but the body is not what the wire promises.
    #[error("unexpected response (HTTP {status}): {reason}; body starts {body:?}")]
    UnexpectedBody {
        /// The HTTP status.
        status: u16,
        /// What was wrong with it.
        reason: String,
        /// The start of the body.
        body: String,
    },
    /// The base URL is unusable.
    #[error("invalid base URL: {0}")]
    InvalidBaseUrl(String),
    /// An argument cannot be sent (e.g. a header value with a newline).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The envelope, when the host sent one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::Api(e) => Some(e),
            _ => None,
        }
    }

    /// The typed wire code, when the host sent a known one.
    pub fn code(&self) -> Option<ErrorCode> {
        self.api().and_then(ApiError::code)
    }

    /// Builds the error for a non-2xx answer.
    pub(crate) fn from_response(status: u16, body: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: String,
            message: String,
            details: Option<Map<String, Value>>,
        }
        match serde_json::from_slice::<Envelope>(body) {
            Ok(e) => Self::Api(ApiError {
                status,
                error: e.error,
                message: e.message,
                details: e.details,
            }),
            Err(e) => Self::UnexpectedBody {
                status,
                reason: format!("not an error envelope: {e}"),
                body: excerpt(body),
            },
        }
    }
}

impl Error {
    /// The error for a request that got no HTTP answer: [`Error::Certificate`] when TLS refused
    /// the host's certificate, [`Error::Transport`] otherwise. `extra_ca`: whether the client
    /// trusted CA certificates besides the system's.
    pub(crate) fn transport(e: reqwest::Error, extra_ca: bool) -> Self {
        #[cfg(feature = "rustls")]
        if let Some(reason) = crate::tls::refused_certificate(&e) {
            return Self::Certificate {
                reason,
                extra_ca,
                source: e,
            };
        }
        let _ = extra_ca;
        Self::Transport(e)
    }

    /// Why a [`Error::Transport`] failure got no answer; `None` for the other variants.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = wsp_client::Client::builder("http://127.0.0.1:1").build().unwrap();
    /// let e = client.list(None).await.unwrap_err();
    /// assert_eq!(e.transport_cause(), Some(wsp_client::TransportCause::ConnectionRefused));
    /// # }
    /// ```
    pub fn transport_cause(&self) -> Option<TransportCause> {
        match self {
            Self::Transport(e) => Some(TransportCause::of(e)),
            _ => None,
        }
    }
}

/// Why a request got no HTTP answer, as far as the layers under the client tell.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportCause {
    /// Nothing listens at the address and port (the connection was refused).
    ConnectionRefused,
    /// The host name resolved to no address; the resolver's message.
    NameNotResolved(String),
    /// The TLS handshake failed for a reason other than the certificate (see
    /// [`Error::Certificate`]), e.g. the port speaks plain HTTP; the TLS stack's message.
    Tls(String),
    /// The host took longer than the client's timeout.
    TimedOut,
    /// The connection was reset or closed before a whole answer arrived.
    ConnectionClosed,
    /// Anything else: the innermost message.
    Other(String),
}

impl TransportCause {
    /// Walks `error`'s causes for the first one that tells why.
    fn of(error: &reqwest::Error) -> Self {
        if error.is_timeout() {
            return Self::TimedOut;
        }
        let mut innermost = error.to_string();
        let mut resolving = false;
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(mut e) = current {
            // An I/O error's `source` skips the error it wraps: unwrap those by hand.
            while let Some(io) = e.downcast_ref::<std::io::Error>() {
                match io.kind() {
                    std::io::ErrorKind::ConnectionRefused => return Self::ConnectionRefused,
                    std::io::ErrorKind::TimedOut => return Self::TimedOut,
                    std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof => return Self::ConnectionClosed,
                    _ => {}
                }
                match io.get_ref() {
                    Some(inner) => e = inner,
                    None => break,
                }
            }
            #[cfg(feature = "rustls")]
            if let Some(tls) = e.downcast_ref::<rustls::Error>() {
                return Self::Tls(tls.to_string());
            }
            let text = e.to_string();
            // hyper-util's connector names a failed lookup "dns error"; reqwest's resolver
            // "error resolving DNS". The cause under it is the resolver's own message.
            resolving |= text == "dns error" || text == "error resolving DNS";
            innermost = text;
            current = e.source();
        }
        if resolving {
            return Self::NameNotResolved(innermost);
        }
        if error.is_body() || error.is_decode() {
            return Self::ConnectionClosed;
        }
        Self::Other(innermost)
    }
}

impl std::fmt::Display for TransportCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ConnectionRefused => f.write_str("connection refused"),
            Self::NameNotResolved(why) => write!(f, "the host name does not resolve ({why})"),
            Self::Tls(why) => write!(f, "the TLS handshake failed ({why})"),
            Self::TimedOut => f.write_str("timed out"),
            Self::ConnectionClosed => f.write_str("the connection was closed"),
            Self::Other(why) => f.write_str(why),
        }
    }
}

/// reqwest's message and its causes (its own message alone only repeats the URL).
fn chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// The first 200 characters of a body, for error messages.
pub(crate) fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_and_garbage() {
        let e = Error::from_response(
            409,
            br#"{"error":"workspace_conflict","message":"m","details":{"currentVersion":3}}"#,
        );
        assert_eq!(e.code(), Some(ErrorCode::WorkspaceConflict));
        assert_eq!(
            e.api().unwrap().detail("currentVersion"),
            Some(&Value::from(3))
        );
        let e = Error::from_response(502, b"<html>Bad Gateway</html>");
        assert!(matches!(e, Error::UnexpectedBody { status: 502, .. }));
        assert!(e.to_string().contains("Bad Gateway"));
        let e = Error::from_response(418, br#"{"error":"teapot","message":"short and stout"}"#);
        assert_eq!(e.code(), None);
        assert_eq!(e.api().unwrap().error, "teapot");
    }
}
