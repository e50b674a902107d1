//! Where the assembler reads workspace files from: the [`ContextSource`] trait.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use wsp_types::{WorkspacePath, WorkspacePrefix};

/// The future returned by every [`ContextSource`] method.
///
/// Boxed so that the trait stays object safe, like `wsp_store::WorkspaceStore`: a caller picks a
/// source at run time and hands the assembler a `&dyn ContextSource`.
pub type SourceFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SourceError>> + Send + 'a>>;

/// A read-only view of one workspace, as the assembler needs it.
///
/// Implementations: [`StoreSource`](crate::StoreSource) (a `WorkspaceStore` owner, live or
/// through a snapshot), [`DirectorySource`](crate::DirectorySource) (a directory on disk that
/// cannot be left), and the HTTP source of the `wsp` command line.
pub trait ContextSource: Send + Sync {
    /// What this source reads, for the report (`snapshot 3f2a... of t/w`, `directory`, ...).
    fn describe(&self) -> String;

    /// The files whose path starts with `prefix`, sorted by path (byte order), without content.
    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>>;

    /// One file's content, or why it is absent or not served.
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome>;
}

/// A file a source lists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Its workspace path.
    pub path: WorkspacePath,
}

/// The answer to [`ContextSource::read`] for a path the source could look at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadOutcome {
    /// The file's UTF-8 content.
    Found(String),
    /// No such file.
    Missing,
    /// Something is there, but the source will not serve it as context.
    Refused(Refusal),
}

/// Why a source refused to serve a file. The assembler shows it inline and in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A symbolic link whose target lies outside the workspace directory.
    SymlinkOutside,
    /// A symbolic link inside the workspace, and the source does not follow links.
    SymlinkNotFollowed,
    /// A symbolic link whose target does not exist.
    SymlinkBroken,
    /// A directory, FIFO, socket or device where a file was expected.
    NotRegularFile,
    /// A file with more than one hard link, which may be the same file as one outside.
    HardLinked,
    /// The content is not UTF-8 text.
    NotUtf8,
    /// A file written as bytes (`contentEncoding: base64`), such as an image or a PDF.
    Binary {
        /// Its media type, as written.
        content_type: String,
    },
    /// Larger than the source reads.
    TooLarge {
        /// The source's ceiling, in bytes.
        max_bytes: u64,
    },
    /// The source's own rules refuse the file (an agent filesystem's scope or path rules).
    Denied {
        /// What the source said.
        reason: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SymlinkOutside => f.write_str("a symbolic link leading outside the workspace"),
            Self::SymlinkNotFollowed => {
                f.write_str("a symbolic link, and this workspace does not follow links")
            }
            Self::SymlinkBroken => f.write_str("a symbolic link whose target does not exist"),
            Self::NotRegularFile => f.write_str("not a regular file"),
            Self::HardLinked => f.write_str("a file with several hard links"),
            Self::NotUtf8 => f.write_str("not UTF-8 text"),
            Self::Binary { content_type } => write!(f, "a binary file ({content_type}), not text"),
            Self::TooLarge { max_bytes } => write!(f, "larger than {max_bytes} bytes"),
            Self::Denied { reason } => write!(f, "refused: {reason}"),
        }
    }
}

/// A source could not answer at all; the assembler stops rather than render a partial context
/// that looks complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The snapshot is unknown to the store or was released.
    #[error("snapshot {0} is unknown or released")]
    SnapshotGone(String),
    /// The backend, the disk or the host failed; the caller may retry.
    #[error("workspace unavailable: {0}")]
    Unavailable(String),
}
