//! The run-start context as an MCP prompt: `run_start_context` renders `wsp-context`'s block from
//! one Workspace of the agent's own mount table, through the same scope checks as its tools, and
//! names every file by the path the agent passes to `read_file`.

use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;
use wsp_context::{
    ContextConfig, ContextSource, DEFAULT_BUDGET_TOKENS, Entry, ReadOutcome, Refusal,
    SessionContext, SourceError, SourceFuture, StoreSource, assemble,
};
use wsp_store::SnapshotId;

use wsp_types::{WorkspacePath, WorkspacePrefix};
use wsp_vfs::{AccessScope, GlobArgs, Vfs, VfsError, VfsErrorCode, VirtualPath};

/// The prompt's name in `prompts/list`.
pub const CONTEXT_PROMPT: &str = "run_start_context";

/// The largest budget the prompt renders, in tokens (a bound on the work one call can ask for).
pub const MAX_PROMPT_BUDGET: usize = 1_000_000;

/// Why the context prompt could not be set up over a mount table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the context root {root} {why}")]
pub struct ContextRootError {
    root: String,
    why: &'static str,
}

impl ContextRootError {
    pub(crate) fn items_profile(root: &str) -> Self {
        Self {
            root: root.to_owned(),
            why: "needs the files profile: the items profile has no mount table",
        }
    }
}

/// Where the prompt reads from: a readable Workspace's root, checked against the mount table.
#[derive(Debug, Clone)]
pub(crate) struct ContextRoot {
    root: VirtualPath,
}

impl ContextRoot {
    /// `root` must be the path of a Workspace of `vfs` that can be read (ro or rw).
    pub(crate) fn new(vfs: &Vfs, root: &str) -> Result<Self, ContextRootError> {
        let fail = |why| ContextRootError {
            root: root.to_owned(),
            why,
        };
        let parsed = VirtualPath::parse(root).map_err(|_| fail("is not an absolute path"))?;
        let Some(ws) = vfs.workspaces().into_iter().find(|w| w.path == parsed) else {
            return Err(fail("is not the path of a Workspace in the mount table"));
        };
        if ws.scope == AccessScope::WriteOnly {
            return Err(fail(
                "is a write-only Workspace, which the agent cannot read",
            ));
        }
        Ok(Self { root: parsed })
    }

    /// The Workspace the context is read from.
    pub(crate) fn root(&self) -> &VirtualPath {
        &self.root
    }

    /// The prompt as `prompts/list` shows it.
    pub(crate) fn prompt(&self) -> Prompt {
        Prompt::new(
            CONTEXT_PROMPT,
            Some(format!(
                "The agent's run-start context from {}: seed 003's Session Context (today's date, \
                 the workspace, the session) and Workspace guidance, then AGENTS.md, MEMORY.md \
                 (and MEMORY-INDEX.json when present), knowledge/KNOWLEDGE.md and a listing of \
                 knowledge/, and an index of skills/ and subagents/, within a \
                 token budget that is never exceeded; every cut is marked with the path to read. \
                 Put the text in the system prompt (MCP prompt messages have no system role, so it \
                 arrives as one user message).",
                self.root
            )),
            Some(vec![
                PromptArgument::new("budget")
                    .with_title("Token budget")
                    .with_description(format!(
                        "The most tokens (estimated as characters / 4) the block may take, \
                         1..={MAX_PROMPT_BUDGET}; default {DEFAULT_BUDGET_TOKENS}."
                    ))
                    .with_required(false),
                PromptArgument::new("session")
                    .with_title("Session id")
                    .with_description(
                        "The session's id, shown in the block's ## Session Context (letters, \
                         digits, '.', '_', '-').",
                    )
                    .with_required(false),
                PromptArgument::new("run")
                    .with_title("Run id")
                    .with_description(
                        "Render the files as this run's snapshot holds them (a run of the \
                         virtual mount at the root, started with POST /v1/runs) instead of the \
                         live ones.",
                    )
                    .with_required(false),
                PromptArgument::new("strict")
                    .with_title("Strict budget")
                    .with_description(
                        "true: never exceed the budget, even to load AGENTS.md in full (by \
                         default AGENTS.md is never cut: alone over the budget it is loaded \
                         anyway, and the block opens with [OVER BUDGET: ...]).",
                    )
                    .with_required(false),
            ]),
        )
        .with_title("Run-start context")
    }

    /// `prompts/get`: the rendered block as one message, or why the arguments are refused. With
    /// `memory_search` (the tool is offered), a cut `MEMORY.md` points to it; the guidance names
    /// `memory_append` and `memory_search` when they are offered.
    pub(crate) async fn get(
        &self,
        vfs: &Vfs,
        arguments: Option<&serde_json::Map<String, Value>>,
        memory_search: bool,
        memory_append: bool,
    ) -> Result<GetPromptResult, PromptError> {
        let Arguments {
            budget,
            session,
            strict,
            run,
        } = arguments_of(arguments)?;
        let config = ContextConfig::new(budget)
            .with_path_root(self.root.as_str())
            .with_memory_search(memory_search)
            .with_memory_append(memory_append)
            .with_strict_budget(strict)
            .with_guidance(true)
            .with_session(Some(SessionContext::today().with_session_id(session)));
        let ctx = match run {
            None => {
                let source = VfsSource {
                    vfs,
                    root: &self.root,
                };
                assemble(&source, &config).await
            }
            Some(run) => {
                let source = self.run_source(vfs, &run).await?;
                assemble(&source, &config).await
            }
        }
        .map_err(|e| PromptError::Unavailable(e.to_string()))?;
        let summary = format!(
            "{} of {} tokens from {}",
            ctx.report.used_tokens, ctx.report.budget_tokens, self.root
        );
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, ctx.text)])
                .with_description(summary),
        )
    }
}

impl ContextRoot {
    /// The root's files as the run `run` saw them: its snapshot of the virtual Mount at the
    /// root (a run is a snapshot of a store's namespace; a directory on disk has none), less
    /// what the Workspace's deny rules hide.
    async fn run_source<'a>(
        &'a self,
        vfs: &'a Vfs,
        run: &str,
    ) -> Result<Unhidden<'a>, PromptError> {
        let refuse = |why: String| Err(PromptError::InvalidArguments(why));
        let Some((store, owner)) = vfs.virtual_backing(self.root.as_str()) else {
            return refuse(format!(
                "run needs the context root {} on a virtual mount: a run is a snapshot of a store namespace",
                self.root
            ));
        };
        let Some(id) = SnapshotId::parse(run) else {
            return refuse(format!("run {run:?} is not a run id"));
        };
        match store.snapshot_info(&owner, &id).await {
            Ok(info) if info.released.is_none() => Ok(Unhidden {
                inner: StoreSource::at_snapshot(store, owner, id),
                vfs,
                root: &self.root,
            }),
            Ok(_) => refuse(format!("run {run} has ended; its snapshot is gone")),
            Err(wsp_store::StoreError::NotFound) => {
                refuse(format!("no run {run} of the workspace at {}", self.root))
            }
            Err(e) => Err(PromptError::Unavailable(e.to_string())),
        }
    }
}

/// Why `prompts/get` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PromptError {
    /// The arguments are wrong (a JSON-RPC invalid-params error).
    InvalidArguments(String),
    /// The files could not be read at all.
    Unavailable(String),
}

/// The prompt's arguments.
struct Arguments {
    /// The budget (default [`DEFAULT_BUDGET_TOKENS`]).
    budget: usize,
    /// The session id for `## Session Context`.
    session: Option<String>,
    /// Never exceed the budget, even to load `AGENTS.md` in full.
    strict: bool,
    /// Read the run's snapshot instead of the live files.
    run: Option<String>,
}

fn arguments_of(
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Result<Arguments, PromptError> {
    let mut budget = DEFAULT_BUDGET_TOKENS;
    let mut session = None;
    let mut strict = false;
    let mut run = None;
    for (name, value) in arguments.into_iter().flatten() {
        if name == "run" {
            let id = value.as_str().filter(|id| !id.is_empty()).ok_or_else(|| {
                PromptError::InvalidArguments(format!("run must be a run id, got {value}"))
            })?;
            run = Some(id.to_owned());
            continue;
        }
        if name == "strict" {
            strict = match value {
                Value::Bool(b) => *b,
                Value::String(s) if s == "true" => true,
                Value::String(s) if s == "false" => false,
                _ => {
                    return Err(PromptError::InvalidArguments(format!(
                        "strict must be true or false, got {value}"
                    )));
                }
            };
            continue;
        }
        if name == "session" {
            let id = value
                .as_str()
                .filter(|id| wsp_context::is_session_id(id))
                .ok_or_else(|| {
                    PromptError::InvalidArguments(format!(
                        "session must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, got {value}"
                    ))
                })?;
            session = Some(id.to_owned());
            continue;
        }
        if name != "budget" {
            return Err(PromptError::InvalidArguments(format!(
                "unknown argument {name:?}; {CONTEXT_PROMPT} takes budget, session, strict and run"
            )));
        }
        // MCP prompt arguments are strings; a number is accepted too.
        let parsed = match value {
            Value::String(s) => s.trim().parse::<usize>().ok(),
            Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            _ => None,
        };
        budget = parsed
            .filter(|b| (1..=MAX_PROMPT_BUDGET).contains(b))
            .ok_or_else(|| {
                PromptError::InvalidArguments(format!(
                    "budget must be a whole number of tokens from 1 to {MAX_PROMPT_BUDGET}, got {value}"
                ))
            })?;
    }
    Ok(Arguments {
        budget,
        session,
        strict,
        run,
    })
}

/// `rel` (a path below `root`) as the agent names it.
fn under(root: &VirtualPath, rel: &str) -> String {
    let rel = rel.trim_end_matches('/');
    if rel.is_empty() {
        root.to_string()
    } else if root.as_str() == "/" {
        format!("/{rel}")
    } else {
        format!("{root}/{rel}")
    }
}

/// A store's files of the Workspace at `root` (a run's snapshot), less every path the
/// Workspace's deny rules hide: none is listed, and each reads as missing, as through the tools.
struct Unhidden<'a> {
    inner: StoreSource,
    vfs: &'a Vfs,
    root: &'a VirtualPath,
}

impl ContextSource for Unhidden<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>> {
        Box::pin(async move {
            let mut entries = self.inner.list(prefix).await?;
            entries.retain(|e| !self.vfs.denies(&under(self.root, e.path.as_str())));
            Ok(entries)
        })
    }

    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome> {
        Box::pin(async move {
            if self.vfs.denies(&under(self.root, path.as_str())) {
                return Ok(ReadOutcome::Missing);
            }
            self.inner.read(path).await
        })
    }
}

/// A [`ContextSource`] over one Workspace of a [`Vfs`]: reads and listings go through the VFS's
/// own scope checks and limits, so the prompt shows nothing the agent's tools could not read.
struct VfsSource<'a> {
    vfs: &'a Vfs,
    root: &'a VirtualPath,
}

impl VfsSource<'_> {
    fn full(&self, rel: &str) -> String {
        under(self.root, rel)
    }

    fn relative<'p>(&self, path: &'p str) -> Option<&'p str> {
        if self.root.as_str() == "/" {
            return path.strip_prefix('/');
        }
        path.strip_prefix(self.root.as_str())?.strip_prefix('/')
    }
}

fn unavailable(e: &VfsError) -> SourceError {
    SourceError::Unavailable(format!("{}: {}", e.code, e.message))
}

impl ContextSource for VfsSource<'_> {
    fn describe(&self) -> String {
        format!("mount {}", self.root)
    }

    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>> {
        Box::pin(async move {
            // Search the directory that holds the prefix, then keep what starts with it.
            let dir = prefix
                .as_str()
                .rfind('/')
                .map_or("", |i| &prefix.as_str()[..i]);
            let args = GlobArgs {
                pattern: "**".to_owned(),
                path: Some(self.full(dir)),
            };
            let found = match self.vfs.glob(args).await {
                Ok(found) => found,
                Err(e) if e.code == VfsErrorCode::NotFound => return Ok(Vec::new()),
                Err(e) if e.code == VfsErrorCode::Unavailable => return Err(unavailable(&e)),
                // A directory the agent cannot search lists nothing, as for the agent.
                Err(_) => return Ok(Vec::new()),
            };
            let mut entries: Vec<Entry> = found
                .matches
                .iter()
                .filter_map(|m| self.relative(m.as_str()))
                .filter(|rel| rel.starts_with(prefix.as_str()))
                .filter_map(|rel| WorkspacePath::parse(rel).ok())
                .map(|path| Entry { path })
                .collect();
            entries.sort();
            Ok(entries)
        })
    }

    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome> {
        Box::pin(async move {
            match self.vfs.read_whole(&self.full(path.as_str())).await {
                Ok(file) => Ok(match String::from_utf8(file.bytes) {
                    Ok(text) if !text.contains('\0') => ReadOutcome::Found(text),
                    _ => ReadOutcome::Refused(Refusal::NotUtf8),
                }),
                Err(e) => match e.code {
                    VfsErrorCode::NotFound => Ok(ReadOutcome::Missing),
                    VfsErrorCode::IsDirectory => Ok(ReadOutcome::Refused(Refusal::NotRegularFile)),
                    VfsErrorCode::TooLarge => Ok(ReadOutcome::Refused(Refusal::TooLarge {
                        max_bytes: self.vfs.limits().max_read_bytes,
                    })),
                    VfsErrorCode::Unavailable => Err(unavailable(&e)),
                    _ => Ok(ReadOutcome::Refused(Refusal::Denied { reason: e.message })),
                },
            }
        })
    }
}
