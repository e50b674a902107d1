//! The `paths` target: the three path parsers and the promises their types make.

use wsp_types::{MAX_PATH_LEN, WorkspacePath, WorkspacePrefix};
use wsp_vfs::{MAX_COMPONENT_BYTES, MAX_PATH_BYTES, VirtualPath};

/// Parses the input (lossily decoded as UTF-8) as a [`WorkspacePath`], a [`WorkspacePrefix`]
/// and a [`VirtualPath`], and checks what a successful parse promises.
///
/// ```
/// wsp_fuzz::paths(b"a/../b");
/// wsp_fuzz::paths("/ws/caf\u{e9}.md".as_bytes());
/// ```
pub fn paths(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    workspace_path(&raw);
    workspace_prefix(&raw);
    virtual_path(&raw);
}

/// The characters a workspace path may hold.
fn workspace_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-')
}

fn dot_or_empty(c: &str) -> bool {
    c.is_empty() || c == "." || c == ".."
}

fn workspace_path(raw: &str) {
    let Ok(path) = WorkspacePath::parse(raw) else {
        return;
    };
    let s = path.as_str();
    assert_eq!(s, raw, "a workspace path is never repaired");
    assert_eq!(
        WorkspacePath::parse(s).as_ref(),
        Ok(&path),
        "re-parse of {s:?}"
    );
    assert!(!s.is_empty() && s.len() <= MAX_PATH_LEN, "length of {s:?}");
    assert!(
        s.as_bytes()[0].is_ascii_alphanumeric(),
        "first byte of {s:?}"
    );
    assert!(s.bytes().all(workspace_char), "characters of {s:?}");
    assert!(!s.split('/').any(dot_or_empty), "components of {s:?}");
    // Every path is also a list prefix, and matches itself.
    let prefix = WorkspacePrefix::parse(s)
        .unwrap_or_else(|e| panic!("workspace path {s:?} is not a prefix: {e}"));
    assert!(prefix.matches(s));
    // A workspace path whose names fit a virtual component addresses the same names under `/`.
    if s.split('/').all(|c| c.len() <= MAX_COMPONENT_BYTES) {
        let v = VirtualPath::parse(&format!("/{s}"))
            .unwrap_or_else(|e| panic!("/{s} is not a virtual path: {e}"));
        assert!(v.components().eq(s.split('/')), "components of /{s}");
    }
}

fn workspace_prefix(raw: &str) {
    let Ok(prefix) = WorkspacePrefix::parse(raw) else {
        return;
    };
    let s = prefix.as_str();
    assert_eq!(s, raw, "a prefix is never repaired");
    assert_eq!(WorkspacePrefix::parse(s).as_ref(), Ok(&prefix));
    assert!(s.len() <= MAX_PATH_LEN, "length of {s:?}");
    assert!(s.bytes().all(workspace_char), "characters of {s:?}");
    assert!(s.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric()));
    // Every complete component is a name; only the last may be partial (or empty after `/`).
    let mut parts: Vec<&str> = s.split('/').collect();
    parts.pop();
    assert!(!parts.into_iter().any(dot_or_empty), "components of {s:?}");
    assert!(prefix.matches(s));
}

fn refused_char(c: char) -> bool {
    c.is_control()
        || c == '\\'
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

fn virtual_path(raw: &str) {
    let Ok(path) = VirtualPath::parse(raw) else {
        return;
    };
    let s = path.as_str();
    assert_eq!(
        VirtualPath::parse(s).as_ref(),
        Ok(&path),
        "re-parse of {s:?}"
    );
    // Nothing is repaired: the only accepted difference is one trailing `/`.
    assert!(
        raw == s || raw.strip_suffix('/') == Some(s),
        "{raw:?} parsed as {s:?}"
    );
    assert!(s.starts_with('/') && s.len() <= MAX_PATH_BYTES, "{s:?}");
    assert!(s == "/" || !s.ends_with('/'), "trailing slash in {s:?}");
    assert!(!s.chars().any(refused_char), "refused character in {s:?}");
    let components: Vec<&str> = path.components().collect();
    assert_eq!(components.len(), path.depth());
    assert_eq!(path.is_root(), components.is_empty());
    assert_eq!(path.file_name(), components.last().copied());
    assert_eq!(format!("/{}", components.join("/")), s);
    for c in &components {
        assert!(!dot_or_empty(c), "component {c:?} of {s:?}");
        assert!(c.len() <= MAX_COMPONENT_BYTES, "component length in {s:?}");
        // Each name is a path of its own right under the root.
        let alone = VirtualPath::parse(&format!("/{c}")).expect("a component is a path");
        assert_eq!(alone.depth(), 1);
    }
    assert!(path.starts_with(&VirtualPath::root()));
    assert_eq!(path.strip_prefix(&path), Some(Vec::new()));
    // Every ancestor is a prefix on whole components; a sibling with a longer name is not
    // (the first 16 and the last, so that a run stays linear in the input).
    let count = components.len();
    for n in (0..count).filter(|n| *n < 16 || *n + 1 == count) {
        let ancestor = VirtualPath::parse(&format!("/{}", components[..n].join("/")))
            .expect("an ancestor is a path");
        assert_eq!(
            path.strip_prefix(&ancestor),
            Some(components[n..].to_vec()),
            "{s:?} below {ancestor}"
        );
        let mut sibling = components[..=n].to_vec();
        let longer = format!("{}_", components[n]);
        sibling[n] = &longer;
        if let Ok(sibling) = VirtualPath::parse(&format!("/{}", sibling.join("/"))) {
            assert!(!path.starts_with(&sibling), "{s:?} is not below {sibling}");
        }
    }
}
