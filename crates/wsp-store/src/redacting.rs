//! WSR-1 in one place: a store layer that every writer passes.
//!
//! [`RedactingStore`] wraps any [`WorkspaceStore`]. Before a write reaches the store beneath it
//! redacts the owner's secrets from text content (and the recorded author), and refuses a write
//! whose path or media type holds one: those fields name things, so a marker in them would
//! change what the caller addresses. A binary body holding a secret is refused too: a marker
//! spliced into bytes would corrupt the file. Snapshot labels and release outcomes are refused the same
//! way. A host builds its store as this layer over the backend and hands that one value to
//! every writer (the HTTP routes, publishing, the test seam, the virtual filesystem, the items
//! profile, the context memory log), so none of them redacts by itself and none can forget to.
//!
//! Fields a store never sees (an `Idempotency-Key`, a run's workflow id, a publish target
//! before it becomes a path) are checked where they arrive with [`refuse_secret`], the same
//! test the layer applies.
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use wsp_store::{
//!     FileWrite, MemoryStore, Precondition, RedactingStore, Redactor, Secret, StoreError,
//!     TenantSecrets, WorkspaceStore,
//! };
//! use wsp_types::{Owner, OwnerId, WorkspacePath};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let secret = Secret { id: "openai".into(), value: "sk-12345678".into() };
//! let secrets = TenantSecrets::new(HashMap::from([(
//!     OwnerId::parse("t").unwrap(),
//!     Redactor::new(vec![secret]).unwrap(),
//! )]));
//! let store = RedactingStore::new(Arc::new(MemoryStore::default()), Arc::new(secrets));
//! let owner = Owner::parse("t", "w").unwrap();
//! let path = WorkspacePath::parse("notes.md").unwrap();
//! let put = FileWrite::markdown("key sk-12345678");
//! let stored = store.put(&owner, &path, put, Precondition::None).await.unwrap();
//! assert_eq!(stored.content, "key [REDACTED:openai]");
//!
//! let named = WorkspacePath::parse("sk-12345678.md").unwrap();
//! let refused = store.put(&owner, &named, FileWrite::markdown("x"), Precondition::None).await;
//! assert_eq!(refused.unwrap_err(), StoreError::ContainsSecret { field: "path" });
//! # }
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::{SnapshotId, SnapshotLabel};
use wsp_types::{Owner, OwnerId, WorkspacePath};

use crate::{
    FileWrite, Precondition, QuotaExceeded, Redactor, SnapshotInfo, SnapshotQuota, StoreError,
    StoreFuture, StoredFile, WorkspaceStore,
};

/// Supplies, per owner, the secrets whose values must never reach storage.
///
/// A host with a vault implements this over the vault; [`TenantSecrets`] is a fixed list.
pub trait SecretSource: Send + Sync + 'static {
    /// The redactor for `owner` (`None`: nothing to redact).
    fn redactor(&self, owner: &Owner) -> Option<Arc<Redactor>>;

    /// A redactor that knows every owner's secrets, for text that belongs to no owner yet (a
    /// request line written to a log before the caller is known). `None` (the default): the
    /// source cannot enumerate its secrets.
    fn every_secret(&self) -> Option<Arc<Redactor>> {
        None
    }
}

/// Secrets configured per tenant: every workspace of a tenant has the tenant's secrets.
#[derive(Debug, Default, Clone)]
pub struct TenantSecrets {
    by_tenant: HashMap<OwnerId, Arc<Redactor>>,
    every: Option<Arc<Redactor>>,
}

impl TenantSecrets {
    /// Secrets for each tenant.
    pub fn new(by_tenant: HashMap<OwnerId, Redactor>) -> Self {
        let every = Redactor::union(by_tenant.values());
        Self {
            by_tenant: by_tenant
                .into_iter()
                .filter(|(_, r)| !r.is_empty())
                .map(|(t, r)| (t, Arc::new(r)))
                .collect(),
            every: (!every.is_empty()).then(|| Arc::new(every)),
        }
    }
}

impl SecretSource for TenantSecrets {
    fn redactor(&self, owner: &Owner) -> Option<Arc<Redactor>> {
        self.by_tenant.get(&owner.tenant).cloned()
    }

    fn every_secret(&self) -> Option<Arc<Redactor>> {
        self.every.clone()
    }
}

/// Fails with [`StoreError::ContainsSecret`] naming `field` when `text` holds one of `owner`'s
/// secrets (in any normalization form). The check [`RedactingStore`] applies to paths and
/// media types, for the fields of a request that never reach a store.
pub fn refuse_secret(
    secrets: &dyn SecretSource,
    owner: &Owner,
    field: &'static str,
    text: &str,
) -> Result<(), StoreError> {
    match secrets.redactor(owner) {
        Some(r) if r.contains_secret(text) => Err(StoreError::ContainsSecret { field }),
        _ => Ok(()),
    }
}

/// A [`WorkspaceStore`] that applies WSR-1 to every write before the store beneath it sees it.
///
/// - [`put`](WorkspaceStore::put): text content and the author are redacted; a path, a media
///   type or a binary (base64) body holding a secret is refused ([`StoreError::ContainsSecret`],
///   nothing stored), as bytes cannot be redacted without corrupting the file.
/// - [`snapshot`](WorkspaceStore::snapshot), [`snapshot_within`](WorkspaceStore::snapshot_within)
///   and [`release_snapshot`](WorkspaceStore::release_snapshot): a label or outcome holding a
///   secret is refused.
/// - Everything else (reads, deletes, the feed, housekeeping) is passed through unchanged, so
///   a file stored before its secret was configured can still be read and deleted.
///
/// Every method of the contract is forwarded, optional ones included, so the layer offers
/// exactly the [`features`](WorkspaceStore::features) of the store beneath it.
pub struct RedactingStore<S: ?Sized = dyn WorkspaceStore> {
    inner: Arc<S>,
    secrets: Arc<dyn SecretSource>,
}

impl<S: ?Sized> Clone for RedactingStore<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            secrets: self.secrets.clone(),
        }
    }
}

impl<S: ?Sized> std::fmt::Debug for RedactingStore<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingStore").finish_non_exhaustive()
    }
}

impl<S: WorkspaceStore + ?Sized> RedactingStore<S> {
    /// `inner`, with `secrets` redacted from every write.
    pub fn new(inner: Arc<S>, secrets: Arc<dyn SecretSource>) -> Self {
        Self { inner, secrets }
    }

    /// The store beneath the layer (writes to it are not redacted).
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// Where the layer gets each owner's secrets.
    pub fn secrets(&self) -> &Arc<dyn SecretSource> {
        &self.secrets
    }

    /// The write as it may be stored: redacted, or refused.
    fn screen(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        mut write: FileWrite,
    ) -> Result<FileWrite, StoreError> {
        let Some(r) = self.secrets.redactor(owner) else {
            return Ok(write);
        };
        if r.contains_secret(path.as_str()) {
            return Err(StoreError::ContainsSecret { field: "path" });
        }
        if r.contains_secret(write.content_type.as_str()) {
            return Err(StoreError::ContainsSecret {
                field: "contentType",
            });
        }
        if write.encoding.is_binary() {
            // Bytes cannot be redacted without corrupting the file: a secret in them is
            // refused, like a secret in a name.
            let bytes = write
                .encoding
                .decode(&write.content)
                .map_err(|e| StoreError::InvalidContent(e.to_string()))?;
            if r.contains_secret_in_bytes(&bytes) {
                return Err(StoreError::ContainsSecret { field: "content" });
            }
        } else if let Cow::Owned(content) = r.redact(&write.content) {
            write.content = content;
        }
        if let Some(Cow::Owned(author)) = write.author.as_deref().map(|a| r.redact(a)) {
            write.author = Some(author);
        }
        Ok(write)
    }
}

fn refused<'a, T: Send + 'a>(e: StoreError) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(Err(e)))
}

impl<S: WorkspaceStore + ?Sized> RedactingStore<S> {
    /// Refuses a label with a configured secret in any of its texts.
    fn screen_label(&self, owner: &Owner, label: &SnapshotLabel) -> Result<(), StoreError> {
        label
            .texts()
            .into_iter()
            .try_for_each(|text| refuse_secret(&*self.secrets, owner, "label", text))
    }
}

impl<S: WorkspaceStore + ?Sized> WorkspaceStore for RedactingStore<S> {
    crate::forward_store!(|this| this.inner;
        limits, features, ready, list, get, delete, history, snapshot_usage, snapshot_info, list_snapshots,
        open_snapshots_before, count_open_snapshots, forget_released_snapshots, list_at, get_at,
        changes, subscribe, search);

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        match self.screen(owner, path, write) {
            Ok(write) => self.inner.put(owner, path, write, precondition),
            Err(e) => refused(e),
        }
    }

    fn snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
    ) -> StoreFuture<'a, SnapshotInfo> {
        match self.screen_label(owner, label) {
            Ok(()) => self.inner.snapshot(owner, label),
            Err(e) => refused(e),
        }
    }

    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        match self.screen_label(owner, label) {
            Ok(()) => self.inner.snapshot_within(owner, label, quota),
            Err(e) => refused(e),
        }
    }

    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        match refuse_secret(&*self.secrets, owner, "outcome", outcome) {
            Ok(()) => self.inner.release_snapshot(owner, id, outcome),
            Err(e) => refused(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Secrets for the battery's tenants that its texts never contain: every write is screened
    /// and none is changed, so the layer must behave exactly like the store beneath.
    fn unrelated_secrets() -> Arc<dyn SecretSource> {
        let by_tenant = ["a", "b"]
            .into_iter()
            .map(|t| {
                let secret = crate::Secret {
                    id: "never".into(),
                    value: "never-written-anywhere".into(),
                };
                (
                    OwnerId::parse(t).unwrap(),
                    Redactor::new(vec![secret]).unwrap(),
                )
            })
            .collect();
        Arc::new(TenantSecrets::new(by_tenant))
    }

    crate::battery_tests!(|limits| async move {
        RedactingStore::new(
            Arc::new(crate::MemoryStore::new(limits)),
            unrelated_secrets(),
        )
    });
}
