//! The mount table: which Workspaces an agent has, their Access Scopes and their Mounts.

use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wsp_types::OwnerId;

use crate::deny::{DEFAULT_DENY, DenyRules};
use crate::path::VirtualPath;
use crate::scope::AccessScope;

/// A mount table: the Workspaces of one agent, as written in TOML (`[[workspace]]` entries) or
/// built in Rust with [`MountTable::builder`].
///
/// ```
/// use wsp_vfs::MountTable;
/// let table = MountTable::from_toml_str(r#"
///     [[workspace]]
///     path  = "/scratch"
///     scope = "rw"
///     mount = { virtual = "scratch" }
/// "#).unwrap();
/// assert_eq!(table.workspaces().len(), 1);
///
/// let err = MountTable::from_toml_str(r#"
///     [[workspace]]
///     path  = "/a/../b"
///     scope = "ro"
///     mount = { virtual = "b" }
/// "#).unwrap_err();
/// assert!(err.to_string().starts_with("workspace entry 1 (path \"/a/../b\")"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "wsp mount table")]
pub struct MountTable {
    /// The Workspaces, each a `[[workspace]]` entry. None at all means no access.
    #[serde(default, rename = "workspace")]
    workspaces: Vec<WorkspaceConfig>,
}

/// One `[[workspace]]` entry: a logical prefix, its Access Scope, its Mount and the paths it
/// hides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WorkspaceConfig {
    /// The logical prefix the agent sees: absolute and normal (`/project`, not `/project/` or
    /// `/a/../project`). `/` mounts everything.
    pub path: String,
    /// `ro` (read, list, search), `rw` (everything) or `wo` (create or overwrite files only).
    pub scope: AccessScope,
    /// What backs the Workspace.
    pub mount: MountConfig,
    /// Physical and overlay mounts only: follow symbolic links whose target stays inside the
    /// physical directory. Off by default: every symbolic link is refused.
    #[serde(default, skip_serializing_if = "is_false")]
    pub follow_symlinks: bool,
    /// Physical and overlay mounts only: read files that have more than one hard link. Off by
    /// default, because a hard link inside the directory may share its content with a file
    /// outside it, which no path check can see.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_hard_links: bool,
    /// Glob patterns, relative to `path`, of the files and directories the agent never sees:
    /// not listed, matched or searched, read as missing, refused to writes like a path outside
    /// every Workspace. A directory that matches hides everything under it, and `dir/**` hides
    /// `dir` too. `*` stays within one path component and `**` spans any number; patterns
    /// ignore case. Absent: the default list of secrets and version-control internals
    /// (`wsp_vfs::DEFAULT_DENY`); a list replaces it; `deny = []` hides nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = deny_default)]
    pub deny: Option<Vec<String>>,
    /// More patterns hidden besides `deny` (or besides the default list when `deny` is absent):
    /// the way to keep the defaults and add to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_extra: Vec<String>,
}

/// The schema of `deny` says what its absence means (and that a table writes a list, never a
/// null).
fn deny_default(schema: &mut schemars::Schema) {
    schema.insert("type".into(), "array".into());
    schema.insert("default".into(), serde_json::json!(DEFAULT_DENY));
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The Mount behind a Workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MountConfig {
    /// A directory on the host (absolute path), served by the Physical Store.
    Physical(PathBuf),
    /// A namespace of the Virtual Store (`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`).
    Virtual(String),
    /// A virtual upper layer over a physical lower directory that is never written.
    Overlay(OverlayConfig),
}

/// The two layers of an overlay Mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverlayConfig {
    /// The Virtual Store namespace that receives every write and delete.
    pub upper: String,
    /// The host directory read underneath (absolute path); never written.
    pub lower: PathBuf,
}

impl MountConfig {
    /// A physical Mount of the host directory `dir`.
    pub fn physical(dir: impl Into<PathBuf>) -> Self {
        Self::Physical(dir.into())
    }

    /// A virtual Mount of `namespace`.
    pub fn virtual_namespace(namespace: impl Into<String>) -> Self {
        Self::Virtual(namespace.into())
    }

    /// An overlay Mount: `upper` namespace over the host directory `lower`.
    pub fn overlay(upper: impl Into<String>, lower: impl Into<PathBuf>) -> Self {
        Self::Overlay(OverlayConfig {
            upper: upper.into(),
            lower: lower.into(),
        })
    }

    /// The host directory this Mount reads, if any.
    pub fn physical_dir(&self) -> Option<&Path> {
        match self {
            Self::Physical(dir) => Some(dir),
            Self::Overlay(o) => Some(&o.lower),
            Self::Virtual(_) => None,
        }
    }

    /// The Virtual Store namespace this Mount uses, if any.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Self::Virtual(ns) => Some(ns),
            Self::Overlay(o) => Some(&o.upper),
            Self::Physical(_) => None,
        }
    }
}

impl WorkspaceConfig {
    /// An entry with both link options off and the default deny list ([`DEFAULT_DENY`]).
    pub fn new(path: impl Into<String>, scope: AccessScope, mount: MountConfig) -> Self {
        Self {
            path: path.into(),
            scope,
            mount,
            follow_symlinks: false,
            allow_hard_links: false,
            deny: None,
            deny_extra: Vec::new(),
        }
    }

    /// Sets `deny`: these patterns instead of the default list (none at all for an empty list).
    ///
    /// ```
    /// use wsp_vfs::{AccessScope, MountConfig, WorkspaceConfig};
    /// let ws = WorkspaceConfig::new("/p", AccessScope::ReadOnly, MountConfig::virtual_namespace("p"))
    ///     .deny(["secrets/**"])
    ///     .deny_extra(["*.log"]);
    /// assert_eq!(ws.deny_patterns(), ["secrets/**", "*.log"]);
    /// ```
    pub fn deny<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.deny = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// Sets `deny_extra`: patterns hidden besides `deny` or the default list.
    pub fn deny_extra<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.deny_extra = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// The patterns in force: `deny` (or [`DEFAULT_DENY`] when it is absent), then `deny_extra`.
    pub fn deny_patterns(&self) -> Vec<&str> {
        let base: Vec<&str> = match &self.deny {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => DEFAULT_DENY.to_vec(),
        };
        base.into_iter()
            .chain(self.deny_extra.iter().map(String::as_str))
            .collect()
    }

    /// The compiled rules of [`Self::deny_patterns`].
    pub(crate) fn deny_rules(&self) -> Result<DenyRules, MountProblem> {
        DenyRules::compile(self.deny_patterns())
            .map_err(|(pattern, why)| MountProblem::BadDenyPattern { pattern, why })
    }

    /// Sets `follow_symlinks` (physical and overlay mounts only).
    pub fn follow_symlinks(mut self, yes: bool) -> Self {
        self.follow_symlinks = yes;
        self
    }

    /// Sets `allow_hard_links` (physical and overlay mounts only).
    pub fn allow_hard_links(mut self, yes: bool) -> Self {
        self.allow_hard_links = yes;
        self
    }
}

/// What is wrong with one entry of a mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MountProblem {
    /// The prefix does not start with `/`, or is not a valid virtual path.
    PrefixNotAbsolute(String),
    /// The prefix is a valid path but not in normal form (`/a/` for `/a`).
    PrefixNotNormal {
        /// How to write it.
        normal: String,
    },
    /// Another entry has the same prefix.
    DuplicatePrefix {
        /// The other entry (1-based).
        other: usize,
    },
    /// The host directory is not an absolute path.
    DirNotAbsolute,
    /// The host directory does not exist or cannot be reached.
    DirMissing,
    /// The host path exists but is not a directory.
    DirNotDirectory,
    /// A namespace that is not an identifier.
    BadNamespace(String),
    /// `follow_symlinks` or `allow_hard_links` on a virtual Mount.
    LinkOptionOnVirtual,
    /// A virtual or overlay Mount, but no Virtual Store was given to the builder.
    NoVirtualStore,
    /// A `deny` or `deny_extra` pattern that is not a valid glob, or can never match.
    BadDenyPattern {
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
}

impl fmt::Display for MountProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PrefixNotAbsolute(why) => {
                write!(f, "path must be an absolute virtual path: {why}")
            }
            Self::PrefixNotNormal { normal } => {
                write!(f, "path is not in normal form; write it as {normal:?}")
            }
            Self::DuplicatePrefix { other } => write!(
                f,
                "duplicate prefix: workspace entry {other} has the same path"
            ),
            Self::DirNotAbsolute => {
                f.write_str("the physical directory must be an absolute host path")
            }
            Self::DirMissing => f.write_str("the physical directory does not exist"),
            Self::DirNotDirectory => f.write_str("the physical directory is not a directory"),
            Self::BadNamespace(ns) => write!(
                f,
                "bad namespace {ns:?}: use 1-128 of A-Z a-z 0-9 . _ : -, starting with a letter or digit"
            ),
            Self::LinkOptionOnVirtual => f.write_str(
                "follow_symlinks and allow_hard_links apply only to physical and overlay mounts",
            ),
            Self::NoVirtualStore => {
                f.write_str("a virtual or overlay mount needs a Virtual Store, and none was given")
            }
            Self::BadDenyPattern { pattern, why } => {
                write!(f, "deny pattern {pattern:?} is not valid: {why}")
            }
        }
    }
}

/// Why a mount table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MountTableError {
    /// The file could not be read.
    #[error("cannot read mount table {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The TOML does not parse or does not fit the format.
    #[error("mount table: {0}")]
    Syntax(String),
    /// One entry is invalid.
    #[error("workspace entry {entry} (path {path:?}): {problem}")]
    Entry {
        /// 1-based position of the `[[workspace]]` entry, as a person counts them.
        entry: usize,
        /// The entry's `path` as written.
        path: String,
        /// What is wrong.
        problem: MountProblem,
    },
}

/// The largest mount table file [`MountTable::load`] reads (1 MiB): a mount table is a short
/// list, and a path given by mistake (a log, a device) is refused without reading it whole.
pub const MAX_TABLE_BYTES: u64 = 1024 * 1024;

impl MountTable {
    /// A table with no Workspaces: no tools, every path denied.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Starts a table in Rust.
    ///
    /// ```
    /// use wsp_vfs::{AccessScope, MountConfig, MountTable, WorkspaceConfig};
    /// let table = MountTable::builder()
    ///     .workspace(WorkspaceConfig::new("/notes", AccessScope::ReadWrite, MountConfig::virtual_namespace("notes")))
    ///     .workspace(WorkspaceConfig::new("/outbox", AccessScope::WriteOnly, MountConfig::virtual_namespace("outbox")))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(table.workspaces().len(), 2);
    /// ```
    pub fn builder() -> MountTableBuilder {
        MountTableBuilder::default()
    }

    /// Parses and validates a TOML mount table.
    pub fn from_toml_str(text: &str) -> Result<Self, MountTableError> {
        let table: Self =
            toml::from_str(text).map_err(|e| MountTableError::Syntax(e.to_string()))?;
        table.validate()?;
        Ok(table)
    }

    /// Reads, parses and validates a TOML mount table file.
    /// A file over [`MAX_TABLE_BYTES`] is refused after reading one byte past the limit.
    pub fn load(path: &Path) -> Result<Self, MountTableError> {
        use std::io::Read;
        let fail = |message: String| MountTableError::Read {
            path: path.display().to_string(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let mut bytes = Vec::new();
        file.take(MAX_TABLE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(e.to_string()))?;
        if bytes.len() as u64 > MAX_TABLE_BYTES {
            return Err(fail(format!(
                "it is over {MAX_TABLE_BYTES} bytes; a mount table is a short list of workspaces"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".into()))?;
        Self::from_toml_str(&text)
    }

    /// The table as TOML.
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The entries, in the order written.
    pub fn workspaces(&self) -> &[WorkspaceConfig] {
        &self.workspaces
    }

    /// The pairs of Workspaces that reach the same files underneath under different Access
    /// Scopes ([`ScopeOverlap`]), in table order. Loading a table does not refuse them (a host
    /// may mean it); `wsp mcp` warns, or refuses with `--strict`.
    ///
    /// A Workspace nested where its directory sits in the outer one's (`/all` over `dir` and
    /// `/all/notes` over `dir/notes`) is not one: longest-prefix routing gives every path of
    /// that directory to the inner Workspace, so the outer one never reaches it.
    pub fn scope_overlaps(&self) -> Vec<ScopeOverlap> {
        let mut reaches: Vec<(OverlapSide, Reach)> = Vec::new();
        for (i, ws) in self.workspaces.iter().enumerate() {
            let side = |scope| OverlapSide {
                entry: i + 1,
                path: ws.path.clone(),
                scope,
            };
            let host = |dir: &Path| std::fs::canonicalize(dir).ok().map(Reach::Host);
            match &ws.mount {
                MountConfig::Physical(dir) => {
                    reaches.extend(host(dir).map(|r| (side(ws.scope), r)));
                }
                MountConfig::Virtual(ns) => {
                    reaches.push((side(ws.scope), Reach::Namespace(ns.clone())));
                }
                MountConfig::Overlay(o) => {
                    if ws.scope != AccessScope::WriteOnly {
                        reaches.extend(host(&o.lower).map(|r| (side(AccessScope::ReadOnly), r)));
                    }
                    reaches.push((side(ws.scope), Reach::Namespace(o.upper.clone())));
                }
            }
        }
        let mut found = Vec::new();
        for (i, (a, reach_a)) in reaches.iter().enumerate() {
            for (b, reach_b) in &reaches[i + 1..] {
                if a.scope == b.scope || a.entry == b.entry {
                    continue;
                }
                // The outer side reaches the inner one's files at `outer.path/rel`; when that
                // is the inner Workspace's own prefix, routing sends it there.
                let unreconciled = |outer: &OverlapSide, inner: &OverlapSide, rel: PathBuf| {
                    let alias = Path::new(&outer.path).join(rel);
                    alias != Path::new(&inner.path)
                };
                let shared = match (reach_a.contains(reach_b), reach_b.contains(reach_a)) {
                    (Some(rel), _) => unreconciled(a, b, rel).then(|| reach_b.clone()),
                    (None, Some(rel)) => unreconciled(b, a, rel).then(|| reach_a.clone()),
                    (None, None) => None,
                };
                if let Some(reach) = shared {
                    found.push(ScopeOverlap {
                        first: a.clone(),
                        second: b.clone(),
                        reach,
                    });
                }
            }
        }
        found
    }

    /// Checks every entry: prefixes absolute, normal and unique; host directories absolute and
    /// existing; namespaces valid; link options only where they mean something; deny patterns
    /// valid globs that can match.
    pub fn validate(&self) -> Result<(), MountTableError> {
        let mut seen: Vec<VirtualPath> = Vec::with_capacity(self.workspaces.len());
        for (i, ws) in self.workspaces.iter().enumerate() {
            let fail = |problem| MountTableError::Entry {
                entry: i + 1,
                path: ws.path.clone(),
                problem,
            };
            let prefix = VirtualPath::parse(&ws.path)
                .map_err(|e| fail(MountProblem::PrefixNotAbsolute(e.to_string())))?;
            if prefix.as_str() != ws.path {
                return Err(fail(MountProblem::PrefixNotNormal {
                    normal: prefix.as_str().to_owned(),
                }));
            }
            if let Some(other) = seen.iter().position(|p| *p == prefix) {
                return Err(fail(MountProblem::DuplicatePrefix { other: other + 1 }));
            }
            seen.push(prefix);
            if let Some(ns) = ws.mount.namespace() {
                OwnerId::parse(ns).map_err(|_| fail(MountProblem::BadNamespace(ns.to_owned())))?;
            }
            match ws.mount.physical_dir() {
                Some(dir) => check_dir(dir).map_err(fail)?,
                None if ws.follow_symlinks || ws.allow_hard_links => {
                    return Err(fail(MountProblem::LinkOptionOnVirtual));
                }
                None => {}
            }
            ws.deny_rules().map_err(fail)?;
        }
        Ok(())
    }
}

/// What a Workspace's Mount reaches underneath: a host directory or a Virtual Store namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    /// A host directory, canonical.
    Host(PathBuf),
    /// A Virtual Store namespace.
    Namespace(String),
}

impl Reach {
    /// Where `inner` sits inside `self`: the relative path, empty when they are the same.
    fn contains(&self, inner: &Self) -> Option<PathBuf> {
        match (self, inner) {
            (Self::Host(outer), Self::Host(inner)) => {
                inner.strip_prefix(outer).ok().map(Path::to_path_buf)
            }
            (Self::Namespace(a), Self::Namespace(b)) if a == b => Some(PathBuf::new()),
            _ => None,
        }
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Host(dir) => write!(f, "the same host directory {}", dir.display()),
            Self::Namespace(ns) => write!(f, "the same virtual namespace {ns:?}"),
        }
    }
}

/// A Workspace as one side of a [`ScopeOverlap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlapSide {
    /// The entry's position in the table, from 1.
    pub entry: usize,
    /// Its logical prefix.
    pub path: String,
    /// The scope under which it reaches the shared files (an overlay's lower directory is
    /// reached read-only: it is never written).
    pub scope: AccessScope,
}

/// Two Workspaces that reach the same files underneath (one host directory, or one inside the
/// other; one Virtual Store namespace) under different Access Scopes, at logical paths that
/// routing does not reconcile: the narrower scope does not hold for those files. A read-only
/// view the agent can change through a writable Workspace, or a write-only drop it can read
/// back. Found by [`MountTable::scope_overlaps`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeOverlap {
    /// The earlier entry.
    pub first: OverlapSide,
    /// The later entry.
    pub second: OverlapSide,
    /// The files both reach: the deeper of the two directories, or the namespace.
    reach: Reach,
}

impl std::fmt::Display for ScopeOverlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b) = (&self.first, &self.second);
        write!(
            f,
            "workspace entries {} ({}, {}) and {} ({}, {}) reach {}: ",
            a.entry, a.path, a.scope, b.entry, b.path, b.scope, self.reach
        )?;
        let by = |scope| [a, b].into_iter().find(|s| s.scope == scope);
        let readable = [a, b]
            .into_iter()
            .find(|s| s.scope != AccessScope::WriteOnly);
        match (
            by(AccessScope::WriteOnly),
            readable,
            by(AccessScope::ReadOnly),
        ) {
            (Some(drop), Some(reader), _) => write!(
                f,
                "the agent can read through {} what it writes to {}",
                reader.path, drop.path
            ),
            (_, _, Some(view)) => {
                let writer = if view == a { b } else { a };
                write!(
                    f,
                    "the agent can change through {} what {} shows as read-only",
                    writer.path, view.path
                )
            }
            _ => write!(f, "their scopes differ"),
        }
    }
}

fn check_dir(dir: &Path) -> Result<(), MountProblem> {
    if !dir.is_absolute() {
        return Err(MountProblem::DirNotAbsolute);
    }
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(MountProblem::DirNotDirectory),
        Err(_) => Err(MountProblem::DirMissing),
    }
}

/// Builds a [`MountTable`] in Rust; [`MountTableBuilder::build`] validates it like a TOML table.
#[derive(Debug, Clone, Default)]
pub struct MountTableBuilder {
    workspaces: Vec<WorkspaceConfig>,
}

impl MountTableBuilder {
    /// Adds an entry.
    pub fn workspace(mut self, ws: WorkspaceConfig) -> Self {
        self.workspaces.push(ws);
        self
    }

    /// Validates and returns the table.
    pub fn build(self) -> Result<MountTable, MountTableError> {
        let table = MountTable {
            workspaces: self.workspaces,
        };
        table.validate()?;
        Ok(table)
    }
}

/// The JSON Schema (draft 2020-12) of a mount table, for `schemas/config/`.
///
/// ```
/// let schema = wsp_vfs::mount_table_schema();
/// assert_eq!(schema["title"], "wsp mount table");
/// ```
pub fn mount_table_schema() -> serde_json::Value {
    schemars::schema_for!(MountTable).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toml_text: &str, expect: Result<usize, &str>) {
        let got = MountTable::from_toml_str(toml_text)
            .map(|t| t.workspaces().len())
            .map_err(|e| e.to_string());
        match (&got, &expect) {
            (Ok(n), Ok(m)) => assert_eq!(n, m, "{toml_text}"),
            (Err(e), Err(want)) => {
                assert!(e.contains(want), "error {e:?} does not contain {want:?}")
            }
            _ => panic!("{toml_text}\ngot {got:?}, expected {expect:?}"),
        }
    }

    fn entry(path: &str, scope: &str, mount: &str) -> String {
        format!("[[workspace]]\npath = {path:?}\nscope = {scope:?}\nmount = {mount}\n")
    }

    /// Two Workspaces reaching the same host directory (or one inside the other) with
    /// different scopes: the narrower promise does not hold for the files both reach.
    #[test]
    fn host_directories_reached_with_different_scopes_are_reported() {
        let root = tempfile::tempdir().unwrap();
        let sub = root.path().join("notes");
        std::fs::create_dir(&sub).unwrap();
        let other = tempfile::tempdir().unwrap();
        let physical = |dir: &Path| format!("{{ physical = {:?} }}", dir.display().to_string());
        let overlaps = |entries: &[String]| {
            MountTable::from_toml_str(&entries.concat())
                .unwrap()
                .scope_overlaps()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        let same = overlaps(&[
            entry("/docs", "ro", &physical(root.path())),
            entry("/all", "rw", &physical(root.path())),
        ]);
        assert_eq!(same.len(), 1, "{same:?}");
        assert!(
            same[0].starts_with("workspace entries 1 (/docs, read-only) and 2 (/all, read-write)")
                && same[0].contains("can change through /all what /docs shows as read-only"),
            "{same:?}"
        );
        // Nested, either way round; a write-only drop read back through a readable mount.
        let nested = overlaps(&[
            entry("/all", "rw", &physical(root.path())),
            entry("/notes", "ro", &physical(&sub)),
        ]);
        assert_eq!(nested.len(), 1, "{nested:?}");
        assert!(nested[0].contains(&sub.display().to_string()), "{nested:?}");
        let drop = overlaps(&[
            entry("/inbox", "wo", &physical(&sub)),
            entry("/read", "ro", &physical(root.path())),
        ]);
        assert!(
            drop.len() == 1 && drop[0].contains("can read through /read what it writes to /inbox"),
            "{drop:?}"
        );
        // An overlay's lower directory is read, never written: a writable mount of it counts.
        let overlay = format!(
            "{{ overlay = {{ upper = \"u\", lower = {:?} }} }}",
            root.path().display().to_string()
        );
        assert_eq!(
            overlaps(&[
                entry("/o", "rw", &overlay),
                entry("/raw", "rw", &physical(root.path()))
            ])
            .len(),
            1
        );
        // One Virtual Store namespace under two scopes is the same case.
        assert_eq!(
            overlaps(&[
                entry("/a", "ro", "{ virtual = \"x\" }"),
                entry("/b", "rw", "{ virtual = \"x\" }"),
            ])
            .len(),
            1
        );
        // Nothing to report: the same scope; other directories or namespaces; and a mount
        // nested where its directory sits in the outer one (`/all/notes` over `root/notes`),
        // which longest-prefix routing gives every path of that directory, so the outer mount
        // never reaches it.
        for entries in [
            vec![
                entry("/a", "rw", &physical(root.path())),
                entry("/b", "rw", &physical(&sub)),
            ],
            vec![
                entry("/a", "ro", &physical(root.path())),
                entry("/b", "rw", &physical(other.path())),
            ],
            vec![
                entry("/a", "ro", "{ virtual = \"x\" }"),
                entry("/b", "rw", "{ virtual = \"y\" }"),
            ],
            vec![
                entry("/all", "rw", &physical(root.path())),
                entry("/all/notes", "ro", &physical(&sub)),
            ],
        ] {
            assert_eq!(overlaps(&entries), Vec::<String>::new(), "{entries:?}");
        }
    }

    #[test]
    fn tables() {
        let tmp = std::env::temp_dir();
        let dir = format!("{{ physical = {:?} }}", tmp.display().to_string());
        let file = tempfile_in(&tmp);
        let file_mount = format!("{{ physical = {:?} }}", file.display().to_string());
        let cases: Vec<(String, Result<usize, &str>)> = vec![
            (String::new(), Ok(0)),
            (entry("/p", "ro", &dir), Ok(1)),
            (entry("/", "ro", &dir), Ok(1)),
            (entry("/p", "rw", "{ virtual = \"scratch\" }") + &entry("/p/s", "wo", "{ virtual = \"out\" }"), Ok(2)),
            (entry("/o", "rw", &format!("{{ overlay = {{ upper = \"up\", lower = {:?} }} }}", tmp.display().to_string())), Ok(1)),
            (entry("/p", "ro", &dir) + &entry("/p", "rw", "{ virtual = \"x\" }"), Err("workspace entry 2 (path \"/p\"): duplicate prefix: workspace entry 1")),
            (entry("p", "ro", &dir), Err("workspace entry 1 (path \"p\"): path must be an absolute virtual path")),
            (entry("/p/", "ro", &dir), Err("write it as \"/p\"")),
            (entry("/a/../p", "ro", &dir), Err("'.' or '..'")),
            (entry("//p", "ro", &dir), Err("workspace entry 1")),
            (entry("/p", "ro", "{ physical = \"/nonexistent/wsp-vfs-test\" }"), Err("does not exist")),
            (entry("/p", "ro", "{ physical = \"relative/dir\" }"), Err("absolute host path")),
            (entry("/p", "ro", &file_mount), Err("is not a directory")),
            (entry("/p", "ro", "{ virtual = \"a/b\" }"), Err("bad namespace \"a/b\"")),
            (entry("/p", "ro", "{ virtual = \"\" }"), Err("bad namespace")),
            (entry("/p", "ro", "{ overlay = { upper = \"..\", lower = \"/tmp\" } }"), Err("bad namespace")),
            (entry("/p", "rx", &dir), Err("mount table:")),
            (entry("/p", "ro", "{ disk = \"/tmp\" }"), Err("mount table:")),
            (entry("/p", "ro", "{ virtual = \"a\" }") + "follow_symlinks = true\n", Err("apply only to physical")),
            (entry("/p", "ro", &dir) + "follow_symlinks = true\nallow_hard_links = true\n", Ok(1)),
            ("[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"a\" }\nextra = 1\n".into(), Err("unknown field")),
            (entry("/p", "ro", &dir) + "deny = []\n", Ok(1)),
            (entry("/p", "ro", &dir) + "deny = [\"secrets/**\", \"*.log\"]\ndeny_extra = [\"**/*.bak\"]\n", Ok(1)),
            (entry("/p", "ro", "{ virtual = \"a\" }") + "deny_extra = [\"private/**\"]\n", Ok(1)),
            (entry("/p", "ro", &dir) + &entry("/q", "rw", &dir) + "deny = [\"a/[b\"]\n", Err("workspace entry 2 (path \"/q\"): deny pattern \"a/[b\" is not valid: unclosed character class")),
            (entry("/p", "ro", &dir) + "deny_extra = [\"ok\", \"/.env\"]\n", Err("workspace entry 1 (path \"/p\"): deny pattern \"/.env\" is not valid: patterns are relative to the workspace's root: write \".env\"")),
            (entry("/p", "ro", &dir) + "deny = [\"build/\"]\n", Err("deny pattern \"build/\" is not valid")),
            (entry("/p", "ro", &dir) + "deny = \".env\"\n", Err("mount table:")),
        ];
        for (text, expect) in cases {
            check(&text, expect);
        }
        std::fs::remove_file(file).unwrap();
    }

    fn tempfile_in(dir: &Path) -> PathBuf {
        let path = dir.join(format!("wsp-vfs-config-test-{}", std::process::id()));
        std::fs::write(&path, "x").unwrap();
        path
    }

    #[test]
    fn a_table_file_over_the_size_limit_is_refused_without_being_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("mounts.toml");
        let table = "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = { virtual = \"p\" }\n";
        // Valid TOML, padded with comments to just over the limit.
        let padding = "# padding\n".repeat(MAX_TABLE_BYTES as usize / 10 + 1);
        std::fs::write(&path, format!("{table}{padding}")).unwrap();
        let err = MountTable::load(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot read mount table {}: it is over {MAX_TABLE_BYTES} bytes; a mount table \
                 is a short list of workspaces",
                path.display()
            )
        );
        // A 10 GB sparse file is refused as fast, from its first MiB.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(10 << 30)
            .unwrap();
        assert!(MountTable::load(&path).is_err());
        // At the limit it loads.
        let padding = "#".repeat(MAX_TABLE_BYTES as usize - table.len());
        std::fs::write(&path, format!("{table}{padding}")).unwrap();
        assert_eq!(MountTable::load(&path).unwrap().workspaces().len(), 1);
    }

    #[test]
    fn deny_patterns_are_the_default_list_or_deny_then_deny_extra() {
        let ws = WorkspaceConfig::new(
            "/p",
            AccessScope::ReadOnly,
            MountConfig::virtual_namespace("p"),
        );
        assert_eq!(ws.deny_patterns(), DEFAULT_DENY);
        let extra = ws.clone().deny_extra(["x/**"]);
        assert_eq!(extra.deny_patterns().len(), DEFAULT_DENY.len() + 1);
        assert_eq!(extra.deny_patterns().last(), Some(&"x/**"));
        assert!(
            ws.clone()
                .deny(Vec::<String>::new())
                .deny_patterns()
                .is_empty()
        );
        assert_eq!(ws.deny(["a"]).deny_extra(["b"]).deny_patterns(), ["a", "b"]);
        // Absent, empty and given lists are three different tables, and stay so through TOML.
        for toml_text in ["", "deny = []\n", "deny = [\"a\"]\ndeny_extra = [\"b\"]\n"] {
            let text = format!(
                "[[workspace]]\npath = \"/p\"\nscope = \"ro\"\nmount = {{ virtual = \"p\" }}\n{toml_text}"
            );
            let table = MountTable::from_toml_str(&text).unwrap();
            assert_eq!(
                MountTable::from_toml_str(&table.to_toml_string()).unwrap(),
                table
            );
        }
    }

    #[test]
    fn round_trips_through_toml() {
        let table = MountTable::builder()
            .workspace(
                WorkspaceConfig::new(
                    "/a",
                    AccessScope::ReadOnly,
                    MountConfig::physical(std::env::temp_dir()),
                )
                .follow_symlinks(true),
            )
            .workspace(WorkspaceConfig::new(
                "/b",
                AccessScope::WriteOnly,
                MountConfig::virtual_namespace("b"),
            ))
            .build()
            .unwrap();
        let again = MountTable::from_toml_str(&table.to_toml_string()).unwrap();
        assert_eq!(again, table);
    }

    #[test]
    fn schema_names_the_fields() {
        let schema = mount_table_schema();
        let text = schema.to_string();
        for word in [
            "workspace",
            "follow_symlinks",
            "allow_hard_links",
            "deny",
            "deny_extra",
            "**/.env",
            "physical",
            "virtual",
            "overlay",
            "upper",
            "lower",
            "\"ro\"",
            "\"wo\"",
        ] {
            assert!(text.contains(word), "schema lacks {word}: {text}");
        }
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}
