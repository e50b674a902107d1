//! WSR-1 at the server's edge.
//!
//! Redaction itself happens in one place, the store layer [`wsp_store::RedactingStore`] that
//! [`AppState`] puts over every store it is given, so no handler redacts by itself. Kept here:
//! where the secrets come from ([`SecretSource`], re-exported from `wsp-store` under its old
//! names), the one check for request fields no store ever sees, and the request path as the
//! logs may show it.

use std::borrow::Cow;

use wsp_store::Redactor;
use wsp_types::Owner;

use crate::AppState;
use crate::error::WireError;

pub use wsp_store::{SecretSource, TenantSecrets};

/// 400 naming `field` when `value` holds one of `owner`'s secrets, for the fields of a request
/// that never reach a store (`Idempotency-Key`, a run's `workflowId`, a publish `targetPath`);
/// the same test the store layer applies to paths and media types. The secret is never echoed.
pub(crate) fn refuse_secret(
    state: &AppState,
    owner: &Owner,
    field: &'static str,
    value: &str,
) -> Result<(), WireError> {
    wsp_store::refuse_secret(&*state.inner.secrets, owner, field, value)
        .map_err(|e| WireError::from_store(e, ""))
}

/// The request path as a log line shows it: as sent, or, when its percent-decoded form holds
/// any owner's secret (the caller is not known yet when the line is written), decoded and
/// redacted.
pub(crate) fn loggable_path<'p>(every_secret: Option<&Redactor>, raw: &'p str) -> Cow<'p, str> {
    let Some(redactor) = every_secret else {
        return Cow::Borrowed(raw);
    };
    let decoded = decode_lossy(raw);
    if redactor.contains_secret(&decoded) {
        Cow::Owned(redactor.redact(&decoded).into_owned())
    } else {
        Cow::Borrowed(raw)
    }
}

/// Percent-decodes every valid `%XX`, keeps anything else as it is, and replaces bytes that
/// are not UTF-8: a log line shows what a request meant even when the request is refused.
fn decode_lossy(raw: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(raw).decode_utf8_lossy()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_store::Secret;

    #[test]
    fn log_paths_hide_secrets_in_any_encoding() {
        let r = Redactor::new(vec![Secret {
            id: "k".into(),
            value: "sk-12345678".into(),
        }])
        .unwrap();
        let cases = [
            ("/v1/files/a.md", "/v1/files/a.md"),
            ("/v1/files/a%2Fb.md", "/v1/files/a%2Fb.md"),
            ("/v1/files/sk-12345678", "/v1/files/[REDACTED:k]"),
            ("/v1/files/%73k-1234%35678%2Fx", "/v1/files/[REDACTED:k]/x"),
            ("/v1/files/%zz/sk-12345678%", "/v1/files/%zz/[REDACTED:k]%"),
            ("/v1/files/%FF", "/v1/files/%FF"),
        ];
        for (raw, shown) in cases {
            assert_eq!(loggable_path(Some(&r), raw), shown, "{raw}");
        }
        assert_eq!(loggable_path(None, "/sk-12345678"), "/sk-12345678");
    }
}
