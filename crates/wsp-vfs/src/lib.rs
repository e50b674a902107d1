//! The agent's virtual filesystem: Workspaces, Access Scopes, Mounts and the tools over them.
//!
//! **Invariant:** deny by default; the Access Scope is checked before any Store is touched; no
//! tool ever executes a program.
//!
//! - A [`MountTable`] (TOML `[[workspace]]` entries or [`MountTable::builder`]) lists the
//!   Workspaces: a logical prefix, an [`AccessScope`] (RO, RW, WO) and a Mount (a physical host
//!   directory, a Virtual Store namespace, or an overlay of the two). Invalid tables are refused
//!   at load with a message naming the entry and the problem.
//! - [`Vfs`] routes every tool call: [`VirtualPath::parse`] rejects (never repairs) odd paths, the
//!   longest prefix on whole components picks the Workspace (`/project_evil` never matches
//!   `/project`), the Access Scope is checked, and only then does a Store run. A path under no
//!   Workspace is refused with the same answer whether or not something exists there.
//! - The Physical Store opens everything relative to a directory handle, one component at a time
//!   without following symbolic links, so `..`, links and swaps cannot leave the directory;
//!   writes are atomic (temporary file and rename). The Virtual Store keeps a namespace in any
//!   [`wsp_store::WorkspaceStore`].
//! - Each Workspace hides the paths its deny patterns match (by default [`DEFAULT_DENY`]:
//!   secrets and version-control internals) from every tool, as if they did not exist; the
//!   Stores apply the same rules to the targets of symbolic links.
//! - The tool catalogue ([`Vfs::tools`], [`catalogue`]) follows the aggregate Access Scopes; an
//!   empty table has no tools. [`Vfs::call`] is the single dispatch entry point; every tool also
//!   has a typed method. [`Vfs::filesystem_map`] is the text for the system prompt.
//! - [`ItemsProfile`] is the second tool profile (seed 001's keyed items with one-way publish).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wsp_store::MemoryStore;
//! use wsp_vfs::{MountTable, Vfs};
//!
//! let table = MountTable::from_toml_str(r#"
//!     [[workspace]]
//!     path  = "/notes"
//!     scope = "rw"
//!     mount = { virtual = "notes" }
//! "#).unwrap();
//! let vfs = Vfs::builder(table).virtual_store(Arc::new(MemoryStore::default())).build().unwrap();
//! vfs.call("write_file", serde_json::json!({"path": "/notes/plan.md", "content": "ship it\n"})).await.unwrap();
//! let out = vfs.call("read_file", serde_json::json!({"path": "/notes/plan.md"})).await.unwrap();
//! assert!(out.text.starts_with("     1\tship it\n"));
//! let denied = vfs.call("read_file", serde_json::json!({"path": "/etc/passwd"})).await.unwrap_err();
//! assert_eq!(denied.code.as_str(), "permission_denied");
//! # });
//! ```

mod config;
mod deny;
mod error;
mod items;
mod map;
mod path;
mod scope;
mod store;
mod tools;
mod vfs;

pub use config::{
    MAX_TABLE_BYTES, MountConfig, MountProblem, MountTable, MountTableBuilder, MountTableError,
    OverlapSide, OverlayConfig, ScopeOverlap, WorkspaceConfig, mount_table_schema,
};
pub use deny::DEFAULT_DENY;
pub use error::{VfsError, VfsErrorCode};
pub use items::{
    AgentIdentity, AgentKind, Item, ItemChanged, ItemKeyArgs, ItemList, ItemListArgs, ItemSummary,
    ItemToolName, ItemWriteArgs, ItemsProfile, MAX_LIST_ITEMS, PREVIEW_CHARS, PublishArgs,
    SharedAgentList, SharedAgents, publish_item,
};
pub use map::filesystem_map;
pub use path::{MAX_COMPONENT_BYTES, MAX_PATH_BYTES, VirtualPath, VirtualPathError};
pub use scope::{AccessScope, Operation};
pub use store::EntryKind;
pub use tools::{
    DeleteFileArgs, EditFileArgs, FileDeleted, FileEdited, FileRead, FileWritten, GlobArgs,
    GlobMatches, GrepArgs, GrepMatch, GrepMatches, ListEntry, Listing, LsArgs, ReadFileArgs,
    ToolAnnotations, ToolDefinition, ToolName, ToolOutput, ToolResult, WriteFileArgs, catalogue,
};
pub use vfs::{MountKind, Vfs, VfsBuilder, VfsLimits, WholeFile, WorkspaceInfo};
