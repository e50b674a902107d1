//! Group commit: the writes and deletes that arrive while a commit is in flight share the next
//! transaction, and so its one `COMMIT` (one WAL flush on the server).
//!
//! Writers of one owner are serialized by the owner row's lock, which a transaction holds until
//! it commits; with a transaction per write, one owner's writes could not go faster than one
//! commit (a WAL flush) each. Here one task per store takes every waiting change (up to
//! [`MAX_BATCH`]), applies each in a savepoint of its own (a refused or failed change is rolled
//! back alone: its neighbours keep their outcomes), commits once, and only then answers the
//! callers and tells subscribers. A caller that stops waiting stops nothing: the task commits
//! the change anyway.
//!
//! Changes are applied grouped by owner, owners in one fixed order (each owner's changes keep
//! their order of arrival), so two replicas' transactions always take owner locks in the same
//! order and cannot deadlock on them. When the transaction itself breaks (a lost connection
//! before `COMMIT`, a deadlock), the whole batch is tried again on a fresh connection, as a
//! single write was.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};
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

/// The queue of a store's writer: hands changes to its task.
pub(crate) struct Writer {
    queue: mpsc::UnboundedSender<Change>,
    /// Told of every commit (a host's metrics), once set.
    pub(crate) commits: OnceLock<Arc<dyn CommitObserver>>,
}

impl Writer {
    /// A writer and the receiving end its task drains ([`run`]).
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<Change>) {
        let (queue, rx) = mpsc::unbounded_channel();
        (
            Self {
                queue,
                commits: OnceLock::new(),
            },
            rx,
        )
    }

    /// Queues `change`; `false` when the task has stopped (the runtime is shutting down).
    pub(crate) fn send(&self, change: Change) -> bool {
        self.queue.send(change).is_ok()
    }
}

/// The answer a caller gets when the writer's task is gone.
pub(crate) fn stopped() -> StoreError {
    StoreError::unavailable("the PostgreSQL writer has stopped (the store is shutting down)")
}

/// The writer's task: commits what waits, a batch at a time, until the store is dropped.
pub(crate) async fn run(store: Weak<Inner>, mut queue: mpsc::UnboundedReceiver<Change>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let Some(inner) = store.upgrade() else { return };
        // Grouped by owner in one fixed order; a stable sort keeps each owner's order.
        batch.sort_by(|a: &Change, b: &Change| a.owner.cmp(&b.owner));
        commit(&inner, &batch).await.settle(&inner, batch.drain(..));
    }
}

/// What one batch came to: each change's outcome, or the failure of the whole transaction.
struct Committed(Result<Vec<Outcome>, StoreError>);

/// Applies every change of `batch` in one transaction and commits it, tried again as a whole
/// on another connection when the transaction broke before `COMMIT`.
async fn commit(inner: &Inner, batch: &[Change]) -> Committed {
    let attempts = Attempts::write("write");
    Committed(retrying!(inner.db, attempts, |client| async {
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
    }))
}

impl Committed {
    /// Answers every caller and, for the changes that committed, tells subscribers (after the
    /// commit, in order).
    fn settle(self, inner: &Inner, batch: impl Iterator<Item = Change>) {
        let outcomes = match self.0 {
            Ok(outcomes) => outcomes,
            Err(e) => {
                for change in batch {
                    change.kind.fail(e.clone());
                }
                return;
            }
        };
        for (change, outcome) in batch.zip(outcomes) {
            if let Some(seq) = outcome.seq() {
                inner.notify(&change.owner, seq);
            }
            // A caller may have stopped waiting; its change stands either way.
            match (change.kind, outcome) {
                (Kind::Put { write, reply, .. }, Outcome::Put(own)) => {
                    let _ = reply.send(
                        own.map(|w| w.decided.stored_file(&change.path, write, w.updated_at)),
                    );
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
