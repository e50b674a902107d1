//! `wsp mcp`: the agent's virtual filesystem (or its keyed items) as an MCP server.
//!
//! In stdio mode stdout is the MCP channel, so everything else goes to stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use wsp_mcp::McpServer;
use wsp_store::{RedactingStore, SecretSource, TenantSecrets, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_types::OwnerId;
use wsp_vfs::{AgentIdentity, ItemsProfile, MountTable, SharedAgentList, Vfs};

use crate::CliError;
use crate::config::{FileConfig, LimitArgs};
use crate::failure::Failure;
use crate::location::unusable_data_dir;
use crate::out::{errln, outln};

/// Which tools the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileKind {
    /// `ls`, `read_file`, `write_file`, `edit_file`, `delete_file`, `glob`, `grep`, as the
    /// mount table's scopes allow.
    Files,
    /// `workspace_list`, `workspace_read`, `workspace_write`, `workspace_delete` and
    /// `workspace_publish` over the agent's keyed items.
    Items,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The mount table (TOML `[[workspace]]` entries); required for `--profile files`.
    #[arg(long)]
    mounts: Option<PathBuf>,
    /// Refuse a mount table in which two Workspaces reach the same host directory or virtual
    /// namespace under different scopes (a read-only view the agent could change through a
    /// writable one); without it, each is a warning on standard error.
    #[arg(long)]
    strict: bool,
    /// Also offer the MCP prompt `run_start_context`: the run-start context (AGENTS.md,
    /// MEMORY.md, knowledge/, the skills and subagents index) of the Workspace mounted at this
    /// path, e.g. /workspace, read with the agent's own scopes (`--profile files`); and, where
    /// the scopes allow, the tools memory_append (read-write memory/), memory_search and
    /// session_record (read-write agents/<--agent>/sessions/).
    #[arg(long, value_name = "PATH")]
    context_root: Option<String>,
    /// The tool profile.
    #[arg(long, value_enum, default_value_t = ProfileKind::Files)]
    profile: ProfileKind,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (port 0 picks a free port).
    /// Clients send `Authorization: Bearer <token>`: the token is WSP_MCP_TOKEN (at least 32
    /// visible ASCII characters) or, when that is unset, a fresh one printed on start.
    /// ADDR is HOST:PORT, HOST an IP address or a name such as localhost.
    #[arg(long, value_name = "ADDR", value_parser = crate::listen::ListenAddr::parse)]
    http: Option<crate::listen::ListenAddr>,
    /// Data directory (created if needed): virtual mounts and items live in its SQLite file.
    #[arg(long, default_value = "./wsp-data")]
    data: PathBuf,
    /// The configuration file of `wsp serve` (TOML): the `[[secrets]]` of `--tenant` are
    /// redacted from every write (WSR-1), as the server sharing the data directory does.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    /// Tenant that owns the virtual namespaces and the items.
    #[arg(long, default_value = "default")]
    tenant: String,
    /// The agent: recorded as the author of its writes; with `--context-root`, whose session
    /// index session_record keeps; with `--profile items`, whose items.
    #[arg(long, default_value = "agent")]
    agent: String,
    /// The agent is shared (items live in `agent-<ID>`; it cannot publish). Otherwise it is
    /// private to `--user` (items live in `user-<USER>`).
    #[arg(long)]
    shared: bool,
    /// The user a private agent works for (`--profile items`).
    #[arg(long, default_value = "default")]
    user: String,
    /// A shared agent a private agent may publish to (`--profile items`; repeatable).
    #[arg(long = "publish-to", value_name = "AGENT")]
    publish_to: Vec<String>,
    #[command(flatten)]
    conn: crate::conn::McpConnArgs,
}

impl McpArgs {
    /// The server speaks MCP on stdin and stdout (no `--http`).
    pub fn is_stdio(&self) -> bool {
        self.http.is_none()
    }
}

/// Runs the server until stdin closes (stdio) or until Ctrl-C or SIGTERM (HTTP).
pub async fn run(args: McpArgs) -> Result<(), Failure> {
    crate::lifecycle::init_logging(false);
    if args.is_stdio() && args.conn.tls_requested() {
        return Err(CliError(
            "--tls-cert and --tls-key are for --http: MCP over stdio has no connection to secure"
                .into(),
        )
        .into());
    }
    // Before anything is created.
    let tls = args.conn.tls()?;
    let secrets: Arc<dyn SecretSource> = match &args.config {
        Some(path) => Arc::new(
            FileConfig::load(path)
                .and_then(|config| config.secrets())
                .map_err(|e| CliError(one_line(&e.0)))?,
        ),
        None => Arc::new(TenantSecrets::default()),
    };
    let server = match args.profile {
        ProfileKind::Files => files_server(&args, secrets)?,
        ProfileKind::Items => items_server(&args, secrets)?,
    };
    tracing::info!(
        profile = ?args.profile,
        tools = %server.tool_names().join(","),
        "wsp mcp ready"
    );
    match args.http {
        None => server
            .serve_stdio()
            .await
            .map_err(|e| CliError(e.to_string()).into()),
        Some(addr) => {
            let (token, given) = http_token()?;
            let tcp = addr.bind().await?;
            let listener = wsp_mcp::Listener::new(tcp, tls.clone());
            let local = listener.local_addr()?;
            if !local.ip().is_loopback() && tls.is_none() {
                tracing::warn!(
                    "{local} is not a loopback address: MCP over plain HTTP sends the bearer \
                     token unencrypted; serve TLS (--tls-cert, --tls-key) or put TLS in front"
                );
            }
            // Not the MCP channel in HTTP mode: the address and the token are for whoever
            // started us. Always two lines, so a script reads the same shape either way.
            let shutdown = crate::lifecycle::shutdown_signal();
            crate::lifecycle::reload_tls_on_hangup(tls);
            outln!(
                "wsp mcp listening on {}://{local}{}",
                listener.scheme(),
                wsp_mcp::HTTP_PATH
            )?;
            if given {
                outln!("bearer token: from {TOKEN_ENV}")?;
            } else {
                outln!("bearer token: {}", token.expose())?;
            }
            server
                .serve_http(
                    listener,
                    args.conn.http_options(wsp_mcp::HttpAuth::Bearer(token)),
                    shutdown,
                )
                .await
                .map_err(|e| CliError(e.to_string()).into())
        }
    }
}

/// Where `wsp mcp --http` reads its bearer token.
const TOKEN_ENV: &str = "WSP_MCP_TOKEN";

/// The HTTP bearer token: `WSP_MCP_TOKEN` when set (and whether it was), else a fresh one.
fn http_token() -> Result<(wsp_mcp::BearerToken, bool), CliError> {
    let Some(given) = std::env::var_os(TOKEN_ENV) else {
        return Ok((wsp_mcp::BearerToken::generate(), false));
    };
    given
        .into_string()
        .map_err(|_| wsp_mcp::BearerTokenError::NotVisibleAscii)
        .and_then(wsp_mcp::BearerToken::new)
        .map(|token| (token, true))
        .map_err(|e| CliError(format!("{TOKEN_ENV}: {e}")))
}

fn files_server(args: &McpArgs, secrets: Arc<dyn SecretSource>) -> Result<McpServer, CliError> {
    let Some(mounts) = &args.mounts else {
        return Err(CliError(
            "--profile files needs a mount table: --mounts mounts.toml".into(),
        ));
    };
    let table = MountTable::load(mounts).map_err(|e| CliError(one_line(&e.to_string())))?;
    for overlap in table.scope_overlaps() {
        if args.strict {
            return Err(CliError(format!(
                "{}: {overlap} (refused by --strict)",
                mounts.display()
            )));
        }
        errln!("warning: {}: {overlap}", mounts.display());
    }
    let tenant = owner_id("--tenant", &args.tenant)?;
    let mut builder = Vfs::builder(table.clone())
        .tenant(tenant)
        .author(args.agent.clone());
    // Only a table with virtual or overlay mounts needs (and creates) the data directory.
    if table
        .workspaces()
        .iter()
        .any(|ws| ws.mount.namespace().is_some())
    {
        builder = builder.virtual_store(open_store(args, secrets)?);
    }
    let vfs = builder
        .build()
        .map_err(|e| CliError(one_line(&e.to_string())))?;
    let server = McpServer::files(vfs);
    match &args.context_root {
        Some(root) => server
            .with_session_agent(&args.agent)
            .with_context_root(root)
            .map_err(|e| CliError(format!("--context-root: {e}"))),
        None => Ok(server),
    }
}

fn items_server(args: &McpArgs, secrets: Arc<dyn SecretSource>) -> Result<McpServer, CliError> {
    if args.context_root.is_some() {
        return Err(CliError(
            "--context-root is for --profile files: the items profile has no mount table".into(),
        ));
    }
    if args.mounts.is_some() {
        return Err(CliError(
            "--mounts is for --profile files; the items profile keeps the agent's items in its home workspace".into(),
        ));
    }
    let tenant = owner_id("--tenant", &args.tenant)?;
    let agent_id = owner_id("--agent", &args.agent)?;
    let agent = if args.shared {
        if !args.publish_to.is_empty() {
            return Err(CliError(
                "--publish-to needs a private agent: a shared agent cannot publish".into(),
            ));
        }
        AgentIdentity::shared(tenant.clone(), agent_id)
    } else {
        AgentIdentity::private(tenant.clone(), agent_id, owner_id("--user", &args.user)?)
    }
    .map_err(|e| CliError(format!("--agent {:?}: {e}", args.agent)))?;
    let mut shared = SharedAgentList::new(tenant);
    for id in &args.publish_to {
        shared = shared.with(owner_id("--publish-to", id)?);
    }
    let items = ItemsProfile::new(open_store(args, secrets)?, agent, Arc::new(shared));
    Ok(McpServer::items(items))
}

/// `<data>/wsp.sqlite3`, the same file `wsp serve` uses, so a restart keeps every virtual file,
/// under `--max-*` limits, and written through the WSR-1 layer, so every writer (virtual and
/// overlay mounts, the items, publishing) is redacted.
fn open_store(
    args: &McpArgs,
    secrets: Arc<dyn SecretSource>,
) -> Result<Arc<dyn WorkspaceStore>, CliError> {
    let data: &Path = &args.data;
    let fail = |e: &dyn std::fmt::Display| unusable_data_dir(data, e);
    crate::location::prepare_data_dir(data)?;
    let store =
        SqliteStore::open(&data.join("wsp.sqlite3"), args.limits.limits()).map_err(|e| fail(&e))?;
    Ok(Arc::new(RedactingStore::new(Arc::new(store), secrets)))
}

fn owner_id(flag: &str, value: &str) -> Result<OwnerId, CliError> {
    OwnerId::parse(value).map_err(|e| CliError(format!("{flag} {value:?}: {e}")))
}

/// Error messages end the process on one line (a TOML parse error spans several).
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.chars().any(char::is_alphanumeric))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn multi_line_errors_become_one_line() {
        let toml_error = "mount table: TOML parse error at line 2, column 9\n  |\n2 | scope = \n  |         ^\nstring values must be quoted\n";
        assert_eq!(
            one_line(toml_error),
            "mount table: TOML parse error at line 2, column 9; 2 | scope =; string values must be quoted"
        );
        assert_eq!(one_line("plain"), "plain");
    }
}
