//! `wsp agents`: the agent inventory and publishing on a running host (through `wsp-client`),
//! and pack approvals where the server keeps them.
//!
//! Approvals made here live in `<data dir>/approvals.sqlite3`, or with `--store postgres://...`
//! in the PostgreSQL store's database, shared by every replica. A running `wsp serve` reads them
//! on every inventory request, so an approval or a revocation counts at once, added to the
//! approvals of the configuration file (which only an edit of that file and a restart change).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use wsp_client::Client;
use wsp_server::ConfigAgentRegistry;
use wsp_store::approvals::ApprovalRegistry;
use wsp_store_postgres::PgApprovals;
use wsp_store_sqlite::SqliteApprovals;
use wsp_types::wire::PublishRequest;
use wsp_types::{Owner, OwnerId, WorkspacePath};

use crate::CliError;
use crate::config::FileConfig;
use crate::failure::Failure;
use crate::location::{StoreLocation, unusable_postgres};
use crate::out::outln;

/// The approvals file inside a data directory.
pub fn approvals_file(data: &Path) -> PathBuf {
    data.join("approvals.sqlite3")
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the agents your key may use on a running host (GET /v1/agents).
    Ls(HttpArgs),
    /// Show one agent (GET /v1/agents/{agentId}).
    Get {
        #[command(flatten)]
        http: HttpArgs,
        /// The agent's id.
        agent_id: String,
    },
    /// Copy one of your files into a shared agent's workspace (one way: private to shared).
    Publish {
        #[command(flatten)]
        http: HttpArgs,
        /// The file to copy.
        path: String,
        /// The shared agent whose workspace receives the copy.
        #[arg(long = "to", value_name = "AGENT_ID")]
        target_agent_id: String,
        /// Where the copy lands: under the shared agent's publish prefix (default: inbox/PATH).
        #[arg(long)]
        target_path: Option<String>,
    },
    /// Approve packs for a tenant's workspace (in the data directory; a running server sees it
    /// at once).
    Approve(ApprovalArgs),
    /// Withdraw approvals made with `wsp agents approve`.
    Revoke(ApprovalArgs),
    /// List approvals: those of the data directory, and with --config those of the file.
    Approvals(ListApprovalsArgs),
}

/// Where the host is and who asks.
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Base URL of the host.
    #[arg(long, env = "WSP_URL", default_value = "http://127.0.0.1:8787")]
    url: String,
    /// API key (sent as a bearer token).
    #[arg(long, env = "WSP_API_KEY", hide_env_values = true)]
    key: Option<String>,
    #[command(flatten)]
    tls: crate::files::CaCertArg,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

/// The approvals in the PostgreSQL store, when `--store` names one.
async fn postgres_approvals(
    location: &StoreLocation,
) -> Result<Option<Box<dyn ApprovalRegistry>>, CliError> {
    let Some((url, options)) = location.postgres()? else {
        return Ok(None);
    };
    let approvals = PgApprovals::connect(url, options)
        .await
        .map_err(unusable_postgres)?;
    Ok(Some(Box::new(approvals)))
}

/// The stored approvals, creating the data directory and its file if missing.
async fn open_or_create_approvals(
    location: &StoreLocation,
) -> Result<Box<dyn ApprovalRegistry>, CliError> {
    if let Some(pg) = postgres_approvals(location).await? {
        return Ok(pg);
    }
    location.create_data_dir()?;
    Ok(Box::new(SqliteApprovals::open(&approvals_file(
        &location.data,
    ))?))
}

/// The stored approvals; `None` when the data directory has no approvals file yet.
async fn existing_approvals(
    location: &StoreLocation,
) -> Result<Option<Box<dyn ApprovalRegistry>>, CliError> {
    if let Some(pg) = postgres_approvals(location).await? {
        return Ok(Some(pg));
    }
    let file = approvals_file(&location.data);
    if !file.is_file() {
        return Ok(None);
    }
    Ok(Some(Box::new(SqliteApprovals::open(&file)?)))
}

/// Where the approvals are, for messages (never the store URL, which may hold a password).
fn describe(location: &StoreLocation) -> String {
    match location.postgres() {
        Ok(Some(_)) => format!("the PostgreSQL store (schema {})", location.pg_schema),
        _ => approvals_file(&location.data).display().to_string(),
    }
}

#[derive(Debug, Args)]
pub struct ApprovalArgs {
    #[command(flatten)]
    location: StoreLocation,
    /// The tenant whose workspace approves.
    #[arg(long)]
    tenant: String,
    /// The workspace within the tenant.
    #[arg(long)]
    workspace: String,
    /// The server's configuration file: packs must be declared in its agents table.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Pack names.
    #[arg(required = true, value_name = "PACK")]
    packs: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ListApprovalsArgs {
    #[command(flatten)]
    location: StoreLocation,
    /// The server's configuration file, to list its approvals too.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

async fn client(http: &HttpArgs) -> Result<Client, Failure> {
    Ok(
        crate::files::connect(http.tls.client(&http.url, http.key.as_deref())?)
            .await?
            .0,
    )
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    crate::out::json(value)
}

/// The `[agents]` section of `config`, refused when the file has none.
fn registry_of(config: &Path) -> Result<ConfigAgentRegistry, CliError> {
    FileConfig::load(config)?.agents().cloned().ok_or_else(|| {
        CliError(format!(
            "{} has no [agents] section, so no packs to approve",
            config.display()
        ))
    })
}

fn owner(a: &ApprovalArgs) -> Result<Owner, CliError> {
    Owner::parse(&a.tenant, &a.workspace)
        .map_err(|e| CliError(format!("--tenant/--workspace: {e}")))
}

/// Runs a `wsp agents` subcommand.
pub async fn run(cmd: AgentsCommand) -> Result<(), Failure> {
    let keyless = match &cmd {
        AgentsCommand::Ls(http)
        | AgentsCommand::Get { http, .. }
        | AgentsCommand::Publish { http, .. } => crate::files::keyless(http.key.as_deref()),
        _ => false,
    };
    run_with(cmd)
        .await
        .map_err(|f| if keyless { f.sent_without_key() } else { f })
}

async fn run_with(cmd: AgentsCommand) -> Result<(), Failure> {
    match cmd {
        AgentsCommand::Ls(http) => {
            let list = client(&http)
                .await?
                .agents()
                .await
                .map_err(Failure::remote)?;
            if http.json {
                return print_json(&list);
            }
            outln!("AGENT\tPACK\tVERSION\tMODEL CLASS\tPERSONA")?;
            for a in &list.agents {
                outln!(
                    "{}\t{}\t{}\t{}\t{}",
                    a.agent_id,
                    a.pack_name,
                    a.pack_version,
                    a.model_class,
                    a.persona
                )?;
            }
        }
        AgentsCommand::Get { http, agent_id } => {
            let a = client(&http)
                .await?
                .agent(&agent_id)
                .await
                .map_err(Failure::remote)?;
            if http.json {
                return print_json(&a);
            }
            outln!("agent:       {}", a.agent_id)?;
            outln!("persona:     {}", a.persona)?;
            outln!("label:       {}", a.label)?;
            outln!("model class: {}", a.model_class)?;
            outln!("pack:        {} {}", a.pack_name, a.pack_version)?;
            outln!("tools:       {}", a.tool_allowlist.join(", "))?;
            outln!("hand-offs:   {}", a.has_handoff_schemas)?;
            if let Some(d) = &a.description {
                outln!("description: {d}")?;
            }
        }
        AgentsCommand::Publish {
            http,
            path,
            target_agent_id,
            target_path,
        } => {
            let parse = |raw: &str| {
                WorkspacePath::parse(raw)
                    .map_err(|e| CliError(format!("invalid path {raw:?}: {e}")))
            };
            let request = PublishRequest {
                path: parse(&path)?,
                target_agent_id,
                target_path: target_path.as_deref().map(parse).transpose()?,
            };
            let done = client(&http)
                .await?
                .publish(&request, None)
                .await
                .map_err(Failure::remote)?;
            if http.json {
                return print_json(&done);
            }
            outln!(
                "published {path} to {} as {}\tv{}",
                done.target_agent_id,
                done.path.as_str(),
                done.version
            )?;
        }
        AgentsCommand::Approve(a) => {
            let owner = owner(&a)?;
            check_packs(&a)?;
            let store = open_or_create_approvals(&a.location).await?;
            for pack in &a.packs {
                if store.approve(&owner, pack).await? {
                    outln!(
                        "approved pack {pack} for tenant {} workspace {}",
                        owner.tenant,
                        owner.workspace
                    )?;
                } else {
                    outln!(
                        "pack {pack} was already approved for tenant {} workspace {}",
                        owner.tenant,
                        owner.workspace
                    )?;
                }
            }
        }
        AgentsCommand::Revoke(a) => {
            let owner = owner(&a)?;
            let configured = match &a.config {
                Some(path) => Some((path, registry_of(path)?)),
                None => None,
            };
            let store = existing_approvals(&a.location).await?;
            for pack in &a.packs {
                let removed = match &store {
                    Some(s) => s.revoke(&owner, pack).await?,
                    None => false,
                };
                let in_file = configured.as_ref().filter(|(_, reg)| {
                    reg.configured_approvals()
                        .any(|(o, p)| *o == owner && p == pack)
                });
                match (removed, in_file) {
                    (_, Some((path, _))) => {
                        return Err(CliError(format!(
                            "pack {pack} stays approved for tenant {} workspace {}: {} approves it; remove it there{}",
                            owner.tenant,
                            owner.workspace,
                            path.display(),
                            if removed {
                                " (the stored approval was removed)"
                            } else {
                                ""
                            }
                        ))
                        .into());
                    }
                    (true, None) => outln!(
                        "revoked pack {pack} for tenant {} workspace {}",
                        owner.tenant,
                        owner.workspace
                    )?,
                    (false, None) => {
                        return Err(CliError(format!(
                            "no stored approval of pack {pack} for tenant {} workspace {} in {}",
                            owner.tenant,
                            owner.workspace,
                            describe(&a.location)
                        ))
                        .into());
                    }
                }
            }
        }
        AgentsCommand::Approvals(a) => {
            let mut rows: Vec<(Owner, String, String)> = Vec::new();
            if let Some(path) = &a.config {
                for (owner, pack) in registry_of(path)?.configured_approvals() {
                    rows.push((owner.clone(), pack.to_owned(), "config".into()));
                }
            }
            if let Some(store) = existing_approvals(&a.location).await? {
                for x in store.list().await? {
                    rows.push((
                        x.owner,
                        x.pack,
                        format!("stored {}", x.approved_at.to_rfc3339()),
                    ));
                }
            }
            rows.sort();
            if a.json {
                let out: Vec<_> = rows
                    .iter()
                    .map(|(o, pack, source)| {
                        serde_json::json!({
                            "tenant": o.tenant.as_str(), "workspace": o.workspace.as_str(),
                            "pack": pack, "source": source.split(' ').next(),
                        })
                    })
                    .collect();
                return print_json(&out);
            }
            outln!("TENANT\tWORKSPACE\tPACK\tSOURCE")?;
            for (o, pack, source) in rows {
                outln!("{}\t{}\t{pack}\t{source}", o.tenant, o.workspace)?;
            }
        }
    }
    Ok(())
}

/// Pack names must be identifiers and, with --config, declared in its agents table.
fn check_packs(a: &ApprovalArgs) -> Result<(), CliError> {
    for pack in &a.packs {
        OwnerId::parse(pack).map_err(|e| CliError(format!("pack {pack:?}: {e}")))?;
    }
    if let Some(path) = &a.config {
        let registry = registry_of(path)?;
        if let Some(pack) = a.packs.iter().find(|p| !registry.has_pack(p)) {
            return Err(CliError(format!(
                "pack {pack:?} is not declared in the [agents] section of {}",
                path.display()
            )));
        }
    }
    Ok(())
}
