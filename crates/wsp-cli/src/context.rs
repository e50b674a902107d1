//! `wsp context render`: the run-start context block of a workspace on a running host, read over
//! HTTP (the live files, or a run's snapshot), or of a workspace folder on disk (`--dir`), and
//! assembled by `wsp-context`.

use clap::{ArgGroup, Args, Subcommand};
use wsp_client::{Client, Error};
use wsp_context::{
    ContextConfig, ContextReport, ContextSource, DEFAULT_BUDGET_TOKENS, DirectorySource, Entry,
    EntryOutcome, ReadOutcome, Refusal, SessionContext, SourceError, SourceFuture, assemble,
};
use wsp_types::{ErrorCode, WorkspacePath, WorkspacePrefix};

use crate::CliError;
use crate::failure::Failure;
use crate::out::{errln, out, outln};

#[derive(Debug, Args)]
pub struct ContextArgs {
    #[command(subcommand)]
    command: ContextCommand,
}

#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// Print the context an agent loads before a turn: AGENTS.md, MEMORY.md, knowledge/, extra
    /// files and an index of skills and subagents, within a token budget that is never exceeded.
    /// A one-line summary goes to standard error.
    Render(RenderArgs),
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("view").args(["run", "live", "dir"])))]
struct RenderArgs {
    /// Base URL of the host.
    #[arg(long, env = "WSP_URL", default_value = "http://127.0.0.1:8787")]
    url: String,
    /// API key (sent as a bearer token).
    #[arg(long, env = "WSP_API_KEY", hide_env_values = true)]
    key: Option<String>,
    #[command(flatten)]
    tls: crate::files::CaCertArg,
    /// Read the snapshot of this run (what the run sees).
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// Read the live workspace (the default).
    #[arg(long)]
    live: bool,
    /// Read a workspace folder on disk instead of a host (seed 003's layout; without a value,
    /// `.agentscope/workspace`). Files are read inside it only: a link leaving it is skipped.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        default_missing_value = ".agentscope/workspace"
    )]
    dir: Option<std::path::PathBuf>,
    /// The budget, in tokens (estimated as characters / 4).
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_BUDGET_TOKENS)]
    budget: usize,
    /// Extra workspace files to load after knowledge/, in order.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    extra: Vec<String>,
    /// Open the block with seed 003's `## Session Context` (today's date in UTC, the
    /// workspace, and the session id when one is given).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    session: Option<String>,
    /// Add seed 003's `## Workspace guidance` (how the workspace is laid out and kept).
    #[arg(long)]
    guidance: bool,
    /// Never exceed the budget, even to load AGENTS.md in full (by default AGENTS.md is never
    /// cut: alone over the budget, it is loaded anyway and the output opens with
    /// `[OVER BUDGET: ...]`).
    #[arg(long)]
    strict_budget: bool,
    /// Print the report (what was included, truncated, skipped and why) as JSON instead of the
    /// context.
    #[arg(long)]
    json: bool,
}

/// The workspace on a host, live or as a run sees it.
struct HttpSource {
    client: Client,
    run: Option<String>,
    /// The first failure of the host, reported as it is when the assembly fails.
    failure: std::sync::Mutex<Option<Failure>>,
}

impl HttpSource {
    /// `e` for the assembly, kept (when it is the first) for the report.
    fn unavailable(&self, e: Error) -> SourceError {
        let failure = Failure::remote(e);
        let error = SourceError::Unavailable(failure.message().to_owned());
        let mut first = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(failure);
        error
    }
}

impl ContextSource for HttpSource {
    fn describe(&self) -> String {
        match &self.run {
            Some(id) => format!("run {id} at {}", self.client.base_url()),
            None => format!("live workspace at {}", self.client.base_url()),
        }
    }

    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>> {
        Box::pin(async move {
            let prefix = Some(prefix.as_str());
            let list = match &self.run {
                Some(id) => self.client.list_run_files(id, prefix).await,
                None => self.client.list(prefix).await,
            }
            .map_err(|e| self.unavailable(e))?;
            Ok(list
                .files
                .into_iter()
                .map(|f| Entry { path: f.path })
                .collect())
        })
    }

    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome> {
        Box::pin(async move {
            let got = match &self.run {
                Some(id) => self.client.get_run_file(id, path).await,
                None => self.client.get(path, None).await,
            };
            match got {
                Ok(file) if file.encoding().is_binary() => {
                    Ok(ReadOutcome::Refused(Refusal::Binary {
                        content_type: file.content_type,
                    }))
                }
                Ok(file) => Ok(ReadOutcome::Found(file.content)),
                Err(e) if e.code() == Some(ErrorCode::NotFound) => Ok(ReadOutcome::Missing),
                Err(e) => Err(self.unavailable(e)),
            }
        })
    }
}

/// A run's files can be read while it runs; once it ended, its snapshot is gone.
async fn check_run_is_running(client: &Client, id: &str) -> Result<(), Failure> {
    let run = client
        .get_run(id)
        .await
        .map_err(|e| Failure::remote(e).about(&format!("run {id}")))?;
    if run.ended_at.is_some() {
        return Err(CliError(format!(
            "run {id} has ended; its workspace snapshot is gone"
        ))
        .into());
    }
    Ok(())
}

/// Runs a `wsp context` subcommand.
pub async fn run(args: ContextArgs) -> Result<(), Failure> {
    match args.command {
        ContextCommand::Render(args) => {
            let keyless = crate::files::keyless(args.key.as_deref());
            render(args)
                .await
                .map_err(|f| if keyless { f.sent_without_key() } else { f })
        }
    }
}

async fn render(args: RenderArgs) -> Result<(), Failure> {
    let session = match args.session.as_deref() {
        None => None,
        Some(id) => {
            let id = (!id.is_empty()).then(|| id.to_owned());
            if let Some(id) = &id
                && !wsp_context::is_session_id(id)
            {
                return Err(CliError(format!(
                    "--session {id:?}: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
                ))
                .into());
            }
            Some(SessionContext::today().with_session_id(id))
        }
    };
    let mut config = ContextConfig::new(args.budget)
        .with_session(session)
        .with_guidance(args.guidance)
        .with_strict_budget(args.strict_budget);
    for raw in &args.extra {
        let path = WorkspacePath::parse(raw)
            .map_err(|e| CliError(format!("invalid extra path {raw:?}: {e}")))?;
        config = config.extra(path);
    }
    if let Some(dir) = &args.dir {
        let source = DirectorySource::open(dir).map_err(|e| {
            CliError(format!(
                "cannot open the workspace folder {}: {e}",
                dir.display()
            ))
        })?;
        let ctx = assemble(&source, &config)
            .await
            .map_err(|e| CliError(e.to_string()))?;
        return print_rendered(&ctx, args.json);
    }
    let (client, _) =
        crate::files::connect(args.tls.client(&args.url, args.key.as_deref())?).await?;
    if let Some(id) = &args.run {
        check_run_is_running(&client, id).await?;
    }
    let source = HttpSource {
        client,
        run: args.run.clone(),
        failure: std::sync::Mutex::default(),
    };
    let ctx = match assemble(&source, &config).await {
        Ok(ctx) => ctx,
        Err(e) => {
            let first = source
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            return Err(first.unwrap_or_else(|| CliError(e.to_string()).into()));
        }
    };
    // A run that ended while it was read answers 404 for every file: that is not "missing".
    if let Some(id) = &args.run
        && has_missing(&ctx.report)
    {
        check_run_is_running(&source.client, id).await?;
    }
    print_rendered(&ctx, args.json)
}

/// The text (or, with `--json`, the report) on standard output, the summary on standard error.
fn print_rendered(ctx: &wsp_context::RenderedContext, json: bool) -> Result<(), Failure> {
    if json {
        outln!("{}", serde_json::to_string_pretty(&ctx.report)?)?;
    } else {
        out!("{}", ctx.text)?;
    }
    errln!("{}", ctx.report.summary());
    Ok(())
}

fn has_missing(report: &ContextReport) -> bool {
    report
        .entries
        .iter()
        .any(|e| e.outcome == EntryOutcome::Missing)
}
