//! Virtual paths: the absolute paths an agent names in its tool calls.

use std::fmt;

/// Longest accepted virtual path, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// Longest accepted path component, in bytes.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Why a string is not a [`VirtualPath`]. Every variant is a refusal: nothing is ever repaired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VirtualPathError {
    /// The path is empty.
    #[error("the path is empty")]
    Empty,
    /// The path starts with `~` (a home directory is not a workspace).
    #[error("the path starts with '~'; use an absolute path such as /project/notes.md")]
    HomeRelative,
    /// The path starts with a drive letter (`C:`) or is a UNC path (`\\server\share`, `//server`).
    #[error("drive letters and UNC paths are not virtual paths")]
    DriveOrUnc,
    /// The path does not start with `/`.
    #[error("the path is relative; it must start with '/'")]
    Relative,
    /// The path contains a backslash.
    #[error("the path contains a backslash; use '/' between names")]
    Backslash,
    /// The path contains NUL or another control character.
    #[error("the path contains a control character")]
    ControlCharacter,
    /// The path contains a bidirectional-text control character.
    #[error("the path contains a bidirectional text control character")]
    BidiControl,
    /// A `.` or `..` component.
    #[error("the path has a '.' or '..' component")]
    DotComponent,
    /// An empty component (`//` inside the path, or more than one trailing `/`).
    #[error("the path has an empty component ('//')")]
    EmptyComponent,
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("the path is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    /// A component longer than [`MAX_COMPONENT_BYTES`].
    #[error("a name in the path is longer than {MAX_COMPONENT_BYTES} bytes")]
    ComponentTooLong,
}

/// Whether `c` is a bidirectional-text control: LRE, RLE, PDF, LRO, RLO (U+202A-202E), LRI, RLI,
/// FSI, PDI (U+2066-2069), LRM, RLM (U+200E, U+200F) or ALM (U+061C).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Whether a path may not contain `c` anywhere: control and bidi control characters, `\\`.
fn refused_in_path(c: char) -> bool {
    c.is_control() || is_bidi_control(c) || c == '\\'
}

/// Whether `name` is a component [`VirtualPath::parse`] accepts: not empty, not `.` or `..`, at
/// most [`MAX_COMPONENT_BYTES`], without `/` or a character [`refused_in_path`]. Checks names
/// read from a store without building a path.
pub(crate) fn is_component(name: &str) -> bool {
    !(name.is_empty() || name == "." || name == ".." || name.len() > MAX_COMPONENT_BYTES)
        && name.chars().all(|c| c != '/' && !refused_in_path(c))
}

/// An absolute, normal path in the agent's view, such as `/project/notes/plan.md`.
///
/// Parsing rejects rather than repairs: empty, relative, `.`/`..` components, empty components,
/// NUL and control characters, bidi controls, backslashes, a leading `~`, drive letters and UNC
/// forms, paths over [`MAX_PATH_BYTES`] and components over [`MAX_COMPONENT_BYTES`]. One trailing
/// `/` is allowed and means the same path (`/ws/` is `/ws`). `/` is the path with no components.
///
/// ```
/// use wsp_vfs::VirtualPath;
/// assert_eq!(VirtualPath::parse("/ws/").unwrap(), VirtualPath::parse("/ws").unwrap());
/// assert!(VirtualPath::parse("/ws/report..final.md").is_ok());
/// assert!(VirtualPath::parse("/ws/.env").is_ok());
/// assert!(VirtualPath::parse("/ws/../etc/passwd").is_err());
/// assert!(VirtualPath::parse("ws/a.md").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VirtualPath(String);

impl VirtualPath {
    /// Validates `raw` as a virtual path.
    pub fn parse(raw: &str) -> Result<Self, VirtualPathError> {
        use VirtualPathError as E;
        let first = raw.chars().next().ok_or(E::Empty)?;
        if raw.len() > MAX_PATH_BYTES {
            return Err(E::TooLong);
        }
        if first == '~' {
            return Err(E::HomeRelative);
        }
        let b = raw.as_bytes();
        let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
        let unc = raw.starts_with("\\\\") || raw.starts_with("//");
        if drive || unc {
            return Err(E::DriveOrUnc);
        }
        if first != '/' {
            return Err(E::Relative);
        }
        if let Some(c) = raw.chars().find(|c| refused_in_path(*c)) {
            return Err(match c {
                '\\' => E::Backslash,
                c if is_bidi_control(c) => E::BidiControl,
                _ => E::ControlCharacter,
            });
        }
        let body = &raw[1..];
        let body = body.strip_suffix('/').unwrap_or(body);
        if body.is_empty() {
            return Ok(Self("/".to_owned()));
        }
        for component in body.split('/') {
            match component {
                "" => return Err(E::EmptyComponent),
                "." | ".." => return Err(E::DotComponent),
                c if c.len() > MAX_COMPONENT_BYTES => return Err(E::ComponentTooLong),
                _ => {}
            }
        }
        Ok(Self(format!("/{body}")))
    }

    /// The root path `/`.
    pub fn root() -> Self {
        Self("/".to_owned())
    }

    /// The path as a string, without a trailing `/` (except for the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `/`.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The components, in order; none for the root.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0[1..].split('/').filter(|c| !c.is_empty())
    }

    /// The number of components.
    pub fn depth(&self) -> usize {
        self.components().count()
    }

    /// The last component, `None` for the root.
    pub fn file_name(&self) -> Option<&str> {
        self.components().last()
    }

    /// Whether `prefix` is this path or one of its ancestors, compared component by component
    /// (`/ws` is a prefix of `/ws/a`, not of `/ws_evil`).
    pub fn starts_with(&self, prefix: &VirtualPath) -> bool {
        self.strip_prefix(prefix).is_some()
    }

    /// The components below `prefix` when `prefix` is this path or an ancestor of it.
    ///
    /// ```
    /// use wsp_vfs::VirtualPath;
    /// let p = VirtualPath::parse("/ws/a/b.md").unwrap();
    /// let ws = VirtualPath::parse("/ws").unwrap();
    /// assert_eq!(p.strip_prefix(&ws), Some(vec!["a", "b.md"]));
    /// assert_eq!(p.strip_prefix(&VirtualPath::parse("/w").unwrap()), None);
    /// ```
    pub fn strip_prefix(&self, prefix: &VirtualPath) -> Option<Vec<&str>> {
        let mut mine = self.components();
        for theirs in prefix.components() {
            if mine.next()? != theirs {
                return None;
            }
        }
        Some(mine.collect())
    }

    /// This path with `names` appended (each must be a valid component; used internally with
    /// names read from a store).
    pub(crate) fn join_components<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut out = self.0.clone();
        for name in names {
            if !out.ends_with('/') {
                out.push('/');
            }
            out.push_str(name);
        }
        Self(out)
    }
}

impl fmt::Display for VirtualPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for VirtualPath {
    type Err = VirtualPathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for VirtualPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_is_what_parse_accepts_after_a_slash() {
        let agrees = |name: &str| {
            let parsed = VirtualPath::parse(&format!("/{name}"))
                .is_ok_and(|p| p.depth() == 1 && p.file_name() == Some(name));
            assert_eq!(is_component(name), parsed, "{name:?}");
        };
        for c in (0..0x3000u32).filter_map(char::from_u32) {
            agrees(&c.to_string());
            agrees(&format!("a{c}b"));
        }
        for name in ["", ".", "..", "...", ".a", "a.", "~", "C:", "a/b", "a\\b"] {
            agrees(name);
        }
        agrees(&"x".repeat(MAX_COMPONENT_BYTES));
        agrees(&"x".repeat(MAX_COMPONENT_BYTES + 1));
    }

    fn check(raw: &str, expect: Result<&str, VirtualPathError>) {
        let got = VirtualPath::parse(raw);
        let got = got.as_ref().map(VirtualPath::as_str).map_err(Clone::clone);
        assert_eq!(got, expect, "input {raw:?}");
    }

    #[test]
    fn accepts_normal_paths() {
        for (raw, normal) in [
            ("/", "/"),
            ("/ws", "/ws"),
            ("/ws/", "/ws"),
            ("/ws/a.md", "/ws/a.md"),
            ("/ws/report..final.md", "/ws/report..final.md"),
            ("/ws/.env", "/ws/.env"),
            ("/ws/...", "/ws/..."),
            ("/ws/a b/caf\u{e9}.md", "/ws/a b/caf\u{e9}.md"),
            ("/ws/~x", "/ws/~x"),
            ("/ws/C:x", "/ws/C:x"),
        ] {
            check(raw, Ok(normal));
        }
        let long_component = format!("/{}", "a".repeat(MAX_COMPONENT_BYTES));
        check(&long_component, Ok(&long_component));
    }

    #[test]
    fn rejects_without_repairing() {
        use VirtualPathError::*;
        let cases: &[(&str, VirtualPathError)] = &[
            ("", Empty),
            ("ws/a.md", Relative),
            ("..", Relative),
            (".", Relative),
            ("a", Relative),
            ("/ws/../etc/passwd", DotComponent),
            ("/ws/a/../../x", DotComponent),
            ("/ws/./a", DotComponent),
            ("/ws/..", DotComponent),
            ("/..", DotComponent),
            ("/ws//a", EmptyComponent),
            ("/ws//", EmptyComponent),
            ("//", DriveOrUnc),
            ("//server/share", DriveOrUnc),
            ("\\\\server\\share", DriveOrUnc),
            ("/ws\\..\\x", Backslash),
            ("/ws/a\\b", Backslash),
            ("/ws/a\u{0}.md", ControlCharacter),
            ("/ws/a\nb", ControlCharacter),
            ("/ws/a\rb", ControlCharacter),
            ("/ws/a\tb", ControlCharacter),
            ("/ws/a\u{7f}b", ControlCharacter),
            ("/ws/a\u{85}b", ControlCharacter),
            ("/ws/a\u{202e}b", BidiControl),
            ("/ws/a\u{202a}b", BidiControl),
            ("/ws/a\u{2066}b", BidiControl),
            ("/ws/a\u{2069}b", BidiControl),
            ("/ws/a\u{200e}b", BidiControl),
            ("/ws/a\u{200f}b", BidiControl),
            ("/ws/a\u{61c}b", BidiControl),
            ("~/x", HomeRelative),
            ("~", HomeRelative),
            ("C:\\x", DriveOrUnc),
            ("c:/x", DriveOrUnc),
            ("C:", DriveOrUnc),
        ];
        for (raw, err) in cases {
            check(raw, Err(err.clone()));
        }
        check(
            &format!("/{}", "a".repeat(MAX_COMPONENT_BYTES + 1)),
            Err(ComponentTooLong),
        );
        let long = "/abcdefgh".repeat(MAX_PATH_BYTES / 9 + 1);
        check(&long, Err(TooLong));
        let exactly = format!("/{}", vec!["a".repeat(254); 16].join("/"));
        assert_eq!(exactly.len(), 16 * 255);
        check(&exactly, Ok(&exactly));
    }

    #[test]
    fn prefixes_compare_components() {
        let p = |s: &str| VirtualPath::parse(s).unwrap();
        assert!(p("/ws/a").starts_with(&p("/ws")));
        assert!(p("/ws").starts_with(&p("/ws")));
        assert!(p("/ws").starts_with(&p("/")));
        assert!(!p("/ws_evil/a").starts_with(&p("/ws")));
        assert!(!p("/w").starts_with(&p("/ws")));
        assert!(!p("/ws").starts_with(&p("/ws/a")));
        assert_eq!(p("/").components().count(), 0);
        assert_eq!(p("/").join_components(["a", "b"]).as_str(), "/a/b");
        assert_eq!(p("/x").join_components(["a"]).as_str(), "/x/a");
        assert_eq!(p("/x/y").file_name(), Some("y"));
    }
}
