//! [`forward_store!`](crate::forward_store): [`WorkspaceStore`](crate::WorkspaceStore) methods
//! that call the same method on another store, for layers and wrappers that change a few.

/// Names the macro's expansion uses, so a caller needs no `chrono`, `tokio` or `wsp-types` of
/// its own. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use chrono::{DateTime, Utc};
    pub use tokio::sync::broadcast::Receiver;
    pub use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};
}

/// Writes [`WorkspaceStore`](crate::WorkspaceStore) methods that call the same method on
/// another store, inside an `impl WorkspaceStore for ...` block.
///
/// `forward_store!(|this| EXPR; method, ...)` writes each named method as
/// `{ let this = self; EXPR.method(arguments) }`. `EXPR` picks the store
/// (`this.inner`, `this.next_replica()`) and may do something first
/// (`{ this.count(); &this.inner }`). The methods it does not name are written by hand beside
/// it or keep the trait's defaults.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use wsp_store::{FileMeta, MemoryStore, StoreFuture, WorkspaceStore, forward_store};
/// use wsp_types::{Owner, WorkspacePrefix};
///
/// /// A memory store that counts its listings.
/// struct Counted {
///     inner: MemoryStore,
///     listings: AtomicUsize,
/// }
///
/// impl WorkspaceStore for Counted {
///     forward_store!(|this| this.inner; limits, features, get, put, delete, history);
///
///     fn list<'a>(
///         &'a self,
///         owner: &'a Owner,
///         prefix: &'a WorkspacePrefix,
///     ) -> StoreFuture<'a, Vec<FileMeta>> {
///         self.listings.fetch_add(1, Ordering::Relaxed);
///         self.inner.list(owner, prefix)
///     }
/// }
/// ```
#[macro_export]
macro_rules! forward_store {
    (|$this:ident| $to:expr; $($method:ident),+ $(,)?) => {
        $($crate::forward_store!(@ $method, $this, $to);)+
    };
    (@ limits, $this:ident, $to:expr) => {
        fn limits(&self) -> $crate::Limits {
            let $this = self;
            $to.limits()
        }
    };
    (@ features, $this:ident, $to:expr) => {
        fn features(&self) -> $crate::StoreFeatures {
            let $this = self;
            $to.features()
        }
    };
    (@ ready, $this:ident, $to:expr) => {
        fn ready(&self) -> $crate::StoreFuture<'_, ()> {
            let $this = self;
            $to.ready()
        }
    };
    (@ list, $this:ident, $to:expr) => {
        fn list<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            prefix: &'a $crate::__private::WorkspacePrefix,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            $to.list(owner, prefix)
        }
    };
    (@ get, $this:ident, $to:expr) => {
        fn get<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            version: Option<u64>,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            $to.get(owner, path, version)
        }
    };
    (@ put, $this:ident, $to:expr) => {
        fn put<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            write: $crate::FileWrite,
            precondition: $crate::Precondition,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            $to.put(owner, path, write, precondition)
        }
    };
    (@ delete, $this:ident, $to:expr) => {
        fn delete<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            precondition: $crate::Precondition,
        ) -> $crate::StoreFuture<'a, $crate::Deleted> {
            let $this = self;
            $to.delete(owner, path, precondition)
        }
    };
    (@ history, $this:ident, $to:expr) => {
        fn history<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            $to.history(owner, path)
        }
    };
    (@ snapshot, $this:ident, $to:expr) => {
        fn snapshot<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            label: &'a str,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            $to.snapshot(owner, label)
        }
    };
    (@ snapshot_info, $this:ident, $to:expr) => {
        fn snapshot_info<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            id: &'a str,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            $to.snapshot_info(owner, id)
        }
    };
    (@ release_snapshot, $this:ident, $to:expr) => {
        fn release_snapshot<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            id: &'a str,
            outcome: &'a str,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            $to.release_snapshot(owner, id, outcome)
        }
    };
    (@ open_snapshots_before, $this:ident, $to:expr) => {
        fn open_snapshots_before<'a>(
            &'a self,
            cutoff: $crate::__private::DateTime<$crate::__private::Utc>,
            limit: usize,
        ) -> $crate::StoreFuture<'a, Vec<($crate::__private::Owner, $crate::SnapshotInfo)>> {
            let $this = self;
            $to.open_snapshots_before(cutoff, limit)
        }
    };
    (@ forget_released_snapshots, $this:ident, $to:expr) => {
        fn forget_released_snapshots<'a>(
            &'a self,
            cutoff: $crate::__private::DateTime<$crate::__private::Utc>,
            limit: usize,
        ) -> $crate::StoreFuture<'a, usize> {
            let $this = self;
            $to.forget_released_snapshots(cutoff, limit)
        }
    };
    (@ snapshot_usage, $this:ident, $to:expr) => {
        fn snapshot_usage<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotUsage> {
            let $this = self;
            $to.snapshot_usage(owner)
        }
    };
    (@ snapshot_within, $this:ident, $to:expr) => {
        fn snapshot_within<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            label: &'a str,
            quota: $crate::SnapshotQuota,
        ) -> $crate::StoreFuture<'a, Result<$crate::SnapshotInfo, $crate::QuotaExceeded>> {
            let $this = self;
            $to.snapshot_within(owner, label, quota)
        }
    };
    (@ list_at, $this:ident, $to:expr) => {
        fn list_at<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            snapshot: &'a str,
            prefix: &'a $crate::__private::WorkspacePrefix,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            $to.list_at(owner, snapshot, prefix)
        }
    };
    (@ get_at, $this:ident, $to:expr) => {
        fn get_at<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            snapshot: &'a str,
            path: &'a $crate::__private::WorkspacePath,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            $to.get_at(owner, snapshot, path)
        }
    };
    (@ changes, $this:ident, $to:expr) => {
        fn changes<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            after: u64,
            limit: usize,
        ) -> $crate::StoreFuture<'a, $crate::ChangePage> {
            let $this = self;
            $to.changes(owner, after, limit)
        }
    };
    (@ subscribe, $this:ident, $to:expr) => {
        fn subscribe(&self) -> Option<$crate::__private::Receiver<$crate::ChangeNotice>> {
            let $this = self;
            $to.subscribe()
        }
    };
    (@ $other:ident, $($rest:tt)*) => {
        compile_error!(concat!(
            "forward_store!: `",
            stringify!($other),
            "` is not a WorkspaceStore method"
        ));
    };
}
