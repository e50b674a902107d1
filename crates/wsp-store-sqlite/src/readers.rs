//! A fixed set of read-only connections, each lent to one read at a time.
//!
//! A read first takes a permit (asynchronously, so a read waiting for a connection holds no
//! thread), then borrows an idle connection on the blocking pool. There are as many permits as
//! connections, so a permit holder always finds one idle. In WAL mode each connection reads a
//! committed snapshot without waiting for the writer; the only state reads share is this pool's
//! `Vec` pop and push.

use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wsp_store::StoreError;

/// Read-only connections and the permits that ration them.
pub(crate) struct ReaderPool {
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl ReaderPool {
    /// A pool of the given (already opened) connections.
    pub(crate) fn new(connections: Vec<Connection>) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(connections.len())),
            idle: Mutex::new(connections),
        }
    }

    /// Waits until a connection is free and reserves it.
    pub(crate) async fn permit(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::unavailable("the sqlite reader pool is closed"))
    }

    /// Reserves a connection if one is free now.
    pub(crate) fn try_permit(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.permits).try_acquire_owned().ok()
    }

    /// Runs `read` on the connection `permit` reserved. The connection goes back to the pool
    /// even if `read` panics.
    pub(crate) fn with<T>(
        &self,
        permit: OwnedSemaphorePermit,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .ok_or_else(|| StoreError::internal("a reader permit found no connection"))?;
        let lease = Lease {
            pool: self,
            conn: Some(conn),
            _permit: permit,
        };
        match &lease.conn {
            Some(conn) => read(conn),
            None => Err(StoreError::internal("a lease lost its connection")),
        }
    }
}

/// A borrowed connection; dropping it returns the connection, then releases the permit.
struct Lease<'p> {
    pool: &'p ReaderPool,
    conn: Option<Connection>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: usize) -> Arc<ReaderPool> {
        Arc::new(ReaderPool::new(
            (0..n)
                .map(|_| Connection::open_in_memory().unwrap())
                .collect(),
        ))
    }

    fn idle(pool: &ReaderPool) -> usize {
        pool.idle.lock().unwrap().len()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_returns_after_use_and_after_a_panic() {
        let pool = pool(2);
        let permit = pool.permit().await.unwrap();
        let one: i64 = pool
            .with(permit, |c| {
                c.query_row("SELECT 1", [], |r| r.get(0))
                    .map_err(|e| StoreError::internal(e.to_string()))
            })
            .unwrap();
        assert_eq!(one, 1);
        assert_eq!(idle(&pool), 2);
        let permit = pool.permit().await.unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.with(permit, |_| -> Result<(), StoreError> {
                panic!("reader failed")
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(
            idle(&pool),
            2,
            "the panicking reader's connection came back"
        );
        assert_eq!(pool.permits.available_permits(), 2, "and its permit");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_is_taken_at_once_only_when_one_is_free() {
        let pool = pool(1);
        let held = pool.try_permit().expect("one is free");
        assert!(pool.try_permit().is_none(), "none is free while it is held");
        drop(held);
        assert!(pool.try_permit().is_some());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_reader_waits_for_a_free_connection() {
        let pool = pool(1);
        let held = pool.permit().await.unwrap();
        let waiting = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let permit = pool.permit().await.unwrap();
                pool.with(permit, |c| Ok(c.is_autocommit()))
            })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no connection is free yet");
        drop(held);
        assert_eq!(waiting.await.unwrap(), Ok(true));
        assert_eq!(idle(&pool), 1);
    }
}
