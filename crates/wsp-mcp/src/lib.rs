//! The agent's virtual filesystem as an MCP server, over stdio and streamable HTTP.
//!
//! **Invariant:** only this crate knows rmcp. Everything an agent can do is decided by
//! `wsp-vfs`; this crate translates: `tools/list` is exactly the scope-derived catalogue
//! ([`wsp_vfs::Vfs::tools`] or [`wsp_vfs::ItemsProfile::tools`]), `tools/call` goes to the one
//! dispatch entry point (`call`), and a [`wsp_vfs::VfsError`] becomes a tool result with
//! `isError: true` whose text and structured content carry the error code and the model-facing
//! message (which never shows a host path). The server `instructions` carry the filesystem map.
//!
//! - [`McpServer::files`] serves the `files` profile of a [`Vfs`](wsp_vfs::Vfs); [`McpServer::items`] the
//!   `items` profile (seed 001's keyed items). An empty mount table lists no tools.
//! - [`McpServer::serve_stdio`] speaks MCP on stdin/stdout (nothing else may write to stdout);
//!   [`McpServer::serve_http`] serves streamable HTTP at `/mcp` in an axum router
//!   ([`McpServer::http_router`] to nest it into another app). Every HTTP request must carry
//!   `Authorization: Bearer <token>` ([`HttpAuth::Bearer`], compared in constant time) unless
//!   the embedding app authenticates upstream ([`HttpAuth::Upstream`]); before that, a
//!   request must name this server: one loopback (or allowed) `Host`, an absolute-form target
//!   with the same authority, and a loopback (or allowed) `Origin` if any ([`HttpAllowList`],
//!   DNS-rebinding protection). [`McpServer::serve_http`] serves under [`ConnectionLimits`], over
//!   plain HTTP or HTTPS ([`Listener`] with [`ServerTls`]).
//!
//! With [`McpServer::with_context_root`] the server also offers the prompt `run_start_context`
//! (`prompts/list`, `prompts/get`): the run-start context of one readable Workspace, rendered by
//! `wsp-context` under a token budget from the files the agent's own tools can read, every path
//! shown as the agent passes it to `read_file`. Under the same root it offers the agent's
//! write-back loop (seed 003) where the scopes allow each: `memory_append` (one line to today's
//! `memory/YYYY-MM-DD.md`; read-write `memory/`), `memory_search` (ranked lines of `MEMORY.md`
//! and `memory/`, or of a readable path the agent names) and, with
//! [`McpServer::with_session_agent`], `session_record` (`agents/<agent>/sessions/sessions.json`;
//! read-write). They read and write through the same [`Vfs`](wsp_vfs::Vfs) calls as the file
//! tools, so they reach nothing those could not; updates are conditional and retried, so
//! concurrent sessions never lose each other's lines.
//!
//! A `files` server with a readable Workspace also offers the readable files as resources
//! (`wsp:///workspace/MEMORY.md`: `resources/list`, `resources/read` with the etag in `_meta`,
//! `resources/templates/list`; never a write-only Workspace), and notices of changes to the
//! files a client watches (`subscriptions/listen`, or `resources/subscribe` on the earlier
//! lifecycle), found by comparing etags every [`POLL_INTERVAL`].
//!
//! The HTTP transport is the feature `http` (on by default), and it is the only part of the
//! crate that knows axum: with `default-features = false` the crate serves stdio only and links
//! neither axum nor wsp-listener (ARCHITECTURE.md, "Dependency rules").
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wsp_mcp::McpServer;
//! use wsp_store::MemoryStore;
//! use wsp_vfs::{MountTable, Vfs};
//!
//! let table = MountTable::from_toml_str(r#"
//!     [[workspace]]
//!     path  = "/outbox"
//!     scope = "wo"
//!     mount = { virtual = "outbox" }
//! "#).unwrap();
//! let vfs = Vfs::builder(table).virtual_store(Arc::new(MemoryStore::default())).build().unwrap();
//! let server = McpServer::files(vfs);
//! assert_eq!(server.tool_names(), ["write_file"]);
//! assert!(server.instructions().contains("/outbox (write-only"));
//! # });
//! ```

#[cfg(feature = "http")]
mod auth;
mod context;
#[cfg(feature = "http")]
mod http;
mod memory;
mod resources;
mod server;
mod transport;

#[cfg(feature = "http")]
pub use auth::{AllowListError, BearerToken, BearerTokenError, HttpAllowList, HttpAuth};
pub use context::{CONTEXT_PROMPT, ContextRootError, MAX_PROMPT_BUDGET};
#[cfg(feature = "http")]
pub use http::{ConnectionLimits, HTTP_PATH, HttpOptions, Listener, ServerTls};
pub use memory::{
    MAX_MEMORY_LINE_BYTES, MAX_SESSION_SUMMARY_CHARS, MEMORY_APPEND, MEMORY_SEARCH, SESSION_RECORD,
};
pub use resources::{POLL_INTERVAL, RESOURCE_SCHEME};
pub use server::{McpServer, Profile};
