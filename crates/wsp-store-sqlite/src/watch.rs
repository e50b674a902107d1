//! Notices of changes that other processes commit to the same database file.
//!
//! This store commits only through its writer connection, and `PRAGMA data_version` on a
//! connection changes only when another connection commits: on the writer, a change means
//! another process (or another `SqliteStore` on the same file) wrote. While anyone subscribes,
//! a watcher task checks it every [`WATCH_INTERVAL`]; when it moved, the watcher reads every
//! owner's change sequence and announces the owners whose sequence passed what this store last
//! announced. It holds the writer lock while it does, so notices still arrive in sequence
//! order per owner.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rusqlite::Connection;
use wsp_store::{ChangeNotice, StoreError};
use wsp_types::Owner;

use crate::files::sqlite_error;
use crate::{Shared, blocking};

/// How often the watcher looks for commits of other processes.
pub(crate) const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// The last sequence number announced per owner, and the writer's last `data_version`.
#[derive(Debug, Default)]
pub(crate) struct Announced {
    seq: HashMap<Owner, u64>,
    data_version: Option<i64>,
}

impl Announced {
    /// Records a notice this store sent for its own commit.
    pub(crate) fn own(&mut self, owner: &Owner, seq: u64) {
        let last = self.seq.entry(owner.clone()).or_default();
        *last = (*last).max(seq);
    }
}

/// Starts the watcher unless it runs already (and only inside a Tokio runtime). Called after
/// subscribing, so a watcher about to stop for want of subscribers sees the new one.
pub(crate) fn ensure_watching(shared: &Arc<Shared>) {
    let mut task = shared.watcher.lock().unwrap_or_else(|e| e.into_inner());
    // A finished task: it stopped, or the runtime it ran on is gone.
    if task.as_ref().is_some_and(|t| !t.is_finished()) {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        *task = Some(runtime.spawn(watch(Arc::downgrade(shared))));
    }
}

/// Checks for foreign commits until the store is dropped or nobody subscribes.
async fn watch(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(WATCH_INTERVAL).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        {
            // Under the lock `ensure_watching` takes after a subscriber subscribed: either the
            // subscriber is counted here, or it finds this task gone and starts another.
            let mut task = shared.watcher.lock().unwrap_or_else(|e| e.into_inner());
            if shared.notices.receiver_count() == 0 {
                task.take();
                return;
            }
        }
        let conn = Arc::clone(&shared.writer).lock_owned().await;
        let for_check = Arc::clone(&shared);
        let checked = blocking(move || {
            let mut announced = for_check
                .announced
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            check(&conn, &mut announced, |notice| {
                // No receiver is fine: the last subscriber just left.
                let _ = for_check.notices.send(notice);
            })
        })
        .await;
        if let Err(e) = checked {
            tracing::warn!(error = %e, "watching for other processes' commits failed; retrying");
        }
    }
}

/// One check: when `data_version` moved (or on the first check), announces every owner whose
/// sequence passed the last announced one. The first check announces too: a commit of another
/// process made after the first subscriber subscribed, but before the watcher first looked,
/// must be heard of. (Owners that only other processes wrote since this store opened get one
/// notice each then; a notice is a wake-up call, so one too many costs a feed read.)
fn check(
    conn: &Connection,
    announced: &mut Announced,
    mut announce: impl FnMut(ChangeNotice),
) -> Result<(), StoreError> {
    let fail = |e| sqlite_error("watch for other processes' commits", e);
    let version: i64 = conn
        .query_row("PRAGMA data_version", [], |row| row.get(0))
        .map_err(fail)?;
    if announced.data_version == Some(version) {
        return Ok(());
    }
    announced.data_version = Some(version);
    let mut stmt = conn
        .prepare_cached("SELECT tenant, workspace, seq FROM owners")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (tenant, workspace, seq) = row.map_err(fail)?;
        let Ok(owner) = Owner::parse(&tenant, &workspace) else {
            continue;
        };
        let seq = seq as u64;
        if announced.seq.get(&owner).is_some_and(|&last| seq <= last) {
            continue;
        }
        announced.seq.insert(owner.clone(), seq);
        announce(ChangeNotice { owner, seq });
    }
    Ok(())
}
