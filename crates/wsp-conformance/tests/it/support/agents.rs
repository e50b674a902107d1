//! Agents for an in-process `wsp-server`: packs, approvals for owner A (`tenant-a/default`) and
//! for the agent keys' workspace (`tenant-a/user-u1`), keys acting as a private and a shared
//! agent, and the matching runner configuration.

use std::sync::Arc;

use wsp_conformance::Config;
use wsp_server::{AgentsConfig, ConfigAgentRegistry};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_types::{Owner, Scopes};

/// Text only the system prompt references hold.
pub const PROMPT_MARKER: &str = "conformance-prompt-ref";
/// The agent owner A's workspace approved.
pub const AGENT_A: &str = "acme.reviewer.default";
/// The shared agent.
pub const SHARED: &str = "acme.cook";
/// A private agent.
pub const PRIVATE: &str = "acme.main";

/// The `[agents]` section under `scope` (`host` or `tenant`).
pub fn section(scope: &str) -> AgentsConfig {
    let marker = |name: &str| format!("prompts/{name}-{PROMPT_MARKER}.md");
    serde_json::from_value(serde_json::json!({
        "install_scope": scope,
        "packs": [
            {"name": "acme.reviewer", "version": "1.0.0", "agents": [
                {"id": AGENT_A, "persona": "Code Reviewer", "model_class": "coding",
                 "tool_allowlist": ["fs.read"], "system_prompt_ref": marker("reviewer")}
            ]},
            {"name": "acme.kitchen", "version": "2.0.0", "agents": [
                {"id": SHARED, "persona": "Cook", "model_class": "general", "shared": true,
                 "tool_allowlist": [], "system_prompt_ref": marker("cook")},
                {"id": PRIVATE, "persona": "Main", "model_class": "general",
                 "tool_allowlist": [], "system_prompt_ref": marker("main"),
                 "description": "The user's own agent."}
            ]}
        ],
        "approvals": [
            {"tenant": "tenant-a", "workspace": "default", "packs": ["acme.reviewer"]},
            // The agent keys' workspace: publishing needs the target approved under "tenant".
            {"tenant": "tenant-a", "workspace": "user-u1",
             "packs": ["acme.reviewer", "acme.kitchen"]}
        ]
    }))
    .expect("the section deserializes")
}

/// The registry of [`section`].
pub fn registry(scope: &str) -> Arc<ConfigAgentRegistry> {
    Arc::new(ConfigAgentRegistry::from_config(&section(scope)).expect("a valid section"))
}

async fn agent_key(keys: &MemoryKeyRegistry, agent: &str) -> String {
    let k = ApiKey::generate();
    let mut record = KeyRecord::new(
        &k,
        Owner::parse("tenant-a", "user-u1").unwrap(),
        agent.into(),
        Scopes::all(),
    );
    record.agent = Some(agent.into());
    keys.insert(record).await.unwrap();
    k.expose()
}

/// Creates the agent keys in `keys` and points `config` at the agents.
pub async fn configure(keys: &MemoryKeyRegistry, config: &mut Config) {
    config.agents_a = vec![AGENT_A.into()];
    config.prompt_marker = Some(PROMPT_MARKER.into());
    config.key_private_agent = Some(agent_key(keys, PRIVATE).await);
    config.key_shared_agent = Some(agent_key(keys, SHARED).await);
    config.shared_agent = Some(SHARED.into());
    // A private agent other than the one the private key acts as.
    config.private_agent = Some(AGENT_A.into());
}
