//! The in-memory backend: for tests, demos and hosts that want no persistence.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};
use tokio::sync::broadcast;
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

use crate::write::{self, Current};
use crate::{
    ChangeEvent, ChangeNotice, ChangePage, DEFAULT_FEED_RETENTION, Deleted, FileMeta, FileWrite,
    Limits, Precondition, QuotaExceeded, SnapshotCursor, SnapshotId, SnapshotInfo, SnapshotLabel,
    SnapshotQuota, SnapshotUsage, StoreError, StoreFeatures, StoreFuture, StoredFile,
    WorkspaceStore,
};

/// A [`WorkspaceStore`] held in process memory; everything is lost when it is dropped.
///
/// Each owner has its own lock, so one owner's writes never block another owner's reads, and
/// locks are held only for the in-memory update (never across an `.await`).
#[derive(Debug)]
pub struct MemoryStore {
    limits: Limits,
    feed_retention: u64,
    owners: RwLock<HashMap<Owner, Arc<RwLock<OwnerState>>>>,
    notices: broadcast::Sender<ChangeNotice>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

#[derive(Debug, Default)]
struct OwnerState {
    seq: u64,
    live: u64,
    paths: BTreeMap<WorkspacePath, PathState>,
    feed: VecDeque<ChangeEvent>,
    snapshots: HashMap<SnapshotId, SnapshotInfo>,
}

/// One stored row of a path: a version or a tombstone, in commit order.
#[derive(Debug, Clone)]
struct Row {
    seq: u64,
    life: u64,
    /// `None`: the tombstone of a delete.
    file: Option<StoredFile>,
}

#[derive(Debug, Default)]
struct PathState {
    rows: Vec<Row>,
}

impl PathState {
    fn live(&self) -> Option<&StoredFile> {
        self.rows.last().and_then(|r| r.file.as_ref())
    }

    /// The path's newest row for the write decision (a tombstone's version is not kept here).
    fn current(&self) -> Option<Current> {
        self.rows.last().map(|r| Current {
            life: r.life,
            version: r.file.as_ref().map_or(0, |f| f.meta.version),
            live: r.file.is_some(),
        })
    }

    fn live_life(&self) -> Option<u64> {
        self.rows
            .last()
            .filter(|r| r.file.is_some())
            .map(|r| r.life)
    }

    /// The live file as of sequence number `seq`.
    fn at(&self, seq: u64) -> Option<&StoredFile> {
        self.rows
            .iter()
            .rev()
            .find(|r| r.seq <= seq)
            .and_then(|r| r.file.as_ref())
    }

    /// Which rows are kept without any snapshot: the newest row, and the newest `keep`
    /// versions of the live life.
    fn kept_anyway(&self, keep: u64) -> Vec<bool> {
        let live_life = self.live_life();
        let mut kept = vec![false; self.rows.len()];
        if let Some(last) = kept.last_mut() {
            *last = true;
        }
        let mut in_history = 0;
        for (i, row) in self.rows.iter().enumerate().rev() {
            if Some(row.life) == live_life && row.file.is_some() && in_history < keep {
                kept[i] = true;
                in_history += 1;
            }
        }
        kept
    }

    /// Which rows the snapshots pinned at `pinned` see: for each, the newest at or before it.
    fn seen(&self, pinned: &[u64]) -> Vec<bool> {
        let mut seen = vec![false; self.rows.len()];
        for &s in pinned {
            if let Some(i) = self.rows.iter().rposition(|r| r.seq <= s) {
                seen[i] = true;
            }
        }
        seen
    }

    /// Content bytes that only the snapshots pinned at `pinned` keep (see [`SnapshotUsage`]).
    fn pinned_bytes(&self, keep: u64, pinned: &[u64]) -> u64 {
        let kept = self.kept_anyway(keep);
        let seen = self.seen(pinned);
        self.rows
            .iter()
            .enumerate()
            .filter(|(i, _)| seen[*i] && !kept[*i])
            .filter_map(|(_, r)| r.file.as_ref().map(|f| f.meta.size))
            .sum()
    }

    /// Drops every row that neither history (the newest `keep` versions of the live life) nor
    /// an open snapshot (the newest row at or before its seq) can still see.
    fn prune(&mut self, keep: u64, pinned: &[u64]) {
        let kept = self.kept_anyway(keep);
        let seen = self.seen(pinned);
        let needed: Vec<bool> = kept.iter().zip(&seen).map(|(k, s)| *k || *s).collect();
        let mut i = 0;
        self.rows.retain(|_| {
            i += 1;
            needed[i - 1]
        });
    }
}

impl OwnerState {
    fn pinned(&self) -> Vec<u64> {
        self.snapshots
            .values()
            .filter(|s| s.released.is_none())
            .map(|s| s.seq)
            .collect()
    }

    fn record(&mut self, event: ChangeEvent, retention: u64) {
        self.feed.push_back(event);
        while self.feed.len() as u64 > retention {
            self.feed.pop_front();
        }
    }

    /// Open snapshots and the bytes only they keep.
    fn snapshot_usage(&self, keep: u64) -> SnapshotUsage {
        let pinned = self.pinned();
        SnapshotUsage {
            open: pinned.len() as u64,
            pinned_bytes: self
                .paths
                .values()
                .map(|p| p.pinned_bytes(keep, &pinned))
                .sum(),
        }
    }

    fn open_snapshot(&self, id: &SnapshotId) -> Result<u64, StoreError> {
        match self.snapshots.get(id) {
            Some(s) if s.released.is_none() => Ok(s.seq),
            _ => Err(StoreError::NotFound),
        }
    }
}

impl MemoryStore {
    /// An empty store with the given limits.
    pub fn new(limits: Limits) -> Self {
        let (notices, _) = broadcast::channel(1024);
        Self {
            limits,
            feed_retention: DEFAULT_FEED_RETENTION,
            owners: RwLock::default(),
            notices,
        }
    }

    /// The same store keeping only the last `n` changes of each owner's feed.
    pub fn with_feed_retention(mut self, n: u64) -> Self {
        self.feed_retention = n.max(1);
        self
    }

    fn owner(&self, owner: &Owner) -> Option<Arc<RwLock<OwnerState>>> {
        self.owners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(owner)
            .cloned()
    }

    /// Every owner's state, for housekeeping across owners (the map's lock is not held after).
    fn all_owners(&self) -> Vec<(Owner, Arc<RwLock<OwnerState>>)> {
        self.owners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(o, st)| (o.clone(), st.clone()))
            .collect()
    }

    fn owner_or_insert(&self, owner: &Owner) -> Arc<RwLock<OwnerState>> {
        if let Some(state) = self.owner(owner) {
            return state;
        }
        let mut owners = self.owners.write().unwrap_or_else(|e| e.into_inner());
        owners.entry(owner.clone()).or_default().clone()
    }

    fn read<T>(
        &self,
        owner: &Owner,
        f: impl FnOnce(&OwnerState) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.owner(owner) {
            Some(state) => f(&state.read().unwrap_or_else(|e| e.into_inner())),
            None => f(&OwnerState::default()),
        }
    }

    fn notify(&self, owner: &Owner, seq: u64) {
        // No receiver is fine: nobody is watching.
        let _ = self.notices.send(ChangeNotice {
            owner: owner.clone(),
            seq,
        });
    }

    fn put_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> Result<StoredFile, StoreError> {
        let state = self.owner_or_insert(owner);
        let mut guard = state.write().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        let current = st.paths.get(path).and_then(PathState::current);
        let decided = write::decide_put(
            current.as_ref(),
            &write,
            &precondition,
            &self.limits,
            st.live,
        )?;
        let (life, version) = (decided.life, decided.version);
        if decided.creates {
            st.live += 1;
        }
        st.seq += 1;
        let seq = st.seq;
        let now = Utc::now();
        let stored = decided.stored_file(path, write, now);
        let pinned = st.pinned();
        let rows = st.paths.entry(path.clone()).or_default();
        rows.rows.push(Row {
            seq,
            life,
            file: Some(stored.clone()),
        });
        rows.prune(self.limits.max_versions.max(1), &pinned);
        let event = ChangeEvent {
            seq,
            path: path.clone(),
            version,
            deleted: false,
            at: now,
        };
        st.record(event, self.feed_retention);
        drop(guard);
        self.notify(owner, seq);
        Ok(stored)
    }

    fn delete_sync(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        precondition: Precondition,
    ) -> Result<Deleted, StoreError> {
        let state = self.owner(owner).ok_or(StoreError::NotFound)?;
        let mut guard = state.write().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        let current = st.paths.get(path).and_then(PathState::current);
        let decided = write::decide_delete(current.as_ref(), &precondition)?;
        let (version, life) = (decided.tombstone, decided.life);
        st.live -= 1;
        st.seq += 1;
        let seq = st.seq;
        let pinned = st.pinned();
        if pinned.is_empty() {
            // Nothing can see the deleted life any more: forget the path.
            st.paths.remove(path);
        } else {
            let rows = st.paths.get_mut(path).ok_or(StoreError::NotFound)?;
            rows.rows.push(Row {
                seq,
                life,
                file: None,
            });
            rows.prune(self.limits.max_versions.max(1), &pinned);
        }
        let at = Utc::now();
        st.record(
            ChangeEvent {
                seq,
                path: path.clone(),
                version,
                deleted: true,
                at,
            },
            self.feed_retention,
        );
        drop(guard);
        self.notify(owner, seq);
        Ok(Deleted { version })
    }

    /// Takes a snapshot if the owner's usage admits one, under the owner's lock (so racing
    /// calls never exceed the quota).
    fn snapshot_sync(
        &self,
        owner: &Owner,
        label: &SnapshotLabel,
        quota: SnapshotQuota,
    ) -> Result<SnapshotInfo, QuotaExceeded> {
        let state = self.owner_or_insert(owner);
        let mut st = state.write().unwrap_or_else(|e| e.into_inner());
        if quota != SnapshotQuota::UNBOUNDED {
            quota.admits(st.snapshot_usage(self.limits.max_versions.max(1)))?;
        }
        let info = SnapshotInfo {
            id: SnapshotId::new(),
            seq: st.seq,
            label: label.clone(),
            created_at: Utc::now(),
            released: None,
        };
        st.snapshots.insert(info.id.clone(), info.clone());
        Ok(info)
    }

    fn release_sync(
        &self,
        owner: &Owner,
        id: &SnapshotId,
        outcome: &str,
    ) -> Result<SnapshotInfo, StoreError> {
        let state = self.owner(owner).ok_or(StoreError::NotFound)?;
        let mut guard = state.write().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        let info = st.snapshots.get_mut(id).ok_or(StoreError::NotFound)?;
        if info.released.is_none() {
            info.released = Some((Utc::now(), outcome.to_owned()));
            let info = info.clone();
            let pinned = st.pinned();
            let keep = self.limits.max_versions.max(1);
            st.paths.values_mut().for_each(|p| p.prune(keep, &pinned));
            // A deleted path that nothing can see any more is forgotten entirely.
            st.paths
                .retain(|_, p| p.rows.iter().any(|r| r.file.is_some()) || !pinned.is_empty());
            return Ok(info);
        }
        Ok(info.clone())
    }
}

impl WorkspaceStore for MemoryStore {
    fn limits(&self) -> Limits {
        self.limits
    }

    fn features(&self) -> StoreFeatures {
        StoreFeatures::ALL
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let result = self.read(owner, |st| Ok(list_where(st, prefix, |p| p.live())));
        Box::pin(async move { result })
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        let result = self.read(owner, |st| {
            let state = st.paths.get(path).ok_or(StoreError::NotFound)?;
            let live = state.live().ok_or(StoreError::NotFound)?;
            let Some(v) = version else {
                return Ok(live.clone());
            };
            // Only the retained history is served, even when a snapshot keeps older rows.
            let oldest = live
                .meta
                .version
                .saturating_sub(self.limits.max_versions.max(1) - 1);
            if v < oldest {
                return Err(StoreError::NotFound);
            }
            let life = state.live_life();
            state
                .rows
                .iter()
                .find(|r| {
                    Some(r.life) == life && r.file.as_ref().is_some_and(|f| f.meta.version == v)
                })
                .and_then(|r| r.file.clone())
                .ok_or(StoreError::NotFound)
        });
        Box::pin(async move { result })
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
        let result = self.read(owner, |st| {
            let state = st.paths.get(path).ok_or(StoreError::NotFound)?;
            let life = state.live_life().ok_or(StoreError::NotFound)?;
            Ok(state
                .rows
                .iter()
                .rev()
                .filter(|r| r.life == life)
                .filter_map(|r| r.file.as_ref().map(|f| f.meta.clone()))
                .take(self.limits.max_versions.max(1) as usize)
                .collect())
        });
        Box::pin(async move { result })
    }

    fn snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let taken = self.snapshot_sync(owner, label, SnapshotQuota::UNBOUNDED);
        Box::pin(async move { Ok(taken.expect("an unbounded quota admits every snapshot")) })
    }

    fn snapshot_usage<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, SnapshotUsage> {
        let keep = self.limits.max_versions.max(1);
        let usage = self.read(owner, |st| Ok(st.snapshot_usage(keep)));
        Box::pin(async move { usage })
    }

    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        let taken = self.snapshot_sync(owner, label, quota);
        Box::pin(async move { Ok(taken) })
    }

    fn snapshot_info<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let result = self.read(owner, |st| {
            st.snapshots.get(id).cloned().ok_or(StoreError::NotFound)
        });
        Box::pin(async move { result })
    }

    fn list_snapshots<'a>(
        &'a self,
        owner: &'a Owner,
        after: Option<&'a SnapshotCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<SnapshotInfo>> {
        let result = self.read(owner, |st| {
            let mut page: Vec<SnapshotInfo> = st
                .snapshots
                .values()
                .filter(|s| after.is_none_or(|cursor| cursor.precedes(s)))
                .cloned()
                .collect();
            page.sort_by(|a, b| (b.created_at, b.id.as_str()).cmp(&(a.created_at, a.id.as_str())));
            page.truncate(limit);
            Ok(page)
        });
        Box::pin(async move { result })
    }

    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        Box::pin(async move { self.release_sync(owner, id, outcome) })
    }

    fn open_snapshots_before<'a>(
        &'a self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<(Owner, SnapshotInfo)>> {
        let mut open: Vec<(Owner, SnapshotInfo)> = Vec::new();
        for (owner, state) in self.all_owners() {
            let st = state.read().unwrap_or_else(|e| e.into_inner());
            open.extend(
                st.snapshots
                    .values()
                    .filter(|s| s.released.is_none() && s.created_at < cutoff)
                    .map(|s| (owner.clone(), s.clone())),
            );
        }
        open.sort_by(|a, b| (a.1.created_at, &a.1.id).cmp(&(b.1.created_at, &b.1.id)));
        open.truncate(limit);
        Box::pin(async move { Ok(open) })
    }

    fn count_open_snapshots(&self) -> StoreFuture<'_, u64> {
        let open = self
            .all_owners()
            .iter()
            .map(|(_, state)| {
                let st = state.read().unwrap_or_else(|e| e.into_inner());
                st.snapshots
                    .values()
                    .filter(|s| s.released.is_none())
                    .count() as u64
            })
            .sum();
        Box::pin(async move { Ok(open) })
    }

    fn forget_released_snapshots<'a>(
        &'a self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, usize> {
        // The oldest releases first, across owners, as the other backends do.
        let mut released: Vec<(DateTime<Utc>, SnapshotId, Arc<RwLock<OwnerState>>)> = Vec::new();
        for (_, state) in &self.all_owners() {
            let st = state.read().unwrap_or_else(|e| e.into_inner());
            released.extend(st.snapshots.values().filter_map(|s| match &s.released {
                Some((at, _)) if *at < cutoff => Some((*at, s.id.clone(), state.clone())),
                _ => None,
            }));
        }
        released.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        released.truncate(limit);
        for (_, id, state) in &released {
            let mut st = state.write().unwrap_or_else(|e| e.into_inner());
            st.snapshots.remove(id);
        }
        let forgotten = released.len();
        Box::pin(async move { Ok(forgotten) })
    }

    fn list_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let result = self.read(owner, |st| {
            let seq = st.open_snapshot(snapshot)?;
            Ok(list_where(st, prefix, |p| p.at(seq)))
        });
        Box::pin(async move { result })
    }

    fn get_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, StoredFile> {
        let result = self.read(owner, |st| {
            let seq = st.open_snapshot(snapshot)?;
            st.paths
                .get(path)
                .and_then(|p| p.at(seq))
                .cloned()
                .ok_or(StoreError::NotFound)
        });
        Box::pin(async move { result })
    }

    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        let result = self.read(owner, |st| {
            let oldest = st.feed.front().map_or(st.seq + 1, |e| e.seq);
            let events = st
                .feed
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect();
            Ok(ChangePage {
                events,
                oldest,
                head: st.seq,
            })
        });
        Box::pin(async move { result })
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<ChangeNotice>> {
        Some(self.notices.subscribe())
    }
}

fn list_where(
    st: &OwnerState,
    prefix: &WorkspacePrefix,
    visible: impl Fn(&PathState) -> Option<&StoredFile>,
) -> Vec<FileMeta> {
    st.paths
        .range::<str, _>((
            std::ops::Bound::Included(prefix.as_str()),
            std::ops::Bound::Unbounded,
        ))
        .take_while(|(path, _)| prefix.matches(path.as_str()))
        .filter_map(|(_, state)| visible(state).map(|f| f.meta.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    crate::battery_tests!(|limits| async move { crate::MemoryStore::new(limits) });
}
