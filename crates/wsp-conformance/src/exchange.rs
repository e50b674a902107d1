//! What the runner keeps of one HTTP exchange: the request it sent and the response it got,
//! with the credential redacted and bodies truncated, as evidence for a verdict.

use serde::Serialize;

/// Bodies kept in a report are cut to this many bytes (the length is always recorded).
pub const EVIDENCE_BODY_LIMIT: usize = 4096;

/// The value that replaces a credential in every recorded header.
pub const REDACTED: &str = "[redacted]";

/// A request as the runner sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    /// HTTP method, e.g. `PUT`.
    pub method: String,
    /// The full URL (or, for a byte-exact request, the origin and request target as sent).
    pub url: String,
    /// Headers the runner set; the `Authorization` value is replaced by [`REDACTED`] with its
    /// scheme kept (`Bearer [redacted]`).
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8), cut to [`EVIDENCE_BODY_LIMIT`] bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body length in bytes before truncation.
    pub body_bytes: usize,
}

/// A response as the host sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedResponse {
    /// HTTP status code.
    pub status: u16,
    /// Response headers in the order received.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8), cut to [`EVIDENCE_BODY_LIMIT`] bytes.
    pub body: String,
    /// The body length in bytes before truncation.
    pub body_bytes: usize,
}

/// One request and what came back: a response, or the transport error that replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    /// The request sent.
    pub request: RecordedRequest,
    /// The response, when one arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<RecordedResponse>,
    /// Why no response arrived (connection refused, timeout, unparsable answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport_error: Option<String>,
}

impl RecordedRequest {
    /// Records a request, redacting the `Authorization` value and truncating the body.
    pub fn new(method: &str, url: &str, headers: &[(String, String)], body: Option<&[u8]>) -> Self {
        RecordedRequest {
            method: method.to_string(),
            url: url.to_string(),
            headers: headers
                .iter()
                .map(|(name, value)| (name.clone(), redact_header(name, value)))
                .collect(),
            body: body.map(truncate_body),
            body_bytes: body.map_or(0, <[u8]>::len),
        }
    }
}

impl RecordedResponse {
    /// Records a response, truncating the body.
    pub fn new(status: u16, headers: &[(String, String)], body: &[u8]) -> Self {
        RecordedResponse {
            status,
            headers: headers.to_vec(),
            body: truncate_body(body),
            body_bytes: body.len(),
        }
    }
}

impl Exchange {
    /// Replaces every occurrence of `secret` in the recorded URL, headers and bodies.
    pub fn scrub(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let clean = |text: &mut String| *text = text.replace(secret, REDACTED);
        clean(&mut self.request.url);
        for (_, value) in &mut self.request.headers {
            clean(value);
        }
        if let Some(body) = &mut self.request.body {
            clean(body);
        }
        if let Some(resp) = &mut self.response {
            for (_, value) in &mut resp.headers {
                clean(value);
            }
            clean(&mut resp.body);
        }
    }

    /// A one-paragraph rendering for terminals: request line, status, and the start of the body.
    pub fn brief(&self, body_chars: usize) -> String {
        let mut out = format!("{} {}", self.request.method, self.request.url);
        if let Some(body) = &self.request.body {
            out.push_str(&format!("\n  > {}", clip(body, body_chars)));
        }
        match (&self.response, &self.transport_error) {
            (Some(resp), _) => {
                out.push_str(&format!("\n  < {}", resp.status));
                if !resp.body.is_empty() {
                    out.push_str(&format!(" {}", clip(&resp.body, body_chars)));
                }
            }
            (None, Some(err)) => out.push_str(&format!("\n  < no response: {err}")),
            (None, None) => {}
        }
        out
    }
}

fn clip(text: &str, max_chars: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max_chars {
        one_line
    } else {
        let cut: String = one_line.chars().take(max_chars).collect();
        format!("{cut}...")
    }
}

fn redact_header(name: &str, value: &str) -> String {
    if name.eq_ignore_ascii_case("authorization")
        || name.eq_ignore_ascii_case("proxy-authorization")
    {
        match value.split_once(' ') {
            Some((scheme, _)) => format!("{scheme} {REDACTED}"),
            None => REDACTED.to_string(),
        }
    } else {
        value.to_string()
    }
}

/// Lossy UTF-8 of at most [`EVIDENCE_BODY_LIMIT`] bytes, never splitting a character.
fn truncate_body(body: &[u8]) -> String {
    if body.len() <= EVIDENCE_BODY_LIMIT {
        return String::from_utf8_lossy(body).into_owned();
    }
    let mut cut = EVIDENCE_BODY_LIMIT;
    // Step back over UTF-8 continuation bytes so the cut lands on a character boundary.
    while cut > 0 && (body[cut] & 0b1100_0000) == 0b1000_0000 {
        cut -= 1;
    }
    let mut text = String::from_utf8_lossy(&body[..cut]).into_owned();
    text.push_str(&format!("... [{} more bytes]", body.len() - cut));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn authorization_is_redacted_with_scheme_kept() {
        let req = RecordedRequest::new(
            "GET",
            "http://h/x",
            &headers(&[
                ("Authorization", "Bearer sk-very-secret"),
                ("authorization", "opaque"),
                ("If-Match", "\"e1\""),
            ]),
            None,
        );
        assert_eq!(req.headers[0].1, "Bearer [redacted]");
        assert_eq!(req.headers[1].1, "[redacted]");
        assert_eq!(req.headers[2].1, "\"e1\"");
        let json = serde_json::to_string(&req).unwrap();
        assert!(!json.contains("sk-very-secret"));
    }

    #[test]
    fn scrub_removes_a_secret_everywhere() {
        let mut ex = Exchange {
            request: RecordedRequest::new(
                "PUT",
                "http://h/f?q=s3cr3t-value",
                &headers(&[("X-Echo", "s3cr3t-value")]),
                Some(b"{\"content\":\"s3cr3t-value\"}"),
            ),
            response: Some(RecordedResponse::new(
                200,
                &headers(&[("X", "s3cr3t-value")]),
                b"s3cr3t-value",
            )),
            transport_error: None,
        };
        ex.scrub("s3cr3t-value");
        assert!(!serde_json::to_string(&ex).unwrap().contains("s3cr3t-value"));
    }

    #[test]
    fn short_bodies_are_kept_whole() {
        let resp = RecordedResponse::new(200, &[], b"{\"a\":1}");
        assert_eq!(resp.body, "{\"a\":1}");
        assert_eq!(resp.body_bytes, 7);
    }

    #[test]
    fn long_bodies_are_cut_on_a_character_boundary() {
        // 'é' is two bytes; 4097 bytes of them force a cut inside a character.
        let body = "a".to_string() + &"é".repeat(3000);
        let resp = RecordedResponse::new(200, &[], body.as_bytes());
        assert_eq!(resp.body_bytes, body.len());
        let kept = resp.body.split("...").next().unwrap();
        assert!(kept.len() <= EVIDENCE_BODY_LIMIT);
        assert!(!kept.contains('\u{FFFD}'), "cut split a character");
        assert!(
            resp.body
                .ends_with(&format!("[{} more bytes]", body.len() - kept.len()))
        );
    }

    #[test]
    fn brief_shows_request_line_status_and_clipped_body() {
        let ex = Exchange {
            request: RecordedRequest::new("PUT", "http://h/f", &[], Some(b"{\"content\":\"x\"}")),
            response: Some(RecordedResponse::new(409, &[], b"line1\nline2")),
            transport_error: None,
        };
        assert_eq!(
            ex.brief(5),
            "PUT http://h/f\n  > {\"con...\n  < 409 line1..."
        );
        let lost = Exchange {
            request: RecordedRequest::new("GET", "http://h/f", &[], None),
            response: None,
            transport_error: Some("connection refused".into()),
        };
        assert_eq!(
            lost.brief(80),
            "GET http://h/f\n  < no response: connection refused"
        );
    }
}
