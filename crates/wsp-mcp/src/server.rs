//! The MCP server handler: the catalogue as `tools/list`, `call` as `tools/call`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use wsp_vfs::{ItemToolName, ItemsProfile, ToolDefinition, ToolOutput, Vfs, VfsError};

use crate::context::{CONTEXT_PROMPT, ContextRoot, ContextRootError, PromptError};
use crate::memory::MemoryTools;

/// The tool profile a server offers.
#[derive(Debug)]
pub enum Profile {
    /// `ls`, `read_file`, `write_file`, ... over a mount table.
    Files(Vfs),
    /// `workspace_list`, `workspace_read`, ... over one agent's keyed items.
    Items(ItemsProfile),
}

impl Profile {
    fn tools(&self) -> Vec<ToolDefinition> {
        match self {
            Self::Files(vfs) => vfs.tools(),
            Self::Items(items) => items.tools(),
        }
    }

    async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, VfsError> {
        match self {
            Self::Files(vfs) => vfs.call(name, args).await,
            Self::Items(items) => items.call(name, args).await,
        }
    }

    fn instructions(&self) -> String {
        match self {
            Self::Files(vfs) => vfs.filesystem_map(),
            Self::Items(items) => items_instructions(items),
        }
    }
}

/// What the model reads about the `items` profile (its counterpart of the filesystem map).
fn items_instructions(items: &ItemsProfile) -> String {
    let mut text = String::from(
        "## Workspace items\n\n\
         Your workspace holds items, each a key and a text value, kept outside this conversation. \
         workspace_list shows every key with a preview, who created it and when it last changed; \
         workspace_read, workspace_write and workspace_delete act on one key.\n",
    );
    if items.offers(ItemToolName::Publish) {
        text.push_str(
            "workspace_publish copies one of your items into a shared agent's workspace; it goes \
             one way, and you cannot read or change the shared agent's workspace.\n",
        );
    }
    text.push_str("There is no shell and no tool that runs programs.\n");
    text
}

/// An MCP server over one [`Profile`]. Cheap to clone: every HTTP session gets a clone, with
/// its own `resources/subscribe` subscriptions.
#[derive(Debug)]
pub struct McpServer {
    inner: Arc<Inner>,
    /// Where the `run_start_context` prompt reads from, when it is offered.
    context: Option<Arc<ContextRoot>>,
    /// The memory tools under the context root, and their catalogue entries.
    memory: Option<Arc<MemoryTools>>,
    memory_tools: Arc<Vec<Tool>>,
    /// The agent whose session index `session_record` keeps.
    session_agent: Option<String>,
    /// This session's `resources/subscribe` watches (never shared between clones).
    legacy: Arc<crate::resources::LegacySubscriptions>,
}

impl Clone for McpServer {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            context: self.context.clone(),
            memory: self.memory.clone(),
            memory_tools: self.memory_tools.clone(),
            session_agent: self.session_agent.clone(),
            legacy: Arc::default(),
        }
    }
}

#[derive(Debug)]
struct Inner {
    profile: Profile,
    /// The catalogue, converted once: it depends only on the mount table or the agent.
    tools: Vec<Tool>,
    instructions: String,
}

impl McpServer {
    /// A server offering `profile`'s tools.
    pub fn new(profile: Profile) -> Self {
        let tools = profile.tools().iter().map(mcp_tool).collect();
        let instructions = profile.instructions();
        Self {
            inner: Arc::new(Inner {
                profile,
                tools,
                instructions,
            }),
            context: None,
            memory: None,
            memory_tools: Arc::new(Vec::new()),
            session_agent: None,
            legacy: Arc::default(),
        }
    }

    /// This server also offering the prompt `run_start_context`: the run-start context
    /// (`wsp-context`) of the Workspace mounted at `root` (e.g. `/workspace`), read through the
    /// mount table with the agent's own scopes, every path shown as the agent reads it
    /// (`/workspace/MEMORY.md`). `root` must be a readable Workspace of the `files` profile.
    pub fn with_context_root(mut self, root: &str) -> Result<Self, ContextRootError> {
        let Profile::Files(vfs) = &self.inner.profile else {
            return Err(ContextRootError::items_profile(root));
        };
        self.context = Some(Arc::new(ContextRoot::new(vfs, root)?));
        self.refresh_memory();
        Ok(self)
    }

    /// This server keeping `agent`'s session index (`agents/<agent>/sessions/sessions.json`
    /// under the context root) with the tool `session_record`, offered when that file is
    /// readable and writable (in either order with [`McpServer::with_context_root`]). An agent
    /// id that is not one path component offers no `session_record`.
    pub fn with_session_agent(mut self, agent: &str) -> Self {
        self.session_agent = Some(agent.to_owned());
        self.refresh_memory();
        self
    }

    /// Recomputes the memory tools from the context root, the agent and the mount table: each
    /// of `memory_append`, `memory_search` and `session_record` is offered only where the
    /// scopes give it what it needs.
    fn refresh_memory(&mut self) {
        let (Some(context), Profile::Files(vfs)) = (&self.context, &self.inner.profile) else {
            return;
        };
        let memory = MemoryTools::new(vfs, context.root(), self.session_agent.as_deref());
        self.memory_tools = Arc::new(memory.tools());
        self.memory = Some(Arc::new(memory));
    }

    /// The names `prompts/list` answers with.
    pub fn prompt_names(&self) -> Vec<String> {
        self.context
            .iter()
            .map(|_| CONTEXT_PROMPT.to_owned())
            .collect()
    }

    /// A server offering the `files` profile of `vfs`.
    pub fn files(vfs: Vfs) -> Self {
        Self::new(Profile::Files(vfs))
    }

    /// A server offering the `items` profile.
    pub fn items(items: ItemsProfile) -> Self {
        Self::new(Profile::Items(items))
    }

    /// The names `tools/list` answers with, in catalogue order (the file tools, then the
    /// memory tools).
    pub fn tool_names(&self) -> Vec<String> {
        self.all_tools().map(|t| t.name.to_string()).collect()
    }

    fn all_tools(&self) -> impl Iterator<Item = &Tool> {
        self.inner.tools.iter().chain(self.memory_tools.iter())
    }

    /// The server instructions sent at `initialize`: the filesystem map for `files`.
    pub fn instructions(&self) -> &str {
        &self.inner.instructions
    }

    /// The filesystem whose readable files are resources: the `files` profile's, when it has
    /// a Workspace the agent can read.
    fn resources(&self) -> Option<&Vfs> {
        match &self.inner.profile {
            Profile::Files(vfs)
                if vfs
                    .workspaces()
                    .iter()
                    .any(|w| w.scope != wsp_vfs::AccessScope::WriteOnly) =>
            {
                Some(vfs)
            }
            _ => None,
        }
    }

    fn tool(&self, name: &str) -> Option<&Tool> {
        self.all_tools().find(|t| t.name == name)
    }
}

/// A catalogue entry as rmcp's tool type (same names, schema and hints).
fn mcp_tool(def: &ToolDefinition) -> Tool {
    let schema: JsonObject = match &def.input_schema {
        Value::Object(map) => map.clone(),
        // wsp-vfs schemas are objects; an object schema with no properties is the safe reading.
        _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
    };
    let a = def.annotations;
    Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema))
        .with_title(def.title.clone())
        .with_annotations(ToolAnnotations::from_raw(
            Some(def.title.clone()),
            Some(a.read_only_hint),
            Some(a.destructive_hint),
            Some(a.idempotent_hint),
            Some(a.open_world_hint),
        ))
}

/// A successful call: the model's text, and the same result as structured content.
fn success(output: ToolOutput) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
    if output.structured.is_object() {
        result.structured_content = Some(output.structured);
    }
    result
}

/// A failed call as a tool result the model can read and act on (`isError: true`).
fn failure(err: &VfsError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "{}: {}",
        err.code, err.message
    ))]);
    result.structured_content = Some(json!({
        "error": { "code": err.code.as_str(), "message": err.message }
    }));
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = match (self.context.is_some(), self.resources().is_some()) {
            (true, true) => ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
            (false, true) => ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
            (true, false) => ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
            (false, false) => ServerCapabilities::builder().enable_tools().build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("wsp", env!("CARGO_PKG_VERSION"))
                    .with_title("wsp agent workspaces"),
            )
            .with_instructions(self.inner.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.all_tools().cloned().collect(),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.context.iter().map(|c| c.prompt()).collect(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (Some(context), Profile::Files(vfs)) = (&self.context, &self.inner.profile) else {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt {:?}; this server offers none", request.name),
                None,
            ));
        };
        if request.name != CONTEXT_PROMPT {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt {:?}; the prompt here is {CONTEXT_PROMPT}",
                    request.name
                ),
                None,
            ));
        }
        let offers = |tool| self.memory.as_ref().is_some_and(|m| m.offers(tool));
        let (search, append) = (
            offers(crate::memory::MEMORY_SEARCH),
            offers(crate::memory::MEMORY_APPEND),
        );
        match context
            .get(vfs, request.arguments.as_ref(), search, append)
            .await
        {
            Ok(result) => Ok(result.into()),
            Err(PromptError::InvalidArguments(why)) => Err(ErrorData::invalid_params(why, None)),
            Err(PromptError::Unavailable(why)) => {
                tracing::warn!(%why, "run_start_context could not read its files");
                Err(ErrorData::internal_error(
                    format!("the workspace could not be read: {why}"),
                    None,
                ))
            }
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        match self.resources() {
            Some(vfs) => {
                let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
                crate::resources::list(vfs, cursor).await
            }
            None => Ok(ListResourcesResult::default()),
        }
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(match self.resources() {
            Some(_) => crate::resources::templates(),
            None => ListResourceTemplatesResult::default(),
        })
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(vfs) = self.resources() else {
            return Err(ErrorData::resource_not_found(
                format!("{}: this server offers no resources", request.uri),
                None,
            ));
        };
        crate::resources::read(vfs, &request.uri)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let Some(vfs) = self.resources() else {
            return Err(ErrorData::invalid_params(
                "this server offers no resources to subscribe to",
                None,
            ));
        };
        if !crate::resources::watchable(vfs, &request.uri) {
            return Err(ErrorData::invalid_params(
                format!(
                    "{} is not a file the agent can read (wsp:///path of a readable Workspace)",
                    request.uri
                ),
                None,
            ));
        }
        let inner = self.inner.clone();
        let (uri, peer) = (request.uri.clone(), context.peer.clone());
        let task = tokio::spawn(async move {
            if let Profile::Files(vfs) = &inner.profile {
                crate::resources::watch_one(vfs, uri, peer).await;
            }
        });
        self.legacy.start(request.uri, task);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.legacy.stop(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.resources()
            .map(|vfs| crate::resources::accepted(vfs, requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        match self.resources() {
            Some(vfs) => crate::resources::watch(vfs, context).await,
            None => context.cancelled().await,
        }
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // An unlisted tool is a protocol error (MCP: "Unknown tools"); everything the tool
        // itself refuses, including bad arguments, is a result the model can correct.
        if self.tool(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; the tools here are: {}",
                    request.name,
                    self.tool_names().join(", ")
                ),
                None,
            ));
        }
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let called = match (&self.memory, &self.inner.profile) {
            (Some(memory), Profile::Files(vfs)) if memory.offers(&request.name) => {
                memory.call(vfs, &request.name, args).await
            }
            _ => self.inner.profile.call(&request.name, args).await,
        };
        let result = match called {
            Ok(output) => success(output),
            Err(err) => {
                tracing::debug!(tool = %request.name, code = %err.code, "tool call refused");
                failure(&err)
            }
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_vfs::VfsErrorCode;

    #[test]
    fn a_tool_keeps_its_schema_and_hints() {
        let def = wsp_vfs::ToolName::WriteFile.definition();
        let tool = serde_json::to_value(mcp_tool(&def)).unwrap();
        let want = serde_json::to_value(&def).unwrap();
        assert_eq!(tool["name"], want["name"]);
        assert_eq!(tool["title"], want["title"]);
        assert_eq!(tool["description"], want["description"]);
        assert_eq!(tool["inputSchema"], want["inputSchema"]);
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert_eq!(
                tool["annotations"][hint], want["annotations"][hint],
                "{hint}"
            );
        }
    }

    #[test]
    fn an_error_result_carries_the_code() {
        let err = VfsError::new(VfsErrorCode::PermissionDenied, "/project is read-only");
        let result = serde_json::to_value(failure(&err)).unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["content"][0]["text"],
            "permission_denied: /project is read-only"
        );
        assert_eq!(
            result["structuredContent"]["error"]["code"],
            "permission_denied"
        );
    }
}
