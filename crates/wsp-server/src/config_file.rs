//! The configuration file of `wsp serve` (`--config wsp.toml`): its shape, and the JSON Schema
//! generated from that shape (`schemas/config/wsp.schema.json`, by `cargo xtask codegen`), so
//! that editors can check a `wsp.toml` as it is typed.
//!
//! Hosts that embed the router may read the same shape from their own configuration; parsing
//! (TOML or otherwise) and resolving secrets from the environment are the caller's part.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use wsp_store::{Redactor, Secret};
use wsp_types::OwnerId;

use wsp_agents::{AgentsConfig, ID_PATTERN};

/// The `$id` of the generated schema.
pub const SCHEMA_ID: &str = "https://wsp.dev/schemas/config/wsp.schema.json";

/// The configuration file of `wsp serve` (TOML). Unknown keys are refused, so that a typo never
/// silently disables a setting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "wsp.toml")]
pub struct ConfigFile {
    /// Secret values redacted (WSR-1) from every write of a tenant (`[[secrets]]`).
    #[serde(default)]
    pub secrets: Vec<SecretConfig>,
    /// Agent packs, their agents and approvals (`[agents]`). Present: the host serves the agent
    /// inventory (`GET /v1/agents`), agent principals and publishing; absent: it does not.
    pub agents: Option<AgentsConfig>,
}

/// One secret (`[[secrets]]`): its value inline (`value`) or read from the environment
/// variable `value_env` when the server starts; exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    /// The tenant whose writes are redacted.
    #[schemars(pattern(ID_PATTERN))]
    pub tenant: String,
    /// The secret's id: its value is stored as `[REDACTED:<id>]`.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The secret value (8 characters at least).
    #[schemars(length(min = 8))]
    pub value: Option<String>,
    /// The environment variable holding the secret value.
    pub value_env: Option<String>,
}

/// What is wrong with the `[[secrets]]` of a [`ConfigFile`]; the message names the entry or the
/// tenant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SecretConfigError(pub String);

impl ConfigFile {
    /// The redactor of each tenant of `[[secrets]]`, as `wsp serve` builds them: each value is
    /// inline, or read by `env` from the variable `value_env` names (`None`: not set).
    pub fn redactors(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<HashMap<OwnerId, Redactor>, SecretConfigError> {
        let mut by_tenant: HashMap<OwnerId, Vec<Secret>> = HashMap::new();
        for (i, s) in self.secrets.iter().enumerate() {
            let at = format!("secrets[{i}] (id {:?})", s.id);
            let tenant = OwnerId::parse(&s.tenant)
                .map_err(|e| SecretConfigError(format!("{at}: tenant: {e}")))?;
            let value = match (&s.value, &s.value_env) {
                (Some(v), None) => v.clone(),
                (None, Some(var)) => env(var).ok_or_else(|| {
                    SecretConfigError(format!("{at}: environment variable {var} is not set"))
                })?,
                _ => {
                    return Err(SecretConfigError(format!(
                        "{at}: give exactly one of value, value_env"
                    )));
                }
            };
            by_tenant.entry(tenant).or_default().push(Secret {
                id: s.id.clone(),
                value,
            });
        }
        by_tenant
            .into_iter()
            .map(|(tenant, secrets)| match Redactor::new(secrets) {
                Ok(r) => Ok((tenant, r)),
                Err(e) => Err(SecretConfigError(format!(
                    "secrets of tenant {tenant}: {e}"
                ))),
            })
            .collect()
    }
}

/// The JSON Schema (2020-12) of [`ConfigFile`], with its `$id`.
pub fn json_schema() -> Value {
    let mut schema = schemars::schema_for!(ConfigFile).to_value();
    if let Value::Object(map) = &mut schema {
        map.insert("$id".into(), Value::from(SCHEMA_ID));
    }
    schema
}

/// [`json_schema`] as pretty JSON with a final newline: the exact bytes of
/// `schemas/config/wsp.schema.json`.
pub fn json_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema()).expect("schemas serialize");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_describes_the_file() {
        let schema = json_schema();
        assert_eq!(schema["$id"], SCHEMA_ID);
        assert_eq!(schema["title"], "wsp.toml");
        assert_eq!(schema["additionalProperties"], false);
        let props = schema["properties"].as_object().unwrap();
        assert!(props.contains_key("secrets") && props.contains_key("agents"));
        let text = json_schema_text();
        for key in [
            "install_scope",
            "system_prompt_ref",
            "tool_allowlist",
            "approvals",
            "value_env",
            "publish_prefix",
        ] {
            assert!(text.contains(&format!("\"{key}\"")), "{key} missing");
        }
    }
}
