//! `cargo xtask openapi`: `api/openapi.json` from the server's own route annotations (utoipa),
//! with our `schemas/` as the component schemas.
//!
//! The document is printed by the `openapi_document` example of `wsp-server`, run as a
//! subprocess, so xtask itself does not link the server.

use std::process::Command;

use crate::Result;
use crate::project::{ensure_file_contents, project_root};

/// Writes (or, under `check`, verifies) `api/openapi.json`.
pub(crate) fn generate(check: bool) -> Result<()> {
    let out = Command::new(crate::project::cargo())
        .args([
            "run",
            "--quiet",
            "-p",
            "wsp-server",
            "--example",
            "openapi_document",
        ])
        .current_dir(project_root())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "the openapi_document example failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    ensure_file_contents(
        "api/openapi.json",
        &String::from_utf8(out.stdout)?,
        check,
        "cargo xtask openapi",
    )
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::project::project_root;

    fn load(relative: &str) -> Value {
        let text = std::fs::read_to_string(project_root().join(relative)).expect("file exists");
        serde_json::from_str(&text).expect("valid JSON")
    }

    /// The committed document is valid OpenAPI 3.1, with every schema checked against the
    /// OpenAPI 3.1 schema dialect (offline: the official schemas are vendored).
    #[test]
    fn the_document_is_valid_openapi_3_1() {
        let base = "xtask/assets/oas-3.1";
        let registry = jsonschema::Registry::new()
            .extend([
                (
                    "https://spec.openapis.org/oas/3.1/schema/2021-04-15",
                    load(&format!("{base}/schema.json")),
                ),
                (
                    "https://spec.openapis.org/oas/3.1/dialect/base",
                    load(&format!("{base}/dialect-base.schema.json")),
                ),
                (
                    "https://spec.openapis.org/oas/3.1/meta/base",
                    load(&format!("{base}/meta-base.schema.json")),
                ),
            ])
            .and_then(|b| b.prepare())
            .expect("the OpenAPI schemas form a registry");
        let schema = load(&format!("{base}/schema-base.json"));
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .offline()
            .with_registry(&registry)
            .build(&schema)
            .expect("the OpenAPI 3.1 schema compiles");
        let doc = load("api/openapi.json");
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "api/openapi.json is not valid OpenAPI 3.1:\n{}",
            errors.join("\n")
        );
        // A document that is not OpenAPI must fail, so the check above can fail.
        assert!(!validator.is_valid(&serde_json::json!({"openapi": "2.0", "paths": 5})));
    }

    /// Every example in the document's component schemas validates against its schema.
    #[test]
    fn every_component_example_validates() {
        let doc = load("api/openapi.json");
        let schemas = doc["components"]["schemas"]
            .as_object()
            .expect("components");
        let mut checked = 0;
        for (name, schema) in schemas {
            let Some(examples) = schema.get("examples").and_then(Value::as_array) else {
                continue;
            };
            // Resolve `#/components/schemas/...` against the whole document.
            let mut root = doc.clone();
            root["$ref"] = Value::from(format!("#/components/schemas/{name}"));
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .offline()
                .build(&root)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for example in examples {
                let errors: Vec<String> = validator
                    .iter_errors(example)
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{name} example {example}: {errors:?}");
                checked += 1;
            }
        }
        assert!(checked >= 8, "only {checked} examples found");
    }
}
