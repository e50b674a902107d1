//! The expected-failures file: scenarios a host is known to fail, reported as `xfail`.
//!
//! Format (see `conformance/README.md`): one scenario id per line, optionally followed by
//! whitespace and a reason; blank lines and lines starting with `#` are ignored.
//!
//! ```text
//! # host: example-host 2.1
//! WS-ETAG-003   If-Match: * is not implemented (tracked upstream)
//! WS-LIM-003
//! ```

use std::collections::BTreeMap;
use std::path::Path;

/// A parsed expected-failures list: scenario id -> reason (possibly empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedFailures {
    entries: BTreeMap<String, String>,
}

/// Why an expected-failures file was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpectedFailuresError {
    /// A line does not start with a scenario id (`WS-...`, upper-case letters, digits, `-`).
    #[error("line {line}: {text:?} is not a scenario id")]
    BadId {
        /// 1-based line number.
        line: usize,
        /// The offending token.
        text: String,
    },
    /// The same id is listed twice.
    #[error("line {line}: {id} is listed twice")]
    Duplicate {
        /// 1-based line number of the second listing.
        line: usize,
        /// The repeated id.
        id: String,
    },
    /// The file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
}

impl ExpectedFailures {
    /// Parses the file format described in the module docs.
    pub fn parse(text: &str) -> Result<Self, ExpectedFailuresError> {
        let mut entries = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, reason) = match line.split_once(char::is_whitespace) {
                Some((id, reason)) => (id, reason.trim()),
                None => (line, ""),
            };
            let id_ok = id.starts_with(|c: char| c.is_ascii_uppercase())
                && id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-');
            if !id_ok {
                return Err(ExpectedFailuresError::BadId {
                    line: line_no,
                    text: id.to_string(),
                });
            }
            if entries.insert(id.to_string(), reason.to_string()).is_some() {
                return Err(ExpectedFailuresError::Duplicate {
                    line: line_no,
                    id: id.to_string(),
                });
            }
        }
        Ok(ExpectedFailures { entries })
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Self, ExpectedFailuresError> {
        let text = std::fs::read_to_string(path).map_err(|e| ExpectedFailuresError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text)
    }

    /// The reason given for `id`, when it is listed (an empty string when none was given).
    pub fn reason(&self, id: &str) -> Option<&str> {
        self.entries.get(id).map(String::as_str)
    }

    /// Every listed id, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_reasons_comments_and_blanks() {
        let list = ExpectedFailures::parse(
            "# a comment\n\nWS-ETAG-003   If-Match: * missing\n  WS-LIM-003\nWS-X-1\tTabbed reason  \n",
        )
        .unwrap();
        assert_eq!(list.reason("WS-ETAG-003"), Some("If-Match: * missing"));
        assert_eq!(list.reason("WS-LIM-003"), Some(""));
        assert_eq!(list.reason("WS-X-1"), Some("Tabbed reason"));
        assert_eq!(list.reason("WS-PUT-001"), None);
        assert_eq!(
            list.ids().collect::<Vec<_>>(),
            ["WS-ETAG-003", "WS-LIM-003", "WS-X-1"]
        );
    }

    #[test]
    fn refuses_bad_ids_and_duplicates() {
        assert_eq!(
            ExpectedFailures::parse("WS-A-1\nws-lower-1 nope\n"),
            Err(ExpectedFailuresError::BadId {
                line: 2,
                text: "ws-lower-1".into()
            })
        );
        assert_eq!(
            ExpectedFailures::parse("WS-A-1\n# x\nWS-A-1 again\n"),
            Err(ExpectedFailuresError::Duplicate {
                line: 3,
                id: "WS-A-1".into()
            })
        );
        assert!(ExpectedFailures::parse("").unwrap().is_empty());
    }

    #[test]
    fn load_reports_missing_files() {
        let err = ExpectedFailures::load(Path::new("/nonexistent/expected-failures")).unwrap_err();
        assert!(matches!(err, ExpectedFailuresError::Io { .. }));
    }
}
