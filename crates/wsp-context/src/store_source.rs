//! [`StoreSource`]: one owner's files in a `WorkspaceStore`, live or as of a snapshot.

use std::sync::Arc;

use wsp_store::{SnapshotId, StoreError, WorkspaceStore};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

use crate::source::{ContextSource, Entry, ReadOutcome, Refusal, SourceError, SourceFuture};

/// One owner's files in a [`WorkspaceStore`].
///
/// [`StoreSource::at_snapshot`] reads through `list_at` / `get_at`, so every file comes from the
/// same pinned moment (what a run sees); [`StoreSource::live`] reads the live files, each as it
/// is when it is read.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use wsp_context::{ContextSource, ReadOutcome, StoreSource};
/// use wsp_store::{FileWrite, MemoryStore, Precondition, WorkspaceStore};
/// use wsp_types::{Owner, WorkspacePath};
///
/// let store = Arc::new(MemoryStore::default());
/// let owner = Owner::parse("t", "w").unwrap();
/// let agents = WorkspacePath::parse("AGENTS.md").unwrap();
/// store.put(&owner, &agents, FileWrite::markdown("v1"), Precondition::None).await.unwrap();
/// let pinned = store.snapshot(&owner, &"run-1".into()).await.unwrap();
/// store.put(&owner, &agents, FileWrite::markdown("v2"), Precondition::None).await.unwrap();
///
/// let source = StoreSource::at_snapshot(store, owner, pinned.id);
/// assert_eq!(source.read(&agents).await.unwrap(), ReadOutcome::Found("v1".into()));
/// # });
/// ```
#[derive(Clone)]
pub struct StoreSource {
    store: Arc<dyn WorkspaceStore>,
    owner: Owner,
    snapshot: Option<SnapshotId>,
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSource")
            .field("owner", &self.owner)
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl StoreSource {
    /// The owner's live files.
    pub fn live(store: Arc<dyn WorkspaceStore>, owner: Owner) -> Self {
        Self {
            store,
            owner,
            snapshot: None,
        }
    }

    /// The owner's files as of the open snapshot `id` (see `WorkspaceStore::snapshot`).
    pub fn at_snapshot(store: Arc<dyn WorkspaceStore>, owner: Owner, id: SnapshotId) -> Self {
        Self {
            store,
            owner,
            snapshot: Some(id),
        }
    }

    /// A `NotFound` from a snapshot read means a missing file only while the snapshot is open.
    async fn snapshot_still_open(&self, id: &SnapshotId) -> Result<(), SourceError> {
        match self.store.snapshot_info(&self.owner, id).await {
            Ok(info) if info.released.is_none() => Ok(()),
            Ok(_) | Err(StoreError::NotFound) => Err(SourceError::SnapshotGone(id.to_string())),
            Err(e) => Err(unavailable(e)),
        }
    }
}

fn unavailable(e: StoreError) -> SourceError {
    SourceError::Unavailable(e.to_string())
}

impl ContextSource for StoreSource {
    fn describe(&self) -> String {
        match &self.snapshot {
            Some(id) => format!("snapshot {id} of {}", self.owner),
            None => format!("live workspace {}", self.owner),
        }
    }

    fn list<'a>(&'a self, prefix: &'a WorkspacePrefix) -> SourceFuture<'a, Vec<Entry>> {
        Box::pin(async move {
            let metas = match &self.snapshot {
                Some(id) => match self.store.list_at(&self.owner, id, prefix).await {
                    Ok(metas) => metas,
                    Err(StoreError::NotFound) => {
                        return Err(SourceError::SnapshotGone(id.to_string()));
                    }
                    Err(e) => return Err(unavailable(e)),
                },
                None => self
                    .store
                    .list(&self.owner, prefix)
                    .await
                    .map_err(unavailable)?,
            };
            Ok(metas.into_iter().map(|m| Entry { path: m.path }).collect())
        })
    }

    fn read<'a>(&'a self, path: &'a WorkspacePath) -> SourceFuture<'a, ReadOutcome> {
        Box::pin(async move {
            let got = match &self.snapshot {
                Some(id) => self.store.get_at(&self.owner, id, path).await,
                None => self.store.get(&self.owner, path, None).await,
            };
            match got {
                Ok(file) if file.meta.encoding.is_binary() => {
                    Ok(ReadOutcome::Refused(Refusal::Binary {
                        content_type: file.meta.content_type.into_string(),
                    }))
                }
                Ok(file) => Ok(ReadOutcome::Found(file.content)),
                Err(StoreError::NotFound) => {
                    if let Some(id) = &self.snapshot {
                        self.snapshot_still_open(id).await?;
                    }
                    Ok(ReadOutcome::Missing)
                }
                Err(e) => Err(unavailable(e)),
            }
        })
    }
}
