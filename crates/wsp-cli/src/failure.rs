//! How a failed `wsp` command reports: one line on standard error (`error: ...`), or, when the
//! command line asks for `--json`, one JSON object on standard error,
//! `{"error": CODE, "message": TEXT, "status"?: HTTP, "details"?: {...}}`.
//!
//! `CODE` is the host's wire code when the host answered with an error envelope; otherwise one of
//! `connection_refused`, `name_not_resolved`, `tls_failed`, `certificate_refused`, `timed_out`,
//! `connection_closed`, `transport_failed` (no answer), `unexpected_response` (an answer that
//! is not what the wire promises), `invalid_argument` (refused before sending), `usage` (the
//! command line itself, exit status 2) or `failed` (anything else).

use std::borrow::Cow;
use std::process::ExitCode;

use serde_json::{Map, Value};
use wsp_client::{Error, TransportCause};

use crate::CliError;

/// A failed command, with what `--json` reports besides the message.
#[derive(Debug)]
pub struct Failure {
    code: Cow<'static, str>,
    message: String,
    status: Option<u16>,
    details: Option<Map<String, Value>>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<CliError> for Failure {
    fn from(e: CliError) -> Self {
        Self::local(e.0)
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Self::local(e.to_string())
    }
}

impl Failure {
    fn local(message: String) -> Self {
        Self {
            code: Cow::Borrowed("failed"),
            message,
            status: None,
            details: None,
        }
    }

    /// What the client's error `e` says to a person: the host's envelope, or why there was no
    /// answer, naming the host (never the URL's user or password).
    pub fn remote(e: Error) -> Self {
        let (code, message, status, details): (&'static str, String, _, _) = match e {
            Error::Api(api) => {
                let extra = api
                    .details
                    .as_ref()
                    .map(|d| format!(" {}", Value::Object(d.clone())))
                    .unwrap_or_default();
                return Self {
                    message: format!(
                        "{} (HTTP {}): {}{extra}",
                        api.error, api.status, api.message
                    ),
                    code: Cow::Owned(api.error),
                    status: Some(api.status),
                    details: api.details,
                };
            }
            Error::Transport(ref inner) => {
                let cause = e.transport_cause().expect("a transport error has a cause");
                let host = host_of(inner.url());
                let code = match &cause {
                    TransportCause::ConnectionRefused => "connection_refused",
                    TransportCause::NameNotResolved(_) => "name_not_resolved",
                    TransportCause::Tls(_) => "tls_failed",
                    TransportCause::TimedOut => "timed_out",
                    TransportCause::ConnectionClosed => "connection_closed",
                    _ => "transport_failed",
                };
                let hint = match cause {
                    TransportCause::Tls(_) => {
                        "; if that port speaks plain HTTP, use an http:// URL"
                    }
                    _ => "",
                };
                (
                    code,
                    format!("cannot reach {host}: {cause}{hint}"),
                    None,
                    None,
                )
            }
            Error::Certificate { ref source, .. } => (
                "certificate_refused",
                format!(
                    "cannot reach {}: {e} (for a private CA, pass its certificate with \
                     --cacert FILE or WSP_CACERT)",
                    host_of(source.url())
                ),
                None,
                None,
            ),
            Error::UnexpectedBody { status, .. } => {
                ("unexpected_response", e.to_string(), Some(status), None)
            }
            Error::InvalidBaseUrl(_) | Error::InvalidArgument(_) => {
                ("invalid_argument", e.to_string(), None, None)
            }
            _ => ("client_error", e.to_string(), None, None),
        };
        Self {
            code: Cow::Borrowed(code),
            message,
            status,
            details,
        }
    }

    /// This failure, said to be about `what` (e.g. `run 6f1c…`).
    pub fn about(mut self, what: &str) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// This failure of a command that sent no key: a 401 then says how to give one.
    pub fn sent_without_key(mut self) -> Self {
        if self.status == Some(401) {
            self.message
                .push_str("; no API key was given: set WSP_API_KEY or pass --key");
        }
        self
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prints the failure on standard error: `error: MESSAGE`, or the JSON object.
    pub fn report(&self, json: bool) {
        if !json {
            eprintln!("error: {}", self.message);
            return;
        }
        let mut object = Map::new();
        object.insert("error".into(), Value::from(self.code.as_ref()));
        object.insert("message".into(), Value::from(self.message.as_str()));
        if let Some(status) = self.status {
            object.insert("status".into(), Value::from(status));
        }
        if let Some(details) = &self.details {
            object.insert("details".into(), Value::Object(details.clone()));
        }
        eprintln!("{}", Value::Object(object));
    }
}

/// `HOST:PORT` of `url`, for messages: never its user, password, path or query.
fn host_of(url: Option<&reqwest::Url>) -> String {
    let Some(url) = url else {
        return "the host".into();
    };
    // An IPv6 address comes in brackets.
    let Some(host) = url.host_str() else {
        return "the host".into();
    };
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Whether the command line asks for `--json` (before any `--`): its failures, usage errors
/// included, are then reported as JSON.
pub fn json_requested() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}

/// Reports a command line clap refused (or `--help`, `--version`) and the exit status: clap's
/// own text, or with `--json` one JSON object whose message is clap's error and its tips.
pub fn usage(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if informational || !json_requested() {
        e.exit();
    }
    let text = e.to_string();
    let message = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("error:") || l.starts_with("tip:"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("; ");
    Failure {
        code: Cow::Borrowed("usage"),
        message,
        status: None,
        details: None,
    }
    .report(true);
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn hosts_are_named_without_credentials() {
        let check = |url: &str, expect: &str| {
            assert_eq!(host_of(Some(&reqwest::Url::parse(url).unwrap())), expect);
        };
        check("http://me:secret@example.test/x?key=1", "example.test:80");
        check("https://127.0.0.1:8443/", "127.0.0.1:8443");
        check("http://[::1]:8787", "[::1]:8787");
        assert_eq!(host_of(None), "the host");
    }
}
