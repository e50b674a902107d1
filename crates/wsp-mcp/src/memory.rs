//! The agent's write-back loop over MCP (seed 003): `memory_append` (one line to today's
//! `memory/YYYY-MM-DD.md`), `memory_search` (ranked lines of `MEMORY.md`, `memory/` or another
//! readable path) and `session_record` (the session index `agents/<agent>/sessions/sessions.json`).
//!
//! Every read and write goes through the agent's own mount table, with its scopes and limits,
//! under the context root (`/workspace`): these tools reach nothing the file tools could not.
//! Updates are conditional (`create_only`, then `if_match` on the etag just read) and retried
//! after a conflict, so concurrent appenders and recorders never lose each other's lines.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use chrono::Utc;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};
use wsp_context::{RetryPolicy, SessionIndex, SessionUpdate, memory_log_path};
use wsp_store::SearchQuery;
use wsp_store::search::{MAX_SEARCH_RESULTS, matching_lines, rank_key};
use wsp_types::WorkspacePrefix;
use wsp_vfs::{
    AccessScope, GlobArgs, Operation, ToolOutput, Vfs, VfsError, VfsErrorCode, VirtualPath,
    WriteFileArgs,
};

/// The tool that appends one line to today's memory log.
pub const MEMORY_APPEND: &str = "memory_append";
/// The tool that searches the memory files (and any readable path the agent names).
pub const MEMORY_SEARCH: &str = "memory_search";
/// The tool that records a session in the agent's session index.
pub const SESSION_RECORD: &str = "session_record";

/// The longest line `memory_append` takes, in bytes.
pub const MAX_MEMORY_LINE_BYTES: usize = 4096;
/// The longest `memory_search` query, in characters (as long as the store's search takes).
const MAX_QUERY_CHARS: usize = wsp_store::search::MAX_QUERY_CHARS;
/// The longest session summary `session_record` takes, in characters.
pub const MAX_SESSION_SUMMARY_CHARS: usize = 2000;

/// Matches `memory_search` returns when no `limit` is given, and the most it returns.
const DEFAULT_RESULTS: usize = 10;
const MAX_RESULTS: usize = 50;

/// The memory tools a mount table supports under one context root, and how they write.
#[derive(Debug)]
pub(crate) struct MemoryTools {
    root: VirtualPath,
    /// `memory/` is readable and writable: `memory_append` is offered.
    append: bool,
    /// `MEMORY.md` or `memory/` is readable: `memory_search` is offered.
    search: bool,
    /// The agent whose session index `session_record` keeps, when it is readable and writable.
    sessions: Option<String>,
    retry: RetryPolicy,
}

impl MemoryTools {
    /// What `vfs` allows under `root`: each tool is offered only where its files are reachable
    /// with the scope it needs (append and record read, then write: read-write; search: read).
    pub(crate) fn new(vfs: &Vfs, root: &VirtualPath, agent: Option<&str>) -> Self {
        let tools = Self {
            root: root.clone(),
            append: false,
            search: false,
            sessions: None,
            retry: RetryPolicy::default(),
        };
        let scope = |rel: &str| vfs.workspace_at(&tools.full(rel)).map(|w| w.scope);
        let append = scope("memory/2000-01-01.md") == Some(AccessScope::ReadWrite);
        let search = [scope("MEMORY.md"), scope("memory/2000-01-01.md")]
            .into_iter()
            .flatten()
            .any(|s| s.allows(Operation::Search));
        let sessions = agent
            .filter(|a| wsp_context::is_session_id(a))
            .filter(|a| {
                scope(&format!("agents/{a}/sessions/sessions.json")) == Some(AccessScope::ReadWrite)
            })
            .map(str::to_owned);
        Self {
            append,
            search,
            sessions,
            ..tools
        }
    }

    /// The virtual path of `rel` under the root.
    fn full(&self, rel: &str) -> String {
        if self.root.as_str() == "/" {
            format!("/{rel}")
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    /// The tools offered, in a fixed order.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let mut out = Vec::new();
        if self.append {
            out.push(tool(
                MEMORY_APPEND,
                "Append to memory",
                format!(
                    "Append one line (a fact worth keeping) to today's memory log, {}. \
                     Earlier lines are never changed and concurrent appends never lose a line. \
                     One line of text, no line breaks, at most {MAX_MEMORY_LINE_BYTES} bytes; \
                     call again for each further fact.",
                    self.full("memory/YYYY-MM-DD.md")
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "text": {
                            "type": "string",
                            "description": "The line to append (no line breaks).",
                            "minLength": 1,
                            "maxLength": MAX_MEMORY_LINE_BYTES,
                        }
                    },
                    "required": ["text"],
                    "additionalProperties": false,
                }),
                Hints::append(),
            ));
        }
        if self.search {
            out.push(tool(
                MEMORY_SEARCH,
                "Search memory",
                format!(
                    "Search your memory ({} and the daily logs in {}) for lines with the words \
                     of `query` (case-insensitive), best matches first: lines with more of the \
                     words rank higher, then newer logs. Give `path` to search another readable \
                     file or directory instead. Each result is a path, a line number and the \
                     line; read_file shows the lines around it.",
                    self.full("MEMORY.md"),
                    self.full("memory/")
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "description": "Words to look for.",
                            "minLength": 1,
                            "maxLength": MAX_QUERY_CHARS,
                        },
                        "path": {
                            "type": "string",
                            "description": "A readable file or directory to search instead of the memory files (absolute).",
                        },
                        "limit": {
                            "type": "integer",
                            "description": format!("Most results (default {DEFAULT_RESULTS}, at most {MAX_RESULTS})."),
                            "minimum": 1,
                            "maximum": MAX_RESULTS,
                        }
                    },
                    "required": ["query"],
                    "additionalProperties": false,
                }),
                Hints::read(),
            ));
        }
        if let Some(agent) = &self.sessions {
            out.push(tool(
                SESSION_RECORD,
                "Record session",
                format!(
                    "Record this session in the session index {}: adds it, or for a session id \
                     already there updates its time and, when given, its summary. Concurrent \
                     records never lose each other's entries.",
                    self.full(&format!("agents/{agent}/sessions/sessions.json"))
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "session_id": {
                            "type": "string",
                            "description": "The session's id (letters, digits, '.', '_', '-'; starts with a letter or digit).",
                            "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
                        },
                        "summary": {
                            "type": "string",
                            "description": "A short summary of the session.",
                            "maxLength": MAX_SESSION_SUMMARY_CHARS,
                        }
                    },
                    "required": ["session_id"],
                    "additionalProperties": false,
                }),
                Hints::record(),
            ));
        }
        out
    }

    /// Whether `name` is one of the tools offered.
    pub(crate) fn offers(&self, name: &str) -> bool {
        match name {
            MEMORY_APPEND => self.append,
            MEMORY_SEARCH => self.search,
            SESSION_RECORD => self.sessions.is_some(),
            _ => false,
        }
    }

    /// Runs one of the tools offered.
    pub(crate) async fn call(
        &self,
        vfs: &Vfs,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, VfsError> {
        match name {
            MEMORY_APPEND if self.append => self.append(vfs, parse(name, args)?).await,
            MEMORY_SEARCH if self.search => self.search(vfs, parse(name, args)?).await,
            SESSION_RECORD => match &self.sessions {
                Some(agent) => self.record(vfs, agent, parse(name, args)?).await,
                None => Err(unknown(name)),
            },
            _ => Err(unknown(name)),
        }
    }

    async fn append(&self, vfs: &Vfs, args: AppendArgs) -> Result<ToolOutput, VfsError> {
        let line = args.text.trim_end();
        if line.trim().is_empty() {
            return Err(VfsError::new(
                VfsErrorCode::InvalidArgument,
                "text is empty; give the fact to remember",
            ));
        }
        if line.contains(['\n', '\r']) {
            return Err(VfsError::new(
                VfsErrorCode::InvalidArgument,
                "text holds a line break; append each line with its own call",
            ));
        }
        if line.len() > MAX_MEMORY_LINE_BYTES {
            return Err(VfsError::new(
                VfsErrorCode::TooLarge,
                format!(
                    "text is {} bytes, over the {MAX_MEMORY_LINE_BYTES} a memory line may hold",
                    line.len()
                ),
            ));
        }
        let path = self.full(memory_log_path(Utc::now().date_naive()).as_str());
        let (written, content) = self
            .update(vfs, &path, |current| {
                let mut content = current.unwrap_or_default().to_owned();
                if !content.is_empty() && !content.ends_with('\n') {
                    content.push('\n');
                }
                content.push_str(line);
                content.push('\n');
                Ok(content)
            })
            .await?;
        let number = content.lines().count();
        Ok(ToolOutput {
            text: format!("appended line {number} of {path}"),
            structured: json!({"path": path, "line": number, "etag": written}),
        })
    }

    async fn record(
        &self,
        vfs: &Vfs,
        agent: &str,
        args: RecordArgs,
    ) -> Result<ToolOutput, VfsError> {
        if !wsp_context::is_session_id(&args.session_id) {
            return Err(VfsError::new(
                VfsErrorCode::InvalidArgument,
                format!(
                    "session_id {:?} must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit",
                    args.session_id
                ),
            ));
        }
        if let Some(summary) = &args.summary
            && summary.chars().count() > MAX_SESSION_SUMMARY_CHARS
        {
            return Err(VfsError::new(
                VfsErrorCode::TooLarge,
                format!("summary is over {MAX_SESSION_SUMMARY_CHARS} characters; shorten it"),
            ));
        }
        let path = self.full(&format!("agents/{agent}/sessions/sessions.json"));
        let update = SessionUpdate {
            id: args.session_id.clone(),
            at: Utc::now(),
            summary: args.summary.clone(),
        };
        let (mut added, mut sessions) = (false, 0);
        let (etag, _) = self
            .update(vfs, &path, |current| {
                let mut index = match current {
                    Some(text) => SessionIndex::from_text(text).map_err(|e| {
                        VfsError::new(
                            VfsErrorCode::InvalidArgument,
                            format!(
                                "{path} is not a session index ({e}); fix it with edit_file or delete it"
                            ),
                        )
                    })?,
                    None => SessionIndex::default(),
                };
                added = index.record(&update);
                sessions = index.sessions.len();
                Ok(index.to_text())
            })
            .await?;
        let verb = if added { "recorded" } else { "updated" };
        Ok(ToolOutput {
            text: format!(
                "{verb} session {} in {path} ({sessions} sessions)",
                args.session_id
            ),
            structured: json!({
                "path": path,
                "sessionId": args.session_id,
                "added": added,
                "sessions": sessions,
                "etag": etag,
            }),
        })
    }

    /// Reads `path` (absent is `None`), writes `change` of it under `create_only` or `if_match`,
    /// and runs again on the newer content after a conflict. Returns the new etag and content.
    async fn update<F>(
        &self,
        vfs: &Vfs,
        path: &str,
        mut change: F,
    ) -> Result<(Option<String>, String), VfsError>
    where
        F: FnMut(Option<&str>) -> Result<String, VfsError>,
    {
        for attempt in 1..=self.retry.max_attempts {
            let (etag, current) = match vfs.read_whole(path).await {
                Ok(file) => {
                    let text = String::from_utf8(file.bytes).map_err(|_| {
                        VfsError::new(
                            VfsErrorCode::InvalidArgument,
                            format!("{path} is not UTF-8 text, so no line can be added to it"),
                        )
                    })?;
                    (Some(file.etag), Some(text))
                }
                Err(e) if e.code == VfsErrorCode::NotFound => (None, None),
                Err(e) => return Err(e),
            };
            let content = change(current.as_deref())?;
            let args = WriteFileArgs {
                path: path.to_owned(),
                content: content.clone(),
                create_only: etag.is_none(),
                if_match: etag,
            };
            match vfs.write_file(args).await {
                Ok(written) => return Ok((written.etag, content)),
                Err(e) if e.code == VfsErrorCode::Conflict => {
                    tokio::time::sleep(self.retry.backoff(attempt)).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(VfsError::new(
            VfsErrorCode::Conflict,
            format!(
                "other writers changed {path} on each of {} attempts; try again",
                self.retry.max_attempts
            ),
        ))
    }

    async fn search(&self, vfs: &Vfs, args: SearchArgs) -> Result<ToolOutput, VfsError> {
        let query = SearchQuery::new(&args.query, WorkspacePrefix::all(), MAX_SEARCH_RESULTS)
            .map_err(|e| VfsError::new(VfsErrorCode::InvalidArgument, e.to_string()))?;
        let limit = match args.limit {
            None => DEFAULT_RESULTS,
            Some(n) if (1..=MAX_RESULTS as u64).contains(&n) => n as usize,
            Some(n) => {
                return Err(VfsError::new(
                    VfsErrorCode::InvalidArgument,
                    format!("limit must be from 1 to {MAX_RESULTS}, got {n}"),
                ));
            }
        };
        // The memory files by default (each may be absent or unreachable); a named path must
        // be there and readable, and its refusal is the answer.
        let (targets, named) = match &args.path {
            Some(p) => (vec![p.clone()], true),
            None => (vec![self.full("MEMORY.md"), self.full("memory")], false),
        };
        let mut scan = Scan::default();
        for target in &targets {
            match self.scan(vfs, target, &query, &mut scan).await {
                Ok(()) => {}
                Err(e) if named => return Err(e),
                Err(e) if e.code == VfsErrorCode::Unavailable => return Err(e),
                Err(_) => {}
            }
        }
        let Scan {
            mut hits,
            more,
            files,
            skipped,
            truncated,
        } = scan;
        let total = hits.len() + more;
        hits.sort_by(|a, b| {
            rank_key(a.score, &a.path, a.line).cmp(&rank_key(b.score, &b.path, b.line))
        });
        hits.truncate(limit);
        let mut text = format!(
            "{total} matching line{} for {:?} in {files} file{} searched",
            if total == 1 { "" } else { "s" },
            args.query,
            if files == 1 { "" } else { "s" },
        );
        if total > hits.len() {
            let _ = write!(text, "; the best {} shown", hits.len());
        }
        text.push('\n');
        for hit in &hits {
            let _ = writeln!(text, "{}:{}: {}", hit.path, hit.line, hit.snippet);
        }
        for (path, why) in &skipped {
            let _ = writeln!(text, "[SKIPPED: {path}: {why}]");
        }
        if truncated {
            text.push_str("[The search stopped at a limit: search a narrower path.]\n");
        }
        Ok(ToolOutput {
            text,
            structured: json!({
                "query": args.query,
                "total": total,
                "filesSearched": files,
                "matches": hits.iter().map(|h| json!({
                    "path": h.path, "line": h.line, "score": h.score, "snippet": h.snippet,
                })).collect::<Vec<_>>(),
                "skipped": skipped.iter().map(|(path, why)| json!({"path": path, "reason": why})).collect::<Vec<_>>(),
                "truncated": truncated,
            }),
        })
    }

    /// Adds the matching lines of `target` (a file, or every file below a directory) to `scan`.
    /// Below a directory, the files of a virtual Mount are searched through its store's index
    /// (one call per Mount) when the listing showed every file the namespace holds there;
    /// otherwise (a file the deny rules hide, a path a deeper Mount covers, a listing cut at
    /// its limit), and on disk, the files the listing showed are read one by one.
    async fn scan(
        &self,
        vfs: &Vfs,
        target: &str,
        query: &SearchQuery,
        scan: &mut Scan,
    ) -> Result<(), VfsError> {
        let terms = query.terms();
        let files = match vfs.read_whole(target).await {
            Ok(file) => {
                scan.add(file.path.as_str(), &file.bytes, terms);
                return Ok(());
            }
            Err(e) if e.code == VfsErrorCode::IsDirectory => {
                let found = vfs
                    .glob(GlobArgs {
                        pattern: "**".to_owned(),
                        path: Some(target.to_owned()),
                    })
                    .await?;
                scan.truncated |= found.truncated;
                found.matches
            }
            Err(e) => return Err(e),
        };
        // The files by the Workspace that holds them.
        let mut by_mount: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for path in files {
            let root = vfs
                .workspace_at(path.as_str())
                .map(|w| w.path.to_string())
                .unwrap_or_default();
            by_mount.entry(root).or_default().push(path.to_string());
        }
        for (root, files) in by_mount {
            if let Some((store, owner)) = vfs.virtual_backing(&root) {
                let within = target
                    .strip_prefix(root.as_str())
                    .map(|rest| rest.trim_start_matches('/'))
                    .filter(|rest| !rest.is_empty())
                    .map(|rest| format!("{rest}/"))
                    .unwrap_or_default();
                let prefix = WorkspacePrefix::parse(&within).map_err(|e| {
                    VfsError::new(VfsErrorCode::InvalidPath, format!("{target}: {e}"))
                })?;
                let unavailable = |e: wsp_store::StoreError| {
                    VfsError::new(VfsErrorCode::Unavailable, format!("{root}: {e}"))
                };
                let shown: BTreeSet<&str> = files.iter().map(String::as_str).collect();
                let joined = |rel: &str| {
                    if root == "/" {
                        format!("/{rel}")
                    } else {
                        format!("{root}/{rel}")
                    }
                };
                // The store's search reads every file of the namespace, and its counts take in
                // lines it does not return: it answers for the listing only when the listing
                // showed every file (none hidden by the deny rules, none left to a deeper
                // Workspace, the listing not cut). Otherwise the files shown are read.
                let listed = store.list(&owner, &prefix).await.map_err(unavailable)?;
                if !listed
                    .iter()
                    .all(|meta| shown.contains(joined(meta.path.as_str()).as_str()))
                {
                    scan.read_each(vfs, files, terms).await?;
                    continue;
                }
                let query = query.clone().with_prefix(prefix);
                let found = store.search(&owner, &query).await.map_err(unavailable)?;
                scan.files += found.files as usize;
                scan.truncated |= found.truncated;
                scan.more += (found.total as usize).saturating_sub(found.hits.len());
                for hit in found.hits {
                    let path = joined(hit.path.as_str());
                    if shown.contains(path.as_str()) {
                        scan.hits.push(Hit {
                            path,
                            line: hit.line,
                            score: hit.score,
                            snippet: hit.snippet,
                        });
                    }
                }
                continue;
            }
            scan.read_each(vfs, files, terms).await?;
        }
        Ok(())
    }
}

/// What a search found so far.
#[derive(Debug, Default)]
struct Scan {
    hits: Vec<Hit>,
    /// Matching lines a store's search counted beyond the ones it returned.
    more: usize,
    files: usize,
    skipped: Vec<(String, String)>,
    truncated: bool,
}

impl Scan {
    /// Reads each of `files` through the VFS and adds its matching lines.
    async fn read_each(
        &mut self,
        vfs: &Vfs,
        files: Vec<String>,
        terms: &[String],
    ) -> Result<(), VfsError> {
        for path in files {
            match vfs.read_whole(&path).await {
                Ok(file) => self.add(&path, &file.bytes, terms),
                Err(e) if e.code == VfsErrorCode::Unavailable => return Err(e),
                Err(e) => self.skipped.push((path, e.message)),
            }
        }
        Ok(())
    }

    fn add(&mut self, path: &str, bytes: &[u8], terms: &[String]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.skipped
                .push((path.to_owned(), "not UTF-8 text".to_owned()));
            return;
        };
        self.files += 1;
        for (line, score, snippet) in matching_lines(text, terms) {
            self.hits.push(Hit {
                path: path.to_owned(),
                line,
                score,
                snippet,
            });
        }
    }
}

/// One matching line.
#[derive(Debug)]
struct Hit {
    path: String,
    line: u64,
    score: u32,
    snippet: String,
}

fn unknown(name: &str) -> VfsError {
    VfsError::new(
        VfsErrorCode::InvalidArgument,
        format!("{name} is not offered here"),
    )
}

fn parse<T: serde::de::DeserializeOwned>(name: &str, args: Value) -> Result<T, VfsError> {
    let args = if args.is_null() { json!({}) } else { args };
    serde_json::from_value(args)
        .map_err(|e| VfsError::new(VfsErrorCode::InvalidArgument, format!("{name}: {e}")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendArgs {
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordArgs {
    session_id: String,
    #[serde(default)]
    summary: Option<String>,
}

/// A tool's behaviour hints.
#[derive(Debug, Clone, Copy)]
struct Hints {
    read_only: bool,
    idempotent: bool,
}

impl Hints {
    fn append() -> Self {
        Self {
            read_only: false,
            idempotent: false,
        }
    }
    fn read() -> Self {
        Self {
            read_only: true,
            idempotent: true,
        }
    }
    fn record() -> Self {
        Self {
            read_only: false,
            idempotent: true,
        }
    }
}

fn tool(name: &str, title: &str, description: String, schema: Value, hints: Hints) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(map) => map,
        _ => unreachable!("the schemas above are objects"),
    };
    Tool::new(name.to_owned(), description, Arc::new(schema))
        .with_title(title.to_owned())
        .with_annotations(ToolAnnotations::from_raw(
            Some(title.to_owned()),
            Some(hints.read_only),
            Some(false),
            Some(hints.idempotent),
            Some(false),
        ))
}
