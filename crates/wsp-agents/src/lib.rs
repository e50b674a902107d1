//! The wsp agent registry: the manifest agents a host installed (RFC 0072 §A, RFC 0074), which
//! of them a caller may see, and the `[agents]` section of the configuration file that
//! [`ConfigAgentRegistry`] is built from.
//!
//! **Invariant:** no HTTP and no I/O of its own. A registry answers facts (the agents, the install
//! scope, a workspace's approved packs); the visibility rule ([`visible`], [`approved`]) is
//! written once, here, for every surface that serves agents (the inventory and publishing of
//! `wsp-server`). Nothing a registry holds beyond
//! [`RegisteredAgent::inventory_entry`] is ever served.

mod config;

use std::collections::BTreeSet;

use wsp_store::shared::PublishPrefix;
use wsp_store::{StoreError, StoreFuture};
use wsp_types::Owner;
use wsp_types::wire::{AgentInventoryEntry, InstallScope};

pub use config::{
    AgentConfig, AgentConfigError, AgentsConfig, ApprovalConfig, ConfigAgentRegistry, ID_PATTERN,
    InstallScopeSetting, PackConfig,
};

/// One installed agent as the host knows it: its inventory fields, and what is never served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredAgent {
    /// The agent's id, unique on the host.
    pub id: String,
    /// Who the agent is.
    pub persona: String,
    /// Display name.
    pub label: String,
    /// The class of model it needs.
    pub model_class: String,
    /// The pack it comes from.
    pub pack_name: String,
    /// That pack's version.
    pub pack_version: String,
    /// The tools it may call.
    pub tool_allowlist: Vec<String>,
    /// Whether it declares hand-off schemas.
    pub has_handoff_schemas: bool,
    /// What it is for.
    pub description: Option<String>,
    /// Whether it is shared: it works in its own workspace `agent-<id>`, not in a user's.
    /// Never served.
    pub shared: bool,
    /// Where publications into its workspace land (a shared agent's; `inbox/` by default).
    /// Not in the inventory; a publish refused for a `targetPath` outside it names it.
    pub publish_prefix: PublishPrefix,
    /// Where its system prompt is. Never served.
    pub system_prompt_ref: String,
}

impl RegisteredAgent {
    /// The wire entry: the inventory fields only, never `shared` or the prompt reference.
    pub fn inventory_entry(&self) -> AgentInventoryEntry {
        AgentInventoryEntry {
            agent_id: self.id.clone(),
            description: self.description.clone(),
            has_handoff_schemas: self.has_handoff_schemas,
            label: self.label.clone(),
            model_class: self.model_class.clone(),
            pack_name: self.pack_name.clone(),
            pack_version: self.pack_version.clone(),
            persona: self.persona.clone(),
            tool_allowlist: self.tool_allowlist.clone(),
        }
    }
}

/// Where a host's agents and pack approvals come from. Host authors back it with their own
/// database; [`ConfigAgentRegistry`] is the one `wsp serve` builds from its
/// configuration file.
///
/// The server applies the scoping rules itself ([`AgentRegistry::install_scope`], approvals,
/// 404 for what a caller may not see), so an implementation only answers facts.
pub trait AgentRegistry: Send + Sync + 'static {
    /// How the inventory is scoped, advertised as `agents.manifestRuntime.installScope`.
    fn install_scope(&self) -> InstallScope;
    /// Every installed agent, in any order.
    fn agents(&self) -> StoreFuture<'_, Vec<RegisteredAgent>>;
    /// One installed agent by id, approved or not; `None` when there is no such agent.
    fn agent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<RegisteredAgent>>;
    /// The names of the packs `owner` approved (consulted under `installScope: tenant`).
    fn approved_packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>>;
}

/// Whether `owner` may see `agent` under the registry's scope, given the packs it `approved`.
pub fn visible(scope: InstallScope, approved: &BTreeSet<String>, agent: &RegisteredAgent) -> bool {
    scope == InstallScope::Host || approved.contains(&agent.pack_name)
}

/// The packs `owner` approved, consulted under `installScope: tenant` (none needed under
/// `host`).
pub async fn approved(
    registry: &dyn AgentRegistry,
    owner: &Owner,
) -> Result<BTreeSet<String>, StoreError> {
    match registry.install_scope() {
        InstallScope::Host => Ok(BTreeSet::new()),
        InstallScope::Tenant => registry.approved_packs(owner).await,
    }
}
