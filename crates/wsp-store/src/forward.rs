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
/// `forward_store!(|this| EXPR, |op, call| WRAP; method, ...)` does the same for the methods
/// that return a future, then returns `WRAP` instead, in which `op` is the method's name
/// (`"get"`) and `call` the future of the forwarded call: a layer times or counts every call
/// in one place (`limits`, `features` and `subscribe` are forwarded as they are).
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
        $($crate::forward_store!(@ $method, $this, $to, _op, call, call);)+
    };
    (|$this:ident| $to:expr, |$op:ident, $call:ident| $wrap:expr; $($method:ident),+ $(,)?) => {
        $($crate::forward_store!(@ $method, $this, $to, $op, $call, $wrap);)+
    };
    (@ limits, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn limits(&self) -> $crate::Limits {
            let $this = self;
            $to.limits()
        }
    };
    (@ features, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn features(&self) -> $crate::StoreFeatures {
            let $this = self;
            $to.features()
        }
    };
    (@ ready, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn ready(&self) -> $crate::StoreFuture<'_, ()> {
            let $this = self;
            let $op = "ready";
            let $call = $to.ready();
            $wrap
        }
    };
    (@ list, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn list<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            prefix: &'a $crate::__private::WorkspacePrefix,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            let $op = "list";
            let $call = $to.list(owner, prefix);
            $wrap
        }
    };
    (@ get, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn get<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            version: Option<u64>,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            let $op = "get";
            let $call = $to.get(owner, path, version);
            $wrap
        }
    };
    (@ put, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn put<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            write: $crate::FileWrite,
            precondition: $crate::Precondition,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            let $op = "put";
            let $call = $to.put(owner, path, write, precondition);
            $wrap
        }
    };
    (@ delete, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn delete<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
            precondition: $crate::Precondition,
        ) -> $crate::StoreFuture<'a, $crate::Deleted> {
            let $this = self;
            let $op = "delete";
            let $call = $to.delete(owner, path, precondition);
            $wrap
        }
    };
    (@ history, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn history<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            path: &'a $crate::__private::WorkspacePath,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            let $op = "history";
            let $call = $to.history(owner, path);
            $wrap
        }
    };
    (@ snapshot, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn snapshot<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            label: &'a $crate::SnapshotLabel,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            let $op = "snapshot";
            let $call = $to.snapshot(owner, label);
            $wrap
        }
    };
    (@ snapshot_info, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn snapshot_info<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            id: &'a $crate::SnapshotId,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            let $op = "snapshot_info";
            let $call = $to.snapshot_info(owner, id);
            $wrap
        }
    };
    (@ list_snapshots, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn list_snapshots<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            after: Option<&'a $crate::SnapshotCursor>,
            limit: usize,
        ) -> $crate::StoreFuture<'a, Vec<$crate::SnapshotInfo>> {
            let $this = self;
            let $op = "list_snapshots";
            let $call = $to.list_snapshots(owner, after, limit);
            $wrap
        }
    };
    (@ release_snapshot, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn release_snapshot<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            id: &'a $crate::SnapshotId,
            outcome: &'a str,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotInfo> {
            let $this = self;
            let $op = "release_snapshot";
            let $call = $to.release_snapshot(owner, id, outcome);
            $wrap
        }
    };
    (@ open_snapshots_before, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn open_snapshots_before<'a>(
            &'a self,
            cutoff: $crate::__private::DateTime<$crate::__private::Utc>,
            limit: usize,
        ) -> $crate::StoreFuture<'a, Vec<($crate::__private::Owner, $crate::SnapshotInfo)>> {
            let $this = self;
            let $op = "open_snapshots_before";
            let $call = $to.open_snapshots_before(cutoff, limit);
            $wrap
        }
    };
    (@ count_open_snapshots, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn count_open_snapshots(&self) -> $crate::StoreFuture<'_, u64> {
            let $this = self;
            let $op = "count_open_snapshots";
            let $call = $to.count_open_snapshots();
            $wrap
        }
    };
    (@ forget_released_snapshots, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn forget_released_snapshots<'a>(
            &'a self,
            cutoff: $crate::__private::DateTime<$crate::__private::Utc>,
            limit: usize,
        ) -> $crate::StoreFuture<'a, usize> {
            let $this = self;
            let $op = "forget_released_snapshots";
            let $call = $to.forget_released_snapshots(cutoff, limit);
            $wrap
        }
    };
    (@ snapshot_usage, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn snapshot_usage<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
        ) -> $crate::StoreFuture<'a, $crate::SnapshotUsage> {
            let $this = self;
            let $op = "snapshot_usage";
            let $call = $to.snapshot_usage(owner);
            $wrap
        }
    };
    (@ snapshot_within, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn snapshot_within<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            label: &'a $crate::SnapshotLabel,
            quota: $crate::SnapshotQuota,
        ) -> $crate::StoreFuture<'a, Result<$crate::SnapshotInfo, $crate::QuotaExceeded>> {
            let $this = self;
            let $op = "snapshot_within";
            let $call = $to.snapshot_within(owner, label, quota);
            $wrap
        }
    };
    (@ list_at, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn list_at<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            snapshot: &'a $crate::SnapshotId,
            prefix: &'a $crate::__private::WorkspacePrefix,
        ) -> $crate::StoreFuture<'a, Vec<$crate::FileMeta>> {
            let $this = self;
            let $op = "list_at";
            let $call = $to.list_at(owner, snapshot, prefix);
            $wrap
        }
    };
    (@ get_at, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn get_at<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            snapshot: &'a $crate::SnapshotId,
            path: &'a $crate::__private::WorkspacePath,
        ) -> $crate::StoreFuture<'a, $crate::StoredFile> {
            let $this = self;
            let $op = "get_at";
            let $call = $to.get_at(owner, snapshot, path);
            $wrap
        }
    };
    (@ changes, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn changes<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            after: u64,
            limit: usize,
        ) -> $crate::StoreFuture<'a, $crate::ChangePage> {
            let $this = self;
            let $op = "changes";
            let $call = $to.changes(owner, after, limit);
            $wrap
        }
    };
    (@ search, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
        fn search<'a>(
            &'a self,
            owner: &'a $crate::__private::Owner,
            query: &'a $crate::SearchQuery,
        ) -> $crate::StoreFuture<'a, $crate::SearchResults> {
            let $this = self;
            let $op = "search";
            let $call = $to.search(owner, query);
            $wrap
        }
    };
    (@ subscribe, $this:ident, $to:expr, $op:ident, $call:ident, $wrap:expr) => {
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
