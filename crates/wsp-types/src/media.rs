//! Media types as files carry them (`text/markdown`, `application/json; charset=utf-8`).

use std::fmt;

/// A media type: `type/subtype` with optional `; parameter` text, visible ASCII and spaces,
/// at most [`MediaType::MAX_LEN`] bytes. Every writer (the HTTP edge, the VFS, a host's own
/// code) goes through [`MediaType::parse`], so a stored file's type is always one of these.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MediaType(String);

/// Why a text is not a [`MediaType`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a media type is `type/subtype` (like text/markdown), visible ASCII, at most 255 bytes")]
pub struct MediaTypeError;

impl MediaType {
    /// The longest media type accepted, in bytes.
    pub const MAX_LEN: usize = 255;

    /// Checks `text`; the text is kept as given (no case or space folding).
    ///
    /// ```
    /// use wsp_types::MediaType;
    /// assert!(MediaType::parse("text/plain; charset=utf-8").is_ok());
    /// assert!(MediaType::parse("text").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, MediaTypeError> {
        let essence = text.split(';').next().unwrap_or_default().trim();
        let token = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
        };
        let ok = text.len() <= Self::MAX_LEN
            && text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
            && essence
                .split_once('/')
                .is_some_and(|(a, b)| token(a) && token(b));
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(MediaTypeError)
        }
    }

    /// A media type known when the program is written, like `HeaderValue::from_static`.
    ///
    /// # Panics
    /// When `text` is not a media type: a bug in the calling program, never input.
    pub fn from_static(text: &'static str) -> Self {
        match Self::parse(text) {
            Ok(t) => t,
            Err(_) => panic!("not a media type: {text:?}"),
        }
    }

    /// `text/markdown`, the type of a file written without one.
    pub fn markdown() -> Self {
        Self("text/markdown".to_owned())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, by value.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl Default for MediaType {
    /// [`MediaType::markdown`].
    fn default() -> Self {
        Self::markdown()
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for MediaType {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for MediaType {
    type Err = MediaTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl PartialEq<str> for MediaType {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for MediaType {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl serde::Serialize for MediaType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for MediaType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        for ok in [
            "text/markdown",
            "application/json",
            "text/plain; charset=utf-8",
            "application/vnd.a+json",
        ] {
            assert_eq!(MediaType::parse(ok).unwrap().as_str(), ok);
        }
        let long = format!("text/{}", "a".repeat(251));
        for bad in [
            "",
            "text",
            "/x",
            "text/",
            "te xt/plain",
            "text/plain\n",
            "ü/x",
            long.as_str(),
        ] {
            assert_eq!(MediaType::parse(bad), Err(MediaTypeError), "{bad:?}");
        }
        assert!(MediaType::parse(&long[..255]).is_ok());
    }

    #[test]
    fn deserializing_checks() {
        assert!(serde_json::from_str::<MediaType>("\"text/x\"").is_ok());
        assert!(serde_json::from_str::<MediaType>("\"nope\"").is_err());
    }
}
