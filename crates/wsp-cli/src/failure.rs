//! How a failed `wsp` command reports: one line on standard error (`error: ...`), or, when the
//! command line asks for `--json`, one JSON object on standard error,
//! `{"error": CODE, "message": TEXT, "status"?: HTTP, "details"?: {...}}`; and the exit status
//! a script branches on ([`Exit`], the same for every command).
//!
//! `CODE` is the host's wire code when the host answered with an error envelope; otherwise one of
//! `connection_refused`, `name_not_resolved`, `tls_failed`, `certificate_refused`, `timed_out`,
//! `connection_closed`, `transport_failed` (no answer), `unexpected_response` (an answer that
//! is not what the wire promises), `response_too_large` (an answer over the client's bound),
//! `workspace_too_large` (also when `wsp` refuses a file over the host's `maxFileBytes` before
//! sending it), `invalid_argument` (refused before sending), `conflict` (a push or pull that
//! left conflicts), `confirmation_required`, `interrupted`, `usage` (the command line itself)
//! or `failed` (anything else).

use std::borrow::Cow;
use std::process::ExitCode;

use serde_json::{Map, Value};
use wsp_client::{Error, TransportCause};

use crate::CliError;

/// The exit status of a command, by what went wrong; documented in `wsp --help` ([`EXIT_HELP`])
/// and the README. Success is 0, and so is a standard output closed by its reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 1: anything below does not name (a server error, a local file, an answer `wsp` cannot
    /// read).
    Failed,
    /// 2: the command line, or input refused as invalid before sending or by the host (400,
    /// 415).
    Usage,
    /// 3: no key, or the key was refused (401).
    Unauthenticated,
    /// 4: the key lacks the scope (403).
    Forbidden,
    /// 5: no such file, run or agent (404).
    NotFound,
    /// 6: a conflict (409, 412), or a push or pull that left conflicts.
    Conflict,
    /// 7: too large: over the host's `maxFileBytes` (checked before sending) or its request
    /// limit (413), or an answer over the client's bound.
    TooLarge,
    /// 8: no answer: connection refused, name not resolved, TLS or certificate refused, timed
    /// out, connection closed.
    Unreachable,
    /// 9: the host is busy: try again later (429, 503).
    Busy,
    /// 130: interrupted (Ctrl-C); a push or pull saved what it did.
    Interrupted,
    /// 0: standard output was closed by its reader (`| head`); nothing is reported.
    ClosedPipe,
}

impl Exit {
    /// The status number.
    pub fn code(self) -> u8 {
        match self {
            Self::ClosedPipe => 0,
            Self::Failed => 1,
            Self::Usage => 2,
            Self::Unauthenticated => 3,
            Self::Forbidden => 4,
            Self::NotFound => 5,
            Self::Conflict => 6,
            Self::TooLarge => 7,
            Self::Unreachable => 8,
            Self::Busy => 9,
            Self::Interrupted => 130,
        }
    }

    /// The status of an HTTP error answer.
    fn of_status(status: u16) -> Self {
        match status {
            400 | 415 | 422 => Self::Usage,
            401 => Self::Unauthenticated,
            403 => Self::Forbidden,
            404 | 410 => Self::NotFound,
            409 | 412 => Self::Conflict,
            413 => Self::TooLarge,
            429 | 503 => Self::Busy,
            _ => Self::Failed,
        }
    }
}

/// The exit statuses, as `wsp --help` ends (the README's table says the same).
pub const EXIT_HELP: &str = "Exit status:
  0    success (also when the reader of standard output closes it early, as head does)
  1    failure not named below (a server error, a local file, an answer wsp cannot read)
  2    usage: the command line, or input refused as invalid (before sending, or HTTP 400/415)
  3    unauthenticated: no API key, or the key was refused (HTTP 401)
  4    forbidden: the key lacks the scope (HTTP 403)
  5    not found (HTTP 404)
  6    conflict (HTTP 409), or a push or pull that left conflicts
  7    too large: over the host's maxFileBytes or request limit (HTTP 413)
  8    unreachable: no answer (refused, name, TLS, certificate, timeout, closed)
  9    busy: try again later (HTTP 429, 503)
  130  interrupted (Ctrl-C); push and pull save what they did first
`wsp conformance` has its own: 0 all passed, 1 a scenario failed, 2 the run could not start.";

/// A failed command, with what `--json` reports besides the message.
#[derive(Debug)]
pub struct Failure {
    code: Cow<'static, str>,
    message: String,
    status: Option<u16>,
    details: Option<Map<String, Value>>,
    exit: Exit,
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
    fn new(code: &'static str, message: String, exit: Exit) -> Self {
        Self {
            code: Cow::Borrowed(code),
            message,
            status: None,
            details: None,
            exit,
        }
    }

    fn local(message: String) -> Self {
        Self::new("failed", message, Exit::Failed)
    }

    /// Input `wsp` refuses before sending anything (`invalid_argument`, exit status 2).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid_argument", message.into(), Exit::Usage)
    }

    /// Something named on the command line that does not exist (`not_found`, exit status 5).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new("not_found", message.into(), Exit::NotFound)
    }

    /// A push or pull that left conflicts (`conflict`, exit status 6).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new("conflict", message.into(), Exit::Conflict)
    }

    /// A file over the host's `maxFileBytes`, refused before sending (`workspace_too_large`
    /// with the host's `details`, exit status 7).
    pub fn too_large(message: impl Into<String>, size: u64, max: u64) -> Self {
        let mut details = Map::new();
        details.insert("limit".into(), Value::from("maxFileBytes"));
        details.insert("max".into(), Value::from(max));
        details.insert("size".into(), Value::from(size));
        Self {
            details: Some(details),
            ..Self::new("workspace_too_large", message.into(), Exit::TooLarge)
        }
    }

    /// A change that needs a yes the command did not get (`confirmation_required`, exit
    /// status 2: the command line lacks `--yes`).
    pub fn confirmation_required(message: impl Into<String>) -> Self {
        Self::new("confirmation_required", message.into(), Exit::Usage)
    }

    /// Stopped by Ctrl-C (`interrupted`, exit status 130).
    pub fn interrupted(message: impl Into<String>) -> Self {
        Self::new("interrupted", message.into(), Exit::Interrupted)
    }

    /// Standard output was closed by its reader: the command ends quietly, with status 0.
    pub fn closed_pipe() -> Self {
        Self::new("closed_pipe", String::new(), Exit::ClosedPipe)
    }

    /// What the client's error `e` says to a person: the host's envelope, or why there was no
    /// answer, naming the host (never the URL's user or password).
    pub fn remote(e: Error) -> Self {
        let (code, message, status, exit): (&'static str, String, _, _) = match e {
            Error::Api(api) => {
                let extra = api
                    .details
                    .as_ref()
                    .map(|d| format!(" {}", Value::Object(d.clone())))
                    .unwrap_or_default();
                return Self {
                    message: format!(
                        "{} (HTTP {}): {}{extra}{}",
                        api.error,
                        api.status,
                        api.message,
                        limit_named(&api)
                    ),
                    code: Cow::Owned(api.error),
                    status: Some(api.status),
                    details: api.details,
                    exit: Exit::of_status(api.status),
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
                    Exit::Unreachable,
                )
            }
            Error::Certificate {
                ref source,
                extra_ca,
                ..
            } => {
                let hint = if extra_ca {
                    "neither the CA certificates of --cacert (WSP_CACERT) nor the system's \
                     signed it for this name: check that the file holds the CA that signed the \
                     host's certificate, and that the URL names a host the certificate covers"
                } else {
                    "for a private CA, pass its certificate with --cacert FILE or WSP_CACERT"
                };
                (
                    "certificate_refused",
                    format!("cannot reach {}: {e} ({hint})", host_of(source.url())),
                    None,
                    Exit::Unreachable,
                )
            }
            Error::UnexpectedBody { status, .. } => (
                "unexpected_response",
                e.to_string(),
                Some(status),
                Exit::Failed,
            ),
            Error::ResponseTooLarge { .. } => {
                ("response_too_large", e.to_string(), None, Exit::TooLarge)
            }
            Error::InvalidBaseUrl(_) | Error::InvalidArgument(_) => {
                ("invalid_argument", e.to_string(), None, Exit::Usage)
            }
            _ => ("client_error", e.to_string(), None, Exit::Failed),
        };
        Self {
            status,
            ..Self::new(code, message, exit)
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

    /// Prints the failure on standard error (`error: MESSAGE`, or the JSON object; nothing for
    /// a closed standard output) and returns the exit status.
    pub fn report(&self, json: bool) -> ExitCode {
        if self.exit == Exit::ClosedPipe {
            return ExitCode::SUCCESS;
        }
        let message = without_repeats(&self.message);
        if json {
            let mut object = Map::new();
            object.insert("error".into(), Value::from(self.code.as_ref()));
            object.insert("message".into(), Value::from(message));
            if let Some(status) = self.status {
                object.insert("status".into(), Value::from(status));
            }
            if let Some(details) = &self.details {
                object.insert("details".into(), Value::Object(details.clone()));
            }
            crate::out::errln!(
                "{}",
                crate::out::json_safe(Value::Object(object).to_string())
            );
        } else {
            crate::out::errln!("error: {message}");
        }
        ExitCode::from(self.exit.code())
    }
}

/// For a 413, which limit applied, in words: the host's `details.limit` is `maxFileBytes` (the
/// file) or `requestBody` (the whole request, the file as JSON or base64 included).
fn limit_named(api: &wsp_client::ApiError) -> String {
    if api.status != 413 {
        return String::new();
    }
    let max = api
        .detail("max")
        .and_then(Value::as_u64)
        .map(|n| format!(" of {n} bytes"))
        .unwrap_or_default();
    match api.detail("limit").and_then(Value::as_str) {
        Some("maxFileBytes") => format!("; the host's file size limit (maxFileBytes){max} applies"),
        Some("requestBody") => format!(
            "; the host's request body limit{max} applies: the file as sent (JSON-escaped or \
             base64) is larger than the file"
        ),
        _ => String::new(),
    }
}

/// `message` with each `: `-separated part dropped when the part after it starts with it, so
/// that a cause wrapped in its own context (`cannot connect: cannot connect for x (why)`) is
/// said once.
fn without_repeats(message: &str) -> String {
    let parts: Vec<&str> = message.split(": ").collect();
    let mut kept: Vec<&str> = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let repeated = parts
            .get(i + 1)
            .is_some_and(|next| !part.is_empty() && next.starts_with(part));
        if !repeated {
            kept.push(part);
        }
    }
    kept.join(": ")
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
    Failure::new("usage", message, Exit::Usage).report(true)
}

#[cfg(test)]
mod tests {
    use super::{EXIT_HELP, host_of, without_repeats};

    #[test]
    fn a_cause_wrapped_in_its_own_words_is_said_once() {
        assert_eq!(
            without_repeats(
                "cannot connect to PostgreSQL: cannot connect to PostgreSQL for connect (error \
                 connecting to server: Connection refused (os error 111))"
            ),
            "cannot connect to PostgreSQL for connect (error connecting to server: Connection \
             refused (os error 111))"
        );
        assert_eq!(without_repeats("a: b: c"), "a: b: c");
        assert_eq!(without_repeats("no colon"), "no colon");
    }

    /// The README's table of exit statuses is the one `wsp --help` prints.
    #[test]
    fn the_readme_lists_every_exit_status() {
        let readme = include_str!("../../../README.md");
        for line in EXIT_HELP
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
        {
            let (code, meaning) = line.trim().split_once(' ').unwrap();
            let row = format!("| {code} | {} |", meaning.trim());
            assert!(readme.contains(&row), "README lacks the row {row:?}");
        }
    }

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
