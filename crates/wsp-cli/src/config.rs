//! What `wsp serve` and `wsp mcp` are configured with alike: the configuration file
//! (`--config wsp.toml`) and the store limits (`--max-file-bytes`, `--max-files`,
//! `--max-versions`), so that the two commands sharing a data directory write under the same
//! secrets and the same limits.

use std::path::Path;

use clap::Args;
use wsp_server::config_file::ConfigFile;
use wsp_server::{ConfigAgentRegistry, TenantSecrets};
use wsp_store::Limits;

use crate::CliError;

/// The store limits flags (`wsp serve` and `wsp mcp`).
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Largest file content in UTF-8 bytes.
    #[arg(long, env = "WSP_MAX_FILE_BYTES", default_value_t = Limits::default().max_file_bytes, value_parser = clap::value_parser!(u64).range(1..))]
    max_file_bytes: u64,
    /// Most live files per workspace.
    #[arg(long, env = "WSP_MAX_FILES", default_value_t = Limits::default().max_files, value_parser = clap::value_parser!(u64).range(1..))]
    max_files: u64,
    /// Versions retained per file.
    #[arg(long, env = "WSP_MAX_VERSIONS", default_value_t = Limits::default().max_versions, value_parser = clap::value_parser!(u64).range(1..))]
    max_versions: u64,
}

impl LimitArgs {
    /// The limits these flags describe.
    pub fn limits(&self) -> Limits {
        Limits::default()
            .with_max_file_bytes(self.max_file_bytes)
            .with_max_files(self.max_files)
            .with_max_versions(self.max_versions)
    }
}

/// The whole file, read and validated. Its shape is [`ConfigFile`] (whose JSON Schema is
/// `schemas/config/wsp.schema.json`); unknown keys are refused so that a typo never silently
/// disables a setting.
#[derive(Debug, Default)]
pub struct FileConfig {
    file: ConfigFile,
    /// The `[agents]` section, validated when the file is loaded.
    agents: Option<ConfigAgentRegistry>,
}

impl FileConfig {
    /// Reads and validates a TOML file.
    pub fn load(path: &Path) -> Result<Self, CliError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError(format!("cannot read config {}: {e}", path.display())))?;
        let invalid =
            |e: &dyn std::fmt::Display| CliError(format!("invalid config {}: {e}", path.display()));
        let file: ConfigFile = toml::from_str(&text).map_err(|e| invalid(&e))?;
        let agents = file
            .agents
            .as_ref()
            .map(ConfigAgentRegistry::from_config)
            .transpose()
            .map_err(|e| invalid(&e))?;
        Ok(Self { file, agents })
    }

    /// The agent registry of the `[agents]` section; `None` when the file has none.
    pub fn agents(&self) -> Option<&ConfigAgentRegistry> {
        self.agents.as_ref()
    }

    /// The per-tenant redactors; errors name the entry.
    pub fn secrets(&self) -> Result<TenantSecrets, CliError> {
        self.file
            .redactors(|var| std::env::var(var).ok())
            .map(TenantSecrets::new)
            .map_err(|e| CliError(e.0))
    }
}
