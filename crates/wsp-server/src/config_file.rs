//! The configuration file of `wsp serve` (`--config wsp.toml`): its shape, and the JSON Schema
//! generated from that shape (`schemas/config/wsp.schema.json`, by `cargo xtask codegen`), so
//! that editors can check a `wsp.toml` as it is typed.
//!
//! Hosts that embed the router may read the same shape from their own configuration; parsing
//! (TOML or otherwise) and resolving secrets from the environment are the caller's part.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::agent_config::{AgentsConfig, ID_PATTERN};

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
