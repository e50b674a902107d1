//! The Stores behind Mounts: physical (a host directory), virtual (a `WorkspaceStore` namespace)
//! and overlay (virtual over physical). Paths here are component lists relative to the Mount;
//! the router has already parsed the virtual path and checked the Access Scope.

pub(crate) mod overlay;
pub(crate) mod physical;
pub(crate) mod virtual_store;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wsp_types::ETag;

pub(crate) use overlay::OverlayStore;
pub(crate) use physical::PhysicalStore;
pub(crate) use virtual_store::VirtualStore;

/// What an entry of a listing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryKind {
    /// A directory, emulated from `/` in names on virtual Mounts, or a mount point.
    Directory,
    /// A regular file.
    File,
    /// A symbolic link on a physical Mount (listed, never followed by a listing).
    Symlink,
}

/// One name in a directory, as a Store reports it; ordered by name first (names in one
/// directory are unique, so by name alone there).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RawEntry {
    pub name: String,
    pub kind: EntryKind,
    pub size: Option<u64>,
}

/// What a path is, for a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    /// A directory and its entries, sorted by name.
    Directory(Vec<RawEntry>),
    /// A file: `ls` of a file shows the file.
    File(RawEntry),
}

/// A file's bytes and etag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileBytes {
    pub bytes: Vec<u8>,
    pub etag: ETag,
}

/// The condition a write puts on the current file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteCondition {
    None,
    IfMatch(ETag),
    CreateOnly,
}

impl WriteCondition {
    /// Checks the condition against the current file's etag (`None` when absent).
    pub fn check(&self, current: Option<&ETag>) -> Result<(), Fail> {
        match (self, current) {
            (Self::CreateOnly, Some(_)) => Err(Fail::Exists),
            (Self::IfMatch(want), Some(have)) if want != have => Err(Fail::Stale),
            (Self::IfMatch(_), None) => Err(Fail::Stale),
            _ => Ok(()),
        }
    }
}

/// The outcome of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub etag: ETag,
    pub created: bool,
}

/// One file found by a walk, relative to the Mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkedFile {
    pub rel: Vec<String>,
    /// Known without another call on virtual Mounts; physical walks do not `stat` each file.
    pub size: Option<u64>,
}

/// The files under a directory, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Walk {
    pub files: Vec<WalkedFile>,
    /// The walk stopped at its entry budget.
    pub truncated: bool,
}

/// Why a Store refused or failed, before the router words it for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fail {
    NotFound,
    IsDirectory,
    /// A component above the target is a file.
    ParentNotDirectory,
    /// A symbolic link where this Mount does not follow them.
    Symlink,
    /// A symbolic link whose target leaves the Mount.
    Escape,
    /// Too many levels of symbolic links.
    Loop,
    /// A regular file with more than one hard link.
    HardLink,
    /// A FIFO, socket or device.
    SpecialFile,
    /// The host refused access (file permissions).
    HostDenied,
    /// A write or delete of a path the Workspace's deny rules hide, as asked or as reached
    /// through a symbolic link (reads of such a path are [`Fail::NotFound`]).
    Hidden,
    /// `create_only` and the file exists.
    Exists,
    /// `if_match` does not match the current file.
    Stale,
    /// Content over `max` bytes.
    TooLarge {
        max: u64,
    },
    /// `if_match` names a file over `max` bytes, more than a write compares: no etag the agent
    /// holds can be of it (reads and writes never hand one out for such a file).
    TooLargeToCompare {
        max: u64,
    },
    /// The Store's file-count limit.
    TooManyFiles {
        max: u64,
    },
    /// A name this Store cannot hold (the reason is for the model); it depends on the name alone.
    BadName(&'static str),
    /// A name the host file system cannot hold or show (the reason is for the model); it may
    /// depend on what exists, e.g. a link whose target is not UTF-8.
    HostName(&'static str),
    /// Anything else; details stay on the host.
    Unavailable,
}

impl Fail {
    /// Whether the failure depends only on the call itself (the name as spelled, the content's
    /// size) or on the Store as a whole, never on what exists at or above the name. A
    /// write-only Workspace tells the agent these; every other refusal reads the same.
    pub fn independent_of_names(&self) -> bool {
        matches!(
            self,
            Self::TooLarge { .. }
                | Self::TooManyFiles { .. }
                | Self::BadName(_)
                | Self::Unavailable
        )
    }
}

/// The etag of content on a physical Mount: its SHA-256, so it changes exactly when the content
/// does.
pub(crate) fn content_etag(bytes: &[u8]) -> ETag {
    etag_of_digest(&Sha256::digest(bytes))
}

fn etag_of_digest(digest: &[u8]) -> ETag {
    let hex = wsp_types::hex(&digest[..digest.len().min(12)]);
    ETag::from_wire(format!("\"sha256-{hex}\""))
}

/// Bytes hashed per read by [`stream_etag`].
const HASH_CHUNK: usize = 64 * 1024;

/// [`content_etag`] of what `reader` yields, read in fixed-size chunks (memory stays at one
/// chunk whatever the size); more than `max` bytes is [`Fail::TooLargeToCompare`], found without
/// reading past `max + 1`.
pub(crate) fn stream_etag(reader: impl std::io::Read, max: u64) -> Result<ETag, Fail> {
    use std::io::Read;
    let mut hasher = Sha256::new();
    let mut reader = reader.take(max.saturating_add(1));
    let mut chunk = vec![0u8; HASH_CHUNK];
    let mut total: u64 = 0;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Fail::Unavailable),
        };
        total += n as u64;
        if total > max {
            return Err(Fail::TooLargeToCompare { max });
        }
        hasher.update(&chunk[..n]);
    }
    Ok(etag_of_digest(&hasher.finalize()))
}

/// The media type recorded for a virtual write, from the name's extension.
pub(crate) fn content_type_for(name: &str) -> &'static str {
    match name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
    {
        Some(ext) if ext == "md" || ext == "markdown" => "text/markdown",
        Some(ext) if ext == "json" => "application/json",
        Some(ext) if ext == "html" || ext == "htm" => "text/html",
        Some(ext) if ext == "csv" => "text/csv",
        _ => "text/plain",
    }
}

/// Whether `name`, read from a Store, can be named by an agent as a path component.
pub(crate) fn addressable(name: &str) -> bool {
    crate::path::is_component(name) && !name.starts_with(physical::TEMP_PREFIX)
}

/// The Store of one Mount.
#[derive(Debug)]
pub(crate) enum Store {
    Physical(PhysicalStore),
    Virtual(VirtualStore),
    Overlay(OverlayStore),
}

impl Store {
    /// What `rel` is: a file, or a directory with its entries. A host directory yields only
    /// the `keep` entries first by name (however many it holds, memory stays at `keep`), so a
    /// caller that shows `n` entries asks for `n + 1` to learn that there are more; a virtual
    /// directory is bounded by its store's file limit.
    pub async fn list(&self, rel: &[String], keep: usize) -> Result<Listing, Fail> {
        match self {
            Self::Physical(p) => p.list(rel, keep),
            Self::Virtual(v) => v.list(rel).await,
            Self::Overlay(o) => o.list(rel, keep).await,
        }
    }

    pub async fn read(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        match self {
            Self::Physical(p) => p.read(rel, max_bytes),
            Self::Virtual(v) => v.read(rel, max_bytes).await,
            Self::Overlay(o) => o.read(rel, max_bytes).await,
        }
    }

    /// [`Self::read`] of a file about to be changed: on a physical Mount, a symbolic link to a
    /// path the deny rules hide is [`Fail::Hidden`] (refused like a write to it) rather than
    /// missing. An overlay never writes its lower layer, so such a link is simply absent there.
    pub async fn read_to_change(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        match self {
            Self::Physical(p) => p.read_to_change(rel, max_bytes),
            _ => self.read(rel, max_bytes).await,
        }
    }

    /// Writes `content` at `rel` if `cond` holds. An `if_match` against a host file over
    /// `max_compare` bytes is [`Fail::TooLargeToCompare`], found without reading the file.
    pub async fn write(
        &self,
        rel: &[String],
        content: String,
        cond: WriteCondition,
        max_compare: u64,
    ) -> Result<Written, Fail> {
        match self {
            Self::Physical(p) => p.write(rel, content.as_bytes(), &cond, max_compare),
            Self::Virtual(v) => v.write(rel, content, &cond).await,
            Self::Overlay(o) => o.write(rel, content, &cond, max_compare).await,
        }
    }

    pub async fn delete(&self, rel: &[String]) -> Result<(), Fail> {
        match self {
            Self::Physical(p) => p.delete(rel),
            Self::Virtual(v) => v.delete(rel).await,
            Self::Overlay(o) => o.delete(rel).await,
        }
    }

    /// Files under `rel` (or `rel` itself when it is a file), skipping the subtrees in `exclude`
    /// (mount points of longer prefixes), at most `budget` entries visited.
    pub async fn walk(
        &self,
        rel: &[String],
        exclude: &[Vec<String>],
        budget: usize,
    ) -> Result<Walk, Fail> {
        match self {
            Self::Physical(p) => blocking(|| p.walk(rel, exclude, budget)),
            Self::Virtual(v) => v.walk(rel, exclude, budget).await,
            Self::Overlay(o) => o.walk(rel, exclude, budget).await,
        }
    }
}

/// Runs a long piece of blocking file-system work (a directory walk) without stalling other
/// tasks of a multi-threaded tokio runtime; elsewhere it simply runs.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Whether `rel` lies in one of the `exclude` subtrees.
pub(crate) fn excluded(rel: &[String], exclude: &[Vec<String>]) -> bool {
    exclude
        .iter()
        .any(|x| rel.len() >= x.len() && rel[..x.len()] == x[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions() {
        let a = ETag::from_wire("\"a\"");
        let b = ETag::from_wire("\"b\"");
        let cases = [
            (WriteCondition::None, None, Ok(())),
            (WriteCondition::None, Some(&a), Ok(())),
            (WriteCondition::CreateOnly, None, Ok(())),
            (WriteCondition::CreateOnly, Some(&a), Err(Fail::Exists)),
            (WriteCondition::IfMatch(a.clone()), Some(&a), Ok(())),
            (
                WriteCondition::IfMatch(a.clone()),
                Some(&b),
                Err(Fail::Stale),
            ),
            (WriteCondition::IfMatch(a.clone()), None, Err(Fail::Stale)),
        ];
        for (cond, current, expect) in cases {
            assert_eq!(cond.check(current), expect, "{cond:?} {current:?}");
        }
    }

    #[test]
    fn etags_follow_content() {
        assert_eq!(content_etag(b"x"), content_etag(b"x"));
        assert_ne!(content_etag(b"x"), content_etag(b"y"));
        assert!(content_etag(b"").as_str().starts_with("\"sha256-"));
    }

    #[test]
    fn streamed_etags_equal_whole_ones_and_stop_past_the_limit() {
        let big: Vec<u8> = (0..3 * HASH_CHUNK + 17).map(|i| (i % 251) as u8).collect();
        for bytes in [&b""[..], b"x", &big[..HASH_CHUNK], &big] {
            assert_eq!(
                stream_etag(bytes, bytes.len() as u64),
                Ok(content_etag(bytes)),
                "{} bytes",
                bytes.len()
            );
        }
        let max = big.len() as u64 - 1;
        assert_eq!(
            stream_etag(&big[..], max),
            Err(Fail::TooLargeToCompare { max })
        );
        // An endless reader is refused after max + 1 bytes.
        assert_eq!(
            stream_etag(std::io::repeat(0), 1000),
            Err(Fail::TooLargeToCompare { max: 1000 })
        );
    }

    #[test]
    fn addressable_names() {
        for ok in ["a", ".env", "report..final.md", "a b", "~x"] {
            assert!(addressable(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a\\b",
            "a/b",
            "a\nb",
            "a\u{7f}b",
            "a\u{85}b",
            "é\tb",
            ".wsp-tmp-1234",
            "a\u{202e}b",
            "a\u{2066}b",
        ] {
            assert!(!addressable(bad), "{bad:?}");
        }
        assert!(addressable(&"x".repeat(255)) && !addressable(&"x".repeat(256)));
        assert!(addressable("é") && addressable("日本語.md"));
    }
}
