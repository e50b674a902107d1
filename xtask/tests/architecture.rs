//! ARCHITECTURE.md's dependency rules, enforced: the two tables of its "Dependency rules"
//! section are read from the document itself and checked against `cargo metadata` (every
//! workspace crate's `[dependencies]` and `[build-dependencies]`) and against the sources (no
//! crate names a crate it may not depend on, and a dependency allowed only under a feature is
//! named only in modules compiled with that feature). A second test checks that every Rust
//! source file of the repository opens with a module doc (`//!`).
//!
//! The document and the test cannot disagree: a rule is a table row, and a row that names a
//! crate the workspace does not have fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository root (xtask lives one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .to_path_buf()
}

/// One workspace crate as `cargo metadata --no-deps` describes it.
struct Package {
    dir: PathBuf,
    /// Its `[features]` table.
    features: BTreeMap<String, Vec<String>>,
    /// Normal and build dependencies: package name -> optional.
    deps: BTreeMap<String, bool>,
}

fn metadata() -> BTreeMap<String, Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut packages = BTreeMap::new();
    for p in doc["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_owned();
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        let features = p["features"]
            .as_object()
            .expect("features")
            .iter()
            .map(|(k, v)| {
                let on = v.as_array().expect("feature list");
                let on = on.iter().map(|s| s.as_str().unwrap().to_owned()).collect();
                (k.clone(), on)
            })
            .collect();
        let mut deps = BTreeMap::new();
        for d in p["dependencies"].as_array().expect("dependencies") {
            if d["kind"].as_str() == Some("dev") {
                continue;
            }
            let dep = d["name"].as_str().expect("dependency name").to_owned();
            let optional = d["optional"].as_bool().unwrap_or(false);
            // A crate listed twice (normal and build, or per target) is optional only if every
            // listing is.
            let entry = deps.entry(dep).or_insert(optional);
            *entry = *entry && optional;
        }
        let dir = manifest.parent().expect("manifest dir").to_path_buf();
        packages.insert(
            name,
            Package {
                dir,
                features,
                deps,
            },
        );
    }
    packages
}

/// Where a crate may depend on another: the dependent, and the feature that alone may turn the
/// dependency on (`None`: unconditionally).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Allowed {
    krate: String,
    feature: Option<String>,
}

/// The rows of the table under `heading` whose first header cell is `first`: cells of each
/// row, backticks kept.
fn table(doc: &str, first: &str) -> Vec<Vec<String>> {
    let start = doc
        .find("\n## Dependency rules\n")
        .expect("ARCHITECTURE.md has a \"Dependency rules\" section");
    let section = &doc[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut rows = Vec::new();
    let mut inside = false;
    for line in section.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            inside = false;
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        if cells[0] == first {
            inside = true;
            continue;
        }
        if inside && !cells[0].starts_with("---") {
            rows.push(cells);
        }
    }
    assert!(!rows.is_empty(), "no rows in the table headed {first:?}");
    rows
}

/// The backticked names of a cell, in order: "`a`, `b` (feature `f`)" -> ["a", "b", "f"].
fn ticked(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// `only in` cells: "`wsp-server`, `wsp-mcp` (feature `http`)" or "none".
fn allowed_in(cell: &str) -> BTreeSet<Allowed> {
    let mut out = BTreeSet::new();
    for part in cell.split(',') {
        let names = ticked(part);
        match names.as_slice() {
            [] => assert_eq!(
                part.trim(),
                "none",
                "cell {cell:?}: expected `crate` or none"
            ),
            [krate] => {
                out.insert(Allowed {
                    krate: (*krate).to_owned(),
                    feature: None,
                });
            }
            [krate, feature] if part.contains("(feature ") => {
                out.insert(Allowed {
                    krate: (*krate).to_owned(),
                    feature: Some((*feature).to_owned()),
                });
            }
            _ => panic!("cell {cell:?}: cannot read {part:?}"),
        }
    }
    out
}

/// Does `pattern` (a crate name, or a prefix ending in `*`) match `name`?
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Features of `package` that turn the optional dependency `dep` on themselves.
fn enabling_features(package: &Package, dep: &str) -> Vec<String> {
    package
        .features
        .iter()
        .filter(|(_, on)| {
            on.iter().any(|f| {
                let f = f.strip_prefix("dep:").unwrap_or(f);
                let f = f.split('/').next().unwrap_or(f).trim_end_matches('?');
                f == dep
            })
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Every `.rs` file under `dir`, skipping `target` and hidden directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Lines of `text` that are code, not comments.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// Does this line name the crate `ident` (`ident::` or `use ident`)?
fn names_crate(line: &str, ident: &str) -> bool {
    let bytes = line.as_bytes();
    line.match_indices(ident).any(|(at, _)| {
        let before_ok =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let rest = &line[at + ident.len()..];
        let after_ok = rest.starts_with("::")
            || (line[..at].trim_end().ends_with("use")
                && !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'));
        before_ok && after_ok
    })
}

/// The modules of `lib.rs` declared under `#[cfg(feature = "<feature>")]`.
fn gated_modules(lib: &str, feature: &str) -> BTreeSet<String> {
    let gate = format!("#[cfg(feature = \"{feature}\")]");
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == gate)
        .filter_map(|w| {
            let decl = w[1].strip_prefix("pub ").unwrap_or(w[1]);
            decl.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn dependency_rules_of_architecture_md_hold() {
    let doc = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let packages = metadata();
    let known = |name: &str, what: &str| {
        assert!(
            packages.contains_key(name),
            "ARCHITECTURE.md's dependency rules name {what} `{name}`, which is not a workspace crate"
        );
    };
    let mut broken = Vec::new();

    // Table 1: a dependency only the listed crates (under the listed feature) may have.
    for row in table(&doc, "dependency") {
        let [dep, only_in] = row.as_slice() else {
            panic!("a row of the \"dependency | only in\" table has two cells: {row:?}");
        };
        let dep = *ticked(dep).first().expect("the dependency is in backticks");
        let allowed = allowed_in(only_in);
        for a in &allowed {
            known(&a.krate, "the dependent");
        }
        let ident = dep.replace('-', "_");
        for (name, package) in &packages {
            if name == dep {
                continue;
            }
            let rule = allowed.iter().find(|a| a.krate == *name);
            if let Some(&optional) = package.deps.get(dep) {
                match rule {
                    None => broken.push(format!(
                        "`{name}` depends on `{dep}`; ARCHITECTURE.md allows it only in {only_in}"
                    )),
                    Some(Allowed {
                        feature: Some(feature),
                        ..
                    }) => {
                        let by = enabling_features(package, dep);
                        if !optional || by != [feature.clone()] {
                            broken.push(format!(
                                "`{name}` may depend on `{dep}` only as an optional dependency that \
                                 its feature `{feature}` alone turns on (optional: {optional}, \
                                 turned on by {by:?})"
                            ));
                        }
                    }
                    Some(_) => {}
                }
            }
            // The sources: a crate that may not depend on `dep` does not name it either (not
            // through a re-export), and under a feature only modules compiled with it do.
            let mut files = Vec::new();
            rust_files(&package.dir.join("src"), &mut files);
            let gated = match rule {
                Some(Allowed {
                    feature: Some(feature),
                    ..
                }) => {
                    let lib =
                        fs::read_to_string(package.dir.join("src/lib.rs")).unwrap_or_default();
                    Some((feature, gated_modules(&lib, feature)))
                }
                _ => None,
            };
            for file in files {
                let text = fs::read_to_string(&file).expect("source file");
                if !code_lines(&text).any(|l| names_crate(l, &ident)) {
                    continue;
                }
                let shown = file
                    .strip_prefix(root())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                match (&rule, &gated) {
                    (None, _) => broken.push(format!(
                        "{shown} names `{ident}`, which ARCHITECTURE.md allows only in {only_in}"
                    )),
                    (Some(_), Some((feature, modules))) => {
                        let module = file.file_stem().unwrap().to_string_lossy().to_string();
                        let top = file.parent() == Some(package.dir.join("src").as_path());
                        if !(top && modules.contains(&module)) {
                            broken.push(format!(
                                "{shown} names `{ident}` but is not a module of lib.rs declared \
                                 under #[cfg(feature = \"{feature}\")]"
                            ));
                        }
                    }
                    (Some(_), None) => {}
                }
            }
        }
    }

    // Table 2: dependencies a crate never has.
    for row in table(&doc, "crate") {
        let [krate, never] = row.as_slice() else {
            panic!("a row of the \"crate | never depends on\" table has two cells: {row:?}");
        };
        let krate = *ticked(krate).first().expect("the crate is in backticks");
        known(krate, "the crate");
        let patterns = ticked(never);
        assert!(!patterns.is_empty(), "row of `{krate}` names no dependency");
        for dep in packages[krate].deps.keys() {
            if let Some(p) = patterns.iter().find(|p| matches(p, dep)) {
                broken.push(format!(
                    "`{krate}` depends on `{dep}`; ARCHITECTURE.md says it never depends on `{p}`"
                ));
            }
        }
    }

    assert!(
        broken.is_empty(),
        "ARCHITECTURE.md's dependency rules are broken:\n  {}",
        broken.join("\n  ")
    );
}

/// A line that may come before a module doc: blank, a plain comment, an inner attribute.
fn preamble(line: &str) -> bool {
    let plain_comment = line.starts_with("//") && !line.starts_with("//!");
    line.is_empty() || plain_comment || line.starts_with("#![")
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    for package in metadata().values() {
        rust_files(&package.dir, &mut files);
    }
    rust_files(&root().join("fuzz"), &mut files);
    files.sort();
    files.dedup();
    assert!(files.len() > 100, "found only {} source files", files.len());
    let missing: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = fs::read_to_string(file).expect("source file");
            // Plain comments (a generated file's banner) and inner attributes may come first.
            let first = text.lines().map(str::trim).find(|l| !preamble(l));
            !first.is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not open with a module doc (`//!`):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_rule_readers_read_what_the_document_writes() {
    // The table parser and the name matchers, on known text: a check that cannot read the
    // document would pass vacuously.
    assert_eq!(
        allowed_in("`wsp-server`, `wsp-mcp` (feature `http`)"),
        BTreeSet::from([
            Allowed {
                krate: "wsp-server".into(),
                feature: None
            },
            Allowed {
                krate: "wsp-mcp".into(),
                feature: Some("http".into())
            },
        ])
    );
    assert!(allowed_in("none").is_empty());
    assert!(matches("wsp-*", "wsp-store") && !matches("wsp-*", "axum"));
    assert!(matches("wsp-store*", "wsp-store-sqlite") && !matches("wsp-store", "wsp-store-sqlite"));
    assert!(names_crate("use axum::Router;", "axum"));
    assert!(names_crate("    let r: axum::Router = x;", "axum"));
    assert!(names_crate("pub use rmcp;", "rmcp"));
    assert!(!names_crate("let my_axum::x = 1;", "axum"));
    assert!(!names_crate("use wsp_server_like::x;", "wsp_server"));
    assert_eq!(
        gated_modules(
            "#[cfg(feature = \"http\")]\nmod http;\nmod server;\n",
            "http"
        ),
        BTreeSet::from(["http".to_owned()])
    );
    let doc = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let deps: Vec<String> = table(&doc, "dependency")
        .iter()
        .map(|r| ticked(&r[0])[0].to_owned())
        .collect();
    for required in [
        "axum",
        "rmcp",
        "typify",
        "wsp-server",
        "wsp-store-sqlite",
        "wsp-store-postgres",
    ] {
        assert!(
            deps.iter().any(|d| d == required),
            "no rule for `{required}` in {deps:?}"
        );
    }
    let crates: Vec<String> = table(&doc, "crate")
        .iter()
        .map(|r| ticked(&r[0])[0].to_owned())
        .collect();
    for required in ["wsp-types", "wsp-client"] {
        assert!(
            crates.iter().any(|c| c == required),
            "no rule for `{required}` in {crates:?}"
        );
    }
}

/// The type, trait and alias names `pub` in one crate's `src/`.
fn public_type_names(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut names = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("source file");
        for line in code_lines(&text) {
            let line = line.trim_start();
            for kind in [
                "pub struct ",
                "pub enum ",
                "pub trait ",
                "pub type ",
                "pub union ",
            ] {
                if let Some(rest) = line.strip_prefix(kind) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        names.insert(name);
                    }
                }
            }
        }
    }
    names
}

/// A host author who depends on several of the kit's crates never meets two public types of
/// the same name (`ApiError` in the client and the server, `ErrorCode` in the types and the
/// VFS, ...): every public type, trait and alias name belongs to one crate.
#[test]
fn no_public_type_name_is_declared_by_two_crates() {
    let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, package) in metadata() {
        if name == "xtask" {
            continue;
        }
        for ty in public_type_names(&package.dir.join("src")) {
            owners.entry(ty).or_default().insert(name.clone());
        }
    }
    assert!(
        owners.len() > 100,
        "found only {} public type names",
        owners.len()
    );
    let twice: Vec<String> = owners
        .iter()
        .filter(|(_, crates)| crates.len() > 1)
        .map(|(ty, crates)| {
            let crates: Vec<&str> = crates.iter().map(String::as_str).collect();
            format!("{ty}: {}", crates.join(", "))
        })
        .collect();
    assert!(
        twice.is_empty(),
        "these public type names are declared by more than one crate (rename one):\n  {}",
        twice.join("\n  ")
    );
}
