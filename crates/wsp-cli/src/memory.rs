//! `wsp memory` and `wsp sessions`: the agent's write-back loop (seed 003) from the command line,
//! on a running host. `memory append` and `memory search` call the memory endpoints;
//! `sessions record` keeps `agents/<agent>/sessions/sessions.json` with conditional writes
//! (`If-None-Match: *` to create, `If-Match` after), retried on conflict, so concurrent
//! recorders never lose an entry; `sessions ls` lists it.

use chrono::Utc;
use clap::{Args, Subcommand};
use wsp_client::{Client, Error, PutOptions};
use wsp_context::{RetryPolicy, SessionIndex, SessionUpdate, session_index_path};
use wsp_types::{ETag, ErrorCode};

use crate::CliError;
use crate::failure::Failure;
use crate::files::RemoteArgs;
use crate::out::{errln, outln};

#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    #[command(subcommand)]
    command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
enum MemoryCommand {
    /// Append one line to today's memory log, memory/YYYY-MM-DD.md (UTC). Concurrent appends
    /// never lose a line.
    Append {
        /// The line (no line breaks, at most 4096 bytes).
        text: String,
    },
    /// The lines of the workspace's text files holding the words of QUERY, best first: more
    /// of the words, then newer files.
    Search {
        /// The words to look for.
        query: String,
        /// Only files whose path starts with this (e.g. memory/).
        #[arg(long)]
        prefix: Option<String>,
        /// Most lines to print (1 to 100; default 10).
        #[arg(long)]
        limit: Option<u32>,
    },
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    /// The agent whose index it is: `agents/<AGENT>/sessions/sessions.json`.
    #[arg(long, default_value = "agent", global = true)]
    agent: String,
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Add a session to the index, or update its time (and summary) when it is there.
    Record {
        /// The session id (letters, digits, '.', '_', '-').
        id: String,
        /// A short summary of the session.
        #[arg(long)]
        summary: Option<String>,
    },
    /// The sessions in the index, in the order they were first recorded.
    Ls,
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    crate::out::json(value)
}

/// Runs a `wsp memory` subcommand.
pub async fn run_memory(args: MemoryArgs) -> Result<(), Failure> {
    args.remote.keyed(memory(&args)).await
}

async fn memory(args: &MemoryArgs) -> Result<(), Failure> {
    let client = args.remote.client().await?;
    match &args.command {
        MemoryCommand::Append { text } => {
            let done = client.append_memory(text).await.map_err(Failure::remote)?;
            if args.remote.json {
                return print_json(&done);
            }
            outln!("{}:{}\tv{}", done.path.as_str(), done.line, done.version)?;
        }
        MemoryCommand::Search {
            query,
            prefix,
            limit,
        } => {
            let found = client
                .search(query, prefix.as_deref(), *limit)
                .await
                .map_err(Failure::remote)?;
            if args.remote.json {
                return print_json(&found);
            }
            for m in &found.matches {
                outln!("{}:{}: {}", m.path.as_str(), m.line, m.snippet)?;
            }
            errln!(
                "{} matching line{} in {} file{} searched{}",
                found.total,
                if found.total == 1 { "" } else { "s" },
                found.files_searched,
                if found.files_searched == 1 { "" } else { "s" },
                if found.truncated {
                    "; more files matched: narrow --prefix or the words"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// Runs a `wsp sessions` subcommand.
pub async fn run_sessions(args: SessionsArgs) -> Result<(), Failure> {
    args.remote.keyed(sessions(&args)).await
}

async fn sessions(args: &SessionsArgs) -> Result<(), Failure> {
    let client = args.remote.client().await?;
    let path =
        session_index_path(&args.agent).map_err(|e| Failure::invalid(format!("--agent: {e}")))?;
    match &args.command {
        SessionsCommand::Ls => {
            let index = match client.get(&path, None).await {
                Ok(file) => parse(&path, &file.content)?,
                Err(Error::Api(e)) if e.code() == Some(ErrorCode::NotFound) => {
                    SessionIndex::default()
                }
                Err(e) => return Err(Failure::remote(e)),
            };
            if args.remote.json {
                return print_json(&index);
            }
            for s in &index.sessions {
                outln!(
                    "{}\t{}\t{}\t{}",
                    s.id,
                    s.started_at.to_rfc3339(),
                    s.updated_at.to_rfc3339(),
                    s.summary.as_deref().unwrap_or_default()
                )?;
            }
        }
        SessionsCommand::Record { id, summary } => {
            if !wsp_context::is_session_id(id) {
                return Err(Failure::invalid(format!(
                    "session id {id:?} must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
                )));
            }
            let (index, added) = record(&client, &path, id, summary.as_deref()).await?;
            if args.remote.json {
                return print_json(&index);
            }
            outln!(
                "{} session {id} in {} ({} sessions)",
                if added { "recorded" } else { "updated" },
                path.as_str(),
                index.sessions.len()
            )?;
        }
    }
    Ok(())
}

fn parse(path: &wsp_types::WorkspacePath, text: &str) -> Result<SessionIndex, Failure> {
    SessionIndex::from_text(text).map_err(|e| {
        CliError(format!(
            "{} is not a session index ({e}); fix it with wsp files put or remove it",
            path.as_str()
        ))
        .into()
    })
}

/// Adds or updates the session with conditional writes, reading again after a conflict.
async fn record(
    client: &Client,
    path: &wsp_types::WorkspacePath,
    id: &str,
    summary: Option<&str>,
) -> Result<(SessionIndex, bool), Failure> {
    let retry = RetryPolicy::default();
    for attempt in 1..=retry.max_attempts {
        let (mut index, etag) = match client.get(path, None).await {
            Ok(file) => (parse(path, &file.content)?, file.etag.clone()),
            Err(Error::Api(e)) if e.code() == Some(ErrorCode::NotFound) => {
                (SessionIndex::default(), None)
            }
            Err(e) => return Err(Failure::remote(e)),
        };
        let added = index.record(&SessionUpdate {
            id: id.to_owned(),
            at: Utc::now(),
            summary: summary.map(str::to_owned),
        });
        let text = index.to_text();
        let options = PutOptions {
            content_type: Some("application/json".into()),
            create_only: etag.is_none(),
            if_match: etag.map(ETag::from_wire),
            idempotency_key: None,
        };
        match client.put(path, text, options).await {
            Ok(_) => return Ok((index, added)),
            Err(Error::Api(e)) if e.code() == Some(ErrorCode::WorkspaceConflict) => {
                tokio::time::sleep(retry.backoff(attempt)).await;
            }
            Err(e) => return Err(Failure::remote(e)),
        }
    }
    Err(CliError(format!(
        "{} kept changing under {} attempts; try again",
        path.as_str(),
        retry.max_attempts
    ))
    .into())
}
