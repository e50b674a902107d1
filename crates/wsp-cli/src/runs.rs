//! `wsp runs`: runs on a running host, through `wsp-client` (`/v1/runs`): start one (a pinned
//! snapshot of the workspace), list them, show one, cancel one, and read the files its
//! snapshot holds.

use clap::{Args, Subcommand};
use wsp_types::wire::RunSummary;

use crate::failure::Failure;
use crate::files::{RemoteArgs, parse_path};
use crate::out::outln;

/// `wsp runs`'s arguments.
#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    #[command(subcommand)]
    command: RunsCommand,
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// Start a run: pin a snapshot of the workspace as it is now (POST /v1/runs); prints its
    /// id.
    Start {
        /// The workflow the run is for (a label: wsp runs no workflow itself).
        #[arg(long, value_name = "ID")]
        workflow: String,
    },
    /// The runs of the key's workspace, newest first (GET /v1/runs): id, status, workflow,
    /// started, ended.
    Ls {
        /// Most runs to list (1 to 200); all of them when absent.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=200))]
        limit: Option<u32>,
    },
    /// One run (GET /v1/runs/{runId}): its status and the files its snapshot holds.
    Show {
        /// The run's id.
        run_id: String,
    },
    /// End a run and release its snapshot (POST /v1/runs/{runId}/cancel).
    Cancel {
        /// The run's id.
        run_id: String,
    },
    /// The files of a run's snapshot (GET /v1/runs/{runId}/workspace/files): path, version,
    /// content type.
    Files {
        /// The run's id.
        run_id: String,
        /// Only paths starting with this.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Print a file as the run's snapshot holds it (GET
    /// /v1/runs/{runId}/workspace/files/{path}): its exact bytes.
    Get {
        /// The run's id.
        run_id: String,
        /// Workspace path, e.g. AGENTS.md.
        path: String,
    },
}

/// The failure of a call about the run `id`, saying so.
fn about(id: &str) -> impl Fn(wsp_client::Error) -> Failure + '_ {
    move |e| Failure::remote(e).about(&format!("run {id}"))
}

/// Runs a `wsp runs` subcommand.
pub async fn run(args: RunsArgs) -> Result<(), Failure> {
    args.remote.keyed(runs(&args)).await
}

async fn runs(args: &RunsArgs) -> Result<(), Failure> {
    let path = match &args.command {
        RunsCommand::Get { path, .. } => Some(parse_path(path)?),
        _ => None,
    };
    let json = args.remote.json;
    let client = args.remote.client().await?;
    match &args.command {
        RunsCommand::Start { workflow } => {
            let created = client.create_run(workflow).await.map_err(Failure::remote)?;
            if json {
                return crate::out::json(&created);
            }
            outln!("{}\t{}", created.run_id, created.status)?;
        }
        RunsCommand::Ls { limit } => {
            let mut runs: Vec<RunSummary> = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let want = limit.map(|l| l - runs.len() as u32);
                let page = client
                    .list_runs(want.or(Some(200)), cursor.as_deref())
                    .await
                    .map_err(Failure::remote)?;
                runs.extend(page.runs);
                cursor = page.next_cursor;
                if cursor.is_none() || limit.is_some_and(|l| runs.len() as u32 >= l) {
                    break;
                }
            }
            if json {
                return crate::out::json(&serde_json::json!({ "runs": runs }));
            }
            for r in &runs {
                outln!(
                    "{}\t{}\t{}\t{}\t{}",
                    r.run_id,
                    r.status,
                    r.workflow_id,
                    r.started_at.to_rfc3339(),
                    r.ended_at
                        .map_or_else(|| "-".to_owned(), |t| t.to_rfc3339())
                )?;
            }
        }
        RunsCommand::Show { run_id } => {
            let run = client.get_run(run_id).await.map_err(about(run_id))?;
            if json {
                return crate::out::json(&run);
            }
            outln!("run:       {}", run.run_id)?;
            outln!("status:    {}", run.status)?;
            outln!("workflow:  {}", run.workflow_id)?;
            outln!(
                "owner:     tenant {}, workspace {}",
                run.owner.tenant,
                run.owner.workspace
            )?;
            outln!("started:   {}", run.started_at.to_rfc3339())?;
            if let Some(ended) = run.ended_at {
                outln!("ended:     {}", ended.to_rfc3339())?;
            }
            outln!("files:     {}", run.workspace.len())?;
            for entry in &run.workspace {
                outln!("  {}\tv{}", entry.path, entry.version)?;
            }
        }
        RunsCommand::Cancel { run_id } => {
            let run = client.cancel_run(run_id).await.map_err(about(run_id))?;
            if json {
                return crate::out::json(&run);
            }
            outln!("{}\t{}", run.run_id, run.status)?;
        }
        RunsCommand::Files { run_id, prefix } => {
            let list = client
                .list_run_files(run_id, prefix.as_deref())
                .await
                .map_err(about(run_id))?;
            if json {
                return crate::out::json(&list);
            }
            for f in &list.files {
                outln!("{}\tv{}\t{}", f.path, f.version, f.content_type)?;
            }
        }
        RunsCommand::Get { run_id, .. } => {
            let path = path.expect("parsed above");
            let file = client
                .get_run_file(run_id, &path)
                .await
                .map_err(about(run_id))?;
            if json {
                return crate::out::json(&file);
            }
            let bytes = file.bytes().map_err(|e| {
                crate::CliError(format!("the host sent a body that cannot be decoded: {e}"))
            })?;
            crate::out::raw(&bytes)?;
        }
    }
    Ok(())
}
