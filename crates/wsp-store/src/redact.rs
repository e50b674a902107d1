//! WSR-1: secret values are replaced by `[REDACTED:<secretId>]` before anything is stored.
//!
//! A secret counts in any Unicode normalization form: text holding the NFD form of a secret
//! configured in NFC (or its NFKC, NFKD or a mixed form) is redacted like the secret itself.
//!
//! How: the secrets and the text are compared in NFKD, the form every other form decomposes to.
//! NFKD keeps the text's structure of *clusters* (a starter character and the combining marks
//! after it): decomposition works character by character and reordering never crosses a
//! starter, so each cluster of the original text becomes a contiguous run of the NFKD text. A
//! match found in the NFKD text is widened to whole clusters and mapped back to the original
//! text, so the span replaced is exactly the original characters that spell the secret, however
//! many bytes each form takes. Widening only ever redacts more (a ligature half of which belongs
//! to the secret goes whole), never less.
//!
//! Cost: text that is already in NFKD (all ASCII text, most text) is searched once, as is, with
//! no copy. Other text is decomposed once into a second buffer and also searched as written
//! (for the secret in each of its forms, which catches a form followed by marks that would
//! reorder into it); clusters are mapped back only when something matched.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkd_quick};

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
#[non_exhaustive]
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
/// Matching prefers the longest secret at each position, so a secret that contains another is
/// redacted whole and a marker is never re-scanned. Every Unicode normalization form of a
/// secret is the secret (see the module documentation for how the span is found). A text that
/// differs from a secret only in the combining marks on its last letter is redacted too: a
/// near-copy redacted costs less than a copy stored.
///
/// ```
/// use wsp_store::{Redactor, Secret};
/// let r = Redactor::new(vec![Secret { id: "openai".into(), value: "sk-12345678".into() }]).unwrap();
/// assert_eq!(r.redact("key=sk-12345678;"), "key=[REDACTED:openai];");
/// assert!(r.contains_secret("a/sk-12345678.md"));
/// // Full-width letters are a compatibility form of the same text.
/// assert_eq!(r.redact("\u{ff53}\u{ff4b}-12345678"), "[REDACTED:openai]");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    matchers: Option<Matchers>,
}

#[derive(Clone)]
struct Matchers {
    /// Over the NFKD text: each secret's NFKD form, less trailing marks when enough is left.
    folded: AhoCorasick,
    /// Over the text as written: each secret as configured and in its four normal forms.
    literal: AhoCorasick,
    /// The secret each `literal` pattern belongs to.
    literal_secret: Vec<usize>,
    /// The secrets, in order (`folded` pattern `i` is secret `i`).
    secrets: Vec<Secret>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.secrets().iter().map(|s| s.id.as_str()).collect();
        f.debug_struct("Redactor").field("ids", &ids).finish()
    }
}

/// One span of the original text to replace, and the secret found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    start: usize,
    end: usize,
    secret: usize,
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
        let folded: Vec<String> = secrets.iter().map(|s| folded_pattern(&s.value)).collect();
        let mut literal = Vec::new();
        let mut literal_secret = Vec::new();
        for (i, s) in secrets.iter().enumerate() {
            let v = s.value.as_str();
            let mut forms: Vec<String> = vec![
                v.to_owned(),
                v.nfc().collect(),
                v.nfd().collect(),
                v.nfkc().collect(),
                v.nfkd().collect(),
            ];
            forms.sort();
            forms.dedup();
            literal_secret.extend(std::iter::repeat_n(i, forms.len()));
            literal.extend(forms);
        }
        let build = |patterns: &[String]| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(patterns)
                .expect("a handful of literal secrets always builds")
        };
        Ok(Self {
            matchers: Some(Matchers {
                folded: build(&folded),
                literal: build(&literal),
                literal_secret,
                secrets,
            }),
        })
    }

    /// One redactor that knows the secrets of all of `redactors` (for text that belongs to no
    /// single owner yet, such as a request line in a log).
    pub fn union<'r>(redactors: impl IntoIterator<Item = &'r Redactor>) -> Self {
        let all: Vec<Secret> = redactors
            .into_iter()
            .flat_map(|r| r.secrets().iter().cloned())
            .collect();
        Self::new(all).expect("secrets that built a redactor build another")
    }

    /// Whether this redactor knows no secret.
    pub fn is_empty(&self) -> bool {
        self.matchers.is_none()
    }

    fn secrets(&self) -> &[Secret] {
        self.matchers.as_ref().map_or(&[], |m| &m.secrets)
    }

    /// Whether `text` holds a secret, in any normalization form: for the fields a caller names
    /// things by (a path, a media type, a key), which are refused rather than redacted.
    pub fn contains_secret(&self, text: &str) -> bool {
        let Some(m) = &self.matchers else {
            return false;
        };
        if in_nfkd(text) {
            return m.folded.is_match(text);
        }
        m.literal.is_match(text) || m.folded.is_match(&nfkd(text))
    }

    /// Whether `bytes` hold a secret: as text in any normalization form when they are UTF-8,
    /// else as any configured spelling of it (its UTF-8 bytes in each normal form). For a
    /// binary body, which cannot be redacted without corrupting it and so is refused instead.
    pub fn contains_secret_in_bytes(&self, bytes: &[u8]) -> bool {
        let Some(m) = &self.matchers else {
            return false;
        };
        match std::str::from_utf8(bytes) {
            Ok(text) => self.contains_secret(text),
            Err(_) => m.literal.is_match(bytes),
        }
    }

    /// The text with every secret replaced; borrowed when nothing matched.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(m) = &self.matchers else {
            return Cow::Borrowed(text);
        };
        let found = m.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut i = 0;
        while i < found.len() {
            let start = found[i].start;
            let mut end = found[i].end;
            out.push_str(&text[last..start]);
            push_marker(&mut out, &m.secrets[found[i].secret].id);
            // Spans that overlap this one (a cluster shared by two matches) join it; each
            // secret that reaches further adds its marker.
            i += 1;
            while i < found.len() && found[i].start < end {
                if found[i].end > end {
                    end = found[i].end;
                    push_marker(&mut out, &m.secrets[found[i].secret].id);
                }
                i += 1;
            }
            last = end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }
}

fn push_marker(out: &mut String, id: &str) {
    out.push_str("[REDACTED:");
    out.push_str(id);
    out.push(']');
}

impl Matchers {
    /// Every span of `text` holding a secret, sorted by start (longest first on a tie).
    fn find(&self, text: &str) -> Vec<Found> {
        let mut found = Vec::new();
        if in_nfkd(text) {
            // The text is its own NFKD form: one search, clusters are easy to see in place.
            for m in self.folded.find_iter(text) {
                found.push(Found {
                    start: m.start(),
                    end: cluster_end(text, m.end()),
                    secret: m.pattern().as_usize(),
                });
            }
            return found;
        }
        for m in self.literal.find_iter(text) {
            found.push(Found {
                start: m.start(),
                end: cluster_end(text, m.end()),
                secret: self.literal_secret[m.pattern().as_usize()],
            });
        }
        let folded = nfkd(text);
        let matches: Vec<_> = self.folded.find_iter(&folded).collect();
        if !matches.is_empty() {
            let mut clusters = Clusters::new(text).peekable();
            let mut current = clusters.next().expect("a text that matched is not empty");
            // Matches are disjoint and in order, so one walk over the clusters maps them all.
            for m in matches {
                while current.folded_end <= m.start() {
                    current = clusters.next().expect("a match lies inside the text");
                }
                let start = current.start;
                while current.folded_end < m.end() {
                    current = clusters.next().expect("a match lies inside the text");
                }
                found.push(Found {
                    start,
                    end: current.end,
                    secret: m.pattern().as_usize(),
                });
            }
        }
        found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        found
    }
}

/// Whether `text` is already in NFKD (always so for ASCII).
fn in_nfkd(text: &str) -> bool {
    text.is_ascii() || is_nfkd_quick(text.chars()) == IsNormalized::Yes
}

/// Whether `c` begins a cluster: its decomposition starts with a starter (combining class 0).
fn starts_cluster(c: char) -> bool {
    if c.is_ascii() {
        return true;
    }
    let mut first = None;
    decompose_compatible(c, |d| {
        first.get_or_insert(d);
    });
    first.is_none_or(|d| canonical_combining_class(d) == 0)
}

/// `at`, moved past the characters that continue the cluster before it (combining marks).
fn cluster_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + rest
        .char_indices()
        .find(|&(_, c)| starts_cluster(c))
        .map_or(rest.len(), |(i, _)| i)
}

/// The NFKD form of `text`.
fn nfkd(text: &str) -> String {
    text.nfkd().collect()
}

/// The pattern searched for in NFKD text: the secret's NFKD form without its trailing
/// combining marks (a mark the text adds after them would reorder in between), unless that
/// would leave fewer than [`MIN_SECRET_LEN`] characters.
fn folded_pattern(value: &str) -> String {
    let full = nfkd(value);
    let trimmed = full.trim_end_matches(|c| canonical_combining_class(c) != 0);
    if trimmed.chars().count() >= MIN_SECRET_LEN {
        trimmed.to_owned()
    } else {
        full
    }
}

/// One cluster of an original text: where it is there, and where its NFKD form ends in the
/// NFKD text.
#[derive(Debug, Clone, Copy)]
struct Cluster {
    start: usize,
    end: usize,
    folded_end: usize,
}

/// The clusters of a text, in order. Reordering stays inside a cluster, so cluster `k` of the
/// text is exactly the NFKD text between the `folded_end` of cluster `k - 1` and its own.
struct Clusters<'t> {
    chars: std::iter::Peekable<std::str::CharIndices<'t>>,
    len: usize,
    folded: usize,
}

impl<'t> Clusters<'t> {
    fn new(text: &'t str) -> Self {
        Self {
            chars: text.char_indices().peekable(),
            len: text.len(),
            folded: 0,
        }
    }
}

fn folded_len(c: char) -> usize {
    let mut n = 0;
    decompose_compatible(c, |d| n += d.len_utf8());
    n
}

impl Iterator for Clusters<'_> {
    type Item = Cluster;

    fn next(&mut self) -> Option<Cluster> {
        let (start, first) = self.chars.next()?;
        self.folded += folded_len(first);
        while let Some(&(_, c)) = self.chars.peek() {
            if starts_cluster(c) {
                break;
            }
            self.folded += folded_len(c);
            self.chars.next();
        }
        let end = self.chars.peek().map_or(self.len, |&(i, _)| i);
        Some(Cluster {
            start,
            end,
            folded_end: self.folded,
        })
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
            ("ü abcdefgh-ijkl ü", "ü [REDACTED:long] ü"),
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
        assert!(format!("{r:?}").contains("\"k\""));
        let s = Secret {
            id: "k".into(),
            value: "supersecretvalue".into(),
        };
        assert!(!format!("{s:?}").contains("supersecret"));
    }

    /// Texts whose decomposition and reordering exercise every way a cluster maps to NFKD.
    const TRICKY: &[&str] = &[
        "",
        "plain ascii",
        "caf\u{e9} cafe\u{301}",
        "\u{301}leading mark",
        "a\u{301}\u{323}\u{308}b",
        "a\u{323}\u{301}",
        "\u{fb01}ligature \u{fdfa}",
        "\u{d55c}\u{ae00} hangul",
        "\u{ff21}\u{ff22} full width",
        "\u{f73}\u{f75} tibetan",
        "\u{344}\u{301} greek",
        "x\u{1e0a}\u{323}y",
    ];

    #[test]
    fn clusters_tile_the_nfkd_text() {
        for text in TRICKY {
            let whole = nfkd(text);
            let clusters: Vec<Cluster> = Clusters::new(text).collect();
            let mut start = 0;
            let mut folded = 0;
            for c in &clusters {
                assert_eq!(c.start, start, "{text:?}");
                // Each cluster's NFKD form is its own, contiguous part of the NFKD text.
                assert_eq!(
                    &whole[folded..c.folded_end],
                    nfkd(&text[c.start..c.end]),
                    "{text:?} {c:?}"
                );
                start = c.end;
                folded = c.folded_end;
            }
            assert_eq!((start, folded), (text.len(), whole.len()), "{text:?}");
        }
    }

    #[test]
    fn every_normalization_form_is_the_secret() {
        // Configured in NFC.
        let r = redactor(&[("pw", "p\u{e4}ssw\u{f6}rd-\u{e9}t\u{e9}")]);
        let forms = [
            "p\u{e4}ssw\u{f6}rd-\u{e9}t\u{e9}",
            "pa\u{308}sswo\u{308}rd-e\u{301}te\u{301}",
            // Mixed: some letters composed, some not.
            "p\u{e4}sswo\u{308}rd-e\u{301}t\u{e9}",
            // Compatibility forms: full-width letters and hyphen.
            "\u{ff50}\u{e4}\u{ff53}\u{ff53}\u{ff57}\u{f6}\u{ff52}\u{ff44}\u{ff0d}\u{e9}\u{ff54}\u{e9}",
        ];
        for form in forms {
            let text = format!("<{form}>");
            assert_eq!(r.redact(&text), "<[REDACTED:pw]>", "{text:?}");
            assert!(r.contains_secret(&text), "{text:?}");
        }
        // Configured in NFD, written in NFC.
        let r = redactor(&[("pw", "pa\u{308}sswo\u{308}rd-e\u{301}te\u{301}")]);
        assert_eq!(
            r.redact("x p\u{e4}ssw\u{f6}rd-\u{e9}t\u{e9} y"),
            "x [REDACTED:pw] y"
        );
    }

    #[test]
    fn the_span_replaced_is_the_original_one() {
        let r = redactor(&[("k", "fish-and-chips")]);
        let cases = [
            // A ligature is one character of the text and two of its NFKD form.
            ("go \u{fb01}sh-and-chips now", "go [REDACTED:k] now"),
            // Marks after the last letter belong to it.
            ("fish-and-chips\u{301}\u{323}!", "[REDACTED:k]!"),
            // Not a secret: a letter with a mark is another letter.
            ("fi\u{301}sh-and-chips", "fi\u{301}sh-and-chips"),
        ];
        for (input, expect) in cases {
            assert_eq!(r.redact(input), expect, "{input:?}");
        }
        // A ligature half of which is in the secret goes whole.
        let r = redactor(&[("k", "chips-and-f")]);
        assert_eq!(r.redact("chips-and-\u{fb01}!"), "[REDACTED:k]!");
    }

    #[test]
    fn marks_after_the_secret_do_not_hide_it() {
        // The secret ends with an accented letter; the text adds a mark that sorts before it.
        let r = redactor(&[("k", "secret-caf\u{e9}")]);
        for text in [
            "secret-caf\u{e9}\u{323}.",
            "secret-cafe\u{323}\u{301}.",
            "secret-cafe\u{301}\u{323}.",
        ] {
            assert_eq!(r.redact(text), "[REDACTED:k].", "{text:?}");
        }
        // Too short a stem to drop the marks: matched with them only.
        let r = redactor(&[("k", "abcdefg\u{301}")]);
        assert_eq!(r.redact("abcdefg"), "abcdefg");
        assert_eq!(r.redact("abcdefg\u{301}"), "[REDACTED:k]");
        assert_eq!(r.redact("abcdefg\u{301}\u{323}"), "[REDACTED:k]");
    }

    #[test]
    fn overlapping_spans_join_and_keep_both_markers() {
        let r = redactor(&[("a", "xxxxxxxx-f"), ("b", "i-yyyyyyyy")]);
        // The ligature `fi` is shared: one span, two markers.
        assert_eq!(
            r.redact("<xxxxxxxx-\u{fb01}-yyyyyyyy>"),
            "<[REDACTED:a][REDACTED:b]>"
        );
    }

    #[test]
    fn union_knows_every_secret() {
        let a = redactor(&[("a", "aaaaaaaa1")]);
        let b = redactor(&[("b", "bbbbbbbb2")]);
        let all = Redactor::union([&a, &b, &Redactor::default()]);
        assert_eq!(
            all.redact("aaaaaaaa1 bbbbbbbb2"),
            "[REDACTED:a] [REDACTED:b]"
        );
        assert!(Redactor::union([]).is_empty());
    }
}
