//! `write_file`: create or replace a file, under an optional etag or `create_only`.

use super::{Vfs, etag_arg, word_in};
use crate::error::{VfsError, VfsErrorCode};
use crate::scope::{AccessScope, Operation};
use crate::tools::{FileWritten, ToolName, WriteFileArgs};

impl Vfs {
    /// `write_file`: create or replace a whole file, optionally conditional.
    ///
    /// On a write-only Workspace the result carries neither the etag nor whether the file was
    /// created, so two writes answer alike whether or not the file existed; `if_match` is refused
    /// (it would test the current content); and every refusal that depends on what is at or
    /// above the name (a directory, a link, a special file, a file above it, an existing file
    /// under `create_only`, ...) is one `conflict` with one text, so the agent learns that the
    /// name it chose cannot be written and nothing else (not why, no content, no version, no
    /// other name). Overwriting or pretending success instead would break what `create_only`
    /// promises.
    pub async fn write_file(&self, args: WriteFileArgs) -> Result<FileWritten, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Write, ToolName::WriteFile)?;
        let write_only = ws.info.scope == AccessScope::WriteOnly;
        let cond = match (&args.if_match, args.create_only) {
            (Some(_), true) => {
                return Err(VfsError::invalid_argument(
                    "give if_match or create_only, not both",
                ));
            }
            (Some(_), false) if write_only => {
                return Err(VfsError::denied(format!(
                    "{path} is in the write-only workspace {}; if_match needs read access, leave it out",
                    ws.info.path
                )));
            }
            (Some(tag), false) => crate::store::WriteCondition::IfMatch(etag_arg(tag)),
            (None, true) => crate::store::WriteCondition::CreateOnly,
            (None, false) => crate::store::WriteCondition::None,
        };
        let size = args.content.len() as u64;
        if size > self.limits.max_write_bytes {
            return Err(VfsError::new(
                VfsErrorCode::TooLarge,
                format!(
                    "the content is {size} bytes, over write_file's limit of {} bytes",
                    self.limits.max_write_bytes
                ),
            ));
        }
        let written = ws
            .store
            .write(&rel, args.content, cond, self.compare_limit())
            .await
            .map_err(|f| word_in(f, &path, ws))?;
        Ok(FileWritten {
            path,
            size,
            etag: (!write_only).then(|| written.etag.into_string()),
            created: (!write_only).then_some(written.created),
        })
    }
}
