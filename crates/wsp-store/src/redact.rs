//! WSR-1: secret values are replaced by `[REDACTED:<secretId>]` before anything is stored.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};

/// Shortest secret value that is redacted; shorter values would mangle ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// One secret the host knows: its id (shown in the marker) and its plaintext value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The identifier shown in `[REDACTED:<id>]`.
    pub id: String,
    /// The plaintext, never logged.
    pub value: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("id", &self.id)
            .field("value", &"<hidden>")
            .finish()
    }
}

/// Why a secret list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// A value shorter than [`MIN_SECRET_LEN`] characters.
    #[error("secret {0:?} is shorter than {MIN_SECRET_LEN} characters")]
    TooShort(String),
    /// An id that is empty or contains characters other than `A-Z a-z 0-9 . _ -`.
    #[error("secret id {0:?} must be 1-64 characters of A-Z a-z 0-9 . _ -")]
    BadId(String),
}

/// Replaces every known secret value in a text with `[REDACTED:<secretId>]`.
///
/// Matching is a single left-to-right pass preferring the longest secret at each position, so
/// a secret that contains another is redacted whole and a marker is never re-scanned.
///
/// ```
/// use wsp_store::{Redactor, Secret};
/// let r = Redactor::new(vec![Secret { id: "openai".into(), value: "sk-12345678".into() }]).unwrap();
/// assert_eq!(r.redact("key=sk-12345678;"), "key=[REDACTED:openai];");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    ids: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor").field("ids", &self.ids).finish()
    }
}

impl Redactor {
    /// Builds a redactor; refuses values under [`MIN_SECRET_LEN`] characters and bad ids.
    pub fn new(secrets: Vec<Secret>) -> Result<Self, SecretError> {
        for s in &secrets {
            let id_ok = !s.id.is_empty()
                && s.id.len() <= 64
                && s.id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !id_ok {
                return Err(SecretError::BadId(s.id.clone()));
            }
            if s.value.chars().count() < MIN_SECRET_LEN {
                return Err(SecretError::TooShort(s.id.clone()));
            }
        }
        if secrets.is_empty() {
            return Ok(Self::default());
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(secrets.iter().map(|s| s.value.as_str()))
            .expect("a handful of literal secrets always builds");
        Ok(Self {
            matcher: Some(matcher),
            ids: secrets.into_iter().map(|s| s.id).collect(),
        })
    }

    /// Whether this redactor knows no secret.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The text with every secret replaced; borrowed when nothing matched.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(matcher) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        let mut out = String::new();
        let mut last = 0;
        for m in matcher.find_iter(text) {
            out.push_str(&text[last..m.start()]);
            out.push_str("[REDACTED:");
            out.push_str(&self.ids[m.pattern().as_usize()]);
            out.push(']');
            last = m.end();
        }
        if last == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(pairs: &[(&str, &str)]) -> Redactor {
        Redactor::new(
            pairs
                .iter()
                .map(|(id, v)| Secret {
                    id: (*id).into(),
                    value: (*v).into(),
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn replaces_longest_first_and_everywhere() {
        let r = redactor(&[("short", "abcdefgh"), ("long", "abcdefgh-ijkl")]);
        let cases = [
            ("abcdefgh-ijkl", "[REDACTED:long]"),
            ("x abcdefgh y", "x [REDACTED:short] y"),
            ("abcdefghabcdefgh", "[REDACTED:short][REDACTED:short]"),
            ("nothing here", "nothing here"),
            ("", ""),
            ("ü abcdefgh ü", "ü [REDACTED:short] ü"),
        ];
        for (input, expect) in cases {
            assert_eq!(r.redact(input), expect, "{input:?}");
        }
    }

    #[test]
    fn refuses_short_values_and_bad_ids() {
        assert_eq!(
            Redactor::new(vec![Secret {
                id: "a".into(),
                value: "1234567".into()
            }])
            .unwrap_err(),
            SecretError::TooShort("a".into())
        );
        assert!(matches!(
            Redactor::new(vec![Secret {
                id: "a b".into(),
                value: "12345678".into()
            }]),
            Err(SecretError::BadId(_))
        ));
        assert!(Redactor::new(vec![]).unwrap().is_empty());
    }

    #[test]
    fn debug_never_shows_values() {
        let r = redactor(&[("k", "supersecretvalue")]);
        assert!(!format!("{r:?}").contains("supersecret"));
        let s = Secret {
            id: "k".into(),
            value: "supersecretvalue".into(),
        };
        assert!(!format!("{s:?}").contains("supersecret"));
    }
}
