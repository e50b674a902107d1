//! The agent inventory (RFC 0072 §A, RFC 0074, WIRE.md §7), the [`AgentRegistry`] behind it,
//! and where callers that act as an agent work (seed 001, WIRE.md §8).
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

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use wsp_store::shared::{PublishPrefix, shared_workspace};
use wsp_store::{StoreError, StoreFuture};
use wsp_types::wire::{
    AgentInventory, AgentInventoryEntry, AgentsCapability, InstallScope, ManifestRuntimeCapability,
};
use wsp_types::{ErrorCode, Owner, Scope};

use crate::auth::{AuthFuture, Authenticator, Caller, authenticate};
use crate::error::ApiError;
use crate::request::percent_decode;
use crate::{AppState, JSON};

/// The inventory route.
pub const LIST: &str = "/v1/agents";
/// The prefix of one agent's route.
pub const ONE_PREFIX: &str = "/v1/agents/";

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
/// database; [`crate::ConfigAgentRegistry`] is the one `wsp serve` builds from its
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

/// The registry of a state and the discovery document that advertises it.
pub(crate) struct Agents {
    registry: Arc<dyn AgentRegistry>,
    discovery: Bytes,
}

/// A cell [`AppState::with_agents`] fills once; shared with [`AgentResolver`].
pub(crate) type AgentsCell = Arc<OnceLock<Agents>>;

/// Wraps a host's [`Authenticator`] so that every caller acting as an agent gets the workspace
/// the registry says (see the module documentation).
pub(crate) struct AgentResolver {
    inner: Arc<dyn Authenticator>,
    agents: AgentsCell,
}

impl AgentResolver {
    /// Resolves the callers of `inner` with the registry `agents` will hold.
    pub(crate) fn new(inner: Arc<dyn Authenticator>, agents: AgentsCell) -> Self {
        Self { inner, agents }
    }
}

impl Authenticator for AgentResolver {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(async move {
            match self.inner.authenticate(token).await? {
                Some(caller) => resolve(self.agents.get(), caller).await,
                None => Ok(None),
            }
        })
    }
}

/// The caller as it acts: a shared agent moves to its own workspace; an agent the registry
/// does not know (or any agent, without a registry) is no caller at all.
async fn resolve(
    agents: Option<&Agents>,
    mut caller: Caller,
) -> Result<Option<Caller>, StoreError> {
    let Some(agent_id) = caller.agent.as_deref() else {
        return Ok(Some(caller));
    };
    let Some(agents) = agents else {
        return Ok(None);
    };
    match agents.registry.agent(agent_id).await? {
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
    /// Serves the agent inventory from `registry`: `GET /v1/agents[/{agentId}]`, the
    /// `agents.manifestRuntime` block in discovery, agent principals and publishing.
    ///
    /// Without it the agent routes answer 501 `capability_not_provided` and every credential
    /// bound to an agent answers 401.
    ///
    /// # Panics
    ///
    /// When called a second time on the same state (or a clone of it).
    pub fn with_agents(self, registry: Arc<dyn AgentRegistry>) -> Self {
        let block = AgentsCapability {
            manifest_runtime: Some(ManifestRuntimeCapability {
                handoff_validation: false,
                install_scope: registry.install_scope(),
                supported: true,
            }),
        };
        let mut doc: serde_json::Value =
            serde_json::from_slice(&self.inner.discovery).expect("the discovery document is JSON");
        doc["agents"] = serde_json::to_value(block).expect("wire types always serialize");
        let discovery = Bytes::from(serde_json::to_vec(&doc).expect("JSON always serializes"));
        assert!(
            self.inner
                .agents
                .set(Agents {
                    registry,
                    discovery
                })
                .is_ok(),
            "AppState::with_agents called twice"
        );
        self
    }

    /// The agent registry, when the host serves agents.
    pub(crate) fn agent_registry(&self) -> Option<&Arc<dyn AgentRegistry>> {
        self.inner.agents.get().map(|a| &a.registry)
    }

    /// The discovery document as served: with the `agents` block when the host serves agents.
    pub(crate) fn discovery_body(&self) -> Bytes {
        self.inner
            .agents
            .get()
            .map_or_else(|| self.inner.discovery.clone(), |a| a.discovery.clone())
    }
}

/// A registry failure as a wire error (503 when it is unavailable, else 500).
pub(crate) fn registry_error(err: StoreError) -> ApiError {
    match err {
        StoreError::NotFound | StoreError::Conflict { .. } | StoreError::TooLarge { .. } => {
            ApiError::internal(&format!("agent registry: {err}"))
        }
        other => ApiError::from_store(other, ""),
    }
}

/// 501 unless the host serves agents, then the authenticated caller holding `agents:read`.
async fn inventory_caller(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(Arc<dyn AgentRegistry>, Caller), ApiError> {
    let registry = state.agent_registry().cloned().ok_or_else(|| {
        ApiError::new(
            ErrorCode::CapabilityNotProvided,
            "this host does not offer agents.manifestRuntime",
        )
    })?;
    let caller = authenticate(&*state.inner.auth, headers).await?;
    caller.require(Scope::AgentsRead)?;
    Ok((registry, caller))
}

/// Whether `owner` may see `agent` under the registry's scope.
pub(crate) fn visible(
    scope: InstallScope,
    approved: &BTreeSet<String>,
    agent: &RegisteredAgent,
) -> bool {
    scope == InstallScope::Host || approved.contains(&agent.pack_name)
}

/// The packs `owner` approved, consulted under `installScope: tenant` (none needed under
/// `host`).
pub(crate) async fn approved(
    registry: &dyn AgentRegistry,
    owner: &Owner,
) -> Result<BTreeSet<String>, ApiError> {
    match registry.install_scope() {
        InstallScope::Host => Ok(BTreeSet::new()),
        InstallScope::Tenant => registry.approved_packs(owner).await.map_err(registry_error),
    }
}

fn json(body: Vec<u8>) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(CONTENT_TYPE, JSON);
    resp
}

/// 404 for an agent the caller may not see: the same for unknown and unapproved agents.
fn agent_not_found(id: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no agent {id:?}"))
}

/// `GET /v1/agents`
#[utoipa::path(
    get,
    path = "/v1/agents",
    tag = "agents",
    operation_id = "listAgents",
    summary = "The manifest agents available to the caller, sorted by agentId (RFC 0072 §A, RFC 0074)",
    description = "Scoped by the caller's credential, never by the request: with `installScope: host` every caller gets the same list; with `tenant`, only the agents whose pack the caller's tenant and workspace approved. No entry ever carries a system prompt or a credential.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The caller's agents.", body = ref("#/components/schemas/AgentInventory")),
        (status = 401, description = "No or unknown credential (`unauthenticated`); never a global list.", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks `agents:read` (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `agents.manifestRuntime` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "The registry is unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn list(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let (registry, caller) = inventory_caller(&state, &headers).await?;
    let scope = registry.install_scope();
    let approved = approved(&*registry, &caller.owner).await?;
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
    let body =
        serde_json::to_vec(&AgentInventory { agents, total }).expect("wire types always serialize");
    Ok(json(body))
}

/// `GET /v1/agents/{agentId}`
#[utoipa::path(
    get,
    path = "/v1/agents/{agentId}",
    tag = "agents",
    operation_id = "getAgent",
    summary = "One manifest agent available to the caller (RFC 0072 §A, RFC 0074)",
    description = "An agent the caller may not see (under `installScope: tenant`, one whose pack the caller's tenant and workspace did not approve) is answered exactly like an agent that does not exist.",
    params(("agentId" = String, Path, description = "The agent's id, raw or percent-encoded; decoded once.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The agent's inventory entry.", body = ref("#/components/schemas/AgentInventoryEntry")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks `agents:read` (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 404, description = "No such agent for this caller; unknown and unapproved agents answer the same (`not_found`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `agents.manifestRuntime` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "The registry is unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn get_one(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (registry, caller) = inventory_caller(&state, &headers).await?;
    let raw = uri.path().strip_prefix(ONE_PREFIX).unwrap_or_default();
    let id = percent_decode(raw, false)?;
    let approved = approved(&*registry, &caller.owner).await?;
    let agent = registry
        .agent(&id)
        .await
        .map_err(registry_error)?
        .filter(|a| a.id == id && visible(registry.install_scope(), &approved, a))
        .ok_or_else(|| agent_not_found(&id))?;
    let body = serde_json::to_vec(&agent.inventory_entry()).expect("wire types always serialize");
    Ok(json(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::KeyAuthenticator;
    use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
    use wsp_types::Scopes;

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
        let cell: AgentsCell = Arc::default();
        let auth = AgentResolver::new(Arc::new(KeyAuthenticator::new(keys)), cell.clone());
        let workspace = |token: &str| {
            let auth = &auth;
            let token = token.to_owned();
            async move {
                auth.authenticate(&token)
                    .await
                    .unwrap()
                    .map(|c| c.owner.workspace.to_string())
            }
        };
        // No registry: only the plain key works (fail closed).
        assert_eq!(workspace(&tokens[0]).await.as_deref(), Some("user-u1"));
        for t in &tokens[1..] {
            assert_eq!(workspace(t).await, None);
        }
        let registry: Arc<dyn AgentRegistry> =
            Arc::new(Fixed(vec![agent("cook", true), agent("main", false)]));
        assert!(
            cell.set(Agents {
                registry,
                discovery: Bytes::new()
            })
            .is_ok()
        );
        assert_eq!(workspace(&tokens[0]).await.as_deref(), Some("user-u1"));
        // The shared agent never acts in the user's workspace its key names.
        assert_eq!(workspace(&tokens[1]).await.as_deref(), Some("agent-cook"));
        assert_eq!(workspace(&tokens[2]).await.as_deref(), Some("user-u1"));
        assert_eq!(workspace(&tokens[3]).await, None, "unknown agent: 401");
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
