//! The in-memory backend: for tests, demos and hosts that want no persistence.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, RwLock};

use chrono::Utc;
use wsp_types::{ETag, LimitKind, Owner, WorkspacePath, WorkspacePrefix};

use crate::{
    Deleted, FileMeta, FileWrite, Limits, Precondition, StoreError, StoreFuture, StoredFile,
    WorkspaceStore, check_file_size, new_life_id,
};

/// A [`WorkspaceStore`] held in process memory; everything is lost when it is dropped.
///
/// Each owner has its own lock, so one owner's writes never block another owner's reads, and
/// locks are held only for the in-memory update (never across an `.await`).
#[derive(Debug, Default)]
pub struct MemoryStore {
    limits: Limits,
    owners: RwLock<HashMap<Owner, Arc<RwLock<OwnerFiles>>>>,
}

#[derive(Debug, Default)]
struct OwnerFiles {
    paths: BTreeMap<WorkspacePath, PathState>,
    live: u64,
}

#[derive(Debug)]
struct PathState {
    life: u64,
    /// Retained versions of the current life, oldest first; the last one is the newest.
    versions: VecDeque<StoredFile>,
    /// `Some(v)`: tombstoned at version `v`.
    tombstone: Option<u64>,
}

impl PathState {
    fn live(&self) -> Option<&StoredFile> {
        if self.tombstone.is_some() {
            None
        } else {
            self.versions.back()
        }
    }
}

impl MemoryStore {
    /// An empty store with the given limits.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            owners: RwLock::default(),
        }
    }

    fn owner(&self, owner: &Owner) -> Option<Arc<RwLock<OwnerFiles>>> {
        self.owners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(owner)
            .cloned()
    }

    fn owner_or_insert(&self, owner: &Owner) -> Arc<RwLock<OwnerFiles>> {
        if let Some(files) = self.owner(owner) {
            return files;
        }
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        owners.entry(owner.clone()).or_default().clone()
    }

    fn list_sync(&self, owner: &Owner, prefix: &WorkspacePrefix) -> Vec<FileMeta> {
        let Some(files) = self.owner(owner) else {
            return Vec::new();
        };
        let files = files.read().unwrap_or_else(|e| e.into_inner());
        files
            .paths
            .range::<str, _>((
                std::ops::Bound::Included(prefix.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(path, _)| prefix.matches(path.as_str()))
            .filter_map(|(_, state)| state.live().map(|f| f.meta.clone()))
            .collect()
    }

    fn get_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        version: Option<u64>,
    ) -> Result<StoredFile, StoreError> {
        let files = self.owner(owner).ok_or(StoreError::NotFound)?;
        let files = files.read().unwrap_or_else(|e| e.into_inner());
        let state = files.paths.get(path).ok_or(StoreError::NotFound)?;
        let live = state.live().ok_or(StoreError::NotFound)?;
        match version {
            None => Ok(live.clone()),
            Some(v) => state
                .versions
                .iter()
                .find(|f| f.meta.version == v)
                .cloned()
                .ok_or(StoreError::NotFound),
        }
    }

    fn put_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> Result<StoredFile, StoreError> {
        check_file_size(&self.limits, &write)?;
        let files = self.owner_or_insert(owner);
        let mut files = files.write().unwrap_or_else(|e| e.into_inner());
        let OwnerFiles { paths, live } = &mut *files;
        let state = paths.get(path);
        let current = state.and_then(PathState::live);
        if !precondition.admits(current.map(|f| &f.meta.etag)) {
            return Err(StoreError::Conflict {
                current_version: current.map_or(0, |f| f.meta.version),
            });
        }
        let creating = current.is_none();
        if creating && *live >= self.limits.max_files {
            return Err(StoreError::TooLarge {
                limit: LimitKind::MaxFiles,
                max: self.limits.max_files,
            });
        }
        let (life, version) = match current {
            Some(f) => (state.map_or(0, |s| s.life), f.meta.version + 1),
            None => (new_life_id(), 1),
        };
        let stored = StoredFile {
            meta: FileMeta {
                path: path.clone(),
                content_type: write.content_type,
                version,
                etag: ETag::mint(life, version),
                updated_at: Utc::now(),
                size: write.content.len() as u64,
                author: write.author,
            },
            content: write.content,
        };
        let state = paths.entry(path.clone()).or_insert_with(|| PathState {
            life,
            versions: VecDeque::new(),
            tombstone: None,
        });
        if creating {
            // A new life: the previous life's versions are never served again.
            state.life = life;
            state.versions.clear();
            state.tombstone = None;
            *live += 1;
        }
        state.versions.push_back(stored.clone());
        while state.versions.len() as u64 > self.limits.max_versions.max(1) {
            state.versions.pop_front();
        }
        Ok(stored)
    }

    fn delete_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        precondition: Precondition,
    ) -> Result<Deleted, StoreError> {
        let files = self.owner(owner).ok_or(StoreError::NotFound)?;
        let mut files = files.write().unwrap_or_else(|e| e.into_inner());
        let OwnerFiles { paths, live } = &mut *files;
        let state = paths.get_mut(path).ok_or(StoreError::NotFound)?;
        let current = state.live().ok_or(StoreError::NotFound)?;
        if !precondition.admits(Some(&current.meta.etag)) {
            return Err(StoreError::Conflict {
                current_version: current.meta.version,
            });
        }
        let version = current.meta.version + 1;
        state.tombstone = Some(version);
        *live -= 1;
        Ok(Deleted { version })
    }

    fn history_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
    ) -> Result<Vec<FileMeta>, StoreError> {
        let files = self.owner(owner).ok_or(StoreError::NotFound)?;
        let files = files.read().unwrap_or_else(|e| e.into_inner());
        let state = files.paths.get(path).ok_or(StoreError::NotFound)?;
        state.live().ok_or(StoreError::NotFound)?;
        Ok(state
            .versions
            .iter()
            .rev()
            .map(|f| f.meta.clone())
            .collect())
    }
}

impl WorkspaceStore for MemoryStore {
    fn limits(&self) -> Limits {
        self.limits
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        Box::pin(async move { Ok(self.list_sync(owner, prefix)) })
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        Box::pin(async move { self.get_sync(owner, path, version) })
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        Box::pin(async move { self.put_sync(owner, path, write, precondition) })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        Box::pin(async move { self.delete_sync(owner, path, precondition) })
    }

    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        Box::pin(async move { self.history_sync(owner, path) })
    }
}

#[cfg(test)]
mod tests {
    crate::battery_tests!(|limits| async move { crate::MemoryStore::new(limits) });
}
