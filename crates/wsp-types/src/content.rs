//! File bodies as the wire and the stores carry them: text, or bytes in standard base64.
//!
//! A body travels as the JSON string `content` with a [`ContentEncoding`]. For
//! [`ContentEncoding::Utf8`] the string is the text. For [`ContentEncoding::Base64`] it is the
//! file's bytes in the standard alphabet of RFC 4648 section 4, padded with `=`, with nothing
//! else in it (no line breaks, no spaces) and the unused bits of the last character zero, so
//! that every byte string has exactly one accepted spelling. Stores keep a binary body in that
//! spelling: a read hands it to the wire as it is, and only a size check or a secret scan
//! decodes it.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::wire::ContentEncoding;

/// Why a `base64` body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "content is not valid base64: standard alphabet (A-Z a-z 0-9 + /), `=` padding, no spaces or line breaks, unused bits zero"
)]
pub struct Base64Error;

/// Characters decoded at a time by [`ContentEncoding::body_len`] (a multiple of 4, so that
/// every chunk but the last holds whole groups and no padding).
const CHUNK_CHARS: usize = 4 * 1024;

impl ContentEncoding {
    /// Whether the body is bytes rather than text.
    pub fn is_binary(self) -> bool {
        self == Self::Base64
    }

    /// The body's size in bytes as limits count it: the UTF-8 bytes of text, the decoded bytes
    /// of base64. Checks a base64 body whole (in fixed chunks, without decoding it into memory).
    ///
    /// ```
    /// use wsp_types::wire::ContentEncoding;
    /// assert_eq!(ContentEncoding::Utf8.body_len("h\u{e9}"), Ok(3));
    /// assert_eq!(ContentEncoding::Base64.body_len("AAEC/w=="), Ok(4));
    /// assert!(ContentEncoding::Base64.body_len("AAEC/w=").is_err());
    /// ```
    pub fn body_len(self, content: &str) -> Result<u64, Base64Error> {
        match self {
            Self::Utf8 => Ok(content.len() as u64),
            Self::Base64 => {
                if !content.len().is_multiple_of(4) {
                    return Err(Base64Error);
                }
                let mut scratch = [0u8; CHUNK_CHARS / 4 * 3];
                let mut total = 0u64;
                for chunk in content.as_bytes().chunks(CHUNK_CHARS) {
                    let n = STANDARD
                        .decode_slice(chunk, &mut scratch)
                        .map_err(|_| Base64Error)?;
                    total += n as u64;
                }
                Ok(total)
            }
        }
    }

    /// The body's bytes: borrowed for text, decoded for base64.
    ///
    /// ```
    /// use wsp_types::wire::ContentEncoding;
    /// assert_eq!(&*ContentEncoding::Base64.decode("AAEC/w==").unwrap(), &[0, 1, 2, 255]);
    /// assert_eq!(&*ContentEncoding::Utf8.decode("AAEC").unwrap(), b"AAEC");
    /// ```
    pub fn decode(self, content: &str) -> Result<Cow<'_, [u8]>, Base64Error> {
        match self {
            Self::Utf8 => Ok(Cow::Borrowed(content.as_bytes())),
            Self::Base64 => STANDARD
                .decode(content)
                .map(Cow::Owned)
                .map_err(|_| Base64Error),
        }
    }
}

impl Default for ContentEncoding {
    /// Text: what a body without `contentEncoding` is.
    fn default() -> Self {
        Self::Utf8
    }
}

impl crate::wire::WorkspaceFile {
    /// The encoding of `content`: [`ContentEncoding::Utf8`] when the field is absent.
    pub fn encoding(&self) -> ContentEncoding {
        self.content_encoding.unwrap_or_default()
    }

    /// The file's bytes: the text's UTF-8 bytes, or the decoded bytes of a base64 body.
    ///
    /// ```
    /// let file: wsp_types::wire::WorkspaceFile = serde_json::from_str(
    ///     r#"{"path":"a.png","content":"AP8=","contentEncoding":"base64","version":1,
    ///         "updatedAt":"2026-01-01T00:00:00Z"}"#,
    /// ).unwrap();
    /// assert_eq!(&*file.bytes().unwrap(), &[0, 255]);
    /// ```
    pub fn bytes(&self) -> Result<Cow<'_, [u8]>, Base64Error> {
        self.encoding().decode(&self.content)
    }
}

/// `bytes` in standard, padded base64: the `content` of a [`ContentEncoding::Base64`] body.
///
/// ```
/// assert_eq!(wsp_types::base64_encode(&[0, 1, 2, 255]), "AAEC/w==");
/// ```
pub fn base64_encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A file's bytes as a body: text when they are UTF-8, base64 otherwise.
///
/// ```
/// use wsp_types::{body_of, wire::ContentEncoding};
/// assert_eq!(body_of(b"# Notes".to_vec()), ("# Notes".to_owned(), ContentEncoding::Utf8));
/// assert_eq!(body_of(vec![0x89, b'P']), ("iVA=".to_owned(), ContentEncoding::Base64));
/// ```
pub fn body_of(bytes: Vec<u8>) -> (String, ContentEncoding) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, ContentEncoding::Utf8),
        Err(e) => (base64_encode(e.as_bytes()), ContentEncoding::Base64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(s: &str) -> Result<u64, Base64Error> {
        ContentEncoding::Base64.body_len(s)
    }

    #[test]
    fn base64_bodies_have_one_spelling() {
        assert_eq!(len(""), Ok(0));
        assert_eq!(len("AA=="), Ok(1));
        assert_eq!(len("AAA="), Ok(2));
        assert_eq!(len("AAAA"), Ok(3));
        for refused in [
            "A", "AA", "AA=", "AAA", // unpadded
            "AB==", "AAB=",     // unused bits set
            "AA==AA==", // padding inside
            "AA AA=", "AAAA\n", "AAAA\r\n", // spaces, line breaks
            "AA-_",     // the URL-safe alphabet
            "====",
        ] {
            assert_eq!(len(refused), Err(Base64Error), "{refused:?}");
            assert!(
                ContentEncoding::Base64.decode(refused).is_err(),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn the_length_of_a_long_body_is_counted_across_chunks() {
        for n in [0, 1, 2, 3, 3071, 3072, 3073, 10_000, 100_001] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 256) as u8).collect();
            let text = base64_encode(&bytes);
            assert_eq!(len(&text), Ok(n as u64));
            assert_eq!(ContentEncoding::Base64.decode(&text).unwrap(), bytes);
        }
        // A fault in a later chunk is still found.
        let mut text = base64_encode(&[0u8; 9000]);
        text.replace_range(8000..8001, "*");
        assert_eq!(len(&text), Err(Base64Error));
    }

    #[test]
    fn body_of_keeps_text_as_text() {
        assert_eq!(body_of(Vec::new()), (String::new(), ContentEncoding::Utf8));
        let (text, encoding) = body_of(vec![b'a', 0xff]);
        assert_eq!(encoding, ContentEncoding::Base64);
        assert_eq!(
            ContentEncoding::Base64.decode(&text).unwrap(),
            vec![b'a', 0xff]
        );
    }
}
