//! Entity tags: opaque, quoted version tokens.

use std::fmt;

/// An opaque entity tag identifying one version of one life of one path, e.g. `"3f9a…-4"`.
///
/// The string includes its double quotes, so it can be sent verbatim as an HTTP `ETag` or
/// `If-Match` value. Two etags are equal only when their strings are equal byte for byte.
/// Etags are minted by stores ([`ETag::mint`]); clients only echo them back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// Mints the etag of `version` within the life identified by `life` (a value unique to that
    /// life of that path in its store, never reused after a delete).
    ///
    /// ```
    /// use wsp_types::ETag;
    /// let e = ETag::mint(0x1234, 2);
    /// assert_eq!(e.as_str(), "\"0000000000001234-2\"");
    /// ```
    pub fn mint(life: u64, version: u64) -> Self {
        Self(format!("\"{life:016x}-{version}\""))
    }

    /// Wraps an etag received from a peer (a header or a stored value), as sent.
    pub fn from_wire(raw: impl Into<String>) -> Self {
        Self(raw.into())
    }

    /// The etag string, quotes included.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the etag, returning its string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
