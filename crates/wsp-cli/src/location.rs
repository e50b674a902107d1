//! Where a server keeps what `wsp keys` and `wsp agents approve` change while it runs: a file in
//! its data directory, or the database of its PostgreSQL store.

use std::path::{Path, PathBuf};

use clap::Args;
use wsp_store_postgres::PgOptions;

use crate::CliError;

/// `--data DIR`, or `--store postgres://... [--pg-schema S]`.
#[derive(Debug, Clone, Args)]
pub struct StoreLocation {
    /// The server's data directory.
    #[arg(long, default_value = "./wsp-data")]
    pub data: PathBuf,
    /// A PostgreSQL store (`postgres://...`) instead of --data: what every replica reads.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The PostgreSQL schema of the store (as `wsp serve --pg-schema`).
    #[arg(long, default_value = "public")]
    pub pg_schema: String,
}

impl StoreLocation {
    /// The PostgreSQL store's URL and connection options, when `--store` names one.
    pub fn postgres(&self) -> Result<Option<(&str, PgOptions)>, CliError> {
        let Some(url) = &self.store else {
            return Ok(None);
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(CliError("--store must be a postgres:// URL".into()));
        }
        let options = PgOptions {
            schema: self.pg_schema.clone(),
            ..PgOptions::default()
        };
        Ok(Some((url, options)))
    }

    /// Creates the data directory if it is missing.
    pub fn create_data_dir(&self) -> Result<(), CliError> {
        std::fs::create_dir_all(&self.data).map_err(|e| unusable_data_dir(&self.data, e))
    }
}

/// A data directory that could not be used, as the one-line error.
pub fn unusable_data_dir(dir: &Path, e: impl std::fmt::Display) -> CliError {
    CliError(format!("cannot use data directory {}: {e}", dir.display()))
}

/// A PostgreSQL store that could not be used, as the one-line error.
pub fn unusable_postgres(e: impl std::fmt::Display) -> CliError {
    CliError(format!("cannot use the PostgreSQL store: {e}"))
}
