//! A byte-exact HTTP/1.1 exchange over a plain TCP stream.
//!
//! Ordinary clients normalize the request target (reqwest's `url` removes `.` and `..` segments),
//! so a request whose path must reach the host unchanged is written here by hand: the request line
//! carries the target exactly as given, `Connection: close` ends the exchange.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response the raw transport reads; a host sending more gets a transport error.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// A parsed HTTP/1.1 response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// One raw request: where to connect and what to write.
pub(crate) struct RawRequest<'a> {
    /// `host:port` to connect to.
    pub authority: &'a str,
    pub method: &'a str,
    /// The request target, written verbatim into the request line.
    pub target: &'a str,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
}

impl RawRequest<'_> {
    /// The bytes written on the wire.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.method, self.target, self.authority
        );
        for (name, value) in self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(body) = self.body {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        } else if matches!(self.method, "PUT" | "POST" | "PATCH") {
            head.push_str("Content-Length: 0\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if let Some(body) = self.body {
            bytes.extend_from_slice(body);
        }
        bytes
    }

    /// Sends the request and reads the whole response, all within `timeout`.
    pub(crate) async fn send(&self, timeout: Duration) -> Result<RawResponse, String> {
        match tokio::time::timeout(timeout, self.exchange()).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "no complete response within {} ms",
                timeout.as_millis()
            )),
        }
    }

    async fn exchange(&self) -> Result<RawResponse, String> {
        let mut stream = TcpStream::connect(self.authority)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.authority))?;
        stream
            .write_all(&self.encode())
            .await
            .map_err(|e| format!("cannot write the request: {e}"))?;
        let head_only = self.method == "HEAD";
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("cannot read the response: {e}"))?;
            let eof = n == 0;
            buf.extend_from_slice(&chunk[..n]);
            match parse_response(&buf, eof, head_only) {
                Parsed::Complete(resp) => return Ok(resp),
                Parsed::Invalid(why) => return Err(why),
                Parsed::Incomplete if buf.len() > MAX_RESPONSE_BYTES => {
                    return Err(format!("response larger than {MAX_RESPONSE_BYTES} bytes"));
                }
                Parsed::Incomplete => {}
            }
        }
    }
}

/// The state of a response read so far.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Complete(RawResponse),
    Incomplete,
    Invalid(String),
}

/// Parses `buf` as one HTTP/1.x response; `eof` says the peer closed the connection.
pub(crate) fn parse_response(buf: &[u8], eof: bool, head_only: bool) -> Parsed {
    let mut start = 0;
    loop {
        let Some(head_len) = find(&buf[start..], b"\r\n\r\n") else {
            return if eof {
                if buf.is_empty() {
                    Parsed::Invalid("connection closed without a response".into())
                } else {
                    Parsed::Invalid("connection closed before the response head ended".into())
                }
            } else {
                Parsed::Incomplete
            };
        };
        let head = String::from_utf8_lossy(&buf[start..start + head_len]);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        let code = parts.next().unwrap_or_default();
        if !version.starts_with("HTTP/1.") {
            return Parsed::Invalid(format!("not an HTTP/1.x status line: {status_line:?}"));
        }
        let status = match code.parse::<u16>() {
            Ok(s) if (100..=999).contains(&s) && code.len() == 3 => s,
            _ => return Parsed::Invalid(format!("bad status code in {status_line:?}")),
        };
        let mut headers = Vec::new();
        for line in lines {
            match line.split_once(':') {
                Some((name, value)) => {
                    headers.push((name.trim().to_string(), value.trim().to_string()))
                }
                None => return Parsed::Invalid(format!("malformed header line {line:?}")),
            }
        }
        let body_start = start + head_len + 4;
        if (100..200).contains(&status) {
            // An interim response (100 Continue): the real one follows.
            start = body_start;
            continue;
        }
        let body = &buf[body_start..];
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let complete = |body: Vec<u8>| {
            Parsed::Complete(RawResponse {
                status,
                headers: headers.clone(),
                body,
            })
        };
        if head_only || status == 204 || status == 304 {
            return complete(Vec::new());
        }
        if header("transfer-encoding").is_some_and(|te| te.to_ascii_lowercase().contains("chunked"))
        {
            return match decode_chunked(body) {
                Ok(Some(decoded)) => complete(decoded),
                Ok(None) if eof => {
                    Parsed::Invalid("connection closed inside a chunked body".into())
                }
                Ok(None) => Parsed::Incomplete,
                Err(why) => Parsed::Invalid(why),
            };
        }
        if let Some(len) = header("content-length") {
            let Ok(len) = len.parse::<usize>() else {
                return Parsed::Invalid(format!("bad Content-Length {len:?}"));
            };
            return if body.len() >= len {
                complete(body[..len].to_vec())
            } else if eof {
                Parsed::Invalid(format!(
                    "connection closed after {} of {len} body bytes",
                    body.len()
                ))
            } else {
                Parsed::Incomplete
            };
        }
        return if eof {
            complete(body.to_vec())
        } else {
            Parsed::Incomplete
        };
    }
}

/// Decodes a chunked body: `Ok(None)` while incomplete.
fn decode_chunked(mut rest: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = find(rest, b"\r\n") else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&rest[..line_end]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            // Trailers (usually none) end with an empty line.
            if rest.starts_with(b"\r\n") || find(rest, b"\r\n\r\n").is_some() {
                return Ok(Some(out));
            }
            return Ok(None);
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&rest[..size]);
        if &rest[size..size + 2] != b"\r\n" {
            return Err("chunk not followed by CRLF".into());
        }
        rest = &rest[size + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(status: u16, body: &[u8]) -> impl Fn(&Parsed) -> bool + '_ {
        move |p| matches!(p, Parsed::Complete(r) if r.status == status && r.body == body)
    }

    #[test]
    fn parses_content_length_bodies() {
        let raw = b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello";
        let parsed = parse_response(raw, false, false);
        assert!(complete(400, b"hello")(&parsed), "{parsed:?}");
        if let Parsed::Complete(r) = parsed {
            assert_eq!(
                r.headers[0],
                ("Content-Type".into(), "application/json".into())
            );
        }
        assert_eq!(
            parse_response(&raw[..raw.len() - 1], false, false),
            Parsed::Incomplete
        );
        assert!(matches!(
            parse_response(&raw[..raw.len() - 1], true, false),
            Parsed::Invalid(why) if why.contains("4 of 5")
        ));
    }

    #[test]
    fn parses_chunked_bodies() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
        assert!(complete(200, b"hello world")(&parse_response(
            raw, false, false
        )));
        assert_eq!(
            parse_response(&raw[..raw.len() - 2], false, false),
            Parsed::Incomplete
        );
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(matches!(
            parse_response(bad, false, false),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn reads_to_eof_without_framing_and_skips_interim_responses() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nrest of it";
        assert_eq!(parse_response(raw, false, false), Parsed::Incomplete);
        assert!(complete(200, b"rest of it")(&parse_response(
            raw, true, false
        )));
    }

    #[test]
    fn no_body_for_204_and_head() {
        assert!(complete(204, b"")(&parse_response(
            b"HTTP/1.1 204 No Content\r\n\r\n",
            false,
            false
        )));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
        assert!(complete(200, b"")(&parse_response(head, false, true)));
    }

    #[test]
    fn garbage_is_invalid_not_a_panic() {
        for raw in [
            &b"<html>hello</html>\r\n\r\n"[..],
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        ] {
            assert!(
                matches!(parse_response(raw, true, false), Parsed::Invalid(_)),
                "{raw:?}"
            );
        }
        assert!(
            matches!(parse_response(b"", true, false), Parsed::Invalid(w) if w.contains("without a response"))
        );
        assert!(matches!(
            parse_response(b"HTTP/1.1 200", true, false),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn encodes_the_target_verbatim() {
        let headers = vec![("Authorization".to_string(), "Bearer k".to_string())];
        let req = RawRequest {
            authority: "127.0.0.1:9",
            method: "PUT",
            target: "/v1/host/workspace/files/a/../b",
            headers: &headers,
            body: Some(b"{}"),
        };
        assert_eq!(
            String::from_utf8(req.encode()).unwrap(),
            "PUT /v1/host/workspace/files/a/../b HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\nAuthorization: Bearer k\r\nContent-Length: 2\r\n\r\n{}"
        );
    }
}
