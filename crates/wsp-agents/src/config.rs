//! The `[agents]` section of the configuration file and the [`AgentRegistry`] built from it.
//!
//! ```toml
//! [agents]
//! install_scope = "tenant"            # or "host" (the default)
//!
//! [[agents.packs]]
//! name = "acme.reviewer"
//! version = "1.0.0"
//!
//! [[agents.packs.agents]]
//! id = "acme.reviewer.default"
//! persona = "Code Reviewer"
//! model_class = "coding"
//! tool_allowlist = ["fs.read"]
//! system_prompt_ref = "prompts/reviewer.md"   # never served
//!
//! [[agents.packs.agents]]
//! id = "acme.reviewer.shared"
//! persona = "Team Reviewer"
//! model_class = "coding"
//! tool_allowlist = []
//! shared = true
//! publish_prefix = "inbox/"                   # where publications land (the default)
//! system_prompt_ref = "prompts/team.md"
//!
//! [[agents.approvals]]
//! tenant = "t-a"
//! workspace = "w-a"
//! packs = ["acme.reviewer"]
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wsp_store::StoreFuture;
use wsp_store::approvals::ApprovalRegistry;
use wsp_store::shared::{PublishPrefix, shared_workspace};
use wsp_types::wire::InstallScope;
use wsp_types::{Owner, OwnerId};

use crate::{AgentRegistry, RegisteredAgent};

/// An identifier: a tenant, workspace or pack name.
pub const ID_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/// An agent id: an identifier short enough that `agent-<id>` is one too.
const AGENT_ID_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,121}$";

/// A publish prefix: a workspace path followed by `/` (components are checked when loading).
const PUBLISH_PREFIX_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}/$";

/// Agent packs, their agents, and which tenant and workspace approved which pack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentsConfig {
    /// How `GET /v1/agents` is scoped (RFC 0074): `host` lists every agent to every caller;
    /// `tenant` lists to a caller only the agents of the packs its tenant and workspace
    /// approved.
    #[serde(default)]
    pub install_scope: InstallScopeSetting,
    /// The installed packs.
    #[serde(default)]
    pub packs: Vec<PackConfig>,
    /// Which `{tenant, workspace}` approved which packs (consulted under `tenant` scope).
    /// Approvals made with `wsp agents approve` are added to these.
    #[serde(default)]
    pub approvals: Vec<ApprovalConfig>,
}

/// `install_scope`: how the agent inventory is scoped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstallScopeSetting {
    /// One inventory for the whole host: every caller gets the same list.
    #[default]
    Host,
    /// Per tenant and workspace: a caller sees only the agents its own tenant and workspace
    /// approved; any other agent is answered 404.
    Tenant,
}

impl From<InstallScopeSetting> for InstallScope {
    fn from(s: InstallScopeSetting) -> Self {
        match s {
            InstallScopeSetting::Host => InstallScope::Host,
            InstallScopeSetting::Tenant => InstallScope::Tenant,
        }
    }
}

/// One pack of agents (`[[agents.packs]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackConfig {
    /// The pack's name, unique on the host, such as `acme.reviewer`: ASCII letters, digits,
    /// `.`, `_`, `:` and `-`, starting with a letter or digit, at most 128 bytes.
    #[schemars(pattern(ID_PATTERN))]
    pub name: String,
    /// The pack's version, such as `1.0.0`.
    #[schemars(length(min = 1))]
    pub version: String,
    /// The agents the pack holds (`[[agents.packs.agents]]`).
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

/// One agent of a pack (`[[agents.packs.agents]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's id, unique on the host, such as `acme.reviewer.default`: ASCII letters,
    /// digits, `.`, `_`, `:` and `-`, starting with a letter or digit, at most 122 bytes (so
    /// that its shared workspace `agent-<id>` is an identifier too).
    #[schemars(pattern(AGENT_ID_PATTERN))]
    pub id: String,
    /// Who the agent is, such as `Code Reviewer`.
    #[schemars(length(min = 1))]
    pub persona: String,
    /// Display name; the persona when absent.
    #[schemars(length(min = 1))]
    pub label: Option<String>,
    /// The class of model the agent needs, such as `coding`.
    #[schemars(length(min = 1))]
    pub model_class: String,
    /// The tools the agent may call (may be empty), each listed once.
    #[schemars(inner(length(min = 1)), extend("uniqueItems" = true))]
    pub tool_allowlist: Vec<String>,
    /// Whether the agent is shared: `true` gives it a workspace of its own, `agent-<id>`, which
    /// private agents may publish into; `false` (the default) makes it act in its user's
    /// workspace, `user-<userId>`.
    #[serde(default)]
    pub shared: bool,
    /// Where publications into this shared agent's workspace land: a directory written with
    /// its final `/`, `inbox/` when absent. A publication's `targetPath` must lie under it, and
    /// one without a `targetPath` lands at `<publish_prefix><path>`, so publishing can never
    /// replace the agent's own files (its `AGENTS.md`, its memory). Shared agents only.
    #[schemars(pattern(PUBLISH_PREFIX_PATTERN))]
    pub publish_prefix: Option<String>,
    /// Where the agent's system prompt is, such as `prompts/reviewer.md`. wsp keeps it and
    /// never serves it (nor the prompt).
    #[schemars(length(min = 1))]
    pub system_prompt_ref: String,
    /// What the agent is for, shown in the inventory.
    #[schemars(length(min = 1))]
    pub description: Option<String>,
    /// Whether the agent declares schemas for the hand-offs it accepts and produces.
    #[serde(default)]
    pub has_handoff_schemas: bool,
}

/// One approval (`[[agents.approvals]]`): a tenant's workspace approved these packs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// The tenant.
    #[schemars(pattern(ID_PATTERN))]
    pub tenant: String,
    /// The workspace within the tenant.
    #[schemars(pattern(ID_PATTERN))]
    pub workspace: String,
    /// Names of packs declared in `[[agents.packs]]` (at least one).
    #[schemars(length(min = 1), inner(pattern(ID_PATTERN)))]
    pub packs: Vec<String>,
}

/// What is wrong with an `[agents]` section: every problem, each naming its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfigError {
    /// One line per problem, such as `agents.packs[0].agents[1] (id "x"): persona is empty`.
    pub problems: Vec<String>,
}

impl fmt::Display for AgentConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("; "))
    }
}

impl std::error::Error for AgentConfigError {}

/// An [`AgentRegistry`] over a validated `[agents]` section, plus the approvals kept in an
/// [`ApprovalRegistry`] (those made while the host runs), read on every request.
#[derive(Clone)]
pub struct ConfigAgentRegistry {
    scope: InstallScope,
    agents: BTreeMap<String, RegisteredAgent>,
    packs: BTreeMap<String, String>,
    approvals: BTreeMap<Owner, BTreeSet<String>>,
    stored: Option<Arc<dyn ApprovalRegistry>>,
}

impl fmt::Debug for ConfigAgentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigAgentRegistry")
            .field("scope", &self.scope)
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("approvals", &self.approvals)
            .finish_non_exhaustive()
    }
}

/// Collects problems while walking the section.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, at: &str, what: impl fmt::Display) {
        self.0.push(format!("{at}: {what}"));
    }

    fn text(&mut self, at: &str, field: &str, value: &str) {
        if value.trim().is_empty() {
            self.add(at, format_args!("{field} is empty"));
        } else if value.chars().any(char::is_control) {
            self.add(at, format_args!("{field} holds a control character"));
        }
    }

    fn id(&mut self, at: &str, field: &str, value: &str) -> bool {
        let ok = OwnerId::parse(value).is_ok();
        if !ok {
            self.add(
                at,
                format_args!("{field} {value:?} must match ^[A-Za-z0-9][A-Za-z0-9._:-]{{0,127}}$"),
            );
        }
        ok
    }
}

impl ConfigAgentRegistry {
    /// Validates `config`; the error lists every problem, each naming its entry.
    pub fn from_config(config: &AgentsConfig) -> Result<Self, AgentConfigError> {
        let mut problems = Problems::default();
        let mut packs = BTreeMap::new();
        let mut agents = BTreeMap::new();
        for (p, pack) in config.packs.iter().enumerate() {
            let at = format!("agents.packs[{p}] (name {:?})", pack.name);
            if problems.id(&at, "name", &pack.name)
                && packs
                    .insert(pack.name.clone(), pack.version.clone())
                    .is_some()
            {
                problems.add(&at, "another pack has the same name");
            }
            problems.text(&at, "version", &pack.version);
            if pack.version.chars().any(char::is_whitespace) {
                problems.add(&at, "version holds whitespace");
            }
            for (i, a) in pack.agents.iter().enumerate() {
                let at = format!("agents.packs[{p}].agents[{i}] (id {:?})", a.id);
                if problems.id(&at, "id", &a.id) && shared_workspace(&a.id).is_err() {
                    problems.add(&at, "id is longer than 122 bytes");
                }
                problems.text(&at, "persona", &a.persona);
                if let Some(label) = &a.label {
                    problems.text(&at, "label", label);
                }
                problems.text(&at, "model_class", &a.model_class);
                problems.text(&at, "system_prompt_ref", &a.system_prompt_ref);
                if let Some(d) = &a.description {
                    problems.text(&at, "description", d);
                }
                let publish_prefix = match (&a.publish_prefix, a.shared) {
                    (None, _) => PublishPrefix::default(),
                    (Some(_), false) => {
                        problems.add(
                            &at,
                            "publish_prefix is set but the agent is not shared (only shared \
                             agents receive publications)",
                        );
                        PublishPrefix::default()
                    }
                    (Some(raw), true) => PublishPrefix::parse(raw).unwrap_or_else(|e| {
                        problems.add(&at, format_args!("publish_prefix {raw:?}: {e}"));
                        PublishPrefix::default()
                    }),
                };
                let mut tools = BTreeSet::new();
                for tool in &a.tool_allowlist {
                    problems.text(&at, "a tool_allowlist entry", tool);
                    if !tools.insert(tool) {
                        problems.add(&at, format_args!("tool {tool:?} is listed twice"));
                    }
                }
                let agent = RegisteredAgent {
                    id: a.id.clone(),
                    persona: a.persona.clone(),
                    label: a.label.clone().unwrap_or_else(|| a.persona.clone()),
                    model_class: a.model_class.clone(),
                    pack_name: pack.name.clone(),
                    pack_version: pack.version.clone(),
                    tool_allowlist: a.tool_allowlist.clone(),
                    has_handoff_schemas: a.has_handoff_schemas,
                    description: a.description.clone(),
                    shared: a.shared,
                    publish_prefix,
                    system_prompt_ref: a.system_prompt_ref.clone(),
                };
                if let Some(other) = agents.insert(a.id.clone(), agent) {
                    problems.add(
                        &at,
                        format_args!(
                            "another agent has the same id (in pack {:?})",
                            other.pack_name
                        ),
                    );
                }
            }
        }
        let mut approvals: BTreeMap<Owner, BTreeSet<String>> = BTreeMap::new();
        for (i, a) in config.approvals.iter().enumerate() {
            let at = format!(
                "agents.approvals[{i}] (tenant {:?}, workspace {:?})",
                a.tenant, a.workspace
            );
            let tenant_ok = problems.id(&at, "tenant", &a.tenant);
            let workspace_ok = problems.id(&at, "workspace", &a.workspace);
            if a.packs.is_empty() {
                problems.add(&at, "packs is empty");
            }
            for name in &a.packs {
                if !packs.contains_key(name) {
                    problems.add(
                        &at,
                        format_args!("pack {name:?} is not declared in [[agents.packs]]"),
                    );
                }
            }
            if let (true, true, Ok(owner)) = (
                tenant_ok,
                workspace_ok,
                Owner::parse(&a.tenant, &a.workspace),
            ) {
                approvals
                    .entry(owner)
                    .or_default()
                    .extend(a.packs.iter().cloned());
            }
        }
        if !problems.0.is_empty() {
            return Err(AgentConfigError {
                problems: problems.0,
            });
        }
        Ok(Self {
            scope: config.install_scope.into(),
            agents,
            packs,
            approvals,
            stored: None,
        })
    }

    /// Adds the approvals kept in `stored` (read on every request, so changes count at once).
    pub fn with_stored_approvals(mut self, stored: Arc<dyn ApprovalRegistry>) -> Self {
        self.stored = Some(stored);
        self
    }

    /// Whether a pack of this name is declared.
    pub fn has_pack(&self, name: &str) -> bool {
        self.packs.contains_key(name)
    }

    /// The declared packs: name and version, sorted by name.
    pub fn packs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.packs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The approvals of the configuration file: owner and pack, sorted.
    pub fn configured_approvals(&self) -> impl Iterator<Item = (&Owner, &str)> {
        self.approvals
            .iter()
            .flat_map(|(owner, packs)| packs.iter().map(move |p| (owner, p.as_str())))
    }
}

impl AgentRegistry for ConfigAgentRegistry {
    fn install_scope(&self) -> InstallScope {
        self.scope
    }

    fn agents(&self) -> StoreFuture<'_, Vec<RegisteredAgent>> {
        let all = self.agents.values().cloned().collect();
        Box::pin(async move { Ok(all) })
    }

    fn agent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<RegisteredAgent>> {
        let one = self.agents.get(id).cloned();
        Box::pin(async move { Ok(one) })
    }

    fn approved_packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        Box::pin(async move {
            let mut packs = self.approvals.get(owner).cloned().unwrap_or_default();
            if let Some(stored) = &self.stored {
                packs.extend(stored.packs(owner).await?);
            }
            Ok(packs)
        })
    }
}

#[cfg(test)]
mod tests {
    use wsp_store::approvals::MemoryApprovals;

    use super::*;

    fn agent(id: &str) -> AgentConfig {
        AgentConfig {
            id: id.into(),
            persona: "Code Reviewer".into(),
            label: None,
            model_class: "coding".into(),
            tool_allowlist: vec!["fs.read".into()],
            shared: false,
            publish_prefix: None,
            system_prompt_ref: "prompts/reviewer.md".into(),
            description: None,
            has_handoff_schemas: false,
        }
    }

    fn pack(name: &str, agents: Vec<AgentConfig>) -> PackConfig {
        PackConfig {
            name: name.into(),
            version: "1.0.0".into(),
            agents,
        }
    }

    fn approval(tenant: &str, workspace: &str, packs: &[&str]) -> ApprovalConfig {
        ApprovalConfig {
            tenant: tenant.into(),
            workspace: workspace.into(),
            packs: packs.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[tokio::test]
    async fn a_valid_section_becomes_a_registry() {
        let config = AgentsConfig {
            install_scope: InstallScopeSetting::Tenant,
            packs: vec![pack("acme.reviewer", vec![agent("acme.reviewer.default")])],
            approvals: vec![approval("t-a", "w-a", &["acme.reviewer"])],
        };
        let stored = Arc::new(MemoryApprovals::default());
        let reg = ConfigAgentRegistry::from_config(&config)
            .unwrap()
            .with_stored_approvals(stored.clone());
        assert_eq!(reg.install_scope(), InstallScope::Tenant);
        let a = reg.agent("acme.reviewer.default").await.unwrap().unwrap();
        assert_eq!(a.label, "Code Reviewer", "label defaults to the persona");
        assert_eq!(a.pack_version, "1.0.0");
        let owner_a = Owner::parse("t-a", "w-a").unwrap();
        let owner_b = Owner::parse("t-b", "w-b").unwrap();
        assert_eq!(reg.approved_packs(&owner_a).await.unwrap().len(), 1);
        assert!(reg.approved_packs(&owner_b).await.unwrap().is_empty());
        stored.approve(&owner_b, "acme.reviewer").await.unwrap();
        assert_eq!(reg.approved_packs(&owner_b).await.unwrap().len(), 1);
        assert!(reg.has_pack("acme.reviewer"));
        assert_eq!(reg.configured_approvals().count(), 1);
    }

    #[tokio::test]
    async fn publish_prefixes_are_checked_and_default_to_the_inbox() {
        let mut cook = agent("acme.cook");
        cook.shared = true;
        let mut custom = agent("acme.custom");
        custom.shared = true;
        custom.publish_prefix = Some("shared/from-users/".into());
        let config = AgentsConfig {
            install_scope: InstallScopeSetting::Host,
            packs: vec![pack("acme.kitchen", vec![cook, custom])],
            approvals: vec![],
        };
        let reg = ConfigAgentRegistry::from_config(&config).unwrap();
        let prefix = |id: &'static str| {
            let reg = &reg;
            async move { reg.agent(id).await.unwrap().unwrap().publish_prefix }
        };
        assert_eq!(prefix("acme.cook").await.as_str(), "inbox/");
        assert_eq!(prefix("acme.custom").await.as_str(), "shared/from-users/");
        for (raw, shared, expected) in [
            (
                "inbox",
                true,
                "publish_prefix \"inbox\": a publish prefix is a directory",
            ),
            (
                "../up/",
                true,
                "publish_prefix \"../up/\": a publish prefix is a workspace path",
            ),
            ("/abs/", true, "publish_prefix \"/abs/\""),
            ("a//", true, "publish_prefix \"a//\""),
            (
                "inbox/",
                false,
                "publish_prefix is set but the agent is not shared",
            ),
        ] {
            let mut a = agent("acme.x");
            a.shared = shared;
            a.publish_prefix = Some(raw.into());
            let config = AgentsConfig {
                install_scope: InstallScopeSetting::Host,
                packs: vec![pack("acme.p", vec![a])],
                approvals: vec![],
            };
            let err = ConfigAgentRegistry::from_config(&config).unwrap_err();
            assert_eq!(err.problems.len(), 1, "{raw}: {err}");
            assert!(
                err.problems[0].starts_with("agents.packs[0].agents[0] (id \"acme.x\"): ")
                    && err.problems[0].contains(expected),
                "{raw}: {err}"
            );
        }
    }

    #[test]
    fn every_problem_names_its_entry() {
        let mut bad_agent = agent("bad id");
        bad_agent.persona = " ".into();
        let config = AgentsConfig {
            install_scope: InstallScopeSetting::Host,
            packs: vec![
                pack("acme.reviewer", vec![agent("dup"), bad_agent]),
                pack("acme.reviewer", vec![agent("dup"), agent(&"x".repeat(123))]),
            ],
            approvals: vec![
                approval("t-a", "w/a", &["acme.nope"]),
                approval("t-a", "w-a", &[]),
            ],
        };
        let err = ConfigAgentRegistry::from_config(&config).unwrap_err();
        let text = err.to_string();
        for expected in [
            "agents.packs[0].agents[1] (id \"bad id\"): id \"bad id\" must match",
            "agents.packs[0].agents[1] (id \"bad id\"): persona is empty",
            "agents.packs[1] (name \"acme.reviewer\"): another pack has the same name",
            "agents.packs[1].agents[0] (id \"dup\"): another agent has the same id (in pack \"acme.reviewer\")",
            "is longer than 122 bytes",
            "agents.approvals[0] (tenant \"t-a\", workspace \"w/a\"): workspace \"w/a\" must match",
            "agents.approvals[0] (tenant \"t-a\", workspace \"w/a\"): pack \"acme.nope\" is not declared in [[agents.packs]]",
            "agents.approvals[1] (tenant \"t-a\", workspace \"w-a\"): packs is empty",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in {text}");
        }
        assert_eq!(err.problems.len(), 8, "{:#?}", err.problems);
        assert!(!text.contains('\n'), "one line");
    }
}
