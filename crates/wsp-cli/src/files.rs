//! `wsp files`: the workspace file endpoints from the command line, through `wsp-client`.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use wsp_client::{CaCerts, Client, ClientBuilder, Error, LocalFile, PutOptions};
use wsp_types::wire::Discovery;
use wsp_types::{ETag, WorkspacePath};

use crate::CliError;
use crate::failure::Failure;
use crate::out::outln;

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

    /// A client for the host, fitted to it ([`connect`]).
    pub(crate) async fn client(&self) -> Result<Client, Failure> {
        Ok(connect(self.builder()?).await?.0)
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

/// The client of `builder`, its response bound set from the host's discovery
/// ([`Client::fit_to_host`]: answers larger than the host's `maxFileBytes` allows are refused
/// before they fill memory), and the discovery. A host that cannot be reached fails here; one
/// whose discovery does not answer keeps the default bound.
pub(crate) async fn connect(
    builder: ClientBuilder,
) -> Result<(Client, Option<Discovery>), Failure> {
    let client = builder.build().map_err(Failure::remote)?;
    match client.clone().fit_to_host().await {
        Ok((client, discovery)) => Ok((client, Some(discovery))),
        Err(
            e @ (Error::Transport(_)
            | Error::Certificate { .. }
            | Error::Redirected { .. }
            | Error::InvalidBaseUrl(_)),
        ) => Err(Failure::remote(e)),
        Err(_) => Ok((client, None)),
    }
}

/// The host's `maxFileBytes`, when it advertises one.
pub(crate) fn max_file_bytes(discovery: Option<&Discovery>) -> Option<u64> {
    discovery?
        .workspace
        .as_ref()?
        .max_file_bytes
        .map(std::num::NonZeroU64::get)
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
    /// Print a file's content (or, with --version, a retained older version): its exact bytes,
    /// to a terminal too.
    Get {
        /// Workspace path, e.g. notes/plan.md.
        path: String,
        /// A retained version number.
        #[arg(long)]
        version: Option<u64>,
    },
    /// Create or replace a file from --file (streamed from disk) or standard input. Content
    /// that is not UTF-8 text (an image, a PDF) is sent as bytes (`contentEncoding: base64`).
    /// A file over the host's maxFileBytes is refused before anything is sent.
    Put {
        /// Workspace path.
        path: String,
        /// Read the content from this file (default: standard input).
        #[arg(long)]
        file: Option<PathBuf>,
        /// Only if the live etag is this one, quoted as listed: --if-match '"3f9a…-1"'.
        #[arg(long, value_name = "ETAG")]
        if_match: Option<String>,
        /// Only if the path has no live file.
        #[arg(long, conflicts_with = "if_match")]
        create_only: bool,
        /// Media type (default: from the path's extension, e.g. text/markdown for .md,
        /// application/yaml for .yaml, image/png for .png; else text/plain for text and
        /// application/octet-stream for bytes).
        #[arg(long, value_name = "TYPE")]
        content_type: Option<String>,
        /// Send the content as bytes even when it is valid UTF-8.
        #[arg(long)]
        binary: bool,
    },
    /// Delete a file.
    Rm {
        /// Workspace path.
        path: String,
        /// Only if the live etag is this one, quoted as listed: --if-match '"3f9a…-1"'.
        #[arg(long, value_name = "ETAG")]
        if_match: Option<String>,
    },
    /// The retained versions of a file, newest first.
    History {
        /// Workspace path.
        path: String,
    },
    /// Upload a folder: only changed files, each conditional on the version last seen.
    #[command(after_help = crate::sync::PUSH_HELP)]
    Push {
        /// The folder to upload.
        dir: PathBuf,
        /// Workspace path prefix for the folder's files (e.g. `notes/`).
        #[arg(long, default_value = "")]
        prefix: String,
        /// Also delete remote files under the prefix that the folder lacks (asking first when
        /// there are more than 10).
        #[arg(long)]
        delete: bool,
        /// The media type of files with extension EXT (repeatable), e.g. ts=text/plain.
        #[arg(long = "content-type", value_name = "EXT=TYPE")]
        content_types: Vec<String>,
        #[command(flatten)]
        sync: crate::sync::SyncArgs,
    },
    /// Download the workspace (or a prefix of it) into a folder, each file atomically.
    #[command(after_help = crate::sync::PULL_HELP)]
    Pull {
        /// The folder to write to (created if missing).
        dir: PathBuf,
        /// Only paths starting with this; it is stripped from the local names.
        #[arg(long, default_value = "")]
        prefix: String,
        #[command(flatten)]
        sync: crate::sync::SyncArgs,
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

/// `raw` as a workspace path, or the invalid-argument failure naming it.
pub(crate) fn parse_path(raw: &str) -> Result<WorkspacePath, Failure> {
    WorkspacePath::parse(raw).map_err(|e| Failure::invalid(format!("invalid path {raw:?}: {e}")))
}

/// An `--if-match` value: `*`, or an entity tag in its double quotes (`"..."`, `W/"..."`) as
/// `ls --json`, `put` and `history` print it. Refused unquoted (the host would compare it
/// with the live etag, find them different and answer 409, blaming the version).
pub(crate) fn parse_etag(raw: &str) -> Result<ETag, Failure> {
    let quoted = |s: &str| s.len() >= 2 && s.starts_with('"') && s.ends_with('"');
    if raw == "*" || quoted(raw) || raw.strip_prefix("W/").is_some_and(quoted) {
        return Ok(ETag::from_wire(raw));
    }
    Err(Failure::invalid(format!(
        "--if-match {raw}: an etag is sent with its double quotes, as `wsp files put`, `ls \
         --json` and `history` print it; quote it for the shell too: --if-match '\"{}\"'",
        raw.trim_matches('"')
    )))
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
    // Arguments are checked before anything is sent.
    match &command {
        FilesCommand::Get { path, .. }
        | FilesCommand::History { path }
        | FilesCommand::Rm { path, .. }
        | FilesCommand::Put { path, .. } => {
            parse_path(path)?;
        }
        _ => {}
    }
    if let FilesCommand::Put {
        if_match: Some(tag),
        ..
    }
    | FilesCommand::Rm {
        if_match: Some(tag),
        ..
    } = &command
    {
        parse_etag(tag)?;
    }
    if let FilesCommand::Watch { since } = command {
        // The feed never ends: no request timeout for it.
        let (watcher, _) = connect(remote.timeout(None)).await?;
        return crate::watch::follow(&watcher, since, args.json).await;
    }
    if let FilesCommand::Put {
        path,
        file,
        if_match,
        create_only,
        content_type,
        binary,
    } = command
    {
        let options = PutOptions {
            content_type,
            if_match: if_match.as_deref().map(parse_etag).transpose()?,
            create_only,
            idempotency_key: None,
        };
        return put(args, remote, &parse_path(&path)?, file, options, binary).await;
    }
    let (client, discovery) = connect(remote).await?;
    match command {
        FilesCommand::Ls { prefix } => {
            let list = client
                .list(prefix.as_deref())
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return crate::out::json(&list);
            }
            for f in &list.files {
                outln!(
                    "{}\tv{}\t{}\t{}",
                    f.path.as_str(),
                    f.version,
                    f.content_type,
                    f.updated_at.to_rfc3339()
                )?;
            }
        }
        FilesCommand::Get { path, version } => {
            let file = client
                .get(&parse_path(&path)?, version)
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return crate::out::json(&file);
            }
            let bytes = file.bytes().map_err(|e| {
                CliError(format!("the host sent a body that cannot be decoded: {e}"))
            })?;
            crate::out::raw(&bytes)?;
        }
        FilesCommand::Rm { path, if_match } => {
            let tag = if_match.as_deref().map(parse_etag).transpose()?;
            client
                .delete(&parse_path(&path)?, tag.as_ref())
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return crate::out::json(&serde_json::json!({ "deleted": path }));
            }
            outln!("deleted {path}")?;
        }
        FilesCommand::Push {
            dir,
            prefix,
            delete,
            content_types,
            sync,
        } => {
            let options = crate::sync::PushOptions {
                dir,
                prefix,
                delete,
                content_types: crate::media::Overrides::parse(&content_types)
                    .map_err(Failure::invalid)?,
                sync,
            };
            let identity = crate::sync::Identity::of(&args.url, args.key.as_deref());
            let max_file = max_file_bytes(discovery.as_ref());
            return crate::sync::push(&client, identity, max_file, options, args.json).await;
        }
        FilesCommand::Pull { dir, prefix, sync } => {
            let identity = crate::sync::Identity::of(&args.url, args.key.as_deref());
            return crate::sync::pull(&client, identity, &dir, &prefix, sync, args.json).await;
        }
        FilesCommand::History { path } => {
            let h = client
                .history(&parse_path(&path)?)
                .await
                .map_err(Failure::remote)?;
            if args.json {
                return crate::out::json(&h);
            }
            for v in &h.versions {
                outln!(
                    "v{}\t{}\t{}\t{}",
                    v.version,
                    v.etag.as_deref().unwrap_or_default(),
                    v.content_type,
                    v.updated_at.to_rfc3339()
                )?;
            }
        }
        FilesCommand::Put { .. } | FilesCommand::Watch { .. } => unreachable!("handled above"),
    }
    Ok(())
}

/// `wsp files put`: the size checked against the host's `maxFileBytes` before anything is
/// sent, a file streamed from disk, standard input read up to the limit.
async fn put(
    args: &RemoteArgs,
    remote: ClientBuilder,
    path: &WorkspacePath,
    file: Option<PathBuf>,
    mut options: PutOptions,
    binary: bool,
) -> Result<(), Failure> {
    let (client, discovery) = connect(remote.clone()).await?;
    let max = max_file_bytes(discovery.as_ref());
    let too_large = |what: String, size: u64, max: u64| {
        Failure::too_large(
            format!(
                "{what}; the host's file size limit (maxFileBytes) is {max} bytes: nothing was \
                 sent"
            ),
            size,
            max,
        )
    };
    let stored = match file {
        Some(file) => {
            let unreadable = |e: std::io::Error| {
                Failure::invalid(format!("cannot read {}: {e}", file.display()))
            };
            let size = std::fs::metadata(&file).map_err(unreadable)?.len();
            if let Some(max) = max.filter(|max| size > *max) {
                return Err(too_large(
                    format!("{} is {size} bytes", file.display()),
                    size,
                    max,
                ));
            }
            let local = LocalFile::open(&file).map_err(Failure::remote)?;
            let kind = crate::media::kind_of(
                path.as_str(),
                local.is_text() && !binary,
                &crate::media::Overrides::default(),
            );
            options.content_type.get_or_insert(kind.media_type);
            // A large file takes its time: 30 s, and a second more per MiB.
            let timeout = Duration::from_secs(30 + local.size() / (1024 * 1024));
            let client = remote
                .timeout(Some(timeout))
                .max_response_bytes(client.max_response_bytes())
                .build()
                .map_err(Failure::remote)?;
            client
                .put_file(path, &local, binary || kind.bytes, options)
                .await
        }
        None => {
            let limit = max.unwrap_or(u64::MAX);
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(limit.saturating_add(1))
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > limit {
                return Err(too_large(
                    format!("standard input holds more than {limit} bytes"),
                    bytes.len() as u64,
                    limit,
                ));
            }
            let text = !binary && std::str::from_utf8(&bytes).is_ok();
            let kind =
                crate::media::kind_of(path.as_str(), text, &crate::media::Overrides::default());
            options.content_type.get_or_insert(kind.media_type);
            match String::from_utf8(bytes) {
                Ok(text) if !(binary || kind.bytes) => client.put(path, text, options).await,
                Ok(text) => client.put_bytes(path, text.as_bytes(), options).await,
                Err(e) => client.put_bytes(path, e.as_bytes(), options).await,
            }
        }
    };
    let stored = stored.map_err(Failure::remote)?;
    if args.json {
        return crate::out::json(&stored);
    }
    outln!(
        "{}\tv{}\t{}",
        stored.path.as_str(),
        stored.version,
        stored.etag.as_deref().unwrap_or_default()
    )
}
