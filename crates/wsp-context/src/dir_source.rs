//! [`DirectorySource`]: a workspace directory on disk, reached only through a directory handle.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use wsp_types::{WorkspacePath, WorkspacePrefix};

use crate::source::{ContextSource, Entry, ReadOutcome, Refusal, SourceError, SourceFuture};

/// Files read by default at most (16 MiB): context files are text meant for a prompt.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Deepest directory nesting a listing descends into.
const MAX_LIST_DEPTH: usize = 32;

/// Most entries one listing returns; the rest of a huge tree is not walked.
const MAX_LIST_ENTRIES: usize = 10_000;

/// A workspace directory on disk (a physical mount), for agents whose workspace is a checkout.
///
/// Every open is relative to the directory handle taken by [`DirectorySource::open`] and walks
/// one component at a time without following symbolic links (`cap-std`), so neither `..` nor a
/// link nor a symlinked parent directory can lead outside it. A context file that is a symbolic
/// link is not read: the answer is [`ReadOutcome::Refused`] with [`Refusal::SymlinkOutside`]
/// when the link leaves the directory, which the assembler shows inline and in its report. With
/// [`follow_links_inside`](Self::follow_links_inside), links whose target stays inside are
/// followed. Files with several hard links (possibly the same file as one outside), special files,
/// non-UTF-8 content and files over [`DEFAULT_MAX_FILE_BYTES`] are refused too.
///
/// Listings include regular files and symbolic links (never followed nor descended into), so a
/// refused file still shows up, and skip names a [`WorkspacePath`] cannot spell.
///
/// Disk reads run on Tokio's blocking pool, so calls need a Tokio runtime.
#[derive(Debug, Clone)]
pub struct DirectorySource {
    root: Arc<Dir>,
    follow_links_inside: bool,
    allow_hard_links: bool,
    max_file_bytes: u64,
}

impl DirectorySource {
    /// Opens the directory `dir` (taken once: later renames of the path do not matter).
    pub fn open(dir: &Path) -> io::Result<Self> {
        let root = Dir::open_ambient_dir(dir, ambient_authority())?;
        Ok(Self {
            root: Arc::new(root),
            follow_links_inside: false,
            allow_hard_links: false,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        })
    }

    /// Follow symbolic links whose target stays inside the directory (default: refuse all).
    pub fn follow_links_inside(mut self, follow: bool) -> Self {
        self.follow_links_inside = follow;
        self
    }

    /// Read files with more than one hard link (default: refuse them).
    pub fn allow_hard_links(mut self, allow: bool) -> Self {
        self.allow_hard_links = allow;
        self
    }

    /// The largest file read, in bytes.
    pub fn max_file_bytes(mut self, max: u64) -> Self {
        self.max_file_bytes = max;
        self
    }

    async fn blocking<T, F>(&self, work: F) -> Result<T, SourceError>
    where
        T: Send + 'static,
        F: FnOnce(&Self) -> Result<T, SourceError> + Send + 'static,
    {
        let this = self.clone();
        tokio::task::spawn_blocking(move || work(&this))
            .await
            .map_err(|e| SourceError::Unavailable(format!("directory read did not finish: {e}")))?
    }

    /// Why the link at `rel` is refused: where it leads, as far as the sandbox can tell.
    fn classify_link(&self, rel: &[&str]) -> Refusal {
        match self.root.canonicalize(rel.iter().collect::<PathBuf>()) {
            Ok(_) => Refusal::SymlinkNotFollowed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Refusal::SymlinkBroken,
            // cap-std refuses to resolve a link that leaves the directory.
            Err(_) => Refusal::SymlinkOutside,
        }
    }

    fn read_sync(&self, path: &WorkspacePath) -> Result<ReadOutcome, SourceError> {
        let rel: Vec<&str> = path.as_str().split('/').collect();
        match self.read_components(&rel)? {
            Walked::Outcome(outcome) => Ok(outcome),
            Walked::Link(at) => {
                let link = &rel[..at];
                if !self.follow_links_inside {
                    return Ok(ReadOutcome::Refused(self.classify_link(link)));
                }
                let resolved = match self.root.canonicalize(rel.iter().collect::<PathBuf>()) {
                    Ok(resolved) => resolved,
                    Err(_) => return Ok(ReadOutcome::Refused(self.classify_link(link))),
                };
                let names: Option<Vec<&str>> = resolved
                    .components()
                    .map(|c| match c {
                        std::path::Component::Normal(n) => n.to_str(),
                        _ => None,
                    })
                    .collect();
                match names {
                    // The resolved path is walked without following links again, so a link
                    // swapped in after resolution fails closed.
                    Some(names) if !names.is_empty() => match self.read_components(&names)? {
                        Walked::Outcome(outcome) => Ok(outcome),
                        Walked::Link(_) => Ok(ReadOutcome::Refused(Refusal::SymlinkNotFollowed)),
                    },
                    _ => Ok(ReadOutcome::Refused(Refusal::NotRegularFile)),
                }
            }
        }
    }

    /// Walks `rel` without following links; stops at the first link (its component count).
    fn read_components(&self, rel: &[&str]) -> Result<Walked, SourceError> {
        let Some((name, parents)) = rel.split_last() else {
            return Ok(Walked::Outcome(ReadOutcome::Refused(
                Refusal::NotRegularFile,
            )));
        };
        let mut dir = self.root.try_clone().map_err(io_unavailable)?;
        for (i, part) in parents.iter().enumerate() {
            match dir.symlink_metadata(part) {
                Ok(meta) if meta.file_type().is_symlink() => return Ok(Walked::Link(i + 1)),
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Ok(Walked::Outcome(ReadOutcome::Missing)),
                Err(e) if missing(&e) => return Ok(Walked::Outcome(ReadOutcome::Missing)),
                Err(e) => return Err(io_unavailable(e)),
            }
            dir = match dir.open_dir_nofollow(part) {
                Ok(next) => next,
                Err(e) if missing(&e) => return Ok(Walked::Outcome(ReadOutcome::Missing)),
                // Swapped for a link between the check and the open.
                Err(_) => return Ok(Walked::Link(i + 1)),
            };
        }
        match dir.symlink_metadata(name) {
            Ok(meta) if meta.file_type().is_symlink() => return Ok(Walked::Link(rel.len())),
            Ok(meta) if !meta.is_file() => {
                return Ok(Walked::Outcome(ReadOutcome::Refused(
                    Refusal::NotRegularFile,
                )));
            }
            Ok(_) => {}
            Err(e) if missing(&e) => return Ok(Walked::Outcome(ReadOutcome::Missing)),
            Err(e) => return Err(io_unavailable(e)),
        }
        let mut opts = OpenOptions::new();
        // O_NONBLOCK: a FIFO swapped in after the check must not hang the read.
        opts.read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        let file = match dir.open_with(name, &opts) {
            Ok(file) => file,
            Err(e) if missing(&e) => return Ok(Walked::Outcome(ReadOutcome::Missing)),
            Err(_) if is_link(&dir, name) => return Ok(Walked::Link(rel.len())),
            Err(e) => return Err(io_unavailable(e)),
        };
        let meta = file.metadata().map_err(io_unavailable)?;
        if !meta.is_file() {
            return Ok(Walked::Outcome(ReadOutcome::Refused(
                Refusal::NotRegularFile,
            )));
        }
        if meta.nlink() > 1 && !self.allow_hard_links {
            return Ok(Walked::Outcome(ReadOutcome::Refused(Refusal::HardLinked)));
        }
        let too_large = Refusal::TooLarge {
            max_bytes: self.max_file_bytes,
        };
        if meta.len() > self.max_file_bytes {
            return Ok(Walked::Outcome(ReadOutcome::Refused(too_large)));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_unavailable)?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Ok(Walked::Outcome(ReadOutcome::Refused(too_large)));
        }
        Ok(Walked::Outcome(match String::from_utf8(bytes) {
            Ok(text) => ReadOutcome::Found(text),
            Err(_) => ReadOutcome::Refused(Refusal::NotUtf8),
        }))
    }

    fn list_sync(&self, prefix: &WorkspacePrefix) -> Result<Vec<Entry>, SourceError> {
        let raw = prefix.as_str();
        // Only the complete components before the last '/' name a directory to start from.
        let start: Vec<&str> = match raw.rfind('/') {
            Some(i) => raw[..i].split('/').collect(),
            None => Vec::new(),
        };
        let mut dir = self.root.try_clone().map_err(io_unavailable)?;
        for part in &start {
            match dir.symlink_metadata(part) {
                Ok(meta) if meta.is_dir() && !meta.file_type().is_symlink() => {}
                Ok(_) => return Ok(Vec::new()),
                Err(e) if missing(&e) => return Ok(Vec::new()),
                Err(e) => return Err(io_unavailable(e)),
            }
            dir = match dir.open_dir_nofollow(part) {
                Ok(next) => next,
                Err(_) => return Ok(Vec::new()),
            };
        }
        let mut base = start.join("/");
        if !base.is_empty() {
            base.push('/');
        }
        let mut out = Vec::new();
        walk(&dir, &base, prefix, 0, &mut out)?;
        out.sort();
        Ok(out)
    }
}

enum Walked {
    Outcome(ReadOutcome),
    /// The first `n` components end in a symbolic link.
    Link(usize),
}

fn walk(
    dir: &Dir,
    base: &str,
    prefix: &WorkspacePrefix,
    depth: usize,
    out: &mut Vec<Entry>,
) -> Result<(), SourceError> {
    let mut names = Vec::new();
    for entry in dir.entries().map_err(io_unavailable)? {
        let entry = entry.map_err(io_unavailable)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let kind = entry.file_type().map_err(io_unavailable)?;
        names.push((name, kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in names {
        if out.len() >= MAX_LIST_ENTRIES {
            return Ok(());
        }
        let full = format!("{base}{name}");
        if kind.is_dir() {
            let below = format!("{full}/");
            let relevant =
                below.starts_with(prefix.as_str()) || prefix.as_str().starts_with(&below);
            if relevant
                && depth < MAX_LIST_DEPTH
                && let Ok(sub) = dir.open_dir_nofollow(&name)
            {
                walk(&sub, &below, prefix, depth + 1, out)?;
            }
        } else if (kind.is_file() || kind.is_symlink())
            && prefix.matches(&full)
            && let Ok(path) = WorkspacePath::parse(&full)
        {
            out.push(Entry { path });
        }
    }
    Ok(())
}

fn missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn is_link(dir: &Dir, name: &str) -> bool {
    dir.symlink_metadata(name)
        .is_ok_and(|m| m.file_type().is_symlink())
}

fn io_unavailable(e: io::Error) -> SourceError {
    SourceError::Unavailable(format!("directory: {}", e.kind()))
}

impl ContextSource for DirectorySource {
    fn describe(&self) -> String {
        "workspace directory".to_owned()
    }

    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>> {
        let prefix = prefix.clone();
        Box::pin(async move { self.blocking(move |s| s.list_sync(&prefix)).await })
    }

    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome> {
        let path = path.clone();
        Box::pin(async move { self.blocking(move |s| s.read_sync(&path)).await })
    }
}
