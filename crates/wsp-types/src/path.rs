//! Workspace file paths: a flat namespace with `/` allowed inside a name.

use std::fmt;

/// Longest accepted path, in bytes (the wire pattern allows 1 + 255 characters).
pub const MAX_PATH_LEN: usize = 256;

/// Why a string is not a [`WorkspacePath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error("path is empty")]
    Empty,
    /// The path is longer than [`MAX_PATH_LEN`] bytes.
    #[error("path is longer than {MAX_PATH_LEN} bytes")]
    TooLong,
    /// The first character is not an ASCII letter or digit.
    #[error("path must start with an ASCII letter or digit")]
    BadStart,
    /// A character outside `A-Z a-z 0-9 . _ / -`.
    #[error("path contains a character outside A-Z a-z 0-9 . _ / -")]
    BadCharacter,
    /// An empty, `.` or `..` component (`a//b`, `a/./b`, `a/../b`, trailing `/`).
    #[error("path has an empty, '.' or '..' component")]
    BadComponent,
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-')
}

/// A validated workspace file path such as `notes/plan.md`.
///
/// Matches `^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$` and has no empty, `.` or `..` component.
/// Invalid input is rejected, never repaired:
///
/// ```
/// use wsp_types::WorkspacePath;
/// assert!(WorkspacePath::parse("notes/plan.md").is_ok());
/// assert!(WorkspacePath::parse("report..final.md").is_ok());
/// assert!(WorkspacePath::parse("a/../b").is_err());
/// assert!(WorkspacePath::parse("a//b").is_err());
/// assert!(WorkspacePath::parse("/etc/passwd").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Validates `raw` (already percent-decoded, exactly once) as a workspace path.
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        let bytes = raw.as_bytes();
        let first = *bytes.first().ok_or(PathError::Empty)?;
        if bytes.len() > MAX_PATH_LEN {
            return Err(PathError::TooLong);
        }
        if !first.is_ascii_alphanumeric() {
            return Err(PathError::BadStart);
        }
        if !bytes.iter().copied().all(allowed) {
            return Err(PathError::BadCharacter);
        }
        if raw
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(PathError::BadComponent);
        }
        Ok(Self(raw.to_owned()))
    }

    /// The path as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the path, returning its string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for WorkspacePath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// Ord, Eq and Hash are the inner string's, so lookups by `&str` are consistent.
impl std::borrow::Borrow<str> for WorkspacePath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for WorkspacePath {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for WorkspacePath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for WorkspacePath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Self::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// A list filter: a plain string prefix of workspace paths (`notes/`, `MEM`, or empty for all).
///
/// It may end in `/` and may be a partial name, but it uses only characters a path may contain
/// and is at most [`MAX_PATH_LEN`] bytes, so a prefix that could never match is refused as bad
/// input rather than answered with an empty list.
///
/// ```
/// use wsp_types::WorkspacePrefix;
/// assert!(WorkspacePrefix::parse("notes/").is_ok());
/// assert!(WorkspacePrefix::parse("").is_ok());
/// assert!(WorkspacePrefix::parse("../").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WorkspacePrefix(String);

impl WorkspacePrefix {
    /// Validates a list prefix.
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        let bytes = raw.as_bytes();
        if bytes.len() > MAX_PATH_LEN {
            return Err(PathError::TooLong);
        }
        if bytes.first().is_some_and(|b| !b.is_ascii_alphanumeric()) {
            return Err(PathError::BadStart);
        }
        if !bytes.iter().copied().all(allowed) {
            return Err(PathError::BadCharacter);
        }
        // Every complete component (all but the last, which may be partial) must be a name.
        let mut parts: Vec<&str> = raw.split('/').collect();
        parts.pop();
        if parts
            .iter()
            .any(|c| c.is_empty() || *c == "." || *c == "..")
        {
            return Err(PathError::BadComponent);
        }
        Ok(Self(raw.to_owned()))
    }

    /// The empty prefix, which matches every path.
    pub fn all() -> Self {
        Self(String::new())
    }

    /// The prefix as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `path` starts with this prefix (plain byte-wise string prefix).
    pub fn matches(&self, path: &str) -> bool {
        path.starts_with(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expect: Result<(), PathError>) {
        assert_eq!(
            WorkspacePath::parse(raw).map(|_| ()),
            expect,
            "input {raw:?}"
        );
    }

    #[test]
    fn accepts_legal_names() {
        for ok in [
            "notes/plan.md",
            "report..final.md",
            "a.b-c_d/E.md",
            "AGENTS.md",
            "a",
            "knowledge/x/y/z.md",
            "9",
            "a/.env",
            "a/..b",
            "a/b..",
        ] {
            check(ok, Ok(()));
        }
        check(&"a".repeat(256), Ok(()));
    }

    #[test]
    fn rejects_everything_odd() {
        use PathError::*;
        let cases: &[(&str, PathError)] = &[
            ("", Empty),
            ("../etc/passwd", BadStart),
            ("a/../../b", BadComponent),
            ("a/../b", BadComponent),
            ("a/./b", BadComponent),
            ("/etc/passwd", BadStart),
            ("a//b", BadComponent),
            ("a/", BadComponent),
            ("..", BadStart),
            ("a\\..\\b", BadCharacter),
            ("a\0.md", BadCharacter),
            ("a\nb.md", BadCharacter),
            ("~/.ssh", BadStart),
            ("C:\\windows", BadCharacter),
            ("-rf", BadStart),
            (".env", BadStart),
            ("a b.md", BadCharacter),
            ("caf\u{e9}.md", BadCharacter),
            ("a/\u{202e}b", BadCharacter),
            ("a/..", BadComponent),
            ("a/.", BadComponent),
        ];
        for (raw, err) in cases {
            check(raw, Err(err.clone()));
        }
        check(&"a".repeat(257), Err(TooLong));
    }

    #[test]
    fn prefixes() {
        for ok in ["", "notes/", "notes", "MEM", "a/b/c", "a/b."] {
            assert!(WorkspacePrefix::parse(ok).is_ok(), "{ok:?}");
        }
        for bad in ["/", "../", "a//", "a/../", ".", "~", "a b", "a/./"] {
            assert!(WorkspacePrefix::parse(bad).is_err(), "{bad:?}");
        }
        let p = WorkspacePrefix::parse("notes/").unwrap();
        assert!(p.matches("notes/plan.md"));
        assert!(!p.matches("notes.md"));
    }
}
