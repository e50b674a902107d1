//! Group commit: the writes and deletes of one owner that arrive while a commit of that owner
//! is in flight share the next transaction, and so its one `COMMIT` (one WAL flush on the
//! server).
//!
//! Writers of one owner are serialized by the owner row's lock, which a transaction holds until
//! it commits; with a transaction per write, one owner's writes could not go faster than one
//! commit (a WAL flush) each. Here each owner with changes waiting has one task that takes
//! them all (up to [`MAX_BATCH`]), applies each in a savepoint of its own (a refused or failed
//! change is rolled back alone: its neighbours keep their outcomes), commits once, and only
//! then answers the callers and tells subscribers; then takes what arrived meanwhile, and ends
//! when nothing waits. Owners never share a transaction, so one owner's wait (its row locked by
//! another replica, say) never holds up another's writes, and a transaction locks one owner
//! row only, so replicas cannot deadlock on owner rows. A caller that stops waiting stops
//! nothing: the task commits the change anyway. When the transaction itself breaks (a lost
//! connection before `COMMIT`, a deadlock), the whole batch is tried again on a fresh
//! connection, as a single write was.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use tokio::sync::oneshot;
use wsp_store::{CommitObserver, Deleted, FileWrite, Precondition, StoreError, StoredFile};
use wsp_types::{Owner, WorkspacePath};

use crate::failure::{Attempts, Failure};
use crate::files::{self, Own, Written};
use crate::{Inner, retrying};

/// Most changes one transaction holds.
pub(crate) const MAX_BATCH: usize = 128;

/// A write or delete waiting for the next commit, with the caller's answer.
pub(crate) struct Change {
    pub(crate) owner: Owner,
    pub(crate) path: WorkspacePath,
    pub(crate) kind: Kind,
}

/// What a [`Change`] does, and where its outcome goes.
pub(crate) enum Kind {
    /// Create or replace the file.
    Put {
        write: FileWrite,
        precondition: Precondition,
        reply: oneshot::Sender<Result<StoredFile, StoreError>>,
    },
    /// Delete the live file.
    Delete {
        precondition: Precondition,
        reply: oneshot::Sender<Result<Deleted, StoreError>>,
    },
}

/// One change's outcome before the commit: kept until the commit says whether it stands.
enum Outcome {
    Put(Own<Written>),
    Delete(Own<(Deleted, u64)>),
}

impl Outcome {
    /// The sequence number a change that applied took.
    fn seq(&self) -> Option<u64> {
        match self {
            Outcome::Put(Ok(w)) => Some(w.seq),
            Outcome::Delete(Ok((_, seq))) => Some(*seq),
            _ => None,
        }
    }
}

/// The waiting changes of a store, by owner: an owner has an entry while its task runs.
pub(crate) struct Writer {
    queues: Mutex<HashMap<Owner, Vec<Change>>>,
    store: Weak<Inner>,
    /// Told of every commit (a host's metrics), once set.
    pub(crate) commits: OnceLock<Arc<dyn CommitObserver>>,
}

impl Writer {
    /// The writer of the store `store` points to (made with the store, `Arc::new_cyclic`).
    pub(crate) fn new(store: Weak<Inner>) -> Self {
        Self {
            queues: Mutex::default(),
            store,
            commits: OnceLock::new(),
        }
    }

    /// Queues `change`, starting its owner's task when none runs; `false` when no task can
    /// start (no runtime: the store is shutting down).
    pub(crate) fn send(&self, change: Change) -> bool {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        match queues.entry(change.owner.clone()) {
            // Its task takes it with the next batch.
            Entry::Occupied(mut waiting) => waiting.get_mut().push(change),
            Entry::Vacant(slot) => {
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return false;
                };
                let owner = slot.key().clone();
                slot.insert(vec![change]);
                runtime.spawn(drain(self.store.clone(), owner));
            }
        }
        true
    }

    /// Up to [`MAX_BATCH`] of `owner`'s waiting changes, oldest first; none (and the owner's
    /// entry removed, so the next change starts a new task) when nothing waits.
    fn take(&self, owner: &Owner) -> Vec<Change> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let Some(waiting) = queues.get_mut(owner) else {
            return Vec::new();
        };
        if waiting.is_empty() {
            queues.remove(owner);
            return Vec::new();
        }
        let n = waiting.len().min(MAX_BATCH);
        waiting.drain(..n).collect()
    }
}

/// The answer a caller gets when the writer's task is gone.
pub(crate) fn stopped() -> StoreError {
    StoreError::unavailable("the PostgreSQL writer has stopped (the store is shutting down)")
}

/// One owner's task: commits what waits for the owner, a batch at a time, until nothing does
/// (or the store was dropped: the callers then hear that the writer stopped).
async fn drain(store: Weak<Inner>, owner: Owner) {
    let mut running = Running {
        store: store.clone(),
        owner: owner.clone(),
        done: false,
    };
    loop {
        let Some(inner) = store.upgrade() else { break };
        let batch = inner.writer.take(&owner);
        if batch.is_empty() {
            break;
        }
        let committed = commit(&inner, &batch).await;
        settle(&inner, committed, batch);
    }
    running.done = true;
}

/// An owner's running task. Should the task end any other way than by finding nothing to do
/// (a panic), this removes the owner's entry on its way out: the changes still waiting are
/// answered that the writer stopped, and the owner's next change starts a new task.
struct Running {
    store: Weak<Inner>,
    owner: Owner,
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(inner) = self.store.upgrade() {
            let mut queues = inner
                .writer
                .queues
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            queues.remove(&self.owner);
        }
    }
}

/// Applies every change of `batch` in one transaction and commits it, tried again as a whole
/// on another connection when the transaction broke before `COMMIT`.
/// Each change's outcome, or the failure of the whole transaction.
async fn commit(inner: &Inner, batch: &[Change]) -> Result<Vec<Outcome>, StoreError> {
    let attempts = Attempts::write("write");
    retrying!(inner.db, attempts, |client| async {
        let tx = client.transaction().await?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for change in batch {
            let (owner, path) = (&change.owner, &change.path);
            outcomes.push(match &change.kind {
                Kind::Put {
                    write,
                    precondition,
                    ..
                } => Outcome::Put(
                    files::put(
                        &tx,
                        &inner.sql,
                        &inner.limits,
                        inner.retention,
                        owner,
                        path,
                        write,
                        precondition,
                    )
                    .await?,
                ),
                Kind::Delete { precondition, .. } => Outcome::Delete(
                    files::delete(&tx, &inner.sql, inner.retention, owner, path, precondition)
                        .await?,
                ),
            });
        }
        let committing = Instant::now();
        tx.commit().await.map_err(Failure::Commit)?;
        let applied = outcomes.iter().filter(|o| o.seq().is_some()).count();
        if let Some(observer) = inner.writer.commits.get()
            && applied > 0
        {
            observer.committed(applied, committing.elapsed());
        }
        Ok::<_, Failure>(outcomes)
    })
}

/// Answers every caller of `batch` and, for the changes that committed, tells subscribers
/// (after the commit, in order).
fn settle(inner: &Inner, committed: Result<Vec<Outcome>, StoreError>, batch: Vec<Change>) {
    let outcomes = match committed {
        Ok(outcomes) => outcomes,
        Err(e) => {
            for change in batch {
                change.kind.fail(e.clone());
            }
            return;
        }
    };
    for (change, outcome) in batch.into_iter().zip(outcomes) {
        if let Some(seq) = outcome.seq() {
            inner.notify(&change.owner, seq);
        }
        // A caller may have stopped waiting; its change stands either way.
        match (change.kind, outcome) {
            (Kind::Put { write, reply, .. }, Outcome::Put(own)) => {
                let _ = reply
                    .send(own.map(|w| w.decided.stored_file(&change.path, write, w.updated_at)));
            }
            (Kind::Delete { reply, .. }, Outcome::Delete(own)) => {
                let _ = reply.send(own.map(|(deleted, _)| deleted));
            }
            (kind, _) => kind.fail(StoreError::internal(
                "postgres group commit: an outcome does not match its change",
            )),
        }
    }
}

impl Kind {
    /// Answers this change's caller with `error`.
    fn fail(self, error: StoreError) {
        match self {
            Kind::Put { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Kind::Delete { reply, .. } => {
                let _ = reply.send(Err(error));
            }
        }
    }
}
