//! `wsp files push` and `wsp files pull`: a local folder and a workspace (or a prefix of it)
//! kept in step without ever overwriting a change the other side made.
//!
//! The folder keeps a manifest, `.wsp-sync.json` (never pushed or pulled), with, per workspace
//! path, the etag of the version last uploaded or downloaded and the SHA-256 of its content. An
//! etag names one version of one life of a path, so when the host still lists that etag the
//! remote content is the one the manifest hashed: a file whose local hash and remote etag both
//! match the manifest is unchanged without downloading it. A changed file is uploaded with
//! `If-Match` and the etag last seen (a new one with `If-None-Match: *`), so a remote change made
//! since is reported as a conflict and never overwritten. A path the folder never synced that
//! exists remotely is compared by content: equal is recorded as unchanged, different is a
//! conflict. Pull is the mirror image: a local file changed since the last sync is a conflict and
//! stays as it is.
//!
//! Files are bytes on both sides: a local file that is not UTF-8 text is uploaded with
//! `contentEncoding: base64`, and a binary remote file is written back as the bytes it holds.
//!
//! Each file that moves gets a line on standard output, then a summary; on a terminal, a
//! progress bar on standard error counts the files done.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use wsp_client::{Client, Error, PutOptions};
use wsp_types::{ETag, WorkspacePath};

use crate::CliError;
use crate::failure::Failure;

/// The manifest's file name in the synced folder.
pub const MANIFEST: &str = ".wsp-sync.json";

/// What the folder last synced, per workspace path.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    /// The host it was synced with; a manifest of another host is ignored.
    url: String,
    files: BTreeMap<String, Seen>,
}

/// One path's last synced version.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Seen {
    etag: String,
    sha256: String,
}

impl Manifest {
    fn load(dir: &Path, url: &str) -> Result<Self, CliError> {
        let file = dir.join(MANIFEST);
        let manifest = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice::<Manifest>(&bytes)
                .map_err(|e| CliError(format!("{} is damaged: {e}", file.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
            Err(e) => return Err(CliError(format!("cannot read {}: {e}", file.display()))),
        };
        if manifest.url == url {
            Ok(manifest)
        } else {
            Ok(Manifest {
                url: url.to_owned(),
                files: BTreeMap::new(),
            })
        }
    }

    fn save(&self, dir: &Path) -> Result<(), CliError> {
        write_atomically(&dir.join(MANIFEST), &serde_json::to_vec_pretty(self)?)
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
    Failed,
}

impl Outcome {
    fn word(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Self::Uploaded, false) => "uploaded",
            (Self::Uploaded, true) => "would upload",
            (Self::Downloaded, _) => "downloaded",
            (Self::Deleted, false) => "deleted",
            (Self::Deleted, true) => "would delete",
            (Self::Unchanged, _) => "unchanged",
            (Self::Conflict, false) => "conflict",
            (Self::Conflict, true) => "would conflict",
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
    problems: usize,
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
            problems: 0,
            bar,
        }
    }

    /// `n` more files to go through.
    fn more(&self, n: usize) {
        self.bar.inc_length(n as u64);
    }

    fn record(&mut self, path: &str, outcome: Outcome, note: &str) {
        self.bar.inc(1);
        self.bar.set_message(path.to_owned());
        let word = outcome.word(self.dry_run);
        *self.counts.entry(word).or_default() += 1;
        if matches!(outcome, Outcome::Conflict | Outcome::Failed) {
            self.problems += 1;
        }
        if self.json {
            self.files.push(serde_json::json!({
                "path": path, "outcome": outcome, "dryRun": self.dry_run, "note": note,
            }));
        } else if outcome != Outcome::Unchanged || !note.is_empty() {
            // Printed above the bar, which is drawn again below the line.
            self.bar.suspend(|| {
                if note.is_empty() {
                    println!("{path}\t{word}");
                } else {
                    println!("{path}\t{word}\t{note}");
                }
            });
        }
    }

    /// Prints the summary (the counts of `order`, then conflicts, then failures if any); an
    /// error when any file conflicted or failed.
    fn finish(self, order: &[Outcome]) -> Result<(), CliError> {
        // The bar stays, full, above the summary.
        self.bar.finish_with_message("done");
        let count = |w: &str| self.counts.get(w).copied().unwrap_or(0);
        let failed = Outcome::Failed.word(self.dry_run);
        let mut outcomes = order.to_vec();
        outcomes.push(Outcome::Conflict);
        if count(failed) > 0 {
            outcomes.push(Outcome::Failed);
        }
        let summary = outcomes
            .iter()
            .map(|o| {
                let w = o.word(self.dry_run);
                format!("{} {w}", count(w))
            })
            .collect::<Vec<_>>()
            .join(", ");
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "files": self.files, "summary": summary, "dryRun": self.dry_run,
                }))?
            );
        } else {
            println!("{summary}");
        }
        if self.problems > 0 {
            return Err(CliError(format!(
                "{} file(s) not synced (conflict or failure); nothing was overwritten",
                self.problems
            )));
        }
        Ok(())
    }
}

fn sha256(bytes: &[u8]) -> String {
    wsp_types::hex(&Sha256::digest(bytes))
}

/// Whether the host refused a conditional request because the file moved on (or is gone).
fn is_conflict(e: &Error) -> bool {
    e.api().is_some_and(|a| matches!(a.status, 404 | 409 | 412))
}

/// The folder's files, as `/`-separated paths relative to `dir` (the manifest, symbolic links
/// and other non-regular files left out).
fn local_files(dir: &Path) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let here = dir.join(&rel);
        let entries = std::fs::read_dir(&here)
            .map_err(|e| CliError(format!("cannot read {}: {e}", here.display())))?;
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                eprintln!(
                    "skipping {}: the name is not UTF-8",
                    here.join(&name).display()
                );
                continue;
            };
            let child = rel.join(name);
            if kind.is_dir() {
                pending.push(child);
            } else if kind.is_file() && !(rel.as_os_str().is_empty() && name == MANIFEST) {
                let parts: Vec<&str> = child.iter().filter_map(|c| c.to_str()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    out.sort();
    Ok(out)
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
    temp.push(format!(".wsp-tmp-{}", std::process::id()));
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

/// Options of `wsp files push`.
#[derive(Debug)]
pub struct PushOptions {
    /// The folder to upload.
    pub dir: PathBuf,
    /// Prepended to each relative path to make the workspace path.
    pub prefix: String,
    /// Remove remote files under the prefix that the folder lacks.
    pub delete: bool,
    /// Print what would happen; change nothing.
    pub dry_run: bool,
}

/// Runs `wsp files push`.
pub async fn push(
    client: &Client,
    url: &str,
    options: PushOptions,
    json: bool,
) -> Result<(), Failure> {
    let dir = &options.dir;
    if !dir.is_dir() {
        return Err(CliError(format!("{} is not a directory", dir.display())).into());
    }
    let mut manifest = Manifest::load(dir, url)?;
    let remote: BTreeMap<String, String> = client
        .list(
            Some(&options.prefix)
                .filter(|p| !p.is_empty())
                .map(String::as_str),
        )
        .await
        .map_err(Failure::remote)?
        .files
        .into_iter()
        .map(|f| (f.path.as_str().to_owned(), f.etag.unwrap_or_default()))
        .collect();
    let locals = local_files(dir)?;
    let mut report = Report::new(locals.len(), options.dry_run, json);
    for rel in &locals {
        let name = format!("{}{rel}", options.prefix);
        let Ok(path) = WorkspacePath::parse(&name) else {
            report.record(&name, Outcome::Failed, "not a valid workspace path");
            continue;
        };
        let content = match std::fs::read(dir.join(rel)) {
            Ok(bytes) => bytes,
            Err(e) => {
                report.record(&name, Outcome::Failed, &format!("unreadable: {e}"));
                continue;
            }
        };
        let hash = sha256(&content);
        let seen = manifest.files.get(&name);
        let current = remote.get(&name);
        // Decide: the etag to send (None: create only), or an outcome without a request.
        let if_match = match (&seen, current) {
            (Some(seen), Some(etag)) if seen.sha256 == hash => {
                let note = if *etag == seen.etag {
                    ""
                } else {
                    "changed remotely; pull to update"
                };
                report.record(&name, Outcome::Unchanged, note);
                continue;
            }
            (Some(seen), None) if seen.sha256 == hash => {
                report.record(&name, Outcome::Unchanged, "deleted remotely");
                continue;
            }
            (Some(seen), Some(etag)) if *etag != seen.etag => {
                report.record(
                    &name,
                    Outcome::Conflict,
                    "changed remotely since the last sync",
                );
                continue;
            }
            (Some(_), None) => {
                report.record(
                    &name,
                    Outcome::Conflict,
                    "deleted remotely since the last sync",
                );
                continue;
            }
            (Some(seen), Some(_)) => Some(seen.etag.clone()),
            (None, None) => None,
            (None, Some(_)) => {
                // Never synced: equal content is adopted, different content is not ours.
                let got = client.get(&path, None).await.map_err(Failure::remote)?;
                let etag = got.etag.clone().unwrap_or_default();
                if got.bytes().is_ok_and(|remote| *remote == *content) {
                    if !options.dry_run {
                        manifest
                            .files
                            .insert(name.clone(), Seen { etag, sha256: hash });
                    }
                    report.record(&name, Outcome::Unchanged, "");
                } else {
                    report.record(
                        &name,
                        Outcome::Conflict,
                        "exists remotely with other content",
                    );
                }
                continue;
            }
        };
        if options.dry_run {
            report.record(&name, Outcome::Uploaded, "");
            continue;
        }
        let put = PutOptions {
            content_type: None,
            create_only: if_match.is_none(),
            if_match: if_match.map(ETag::from_wire),
            idempotency_key: None,
        };
        // Text goes as text; bytes that are not UTF-8 go as base64.
        let sent = match String::from_utf8(content) {
            Ok(text) => client.put(&path, text, put).await,
            Err(e) => client.put_bytes(&path, e.as_bytes(), put).await,
        };
        match sent {
            Ok(stored) => {
                let etag = stored.etag.unwrap_or_default();
                manifest
                    .files
                    .insert(name.clone(), Seen { etag, sha256: hash });
                report.record(&name, Outcome::Uploaded, "");
            }
            Err(e) if is_conflict(&e) => {
                report.record(&name, Outcome::Conflict, "changed remotely meanwhile");
            }
            Err(e) => {
                report.record(&name, Outcome::Failed, Failure::remote(e).message());
            }
        }
    }
    if options.delete {
        let local: std::collections::BTreeSet<String> = locals
            .iter()
            .map(|rel| format!("{}{rel}", options.prefix))
            .collect();
        report.more(remote.keys().filter(|name| !local.contains(*name)).count());
        for (name, etag) in &remote {
            if local.contains(name) {
                continue;
            }
            let expected = manifest
                .files
                .get(name)
                .map_or(etag.clone(), |s| s.etag.clone());
            if expected != *etag {
                report.record(
                    name,
                    Outcome::Conflict,
                    "changed remotely since the last sync",
                );
                continue;
            }
            if options.dry_run {
                report.record(name, Outcome::Deleted, "");
                continue;
            }
            let path = WorkspacePath::parse(name).map_err(|e| CliError(e.to_string()))?;
            match client.delete(&path, Some(&ETag::from_wire(expected))).await {
                Ok(()) => {
                    manifest.files.remove(name);
                    report.record(name, Outcome::Deleted, "");
                }
                Err(e) if is_conflict(&e) => {
                    report.record(name, Outcome::Conflict, "changed remotely meanwhile");
                }
                Err(e) => report.record(name, Outcome::Failed, Failure::remote(e).message()),
            }
        }
    }
    if !options.dry_run {
        manifest.save(dir)?;
    }
    let mut order = vec![Outcome::Uploaded, Outcome::Unchanged];
    if options.delete {
        order.insert(1, Outcome::Deleted);
    }
    Ok(report.finish(&order)?)
}

/// Runs `wsp files pull`: the workspace's files under `prefix` into `dir` (created if missing),
/// each written atomically.
pub async fn pull(
    client: &Client,
    url: &str,
    dir: &Path,
    prefix: &str,
    json: bool,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError(format!("cannot create {}: {e}", dir.display())))?;
    let mut manifest = Manifest::load(dir, url)?;
    let listed = client
        .list(Some(prefix).filter(|p| !p.is_empty()))
        .await
        .map_err(Failure::remote)?;
    let mut report = Report::new(listed.files.len(), false, json);
    for meta in listed.files {
        let name = meta.path.as_str().to_owned();
        let rel = name.strip_prefix(prefix).unwrap_or_default();
        if rel == MANIFEST {
            report.record(&name, Outcome::Failed, "the name of the sync manifest");
            continue;
        }
        let Some(target) = local_path(dir, rel) else {
            report.record(&name, Outcome::Failed, "would land outside the folder");
            continue;
        };
        if let Err(why) = create_parents(dir, &target) {
            report.record(&name, Outcome::Failed, &why);
            continue;
        }
        let etag = meta.etag.unwrap_or_default();
        let seen = manifest.files.get(&name);
        let local = match std::fs::read(&target) {
            Ok(bytes) => Some(sha256(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                report.record(&name, Outcome::Failed, &e.to_string());
                continue;
            }
        };
        if let (Some(seen), Some(local)) = (&seen, &local) {
            if seen.etag == etag && seen.sha256 == *local {
                report.record(&name, Outcome::Unchanged, "");
                continue;
            }
            if seen.sha256 != *local {
                report.record(
                    &name,
                    Outcome::Conflict,
                    "changed locally since the last sync",
                );
                continue;
            }
        }
        let file = match client.get(&meta.path, None).await {
            Ok(file) => file,
            Err(e) => {
                report.record(&name, Outcome::Failed, Failure::remote(e).message());
                continue;
            }
        };
        let bytes = match file.bytes() {
            Ok(bytes) => bytes.into_owned(),
            Err(e) => {
                report.record(&name, Outcome::Failed, &format!("the host sent {e}"));
                continue;
            }
        };
        let hash = sha256(&bytes);
        let etag = file.etag.unwrap_or(etag);
        match (&seen, &local) {
            (None, Some(local)) if *local == hash => {
                manifest
                    .files
                    .insert(name.clone(), Seen { etag, sha256: hash });
                report.record(&name, Outcome::Unchanged, "");
                continue;
            }
            (None, Some(_)) => {
                report.record(&name, Outcome::Conflict, "a local file with other content");
                continue;
            }
            _ => {}
        }
        write_atomically(&target, &bytes)?;
        manifest
            .files
            .insert(name.clone(), Seen { etag, sha256: hash });
        report.record(&name, Outcome::Downloaded, "");
    }
    manifest.save(dir)?;
    Ok(report.finish(&[Outcome::Downloaded, Outcome::Unchanged])?)
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
}
