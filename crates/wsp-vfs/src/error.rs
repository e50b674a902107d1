//! The errors a tool call can end in: a fixed, model-readable set that never shows a host path.

use std::fmt;

use serde::Serialize;
use wsp_store::StoreError;
use wsp_types::LimitKind;

/// The error codes of the VFS tools.
///
/// The six of `VFS.md` (`invalid_path`, `permission_denied`, `not_found`, `is_directory`,
/// `conflict`, `too_large`) plus `invalid_argument` for arguments other than paths (a bad glob or
/// regex, an `edit_file` whose `old_string` matches zero or several times) and `unavailable` for a
/// host-side failure the model can do nothing about but retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum VfsErrorCode {
    /// The path is not a valid virtual path, or names something this workspace cannot hold.
    InvalidPath,
    /// Outside every workspace, refused by the Access Scope, or refused by the physical jail
    /// (symbolic links, hard links, special files).
    PermissionDenied,
    /// Nothing at this path.
    NotFound,
    /// The path is a directory (or a mount point) where a file is needed.
    IsDirectory,
    /// The file changed since it was read (`if_match`), or exists under `create_only`.
    Conflict,
    /// A size or count limit.
    TooLarge,
    /// An argument other than the path is wrong; the message says how to fix it.
    InvalidArgument,
    /// The store failed for a reason on the host's side; retrying later may work.
    Unavailable,
}

impl VfsErrorCode {
    /// The wire name, e.g. `permission_denied`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidPath => "invalid_path",
            Self::PermissionDenied => "permission_denied",
            Self::NotFound => "not_found",
            Self::IsDirectory => "is_directory",
            Self::Conflict => "conflict",
            Self::TooLarge => "too_large",
            Self::InvalidArgument => "invalid_argument",
            Self::Unavailable => "unavailable",
        }
    }
}

impl fmt::Display for VfsErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed tool call: a code and a message written for the model (virtual paths only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct VfsError {
    /// What kind of failure.
    pub code: VfsErrorCode,
    /// What happened and, where it helps, what to do next.
    pub message: String,
}

impl VfsError {
    /// An error with `code` and `message`.
    pub fn new(code: VfsErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid_path(message: impl Into<String>) -> Self {
        Self::new(VfsErrorCode::InvalidPath, message)
    }

    pub(crate) fn denied(message: impl Into<String>) -> Self {
        Self::new(VfsErrorCode::PermissionDenied, message)
    }

    pub(crate) fn not_found(path: impl fmt::Display) -> Self {
        Self::new(VfsErrorCode::NotFound, format!("{path} does not exist"))
    }

    pub(crate) fn is_directory(path: impl fmt::Display) -> Self {
        Self::new(
            VfsErrorCode::IsDirectory,
            format!("{path} is a directory, not a file"),
        )
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(VfsErrorCode::InvalidArgument, message)
    }

    pub(crate) fn unavailable() -> Self {
        Self::new(
            VfsErrorCode::Unavailable,
            "the store could not complete this operation right now; try again later",
        )
    }

    pub(crate) fn stale(path: impl fmt::Display) -> Self {
        Self::new(
            VfsErrorCode::Conflict,
            format!(
                "{path} changed since you read it; read it again, then retry with the new etag"
            ),
        )
    }

    pub(crate) fn exists(path: impl fmt::Display) -> Self {
        Self::new(
            VfsErrorCode::Conflict,
            format!(
                "{path} already exists and create_only is set; choose another name or drop create_only"
            ),
        )
    }

    /// Maps a store failure for `path` (a virtual path) to a tool error.
    pub(crate) fn from_store(err: StoreError, path: impl fmt::Display) -> Self {
        match err {
            StoreError::NotFound => Self::not_found(path),
            StoreError::Conflict { .. } => Self::stale(path),
            StoreError::TooLarge {
                limit: LimitKind::MaxFiles,
                max,
            } => Self::new(
                VfsErrorCode::TooLarge,
                format!(
                    "this workspace already holds its maximum of {max} files; delete some first"
                ),
            ),
            StoreError::TooLarge { max, .. } => Self::new(
                VfsErrorCode::TooLarge,
                format!("the content of {path} is over the limit of {max} bytes"),
            ),
            StoreError::ContainsSecret { field } => Self::invalid_path(format!(
                "a configured secret appears in the {field} of this write, so nothing was \
                 written; choose another"
            )),
            _ => Self::unavailable(),
        }
    }
}
