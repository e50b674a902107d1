//! A `wsp serve` started for a task: built once, on an ephemeral port, with a fresh data dir.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::Result;
use crate::project::{cargo, project_root};

/// Every scope a key can hold, `metrics:read` included.
pub(crate) const ALL_SCOPES: &str =
    "workspace:read,workspace:write,agents:read,runs:create,runs:read,metrics:read";

/// A secret configured for owner A's tenant, so WSR-1 can be observed.
pub(crate) const SECRET_ID: &str = "conformance-secret";
/// Its value.
pub(crate) const SECRET_VALUE: &str = "wsp-conformance-secret-value-42";

/// Builds the program `bin` of `package` (debug profile) and returns its path.
pub(crate) fn build_binary(package: &str, bin: &str) -> Result<PathBuf> {
    let status = Command::new(cargo())
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run cargo build: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build -p {package} failed").into());
    }
    let target = crate::project::target_dir();
    Ok(target
        .join("debug")
        .join(format!("{bin}{}", std::env::consts::EXE_SUFFIX)))
}

/// Builds `wsp` once per xtask run and returns its path.
pub(crate) fn wsp_binary() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_binary("wsp-cli", "wsp").map_err(|e| e.to_string()))
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
    /// The `wsp conformance` arguments describing the host's agents: owner A's approved agent,
    /// the prompt marker, keys acting as a private and a shared agent, and their ids.
    pub(crate) agent_args: Vec<String>,
    _data: TempDir,
    /// `(database URL, schema)` to drop when the host stops.
    pg_schema: Option<(String, String)>,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some((url, schema)) = &self.pg_schema {
            // Best effort: psql ships with PostgreSQL; a leftover schema harms no later run.
            let _ = Command::new("psql")
                .args([
                    url.as_str(),
                    "-q",
                    "-c",
                    &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Host {
    /// The value that follows `flag` in [`Host::agent_args`] (e.g. `--key-private-agent`).
    pub(crate) fn agent_arg(&self, flag: &str) -> Result<&str> {
        self.agent_args
            .iter()
            .position(|a| a == flag)
            .and_then(|i| self.agent_args.get(i + 1))
            .map(String::as_str)
            .ok_or_else(|| format!("the host has no {flag}").into())
    }

    /// One more key of `tenant` (workspace `default`) with these comma-separated `scopes`,
    /// created on the running host (a key works as soon as it is created).
    pub(crate) fn create_key(&self, tenant: &str, scopes: &str) -> Result<String> {
        let location: Vec<String> = match &self.pg_schema {
            Some((url, schema)) => vec![
                "--store".into(),
                url.clone(),
                "--pg-schema".into(),
                schema.clone(),
            ],
            None => vec!["--data".into(), self._data.0.display().to_string()],
        };
        create_key(&wsp_binary()?, &location, tenant, Some(scopes))
    }
}

/// A directory removed on drop (xtask keeps no dependency for this).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `location`: where `wsp keys` finds the keys (`--data DIR`, or `--store URL --pg-schema S`).
fn create_key(
    wsp: &Path,
    location: &[String],
    tenant: &str,
    scopes: Option<&str>,
) -> Result<String> {
    let mut cmd = Command::new(wsp);
    cmd.args([
        "keys",
        "create",
        "--tenant",
        tenant,
        "--workspace",
        "default",
    ])
    .args(location);
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

/// The agent owner A's workspace (`default/default`) approves; a private agent.
pub(crate) const AGENT_A: &str = "wsp.conformance.reviewer";
/// A shared agent (the publish target).
const SHARED_AGENT: &str = "wsp.conformance.cook";
/// A private agent of user `conformance-user` (the publisher).
const PRIVATE_AGENT: &str = "wsp.conformance.main";
/// Text that only the agents' system prompt references hold: never served.
const PROMPT_MARKER: &str = "wsp-conformance-prompt-ref-9d1c";

/// The `[agents]` section: two packs, one approved by `default/default` (owner A), the other by
/// the publisher's workspace `default/user-conformance-user`, none by owner B's tenant.
fn agents_toml(install_scope: &str) -> String {
    format!(
        r#"
[agents]
install_scope = "{install_scope}"

[[agents.packs]]
name = "wsp.conformance.reviewers"
version = "1.0.0"

[[agents.packs.agents]]
id = "{AGENT_A}"
persona = "Code Reviewer"
model_class = "coding"
tool_allowlist = ["fs.read"]
system_prompt_ref = "prompts/reviewer-{PROMPT_MARKER}.md"

[[agents.packs]]
name = "wsp.conformance.kitchen"
version = "2.0.0"

[[agents.packs.agents]]
id = "{SHARED_AGENT}"
persona = "Cook"
model_class = "general"
tool_allowlist = []
shared = true
system_prompt_ref = "prompts/cook-{PROMPT_MARKER}.md"

[[agents.packs.agents]]
id = "{PRIVATE_AGENT}"
persona = "Main"
model_class = "general"
tool_allowlist = []
system_prompt_ref = "prompts/main-{PROMPT_MARKER}.md"

[[agents.approvals]]
tenant = "default"
workspace = "default"
packs = ["wsp.conformance.reviewers"]

# The publisher's workspace approves the shared agent, which publishing needs under "tenant".
[[agents.approvals]]
tenant = "default"
workspace = "user-conformance-user"
packs = ["wsp.conformance.kitchen"]
"#
    )
}

/// A key of tenant `default` acting as `agent` for the user `conformance-user`.
fn create_agent_key(wsp: &Path, location: &[String], agent: &str) -> Result<String> {
    let out = Command::new(wsp)
        .args(["keys", "create", "--tenant", "default"])
        .args(["--user", "conformance-user", "--agent", agent])
        .args(location)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "wsp keys create --agent {agent} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text.lines().last().unwrap_or_default().to_owned())
}

/// Starts `wsp serve --store <store>` with small limits (so limit scenarios stay cheap), a
/// secret for tenant `default`, agents scoped per tenant, and `extra` arguments.
pub(crate) fn start(store: &str, extra: &[&str]) -> Result<Host> {
    start_scoped(store, extra, "tenant")
}

/// [`start`] with the agents' `install_scope` (`tenant` or `host`).
pub(crate) fn start_scoped(store: &str, extra: &[&str], install_scope: &str) -> Result<Host> {
    let wsp = wsp_binary()?;
    let postgres = store.starts_with("postgres://") || store.starts_with("postgresql://");
    let kind = if postgres { "postgres" } else { store };
    let data = std::env::temp_dir().join(format!(
        "wsp-xtask-{}-{kind}-{}",
        std::process::id(),
        nanos()
    ));
    std::fs::create_dir_all(&data)?;
    let data = TempDir(data);
    let config = data.0.join("wsp.toml");
    std::fs::write(
        &config,
        format!(
            "[[secrets]]\ntenant = \"default\"\nid = \"{SECRET_ID}\"\nvalue = \"{SECRET_VALUE}\"\n{}",
            agents_toml(install_scope)
        ),
    )?;
    // On PostgreSQL every run gets its own schema, dropped when the host stops.
    let pg_schema = postgres.then(|| {
        format!(
            "wsp_xtask_{}_{}",
            std::process::id(),
            nanos() % 1_000_000_000
        )
    });
    let location: Vec<String> = match &pg_schema {
        Some(schema) => vec![
            "--store".into(),
            store.into(),
            "--pg-schema".into(),
            schema.clone(),
        ],
        None => vec!["--data".into(), data.0.display().to_string()],
    };
    let key_a = create_key(&wsp, &location, "default", None)?;
    let key_b = create_key(&wsp, &location, "other", None)?;
    let key_readonly = create_key(&wsp, &location, "default", Some("workspace:read"))?;
    let agent_args = vec![
        "--agent-a".to_owned(),
        AGENT_A.to_owned(),
        "--prompt-marker".into(),
        PROMPT_MARKER.into(),
        "--key-private-agent".into(),
        create_agent_key(&wsp, &location, PRIVATE_AGENT)?,
        "--key-shared-agent".into(),
        create_agent_key(&wsp, &location, SHARED_AGENT)?,
        "--shared-agent".into(),
        SHARED_AGENT.into(),
        "--private-agent".into(),
        AGENT_A.into(),
    ];
    let schema_args: Vec<String> = match &pg_schema {
        Some(schema) => vec!["--pg-schema".into(), schema.clone()],
        None => vec![],
    };
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
        .args(&schema_args)
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
        agent_args,
        _data: data,
        pg_schema: pg_schema.map(|schema| (store.to_owned(), schema)),
    })
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `target/conformance/`, created.
pub(crate) fn report_dir() -> Result<PathBuf> {
    let dir = crate::project::target_dir().join("conformance");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
