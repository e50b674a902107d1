//! The agent inventory (RFC 0072 §A, RFC 0074, WIRE.md §7) served from a
//! [`wsp_agents::AgentRegistry`], and where callers that act as an agent work (seed 001,
//! WIRE.md §8).
//!
//! A host installs packs of manifest agents and says how they are approved: `installScope:
//! host` lists every agent to every caller; `tenant` lists to a caller only the agents whose
//! pack its `{tenant, workspace}` approved, and answers any other agent exactly like one that
//! does not exist (404). The inventory entry is a projection: the registry also knows whether an
//! agent is shared and its system prompt reference, and neither ever leaves the server.
//!
//! **Agent principals.** A credential may act as an agent ([`Caller::agent`]). Its workspace is
//! resolved on every request from the registry, invisible to the caller: a shared agent works
//! in its own workspace `agent-<agentId>` (of the caller's tenant), whatever the credential
//! names, so it can never read a user's private workspace; a private agent works in the
//! workspace its credential names (`user-<userId>` for keys made with `wsp keys create --user U
//! --agent ID`). A credential bound to an agent the registry does not know authenticates to
//! nothing (401), and so does every agent-bound credential on a host without a registry.

use std::sync::Arc;

use wsp_agents::{AgentRegistry, RegisteredAgent, visible};
use wsp_store::StoreError;
use wsp_store::shared::shared_workspace;
use wsp_types::wire::{
    AgentInventory, AgentInventoryEntry, AgentsCapability, ManifestRuntimeCapability,
};
use wsp_types::{ErrorCode, Owner};

use crate::AppState;
use crate::auth::{AuthFuture, Authenticator, Caller};
use crate::error::WireError;
use crate::extract::{AgentId, AgentsRead, Authed, Registry, Reply};
use crate::fails::{self, Documented, Failure};

/// The inventory route.
pub const LIST: &str = "/v1/agents";

/// Wraps a host's [`Authenticator`] so that every caller acting as an agent gets the workspace
/// the registry says (see the module documentation).
pub(crate) struct AgentResolver {
    inner: Arc<dyn Authenticator>,
    agents: Option<Arc<dyn AgentRegistry>>,
}

impl AgentResolver {
    /// Resolves the callers of `inner` with the registry `agents`, if the host has one.
    pub(crate) fn new(
        inner: Arc<dyn Authenticator>,
        agents: Option<Arc<dyn AgentRegistry>>,
    ) -> Self {
        Self { inner, agents }
    }
}

impl Authenticator for AgentResolver {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(async move {
            match self.inner.authenticate(token).await? {
                Some(caller) => resolve(self.agents.as_deref(), caller).await,
                None => Ok(None),
            }
        })
    }
}

/// The caller as it acts: a shared agent moves to its own workspace; an agent the registry
/// does not know (or any agent, without a registry) is no caller at all.
async fn resolve(
    registry: Option<&dyn AgentRegistry>,
    mut caller: Caller,
) -> Result<Option<Caller>, StoreError> {
    let Some(agent_id) = caller.agent.as_deref() else {
        return Ok(Some(caller));
    };
    let Some(registry) = registry else {
        return Ok(None);
    };
    match registry.agent(agent_id).await? {
        None => Ok(None),
        Some(agent) if agent.shared => match shared_workspace(agent_id) {
            Ok(workspace) => {
                caller.owner.workspace = workspace;
                Ok(Some(caller))
            }
            Err(_) => Ok(None),
        },
        Some(_) => Ok(Some(caller)),
    }
}

impl AppState {
    /// The agent registry, when the host serves agents.
    pub(crate) fn agent_registry(&self) -> Option<&Arc<dyn AgentRegistry>> {
        self.inner.agents.as_ref()
    }
}

/// The `agents` block of the discovery document for a host serving `registry`.
pub(crate) fn capability(registry: &dyn AgentRegistry) -> AgentsCapability {
    AgentsCapability {
        manifest_runtime: Some(ManifestRuntimeCapability {
            handoff_validation: false,
            install_scope: registry.install_scope(),
            supported: true,
        }),
    }
}

/// A registry failure as a wire error (503 when it is unavailable, else 500).
pub(crate) fn registry_error(err: StoreError) -> WireError {
    match err {
        StoreError::NotFound | StoreError::Conflict { .. } | StoreError::TooLarge { .. } => {
            WireError::internal(&format!("agent registry: {err}"))
        }
        other => WireError::from_store(other, ""),
    }
}

/// The packs `owner` approved, as a wire error when the registry fails.
pub(crate) async fn approved(
    registry: &dyn AgentRegistry,
    owner: &Owner,
) -> Result<std::collections::BTreeSet<String>, WireError> {
    wsp_agents::approved(registry, owner)
        .await
        .map_err(registry_error)
}

/// 404 for an agent the caller may not see: the same for unknown and unapproved agents.
fn agent_not_found(id: &str) -> WireError {
    WireError::new(ErrorCode::NotFound, format!("no agent {id:?}"))
}

/// The route of one agent (`{*agentId}` spans segments).
pub(crate) const ONE: &str = "/v1/agents/{*agentId}";

/// The OpenAPI operation of [`list`] and the failures of its own steps.
pub(crate) struct ListAgentsOp;

impl Documented for ListAgentsOp {
    const OWN: &'static [Failure] = &[fails::REGISTRY_UNAVAILABLE];
}

/// `GET /v1/agents`
#[utoipa::path(
    get,
    impl_for = ListAgentsOp,
    path = LIST,
    tag = "agents",
    operation_id = "listAgents",
    summary = "The manifest agents available to the caller, sorted by agentId (RFC 0072 §A, RFC 0074)",
    description = "Scoped by the caller's credential, never by the request: with `installScope: host` every caller gets the same list; with `tenant`, only the agents whose pack the caller's tenant and workspace approved. No entry ever carries a system prompt or a credential.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The caller's agents.", body = ref("#/components/schemas/AgentInventory")),
    ),
)]
pub(crate) async fn list(
    Registry(registry): Registry,
    auth: Authed<AgentsRead>,
) -> Result<Reply, WireError> {
    let scope = registry.install_scope();
    let approved = approved(&*registry, &auth.owner).await?;
    let mut agents: Vec<AgentInventoryEntry> = registry
        .agents()
        .await
        .map_err(registry_error)?
        .iter()
        .filter(|a| visible(scope, &approved, a))
        .map(RegisteredAgent::inventory_entry)
        .collect();
    agents.sort_by(|a, b| a.agent_id.as_bytes().cmp(b.agent_id.as_bytes()));
    agents.dedup_by(|a, b| a.agent_id == b.agent_id);
    let total = agents.len() as u64;
    Ok(Reply::json(&AgentInventory { agents, total }))
}

/// An agent the caller may not see.
const AGENT_NOT_FOUND: Failure = fails::fail(
    ErrorCode::NotFound,
    "No such agent for this caller; unknown and unapproved agents answer the same",
);

/// The OpenAPI operation of [`get_one`] and the failures of its own steps.
pub(crate) struct GetAgentOp;

impl Documented for GetAgentOp {
    const OWN: &'static [Failure] = &[AGENT_NOT_FOUND, fails::REGISTRY_UNAVAILABLE];
}

/// `GET /v1/agents/{agentId}`
#[utoipa::path(
    get,
    impl_for = GetAgentOp,
    path = ONE,
    tag = "agents",
    operation_id = "getAgent",
    summary = "One manifest agent available to the caller (RFC 0072 §A, RFC 0074)",
    description = "An agent the caller may not see (under `installScope: tenant`, one whose pack the caller's tenant and workspace did not approve) is answered exactly like an agent that does not exist.",
    params(("agentId" = String, Path, description = "The agent's id, raw or percent-encoded; decoded once.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The agent's inventory entry.", body = ref("#/components/schemas/AgentInventoryEntry")),
    ),
)]
pub(crate) async fn get_one(
    Registry(registry): Registry,
    auth: Authed<AgentsRead>,
    AgentId(id): AgentId,
) -> Result<Reply, WireError> {
    let approved = approved(&*registry, &auth.owner).await?;
    let agent = registry
        .agent(&id)
        .await
        .map_err(registry_error)?
        .filter(|a| a.id == id && visible(registry.install_scope(), &approved, a))
        .ok_or_else(|| agent_not_found(&id))?;
    Ok(Reply::json(&agent.inventory_entry()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::auth::KeyAuthenticator;
    use wsp_store::StoreFuture;
    use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
    use wsp_store::shared::PublishPrefix;
    use wsp_types::Scopes;
    use wsp_types::wire::InstallScope;

    struct Fixed(Vec<RegisteredAgent>);

    impl AgentRegistry for Fixed {
        fn install_scope(&self) -> InstallScope {
            InstallScope::Tenant
        }
        fn agents(&self) -> StoreFuture<'_, Vec<RegisteredAgent>> {
            let all = self.0.clone();
            Box::pin(async move { Ok(all) })
        }
        fn agent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<RegisteredAgent>> {
            let one = self.0.iter().find(|a| a.id == id).cloned();
            Box::pin(async move { Ok(one) })
        }
        fn approved_packs<'a>(&'a self, _: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
            Box::pin(async { Ok(BTreeSet::new()) })
        }
    }

    fn agent(id: &str, shared: bool) -> RegisteredAgent {
        RegisteredAgent {
            id: id.into(),
            persona: "P".into(),
            label: "P".into(),
            model_class: "general".into(),
            pack_name: "pack".into(),
            pack_version: "1".into(),
            tool_allowlist: vec![],
            has_handoff_schemas: false,
            description: None,
            shared,
            publish_prefix: PublishPrefix::default(),
            system_prompt_ref: "prompts/secret.md".into(),
        }
    }

    #[tokio::test]
    async fn agent_callers_are_resolved_or_refused() {
        let keys = Arc::new(MemoryKeyRegistry::default());
        let mut tokens = Vec::new();
        for agent in [None, Some("cook"), Some("main"), Some("ghost")] {
            let k = ApiKey::generate();
            let mut r = KeyRecord::new(
                &k,
                Owner::parse("t", "user-u1").unwrap(),
                "u1".into(),
                Scopes::all(),
            );
            r.agent = agent.map(str::to_owned);
            keys.insert(r).await.unwrap();
            tokens.push(k.expose());
        }
        let keys: Arc<dyn Authenticator> = Arc::new(KeyAuthenticator::new(keys));
        async fn workspace(auth: &AgentResolver, token: &str) -> Option<String> {
            let caller = auth.authenticate(token).await.unwrap();
            caller.map(|c| c.owner.workspace.to_string())
        }
        // No registry: only the plain key works (fail closed).
        let auth = AgentResolver::new(keys.clone(), None);
        assert_eq!(
            workspace(&auth, &tokens[0]).await.as_deref(),
            Some("user-u1")
        );
        for t in &tokens[1..] {
            assert_eq!(workspace(&auth, t).await, None);
        }
        let registry: Arc<dyn AgentRegistry> =
            Arc::new(Fixed(vec![agent("cook", true), agent("main", false)]));
        let auth = AgentResolver::new(keys, Some(registry));
        assert_eq!(
            workspace(&auth, &tokens[0]).await.as_deref(),
            Some("user-u1")
        );
        // The shared agent never acts in the user's workspace its key names.
        assert_eq!(
            workspace(&auth, &tokens[1]).await.as_deref(),
            Some("agent-cook")
        );
        assert_eq!(
            workspace(&auth, &tokens[2]).await.as_deref(),
            Some("user-u1")
        );
        assert_eq!(
            workspace(&auth, &tokens[3]).await,
            None,
            "unknown agent: 401"
        );
    }

    #[test]
    fn the_entry_never_carries_what_is_not_served() {
        let a = agent("cook", true);
        let text = serde_json::to_string(&a.inventory_entry()).unwrap();
        assert!(!text.contains("prompts/secret.md"), "{text}");
        assert!(!text.contains("shared"), "{text}");
        let keys: BTreeSet<String> = serde_json::from_str::<serde_json::Map<_, _>>(&text)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let expected: BTreeSet<String> = [
            "agentId",
            "persona",
            "label",
            "modelClass",
            "packName",
            "packVersion",
            "toolAllowlist",
            "hasHandoffSchemas",
        ]
        .map(String::from)
        .into();
        assert_eq!(keys, expected);
    }
}
