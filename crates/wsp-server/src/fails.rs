//! The error responses of the OpenAPI document, derived from where errors arise.
//!
//! Every extractor says which failures it can answer ([`Fallible`]), and every documented
//! operation adds the failures of its handler's own steps ([`Documented::OWN`]). An operation's
//! error responses are the union of the failures of the extractors its handler takes (read off
//! the handler's signature by [`HandlerFailures`]) and its own: a new extractor on a handler
//! changes the document by itself, and no response is written by hand.

use utoipa::openapi::path::Operation;
use utoipa::openapi::{Content, Ref, Response};
use wsp_types::ErrorCode;

/// One way a request can fail: the wire code it is answered with and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The wire code (and so the status).
    pub code: ErrorCode,
    /// When, as one clause of the response's description (no final period).
    pub when: &'static str,
}

impl Failure {
    /// The HTTP status that carries it.
    pub fn status(self) -> u16 {
        self.code.http_status()
    }
}

/// A failure, for the `const` tables of extractors and handlers.
pub(crate) const fn fail(code: ErrorCode, when: &'static str) -> Failure {
    Failure { code, when }
}

use ErrorCode::{
    CapabilityNotProvided, Forbidden, IdempotencyKeyMismatch, NotFound, ServiceUnavailable,
    Unauthenticated, UnsupportedMediaType, ValidationError, WorkspaceConflict, WorkspaceTooLarge,
};

/// No credential, or one the host does not know.
pub(crate) const UNAUTHENTICATED: Failure = fail(Unauthenticated, "No or unknown credential");
/// The credential lacks the route's scope.
pub(crate) const MISSING_SCOPE: Failure = fail(
    Forbidden,
    "The credential lacks the scope (`details.requiredScope`)",
);
/// The key registry cannot be read.
pub(crate) const KEYS_UNAVAILABLE: Failure =
    fail(ServiceUnavailable, "The key registry is unavailable; retry");
/// The host does not offer `host.workspace`.
pub(crate) const NO_WORKSPACE: Failure = fail(
    CapabilityNotProvided,
    "The host does not offer `host.workspace`",
);
/// The host serves no agents.
pub(crate) const NO_AGENTS: Failure = fail(
    CapabilityNotProvided,
    "The host does not offer `agents.manifestRuntime`",
);
/// A path parameter that is not a valid workspace path.
pub(crate) const BAD_PATH: Failure = fail(
    ValidationError,
    "The path is not a valid workspace path (`details.field`)",
);
/// A path parameter whose percent-encoding is malformed.
pub(crate) const BAD_ENCODING: Failure = fail(
    ValidationError,
    "The path parameter's percent-encoding is malformed",
);
/// A query parameter that is malformed or repeated.
pub(crate) const BAD_QUERY: Failure = fail(
    ValidationError,
    "A query parameter is malformed or repeated",
);
/// `If-Match` / `If-None-Match` malformed.
pub(crate) const BAD_PRECONDITION: Failure = fail(
    ValidationError,
    "`If-Match` or `If-None-Match` is malformed",
);
/// A malformed `Idempotency-Key`, or one holding a configured secret.
pub(crate) const BAD_IDEMPOTENCY_KEY: Failure = fail(
    ValidationError,
    "The `Idempotency-Key` is not 1-255 visible ASCII characters, or holds a configured secret \
     (`details.field`)",
);
/// An `Idempotency-Key` reused for another request.
pub(crate) const IDEMPOTENCY_MISMATCH: Failure = fail(
    IdempotencyKeyMismatch,
    "An `Idempotency-Key` was reused for another request",
);
/// The first request under the same `Idempotency-Key` is still running, or its records
/// cannot be read.
pub(crate) const IDEMPOTENCY_BUSY: Failure = fail(
    ServiceUnavailable,
    "An identical request with this `Idempotency-Key` is still in progress, or the records of \
     keys are unavailable; retry",
);
/// A body not declared `application/json`.
pub(crate) const NOT_JSON: Failure =
    fail(UnsupportedMediaType, "The body is not `application/json`");
/// A body over the route's limit.
pub(crate) const BODY_TOO_LARGE: Failure = fail(
    WorkspaceTooLarge,
    "The body is over the request body limit (`details.limit` = `requestBody`)",
);
/// A body that does not parse into the route's type.
pub(crate) const BAD_BODY: Failure = fail(
    ValidationError,
    "The body is not valid JSON of the request's schema",
);
/// A change-feed position that is not a number.
pub(crate) const BAD_POSITION: Failure = fail(
    ValidationError,
    "`since` or `Last-Event-ID` is not a non-negative integer",
);
/// The store cannot be reached.
pub(crate) const STORE_UNAVAILABLE: Failure =
    fail(ServiceUnavailable, "Storage is unavailable; retry");
/// No live file (or retained version) at the path for this owner.
pub(crate) const FILE_NOT_FOUND: Failure = fail(
    NotFound,
    "No such live file or retained version; another owner's file answers the same",
);
/// A failed `If-Match` / `If-None-Match`.
pub(crate) const CONFLICT: Failure = fail(
    WorkspaceConflict,
    "`If-Match`/`If-None-Match` failed (`details.currentVersion`)",
);
/// A write over `maxFileBytes` or a new path over `maxFiles`.
pub(crate) const FILE_TOO_LARGE: Failure = fail(
    WorkspaceTooLarge,
    "Over `maxFileBytes` or `maxFiles` (`details.limit`)",
);
/// A configured secret in what would be stored in clear.
pub(crate) const SECRET_REFUSED: Failure = fail(
    ValidationError,
    "A configured secret appears in a field that is stored in clear; nothing was stored \
     (`details.field`)",
);
/// The store has no snapshots.
pub(crate) const NO_SNAPSHOTS: Failure =
    fail(CapabilityNotProvided, "The host's store has no snapshots");
/// No run of that id for this owner.
pub(crate) const RUN_NOT_FOUND: Failure = fail(NotFound, "No such run for this owner");
/// The agent registry cannot be read.
pub(crate) const REGISTRY_UNAVAILABLE: Failure = fail(
    ServiceUnavailable,
    "The agent registry is unavailable; retry",
);

/// A part of a request (an extractor) and the failures it can answer.
pub(crate) trait Fallible {
    /// Every failure, in the order they are checked.
    fn failures() -> Vec<Failure>;
}

/// The failures of a handler taking arguments `Args`: the union of its extractors'.
pub(crate) trait HandlerFailures<Args> {
    /// The failures of every argument, in argument order.
    fn extractor_failures() -> Vec<Failure>;
}

macro_rules! handler_failures {
    ($($arg:ident),*) => {
        impl<F, Fut, $($arg: Fallible),*> HandlerFailures<($($arg,)*)> for F
        where
            F: FnOnce($($arg),*) -> Fut,
        {
            fn extractor_failures() -> Vec<Failure> {
                #[allow(unused_mut)]
                let mut all = Vec::new();
                $(all.extend($arg::failures());)*
                all
            }
        }
    };
}

handler_failures!();
handler_failures!(A);
handler_failures!(A, B);
handler_failures!(A, B, C);
handler_failures!(A, B, C, D);
handler_failures!(A, B, C, D, E);
handler_failures!(A, B, C, D, E, G);

/// An operation of the OpenAPI document (its `#[utoipa::path]` annotation, with no `path` and
/// no error response) and the failures its handler's own steps add to its extractors'.
pub(crate) trait Documented: utoipa::Path + for<'t> utoipa::__dev::Tags<'t> {
    /// The failures of the handler's own steps (store calls, policy).
    const OWN: &'static [Failure];
}

/// The failures of a handler: its extractors' and then `own`, each once.
pub(crate) fn union(extractors: Vec<Failure>, own: &[Failure]) -> Vec<Failure> {
    let mut all: Vec<Failure> = Vec::new();
    for f in extractors.into_iter().chain(own.iter().copied()) {
        if !all.contains(&f) {
            all.push(f);
        }
    }
    all
}

/// One failure as a sentence: its clause and its code, with the details it names
/// (`When (`code`, `details.x`).`).
fn describe(f: &Failure) -> String {
    match f.when.strip_suffix(')').and_then(|w| w.rsplit_once(" (")) {
        Some((when, details)) => format!("{when} (`{}`, {details}).", f.code),
        None => format!("{} (`{}`).", f.when, f.code),
    }
}

/// `operation` with one error response per status among `failures`, describing each failure
/// with its code, the body an `ErrorEnvelope`.
pub(crate) fn with_error_responses(mut operation: Operation, failures: &[Failure]) -> Operation {
    let mut statuses: Vec<u16> = failures.iter().map(|f| f.status()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    for status in statuses {
        let description = failures
            .iter()
            .filter(|f| f.status() == status)
            .map(describe)
            .collect::<Vec<_>>()
            .join(" ");
        let mut response = Response::new(description);
        response.content.insert(
            "application/json".to_owned(),
            Content::new(Some(Ref::from_schema_name("ErrorEnvelope"))).into(),
        );
        if status == 401 {
            // Every 401 names the scheme (RFC 6750 §3), as `WireError` sends it.
            response.headers.insert(
                "WWW-Authenticate".to_owned(),
                utoipa::openapi::header::HeaderBuilder::new()
                    .schema(Some(
                        utoipa::openapi::ObjectBuilder::new()
                            .schema_type(utoipa::openapi::schema::Type::String)
                            .enum_values(Some(["Bearer"])),
                    ))
                    .description(Some("Always `Bearer`: send `Authorization: Bearer <key>`."))
                    .build()
                    .into(),
            );
        }
        operation
            .responses
            .responses
            .insert(status.to_string(), response.into());
    }
    operation
}
