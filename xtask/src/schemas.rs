//! The JSON Schemas of `schemas/`: loading, and bundling them into one document.
//!
//! Each file is one schema resource whose `$id` is [`ID_BASE`] plus its file name and whose
//! `title` is the Rust type it becomes. Files refer to each other by relative `$ref` (the file
//! name). Tools that cannot follow references between files (typify; an OpenAPI
//! `components.schemas` section) get a [`bundle`]: one map from title to schema in which every
//! file reference points inside the bundle.

use std::collections::BTreeSet;
use std::fs;

use serde_json::{Map, Value};

use crate::Result;
use crate::project::project_root;

/// The `$id` of every schema is this prefix followed by its file name.
pub(crate) const ID_BASE: &str = "https://wsp.dev/schemas/";

/// The folder of the schemas, relative to the project root.
pub(crate) const SCHEMA_DIR: &str = "schemas";

/// One `schemas/*.schema.json` file.
#[derive(Debug, Clone)]
pub(crate) struct SchemaFile {
    /// The file name, such as `workspace-file.schema.json`.
    pub(crate) file_name: String,
    /// The schema's `title`, which is also the generated Rust type name.
    pub(crate) title: String,
    /// The schema as written.
    pub(crate) schema: Value,
}

/// Reads every `schemas/*.schema.json`, sorted by file name, and checks its `$id` and `title`.
pub(crate) fn load_all() -> Result<Vec<SchemaFile>> {
    let dir = project_root().join(SCHEMA_DIR);
    let mut names = Vec::new();
    for entry in fs::read_dir(&dir)? {
        let name = entry?
            .file_name()
            .into_string()
            .map_err(|n| format!("odd file name {n:?}"))?;
        if name.ends_with(".schema.json") {
            names.push(name);
        }
    }
    names.sort();
    names
        .into_iter()
        .map(|file_name| {
            let text = fs::read_to_string(dir.join(&file_name))?;
            let schema: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{SCHEMA_DIR}/{file_name}: {e}"))?;
            parse_file(file_name, schema)
        })
        .collect()
}

fn parse_file(file_name: String, schema: Value) -> Result<SchemaFile> {
    let id = schema.get("$id").and_then(Value::as_str);
    let expected = format!("{ID_BASE}{file_name}");
    if id != Some(expected.as_str()) {
        return Err(format!("{file_name}: `$id` must be {expected:?}, found {id:?}").into());
    }
    let title = schema
        .get("title")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{file_name}: no `title`"))?
        .to_owned();
    Ok(SchemaFile {
        file_name,
        title,
        schema,
    })
}

/// Bundles `files` into one map from title to schema.
///
/// Each file becomes one entry under its title, and so does each entry of a file's own
/// `$defs` (whose key must be its title). Every `$ref`, whether to a file (`other.schema.json`)
/// or local (`#/$defs/Name`), becomes `ref_prefix` + the title (typify wants `#/$defs/`, an
/// OpenAPI document `#/components/schemas/`). The per-file `$schema` and `$id` are dropped,
/// since the bundle is one resource. Fails on a reference to nothing and on a `title` used
/// twice anywhere, since titles become type names.
pub(crate) fn bundle(files: &[SchemaFile], ref_prefix: &str) -> Result<Map<String, Value>> {
    let mut titles = BTreeSet::new();
    for file in files {
        collect_titles(&file.schema, &file.file_name, &mut titles)?;
    }
    let mut defs = Map::new();
    for file in files {
        let mut schema = file.schema.clone();
        let local = match &mut schema {
            Value::Object(root) => {
                root.remove("$schema");
                root.remove("$id");
                match root.remove("$defs") {
                    Some(Value::Object(local)) => local,
                    Some(_) => {
                        return Err(format!("{}: `$defs` is not an object", file.file_name).into());
                    }
                    None => Map::new(),
                }
            }
            _ => return Err(format!("{}: not an object schema", file.file_name).into()),
        };
        let context = RefContext {
            files,
            local: &local,
            prefix: ref_prefix,
            file: &file.file_name,
        };
        for (name, mut def) in local.clone() {
            if def.get("title").and_then(Value::as_str) != Some(name.as_str()) {
                return Err(format!(
                    "{}: `$defs/{name}` needs the title {name:?}",
                    file.file_name
                )
                .into());
            }
            context.rewrite(&mut def)?;
            defs.insert(name, def);
        }
        context.rewrite(&mut schema)?;
        defs.insert(file.title.clone(), schema);
    }
    Ok(defs)
}

fn collect_titles(schema: &Value, file: &str, seen: &mut BTreeSet<String>) -> Result<()> {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(title)) = map.get("title")
                && !seen.insert(title.clone())
            {
                return Err(format!("{file}: title {title:?} is used twice").into());
            }
            for (key, value) in map {
                // Examples are data, not schemas: a `title` inside one is not a type name.
                if key != "examples" && key != "default" && key != "const" && key != "enum" {
                    collect_titles(value, file, seen)?;
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_titles(item, file, seen)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a `$ref` inside one file can name.
struct RefContext<'a> {
    files: &'a [SchemaFile],
    local: &'a Map<String, Value>,
    prefix: &'a str,
    file: &'a str,
}

impl RefContext<'_> {
    fn rewrite(&self, value: &mut Value) -> Result<()> {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get_mut("$ref") {
                    *target = format!("{}{}", self.prefix, self.title_of(target)?);
                }
                for (key, child) in map.iter_mut() {
                    if key != "examples" {
                        self.rewrite(child)?;
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.rewrite(item)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn title_of(&self, target: &str) -> Result<String> {
        if let Some(name) = target.strip_prefix("#/$defs/") {
            if self.local.contains_key(name) {
                return Ok(name.to_owned());
            }
        } else if let Some(file) = self.files.iter().find(|f| f.file_name == target) {
            return Ok(file.title.clone());
        }
        Err(format!(
            "{}: `$ref` {target:?} names no schema file and no local `$defs` entry",
            self.file
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A validator for `file_name` that resolves the relative references between files.
    fn validator(files: &[SchemaFile], file_name: &str) -> jsonschema::Validator {
        let resources = files
            .iter()
            .map(|f| (format!("{ID_BASE}{}", f.file_name), &f.schema));
        let registry = jsonschema::Registry::new()
            .extend(resources)
            .and_then(|builder| builder.prepare())
            .expect("schemas form a registry");
        let schema = &files
            .iter()
            .find(|f| f.file_name == file_name)
            .expect("known file")
            .schema;
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .offline()
            .with_registry(&registry)
            .build(schema)
            .unwrap_or_else(|e| panic!("{file_name} does not compile: {e}"))
    }

    #[test]
    fn every_schema_is_valid_2020_12() {
        for file in load_all().unwrap() {
            if let Err(e) = jsonschema::meta::validate(&file.schema) {
                panic!("{}: {e} at {}", file.file_name, e.instance_path());
            }
        }
    }

    #[test]
    fn every_example_matches_its_schema() {
        let files = load_all().unwrap();
        for file in &files {
            let examples = file.schema["examples"].as_array();
            let examples = examples.unwrap_or_else(|| panic!("{} has no examples", file.file_name));
            assert!(!examples.is_empty(), "{} has no examples", file.file_name);
            let validator = validator(&files, &file.file_name);
            for example in examples {
                let errors: Vec<String> = validator
                    .iter_errors(example)
                    .map(|e| e.to_string())
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{}: {example} is invalid: {errors:?}",
                    file.file_name
                );
            }
        }
    }

    /// Every object says whether it is open, and every property is documented (typify turns
    /// descriptions into the doc comments the `missing_docs` lint asks for).
    #[test]
    fn every_object_is_explicit_and_every_property_documented() {
        fn walk(schema: &Value, at: &str) {
            let Value::Object(map) = schema else { return };
            assert!(map.contains_key("description"), "{at}: no description");
            if map.get("type") == Some(&json!("object")) {
                assert!(
                    map.contains_key("additionalProperties"),
                    "{at}: additionalProperties unset"
                );
            }
            for (group, sep) in [("properties", "."), ("$defs", "#")] {
                if let Some(Value::Object(children)) = map.get(group) {
                    for (name, child) in children {
                        walk(child, &format!("{at}{sep}{name}"));
                    }
                }
            }
            if let Some(items) = map.get("items")
                && items.get("type") == Some(&json!("object"))
            {
                walk(items, &format!("{at}[]"));
            }
        }
        for file in load_all().unwrap() {
            walk(&file.schema, &file.file_name);
        }
    }

    fn check(file_name: &str, instance: Value, valid: bool) {
        let files = load_all().unwrap();
        let validator = validator(&files, file_name);
        assert_eq!(
            validator.is_valid(&instance),
            valid,
            "{file_name}: {instance}"
        );
    }

    #[test]
    fn schemas_accept_and_refuse_what_the_wire_contract_says() {
        let meta = json!({"path": "a.md", "version": 1, "updatedAt": "2026-05-25T10:00:00Z"});
        check("workspace-file-meta.schema.json", meta.clone(), true);
        let mut with_content = meta.clone();
        with_content["content"] = json!("x");
        check(
            "workspace-file-meta.schema.json",
            with_content.clone(),
            false,
        );
        check("workspace-file.schema.json", with_content.clone(), true);
        for (key, bad) in [
            ("path", json!("/etc/passwd")),
            ("path", json!("")),
            ("path", json!("a b.md")),
            ("path", json!("a".repeat(257))),
            ("version", json!(0)),
            ("version", json!(1.5)),
            ("updatedAt", json!("yesterday")),
            ("nonsense", json!(true)),
        ] {
            let mut file = with_content.clone();
            file[key] = bad;
            check("workspace-file.schema.json", file, false);
        }
        check(
            "workspace-file-list.schema.json",
            json!({"files": [meta.clone()]}),
            true,
        );
        check(
            "workspace-file-list.schema.json",
            json!({"files": [with_content]}),
            false,
        );
        check("workspace-file-list.schema.json", json!({}), false);
        check(
            "workspace-file-create.schema.json",
            json!({"content": ""}),
            true,
        );
        check(
            "workspace-file-create.schema.json",
            json!({"content": 1}),
            false,
        );
        check(
            "workspace-file-create.schema.json",
            json!({"content": "", "path": "a"}),
            false,
        );
        check(
            "workspace-updated.schema.json",
            json!({"path": "a", "version": 2}),
            true,
        );
        check(
            "workspace-updated.schema.json",
            json!({"path": "a", "version": 2, "content": ""}),
            false,
        );
        check(
            "error-envelope.schema.json",
            json!({"error": "x", "message": "y", "details": {}}),
            true,
        );
        check(
            "error-envelope.schema.json",
            json!({"error": "x", "message": "y", "status": 400}),
            false,
        );
        check("error-envelope.schema.json", json!({"error": "x"}), false);
        let limits = json!({"clarificationRounds": 1, "schemaRounds": 1, "envelopesPerTurn": 1});
        let discovery = json!({"protocolVersion": "1.0", "supportedEnvelopes": [],
            "schemaVersions": {}, "limits": limits});
        check("discovery.schema.json", discovery.clone(), true);
        let mut other_block = discovery.clone();
        other_block["deadLetter"] = json!({"supported": true});
        check("discovery.schema.json", other_block, true);
        let mut extra_limit = discovery.clone();
        extra_limit["limits"]["maxTurns"] = json!(3);
        check("discovery.schema.json", extra_limit, false);
        let mut extra_workspace = discovery.clone();
        extra_workspace["workspace"] = json!({"supported": true, "maxFolders": 3});
        check("discovery.schema.json", extra_workspace, false);
        let mut zero_bytes = discovery.clone();
        zero_bytes["workspace"] = json!({"supported": true, "maxFileBytes": 0});
        check("discovery.schema.json", zero_bytes, false);
        let mut scope = discovery;
        scope["agents"] =
            json!({"manifestRuntime": {"supported": true, "installScope": "project"}});
        check("discovery.schema.json", scope, false);
    }

    #[test]
    fn agent_schemas_accept_and_refuse_what_the_wire_contract_says() {
        let entry = json!({"agentId": "a", "persona": "P", "label": "P", "modelClass": "coding",
            "packName": "p", "packVersion": "1.0.0", "toolAllowlist": [], "hasHandoffSchemas": false});
        check("agent-inventory-entry.schema.json", entry.clone(), true);
        for key in ["agentId", "label", "toolAllowlist", "hasHandoffSchemas"] {
            let mut missing = entry.clone();
            missing.as_object_mut().unwrap().remove(key);
            check("agent-inventory-entry.schema.json", missing, false);
        }
        let mut typed = entry.clone();
        typed["toolAllowlist"] = json!("fs.read");
        check("agent-inventory-entry.schema.json", typed, false);
        let list = json!({"agents": [entry.clone()], "total": 1});
        check("agent-inventory.schema.json", list, true);
        check(
            "agent-inventory.schema.json",
            json!({"agents": [], "total": -1}),
            false,
        );
        check("agent-inventory.schema.json", json!({"agents": []}), false);
        check(
            "agent-inventory.schema.json",
            json!({"agents": [], "total": 0, "scope": "host"}),
            false,
        );
        let publish = json!({"path": "a.md", "targetAgentId": "cook"});
        check("publish-request.schema.json", publish.clone(), true);
        for (key, bad) in [
            ("path", json!("../a.md")),
            ("targetPath", json!("/a.md")),
            ("targetAgentId", json!(1)),
            ("workspace", json!("agent-cook")),
        ] {
            let mut doc = publish.clone();
            doc[key] = bad;
            check("publish-request.schema.json", doc, false);
        }
        check(
            "publish-response.schema.json",
            json!({"targetAgentId": "cook", "path": "a.md", "version": 1}),
            true,
        );
        check(
            "publish-response.schema.json",
            json!({"targetAgentId": "cook", "path": "a.md", "version": 0}),
            false,
        );
    }

    #[test]
    fn bundle_points_file_references_inside_the_bundle() {
        let defs = bundle(&load_all().unwrap(), "#/$defs/").unwrap();
        assert_eq!(
            defs["WorkspaceFileList"]["properties"]["files"]["items"]["$ref"],
            "#/$defs/WorkspaceFileMeta"
        );
        assert_eq!(
            defs["Discovery"]["properties"]["limits"]["$ref"],
            "#/$defs/DiscoveryLimits"
        );
        assert!(defs.values().all(|s| {
            ["$id", "$schema", "$defs"]
                .iter()
                .all(|k| s.get(k).is_none())
        }));
        // Every file's title is a definition, and so is every `$defs` entry of every file.
        for file in load_all().unwrap() {
            let title = file.schema["title"].as_str().unwrap();
            assert!(defs.contains_key(title), "{title} missing from the bundle");
            if let Some(Value::Object(local)) = file.schema.get("$defs") {
                for name in local.keys() {
                    assert!(defs.contains_key(name), "{name} missing from the bundle");
                }
            }
        }
        for core in [
            "Discovery",
            "DiscoveryLimits",
            "ErrorEnvelope",
            "WorkspaceFile",
            "WorkspaceFileMeta",
        ] {
            assert!(defs.contains_key(core), "{core}");
        }
    }

    #[test]
    fn bundle_refuses_unknown_references_and_reused_titles() {
        let file = |name: &str, schema: Value| parse_file(name.to_owned(), schema).unwrap();
        let a = file(
            "a.schema.json",
            json!({"$id": format!("{ID_BASE}a.schema.json"), "title": "A",
            "properties": {"b": {"$ref": "missing.schema.json"}}}),
        );
        assert!(
            bundle(&[a], "#/")
                .unwrap_err()
                .to_string()
                .contains("missing.schema.json")
        );
        let a = file(
            "a.schema.json",
            json!({"$id": format!("{ID_BASE}a.schema.json"), "title": "A",
            "properties": {"b": {"title": "A"}}}),
        );
        assert!(
            bundle(&[a], "#/")
                .unwrap_err()
                .to_string()
                .contains("used twice")
        );
        let a = file(
            "a.schema.json",
            json!({"$id": format!("{ID_BASE}a.schema.json"), "title": "A",
            "properties": {"b": {"$ref": "#/$defs/C"}}, "$defs": {"B": {"title": "B"}}}),
        );
        assert!(
            bundle(&[a], "#/")
                .unwrap_err()
                .to_string()
                .contains("#/$defs/C")
        );
        let a = file(
            "a.schema.json",
            json!({"$id": format!("{ID_BASE}a.schema.json"), "title": "A",
            "$defs": {"B": {"title": "C"}}}),
        );
        assert!(
            bundle(&[a], "#/")
                .unwrap_err()
                .to_string()
                .contains("needs the title")
        );
        assert!(
            parse_file(
                "a.schema.json".into(),
                json!({"$id": "https://x/a.schema.json", "title": "A"})
            )
            .is_err()
        );
    }
}
