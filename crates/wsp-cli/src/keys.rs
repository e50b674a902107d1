//! `wsp keys`: API keys in a data directory's key file or a PostgreSQL store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use wsp_server::AgentRegistry as _;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store::shared::{private_workspace, shared_workspace};
use wsp_store_postgres::PgKeyRegistry;
use wsp_store_sqlite::SqliteKeyRegistry;
use wsp_types::{Owner, Scopes};

use crate::CliError;
use crate::failure::Failure;
use crate::location::{StoreLocation, unusable_postgres};
use crate::out::outln;

/// The key file inside a data directory.
pub fn key_file(data: &Path) -> PathBuf {
    data.join("keys.sqlite3")
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; its plaintext is printed once, as the last line.
    Create(CreateArgs),
    /// List keys (ids and owners; never secrets).
    List(ListArgs),
    /// Revoke a key by id.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    location: StoreLocation,
    /// Tenant the key acts in.
    #[arg(long)]
    tenant: String,
    /// Workspace within the tenant (or give --user and --agent for an agent's key).
    #[arg(long, required_unless_present = "user", conflicts_with_all = ["user", "agent"])]
    workspace: Option<String>,
    /// The user an agent key acts for: a private agent works in `user-<USER>`.
    #[arg(long, requires = "agent")]
    user: Option<String>,
    /// The agent the key acts as. Its workspace is resolved on every request by the server:
    /// `agent-<AGENT>` when the agent is shared, `user-<USER>` otherwise; an agent the server
    /// does not know authenticates to nothing.
    #[arg(long, requires = "user")]
    agent: Option<String>,
    /// The server's configuration file, whose `[agents]` section must declare `--agent`.
    #[arg(
        long,
        help = "The server's configuration file: --agent must be declared in its [agents] section",
        requires = "agent",
        conflicts_with = "workspace",
        value_name = "FILE"
    )]
    config: Option<PathBuf>,
    /// Who acts with the key: the author of every version it writes (default: the agent, or
    /// `key-<ID>`, the key's own id, so that keys are told apart).
    #[arg(long)]
    principal: Option<String>,
    /// Comma-separated scopes (default: workspace:read, workspace:write, agents:read,
    /// runs:create, runs:read; metrics:read, which shows figures about every tenant, only when
    /// named).
    #[arg(long)]
    scopes: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    location: StoreLocation,
    /// The server's configuration file: its `[agents]` section says where each agent key works
    /// (`agent-<AGENT>` for a shared agent, `user-<USER>` otherwise).
    #[arg(long, env = "WSP_CONFIG")]
    config: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    #[command(flatten)]
    location: StoreLocation,
    /// The key id (the 12 hex digits after `wsp_`).
    id: String,
}

/// Opens the key registry at `location`; with `create`, a missing data directory or key file
/// is created.
async fn open_keys(
    location: &StoreLocation,
    create: bool,
) -> Result<Arc<dyn KeyRegistry>, CliError> {
    if let Some((url, options)) = location.postgres()? {
        let registry = PgKeyRegistry::connect(url, options)
            .await
            .map_err(unusable_postgres)?;
        return Ok(Arc::new(registry));
    }
    let file = key_file(&location.data);
    if create {
        location.create_data_dir()?;
    } else if !file.is_file() {
        return Err(CliError(format!(
            "no key file at {} (start `wsp serve --data {}` once, or create a key there first)",
            file.display(),
            location.data.display()
        )));
    }
    Ok(Arc::new(SqliteKeyRegistry::open(&file)?))
}

/// The owner a new key names and the agent it acts as: `--workspace W`, or `--user U --agent
/// ID` (owner `user-U`, which the server replaces by `agent-ID` when the agent is shared).
fn key_owner(a: &CreateArgs) -> Result<(Owner, Option<String>), Failure> {
    match (&a.workspace, &a.user, &a.agent) {
        (Some(workspace), None, None) => Owner::parse(&a.tenant, workspace)
            .map(|o| (o, None))
            .map_err(|e| Failure::invalid(format!("--tenant/--workspace: {e}"))),
        (None, Some(user), Some(agent)) => {
            let tenant = wsp_types::OwnerId::parse(&a.tenant)
                .map_err(|e| Failure::invalid(format!("--tenant: {e}")))?;
            shared_workspace(agent)
                .map_err(|e| Failure::invalid(format!("--agent: {e} (and at most 122 bytes)")))?;
            let workspace = private_workspace(user)
                .map_err(|e| Failure::invalid(format!("--user: {e} (and at most 123 bytes)")))?;
            Ok((Owner::new(tenant, workspace), Some(agent.clone())))
        }
        _ => Err(Failure::invalid(
            "give --workspace, or --user together with --agent",
        )),
    }
}

/// Refuses an agent that the `[agents]` section of `config` does not declare, naming those it
/// does.
async fn check_declared(agent: &str, config: &Path) -> Result<(), CliError> {
    let Some(declared) = declared_agents(config).await? else {
        return Err(CliError(format!(
            "{} has no [agents] section, so no agent to make a key for",
            config.display()
        )));
    };
    if declared.iter().any(|(id, _)| id == agent) {
        return Ok(());
    }
    let names: Vec<&str> = declared.iter().map(|(id, _)| id.as_str()).collect();
    Err(CliError(format!(
        "agent {agent:?} is not declared in the [agents] section of {} (declared: {})",
        config.display(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// The agents the `[agents]` section of `config` declares, and whether each is shared; `None`
/// without the section.
async fn declared_agents(config: &Path) -> Result<Option<Vec<(String, bool)>>, CliError> {
    let file = crate::config::FileConfig::load(config)?;
    let Some(registry) = file.agents() else {
        return Ok(None);
    };
    let agents = registry.agents().await?;
    Ok(Some(agents.into_iter().map(|a| (a.id, a.shared)).collect()))
}

/// Where a key works, as far as `wsp keys list` can tell.
enum Resolved {
    /// Known: the key's own workspace, or its agent's as the configuration declares it.
    Known(String),
    /// An agent key whose agent the configuration does not declare (the server refuses it).
    Undeclared(String),
    /// An agent key listed without the configuration: its workspace, or `shared` if its agent
    /// is shared.
    Unknown {
        /// The shared agent's workspace, `agent-<id>`.
        shared: String,
    },
}

/// Where `record` works, the way the server resolves it on each request (`declared`: the
/// configuration's agents and whether each is shared, when a configuration was given).
fn resolved_workspace(record: &KeyRecord, declared: Option<&Vec<(String, bool)>>) -> Resolved {
    let Some(agent) = &record.agent else {
        return Resolved::Known(record.owner.workspace.to_string());
    };
    let shared =
        shared_workspace(agent).map_or_else(|_| format!("agent-{agent}"), |w| w.to_string());
    match declared.map(|d| d.iter().find(|(id, _)| id == agent)) {
        None => Resolved::Unknown { shared },
        Some(None) => Resolved::Undeclared(agent.clone()),
        Some(Some((_, true))) => Resolved::Known(shared),
        Some(Some((_, false))) => Resolved::Known(record.owner.workspace.to_string()),
    }
}

/// The principal of a key created without `--principal` or `--agent`: `key-<ID>`.
pub fn default_principal(key: &ApiKey) -> String {
    format!("key-{}", key.id())
}

/// Runs a `wsp keys` subcommand.
pub async fn run(cmd: KeysCommand) -> Result<(), Failure> {
    match cmd {
        KeysCommand::Create(a) => {
            let (owner, agent) = key_owner(&a)?;
            let key = ApiKey::generate();
            // Each key its own author: the console's history and conflict pages tell keys apart.
            let principal = a
                .principal
                .clone()
                .or_else(|| agent.clone())
                .unwrap_or_else(|| default_principal(&key));
            wsp_types::OwnerId::parse(&principal)
                .map_err(|e| Failure::invalid(format!("--principal: {e}")))?;
            let scopes = match &a.scopes {
                Some(s) => {
                    Scopes::parse(s).map_err(|e| Failure::invalid(format!("--scopes: {e}")))?
                }
                None => Scopes::workspace(),
            };
            if let (Some(agent), Some(config)) = (&agent, &a.config) {
                check_declared(agent, config).await?;
            }
            let registry = open_keys(&a.location, true).await?;
            let mut record = KeyRecord::new(&key, owner.clone(), principal.clone(), scopes);
            record.agent = agent.clone();
            registry.insert(record).await?;
            match &agent {
                None => outln!(
                    "created key {} for tenant {} workspace {} (principal {principal}, scopes {scopes})",
                    key.id(),
                    owner.tenant,
                    owner.workspace,
                )?,
                Some(agent) => outln!(
                    "created key {} for tenant {}, agent {agent} of user {} (workspace {} if the \
                     agent is private, agent-{agent} if shared; principal {principal}, scopes {scopes})",
                    key.id(),
                    owner.tenant,
                    a.user.as_deref().unwrap_or_default(),
                    owner.workspace,
                )?,
            }
            outln!("{}", key.expose())?;
            Ok(())
        }
        KeysCommand::List(a) => {
            let records = open_keys(&a.location, false).await?.list().await?;
            let declared = match &a.config {
                Some(config) => Some(declared_agents(config).await?.unwrap_or_default()),
                None => None,
            };
            if a.json {
                let rows: Vec<_> = records
                    .iter()
                    .map(|r| {
                        let resolved = match resolved_workspace(r, declared.as_ref()) {
                            Resolved::Known(w) => Some(w),
                            Resolved::Undeclared(_) | Resolved::Unknown { .. } => None,
                        };
                        serde_json::json!({
                            "id": r.id, "tenant": r.owner.tenant.as_str(),
                            "workspace": r.owner.workspace.as_str(),
                            "resolvedWorkspace": resolved, "principal": r.principal,
                            "scopes": r.scopes.to_string(), "agent": r.agent,
                            "createdAt": r.created_at.to_rfc3339(),
                            "revokedAt": r.revoked_at.map(|t| t.to_rfc3339()),
                        })
                    })
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&rows)?)?;
            } else {
                outln!("ID\tTENANT\tWORKSPACE\tAGENT\tPRINCIPAL\tSCOPES\tSTATUS")?;
                for r in &records {
                    let status = if r.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    let workspace = match resolved_workspace(r, declared.as_ref()) {
                        Resolved::Known(w) => w,
                        Resolved::Undeclared(agent) => {
                            format!("{} ({agent} is not declared)", r.owner.workspace)
                        }
                        Resolved::Unknown { shared } => format!(
                            "{} or {shared} if shared (give --config)",
                            r.owner.workspace
                        ),
                    };
                    outln!(
                        "{}\t{}\t{workspace}\t{}\t{}\t{}\t{status}",
                        r.id,
                        r.owner.tenant,
                        r.agent.as_deref().unwrap_or("-"),
                        r.principal,
                        r.scopes
                    )?;
                }
            }
            Ok(())
        }
        KeysCommand::Revoke(a) => {
            let id =
                a.id.strip_prefix("wsp_")
                    .map_or(a.id.as_str(), |rest| rest.split('_').next().unwrap_or(rest));
            match open_keys(&a.location, false).await?.revoke(id).await {
                Ok(()) => outln!("revoked key {id}"),
                Err(wsp_store::StoreError::NotFound) => {
                    Err(Failure::not_found(format!("no key with id {id:?}")))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}
