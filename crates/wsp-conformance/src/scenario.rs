//! What a scenario is, what gates it, and the context it runs with.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use crate::config::{Config, KnownSecret};
use crate::outcome::Outcome;
use crate::transport::{Call, FILES, HISTORY, Reply, Transport, query_value};

/// What a scenario body returns. `Ok` carries the outcome it reached (usually a pass); `Err`
/// carries the outcome that ended it early (a failure, or blocked/inapplicable), so that every
/// check can end the scenario with `?`.
pub type ScenarioResult = Result<Outcome, Outcome>;

/// A scenario body.
pub type ScenarioFn = for<'a> fn(&'a Ctx) -> BoxFuture<'a, ScenarioResult>;

/// One conformance scenario: a stable id, the clause it checks, its gate and its body.
pub struct Scenario {
    /// Stable id, e.g. `WS-ETAG-001`. Never reused for another check.
    pub id: &'static str,
    /// The clause checked, e.g. `RFC 0059 §C` or `WIRE §4`.
    pub clause: &'static str,
    /// What discovery must advertise for the scenario to apply.
    pub gate: Gate,
    /// One line saying what is checked.
    pub title: &'static str,
    /// The body.
    pub run: ScenarioFn,
}

/// The discovery fields a scenario depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gate {
    /// Runs against every host.
    Always,
    /// Runs when every listed field is advertised: present in the discovery document (dotted
    /// path from its root) and not `false`, `null` or `0`.
    Advertised(&'static [&'static str]),
    /// Runs when the field is *not* advertised (checks what a host without it must answer).
    NotAdvertised(&'static str),
}

impl Gate {
    /// The gate as a short text for reports (`always`, `workspace.supported`, `!workspace.supported`).
    pub fn describe(&self) -> String {
        match self {
            Gate::Always => "always".into(),
            Gate::Advertised(fields) => fields.join(" + "),
            Gate::NotAdvertised(field) => format!("!{field}"),
        }
    }

    /// `Ok(())` when the scenario applies to a host with this discovery document, otherwise
    /// why not.
    pub fn evaluate(&self, discovery: &Value) -> Result<(), String> {
        match self {
            Gate::Always => Ok(()),
            Gate::Advertised(fields) => match fields.iter().find(|f| !advertised(discovery, f)) {
                None => Ok(()),
                Some(missing) => Err(format!("the host does not advertise {missing}")),
            },
            Gate::NotAdvertised(field) if advertised(discovery, field) => {
                Err(format!("the host advertises {field}"))
            }
            Gate::NotAdvertised(_) => Ok(()),
        }
    }
}

/// The value at a dotted path of the discovery document.
pub(crate) fn lookup<'v>(discovery: &'v Value, dotted: &str) -> Option<&'v Value> {
    dotted.split('.').try_fold(discovery, |v, key| v.get(key))
}

fn advertised(discovery: &Value, dotted: &str) -> bool {
    match lookup(discovery, dotted) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(_) => true,
    }
}

/// Who a request is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    A,
    B,
}

/// Everything a scenario body may use: the host, the keys, the discovery document, a path
/// prefix unique to this run and scenario.
#[derive(Clone)]
pub struct Ctx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) scenario: &'static str,
}

/// State shared by the scenarios of one run.
pub(crate) struct Shared {
    pub config: Config,
    pub transport: Transport,
    /// The discovery reply, or why it could not be had.
    pub discovery: Result<Reply, Outcome>,
    /// The discovery document, or the failure that prevented parsing it.
    pub discovery_doc: Result<Value, Outcome>,
    pub run_id: String,
    /// Paths outside the run prefix that a faulty host may have created (deleted at the end).
    pub strays: Mutex<Vec<(Role, String)>>,
}

impl Ctx {
    /// The run's configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The run's id (hex digits), unique to this run.
    pub(crate) fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// The prefix every path written in this run starts with: `conformance/<run-id>/`.
    pub(crate) fn run_prefix(&self) -> String {
        format!("conformance/{}/", self.shared.run_id)
    }

    /// The prefix of this scenario's paths: `conformance/<run-id>/<scenario-id>/`.
    pub(crate) fn prefix(&self) -> String {
        format!(
            "{}{}/",
            self.run_prefix(),
            self.scenario.to_ascii_lowercase()
        )
    }

    /// A path unique to this run and scenario.
    pub(crate) fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix())
    }

    /// Remembers a path outside the run prefix to delete at the end of the run.
    pub(crate) fn stray(&self, role: Role, path: &str) {
        if let Ok(mut strays) = self.shared.strays.lock() {
            strays.push((role, path.to_string()));
        }
    }

    /// The discovery reply (or the failure that replaced it).
    pub(crate) fn discovery_reply(&self) -> Result<&Reply, Outcome> {
        self.shared.discovery.as_ref().map_err(Clone::clone)
    }

    /// The discovery document as an object.
    pub(crate) fn discovery(&self) -> Result<&Map<String, Value>, Outcome> {
        match &self.shared.discovery_doc {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(Outcome::fail("the discovery document is not a JSON object")),
            Err(outcome) => Err(outcome.clone()),
        }
    }

    /// A positive integer advertised in the `workspace` block.
    pub(crate) fn workspace_limit(&self, key: &str) -> Option<u64> {
        self.shared
            .discovery_doc
            .as_ref()
            .ok()
            .and_then(|doc| doc.get("workspace"))
            .and_then(|ws| ws.get(key))
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
    }

    /// `true` when the `workspace` block says `versioned: true`.
    pub(crate) fn versioned(&self) -> bool {
        self.shared
            .discovery_doc
            .as_ref()
            .ok()
            .and_then(|doc| lookup(doc, "workspace.versioned"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Requests as owner A (blocked without key A).
    pub(crate) fn as_a(&self) -> Result<Caller<'_>, Outcome> {
        self.caller(
            self.shared.config.key_a.as_deref(),
            "owner A (--key-a / WSP_CONFORMANCE_KEY_A)",
        )
    }

    /// Requests as owner B (blocked without key B).
    pub(crate) fn as_b(&self) -> Result<Caller<'_>, Outcome> {
        self.caller(
            self.shared.config.key_b.as_deref(),
            "owner B (--key-b / WSP_CONFORMANCE_KEY_B)",
        )
    }

    /// Requests with the read-only key (blocked without it).
    pub(crate) fn as_readonly(&self) -> Result<Caller<'_>, Outcome> {
        self.caller(
            self.shared.config.key_readonly.as_deref(),
            "a read-only key (--key-readonly / WSP_CONFORMANCE_KEY_READONLY)",
        )
    }

    /// Requests without a credential.
    pub(crate) fn anonymous(&self) -> Caller<'_> {
        Caller {
            transport: &self.shared.transport,
            key: None,
        }
    }

    /// Requests with an arbitrary key (an unknown one, for 401).
    pub(crate) fn with_key<'k>(&'k self, key: &'k str) -> Caller<'k> {
        Caller {
            transport: &self.shared.transport,
            key: Some(key),
        }
    }

    /// The known secret for WSR-1 (blocked without it).
    pub(crate) fn secret(&self) -> Result<&KnownSecret, Outcome> {
        self.shared.config.secret.as_ref().ok_or_else(|| {
            Outcome::blocked("needs a secret the host redacts for owner A (--secret ID=VALUE / WSP_CONFORMANCE_SECRET)")
        })
    }

    fn caller<'k>(&'k self, key: Option<&'k str>, what: &str) -> Result<Caller<'k>, Outcome> {
        match key {
            Some(key) => Ok(Caller {
                transport: &self.shared.transport,
                key: Some(key),
            }),
            None => Err(Outcome::blocked(format!("needs {what}"))),
        }
    }
}

/// Builds requests with one credential (or none).
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    transport: &'a Transport,
    key: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// Any request; `path_and_query` is appended to the base URL as is.
    pub(crate) fn call(&self, method: &'static str, path_and_query: impl Into<String>) -> Call<'a> {
        self.transport.call(method, path_and_query).bearer(self.key)
    }

    /// `GET /v1/host/workspace/files/{path}` (path sent as given).
    pub(crate) fn get(&self, path: &str) -> Call<'a> {
        self.call("GET", format!("{FILES}/{path}"))
    }

    /// `GET /v1/host/workspace/files/{path}?version={version}`.
    pub(crate) fn get_version(&self, path: &str, version: impl std::fmt::Display) -> Call<'a> {
        self.call("GET", format!("{FILES}/{path}?version={version}"))
    }

    /// `PUT /v1/host/workspace/files/{path}` with `{"content": content}`.
    pub(crate) fn put(&self, path: &str, content: &str) -> Call<'a> {
        self.put_json(path, &serde_json::json!({ "content": content }))
    }

    /// `PUT /v1/host/workspace/files/{path}` with any JSON body.
    pub(crate) fn put_json(&self, path: &str, body: &Value) -> Call<'a> {
        self.call("PUT", format!("{FILES}/{path}")).json(body)
    }

    /// `DELETE /v1/host/workspace/files/{path}`.
    pub(crate) fn delete(&self, path: &str) -> Call<'a> {
        self.call("DELETE", format!("{FILES}/{path}"))
    }

    /// `GET /v1/host/workspace/files[?prefix=...]`.
    pub(crate) fn list(&self, prefix: Option<&str>) -> Call<'a> {
        match prefix {
            Some(prefix) => self.call("GET", format!("{FILES}?prefix={}", query_value(prefix))),
            None => self.call("GET", FILES),
        }
    }

    /// `GET /v1/host/workspace/history/{path}` (our extension).
    pub(crate) fn history(&self, path: &str) -> Call<'a> {
        self.call("GET", format!("{HISTORY}/{path}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gates() {
        let doc = json!({
            "workspace": {"supported": true, "versioned": false, "maxFileBytes": 10, "maxFiles": 0},
            "agents": {"manifestRuntime": {"supported": true}}
        });
        let cases: [(Gate, bool); 9] = [
            (Gate::Always, true),
            (Gate::Advertised(&["workspace.supported"]), true),
            (
                Gate::Advertised(&["workspace.supported", "workspace.versioned"]),
                false,
            ),
            (Gate::Advertised(&["workspace.maxFileBytes"]), true),
            (Gate::Advertised(&["workspace.maxFiles"]), false),
            (Gate::Advertised(&["workspace.maxVersions"]), false),
            (
                Gate::Advertised(&["agents.manifestRuntime.supported"]),
                true,
            ),
            (Gate::NotAdvertised("workspace.supported"), false),
            (Gate::NotAdvertised("workspace.versioned"), true),
        ];
        for (gate, applies) in cases {
            assert_eq!(gate.evaluate(&doc).is_ok(), applies, "{gate:?}");
        }
        let why = Gate::Advertised(&["workspace.supported", "workspace.versioned"])
            .evaluate(&doc)
            .unwrap_err();
        assert_eq!(why, "the host does not advertise workspace.versioned");
        assert_eq!(Gate::NotAdvertised("x.y").describe(), "!x.y");
        assert_eq!(Gate::Advertised(&["a", "b"]).describe(), "a + b");
    }
}
