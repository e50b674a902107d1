//! The router: parse, route by longest prefix, check the Access Scope, then call a Store.
//!
//! This module holds the [`Vfs`] and its builder, the routing, the scope checks, the wording
//! of store failures and the one dispatch entry point ([`Vfs::call`]); each tool is a module of
//! its own (`ls`, `read_file`, `write_file`, `edit_file`, `delete_file`, `glob`, `grep`, and
//! `search`, what `glob` and `grep` share).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wsp_store::WorkspaceStore;
use wsp_types::{ETag, Owner, OwnerId};

use crate::config::{MountConfig, MountProblem, MountTable, MountTableError};
use crate::deny::DenyRules;
use crate::error::{VfsError, VfsErrorCode};
use crate::path::VirtualPath;
use crate::scope::{AccessScope, Operation};
use crate::store::{Fail, OverlayStore, PhysicalStore, Store, VirtualStore};
use crate::tools::{LsArgs, ToolDefinition, ToolName, ToolOutput, ToolResult, catalogue};

mod delete_file;
mod edit_file;
mod glob;
mod grep;
mod ls;
mod read_file;
mod search;
mod write_file;

pub use read_file::WholeFile;

/// Size and count limits of the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VfsLimits {
    /// Largest file `read_file` and `edit_file` load (bytes).
    pub max_read_bytes: u64,
    /// Largest `content` `write_file` accepts (bytes); a Virtual Store's own limit also applies.
    pub max_write_bytes: u64,
    /// Lines `read_file` returns when no `limit` is given.
    pub default_read_lines: u64,
    /// Characters of one line `read_file` shows before cutting it.
    pub max_line_chars: usize,
    /// Characters of one matching line `grep` shows before cutting it.
    pub max_grep_line_chars: usize,
    /// Entries one `ls` returns.
    pub max_list_entries: usize,
    /// Paths one `glob` returns.
    pub max_glob_results: usize,
    /// `grep`'s `max_results` when none is given.
    pub default_grep_results: u64,
    /// The largest `max_results` `grep` honours.
    pub max_grep_results: u64,
    /// Files larger than this are skipped by `grep` (bytes).
    pub grep_max_file_bytes: u64,
    /// Directory entries one `glob` or `grep` visits across all Mounts.
    pub max_walk_entries: usize,
}

impl Default for VfsLimits {
    /// 4 MiB reads and writes, 2000 lines of 2000 characters, 1000 listing entries and glob
    /// results, 100 (at most 1000) grep matches, grep skips files over 1 MiB, walks stop after
    /// 100,000 entries.
    fn default() -> Self {
        Self {
            max_read_bytes: 4 * 1024 * 1024,
            max_write_bytes: 4 * 1024 * 1024,
            default_read_lines: 2000,
            max_line_chars: 2000,
            max_grep_line_chars: 500,
            max_list_entries: 1000,
            max_glob_results: 1000,
            default_grep_results: 100,
            max_grep_results: 1000,
            grep_max_file_bytes: 1024 * 1024,
            max_walk_entries: 100_000,
        }
    }
}

/// What kind of Mount backs a Workspace (for the filesystem map; host paths are never shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MountKind {
    /// A host directory.
    Physical,
    /// A Virtual Store namespace.
    Virtual,
    /// A virtual layer over a read-only host directory.
    Overlay,
}

/// A Workspace as the agent may know it: its prefix, Access Scope and kind of Mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceInfo {
    /// The logical prefix.
    pub path: VirtualPath,
    /// The Access Scope.
    pub scope: AccessScope,
    /// What backs it.
    pub mount: MountKind,
}

#[derive(Debug)]
struct Workspace {
    info: WorkspaceInfo,
    store: Store,
    /// The paths below the prefix that no tool shows (the Stores hold the same rules).
    deny: Arc<DenyRules>,
}

/// The agent's virtual filesystem: its Workspaces and the tools over them.
///
/// Built from a validated [`MountTable`] with [`Vfs::builder`]. Every call parses the path,
/// routes it to the Workspace with the longest matching prefix (component-wise), checks the
/// Access Scope, and only then touches a Store. A path under no Workspace is refused with the
/// same answer whether or not anything exists there.
#[derive(Debug)]
pub struct Vfs {
    workspaces: Vec<Workspace>,
    limits: VfsLimits,
}

/// Builds a [`Vfs`]: the table, the Virtual Store for virtual and overlay Mounts, how
/// namespaces map to store owners, who writes, and limits.
pub struct VfsBuilder {
    table: MountTable,
    store: Option<Arc<dyn WorkspaceStore>>,
    tenant: OwnerId,
    owners: BTreeMap<String, Owner>,
    author: Option<String>,
    limits: VfsLimits,
}

impl std::fmt::Debug for VfsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsBuilder")
            .field("table", &self.table)
            .field("has_store", &self.store.is_some())
            .field("tenant", &self.tenant)
            .field("owners", &self.owners)
            .finish_non_exhaustive()
    }
}

impl VfsBuilder {
    /// The Virtual Store that holds the namespaces of virtual and overlay Mounts.
    pub fn virtual_store(mut self, store: Arc<dyn WorkspaceStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The tenant under which namespace `ns` is the store owner `{tenant, ns}` (default `vfs`).
    pub fn tenant(mut self, tenant: OwnerId) -> Self {
        self.tenant = tenant;
        self
    }

    /// Maps `namespace` to a specific store owner instead of `{tenant, namespace}`.
    pub fn namespace_owner(mut self, namespace: impl Into<String>, owner: Owner) -> Self {
        self.owners.insert(namespace.into(), owner);
        self
    }

    /// The author recorded on virtual writes (the agent's identity).
    pub fn author(mut self, author: impl Into<String>) -> Self {
        self.author = Some(author.into());
        self
    }

    /// Replaces the default [`VfsLimits`].
    pub fn limits(mut self, limits: VfsLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Validates the table, opens every physical directory and returns the filesystem.
    pub fn build(self) -> Result<Vfs, MountTableError> {
        self.table.validate()?;
        let mut workspaces = Vec::new();
        for (i, ws) in self.table.workspaces().iter().enumerate() {
            let fail = |problem| MountTableError::Entry {
                entry: i + 1,
                path: ws.path.clone(),
                problem,
            };
            let deny = Arc::new(ws.deny_rules().map_err(fail)?);
            let virtual_store = |ns: &str| -> Result<VirtualStore, MountTableError> {
                let store = self
                    .store
                    .clone()
                    .ok_or_else(|| fail(MountProblem::NoVirtualStore))?;
                let owner = match self.owners.get(ns) {
                    Some(owner) => owner.clone(),
                    None => Owner::new(
                        self.tenant.clone(),
                        OwnerId::parse(ns)
                            .map_err(|_| fail(MountProblem::BadNamespace(ns.to_owned())))?,
                    ),
                };
                Ok(VirtualStore::new(
                    store,
                    owner,
                    self.author.clone(),
                    deny.clone(),
                ))
            };
            let physical = |dir: &std::path::Path| {
                PhysicalStore::open(dir, ws.follow_symlinks, ws.allow_hard_links, deny.clone())
                    .map_err(|_| fail(MountProblem::DirMissing))
            };
            let (mount, store) = match &ws.mount {
                MountConfig::Physical(dir) => {
                    (MountKind::Physical, Store::Physical(physical(dir)?))
                }
                MountConfig::Virtual(ns) => {
                    (MountKind::Virtual, Store::Virtual(virtual_store(ns)?))
                }
                MountConfig::Overlay(o) => (
                    MountKind::Overlay,
                    Store::Overlay(OverlayStore::new(
                        virtual_store(&o.upper)?,
                        physical(&o.lower)?,
                    )),
                ),
            };
            let path = VirtualPath::parse(&ws.path)
                .map_err(|e| fail(MountProblem::PrefixNotAbsolute(e.to_string())))?;
            workspaces.push(Workspace {
                info: WorkspaceInfo {
                    path,
                    scope: ws.scope,
                    mount,
                },
                store,
                deny,
            });
        }
        workspaces.sort_by(|a, b| a.info.path.cmp(&b.info.path));
        Ok(Vfs {
            workspaces,
            limits: self.limits,
        })
    }
}

/// How a Store failure reads for the model, about the virtual path `path`.
fn word(fail: Fail, path: &VirtualPath) -> VfsError {
    match fail {
        Fail::NotFound => VfsError::not_found(path),
        Fail::IsDirectory => VfsError::is_directory(path),
        Fail::ParentNotDirectory => VfsError::invalid_path(format!(
            "{path}: a name above it is a file, which cannot hold other files"
        )),
        Fail::Symlink => VfsError::denied(format!(
            "{path} is or goes through a symbolic link; this workspace does not follow symbolic links"
        )),
        Fail::Escape => VfsError::denied(format!(
            "{path} goes through a symbolic link that leads outside its workspace"
        )),
        Fail::Loop => VfsError::invalid_path(format!(
            "{path}: too many levels of symbolic links (a link loop)"
        )),
        Fail::HardLink => VfsError::denied(format!(
            "{path} has more than one hard link; this workspace does not read hard-linked files, whose content may \
             live outside it"
        )),
        Fail::SpecialFile => VfsError::denied(format!("{path} is not a regular file")),
        Fail::HostDenied => {
            VfsError::denied(format!("{path}: the host does not allow this access"))
        }
        // Only writes and deletes see it: the same answer as a path under no Workspace.
        Fail::Hidden => outside(path),
        Fail::Exists => VfsError::exists(path),
        Fail::Stale => VfsError::stale(path),
        Fail::TooLarge { max } => VfsError::new(
            VfsErrorCode::TooLarge,
            format!("{path} is over the size limit of {max} bytes"),
        ),
        Fail::TooManyFiles { max } => VfsError::new(
            VfsErrorCode::TooLarge,
            format!(
                "the workspace of {path} already holds its maximum of {max} files; delete some first"
            ),
        ),
        Fail::TooLargeToCompare { max } => VfsError::new(
            VfsErrorCode::TooLarge,
            format!(
                "{path} is over {max} bytes, more than if_match can compare, so no etag you hold can \
                 match it; leave out if_match to replace it"
            ),
        ),
        Fail::BadName(why) | Fail::HostName(why) => {
            VfsError::invalid_path(format!("{path}: {why}"))
        }
        Fail::Unavailable => VfsError::unavailable(),
    }
}

/// [`word`] for a failure at `path` in `ws`, except that a write-only Workspace gives one answer
/// for every failure whose reason depends on what exists at or above the name (a directory, a
/// link, a special file, a file above it, a file already there under `create_only`, ...): same
/// code, same text but the path, so an agent that may not read the Workspace cannot probe it
/// either.
fn word_in(fail: Fail, path: &VirtualPath, ws: &Workspace) -> VfsError {
    if ws.info.scope != AccessScope::WriteOnly || fail.independent_of_names() {
        return word(fail, path);
    }
    VfsError::new(
        VfsErrorCode::Conflict,
        format!(
            "{path} cannot be written: the write-only workspace {} does not say why a write is \
             refused (the name, or a name above it, may be in use); choose another name",
            ws.info.path
        ),
    )
}

fn parse_path(raw: &str) -> Result<VirtualPath, VfsError> {
    VirtualPath::parse(raw).map_err(|e| {
        VfsError::invalid_path(format!(
            "{raw:?} is not a valid path: {e}. Use an absolute path such as /project/notes.md"
        ))
    })
}

fn outside(path: &VirtualPath) -> VfsError {
    VfsError::denied(format!(
        "{path} is outside every workspace; only the paths in your filesystem map are available"
    ))
}

fn etag_arg(raw: &str) -> ETag {
    let raw = raw.trim();
    if raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') {
        ETag::from_wire(raw)
    } else {
        ETag::from_wire(format!("\"{raw}\""))
    }
}

/// Whether `bytes` should be treated as binary: a NUL byte or not UTF-8.
fn as_text(bytes: &[u8]) -> Option<&str> {
    if bytes.contains(&0) {
        None
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

fn cut(line: &str, max_chars: usize) -> String {
    // A line of at most `max_chars` bytes has at most that many characters: no need to count.
    if line.len() <= max_chars {
        return line.to_owned();
    }
    match line.char_indices().nth(max_chars) {
        None => line.to_owned(),
        Some((at, _)) => {
            let rest = line[at..].chars().count();
            format!("{}… [line cut: {rest} more characters]", &line[..at])
        }
    }
}

impl Vfs {
    /// Starts building a filesystem over `table`.
    pub fn builder(table: MountTable) -> VfsBuilder {
        VfsBuilder {
            table,
            store: None,
            tenant: OwnerId::parse("vfs").expect("a valid identifier"),
            owners: BTreeMap::new(),
            author: None,
            limits: VfsLimits::default(),
        }
    }

    /// A filesystem with no Workspaces: no tools, every path denied.
    pub fn empty() -> Self {
        Self {
            workspaces: Vec::new(),
            limits: VfsLimits::default(),
        }
    }

    /// The Workspaces, sorted by prefix.
    pub fn workspaces(&self) -> Vec<WorkspaceInfo> {
        self.workspaces.iter().map(|w| w.info.clone()).collect()
    }

    /// The Workspace that `path` routes to (longest prefix), or `None` when no Workspace
    /// holds it or `path` is not a valid absolute path. Nothing here touches a Store.
    ///
    /// ```
    /// use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, WorkspaceConfig};
    /// let table = MountTable::builder()
    ///     .workspace(WorkspaceConfig::new("/workspace", AccessScope::ReadOnly, MountConfig::virtual_namespace("ws")))
    ///     .workspace(WorkspaceConfig::new("/workspace/memory", AccessScope::ReadWrite, MountConfig::virtual_namespace("mem")))
    ///     .build()
    ///     .unwrap();
    /// let vfs = Vfs::builder(table)
    ///     .virtual_store(std::sync::Arc::new(wsp_store::MemoryStore::default()))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(vfs.workspace_at("/workspace/memory/2026-01-02.md").unwrap().scope, AccessScope::ReadWrite);
    /// assert_eq!(vfs.workspace_at("/workspace/MEMORY.md").unwrap().scope, AccessScope::ReadOnly);
    /// assert!(vfs.workspace_at("/etc/passwd").is_none());
    /// ```
    pub fn workspace_at(&self, path: &str) -> Option<WorkspaceInfo> {
        let path = VirtualPath::parse(path).ok()?;
        self.route(&path).map(|(ws, _)| ws.info.clone())
    }

    /// The store and owner behind the Workspace mounted exactly at `path`, when it is a virtual
    /// Mount (not physical, not an overlay): what a host needs to read that namespace as of a
    /// snapshot (a run). `None` for any other path or Mount.
    pub fn virtual_backing(&self, path: &str) -> Option<(Arc<dyn WorkspaceStore>, Owner)> {
        let path = VirtualPath::parse(path).ok()?;
        let ws = self.workspaces.iter().find(|w| w.info.path == path)?;
        match &ws.store {
            Store::Virtual(v) => Some(v.backing()),
            _ => None,
        }
    }

    /// Whether the deny rules of the Workspace that `path` routes to hide it (the path as
    /// written, or a directory above it; the Stores also look at where a symbolic link leads).
    /// `false` for a path under no Workspace or not valid. For a host that reads a Workspace's
    /// files another way (a run's snapshot through [`Self::virtual_backing`]) and must show no
    /// more than the tools do.
    ///
    /// ```
    /// use wsp_vfs::{AccessScope, MountConfig, MountTable, Vfs, WorkspaceConfig};
    /// let table = MountTable::builder()
    ///     .workspace(WorkspaceConfig::new("/ws", AccessScope::ReadOnly, MountConfig::virtual_namespace("ws")))
    ///     .build()
    ///     .unwrap();
    /// let vfs = Vfs::builder(table)
    ///     .virtual_store(std::sync::Arc::new(wsp_store::MemoryStore::default()))
    ///     .build()
    ///     .unwrap();
    /// assert!(vfs.denies("/ws/app/.env"));
    /// assert!(vfs.denies("/ws/.git/config"));
    /// assert!(!vfs.denies("/ws/README.md"));
    /// assert!(!vfs.denies("/elsewhere/.env"));
    /// ```
    pub fn denies(&self, path: &str) -> bool {
        let Ok(path) = VirtualPath::parse(path) else {
            return false;
        };
        self.route(&path)
            .is_some_and(|(ws, rel)| ws.deny.hides(&rel))
    }

    /// The limits in force.
    pub fn limits(&self) -> &VfsLimits {
        &self.limits
    }

    /// The largest current file an `if_match` compares: the agent holds etags only of files it
    /// read (at most `max_read_bytes`) or wrote (at most `max_write_bytes`), so a larger file
    /// cannot match and is refused from its size, unread.
    fn compare_limit(&self) -> u64 {
        self.limits.max_read_bytes.max(self.limits.max_write_bytes)
    }

    fn scopes(&self) -> Vec<AccessScope> {
        self.workspaces.iter().map(|w| w.info.scope).collect()
    }

    /// The tool catalogue for this table's aggregate Access Scopes.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        catalogue(&self.scopes())
    }

    /// Whether the catalogue has `tool`.
    pub fn offers(&self, tool: ToolName) -> bool {
        tool.offered_for(&self.scopes())
    }

    /// The filesystem map for the system prompt (see [`crate::filesystem_map`]).
    pub fn filesystem_map(&self) -> String {
        crate::map::filesystem_map(&self.workspaces())
    }

    /// The Workspace with the longest prefix that `path` starts with, and the rest of the path.
    fn route(&self, path: &VirtualPath) -> Option<(&Workspace, Vec<String>)> {
        self.workspaces
            .iter()
            .filter_map(|w| path.strip_prefix(&w.info.path).map(|rest| (w, rest)))
            .max_by_key(|(w, _)| w.info.path.depth())
            .map(|(w, rest)| (w, rest.into_iter().map(str::to_owned).collect()))
    }

    /// Names of the next components below `path` that lead to Workspaces mounted under it.
    fn mount_points_below(&self, path: &VirtualPath) -> BTreeSet<String> {
        self.workspaces
            .iter()
            .filter_map(|w| {
                w.info
                    .path
                    .strip_prefix(path)?
                    .first()
                    .map(|c| (*c).to_owned())
            })
            .collect()
    }

    /// Parse, route and scope-check a path for `op`; nothing here touches a Store.
    fn authorize(
        &self,
        raw: &str,
        op: Operation,
        tool: ToolName,
    ) -> Result<(VirtualPath, &Workspace, Vec<String>), VfsError> {
        let path = parse_path(raw)?;
        let (ws, rel) = self.route(&path).ok_or_else(|| outside(&path))?;
        if !ws.info.scope.allows(op) {
            return Err(VfsError::denied(format!(
                "{path} is in the {} workspace {}; {tool} is not allowed there",
                ws.info.scope, ws.info.path
            )));
        }
        Ok((path, ws, rel))
    }

    /// [`Self::authorize`] for an operation on a file: a mount point is a directory, and a
    /// path the Workspace's deny rules hide is missing to a read and refused to a change like a
    /// path under no Workspace.
    fn authorize_file(
        &self,
        raw: &str,
        op: Operation,
        tool: ToolName,
    ) -> Result<(VirtualPath, &Workspace, Vec<String>), VfsError> {
        let (path, ws, rel) = self.authorize(raw, op, tool)?;
        if rel.is_empty() || !self.mount_points_below(&path).is_empty() {
            return Err(word_in(Fail::IsDirectory, &path, ws));
        }
        if ws.deny.hides(&rel) {
            return Err(match op {
                Operation::Read | Operation::List | Operation::Search => VfsError::not_found(&path),
                Operation::Write | Operation::Edit | Operation::Delete => outside(&path),
            });
        }
        Ok((path, ws, rel))
    }

    /// Runs the tool `name` with JSON `args`: the single entry point for MCP and other hosts.
    ///
    /// A tool outside this filesystem's catalogue is refused like an unknown one; arguments
    /// that do not fit the tool's schema are `invalid_argument`.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, VfsError> {
        let tool = ToolName::parse(name)
            .filter(|t| self.offers(*t))
            .ok_or_else(|| {
                let names: Vec<String> = self.tools().into_iter().map(|t| t.name).collect();
                VfsError::invalid_argument(format!(
                    "there is no tool {name:?} here; the available tools are: {}",
                    names.join(", ")
                ))
            })?;
        Ok(match tool {
            ToolName::Ls => self
                .ls(&decode::<LsArgs>(tool, args)?.path)
                .await?
                .into_output(),
            ToolName::ReadFile => self.read_file(decode(tool, args)?).await?.into_output(),
            ToolName::WriteFile => self.write_file(decode(tool, args)?).await?.into_output(),
            ToolName::EditFile => self.edit_file(decode(tool, args)?).await?.into_output(),
            ToolName::DeleteFile => self.delete_file(decode(tool, args)?).await?.into_output(),
            ToolName::Glob => self.glob(decode(tool, args)?).await?.into_output(),
            ToolName::Grep => self.grep(decode(tool, args)?).await?.into_output(),
        })
    }
}

fn decode<T: DeserializeOwned>(tool: ToolName, args: Value) -> Result<T, VfsError> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    serde_json::from_value(args)
        .map_err(|e| VfsError::invalid_argument(format!("bad arguments for {tool}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_at_characters_not_bytes() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 3), "ééé", "6 bytes but 3 characters");
        assert_eq!(cut("abcd", 3), "abc… [line cut: 1 more characters]");
        assert_eq!(cut("éééé", 3), "ééé… [line cut: 1 more characters]");
    }
}
