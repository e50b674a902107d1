//! The daily memory log: `memory/YYYY-MM-DD.md`, append-only.

use chrono::NaiveDate;
use wsp_store::WorkspaceStore;
use wsp_types::{Owner, WorkspacePath};

use crate::update::{Updated, WriteError, WriteOptions, update_file};

/// The log file of `date`: `memory/YYYY-MM-DD.md`.
///
/// ```
/// use chrono::NaiveDate;
/// let date = NaiveDate::from_ymd_opt(2025, 3, 7).unwrap();
/// assert_eq!(wsp_context::memory_log_path(date).as_str(), "memory/2025-03-07.md");
/// ```
pub fn memory_log_path(date: NaiveDate) -> WorkspacePath {
    WorkspacePath::parse(&format!("memory/{}.md", date.format("%Y-%m-%d")))
        .expect("a formatted date is a valid workspace path")
}

/// Appends one line to the owner's log of `date`, creating the file if needed.
///
/// The write is conditional (`If-None-Match: *` to create, else `If-Match` on the etag just
/// read) and retried after a conflict on the content then current, so concurrent appenders never
/// lose a line: each line is in the file exactly once. Earlier lines are never changed. A line
/// holds no line break (`Invalid`); a log that would exceed the store's file size limit is a
/// `Store(TooLarge)` error.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use chrono::NaiveDate;
/// use wsp_context::{WriteOptions, append_memory_line};
/// use wsp_store::{MemoryStore, WorkspaceStore};
/// use wsp_types::Owner;
///
/// let store = MemoryStore::default();
/// let owner = Owner::parse("t", "w").unwrap();
/// let date = NaiveDate::from_ymd_opt(2025, 3, 7).unwrap();
/// let options = WriteOptions::default();
/// append_memory_line(&store, &owner, date, "User prefers metric units.", &options).await.unwrap();
/// let done = append_memory_line(&store, &owner, date, "Deploys on Fridays are off.", &options).await.unwrap();
/// assert_eq!(done.file.content, "User prefers metric units.\nDeploys on Fridays are off.\n");
/// # });
/// ```
pub async fn append_memory_line(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    date: NaiveDate,
    line: &str,
    options: &WriteOptions,
) -> Result<Updated, WriteError> {
    if line.contains(['\n', '\r']) {
        return Err(WriteError::Invalid(
            "a memory log line holds no line break; append each line separately".into(),
        ));
    }
    let path = memory_log_path(date);
    update_file(store, owner, &path, "text/markdown", options, |current| {
        let mut content = current.unwrap_or_default().to_owned();
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str(line);
        content.push('\n');
        Ok(content)
    })
    .await
}
