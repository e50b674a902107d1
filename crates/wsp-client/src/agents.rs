//! The agent inventory (RFC 0072 §A, RFC 0074) and publishing into a shared agent's workspace
//! (wsp extension).

use reqwest::Method;
use wsp_types::wire::{AgentInventory, AgentInventoryEntry, PublishRequest, PublishResponse};

use crate::{Client, Error, encode_segment, header_value};

impl Client {
    /// `GET /v1/agents`: the agents available to this client's credential, sorted by
    /// `agentId`.
    pub async fn agents(&self) -> Result<AgentInventory, Error> {
        self.send(self.request(Method::GET, "/v1/agents")).await
    }

    /// `GET /v1/agents/{agentId}`: one agent; a 404 `not_found` for an agent this credential
    /// may not see, whether or not it exists.
    pub async fn agent(&self, agent_id: &str) -> Result<AgentInventoryEntry, Error> {
        let url = format!("/v1/agents/{}", encode_segment(agent_id));
        self.send(self.request(Method::GET, &url)).await
    }

    /// `POST /v1/host/workspace/publish`: copies one of this credential's files into the
    /// workspace of the shared agent `request.target_agent_id` (one way: private to shared).
    /// `idempotency_key` makes a retry safe.
    pub async fn publish(
        &self,
        request: &PublishRequest,
        idempotency_key: Option<&str>,
    ) -> Result<PublishResponse, Error> {
        let mut req = self
            .request(Method::POST, "/v1/host/workspace/publish")
            .json(request);
        if let Some(key) = idempotency_key {
            req = req.header("idempotency-key", header_value(key)?);
        }
        self.send(req).await
    }
}
