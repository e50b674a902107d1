//! Where a server keeps what `wsp keys` and `wsp agents approve` change while it runs: a file in
//! its data directory, or the database of its PostgreSQL store.

use std::path::{Path, PathBuf};

use clap::Args;
use wsp_store_postgres::PgOptions;

use crate::CliError;

/// `--data DIR`, or `--store postgres://... [--pg-schema S]`; each also from the environment
/// variable `wsp serve` reads (`WSP_DATA`, `WSP_STORE`, `WSP_PG_SCHEMA`), so a command run
/// beside a server finds what it uses and a database password stays off the command line.
#[derive(Debug, Clone, Args)]
pub struct StoreLocation {
    /// The server's data directory.
    #[arg(long, env = "WSP_DATA", default_value = "./wsp-data")]
    pub data: PathBuf,
    /// A PostgreSQL store (`postgres://...`) instead of --data: what every replica reads.
    /// `sqlite` or `memory` (as `wsp serve --store` takes them) mean the data directory.
    #[arg(long, value_name = "URL", env = "WSP_STORE", hide_env_values = true)]
    pub store: Option<String>,
    /// The PostgreSQL schema of the store (as `wsp serve --pg-schema`).
    #[arg(long, env = "WSP_PG_SCHEMA", default_value = "public")]
    pub pg_schema: String,
}

impl StoreLocation {
    /// The PostgreSQL store's URL and connection options, when `--store` names one.
    pub fn postgres(&self) -> Result<Option<(&str, PgOptions)>, CliError> {
        let Some(url) = self
            .store
            .as_deref()
            .filter(|s| !matches!(*s, "sqlite" | "memory"))
        else {
            return Ok(None);
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(CliError(
                "--store must be a postgres:// URL (or sqlite or memory: the data directory)"
                    .into(),
            ));
        }
        let options = PgOptions::default().with_schema(self.pg_schema.clone());
        Ok(Some((url, options)))
    }

    /// Creates the data directory if it is missing (see [`prepare_data_dir`]).
    pub fn create_data_dir(&self) -> Result<(), CliError> {
        prepare_data_dir(&self.data)
    }
}

/// Creates the data directory `dir` if it is missing, with the parents it lacks, readable and
/// writable by its owner alone (0700; the umask can only take bits away). A directory that
/// exists keeps its mode (the user chose it), with a warning in the log when other users may
/// write in it, since they could then replace or remove wsp's files.
pub fn prepare_data_dir(dir: &Path) -> Result<(), CliError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        let existed = dir.is_dir();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| unusable_data_dir(dir, e))?;
        if existed {
            let mode = std::fs::metadata(dir)
                .map_err(|e| unusable_data_dir(dir, e))?
                .permissions()
                .mode();
            if mode & 0o022 != 0 {
                tracing::warn!(
                    "the data directory {} is writable by other users (mode {:o}): they could \
                     replace or remove wsp's files; chmod go-w {0}",
                    dir.display(),
                    mode & 0o7777
                );
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir).map_err(|e| unusable_data_dir(dir, e))
}

/// A data directory that could not be used, as the one-line error.
pub fn unusable_data_dir(dir: &Path, e: impl std::fmt::Display) -> CliError {
    CliError(format!("cannot use data directory {}: {e}", dir.display()))
}

/// A PostgreSQL store that could not be used, as the one-line error.
pub fn unusable_postgres(e: impl std::fmt::Display) -> CliError {
    CliError(format!("cannot use the PostgreSQL store: {e}"))
}
