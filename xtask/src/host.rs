//! A `wsp serve` started for a task: built once, on an ephemeral port, with a fresh data dir.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::Result;
use crate::project::project_root;

/// A secret configured for owner A's tenant, so WSR-1 can be observed.
pub(crate) const SECRET_ID: &str = "conformance-secret";
/// Its value.
pub(crate) const SECRET_VALUE: &str = "wsp-conformance-secret-value-42";

/// Builds `wsp` once per xtask run and returns its path.
pub(crate) fn wsp_binary() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "--quiet", "-p", "wsp-cli", "--bin", "wsp"])
                .current_dir(project_root())
                .status()
                .map_err(|e| format!("cannot run cargo build: {e}"))?;
            if !status.success() {
                return Err("cargo build -p wsp-cli failed".into());
            }
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| project_root().join("target"), PathBuf::from);
            Ok(target
                .join("debug")
                .join(format!("wsp{}", std::env::consts::EXE_SUFFIX)))
        })
        .clone()
        .map_err(Into::into)
}

/// A running host and the keys a suite needs.
pub(crate) struct Host {
    child: Child,
    /// Base URL, e.g. `http://127.0.0.1:41234`.
    pub(crate) url: String,
    /// Owner A (tenant `default`), every scope.
    pub(crate) key_a: String,
    /// Owner B (tenant `other`), every scope.
    pub(crate) key_b: String,
    /// Owner A, `workspace:read` only.
    pub(crate) key_readonly: String,
    _data: TempDir,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed on drop (xtask keeps no dependency for this).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn create_key(wsp: &Path, data: &Path, tenant: &str, scopes: Option<&str>) -> Result<String> {
    let mut cmd = Command::new(wsp);
    cmd.args([
        "keys",
        "create",
        "--tenant",
        tenant,
        "--workspace",
        "default",
        "--data",
    ])
    .arg(data);
    if let Some(s) = scopes {
        cmd.args(["--scopes", s]);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(format!(
            "wsp keys create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text.lines().last().unwrap_or_default().to_owned())
}

/// Starts `wsp serve --store <store>` with small limits (so limit scenarios stay cheap), a
/// secret for tenant `default`, and `extra` arguments.
pub(crate) fn start(store: &str, extra: &[&str]) -> Result<Host> {
    let wsp = wsp_binary()?;
    let data = std::env::temp_dir().join(format!(
        "wsp-xtask-{}-{store}-{}",
        std::process::id(),
        nanos()
    ));
    std::fs::create_dir_all(&data)?;
    let data = TempDir(data);
    let config = data.0.join("wsp.toml");
    std::fs::write(
        &config,
        format!(
            "[[secrets]]\ntenant = \"default\"\nid = \"{SECRET_ID}\"\nvalue = \"{SECRET_VALUE}\"\n"
        ),
    )?;
    let key_a = create_key(&wsp, &data.0, "default", None)?;
    let key_b = create_key(&wsp, &data.0, "other", None)?;
    let key_readonly = create_key(&wsp, &data.0, "default", Some("workspace:read"))?;
    let mut child = Command::new(&wsp)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--max-files",
            "64",
            "--max-versions",
            "8",
            "--store",
        ])
        .arg(store)
        .arg("--data")
        .arg(&data.0)
        .arg("--config")
        .arg(&config)
        .args(extra)
        .env("WSP_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = loop {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("wsp serve did not start within 60 s".into());
        }
        match lines.next() {
            Some(line) => {
                let line = line?;
                if let Some(rest) = line.strip_prefix("wsp listening on ") {
                    break rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                }
            }
            None => {
                let status = child.wait()?;
                return Err(format!("wsp serve exited early ({status})").into());
            }
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    Ok(Host {
        child,
        url,
        key_a,
        key_b,
        key_readonly,
        _data: data,
    })
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `target/conformance/`, created.
pub(crate) fn report_dir() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| project_root().join("target"), PathBuf::from);
    let dir = target.join("conformance");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
