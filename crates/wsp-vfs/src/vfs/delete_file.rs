//! `delete_file`: remove one file.

use super::{Vfs, word};
use crate::error::VfsError;
use crate::scope::Operation;
use crate::tools::{DeleteFileArgs, FileDeleted, ToolName};

impl Vfs {
    /// `delete_file`: remove one file.
    pub async fn delete_file(&self, args: DeleteFileArgs) -> Result<FileDeleted, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Delete, ToolName::DeleteFile)?;
        ws.store.delete(&rel).await.map_err(|f| word(f, &path))?;
        Ok(FileDeleted { path })
    }
}
