//! Bounds on what an owner's open snapshots may hold: how many are open, and how many bytes of
//! old versions they keep that pruning would otherwise have freed.
//!
//! An open snapshot keeps, for each path, the row it sees. While that row is also among the
//! newest `max_versions` versions of the path's live life, history keeps it anyway and the
//! snapshot costs nothing; once later writes push it out of that window, only the snapshot
//! keeps it. Those are the *pinned* bytes: without a bound, taking a snapshot between every
//! two writes grows storage without limit whatever `max_versions` says.

/// What an owner's open snapshots hold right now ([`crate::WorkspaceStore::snapshot_usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotUsage {
    /// Open (unreleased) snapshots of the owner.
    pub open: u64,
    /// Content bytes of the versions that an open snapshot sees and that nothing else keeps:
    /// not the path's newest row, and not among the newest `max_versions` versions of its
    /// live life. Each such version counts once, however many snapshots see it.
    pub pinned_bytes: u64,
}

/// Ceilings on [`SnapshotUsage`] that a new snapshot must respect
/// ([`crate::WorkspaceStore::snapshot_within`]).
///
/// ```
/// use wsp_store::{QuotaExceeded, SnapshotQuota, SnapshotUsage};
/// let quota = SnapshotQuota { max_open: 2, max_pinned_bytes: 100 };
/// assert_eq!(quota.admits(SnapshotUsage { open: 1, pinned_bytes: 100 }), Ok(()));
/// assert_eq!(
///     quota.admits(SnapshotUsage { open: 2, pinned_bytes: 0 }),
///     Err(QuotaExceeded::OpenSnapshots { open: 2, max: 2 })
/// );
/// assert_eq!(
///     quota.admits(SnapshotUsage { open: 0, pinned_bytes: 101 }),
///     Err(QuotaExceeded::PinnedBytes { pinned: 101, max: 100 })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotQuota {
    /// Most open snapshots per owner: a new one is refused when this many are open.
    pub max_open: u64,
    /// Most pinned bytes per owner: a new snapshot is refused while more than this is pinned.
    /// Writes are never refused for it; releasing snapshots brings it down.
    pub max_pinned_bytes: u64,
}

impl SnapshotQuota {
    /// No bound at all.
    pub const UNBOUNDED: SnapshotQuota = SnapshotQuota {
        max_open: u64::MAX,
        max_pinned_bytes: u64::MAX,
    };

    /// Whether one more snapshot may be taken with `usage` as it is; the open count is
    /// checked first.
    pub fn admits(&self, usage: SnapshotUsage) -> Result<(), QuotaExceeded> {
        if usage.open >= self.max_open {
            return Err(QuotaExceeded::OpenSnapshots {
                open: usage.open,
                max: self.max_open,
            });
        }
        if usage.pinned_bytes > self.max_pinned_bytes {
            return Err(QuotaExceeded::PinnedBytes {
                pinned: usage.pinned_bytes,
                max: self.max_pinned_bytes,
            });
        }
        Ok(())
    }
}

/// Why [`crate::WorkspaceStore::snapshot_within`] took no snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    /// The owner already has `max` open snapshots.
    #[error("{open} snapshots are open, the most allowed is {max}")]
    OpenSnapshots {
        /// Open snapshots of the owner.
        open: u64,
        /// The ceiling.
        max: u64,
    },
    /// The owner's open snapshots pin more than `max` bytes.
    #[error("open snapshots pin {pinned} bytes of old versions, over the quota of {max}")]
    PinnedBytes {
        /// Pinned bytes of the owner.
        pinned: u64,
        /// The ceiling.
        max: u64,
    },
}
