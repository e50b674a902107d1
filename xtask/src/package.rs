//! `cargo xtask package`: `cargo package` for every crate the project publishes, verified from
//! its package alone, without a stale copy of another workspace crate.
//!
//! Verifying a crate builds it against the packages of the workspace crates it depends on,
//! served from a local registry. Cargo extracts those packages under
//! `$CARGO_HOME/registry/src/` and reuses an extraction of the same name and version made by
//! an earlier run, so with versions that do not change between commits (0.1.0 here) a file
//! added since that run is missing and verification fails with errors about code that exists.
//! The verification builds treat those crates as registry crates, which never change, so
//! their compiled copies in the target directory are reused the same way. This task removes
//! the extracted and cached packages of the workspace's own crates first, and verifies in a
//! target directory of its own, `target/package/build/`, emptied before each run.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::Result;
use crate::interop::run_checked;
use crate::project::{cargo, project_root};

/// The workspace's packages: (name, publishable).
fn packages() -> Result<Vec<(String, bool)>> {
    let out = Command::new(cargo())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(project_root())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let doc: Value = serde_json::from_slice(&out.stdout)?;
    let packages = doc["packages"]
        .as_array()
        .ok_or("cargo metadata lists no packages")?;
    Ok(packages
        .iter()
        .filter_map(|p| {
            let name = p["name"].as_str()?.to_owned();
            // `publish = false` is an empty list of registries.
            let publishable = !p["publish"].as_array().is_some_and(Vec::is_empty);
            Some((name, publishable))
        })
        .collect())
}

/// `$CARGO_HOME`, as cargo finds it.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// Removes every extracted (`registry/src/*/NAME-*`) and cached (`registry/cache/*/NAME-*`)
/// package of `names`; returns how many.
fn forget_packages(home: &std::path::Path, names: &[String]) -> Result<usize> {
    let mut removed = 0;
    for area in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(home.join("registry").join(area)) else {
            continue;
        };
        for registry in registries.flatten() {
            let Ok(entries) = std::fs::read_dir(registry.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let file = entry.file_name().to_string_lossy().into_owned();
                let ours = names.iter().any(|name| {
                    file.strip_prefix(name.as_str())
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
                });
                if ours {
                    let path = entry.path();
                    if path.is_dir() {
                        std::fs::remove_dir_all(&path)?;
                    } else {
                        std::fs::remove_file(&path)?;
                    }
                    removed += 1;
                }
            }
        }
    }
    Ok(removed)
}

/// Runs the task.
pub(crate) fn run() -> Result<()> {
    let packages = packages()?;
    let names: Vec<String> = packages.iter().map(|(n, _)| n.clone()).collect();
    if let Some(home) = cargo_home() {
        let removed = forget_packages(&home, &names)?;
        if removed > 0 {
            println!("package: removed {removed} earlier extraction(s) of this workspace's crates");
        }
    }
    // Packaging output only: the packages, their local registry and the verification builds.
    let target = crate::project::target_dir();
    match std::fs::remove_dir_all(target.join("package")) {
        Ok(()) => println!("package: removed {}", target.join("package").display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(format!("cannot remove {}: {e}", target.join("package").display()).into());
        }
    }
    let mut cmd = Command::new(cargo());
    cmd.args(["package", "--workspace"])
        .env("CARGO_TARGET_DIR", target.join("package").join("build"))
        .current_dir(project_root());
    for (name, publishable) in &packages {
        if !publishable {
            cmd.args(["--exclude", name]);
        }
    }
    run_checked(&mut cmd, "cargo package")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory under the system's temporary directory, removed when dropped.
    struct TempHome(PathBuf);

    impl TempHome {
        fn new() -> Self {
            let dir = std::env::temp_dir().join(format!(
                "xtask-package-{}-{}",
                std::process::id(),
                nanos()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempHome {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn nanos() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }

    #[test]
    fn only_the_workspace_crates_are_forgotten() {
        let home = TempHome::new();
        let src = home.path().join("registry/src/-48382f4f4c02499f");
        let cache = home.path().join("registry/cache/-48382f4f4c02499f");
        let crates_io = home
            .path()
            .join("registry/src/index.crates.io-1949cf8c6b5b557f");
        for dir in [&src, &cache, &crates_io] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(src.join("wsp-types-0.1.0/src")).unwrap();
        std::fs::write(cache.join("wsp-types-0.1.0.crate"), b"x").unwrap();
        std::fs::create_dir_all(crates_io.join("wsp-typesetter-1.0.0")).unwrap();
        std::fs::create_dir_all(crates_io.join("serde-1.0.0")).unwrap();
        let names = vec!["wsp-types".to_owned()];
        assert_eq!(forget_packages(home.path(), &names).unwrap(), 2);
        assert!(!src.join("wsp-types-0.1.0").exists());
        assert!(!cache.join("wsp-types-0.1.0.crate").exists());
        assert!(crates_io.join("wsp-typesetter-1.0.0").exists());
        assert!(crates_io.join("serde-1.0.0").exists());
    }
}
