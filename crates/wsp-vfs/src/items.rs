//! The `items` tool profile (seed 001): keyed items in the agent's home workspace, with one-way
//! publishing from a private agent into a shared agent's workspace.
//!
//! A private agent's home is the store owner `{tenant, user-<userId>}` (all of a user's private
//! agents share it); a shared agent's home is `{tenant, agent-<agentId>}`. Neither id is a tool
//! argument: the profile is built with the agent's identity. Shared agents never see a private
//! workspace and have no publish tool; publishing copies one item from the private home into a
//! shared agent's workspace, never the other way.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wsp_store::shared::{Publication, PublishError, PublishPrefix};
use wsp_store::{FileWrite, Precondition, StoreError, WorkspaceStore};
use wsp_types::{MediaType, Owner, OwnerId, OwnerIdError, WorkspacePath, WorkspacePrefix};

use crate::error::{VfsError, VfsErrorCode};
use crate::tools::{ToolAnnotations, ToolDefinition, ToolOutput, ToolResult, input_schema};

/// Characters of an item's value shown as its preview in `workspace_list`.
pub const PREVIEW_CHARS: usize = 80;

/// Items one `workspace_list` returns.
pub const MAX_LIST_ITEMS: usize = 500;

/// Whether an agent is one user's private agent or a shared agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// A private agent of the user `user_id`; its home is `user-<user_id>`.
    Private {
        /// The user the agent belongs to.
        user_id: OwnerId,
    },
    /// A shared agent; its home is `agent-<agent_id>`.
    Shared,
}

/// Who is calling the items tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentIdentity {
    tenant: OwnerId,
    agent_id: OwnerId,
    kind: AgentKind,
    home: Owner,
}

impl AgentIdentity {
    /// A private agent of `user_id`. Refused when `user-<user_id>` is not an identifier (over
    /// 128 bytes): two long ids must never be cut to the same home.
    pub fn private(
        tenant: OwnerId,
        agent_id: OwnerId,
        user_id: OwnerId,
    ) -> Result<Self, OwnerIdError> {
        let home = Owner::new(tenant.clone(), OwnerId::parse(&format!("user-{user_id}"))?);
        Ok(Self {
            tenant,
            agent_id,
            kind: AgentKind::Private { user_id },
            home,
        })
    }

    /// A shared agent. Refused when `agent-<agent_id>` is not an identifier (over 128 bytes).
    pub fn shared(tenant: OwnerId, agent_id: OwnerId) -> Result<Self, OwnerIdError> {
        let home = Owner::new(
            tenant.clone(),
            OwnerId::parse(&format!("agent-{agent_id}"))?,
        );
        Ok(Self {
            tenant,
            agent_id,
            kind: AgentKind::Shared,
            home,
        })
    }

    /// The store tenant of every workspace involved.
    pub fn tenant(&self) -> &OwnerId {
        &self.tenant
    }

    /// The agent's id, recorded as `created_by` on what it writes.
    pub fn agent_id(&self) -> &OwnerId {
        &self.agent_id
    }

    /// Private or shared.
    pub fn kind(&self) -> &AgentKind {
        &self.kind
    }

    /// The agent's home workspace: `{tenant, user-<userId>}` or `{tenant, agent-<agentId>}`.
    ///
    /// ```
    /// use wsp_types::OwnerId;
    /// use wsp_vfs::AgentIdentity;
    /// let id = |s: &str| OwnerId::parse(s).unwrap();
    /// let cook = AgentIdentity::shared(id("t"), id("cook")).unwrap();
    /// assert_eq!(cook.home().to_string(), "t/agent-cook");
    /// let main = AgentIdentity::private(id("t"), id("main"), id("u1")).unwrap();
    /// assert_eq!(main.home().to_string(), "t/user-u1");
    /// assert!(AgentIdentity::shared(id("t"), id(&"a".repeat(128))).is_err());
    /// ```
    pub fn home(&self) -> Owner {
        self.home.clone()
    }
}

/// The host's answer to "which shared agents can a private agent publish to?".
pub trait SharedAgents: Send + Sync {
    /// The workspace of the shared agent `agent_id`, or `None` when there is no such shared
    /// agent (an unknown id and a private agent's id are answered alike).
    fn workspace_of(&self, agent_id: &str) -> Option<Owner>;

    /// Whether at least one shared agent exists; `workspace_publish` is offered only then.
    fn any(&self) -> bool;

    /// Where publications into `agent_id`'s workspace land (default `inbox/`): a `target_key`
    /// must lie under it, and a publication without one lands at `<prefix><key>`.
    fn publish_prefix(&self, agent_id: &str) -> PublishPrefix {
        let _ = agent_id;
        PublishPrefix::default()
    }
}

/// A fixed set of shared agents of one tenant, for tests and static configurations.
#[derive(Debug, Clone, Default)]
pub struct SharedAgentList {
    tenant: Option<OwnerId>,
    agents: BTreeSet<OwnerId>,
}

impl SharedAgentList {
    /// An empty list for `tenant`.
    pub fn new(tenant: OwnerId) -> Self {
        Self {
            tenant: Some(tenant),
            agents: BTreeSet::new(),
        }
    }

    /// Adds the shared agent `agent_id`.
    pub fn with(mut self, agent_id: OwnerId) -> Self {
        self.agents.insert(agent_id);
        self
    }
}

impl SharedAgents for SharedAgentList {
    fn workspace_of(&self, agent_id: &str) -> Option<Owner> {
        let tenant = self.tenant.clone()?;
        let id = self.agents.iter().find(|a| a.as_str() == agent_id)?;
        Some(AgentIdentity::shared(tenant, id.clone()).ok()?.home())
    }

    fn any(&self) -> bool {
        self.tenant.is_some() && !self.agents.is_empty()
    }
}

/// A tool of the `items` profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ItemToolName {
    /// `workspace_list {}`
    List,
    /// `workspace_read {key}`
    Read,
    /// `workspace_write {key, value}`
    Write,
    /// `workspace_delete {key}`
    Delete,
    /// `workspace_publish {key, target_agent_id, target_key?}`
    Publish,
}

impl ItemToolName {
    /// Every items tool, in catalogue order.
    pub const ALL: [ItemToolName; 5] = [
        Self::List,
        Self::Read,
        Self::Write,
        Self::Delete,
        Self::Publish,
    ];

    /// The tool's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::List => "workspace_list",
            Self::Read => "workspace_read",
            Self::Write => "workspace_write",
            Self::Delete => "workspace_delete",
            Self::Publish => "workspace_publish",
        }
    }

    /// The tool called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The tool's definition.
    pub fn definition(self) -> ToolDefinition {
        let writes = ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: true,
            open_world_hint: false,
        };
        let (title, description, schema, annotations) = match self {
            Self::List => (
                "List workspace items",
                "List the items in your workspace: each key with a short preview, who created it and when it was \
                 last updated.",
                input_schema::<ItemListArgs>(),
                ToolAnnotations::read_only(),
            ),
            Self::Read => (
                "Read a workspace item",
                "Read the full value of the item with this key.",
                input_schema::<ItemKeyArgs>(),
                ToolAnnotations::read_only(),
            ),
            Self::Write => (
                "Write a workspace item",
                "Create or replace the item with this key. The value is any text: JSON for structured data or \
                 plain text.",
                input_schema::<ItemWriteArgs>(),
                writes,
            ),
            Self::Delete => (
                "Delete a workspace item",
                "Remove the item with this key.",
                input_schema::<ItemKeyArgs>(),
                writes,
            ),
            Self::Publish => (
                "Publish an item to a shared agent",
                "Copy an item from your workspace into the workspace of a shared agent (one way: the shared agent \
                 sees the copy, never your workspace). Copies land in the shared agent's inbox: without \
                 `target_key` at `inbox/<key>`; a `target_key` must start with `inbox/`. An item already there \
                 under that key is replaced.",
                input_schema::<PublishArgs>(),
                writes,
            ),
        };
        ToolDefinition {
            name: self.as_str().to_owned(),
            title: title.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
            annotations,
        }
    }
}

/// Arguments of `workspace_list` (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemListArgs {}

/// Arguments of `workspace_read` and `workspace_delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemKeyArgs {
    /// The item's key, e.g. `shopping-list` or `recipes/soup.md`.
    pub key: String,
}

/// Arguments of `workspace_write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemWriteArgs {
    /// The item's key.
    pub key: String,
    /// The whole value: JSON text for structured data, or plain text.
    pub value: String,
}

/// Arguments of `workspace_publish`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishArgs {
    /// The key of the item in your workspace.
    pub key: String,
    /// The id of the shared agent to publish to.
    pub target_agent_id: String,
    /// The key in the shared agent's workspace, under its inbox (default: `inbox/<key>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_key: Option<String>,
}

/// One item in a `workspace_list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemSummary {
    /// The key.
    pub key: String,
    /// The first characters of the value, on one line.
    pub preview: String,
    /// The agent that wrote the current version (the store's `author`), when known.
    pub created_by: Option<String>,
    /// When the current version was written (RFC 3339).
    pub updated_at: String,
}

/// The result of `workspace_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemList {
    /// The items, sorted by key.
    pub items: Vec<ItemSummary>,
    /// More items exist than were listed.
    pub truncated: bool,
}

impl ToolResult for ItemList {
    fn render(&self) -> String {
        if self.items.is_empty() {
            return "(the workspace has no items)\n".to_owned();
        }
        let mut out = String::new();
        for item in &self.items {
            let by = item.created_by.as_deref().unwrap_or("unknown");
            let _ = writeln!(
                out,
                "{}: {} (by {by}, updated {})",
                item.key, item.preview, item.updated_at
            );
        }
        if self.truncated {
            let _ = writeln!(out, "(list cut at {} items)", self.items.len());
        }
        out
    }
}

/// The result of `workspace_read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// The key.
    pub key: String,
    /// The whole value.
    pub value: String,
    /// The agent that wrote the current version, when known.
    pub created_by: Option<String>,
    /// When the current version was written (RFC 3339).
    pub updated_at: String,
}

impl ToolResult for Item {
    fn render(&self) -> String {
        self.value.clone()
    }
}

/// The result of `workspace_write`, `workspace_delete` and `workspace_publish`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemChanged {
    /// What was done, in words.
    pub summary: String,
}

impl ToolResult for ItemChanged {
    fn render(&self) -> String {
        format!("{}\n", self.summary)
    }
}

fn item_key(raw: &str) -> Result<WorkspacePath, VfsError> {
    WorkspacePath::parse(raw).map_err(|e| {
        VfsError::invalid_path(format!(
            "{raw:?} is not a valid key ({e}); keys use ASCII letters, digits, '.', '_', '-' and '/', starting with a \
             letter or digit"
        ))
    })
}

fn store_error(err: StoreError, key: &str) -> VfsError {
    VfsError::from_store(err, format_args!("item {key:?}"))
}

fn preview(value: &str) -> String {
    let flat: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(PREVIEW_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// What a list shows for an item written as bytes over HTTP.
fn binary_preview(meta: &wsp_store::FileMeta) -> String {
    format!("binary {}, {} bytes", meta.content_type, meta.size)
}

fn content_type_of(value: &str) -> &'static str {
    match serde_json::from_str::<Value>(value) {
        Ok(v) if v.is_object() || v.is_array() => "application/json",
        _ => "text/plain",
    }
}

/// Copies the item `key` of `publisher`'s home into the workspace of the shared agent
/// `target_agent_id`, under `target_key` (default `<prefix><key>`, the prefix being
/// [`SharedAgents::publish_prefix`]), replacing what is there. A `target_key` outside the
/// prefix is refused.
///
/// The one implementation of publishing, for the items profile and for HTTP hosts alike. It
/// refuses, before touching the store, a shared publisher (publishing goes one way only) and a
/// target that `shared` does not know as a shared agent.
pub async fn publish_item(
    store: &dyn WorkspaceStore,
    publisher: &AgentIdentity,
    shared: &dyn SharedAgents,
    args: &PublishArgs,
) -> Result<ItemChanged, VfsError> {
    if publisher.kind == AgentKind::Shared {
        return Err(VfsError::denied(
            "a shared agent cannot publish: publishing goes one way, from a private workspace into a shared agent's",
        ));
    }
    let key = item_key(&args.key)?;
    let target_key = args.target_key.as_deref().map(item_key).transpose()?;
    let target = shared.workspace_of(&args.target_agent_id).ok_or_else(|| {
        VfsError::new(
            VfsErrorCode::NotFound,
            format!(
                "there is no shared agent {:?} to publish to",
                args.target_agent_id
            ),
        )
    })?;
    // The copy itself is the one publishing operation HTTP hosts run too.
    let publication = Publication {
        source: publisher.home(),
        source_is_shared: false,
        path: key.clone(),
        target: Some(target),
        target_path: target_key,
        prefix: shared.publish_prefix(&args.target_agent_id),
        author: Some(publisher.agent_id.to_string()),
    };
    let copy = publication.run(store).await.map_err(|e| match e {
        PublishError::SameWorkspace => VfsError::invalid_argument(
            "the target is your own workspace; publish to a shared agent's workspace",
        ),
        PublishError::SourceIsShared | PublishError::TargetNotShared => VfsError::denied(
            "publishing goes one way, from a private workspace into a shared agent's",
        ),
        PublishError::OutsidePrefix { prefix } => VfsError::denied(format!(
            "target_key must start with {prefix}: copies land only in the shared agent's {prefix}; \
             use a key under {prefix} or leave target_key out"
        )),
        PublishError::Unplaceable { prefix, .. } => VfsError::invalid_argument(format!(
            "{prefix}{key} would be longer than a key may be; pass a shorter target_key under {prefix}"
        )),
        PublishError::Source(e) => store_error(e, key.as_str()),
        PublishError::Target { path, error } => store_error(error, path.as_str()),
        // A refusal this build does not know yet: its own words, nothing stored.
        other => VfsError::invalid_argument(other.to_string()),
    })?;
    Ok(ItemChanged {
        summary: format!(
            "published {key} to shared agent {} as {}",
            args.target_agent_id, copy.meta.path
        ),
    })
}

/// The `items` tool profile over a [`WorkspaceStore`], for one agent.
pub struct ItemsProfile {
    store: Arc<dyn WorkspaceStore>,
    agent: AgentIdentity,
    shared: Arc<dyn SharedAgents>,
}

impl std::fmt::Debug for ItemsProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemsProfile")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl ItemsProfile {
    /// The profile of `agent` over `store`, publishing to the shared agents `shared` knows.
    pub fn new(
        store: Arc<dyn WorkspaceStore>,
        agent: AgentIdentity,
        shared: Arc<dyn SharedAgents>,
    ) -> Self {
        Self {
            store,
            agent,
            shared,
        }
    }

    /// The calling agent.
    pub fn agent(&self) -> &AgentIdentity {
        &self.agent
    }

    /// Whether `tool` is offered: all but `workspace_publish` always; that one to a private agent
    /// when a shared agent exists.
    pub fn offers(&self, tool: ItemToolName) -> bool {
        tool != ItemToolName::Publish
            || (matches!(self.agent.kind, AgentKind::Private { .. }) && self.shared.any())
    }

    /// The tool catalogue of this agent.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        ItemToolName::ALL
            .into_iter()
            .filter(|t| self.offers(*t))
            .map(ItemToolName::definition)
            .collect()
    }

    /// Runs the tool `name` with JSON `args`.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, VfsError> {
        let tool = ItemToolName::parse(name)
            .filter(|t| self.offers(*t))
            .ok_or_else(|| {
                let names: Vec<String> = self.tools().into_iter().map(|t| t.name).collect();
                VfsError::invalid_argument(format!(
                    "there is no tool {name:?} here; the available tools are: {}",
                    names.join(", ")
                ))
            })?;
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        let bad = |e: serde_json::Error| {
            VfsError::invalid_argument(format!("bad arguments for {}: {e}", tool.as_str()))
        };
        Ok(match tool {
            ItemToolName::List => {
                let _: ItemListArgs = serde_json::from_value(args).map_err(bad)?;
                self.list().await?.into_output()
            }
            ItemToolName::Read => {
                let a: ItemKeyArgs = serde_json::from_value(args).map_err(bad)?;
                self.read(&a.key).await?.into_output()
            }
            ItemToolName::Write => {
                let a: ItemWriteArgs = serde_json::from_value(args).map_err(bad)?;
                self.write(&a.key, a.value).await?.into_output()
            }
            ItemToolName::Delete => {
                let a: ItemKeyArgs = serde_json::from_value(args).map_err(bad)?;
                self.delete(&a.key).await?.into_output()
            }
            ItemToolName::Publish => {
                let a: PublishArgs = serde_json::from_value(args).map_err(bad)?;
                self.publish(&a).await?.into_output()
            }
        })
    }

    /// `workspace_list`: every item with a preview, sorted by key.
    pub async fn list(&self) -> Result<ItemList, VfsError> {
        let home = self.agent.home();
        let metas = self
            .store
            .list(&home, &WorkspacePrefix::all())
            .await
            .map_err(|e| store_error(e, ""))?;
        let truncated = metas.len() > MAX_LIST_ITEMS;
        let mut items = Vec::new();
        for meta in metas.into_iter().take(MAX_LIST_ITEMS) {
            let preview = if meta.encoding.is_binary() {
                binary_preview(&meta)
            } else {
                match self.store.get(&home, &meta.path, None).await {
                    Ok(file) => preview(&file.content),
                    Err(StoreError::NotFound) => continue,
                    Err(e) => return Err(store_error(e, meta.path.as_str())),
                }
            };
            items.push(ItemSummary {
                key: meta.path.into_string(),
                preview,
                created_by: meta.author,
                updated_at: meta.updated_at.to_rfc3339(),
            });
        }
        Ok(ItemList { items, truncated })
    }

    /// `workspace_read`: one item's whole value.
    pub async fn read(&self, key: &str) -> Result<Item, VfsError> {
        let path = item_key(key)?;
        let file = self
            .store
            .get(&self.agent.home(), &path, None)
            .await
            .map_err(|e| store_error(e, key))?;
        if file.meta.encoding.is_binary() {
            return Err(VfsError::new(
                VfsErrorCode::InvalidArgument,
                format!(
                    "item {key:?} holds bytes ({}), not text: items are text values",
                    binary_preview(&file.meta)
                ),
            ));
        }
        Ok(Item {
            key: path.into_string(),
            value: file.content,
            created_by: file.meta.author,
            updated_at: file.meta.updated_at.to_rfc3339(),
        })
    }

    /// `workspace_write`: create or replace an item.
    pub async fn write(&self, key: &str, value: String) -> Result<ItemChanged, VfsError> {
        let path = item_key(key)?;
        let content_type = MediaType::from_static(content_type_of(&value));
        let write = FileWrite::text(value, content_type).by(self.agent.agent_id.to_string());
        let stored = self
            .store
            .put(&self.agent.home(), &path, write, Precondition::None)
            .await
            .map_err(|e| store_error(e, key))?;
        let how = if stored.meta.version == 1 {
            "created"
        } else {
            "updated"
        };
        Ok(ItemChanged {
            summary: format!("{how} item {path}"),
        })
    }

    /// `workspace_delete`: remove an item.
    pub async fn delete(&self, key: &str) -> Result<ItemChanged, VfsError> {
        let path = item_key(key)?;
        self.store
            .delete(&self.agent.home(), &path, Precondition::None)
            .await
            .map_err(|e| store_error(e, key))?;
        Ok(ItemChanged {
            summary: format!("deleted item {path}"),
        })
    }

    /// `workspace_publish`: see [`publish_item`].
    pub async fn publish(&self, args: &PublishArgs) -> Result<ItemChanged, VfsError> {
        publish_item(self.store.as_ref(), &self.agent, self.shared.as_ref(), args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_short_and_flat() {
        assert_eq!(preview("a\n  b\tc"), "a b c");
        let long = "x".repeat(200);
        let p = preview(&long);
        assert_eq!(p.chars().count(), PREVIEW_CHARS + 1);
        assert!(p.ends_with('…'));
    }

    #[test]
    fn json_values_are_recorded_as_json() {
        assert_eq!(content_type_of("{\"a\":1}"), "application/json");
        assert_eq!(content_type_of("[1]"), "application/json");
        assert_eq!(content_type_of("42"), "text/plain");
        assert_eq!(content_type_of("milk, eggs"), "text/plain");
    }

    #[test]
    fn homes_are_never_cut() {
        let t = OwnerId::parse("t").unwrap();
        let longest = OwnerId::parse(&"a".repeat(122)).unwrap();
        assert_eq!(
            AgentIdentity::shared(t.clone(), longest.clone())
                .unwrap()
                .home()
                .workspace
                .as_str()
                .len(),
            128
        );
        let over = OwnerId::parse(&"a".repeat(123)).unwrap();
        assert!(AgentIdentity::shared(t.clone(), over.clone()).is_err());
        assert!(
            AgentIdentity::private(t.clone(), longest.clone(), over.clone()).is_ok(),
            "user- is one byte shorter"
        );
        let over_user = OwnerId::parse(&"a".repeat(124)).unwrap();
        assert!(AgentIdentity::private(t, longest, over_user).is_err());
    }
}
