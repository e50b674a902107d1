//! Reading the change feed (`GET /v1/host/workspace/events`, Server-Sent Events).
//!
//! The parser is this file's own. Of the maintained crates, `sse-stream` 0.2 (already in the
//! tree through rmcp) refuses what the WHATWG rules say to ignore (an unknown field, a line
//! without a colon, a repeated `event:` or `id:`, a `retry:` that is not a number) and drops
//! the rest of a chunk after such a line; 0.3 would be a second version beside rmcp's; and
//! `eventsource-stream` 0.2.3 keeps bytes that are not UTF-8 in its buffer for good, so one bad
//! byte stops every later event while the buffer grows.

use wsp_types::wire::WorkspaceEvent;

use crate::error::{ApiError, Error, excerpt};

/// One item of the feed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeedItem {
    /// A `workspace.updated` event.
    Updated(WorkspaceEvent),
    /// The stream's closing `error` event (e.g. `feed_position_expired`).
    Error(ApiError),
}

/// An open feed: call [`EventStream::next`] until it returns `None` (the host closed it).
///
/// Comment lines (keep-alives) and unknown event types are skipped. Lines end with CRLF, LF or
/// CR, as Server-Sent Events allow, and are decoded only once complete, so how the network cuts
/// the stream into chunks (inside a UTF-8 character, between a CR and its LF) never changes what
/// is read.
#[derive(Debug)]
pub struct EventStream {
    resp: reqwest::Response,
    /// Bytes received and not yet split into lines.
    buf: Vec<u8>,
    /// The lines of the event block being read.
    block: Vec<String>,
    last_id: Option<u64>,
    /// The host closed the stream: a CR at the end of `buf` ends its line.
    ended: bool,
    /// The most bytes one event block may take (the client's response bound).
    max_event: u64,
    /// Whether the client trusted CA certificates besides the system's.
    extra_ca: bool,
    /// Bytes of the event block being read, lines and buffer.
    block_bytes: u64,
}

impl EventStream {
    pub(crate) fn new(resp: reqwest::Response, max_event: u64, extra_ca: bool) -> Self {
        Self {
            resp,
            buf: Vec::new(),
            block: Vec::new(),
            last_id: None,
            ended: false,
            max_event,
            extra_ca,
            block_bytes: 0,
        }
    }

    /// The id of the last event received: pass it as `since` to resume after a disconnect.
    pub fn last_event_id(&self) -> Option<u64> {
        self.last_id
    }

    /// The next item, `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Result<FeedItem, Error>> {
        loop {
            while let Some(line) = take_line(&mut self.buf, self.ended) {
                let line = match String::from_utf8(line) {
                    Ok(line) => line,
                    Err(e) => {
                        return Some(Err(Error::UnexpectedBody {
                            status: 200,
                            reason: "the event stream is not UTF-8".into(),
                            body: excerpt(e.as_bytes()),
                        }));
                    }
                };
                if !line.is_empty() {
                    self.block_bytes += line.len() as u64;
                    self.block.push(line);
                    continue;
                }
                self.block_bytes = 0;
                let block = std::mem::take(&mut self.block);
                if block.is_empty() {
                    continue;
                }
                if let Some(item) = self.parse(&block) {
                    return Some(item);
                }
            }
            if self.ended {
                // A block the host never finished with a blank line is not an event.
                return None;
            }
            // One event never grows past the bound, however the host sends it.
            if self.block_bytes + self.buf.len() as u64 > self.max_event {
                self.ended = true;
                self.buf.clear();
                self.block.clear();
                return Some(Err(Error::ResponseTooLarge {
                    max: self.max_event,
                }));
            }
            match self.resp.chunk().await {
                Ok(Some(chunk)) => self.buf.extend_from_slice(&chunk),
                Ok(None) => self.ended = true,
                Err(e) => return Some(Err(Error::transport(e, self.extra_ca))),
            }
        }
    }

    fn parse(&mut self, block: &[String]) -> Option<Result<FeedItem, Error>> {
        let (mut id, mut event, mut data) = (None, "message", Vec::new());
        for line in block {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "" => {} // a comment
                "id" => id = value.parse::<u64>().ok(),
                "event" => event = value,
                "data" => data.push(value),
                _ => {}
            }
        }
        let data = data.join("\n");
        let bad = |reason: String| {
            Some(Err(Error::UnexpectedBody {
                status: 200,
                reason,
                body: excerpt(data.as_bytes()),
            }))
        };
        match event {
            "workspace.updated" => {
                self.last_id = id.or(self.last_id);
                match serde_json::from_str(&data) {
                    Ok(e) => Some(Ok(FeedItem::Updated(e))),
                    Err(e) => bad(format!("not a workspace event: {e}")),
                }
            }
            "error" => match Error::from_response(200, data.as_bytes()) {
                Error::Api(e) => Some(Ok(FeedItem::Error(e))),
                other => Some(Err(other)),
            },
            _ => None,
        }
    }
}

/// Removes and returns the first complete line of `buf`, without its end (CRLF, LF or CR).
/// A CR at the very end waits for the next chunk (an LF may follow), unless the stream `ended`.
fn take_line(buf: &mut Vec<u8>, ended: bool) -> Option<Vec<u8>> {
    let at = buf.iter().position(|&b| b == b'\n' || b == b'\r')?;
    let consumed = match (buf[at], buf.get(at + 1)) {
        (b'\r', Some(b'\n')) => at + 2,
        (b'\r', None) if !ended => return None,
        _ => at + 1,
    };
    let line = buf[..at].to_vec();
    buf.drain(..consumed);
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], ended: bool) -> (Vec<String>, Vec<u8>) {
        let mut buf = input.to_vec();
        let mut out = Vec::new();
        while let Some(line) = take_line(&mut buf, ended) {
            out.push(String::from_utf8(line).unwrap());
        }
        (out, buf)
    }

    #[test]
    fn lines_end_with_crlf_lf_or_cr() {
        assert_eq!(
            lines(b"a\r\nb\nc\rd", false),
            (vec!["a".into(), "b".into(), "c".into()], b"d".to_vec())
        );
        assert_eq!(lines(b"\n\r\n\r", true).0, vec!["", "", ""]);
    }

    #[test]
    fn a_cr_at_the_end_waits_for_a_possible_lf() {
        assert_eq!(lines(b"a\r", false), (vec![], b"a\r".to_vec()));
        assert_eq!(lines(b"a\r", true), (vec!["a".into()], vec![]));
    }

    /// However a CRLF stream with a two-byte character is cut into two chunks (inside the
    /// character, between a CR and its LF), the lines are those of the whole stream.
    #[test]
    fn every_cut_of_a_crlf_stream_reads_the_same_lines() {
        let stream =
            "id: 1\r\nevent: workspace.updated\r\ndata: {\"p\": \"café\"}\r\n\r\n".as_bytes();
        let whole = lines(stream, true).0;
        assert_eq!(whole.len(), 4, "{whole:?}");
        for cut in 0..=stream.len() {
            let (mut got, mut buf) = lines(&stream[..cut], false);
            buf.extend_from_slice(&stream[cut..]);
            got.extend(lines(&buf, true).0);
            assert_eq!(got, whole, "cut at byte {cut}");
        }
    }

    #[test]
    fn a_character_cut_between_chunks_waits_for_its_line() {
        let text = "data: é\n".as_bytes();
        let (first, rest) = text.split_at(7); // inside the two bytes of é
        let (none, mut buf) = lines(first, false);
        assert!(none.is_empty());
        buf.extend_from_slice(rest);
        assert_eq!(lines(&buf, false).0, vec!["data: é"]);
    }
}
