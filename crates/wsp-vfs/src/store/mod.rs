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
pub enum EntryKind {
    /// A directory, emulated from `/` in names on virtual Mounts, or a mount point.
    Directory,
    /// A regular file.
    File,
    /// A symbolic link on a physical Mount (listed, never followed by a listing).
    Symlink,
}

/// One name in a directory, as a Store reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// `create_only` and the file exists.
    Exists,
    /// `if_match` does not match the current file.
    Stale,
    /// Content over `max` bytes.
    TooLarge {
        max: u64,
    },
    /// The Store's file-count limit.
    TooManyFiles {
        max: u64,
    },
    /// A name this Store cannot hold (the reason is for the model).
    BadName(&'static str),
    /// Anything else; details stay on the host.
    Unavailable,
}

/// The etag of content on a physical Mount: its SHA-256, so it changes exactly when the content
/// does.
pub(crate) fn content_etag(bytes: &[u8]) -> ETag {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    ETag::from_wire(format!("\"sha256-{hex}\""))
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
    pub async fn list(&self, rel: &[String]) -> Result<Listing, Fail> {
        match self {
            Self::Physical(p) => p.list(rel),
            Self::Virtual(v) => v.list(rel).await,
            Self::Overlay(o) => o.list(rel).await,
        }
    }

    pub async fn read(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        match self {
            Self::Physical(p) => p.read(rel, max_bytes),
            Self::Virtual(v) => v.read(rel, max_bytes).await,
            Self::Overlay(o) => o.read(rel, max_bytes).await,
        }
    }

    pub async fn write(
        &self,
        rel: &[String],
        content: String,
        cond: WriteCondition,
    ) -> Result<Written, Fail> {
        match self {
            Self::Physical(p) => p.write(rel, content.as_bytes(), &cond),
            Self::Virtual(v) => v.write(rel, content, &cond).await,
            Self::Overlay(o) => o.write(rel, content, &cond).await,
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
