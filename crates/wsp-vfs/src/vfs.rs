//! The router: parse, route by longest prefix, check the Access Scope, then call a Store.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use globset::GlobBuilder;
use regex::RegexBuilder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wsp_store::WorkspaceStore;
use wsp_types::{ETag, Owner, OwnerId};

use crate::config::{MountConfig, MountProblem, MountTable, MountTableError};
use crate::error::{ErrorCode, VfsError};
use crate::path::VirtualPath;
use crate::scope::{AccessScope, Operation};
use crate::store::{
    EntryKind, Fail, FileBytes, Listing as RawListing, OverlayStore, PhysicalStore, Store,
    VirtualStore,
};
use crate::tools::{
    DeleteFileArgs, EditFileArgs, FileDeleted, FileEdited, FileRead, FileWritten, GlobArgs,
    GlobMatches, GrepArgs, GrepMatch, GrepMatches, ListEntry, Listing, LsArgs, ReadFileArgs,
    ToolDefinition, ToolName, ToolOutput, ToolResult, WriteFileArgs, catalogue,
};

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
                Ok(VirtualStore::new(store, owner, self.author.clone()))
            };
            let physical = |dir: &std::path::Path| {
                PhysicalStore::open(dir, ws.follow_symlinks, ws.allow_hard_links)
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
        Fail::Exists => VfsError::exists(path),
        Fail::Stale => VfsError::stale(path),
        Fail::TooLarge { max } => VfsError::new(
            ErrorCode::TooLarge,
            format!("{path} is over the size limit of {max} bytes"),
        ),
        Fail::TooManyFiles { max } => VfsError::new(
            ErrorCode::TooLarge,
            format!(
                "the workspace of {path} already holds its maximum of {max} files; delete some first"
            ),
        ),
        Fail::TooLargeToCompare { max } => VfsError::new(
            ErrorCode::TooLarge,
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
        ErrorCode::Conflict,
        format!(
            "{path} cannot be written: the write-only workspace {} does not say why a write is \
             refused (the name, or a name above it, may be in use); choose another name",
            ws.info.path
        ),
    )
}

/// `content_len` after `count` non-overlapping occurrences of `old_len` bytes become `new_len`
/// bytes each; `None` when that does not fit in a `u64`.
fn size_after_replacing(content_len: u64, count: u64, old_len: u64, new_len: u64) -> Option<u64> {
    content_len
        .checked_sub(count.checked_mul(old_len)?)?
        .checked_add(count.checked_mul(new_len)?)
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

/// `text.lines().count()`, counting line feeds in one pass over the bytes.
fn line_count(text: &str) -> u64 {
    let feeds = text.bytes().filter(|&b| b == b'\n').count() as u64;
    feeds + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Bytes of `line_len` bytes of text as `read_file` shows it: the number right-aligned in six
/// columns (more when it has more digits), a tab, the text, a line feed.
fn numbered_line_bytes(number: u64, line_len: usize) -> u64 {
    let digits = number.checked_ilog10().unwrap_or(0) as u64 + 1;
    digits.max(6) + 1 + line_len as u64 + 1
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

/// One Workspace to search and where.
struct SearchTarget<'a> {
    ws: &'a Workspace,
    start: Vec<String>,
    exclude: Vec<Vec<String>>,
    /// The Workspace the search path itself routes to (its absence is `not_found`).
    primary: bool,
}

/// A file found by a search: its virtual path, the Workspace and the path inside it.
struct Found<'a> {
    path: VirtualPath,
    ws: &'a Workspace,
    rel: Vec<String>,
    /// When the walk knew it (a physical walk does not `stat` each file).
    size: Option<u64>,
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

    /// [`Self::authorize`] for an operation on a file: a mount point is a directory.
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

    /// `ls`: the entries of a directory, with Workspaces mounted below it shown as directories.
    pub async fn ls(&self, raw: &str) -> Result<Listing, VfsError> {
        let path = parse_path(raw)?;
        let below = self.mount_points_below(&path);
        let mount_points = |note: Option<String>| Listing {
            path: path.clone(),
            kind: EntryKind::Directory,
            entries: below
                .iter()
                .map(|name| ListEntry {
                    name: name.clone(),
                    kind: EntryKind::Directory,
                    size: None,
                    mount_point: true,
                })
                .collect(),
            truncated: false,
            note,
        };
        let Some((ws, rel)) = self.route(&path) else {
            return if below.is_empty() {
                Err(outside(&path))
            } else {
                Ok(mount_points(None))
            };
        };
        if !ws.info.scope.allows(Operation::List) {
            if below.is_empty() {
                return Err(VfsError::denied(format!(
                    "{path} is in the {} workspace {}; ls is not allowed there",
                    ws.info.scope, ws.info.path
                )));
            }
            let note = format!(
                "{} is {}: only the workspaces mounted below it are shown",
                ws.info.path, ws.info.scope
            );
            return Ok(mount_points(Some(note)));
        }
        // Enough entries to fill the listing after the names hidden by mount points, and one
        // more to tell that it was cut.
        let keep = self
            .limits
            .max_list_entries
            .saturating_add(below.len())
            .saturating_add(1);
        let listing = match ws.store.list(&rel, keep).await {
            Ok(listing) => listing,
            Err(Fail::NotFound) if !below.is_empty() => return Ok(mount_points(None)),
            Err(f) => return Err(word(f, &path)),
        };
        let raw_entries = match listing {
            RawListing::File(_) if !below.is_empty() => return Ok(mount_points(None)),
            RawListing::File(e) => {
                let entry = ListEntry {
                    name: e.name,
                    kind: EntryKind::File,
                    size: e.size,
                    mount_point: false,
                };
                return Ok(Listing {
                    path,
                    kind: EntryKind::File,
                    entries: vec![entry],
                    truncated: false,
                    note: None,
                });
            }
            RawListing::Directory(entries) => entries,
        };
        let mut entries: Vec<ListEntry> = raw_entries
            .into_iter()
            .filter(|e| !below.contains(&e.name))
            .map(|e| ListEntry {
                name: e.name,
                kind: e.kind,
                size: e.size,
                mount_point: false,
            })
            .chain(mount_points(None).entries)
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name).then(a.kind.cmp(&b.kind)));
        let truncated = entries.len() > self.limits.max_list_entries;
        entries.truncate(self.limits.max_list_entries);
        Ok(Listing {
            path,
            kind: EntryKind::Directory,
            entries,
            truncated,
            note: None,
        })
    }

    /// `read_file`: numbered lines of a text file and its etag.
    pub async fn read_file(&self, args: ReadFileArgs) -> Result<FileRead, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Read, ToolName::ReadFile)?;
        if args.limit == Some(0) {
            return Err(VfsError::invalid_argument(
                "limit must be at least 1 (or left out for the default)",
            ));
        }
        let file = ws.store.read(&rel, self.limits.max_read_bytes).await.map_err(|f| match f {
            Fail::TooLarge { max } => VfsError::new(
                ErrorCode::TooLarge,
                format!("{path} is over read_file's limit of {max} bytes; use grep to find what you need in it"),
            ),
            f => word(f, &path),
        })?;
        Ok(self.select_lines(path, file, args.offset, args.limit))
    }

    fn select_lines(
        &self,
        path: VirtualPath,
        file: FileBytes,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> FileRead {
        let size = file.bytes.len() as u64;
        let etag = file.etag.into_string();
        let start_line = offset.unwrap_or(1).max(1);
        let Some(text) = as_text(&file.bytes) else {
            return FileRead {
                path,
                etag,
                size,
                binary: true,
                total_lines: 0,
                start_line,
                lines: vec![],
                more: false,
            };
        };
        let total_lines = line_count(text);
        let limit = limit.unwrap_or(self.limits.default_read_lines);
        // The page also stops before its text (numbered lines) passes `max_read_bytes`, whatever
        // `limit` asks for: a file of empty lines would otherwise cost many times its size.
        let mut text_bytes: u64 = 0;
        let mut lines: Vec<String> = Vec::new();
        for (i, line) in text
            .lines()
            .skip((start_line - 1) as usize)
            .take(limit as usize)
            .enumerate()
        {
            let line = cut(line, self.limits.max_line_chars);
            let number = start_line + i as u64;
            let rendered = numbered_line_bytes(number, line.len());
            if !lines.is_empty() && text_bytes + rendered > self.limits.max_read_bytes {
                break;
            }
            text_bytes += rendered;
            lines.push(line);
        }
        let more = start_line - 1 + (lines.len() as u64) < total_lines;
        FileRead {
            path,
            etag,
            size,
            binary: false,
            total_lines,
            start_line,
            lines,
            more,
        }
    }

    /// `write_file`: create or replace a whole file, optionally conditional.
    ///
    /// On a write-only Workspace the result carries neither the etag nor whether the file was
    /// created, so two writes answer alike whether or not the file existed; `if_match` is refused
    /// (it would test the current content); and every refusal that depends on what is at or
    /// above the name (a directory, a link, a special file, a file above it, an existing file
    /// under `create_only`, ...) is one `conflict` with one text, so the agent learns that the
    /// name it chose cannot be written and nothing else (not why, no content, no version, no
    /// other name). Overwriting or pretending success instead would break what `create_only`
    /// promises.
    pub async fn write_file(&self, args: WriteFileArgs) -> Result<FileWritten, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Write, ToolName::WriteFile)?;
        let write_only = ws.info.scope == AccessScope::WriteOnly;
        let cond = match (&args.if_match, args.create_only) {
            (Some(_), true) => {
                return Err(VfsError::invalid_argument(
                    "give if_match or create_only, not both",
                ));
            }
            (Some(_), false) if write_only => {
                return Err(VfsError::denied(format!(
                    "{path} is in the write-only workspace {}; if_match needs read access, leave it out",
                    ws.info.path
                )));
            }
            (Some(tag), false) => crate::store::WriteCondition::IfMatch(etag_arg(tag)),
            (None, true) => crate::store::WriteCondition::CreateOnly,
            (None, false) => crate::store::WriteCondition::None,
        };
        let size = args.content.len() as u64;
        if size > self.limits.max_write_bytes {
            return Err(VfsError::new(
                ErrorCode::TooLarge,
                format!(
                    "the content is {size} bytes, over write_file's limit of {} bytes",
                    self.limits.max_write_bytes
                ),
            ));
        }
        let written = ws
            .store
            .write(&rel, args.content, cond, self.compare_limit())
            .await
            .map_err(|f| word_in(f, &path, ws))?;
        Ok(FileWritten {
            path,
            size,
            etag: (!write_only).then(|| written.etag.into_string()),
            created: (!write_only).then_some(written.created),
        })
    }

    /// `edit_file`: replace an exact string, once or everywhere.
    pub async fn edit_file(&self, args: EditFileArgs) -> Result<FileEdited, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Edit, ToolName::EditFile)?;
        if args.old_string.is_empty() {
            return Err(VfsError::invalid_argument(
                "old_string is empty; copy the exact text to replace from the file, or use write_file to replace the whole file",
            ));
        }
        if args.old_string == args.new_string {
            return Err(VfsError::invalid_argument(
                "old_string and new_string are the same; there is nothing to change",
            ));
        }
        let file = ws
            .store
            .read(&rel, self.limits.max_read_bytes)
            .await
            .map_err(|f| word(f, &path))?;
        if let Some(tag) = &args.if_match
            && etag_arg(tag) != file.etag
        {
            return Err(VfsError::stale(&path));
        }
        let text = as_text(&file.bytes).ok_or_else(|| {
            VfsError::invalid_argument(format!(
                "{path} is a binary file; edit_file changes text files only"
            ))
        })?;
        // Count the matches, keeping the first few positions for the message: nothing here
        // grows with the number of matches.
        const SHOWN: usize = 10;
        let mut count: u64 = 0;
        let mut first: Vec<usize> = Vec::with_capacity(SHOWN);
        for (at, _) in text.match_indices(&args.old_string) {
            if first.len() < SHOWN {
                first.push(at);
            }
            count += 1;
        }
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        match count {
            0 => {
                return Err(VfsError::invalid_argument(format!(
                    "old_string was not found in {path}. Read the file again and copy the exact text, including \
                     whitespace and indentation, without the line numbers"
                )));
            }
            n if n > 1 && !args.replace_all => {
                let lines: Vec<String> = first.iter().map(|at| line_of(*at).to_string()).collect();
                return Err(VfsError::invalid_argument(format!(
                    "old_string occurs {n} times in {path} (at lines {}); include more of the surrounding text to \
                     make it unique, or set replace_all to true to replace every occurrence",
                    lines.join(", ")
                )));
            }
            _ => {}
        }
        // The result's size, from the count, is checked before a byte of it is built.
        let max = self.limits.max_write_bytes;
        let too_large = |size: Option<u64>| {
            let size = size.map_or_else(|| "more than 2^64".to_owned(), |s| s.to_string());
            VfsError::new(
                ErrorCode::TooLarge,
                format!(
                    "the edited file would be {size} bytes, over write_file's limit of {max} bytes; \
                     replace fewer occurrences or with shorter text"
                ),
            )
        };
        let replaced = if args.replace_all { count } else { 1 };
        let new_size = size_after_replacing(
            text.len() as u64,
            replaced,
            args.old_string.len() as u64,
            args.new_string.len() as u64,
        );
        let new_len = match new_size {
            Some(size) if size <= max => size as usize,
            size => return Err(too_large(size)),
        };
        let mut new_text = String::with_capacity(new_len);
        let mut rest = 0;
        for (at, old) in text.match_indices(&args.old_string).take(replaced as usize) {
            new_text.push_str(&text[rest..at]);
            new_text.push_str(&args.new_string);
            rest = at + old.len();
        }
        new_text.push_str(&text[rest..]);
        debug_assert_eq!(new_text.len(), new_len);
        let cond = crate::store::WriteCondition::IfMatch(file.etag);
        let written = ws
            .store
            .write(&rel, new_text, cond, self.compare_limit())
            .await
            .map_err(|f| match f {
                // Grown past the limit since it was read: it changed.
                Fail::Stale | Fail::TooLargeToCompare { .. } => VfsError::new(
                    ErrorCode::Conflict,
                    format!("{path} changed while it was being edited; read it again and retry"),
                ),
                f => word(f, &path),
            })?;
        Ok(FileEdited {
            path,
            replacements: replaced,
            etag: written.etag.into_string(),
        })
    }

    /// `delete_file`: remove one file.
    pub async fn delete_file(&self, args: DeleteFileArgs) -> Result<FileDeleted, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Delete, ToolName::DeleteFile)?;
        ws.store.delete(&rel).await.map_err(|f| word(f, &path))?;
        Ok(FileDeleted { path })
    }

    /// The Workspaces a search of `root` reaches: the one `root` routes to and every one
    /// mounted below `root`, each only where its Access Scope allows searching, each with the
    /// subtrees of longer prefixes cut out.
    fn search_targets(
        &self,
        root: &VirtualPath,
        tool: ToolName,
    ) -> Result<Vec<SearchTarget<'_>>, VfsError> {
        let primary = self.route(root);
        let mut candidates: Vec<(&Workspace, Vec<String>, bool)> = Vec::new();
        if let Some((ws, rel)) = &primary {
            candidates.push((ws, rel.clone(), true));
        }
        for ws in &self.workspaces {
            let strictly_below = ws.info.path != *root && ws.info.path.starts_with(root);
            if strictly_below {
                candidates.push((ws, Vec::new(), false));
            }
        }
        if candidates.is_empty() {
            return Err(outside(root));
        }
        let readable: Vec<SearchTarget<'_>> = candidates
            .into_iter()
            .filter(|(ws, _, _)| ws.info.scope.allows(Operation::Search))
            .map(|(ws, start, primary)| {
                let exclude = self
                    .workspaces
                    .iter()
                    .filter(|other| other.info.path != ws.info.path)
                    .filter_map(|other| other.info.path.strip_prefix(&ws.info.path))
                    .map(|rest| rest.into_iter().map(str::to_owned).collect())
                    .collect();
                SearchTarget {
                    ws,
                    start,
                    exclude,
                    primary,
                }
            })
            .collect();
        if readable.is_empty() {
            let (ws, _) = primary.ok_or_else(|| outside(root))?;
            return Err(VfsError::denied(format!(
                "{root} is in the {} workspace {}; {tool} is not allowed there",
                ws.info.scope, ws.info.path
            )));
        }
        Ok(readable)
    }

    /// Every file the search of `root` may see, sorted by virtual path.
    async fn search_files(
        &self,
        root: &VirtualPath,
        tool: ToolName,
    ) -> Result<(Vec<Found<'_>>, bool), VfsError> {
        let targets = self.search_targets(root, tool)?;
        let has_nested = !self.mount_points_below(root).is_empty();
        let mut budget = self.limits.max_walk_entries;
        let mut found = Vec::new();
        let mut truncated = false;
        for t in targets {
            let walk = match t.ws.store.walk(&t.start, &t.exclude, budget).await {
                Ok(walk) => walk,
                // The search path itself must exist, unless it only leads to nested Workspaces;
                // a Workspace below it that cannot be walked is left out of the results.
                Err(f) if t.primary && !(f == Fail::NotFound && has_nested) => {
                    return Err(word(f, root));
                }
                Err(_) => continue,
            };
            budget = budget.saturating_sub(walk.files.len());
            truncated |= walk.truncated;
            for file in walk.files {
                let path =
                    t.ws.info
                        .path
                        .join_components(file.rel.iter().map(String::as_str));
                found.push(Found {
                    path,
                    ws: t.ws,
                    rel: file.rel,
                    size: file.size,
                });
            }
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((found, truncated))
    }

    /// `glob`: files whose path matches a pattern, below `path` (default `/`).
    pub async fn glob(&self, args: GlobArgs) -> Result<GlobMatches, VfsError> {
        let root = parse_path(args.path.as_deref().unwrap_or("/"))?;
        let matcher = GlobBuilder::new(&args.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                VfsError::invalid_argument(format!("the glob pattern is not valid: {}", e.kind()))
            })?
            .compile_matcher();
        let absolute = args.pattern.starts_with('/');
        let (files, mut truncated) = self.search_files(&root, ToolName::Glob).await?;
        let mut matches = Vec::new();
        for f in files {
            let subject = if absolute {
                f.path.as_str().to_owned()
            } else {
                f.path
                    .strip_prefix(&root)
                    .map(|rest| rest.join("/"))
                    .unwrap_or_default()
            };
            if matcher.is_match(&subject) {
                if matches.len() == self.limits.max_glob_results {
                    truncated = true;
                    break;
                }
                matches.push(f.path);
            }
        }
        Ok(GlobMatches { matches, truncated })
    }

    /// `grep`: lines of text files containing a literal string (or matching a regex).
    pub async fn grep(&self, args: GrepArgs) -> Result<GrepMatches, VfsError> {
        let root = parse_path(args.path.as_deref().unwrap_or("/"))?;
        if args.pattern.is_empty() {
            return Err(VfsError::invalid_argument(
                "pattern is empty; give the text to search for",
            ));
        }
        let source = if args.regex {
            args.pattern.clone()
        } else {
            regex::escape(&args.pattern)
        };
        let re = RegexBuilder::new(&source)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| VfsError::invalid_argument(format!("the regex is not valid: {e}")))?;
        let cap = args
            .max_results
            .unwrap_or(self.limits.default_grep_results)
            .clamp(1, self.limits.max_grep_results);
        let (files, mut truncated) = self.search_files(&root, ToolName::Grep).await?;
        let mut out = GrepMatches {
            matches: Vec::new(),
            truncated: false,
            files_searched: 0,
            skipped_binary: 0,
            skipped_large: 0,
            skipped_refused: 0,
        };
        'files: for f in files {
            // Files of unknown size are checked by the read, which stops past the limit.
            if f.size
                .is_some_and(|size| size > self.limits.grep_max_file_bytes)
            {
                out.skipped_large += 1;
                continue;
            }
            let bytes = match f
                .ws
                .store
                .read(&f.rel, self.limits.grep_max_file_bytes)
                .await
            {
                Ok(file) => file.bytes,
                Err(Fail::TooLarge { .. }) => {
                    out.skipped_large += 1;
                    continue;
                }
                Err(
                    Fail::Symlink
                    | Fail::HardLink
                    | Fail::SpecialFile
                    | Fail::Escape
                    | Fail::HostDenied
                    | Fail::Loop,
                ) => {
                    out.skipped_refused += 1;
                    continue;
                }
                Err(_) => continue,
            };
            let Some(text) = as_text(&bytes) else {
                out.skipped_binary += 1;
                continue;
            };
            out.files_searched += 1;
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    if out.matches.len() as u64 == cap {
                        truncated = true;
                        break 'files;
                    }
                    out.matches.push(GrepMatch {
                        path: f.path.clone(),
                        line: i as u64 + 1,
                        text: cut(line, self.limits.max_grep_line_chars),
                    });
                }
            }
        }
        out.truncated = truncated;
        Ok(out)
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
    fn line_count_agrees_with_str_lines() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "\n\n",
            "a\r\nb\r\n",
            "a\r\n\r\nb",
            "é\n€",
        ] {
            assert_eq!(line_count(text), text.lines().count() as u64, "{text:?}");
        }
    }

    #[test]
    fn numbered_lines_are_measured_as_rendered() {
        for (number, line) in [
            (1, ""),
            (7, "abc"),
            (999_999, "x"),
            (1_000_000, "é"),
            (u64::MAX, ""),
        ] {
            let rendered = format!("{number:>6}\t{line}\n");
            assert_eq!(
                numbered_line_bytes(number, line.len()),
                rendered.len() as u64,
                "{rendered:?}"
            );
        }
    }

    #[test]
    fn replaced_sizes_are_computed_without_overflow() {
        assert_eq!(size_after_replacing(10, 2, 1, 3), Some(14));
        assert_eq!(size_after_replacing(10, 2, 3, 1), Some(6));
        assert_eq!(
            size_after_replacing(4 << 20, 4 << 20, 1, 2000),
            Some(8_388_608_000)
        );
        assert_eq!(size_after_replacing(u64::MAX, 1, 1, 2), None);
        assert_eq!(size_after_replacing(10, u64::MAX, 1, 2), None);
        assert_eq!(size_after_replacing(10, 1, u64::MAX, 0), None);
    }

    #[test]
    fn lines_are_cut_at_characters_not_bytes() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 3), "ééé", "6 bytes but 3 characters");
        assert_eq!(cut("abcd", 3), "abc… [line cut: 1 more characters]");
        assert_eq!(cut("éééé", 3), "ééé… [line cut: 1 more characters]");
    }
}
