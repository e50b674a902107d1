//! `wsp`: serve agent workspaces, manage keys, read and write files, run conformance.
//!
//! **Invariant:** thin. This binary parses flags, wires the library crates together and
//! prints; it holds no protocol logic of its own. Everything it prints goes through [`out`]
//! (a closed standard output ends a command quietly; control characters from data never reach
//! a terminal), and every failure through [`failure`] (one line or one JSON object, and the
//! exit status of its kind).

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agents;
mod backup;
mod completions;
mod config;
mod conn;
mod context;
mod failure;
mod files;
mod keys;
mod lifecycle;
mod listen;
mod location;
mod logbuf;
mod mcp;
mod media;
mod memory;
mod out;
mod runs;
mod serve;
mod sync;
mod tree;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Agent workspaces: a versioned, tenant-scoped file store speaking the OpenWOP wire.
#[derive(Debug, Parser)]
#[command(name = "wsp", version, about, after_help = failure::EXIT_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(serve::ServeArgs),
    /// Create, list and revoke API keys in a data directory.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// List, read, write, delete and inspect workspace files on a running host.
    Files(files::FilesArgs),
    /// Assemble the run-start context of a workspace on a running host, within a token budget.
    Context(context::ContextArgs),
    /// Append to the daily memory log and search the workspace on a running host.
    Memory(memory::MemoryArgs),
    /// Record and list an agent's sessions in its session index on a running host.
    Sessions(memory::SessionsArgs),
    /// Start, list, show and cancel runs, and read the files of a run's snapshot, on a running
    /// host.
    Runs(runs::RunsArgs),
    /// The agent inventory and publishing on a running host; pack approvals in a data directory.
    #[command(subcommand)]
    Agents(agents::AgentsCommand),
    /// Test any host, by URL, against the protocol.
    Conformance(wsp_conformance::ConformanceArgs),
    /// Serve the agent's virtual filesystem (or its keyed items) as an MCP server.
    Mcp(mcp::McpArgs),
    /// Copy a SQLite data directory consistently, while the server runs.
    Backup(backup::BackupArgs),
    /// Put a `wsp backup` into a data directory no server has open.
    Restore(backup::RestoreArgs),
    /// Print the shell completion script of `wsp` for bash, zsh, fish, PowerShell or elvish.
    Completions(completions::CompletionsArgs),
    /// Write the man pages of `wsp` and of each subcommand into a directory.
    Man(completions::ManArgs),
}

/// A failure to report on one line before exiting with status 1 (see [`failure::Failure`] for
/// the others).
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return failure::usage(e),
    };
    let json = failure::json_requested();
    // An MCP server on stdio serves one client, one message at a time: one thread answers it
    // without a hand-off between threads per message. Everything else (HTTP servers, clients)
    // gets a worker per core.
    let mut builder = match &cli.command {
        Command::Mcp(args) if args.is_stdio() => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            return failure::Failure::from(CliError(format!(
                "cannot start the async runtime: {e}"
            )))
            .report(json);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args).await?,
            Command::Keys(cmd) => keys::run(cmd).await?,
            Command::Files(args) => files::run(args).await?,
            Command::Agents(cmd) => agents::run(cmd).await?,
            Command::Context(args) => context::run(args).await?,
            Command::Memory(args) => memory::run_memory(args).await?,
            Command::Sessions(args) => memory::run_sessions(args).await?,
            Command::Runs(args) => runs::run(args).await?,
            Command::Mcp(args) => mcp::run(args).await?,
            Command::Backup(args) => backup::backup(args).await?,
            Command::Restore(args) => backup::restore(args).await?,
            Command::Completions(args) => completions::completions(&args)?,
            Command::Man(args) => completions::man(&args)?,
            Command::Conformance(args) => return conformance(args).await,
        }
        Ok::<_, failure::Failure>(ExitCode::SUCCESS)
    });
    // Log lines still waiting in the buffer come before the final report.
    logbuf::flush();
    match result {
        Ok(code) => code,
        Err(e) => e.report(json),
    }
}

/// `wsp conformance`: `wsp_conformance::run_cli`, printing through [`out`]. Its own statuses:
/// 0 when every scenario passed, 1 when one failed, 2 when the run could not be made.
async fn conformance(args: wsp_conformance::ConformanceArgs) -> Result<ExitCode, failure::Failure> {
    if args.list {
        out::text(&wsp_conformance::catalogue_text())?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = match args.to_config() {
        Ok(config) => config,
        Err(e) => {
            out::errln!("wsp conformance: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = wsp_conformance::run(&config).await;
    out::text(&report.summary_text())?;
    Ok(match wsp_conformance::write_reports(&args, &report) {
        Ok(()) if report.success() => ExitCode::SUCCESS,
        Ok(()) => ExitCode::FAILURE,
        Err(e) => {
            out::errln!("wsp conformance: {e}");
            ExitCode::from(2)
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
