//! Run-start context for wsp agent workspaces: what an agent loads before each turn, under a
//! token budget; plus the files an agent writes back (the daily memory log, the session index).
//!
//! **Invariant:** the budget is never exceeded (the rendered text is counted as a whole before it
//! is returned), with one exception the caller can switch off: `AGENTS.md` is never cut (seed
//! 003), so when it alone is larger than the budget it is loaded in full, every other file cut
//! to its marker, and the text opens with `[OVER BUDGET: ...]` and the report says
//! `overBudget` (with [`ContextConfig::strict_budget`], the budget holds even then). Every
//! truncation or omission is visible in the text (`[TRUNCATED: N tokens omitted, read <path>]`,
//! `[MISSING: <path>]`, `[SKIPPED: <path>: <reason>]`) and in the [`ContextReport`]; the host's
//! sections before the files (`## Session Context`, `## Workspace guidance`) are whole or left
//! out, and the report says which.
//!
//! The context is, in this order (VFS.md "Run-start context", seed 003): `AGENTS.md` in full as
//! far as the budget allows, `MEMORY.md` under the budget, `knowledge/KNOWLEDGE.md`, a listing of
//! `knowledge/`, the configured extra files, each in a tagged block that says it is file data,
//! not instructions; then an index of `skills/*/SKILL.md` and `subagents/*.md` (name and first
//! line each). Priorities follow that order, and per-section [`Floors`] reserve a share first, so
//! a large `AGENTS.md` cannot starve `MEMORY.md` to nothing. Tokens are estimated as chars/4
//! ([`CharEstimate`]) unless another [`TokenCounter`] is given. The output is deterministic.
//!
//! Files come from a [`ContextSource`]: [`StoreSource`] (a `WorkspaceStore` owner, live or as of
//! a snapshot, which is what a run sees) or [`DirectorySource`] (a directory on disk that cannot
//! be left; a context file that is a symbolic link leaving it is not injected, and the report
//! says why).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wsp_context::{ContextConfig, EntryOutcome, StoreSource, assemble};
//! use wsp_store::{FileWrite, MemoryStore, Precondition, WorkspaceStore};
//! use wsp_types::{Owner, WorkspacePath};
//!
//! let store = Arc::new(MemoryStore::default());
//! let owner = Owner::parse("t", "w").unwrap();
//! let put = |path: &str, text: String| {
//!     let (store, owner) = (store.clone(), owner.clone());
//!     let path = WorkspacePath::parse(path).unwrap();
//!     async move { store.put(&owner, &path, FileWrite::markdown(text), Precondition::None).await.unwrap() }
//! };
//! put("AGENTS.md", "You review pull requests.\n".into()).await;
//! put("MEMORY.md", "- the team prefers small PRs\n".repeat(500)).await;
//! let run = store.snapshot(&owner, &"run-1".into()).await.unwrap();
//!
//! let source = StoreSource::at_snapshot(store.clone(), owner.clone(), run.id);
//! let ctx = assemble(&source, &ContextConfig::new(1000)).await.unwrap();
//! assert!(ctx.report.used_tokens <= 1000);
//! assert!(ctx.text.contains("You review pull requests."));
//! assert!(ctx.text.contains("tokens omitted, read MEMORY.md]"));
//! assert_eq!(ctx.report.entries[1].outcome, EntryOutcome::Truncated);
//! # });
//! ```

mod assemble;
mod budget;
mod dir_source;
mod memory_log;
mod report;
mod sessions;
mod source;
mod store_source;
mod tokens;
mod update;

pub use assemble::{
    AGENTS_PATH, ContextConfig, ContextInputs, DEFAULT_BUDGET_TOKENS, Floor, Floors, IndexEntry,
    KNOWLEDGE_DIR, KNOWLEDGE_PATH, MAX_SUMMARY_CHARS, MEMORY_INDEX_PATH, MEMORY_PATH,
    RenderedContext, SKILLS_DIR, SUBAGENTS_DIR, SessionContext, assemble, neutralize_closing_tags,
    summary_line,
};
pub use dir_source::{DEFAULT_MAX_FILE_BYTES, DirectorySource};
pub use memory_log::{append_memory_line, memory_log_path};
pub use report::{ContextReport, EntryOutcome, ReportEntry, Section};
pub use sessions::{
    SessionIndex, SessionRecord, SessionUpdate, is_session_id, read_session_index, record_session,
    session_index_path, update_session_index,
};
pub use source::{ContextSource, Entry, ReadOutcome, Refusal, SourceError, SourceFuture};
pub use store_source::StoreSource;
pub use tokens::{CharEstimate, TokenCounter};
pub use update::{RetryPolicy, Updated, WriteError, WriteOptions};
