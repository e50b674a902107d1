//! A file on disk as the body of a write, streamed: [`FileBody`] reads the file in chunks and
//! yields the `WorkspaceFileCreate` JSON around it (`content` JSON-escaped text, or base64), so
//! a write of any size holds one chunk in memory, not the file, its JSON and a copy of both.
//!
//! The file is read twice: [`Survey`] first (is it UTF-8 text, how long is the body), then the
//! body itself, with an exact `Content-Length`. A file that changes between the two reads ends
//! the upload with an error rather than sending something else than was surveyed.

use std::io::Read as _;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, ReadBuf};

use crate::Error;

/// How much of the file is read at once.
const CHUNK: usize = 64 * 1024;

/// What the first read of a file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Survey {
    /// The file's size in bytes.
    pub size: u64,
    /// Whether the bytes are UTF-8 text.
    pub text: bool,
    /// The length of `content` as sent: JSON-escaped text, or base64.
    pub encoded: u64,
}

/// Reads `path` once: its size, whether it is UTF-8, and the length of its escaped text.
pub(crate) fn survey(path: &Path) -> Result<Survey, Error> {
    let unreadable =
        |e: std::io::Error| Error::InvalidArgument(format!("cannot read {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let mut buf = vec![0u8; CHUNK];
    // Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    let mut carry = 0usize;
    let (mut size, mut escaped, mut text) = (0u64, 0u64, true);
    loop {
        let n = file.read(&mut buf[carry..]).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        let chunk = &buf[carry..carry + n];
        escaped += chunk.iter().map(|&b| escaped_len(b) as u64).sum::<u64>();
        let held = carry + n;
        carry = 0;
        if text {
            match std::str::from_utf8(&buf[..held]) {
                Ok(_) => {}
                // An incomplete sequence at the end: the next chunk may finish it.
                Err(e) if e.error_len().is_none() => {
                    let valid = e.valid_up_to();
                    carry = held - valid;
                    buf.copy_within(valid..held, 0);
                }
                Err(_) => text = false,
            }
        }
    }
    let text = text && carry == 0;
    let encoded = if text { escaped } else { size.div_ceil(3) * 4 };
    Ok(Survey {
        size,
        text,
        encoded,
    })
}

/// The length of byte `b` in a JSON string: `\"`, `\\`, `\n` and the like take two, other
/// control characters six (`\u00XX`), everything else (UTF-8 continuation bytes included) one.
fn escaped_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0x00..=0x1f => 6,
        _ => 1,
    }
}

/// Appends `bytes` to `out` as the inside of a JSON string (valid UTF-8 stays as it is).
fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x00..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
}

/// Where the body is.
#[derive(Debug)]
enum Part {
    /// `{"content":"` is next.
    Opening,
    /// The content, chunk by chunk.
    Content,
    /// The rest of the object is next.
    Closing,
    /// Everything was sent.
    Done,
}

/// The body of a write of one file: `{"content":"...","contentType":"...",
/// "contentEncoding":"base64"?}`, the content read from disk as it is sent.
#[derive(Debug)]
pub(crate) struct FileBody {
    file: tokio::fs::File,
    survey: Survey,
    /// The rest of the object after `content`, closing brace included.
    closing: Bytes,
    part: Part,
    /// File bytes read so far.
    read: u64,
    /// Bytes read but not yet base64-encoded (fewer than 3).
    pending: Vec<u8>,
    buf: Box<[u8]>,
    length: u64,
}

impl FileBody {
    /// The body for `file` (opened, surveyed as `survey`), with `content_type`.
    pub(crate) fn new(file: std::fs::File, survey: Survey, content_type: &str) -> Self {
        let mut closing = Vec::new();
        closing.extend_from_slice(b"\",\"contentType\":");
        closing.extend_from_slice(
            serde_json::to_string(content_type)
                .expect("a string serializes")
                .as_bytes(),
        );
        if !survey.text {
            closing.extend_from_slice(b",\"contentEncoding\":\"base64\"");
        }
        closing.push(b'}');
        let length = OPENING.len() as u64 + survey.encoded + closing.len() as u64;
        Self {
            file: tokio::fs::File::from_std(file),
            survey,
            closing: Bytes::from(closing),
            part: Part::Opening,
            read: 0,
            pending: Vec::new(),
            buf: vec![0u8; CHUNK].into_boxed_slice(),
            length,
        }
    }

    /// The exact length of the whole body.
    pub(crate) fn len(&self) -> u64 {
        self.length
    }

    /// The content of the next chunk of the file, encoded; `None` at its end.
    fn poll_content(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Changed>>> {
        let mut read_buf = ReadBuf::new(&mut self.buf);
        if let Err(e) = ready!(Pin::new(&mut self.file).poll_read(cx, &mut read_buf)) {
            return Poll::Ready(Some(Err(Changed(format!("cannot read the file: {e}")))));
        }
        let chunk = read_buf.filled();
        self.read += chunk.len() as u64;
        if self.read > self.survey.size {
            return Poll::Ready(Some(Err(Changed(
                "the file grew while it was being sent".into(),
            ))));
        }
        if chunk.is_empty() {
            if self.read != self.survey.size {
                return Poll::Ready(Some(Err(Changed(
                    "the file shrank while it was being sent".into(),
                ))));
            }
            if self.pending.is_empty() {
                return Poll::Ready(None);
            }
            let last = wsp_types::base64_encode(&std::mem::take(&mut self.pending));
            return Poll::Ready(Some(Ok(Bytes::from(last))));
        }
        let mut out = Vec::with_capacity(chunk.len() * 2);
        if self.survey.text {
            escape_into(chunk, &mut out);
        } else {
            self.pending.extend_from_slice(chunk);
            let whole = self.pending.len() / 3 * 3;
            out.extend_from_slice(wsp_types::base64_encode(&self.pending[..whole]).as_bytes());
            self.pending.drain(..whole);
        }
        Poll::Ready(Some(Ok(Bytes::from(out))))
    }
}

/// `{"content":"`, the start of every body.
const OPENING: &[u8] = b"{\"content\":\"";

/// The file changed between its survey and its upload (or could not be read again).
#[derive(Debug)]
pub(crate) struct Changed(String);

impl std::fmt::Display for Changed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Changed {}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = Changed;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Changed>>> {
        let this = self.get_mut();
        loop {
            match this.part {
                Part::Opening => {
                    this.part = Part::Content;
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(OPENING)))));
                }
                Part::Content => match ready!(this.poll_content(cx)) {
                    Some(Ok(bytes)) if bytes.is_empty() => {}
                    Some(Ok(bytes)) => return Poll::Ready(Some(Ok(Frame::data(bytes)))),
                    Some(Err(e)) => {
                        this.part = Part::Done;
                        return Poll::Ready(Some(Err(e)));
                    }
                    None => this.part = Part::Closing,
                },
                Part::Closing => {
                    this.part = Part::Done;
                    return Poll::Ready(Some(Ok(Frame::data(this.closing.clone()))));
                }
                Part::Done => return Poll::Ready(None),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.part, Part::Done)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    /// The streamed body of `bytes` (written to a file), parsed back.
    async fn streamed(bytes: &[u8]) -> (serde_json::Value, u64, usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let survey = survey(&path).unwrap();
        let body = FileBody::new(
            std::fs::File::open(&path).unwrap(),
            survey,
            "text/plain; q=\"x\"",
        );
        let length = body.len();
        let sent = body.collect().await.unwrap().to_bytes();
        (serde_json::from_slice(&sent).unwrap(), length, sent.len())
    }

    #[tokio::test]
    async fn text_goes_as_escaped_json_and_bytes_as_base64_with_an_exact_length() {
        // Every escape, and a multi-byte character cut by the chunk boundary.
        let mut text = "\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é€😀 plain"
            .repeat(3)
            .into_bytes();
        text.extend(std::iter::repeat_n(b'a', CHUNK - 1));
        text.extend("é and more text".as_bytes());
        let (json, length, sent) = streamed(&text).await;
        assert_eq!(length, sent as u64);
        assert_eq!(json["content"].as_str().unwrap().as_bytes(), &text[..]);
        assert_eq!(json["contentType"], "text/plain; q=\"x\"");
        assert!(json.get("contentEncoding").is_none());

        for len in [0, 1, 2, 3, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 2] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8 | 0x80).collect();
            let (json, length, sent) = streamed(&bytes).await;
            assert_eq!(length, sent as u64, "{len}");
            if len == 0 {
                // No bytes at all is the empty text.
                assert_eq!(json["content"], "");
                continue;
            }
            assert_eq!(json["contentEncoding"], "base64", "{len}");
            assert_eq!(
                json["content"].as_str().unwrap(),
                wsp_types::base64_encode(&bytes),
                "{len}"
            );
        }
    }
}
