//! Decoding the parts of a request (percent-decoding, query parameters, preconditions, the
//! media type), for the extractors of `extract.rs`; every failure is a wire envelope.

use axum::http::HeaderMap;
use axum::http::header::{CONTENT_TYPE, IF_MATCH, IF_NONE_MATCH};
use wsp_store::Precondition;
use wsp_types::{ETag, ErrorCode, WorkspacePrefix};

use crate::error::WireError;

/// Percent-decodes `raw` exactly once. `plus_is_space` applies form encoding (query strings).
///
/// A `%` not followed by two hex digits is refused, as is a result that is not UTF-8.
pub fn percent_decode(raw: &str, plus_is_space: bool) -> Result<String, WireError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or_else(bad_escape)?;
                let hi = (hex[0] as char).to_digit(16).ok_or_else(bad_escape)?;
                let lo = (hex[1] as char).to_digit(16).ok_or_else(bad_escape)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| WireError::validation("percent-decoded text is not UTF-8"))
}

fn bad_escape() -> WireError {
    WireError::validation("malformed percent-encoding")
}

/// The decoded query parameters; a repeated name is refused as ambiguous.
pub fn query_params(query: Option<&str>) -> Result<Vec<(String, String)>, WireError> {
    let mut params: Vec<(String, String)> = Vec::new();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (percent_decode(k, true)?, percent_decode(v, true)?);
        if params.iter().any(|(seen, _)| *seen == k) {
            return Err(WireError::validation(format!(
                "query parameter {k:?} is repeated"
            )));
        }
        params.push((k, v));
    }
    Ok(params)
}

/// The value of query parameter `name`, if present.
pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Refuses a parameter other than the `allowed` ones of the operation `what` (`GET /v1/runs`).
pub fn only_params(
    params: &[(String, String)],
    allowed: &[&str],
    what: &str,
) -> Result<(), WireError> {
    match params.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((name, _)) => Err(WireError::validation(format!(
            "unknown query parameter {name:?}: {what} takes {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The whole number `name` gives, within `range`; `default` when it is absent.
pub fn bounded_param(
    params: &[(String, String)],
    name: &'static str,
    range: std::ops::RangeInclusive<usize>,
    default: usize,
) -> Result<usize, WireError> {
    let Some(raw) = param(params, name) else {
        return Ok(default);
    };
    raw.parse::<usize>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            WireError::validation(format!(
                "{name} must be a whole number from {} to {}",
                range.start(),
                range.end()
            ))
            .with_detail("field", name)
        })
}

/// `?version=N`: a positive decimal integer.
pub fn version_param(params: &[(String, String)]) -> Result<Option<u64>, WireError> {
    let Some(raw) = param(params, "version") else {
        return Ok(None);
    };
    let bad = || {
        WireError::validation(format!("version must be a positive integer, got {raw:?}"))
            .with_detail("field", "version")
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match raw.parse::<u64>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(v) => Ok(Some(v)),
    }
}

/// `?prefix=P`: a plain path prefix.
pub fn prefix_param(params: &[(String, String)]) -> Result<WorkspacePrefix, WireError> {
    match param(params, "prefix") {
        None => Ok(WorkspacePrefix::all()),
        Some(raw) => WorkspacePrefix::parse(raw).map_err(|e| {
            WireError::validation(format!("invalid prefix: {e}")).with_detail("field", "prefix")
        }),
    }
}

/// The write precondition from `If-Match` / `If-None-Match`.
///
/// `If-Match: *` matches any live version, a list matches any listed etag (exact string
/// compare); `If-None-Match` supports `*` only (create-only). Both at once are both evaluated
/// (RFC 9110 §13.2.2), which no state satisfies: [`Precondition::Unsatisfiable`].
pub fn precondition(headers: &HeaderMap) -> Result<Precondition, WireError> {
    let text = |name: axum::http::HeaderName| -> Result<Option<String>, WireError> {
        let mut values = headers.get_all(&name).iter().peekable();
        if values.peek().is_none() {
            return Ok(None);
        }
        let mut joined = Vec::new();
        for v in values {
            let v = v
                .to_str()
                .map_err(|_| WireError::validation(format!("{name} must be visible ASCII")))?;
            joined.push(v.trim().to_owned());
        }
        Ok(Some(joined.join(",")))
    };
    let if_match = match text(IF_MATCH)? {
        None => None,
        Some(v) if v == "*" => Some(Precondition::IfMatchAny),
        Some(v) => {
            let tags: Vec<ETag> = v
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(ETag::from_wire)
                .collect();
            if tags.is_empty() {
                return Err(WireError::validation("If-Match is empty"));
            }
            Some(Precondition::IfMatch(tags))
        }
    };
    match (if_match, text(IF_NONE_MATCH)?) {
        (_, Some(v)) if v != "*" => Err(WireError::validation(
            "If-None-Match supports only `*` (create only) on writes",
        )),
        (Some(_), Some(_)) => Ok(Precondition::Unsatisfiable),
        (None, Some(_)) => Ok(Precondition::IfNoneMatchAny),
        (if_match, None) => Ok(if_match.unwrap_or_default()),
    }
}

/// Refuses a body that is not declared as JSON (415).
pub fn require_json(headers: &HeaderMap) -> Result<(), WireError> {
    let declared = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = declared.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(WireError::new(
            ErrorCode::UnsupportedMediaType,
            "the request body must be application/json",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn decoding_is_exactly_once() {
        let cases = [
            ("notes%2Fplan.md", Ok("notes/plan.md")),
            ("%252F", Ok::<_, ()>("%2F")),
            ("a+b", Ok("a+b")),
            ("%e2%82%ac", Ok("\u{20ac}")),
        ];
        for (raw, expect) in cases {
            assert_eq!(
                percent_decode(raw, false).as_deref().map_err(|_| ()),
                expect
            );
        }
        for bad in ["%", "%2", "%zz", "%ff"] {
            assert!(percent_decode(bad, false).is_err(), "{bad:?}");
        }
        assert_eq!(percent_decode("a+b", true).unwrap(), "a b");
    }

    #[test]
    fn versions() {
        let p = |q: &str| version_param(&query_params(Some(q)).unwrap());
        assert_eq!(p("version=3").unwrap(), Some(3));
        assert_eq!(p("").unwrap(), None);
        for bad in [
            "version=0",
            "version=abc",
            "version=",
            "version=-1",
            "version=+1",
            "version=1.0",
            "version=99999999999999999999999",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert!(query_params(Some("version=1&version=2")).is_err());
    }

    #[test]
    fn preconditions() {
        let h = |pairs: &[(&str, &str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.append(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            precondition(&m)
        };
        assert_eq!(h(&[]).unwrap(), Precondition::None);
        assert_eq!(h(&[("if-match", "*")]).unwrap(), Precondition::IfMatchAny);
        assert_eq!(
            h(&[("if-none-match", "*")]).unwrap(),
            Precondition::IfNoneMatchAny
        );
        assert_eq!(
            h(&[("if-match", "\"a\", \"b\"")]).unwrap(),
            Precondition::IfMatch(vec![ETag::from_wire("\"a\""), ETag::from_wire("\"b\"")])
        );
        assert_eq!(
            h(&[("if-match", "\"a\""), ("if-none-match", "*")]).unwrap(),
            Precondition::Unsatisfiable
        );
        assert!(h(&[("if-match", ""), ("if-none-match", "*")]).is_err());
        assert!(h(&[("if-none-match", "\"a\"")]).is_err());
        assert!(h(&[("if-match", " , ")]).is_err());
    }

    #[test]
    fn json_content_types() {
        let ok = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(CONTENT_TYPE, HeaderValue::from_str(v).unwrap());
            require_json(&m).is_ok()
        };
        assert!(ok("application/json"));
        assert!(ok("application/json; charset=utf-8"));
        assert!(ok("Application/JSON"));
        assert!(!ok("text/plain"));
        assert!(!ok("application/jsonx"));
        assert!(require_json(&HeaderMap::new()).is_err());
    }
}
