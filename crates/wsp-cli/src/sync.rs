//! `wsp files push` and `wsp files pull`: a local folder and a workspace (or a prefix of it)
//! kept in step without ever overwriting a change the other side made.
//!
//! The folder keeps its sync state in `.wsp-sync.json` (never pushed or pulled): per host and
//! key ([`Identity`]: the host's URL without credentials, and the key's id, never the key), and
//! per workspace path, the etag of the version last uploaded or downloaded and the SHA-256 of
//! its content. So one folder pushed with two keys (two workspaces) keeps two states, and a
//! state never speaks for another workspace. An etag names one version of one life of a path,
//! so when the host still lists that etag the remote content is the one the state hashed: a
//! file whose local hash and remote etag both match is unchanged without downloading it. A
//! changed file is uploaded with `If-Match` and the etag last seen (a new one with
//! `If-None-Match: *`), so a remote change made since is reported as a conflict and never
//! overwritten. Whenever the state cannot tell (a path never synced, or changed on both sides
//! since), the two contents are compared: equal is in sync (and recorded), different is a
//! conflict. Pull is the mirror image.
//!
//! The state is written as files land (after every 100 changes or 2 seconds, atomically:
//! a temporary file and a rename), so an interrupted sync loses at most that much, and what it
//! lost is found again by comparing contents. Ctrl-C stops after the file in flight, saves the
//! state and exits with status 130; a second Ctrl-C stops at once.
//!
//! The folder's files are those [`crate::tree`] takes (`.gitignore`, `.wspignore`,
//! `--exclude`, `--include`; never `.git/`). A file whose path is not a workspace path (RFC
//! 0059's rule, [`PATH_RULE`]) is skipped and listed, the rule said once. Files are bytes on
//! both sides: a local file that is not UTF-8 text is uploaded with `contentEncoding: base64`,
//! its media type from its extension ([`crate::media`]).
//!
//! Each file that moves gets a line on standard output, then a summary; on a terminal, a
//! progress bar on standard error counts the files done.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use wsp_client::{Client, Error, PutOptions};
use wsp_types::{ETag, WorkspacePath};

use crate::CliError;
use crate::failure::Failure;
use crate::media::{Overrides, kind_of};
use crate::out::{errln, outln};
use crate::tree::Rules;

/// The sync state's file name in the synced folder.
pub const MANIFEST: &str = ".wsp-sync.json";

/// `push --delete` asks before deleting more files than this (or, without a terminal to ask,
/// wants `--yes`).
pub const ASK_ABOVE: usize = 10;

/// The state is saved after this many changes, or [`SAVE_EVERY`], whichever comes first.
const SAVE_AFTER: usize = 100;

/// See [`SAVE_AFTER`].
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// RFC 0059's rule for a workspace path, in words.
pub const PATH_RULE: &str = "a workspace path (RFC 0059) is 1 to 256 bytes of ASCII letters, \
     digits, '.', '_', '-' and '/', starts with a letter or digit, and has no empty, '.' or '..' \
     part: no spaces, no accents";

/// The end of `wsp files push --help`.
pub const PUSH_HELP: &str = "Which files: the folder's regular files, never .git/ nor \
.wsp-sync.json, less those that .wspignore and .gitignore files (of the folder, its subfolders \
and the git checkout it is in), .git/info/exclude, git's global excludes file and --exclude \
leave out; with --include, only those it names. Globs are gitignore's: *.log, build/, /drafts.
A file whose path is not a workspace path (ASCII letters, digits, '.', '_', '-' and '/', \
starting with a letter or digit, at most 256 bytes) is skipped and listed.
Media types come from extensions (.md text/markdown, .yaml application/yaml, .png image/png, \
...; text/plain or application/octet-stream otherwise); --content-type EXT=TYPE overrides.
--delete leaves alone remote files the rules leave out, and asks before deleting more than 10 \
(give --yes where nobody can answer). Ctrl-C stops after the file in flight and saves the sync \
state: run the same command again to finish.";

/// The end of `wsp files pull --help`.
pub const PULL_HELP: &str = "Pull takes the remote files that push would send back: \
.wspignore, .gitignore and --exclude leave files out, --include names the only ones taken. A \
local file changed since the last sync is never overwritten. Ctrl-C stops after the file in \
flight and saves the sync state: run the same command again to finish.";

/// The flags push and pull share.
#[derive(Debug, Clone, Args)]
pub struct SyncArgs {
    /// Leave out files matching GLOB (gitignore syntax; repeatable), as .wspignore does.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Take only files matching GLOB (gitignore syntax; repeatable); the other rules still
    /// apply.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Print what would happen; change nothing, here or on the host.
    #[arg(long)]
    pub dry_run: bool,
    /// Do it without asking (push --delete asks before deleting more than 10 files).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Whose workspace a sync state is about: the host's URL (without a user or password) and
/// which key (`wsp_<id>` for a wsp key, a short hash of any other; never the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    host: String,
    key: String,
}

impl Identity {
    /// The identity of a client of `url` with `key`.
    pub fn of(url: &str, key: Option<&str>) -> Self {
        let host = match reqwest::Url::parse(url) {
            Ok(mut parsed) => {
                let _ = parsed.set_username("");
                let _ = parsed.set_password(None);
                parsed.as_str().trim_end_matches('/').to_owned()
            }
            Err(_) => url.trim_end_matches('/').to_owned(),
        };
        let key = match key.filter(|k| !k.is_empty()) {
            None => "none".to_owned(),
            Some(key) => match wsp_key_id(key) {
                Some(id) => format!("wsp_{id}"),
                // Eight hex digits: enough to tell keys apart, too few to test guesses with.
                None => format!("sha256:{}", &sha256(key.as_bytes())[..8]),
            },
        };
        Self { host, key }
    }
}

/// The id of a wsp key, `wsp_<12 hex>_<secret>`.
fn wsp_key_id(key: &str) -> Option<&str> {
    let id = key.strip_prefix("wsp_")?.split('_').next()?;
    (id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// The folder's sync state: one entry per [`Identity`].
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    /// The format: 2 (1 was a single `{url, files}` of unknown key).
    version: u32,
    syncs: Vec<Synced>,
}

/// The state of one identity.
#[derive(Debug, Serialize, Deserialize)]
struct Synced {
    #[serde(flatten)]
    identity: Identity,
    files: BTreeMap<String, Seen>,
}

/// One path's last synced version.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Seen {
    etag: String,
    sha256: String,
}

/// The state of one identity in one folder, saved as it changes.
#[derive(Debug)]
struct State {
    dir: PathBuf,
    identity: Identity,
    /// The other identities' states, kept as they are.
    others: Vec<Synced>,
    files: BTreeMap<String, Seen>,
    /// Nothing is written (a dry run).
    dry_run: bool,
    unsaved: usize,
    saved_at: Instant,
}

impl State {
    /// The state of `identity` in `dir` (empty when there is none).
    fn load(dir: &Path, identity: Identity, dry_run: bool) -> Result<Self, Failure> {
        let file = dir.join(MANIFEST);
        let manifest = match std::fs::read(&file) {
            Ok(bytes) => parse_manifest(&bytes).map_err(|e| {
                CliError(format!(
                    "{} is damaged ({e}); remove it: the next push or pull then compares every \
                     file by content and records the state again",
                    file.display()
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
            Err(e) => return Err(CliError(format!("cannot read {}: {e}", file.display())).into()),
        };
        let (mut mine, mut others) = (BTreeMap::new(), Vec::new());
        for sync in manifest.syncs {
            if sync.identity == identity {
                mine = sync.files;
            } else {
                others.push(sync);
            }
        }
        Ok(Self {
            dir: dir.to_owned(),
            identity,
            others,
            files: mine,
            dry_run,
            unsaved: 0,
            saved_at: Instant::now(),
        })
    }

    fn get(&self, name: &str) -> Option<&Seen> {
        self.files.get(name)
    }

    /// Records `name` as synced at `etag` with content hash `sha256`, saving when due.
    fn record(&mut self, name: &str, etag: String, sha256: String) -> Result<(), Failure> {
        self.files.insert(name.to_owned(), Seen { etag, sha256 });
        self.changed()
    }

    /// Forgets `name` (deleted on both sides), saving when due.
    fn forget(&mut self, name: &str) -> Result<(), Failure> {
        self.files.remove(name);
        self.changed()
    }

    fn changed(&mut self) -> Result<(), Failure> {
        self.unsaved += 1;
        if self.unsaved >= SAVE_AFTER || self.saved_at.elapsed() >= SAVE_EVERY {
            self.save()?;
        }
        Ok(())
    }

    /// Writes the whole state (every identity's) atomically; nothing on a dry run.
    fn save(&mut self) -> Result<(), Failure> {
        if self.dry_run {
            return Ok(());
        }
        let mut syncs: Vec<&Synced> = self.others.iter().collect();
        let mine = Synced {
            identity: self.identity.clone(),
            files: std::mem::take(&mut self.files),
        };
        syncs.push(&mine);
        let manifest = serde_json::json!({ "version": 2, "syncs": syncs });
        let written = write_atomically(
            &self.dir.join(MANIFEST),
            &serde_json::to_vec_pretty(&manifest)?,
        );
        self.files = mine.files;
        written?;
        self.unsaved = 0;
        self.saved_at = Instant::now();
        Ok(())
    }
}

/// The state file's content: format 2, or format 1 (whose one state names no key, so it is
/// nobody's: every file is compared by content once, and the state recorded anew).
fn parse_manifest(bytes: &[u8]) -> Result<Manifest, serde_json::Error> {
    #[derive(Deserialize)]
    struct Any {
        #[serde(default)]
        version: u32,
    }
    if serde_json::from_slice::<Any>(bytes)?.version >= 2 {
        serde_json::from_slice(bytes)
    } else {
        Ok(Manifest::default())
    }
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Uploaded,
    Downloaded,
    Deleted,
    Unchanged,
    Conflict,
    Skipped,
    Failed,
}

impl Outcome {
    fn word(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Self::Uploaded, false) => "uploaded",
            (Self::Uploaded, true) => "would upload",
            (Self::Downloaded, false) => "downloaded",
            (Self::Downloaded, true) => "would download",
            (Self::Deleted, false) => "deleted",
            (Self::Deleted, true) => "would delete",
            (Self::Unchanged, _) => "unchanged",
            (Self::Conflict, false) => "conflict",
            (Self::Conflict, true) => "would conflict",
            (Self::Skipped, _) => "skipped",
            (Self::Failed, _) => "failed",
        }
    }
}

/// The per-file lines, the progress bar and the summary of one push or pull.
#[derive(Debug)]
struct Report {
    dry_run: bool,
    json: bool,
    files: Vec<serde_json::Value>,
    counts: BTreeMap<&'static str, usize>,
    conflicts: usize,
    failures: usize,
    /// Files done of the files to do, on standard error when it is a terminal (and the output
    /// is not `--json`); hidden otherwise, so logs and pipes get the plain lines alone.
    bar: ProgressBar,
}

impl Report {
    /// A report of `total` files to go through (more may be added with [`Report::more`]).
    fn new(total: usize, dry_run: bool, json: bool) -> Self {
        let bar = if json || !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else {
            // No colour in the template: nothing for NO_COLOR to turn off.
            let style = ProgressStyle::with_template("{bar:40} {pos}/{len} files  {wide_msg}")
                .expect("a valid template")
                .progress_chars("#>-");
            ProgressBar::new(total as u64).with_style(style)
        };
        Self {
            dry_run,
            json,
            files: Vec::new(),
            counts: BTreeMap::new(),
            conflicts: 0,
            failures: 0,
            bar,
        }
    }

    /// `n` more files to go through.
    fn more(&self, n: usize) {
        self.bar.inc_length(n as u64);
    }

    fn record(&mut self, path: &str, outcome: Outcome, note: &str) -> Result<(), Failure> {
        self.bar.inc(1);
        self.bar
            .set_message(crate::out::escape_controls(path, false).into_owned());
        let word = outcome.word(self.dry_run);
        *self.counts.entry(word).or_default() += 1;
        match outcome {
            Outcome::Conflict => self.conflicts += 1,
            Outcome::Failed => self.failures += 1,
            _ => {}
        }
        if self.json {
            self.files.push(serde_json::json!({
                "path": path, "outcome": outcome, "dryRun": self.dry_run, "note": note,
            }));
        } else if outcome != Outcome::Unchanged || !note.is_empty() {
            // Printed above the bar, which is drawn again below the line.
            self.bar.suspend(|| {
                if note.is_empty() {
                    outln!("{path}\t{word}")
                } else {
                    outln!("{path}\t{word}\t{note}")
                }
            })?;
        }
        Ok(())
    }

    /// Prints the summary (the counts of `order`, then conflicts, then skipped and failed files
    /// if any); an error when any file conflicted or failed, or the sync was interrupted.
    fn finish(self, order: &[Outcome], interrupted: bool) -> Result<(), Failure> {
        // The bar stays, full, above the summary.
        self.bar.finish_with_message("done");
        let count = |o: Outcome| self.counts.get(o.word(self.dry_run)).copied().unwrap_or(0);
        let mut outcomes = order.to_vec();
        outcomes.push(Outcome::Conflict);
        outcomes.extend(
            [Outcome::Skipped, Outcome::Failed]
                .into_iter()
                .filter(|o| count(*o) > 0),
        );
        let summary = outcomes
            .iter()
            .map(|o| format!("{} {}", count(*o), o.word(self.dry_run)))
            .collect::<Vec<_>>()
            .join(", ");
        if self.json {
            crate::out::json(&serde_json::json!({
                "files": self.files, "summary": summary, "dryRun": self.dry_run,
            }))?;
        } else {
            outln!("{summary}")?;
        }
        if interrupted {
            return Err(Failure::interrupted(
                "interrupted; the sync state of what was done is saved: run the same command \
                 again to finish",
            ));
        }
        if self.conflicts > 0 && !self.json {
            errln!(
                "hint: a conflict is a file changed on both sides since the last sync. \
                 `wsp files get PATH` shows the host's version. To keep the host's: move \
                 your file away and pull. To keep yours: `wsp files put PATH --file FILE \
                 --if-match ETAG`, with the etag `wsp files ls --json` lists"
            );
        }
        match (self.conflicts, self.failures) {
            (0, 0) => Ok(()),
            (conflicts, 0) => Err(Failure::conflict(format!(
                "{conflicts} file(s) conflict; nothing was overwritten"
            ))),
            (conflicts, failures) => Err(CliError(format!(
                "{failures} file(s) failed and {conflicts} conflict; nothing was overwritten"
            ))
            .into()),
        }
    }
}

/// Ctrl-C during a sync: the first asks it to stop after the file in flight; a second ends the
/// process at once (status 130; the state saved last is at most [`SAVE_AFTER`] changes old,
/// and what it misses is found again by comparing contents).
#[derive(Debug, Clone)]
struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    fn install() -> Self {
        let flag = Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                set.store(true, Ordering::SeqCst);
                errln!("interrupted: stopping after the file in flight (Ctrl-C again to stop now)");
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        });
        Self(flag)
    }

    fn fired(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

fn sha256(bytes: &[u8]) -> String {
    wsp_types::hex(&Sha256::digest(bytes))
}

/// Whether the host refused a conditional request because the file moved on (or is gone).
fn is_conflict(e: &Error) -> bool {
    e.api().is_some_and(|a| matches!(a.status, 404 | 409 | 412))
}

/// `dir` joined with the workspace-relative `rel`, or `None` when `rel` could leave `dir`: an
/// empty, `.` or `..` component, an absolute path, a backslash, a colon or a NUL.
fn local_path(dir: &Path, rel: &str) -> Option<PathBuf> {
    let mut path = dir.to_path_buf();
    for part in rel.split('/') {
        if part.is_empty()
            || part == "."
            || part == ".."
            || part.contains(['\\', ':', '\0'])
            || Path::new(part).is_absolute()
        {
            return None;
        }
        path.push(part);
    }
    Some(path)
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader sees the old content or the new one, never a part.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError(format!("cannot write {}: {e}", path.display()));
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!("{}{}", crate::tree::TEMPORARY, std::process::id()));
    let temp = PathBuf::from(temp);
    let result = std::fs::File::create(&temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(fail)
}

/// Creates the directories between `dir` and `file`, refusing to pass through a symbolic link
/// (which could lead outside `dir`).
fn create_parents(dir: &Path, file: &Path) -> Result<(), String> {
    let Ok(rel) = file.strip_prefix(dir) else {
        return Err("outside the folder".into());
    };
    let mut at = dir.to_path_buf();
    let parts: Vec<_> = rel.iter().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{} is a symbolic link", at.display()));
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", at.display())),
            Err(_) => std::fs::create_dir(&at).map_err(|e| e.to_string())?,
        }
    }
    match std::fs::symlink_metadata(file) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(format!("{} is a symbolic link", file.display()))
        }
        _ => Ok(()),
    }
}

/// The folder's files the rules take: those with a workspace path under `prefix`, and those
/// skipped (listed, with [`PATH_RULE`] said once before them).
fn local_files(
    rules: &Rules,
    prefix: &str,
    report: &mut Report,
) -> Result<Vec<(String, WorkspacePath)>, Failure> {
    let walk = rules.walk()?;
    let mut taken = Vec::with_capacity(walk.files.len());
    let mut skipped = Vec::new();
    for rel in walk.files {
        let name = format!("{prefix}{rel}");
        match WorkspacePath::parse(&name) {
            Ok(path) => taken.push((rel, path)),
            Err(e) => skipped.push((name, e.to_string())),
        }
    }
    for name in walk.unnamed {
        skipped.push((name, "the name is not UTF-8".into()));
    }
    if !skipped.is_empty() {
        if !report.json {
            errln!(
                "skipping {} file(s) whose paths are not workspace paths: {PATH_RULE}; rename \
                 them to sync them, or list them in .wspignore to keep them here silently",
                skipped.len()
            );
        }
        report.more(skipped.len());
        for (name, why) in &skipped {
            report.record(name, Outcome::Skipped, why)?;
        }
    }
    Ok(taken)
}

/// The host's files under `prefix`: path -> etag.
async fn remote_files(client: &Client, prefix: &str) -> Result<BTreeMap<String, String>, Failure> {
    Ok(client
        .list(Some(prefix).filter(|p| !p.is_empty()))
        .await
        .map_err(Failure::remote)?
        .files
        .into_iter()
        .map(|f| (f.path.as_str().to_owned(), f.etag.unwrap_or_default()))
        .collect())
}

/// Options of `wsp files push`.
#[derive(Debug)]
pub struct PushOptions {
    /// The folder to upload.
    pub dir: PathBuf,
    /// Prepended to each relative path to make the workspace path.
    pub prefix: String,
    /// Remove remote files under the prefix that the folder lacks.
    pub delete: bool,
    /// `--content-type EXT=TYPE`.
    pub content_types: Overrides,
    /// The flags push and pull share.
    pub sync: SyncArgs,
}

/// What push does with one local file, decided before any upload.
enum Step {
    /// Nothing to send: `Outcome` and its note.
    Done(Outcome, &'static str),
    /// Compare the remote content with the local one (the state cannot tell).
    Compare(&'static str),
    /// Upload with this precondition (`None`: create only).
    Upload(Option<String>),
}

/// What push does with `seen` (the state), `current` (the remote etag) and `hash` (the local
/// content's).
fn push_step(seen: Option<&Seen>, current: Option<&String>, hash: &str) -> Step {
    match (seen, current) {
        (Some(seen), Some(etag)) if seen.sha256 == hash => {
            if *etag == seen.etag {
                Step::Done(Outcome::Unchanged, "")
            } else {
                Step::Done(Outcome::Unchanged, "changed remotely; pull to update")
            }
        }
        (Some(seen), None) if seen.sha256 == hash => {
            Step::Done(Outcome::Unchanged, "deleted remotely")
        }
        (Some(seen), Some(etag)) if *etag != seen.etag => {
            Step::Compare("changed on both sides since the last sync")
        }
        (Some(_), None) => Step::Done(Outcome::Conflict, "deleted remotely since the last sync"),
        (Some(seen), Some(_)) => Step::Upload(Some(seen.etag.clone())),
        (None, None) => Step::Upload(None),
        (None, Some(_)) => Step::Compare("exists remotely with other content"),
    }
}

/// Runs `wsp files push`. `max_file`: the host's `maxFileBytes`, when it says.
pub async fn push(
    client: &Client,
    identity: Identity,
    max_file: Option<u64>,
    options: PushOptions,
    json: bool,
) -> Result<(), Failure> {
    let dir = &options.dir;
    let dry_run = options.sync.dry_run;
    if !dir.is_dir() {
        return Err(Failure::invalid(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let rules = Rules::new(
        dir,
        &options.sync.exclude,
        &options.sync.include,
        &[MANIFEST],
    )?;
    let mut state = State::load(dir, identity, dry_run)?;
    let remote = remote_files(client, &options.prefix).await?;
    let mut report = Report::new(0, dry_run, json);
    let locals = local_files(&rules, &options.prefix, &mut report)?;
    report.more(locals.len());

    // What --delete would remove, decided (and agreed to) before anything changes.
    let mut deletions = Vec::new();
    if options.delete {
        let local: BTreeSet<&str> = locals.iter().map(|(_, p)| p.as_str()).collect();
        for (name, etag) in &remote {
            let rel = name.strip_prefix(&options.prefix).unwrap_or(name);
            let here = local_path(dir, rel).is_some_and(|p| p.exists());
            if local.contains(name.as_str()) || here || rules.leaves_out(rel) {
                continue;
            }
            deletions.push((name.clone(), etag.clone()));
        }
        if !dry_run && deletions.len() > ASK_ABOVE && !options.sync.yes {
            confirm_deletions(&deletions)?;
        }
        report.more(deletions.len());
    }

    let interrupt = Interrupt::install();
    for (rel, path) in &locals {
        if interrupt.fired() {
            break;
        }
        let name = path.as_str();
        let file = dir.join(rel);
        if let (Some(max), Ok(meta)) = (max_file, std::fs::metadata(&file))
            && meta.len() > max
        {
            let note = format!(
                "{} bytes, over the host's file size limit (maxFileBytes) of {max} bytes",
                meta.len()
            );
            report.record(name, Outcome::Failed, &note)?;
            continue;
        }
        let content = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                report.record(name, Outcome::Failed, &format!("unreadable: {e}"))?;
                continue;
            }
        };
        let hash = sha256(&content);
        let current = remote.get(name);
        let if_match = match push_step(state.get(name), current, &hash) {
            Step::Done(outcome, note) => {
                report.record(name, outcome, note)?;
                continue;
            }
            Step::Upload(if_match) => if_match,
            Step::Compare(why) => {
                let got = match client.get(path, None).await {
                    Ok(got) => got,
                    Err(e) => {
                        report.record(name, Outcome::Failed, Failure::remote(e).message())?;
                        continue;
                    }
                };
                if got.bytes().is_ok_and(|remote| *remote == *content) {
                    state.record(name, got.etag.unwrap_or_default(), hash)?;
                    report.record(name, Outcome::Unchanged, "")?;
                } else {
                    report.record(name, Outcome::Conflict, why)?;
                }
                continue;
            }
        };
        if dry_run {
            report.record(name, Outcome::Uploaded, "")?;
            continue;
        }
        let text = std::str::from_utf8(&content).is_ok();
        let kind = kind_of(name, text, &options.content_types);
        let put = PutOptions {
            content_type: Some(kind.media_type),
            create_only: if_match.is_none(),
            if_match: if_match.map(ETag::from_wire),
            idempotency_key: None,
        };
        // Text goes as text; bytes (and types that are always bytes) as base64.
        let sent = match String::from_utf8(content) {
            Ok(text) if !kind.bytes => client.put(path, text, put).await,
            Ok(text) => client.put_bytes(path, text.as_bytes(), put).await,
            Err(e) => client.put_bytes(path, e.as_bytes(), put).await,
        };
        match sent {
            Ok(stored) => {
                state.record(name, stored.etag.unwrap_or_default(), hash)?;
                report.record(name, Outcome::Uploaded, "")?;
            }
            Err(e) if is_conflict(&e) => {
                report.record(name, Outcome::Conflict, "changed remotely meanwhile")?;
            }
            Err(e) => report.record(name, Outcome::Failed, Failure::remote(e).message())?,
        }
    }
    for (name, etag) in &deletions {
        if interrupt.fired() {
            break;
        }
        let expected = state.get(name).map_or(etag.clone(), |s| s.etag.clone());
        if expected != *etag {
            report.record(
                name,
                Outcome::Conflict,
                "changed remotely since the last sync",
            )?;
            continue;
        }
        if dry_run {
            report.record(name, Outcome::Deleted, "")?;
            continue;
        }
        let path = WorkspacePath::parse(name).map_err(|e| CliError(e.to_string()))?;
        match client.delete(&path, Some(&ETag::from_wire(expected))).await {
            Ok(()) => {
                state.forget(name)?;
                report.record(name, Outcome::Deleted, "")?;
            }
            Err(e) if is_conflict(&e) => {
                report.record(name, Outcome::Conflict, "changed remotely meanwhile")?;
            }
            Err(e) => report.record(name, Outcome::Failed, Failure::remote(e).message())?,
        }
    }
    state.save()?;
    let mut order = vec![Outcome::Uploaded, Outcome::Unchanged];
    if options.delete {
        order.insert(1, Outcome::Deleted);
    }
    report.finish(&order, interrupt.fired())
}

/// Lists the files `push --delete` would delete, then asks at a terminal; without one (or on
/// a no), refuses: nothing has changed yet.
fn confirm_deletions(deletions: &[(String, String)]) -> Result<(), Failure> {
    const SHOWN: usize = 50;
    for (name, _) in deletions.iter().take(SHOWN) {
        errln!("{name}\twill delete");
    }
    if deletions.len() > SHOWN {
        errln!(
            "... and {} more (--dry-run lists them all)",
            deletions.len() - SHOWN
        );
    }
    let count = deletions.len();
    if !crate::out::stdin_is_terminal() {
        return Err(Failure::confirmation_required(format!(
            "--delete would delete {count} remote files, more than {ASK_ABOVE}, and standard \
             input is not a terminal to ask: pass --yes to delete them (--dry-run to see them); \
             nothing was changed"
        )));
    }
    crate::out::err_text(&format!("delete these {count} remote files? [y/N] "));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        return Ok(());
    }
    Err(Failure::confirmation_required(
        "not confirmed; nothing was changed",
    ))
}

/// Runs `wsp files pull`: the workspace's files under `prefix` into `dir` (created if missing),
/// each written atomically.
pub async fn pull(
    client: &Client,
    identity: Identity,
    dir: &Path,
    prefix: &str,
    sync: SyncArgs,
    json: bool,
) -> Result<(), Failure> {
    let dry_run = sync.dry_run;
    if !dry_run {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    }
    let rules = Rules::new(dir, &sync.exclude, &sync.include, &[MANIFEST])?;
    let mut state = State::load(dir, identity, dry_run)?;
    let listed = remote_files(client, prefix).await?;
    let mut report = Report::new(listed.len(), dry_run, json);
    let interrupt = Interrupt::install();
    for (name, etag) in listed {
        if interrupt.fired() {
            break;
        }
        let rel = name.strip_prefix(prefix).unwrap_or_default();
        if rel == MANIFEST {
            report.record(&name, Outcome::Failed, "the name of the sync state file")?;
            continue;
        }
        let Some(target) = local_path(dir, rel) else {
            report.record(&name, Outcome::Failed, "would land outside the folder")?;
            continue;
        };
        if rules.leaves_out(rel) {
            report.bar.inc(1);
            continue;
        }
        if let Err(why) = create_parents_unless(dry_run, dir, &target) {
            report.record(&name, Outcome::Failed, &why)?;
            continue;
        }
        let path = WorkspacePath::parse(&name).map_err(|e| CliError(e.to_string()))?;
        let local = match std::fs::read(&target) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                report.record(&name, Outcome::Failed, &e.to_string())?;
                continue;
            }
        };
        let local_hash = local.as_deref().map(sha256);
        let seen = state.get(&name).cloned();
        // Whether the remote content must be compared with the local one.
        let compare = match (&seen, &local_hash) {
            (Some(seen), Some(hash)) if seen.sha256 == *hash => {
                if seen.etag == etag {
                    report.record(&name, Outcome::Unchanged, "")?;
                    continue;
                }
                None
            }
            (Some(seen), Some(_)) if seen.etag == etag => {
                report.record(&name, Outcome::Unchanged, "changed locally; push to upload")?;
                continue;
            }
            (Some(_), Some(_)) => Some("changed on both sides since the last sync"),
            (None, Some(_)) => Some("a local file with other content"),
            (_, None) => None,
        };
        if dry_run && compare.is_none() {
            report.record(&name, Outcome::Downloaded, "")?;
            continue;
        }
        let file = match client.get(&path, None).await {
            Ok(file) => file,
            Err(e) => {
                report.record(&name, Outcome::Failed, Failure::remote(e).message())?;
                continue;
            }
        };
        let bytes = match file.bytes() {
            Ok(bytes) => bytes.into_owned(),
            Err(e) => {
                report.record(&name, Outcome::Failed, &format!("the host sent {e}"))?;
                continue;
            }
        };
        let hash = sha256(&bytes);
        let etag = file.etag.unwrap_or(etag);
        if let Some(why) = compare {
            if local_hash.as_deref() == Some(hash.as_str()) {
                state.record(&name, etag, hash)?;
                report.record(&name, Outcome::Unchanged, "")?;
            } else {
                report.record(&name, Outcome::Conflict, why)?;
            }
            continue;
        }
        if dry_run {
            report.record(&name, Outcome::Downloaded, "")?;
            continue;
        }
        write_atomically(&target, &bytes)?;
        state.record(&name, etag, hash)?;
        report.record(&name, Outcome::Downloaded, "")?;
    }
    state.save()?;
    report.finish(
        &[Outcome::Downloaded, Outcome::Unchanged],
        interrupt.fired(),
    )
}

/// [`create_parents`], or on a dry run only its checks.
fn create_parents_unless(dry_run: bool, dir: &Path, file: &Path) -> Result<(), String> {
    if !dry_run {
        return create_parents(dir, file);
    }
    let mut at = file.to_path_buf();
    while let Some(parent) = at.parent() {
        if parent == dir {
            break;
        }
        if std::fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!("{} is a symbolic link", parent.display()));
        }
        at = parent.to_path_buf();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_could_leave_the_folder_is_refused() {
        let dir = Path::new("/tmp/sync");
        assert_eq!(
            local_path(dir, "notes/plan.md"),
            Some(dir.join("notes").join("plan.md"))
        );
        for bad in [
            "../x",
            "a/../../x",
            "a//b",
            "/etc/passwd",
            "a/./b",
            "",
            "a\\..\\b",
            "c:x",
            "a\0b",
        ] {
            assert_eq!(local_path(dir, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parents_never_pass_through_a_symbolic_link() {
        let dir = std::env::temp_dir().join(format!("wsp-sync-test-{}", std::process::id()));
        let outside = dir.with_extension("outside");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
            let err = create_parents(&dir, &dir.join("link").join("x.md")).unwrap_err();
            assert!(err.contains("symbolic link"), "{err}");
        }
        create_parents(&dir, &dir.join("a").join("b").join("x.md")).unwrap();
        assert!(dir.join("a").join("b").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn the_identity_names_the_host_and_the_key_never_its_secret() {
        let id = Identity::of(
            "https://me:pw@wsp.example/",
            Some("wsp_3f9a0c2b7d11_secretsecret"),
        );
        assert_eq!(id.host, "https://wsp.example");
        assert_eq!(id.key, "wsp_3f9a0c2b7d11");
        let other = Identity::of("http://127.0.0.1:8787", Some("a-password"));
        assert_eq!(other.key.len(), "sha256:".len() + 8);
        assert!(!other.key.contains("password"));
        assert_eq!(Identity::of("http://h", None).key, "none");
        assert_eq!(Identity::of("http://h", Some("")).key, "none");
    }
}
