//! The JSON Schema of `wsp serve`'s configuration file, `schemas/config/wsp.schema.json`,
//! generated from its Rust types (`wsp_server::config_file::ConfigFile`, schemars) by
//! `cargo xtask codegen`.
//!
//! The schema is printed by the `config_schema` example of `wsp-server`, run as a subprocess,
//! so xtask itself does not link the server.

use std::process::Command;

use crate::Result;
use crate::project::{ensure_file_contents, project_root};

/// The generated file, relative to the project root.
pub(crate) const OUTPUT: &str = "schemas/config/wsp.schema.json";

/// Writes (or, under `check`, verifies) the configuration file's schema.
pub(crate) fn generate(check: bool) -> Result<()> {
    let out = Command::new(crate::project::cargo())
        .args([
            "run",
            "--quiet",
            "-p",
            "wsp-server",
            "--example",
            "config_schema",
        ])
        .current_dir(project_root())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "the config_schema example of wsp-server failed (wire.rs is up to date; the \
             configuration schema needs the server to build):\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    ensure_file_contents(
        OUTPUT,
        &String::from_utf8(out.stdout)?,
        check,
        "cargo xtask codegen",
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::OUTPUT;
    use crate::project::project_root;

    fn validator() -> jsonschema::Validator {
        let text = std::fs::read_to_string(project_root().join(OUTPUT)).expect("committed");
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        jsonschema::meta::validate(&schema).expect("a valid 2020-12 schema");
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .offline()
            .build(&schema)
            .expect("the schema compiles")
    }

    fn toml(text: &str) -> Value {
        toml::from_str(text).expect("valid TOML")
    }

    /// The configuration of the issue and of the README validates; typos and bad values do not.
    #[test]
    fn the_schema_checks_wsp_toml() {
        let v = validator();
        let good = toml(
            r#"
[[secrets]]
tenant = "default"
id = "openai"
value_env = "OPENAI_API_KEY"

[agents]
install_scope = "tenant"

[[agents.packs]]
name = "acme.reviewer"
version = "1.0.0"

[[agents.packs.agents]]
id = "acme.reviewer.default"
persona = "Code Reviewer"
label = "Code Reviewer"
model_class = "coding"
tool_allowlist = ["fs.read"]
shared = false
system_prompt_ref = "prompts/reviewer.md"

[[agents.approvals]]
tenant = "t-a"
workspace = "w-a"
packs = ["acme.reviewer"]
"#,
        );
        let errors: Vec<String> = v.iter_errors(&good).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert!(v.is_valid(&json!({})), "an empty file is valid");
        for (pointer, bad) in [
            ("/agents/install_scope", json!("project")),
            (
                "/agents/packs/0/agents/0/system_prompt",
                json!("inline prompt"),
            ),
            ("/agents/packs/0/agents/0/id", json!("a/b")),
            ("/agents/packs/0/agents/0/persona", json!("")),
            ("/agents/approvals/0/packs", json!([])),
            ("/agents/approvals/0/workspace", json!("w a")),
            ("/secrets/0/value", json!("short")),
            ("/listen", json!("0.0.0.0:1")),
        ] {
            let mut doc = good.clone();
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let target = if parent.is_empty() {
                &mut doc
            } else {
                doc.pointer_mut(parent).unwrap()
            };
            target[key] = bad;
            assert!(!v.is_valid(&doc), "{pointer} should be refused");
        }
        let mut missing = good.clone();
        missing["agents"]["packs"][0]["agents"][0]
            .as_object_mut()
            .unwrap()
            .remove("tool_allowlist");
        assert!(!v.is_valid(&missing), "tool_allowlist is required");
    }
}
