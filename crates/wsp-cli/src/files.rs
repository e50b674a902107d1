//! `wsp files`: the workspace file endpoints from the command line, through `wsp-client`.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use wsp_client::{CaCerts, Client, ClientBuilder, PutOptions};
use wsp_types::{ETag, WorkspacePath};

use crate::CliError;
use crate::failure::Failure;

#[derive(Debug, Args)]
pub struct FilesArgs {
    #[command(flatten)]
    remote: RemoteArgs,
    #[command(subcommand)]
    command: FilesCommand,
}

/// Where and as whom, and how to print: the flags of every command group that talks to a host
/// (`wsp files`, `wsp memory`, `wsp sessions`).
#[derive(Debug, Args)]
pub(crate) struct RemoteArgs {
    /// Base URL of the host.
    #[arg(
        long,
        env = "WSP_URL",
        default_value = "http://127.0.0.1:8787",
        global = true
    )]
    pub(crate) url: String,
    /// API key (sent as a bearer token).
    #[arg(long, env = "WSP_API_KEY", hide_env_values = true, global = true)]
    pub(crate) key: Option<String>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) tls: CaCertArg,
}

impl RemoteArgs {
    /// A client builder for the host, with the key and `--cacert`.
    pub(crate) fn builder(&self) -> Result<ClientBuilder, Failure> {
        self.tls.client(&self.url, self.key.as_deref())
    }

    /// A client for the host.
    pub(crate) fn client(&self) -> Result<Client, Failure> {
        self.builder()?.build().map_err(Failure::remote)
    }

    /// Runs `work`; a failure of a call made without a key says so.
    pub(crate) async fn keyed<F>(&self, work: F) -> Result<(), Failure>
    where
        F: std::future::Future<Output = Result<(), Failure>>,
    {
        let keyless = keyless(self.key.as_deref());
        work.await
            .map_err(|f| if keyless { f.sent_without_key() } else { f })
    }
}

/// The `--cacert` of every command that talks to a host.
#[derive(Debug, Args)]
pub(crate) struct CaCertArg {
    /// PEM file of CA certificates to trust besides the system's, for an https host whose
    /// certificate a private CA signed.
    #[arg(long, value_name = "FILE", env = "WSP_CACERT", global = true)]
    cacert: Option<PathBuf>,
}

impl CaCertArg {
    /// A client builder for `url` with `key` (an empty one is no key), trusting `--cacert` too.
    pub(crate) fn client(&self, url: &str, key: Option<&str>) -> Result<ClientBuilder, Failure> {
        let mut builder = Client::builder(url);
        if let Some(key) = key.filter(|k| !k.is_empty()) {
            builder = builder.key(key);
        }
        if let Some(file) = &self.cacert {
            builder = builder.ca_certs(CaCerts::from_pem_file(file).map_err(Failure::remote)?);
        }
        Ok(builder)
    }
}

#[derive(Debug, Subcommand)]
enum FilesCommand {
    /// List live files (path, version, content type, updated at).
    Ls {
        /// Only paths starting with this.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Print a file's content (or, with --version, a retained older version).
    Get {
        /// Workspace path, e.g. notes/plan.md.
        path: String,
        /// A retained version number.
        #[arg(long)]
        version: Option<u64>,
    },
    /// Create or replace a file from --file or standard input. Content that is not UTF-8 text
    /// (an image, a PDF) is sent as bytes (`contentEncoding: base64`).
    Put {
        /// Workspace path.
        path: String,
        /// Read the content from this file (default: standard input).
        #[arg(long)]
        file: Option<PathBuf>,
        /// Only if the live etag is this one.
        #[arg(long)]
        if_match: Option<String>,
        /// Only if the path has no live file.
        #[arg(long, conflicts_with = "if_match")]
        create_only: bool,
        /// Media type (default text/markdown for text, application/octet-stream for bytes).
        #[arg(long)]
        content_type: Option<String>,
        /// Send the content as bytes even when it is valid UTF-8.
        #[arg(long)]
        binary: bool,
    },
    /// Delete a file.
    Rm {
        /// Workspace path.
        path: String,
        /// Only if the live etag is this one.
        #[arg(long)]
        if_match: Option<String>,
    },
    /// The retained versions of a file, newest first.
    History {
        /// Workspace path.
        path: String,
    },
    /// Upload a folder: only changed files, each conditional on the version last seen.
    Push {
        /// The folder to upload.
        dir: PathBuf,
        /// Workspace path prefix for the folder's files (e.g. `notes/`).
        #[arg(long, default_value = "")]
        prefix: String,
        /// Also delete remote files under the prefix that the folder lacks.
        #[arg(long)]
        delete: bool,
        /// Print what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Download the workspace (or a prefix of it) into a folder, each file atomically.
    Pull {
        /// The folder to write to (created if missing).
        dir: PathBuf,
        /// Only paths starting with this; it is stripped from the local names.
        #[arg(long, default_value = "")]
        prefix: String,
    },
    /// Follow the change feed: one line per write or delete, as they commit. A lost
    /// connection is retried (waits from 0.25 s doubling up to 5 s, each attempt said on
    /// standard error), resuming after the last change printed.
    Watch {
        /// Start after this sequence number (default: only changes from now on).
        #[arg(long)]
        since: Option<u64>,
    },
}

fn parse_path(raw: &str) -> Result<WorkspacePath, CliError> {
    WorkspacePath::parse(raw).map_err(|e| CliError(format!("invalid path {raw:?}: {e}")))
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// No key given: none, or an empty one (an empty `WSP_API_KEY` counts as unset).
pub(crate) fn keyless(key: Option<&str>) -> bool {
    key.is_none_or(str::is_empty)
}

/// Runs a `wsp files` subcommand.
pub async fn run(args: FilesArgs) -> Result<(), Failure> {
    let FilesArgs { remote, command } = args;
    remote.keyed(run_with(&remote, command)).await
}

async fn run_with(args: &RemoteArgs, command: FilesCommand) -> Result<(), Failure> {
    let remote = args.builder()?;
    let client = remote.clone().build().map_err(Failure::remote)?;
    match command {
        FilesCommand::Ls { prefix } => {
            let list = client
                .list(prefix.as_deref())
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return print_json(&list);
            }
            for f in &list.files {
                println!(
                    "{}\tv{}\t{}\t{}",
                    f.path.as_str(),
                    f.version,
                    f.content_type,
                    f.updated_at.to_rfc3339()
                );
            }
        }
        FilesCommand::Get { path, version } => {
            let file = client
                .get(&parse_path(&path)?, version)
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return print_json(&file);
            }
            let bytes = file.bytes().map_err(|e| {
                CliError(format!("the host sent a body that cannot be decoded: {e}"))
            })?;
            std::io::stdout().write_all(&bytes)?;
        }
        FilesCommand::Put {
            path,
            file,
            if_match,
            create_only,
            content_type,
            binary,
        } => {
            let path = parse_path(&path)?;
            let bytes = match file {
                Some(f) => std::fs::read(&f)
                    .map_err(|e| CliError(format!("cannot read {}: {e}", f.display())))?,
                None => {
                    let mut b = Vec::new();
                    std::io::stdin().read_to_end(&mut b)?;
                    b
                }
            };
            let options = PutOptions {
                content_type,
                if_match: if_match.map(ETag::from_wire),
                create_only,
                idempotency_key: None,
            };
            let sent = match String::from_utf8(bytes) {
                Ok(text) if !binary => client.put(&path, text, options).await,
                Ok(text) => client.put_bytes(&path, text.as_bytes(), options).await,
                Err(e) => client.put_bytes(&path, e.as_bytes(), options).await,
            };
            let stored = sent.map_err(Failure::remote)?;
            if args.json {
                return print_json(&stored);
            }
            println!(
                "{}\tv{}\t{}",
                stored.path.as_str(),
                stored.version,
                stored.etag.as_deref().unwrap_or_default()
            );
        }
        FilesCommand::Rm { path, if_match } => {
            let tag = if_match.map(ETag::from_wire);
            client
                .delete(&parse_path(&path)?, tag.as_ref())
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return print_json(&serde_json::json!({ "deleted": path }));
            }
            println!("deleted {path}");
        }
        FilesCommand::Push {
            dir,
            prefix,
            delete,
            dry_run,
        } => {
            let options = crate::sync::PushOptions {
                dir,
                prefix,
                delete,
                dry_run,
            };
            return crate::sync::push(&client, &args.url, options, args.json).await;
        }
        FilesCommand::Pull { dir, prefix } => {
            return crate::sync::pull(&client, &args.url, &dir, &prefix, args.json).await;
        }
        FilesCommand::Watch { since } => {
            // The feed never ends: no request timeout for it.
            let watcher = remote.timeout(None).build().map_err(Failure::remote)?;
            return crate::watch::follow(&watcher, since, args.json).await;
        }
        FilesCommand::History { path } => {
            let h = client
                .history(&parse_path(&path)?)
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return print_json(&h);
            }
            for v in &h.versions {
                println!(
                    "v{}\t{}\t{}\t{}",
                    v.version,
                    v.etag.as_deref().unwrap_or_default(),
                    v.content_type,
                    v.updated_at.to_rfc3339()
                );
            }
        }
    }
    Ok(())
}
