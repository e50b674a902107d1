//! How PostgreSQL failures become [`StoreError`]s, and which of them are worth another try.
//!
//! Messages name the operation, the SQLSTATE and PostgreSQL's primary message only: never a
//! bound value and never the `DETAIL` line (which can quote a whole row, content included).

use std::error::Error as _;

use deadpool_postgres::{Client, Object, PoolError, TimeoutType};
use wsp_store::StoreError;

/// Tries per call: the first, and up to two more on a fresh connection.
pub(crate) const MAX_TRIES: u32 = 3;

/// Why one try of an operation failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A definite answer (not found, conflict, limit, corrupt data) returned as is.
    Answer(StoreError),
    /// A database error before `COMMIT` was sent: nothing was committed.
    Db(tokio_postgres::Error),
    /// A database error from `COMMIT` itself, or from a single statement run in autocommit:
    /// when the connection was lost, nobody knows whether it committed.
    Commit(tokio_postgres::Error),
    /// No answer within the call deadline (a dead peer or a black-holed network): the
    /// connection is in an unknown state, and so is a transaction it carried.
    NoAnswer(std::time::Duration),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Db(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Self::Answer(e)
    }
}

/// What kind of trouble a database error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// The connection is gone (closed socket, server shutdown, terminated backend).
    Lost,
    /// A serialization failure or deadlock: the transaction was rolled back, retry it.
    Contention,
    /// The statement or a lock wait hit a timeout.
    Timeout,
    /// The server cannot take work now (too many connections, out of resources, read-only).
    Overloaded,
    /// Anything else: a bug or a damaged database.
    Other,
}

fn classify(e: &tokio_postgres::Error) -> Class {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return match code {
            "40001" | "40P01" => Class::Contention,
            // query_canceled (statement_timeout), lock_not_available (lock_timeout),
            // idle_in_transaction_session_timeout.
            "57014" | "55P03" | "25P03" => Class::Timeout,
            // admin_shutdown, crash_shutdown, cannot_connect_now.
            "57P01" | "57P02" | "57P03" => Class::Lost,
            // read_only_sql_transaction: a standby after a failover.
            "25006" => Class::Overloaded,
            c if c.starts_with("08") => Class::Lost,
            c if c.starts_with("53") => Class::Overloaded,
            _ => Class::Other,
        };
    }
    let io = e
        .source()
        .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
    if e.is_closed() || io {
        Class::Lost
    } else {
        Class::Other
    }
}

/// A description of `e` that never quotes data: SQLSTATE and primary message for server errors,
/// the driver's own words (and their cause, if any) otherwise.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.code().code(), db.message());
    }
    // The driver's causes (I/O errors, type mismatches) describe, never quote, values.
    match e.source() {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// The error a call returns for `e` once it will not be tried again.
pub(crate) fn store_error(op: &str, e: tokio_postgres::Error, committing: bool) -> StoreError {
    let (retryable, reason) = match classify(&e) {
        Class::Lost if committing => (
            true,
            format!(
                "the PostgreSQL connection was lost while committing {op}; the change may or \
                 may not have been applied ({})",
                describe(&e)
            ),
        ),
        Class::Lost => (
            true,
            format!(
                "the PostgreSQL connection was lost during {op} ({})",
                describe(&e)
            ),
        ),
        Class::Timeout => (
            true,
            format!(
                "PostgreSQL did not complete {op} in time ({})",
                describe(&e)
            ),
        ),
        Class::Overloaded => (
            true,
            format!("PostgreSQL cannot serve {op} now ({})", describe(&e)),
        ),
        Class::Contention => (
            true,
            format!(
                "{op} kept colliding with concurrent transactions ({})",
                describe(&e)
            ),
        ),
        Class::Other => (false, format!("postgres {op}: {}", describe(&e))),
    };
    if retryable {
        StoreError::unavailable_from(reason, e)
    } else {
        StoreError::internal_from(reason, e)
    }
}

/// The error for a connection the pool could not hand out.
pub(crate) fn pool_error(op: &str, e: PoolError) -> StoreError {
    match e {
        PoolError::Timeout(TimeoutType::Wait) => StoreError::unavailable(format!(
            "no PostgreSQL connection became free for {op} within the acquire timeout"
        )),
        PoolError::Timeout(TimeoutType::Create) => StoreError::unavailable(format!(
            "cannot connect to PostgreSQL for {op}: the connect timeout expired"
        )),
        PoolError::Timeout(TimeoutType::Recycle) => StoreError::unavailable(format!(
            "cannot reuse a PostgreSQL connection for {op}: the check timed out"
        )),
        PoolError::Backend(e) => StoreError::unavailable_from(
            format!("cannot connect to PostgreSQL for {op} ({})", describe(&e)),
            e,
        ),
        PoolError::Closed => {
            StoreError::unavailable(format!("the PostgreSQL store was closed before {op}"))
        }
        PoolError::NoRuntimeSpecified => {
            StoreError::internal(format!("postgres {op}: the pool has no runtime"))
        }
        PoolError::PostCreateHook(e) => StoreError::unavailable(format!(
            "cannot prepare a PostgreSQL connection for {op} ({e})"
        )),
    }
}

/// The tries of one call: decides, after each failure, whether another try is safe and useful.
#[derive(Debug)]
pub(crate) struct Attempts {
    op: &'static str,
    writes: bool,
    tries: u32,
}

impl Attempts {
    /// The tries of a reading operation `op` (named in error messages).
    pub(crate) fn read(op: &'static str) -> Self {
        Self {
            op,
            writes: false,
            tries: 0,
        }
    }

    /// The tries of a writing operation `op`.
    pub(crate) fn write(op: &'static str) -> Self {
        Self {
            op,
            writes: true,
            tries: 0,
        }
    }

    /// The operation's name.
    pub(crate) fn op(&self) -> &'static str {
        self.op
    }

    /// After a failed try on `client`: `Ok(())` to try again on another connection, or the
    /// error to return. A lost connection is removed from the pool so nobody gets it again.
    ///
    /// Another try happens only when the failed one certainly did not commit: a lost
    /// connection before `COMMIT` was sent, or a serialization failure or deadlock (rolled
    /// back by the server). A try that got no answer in time is not repeated: the database is
    /// probably unreachable, and another try would only double the wait.
    pub(crate) fn again(&mut self, failure: Failure, client: Client) -> Result<(), StoreError> {
        self.tries += 1;
        let (error, committing) = match failure {
            Failure::Answer(e) => return Err(e),
            Failure::Db(e) => (e, false),
            Failure::Commit(e) => (e, true),
            Failure::NoAnswer(waited) => {
                drop(Object::take(client));
                let outcome = if self.writes {
                    "; the change may or may not have been applied"
                } else {
                    ""
                };
                return Err(StoreError::unavailable(format!(
                    "PostgreSQL did not answer {} within {} ms, so its connection was \
                     dropped{outcome}",
                    self.op,
                    waited.as_millis()
                )));
            }
        };
        let class = classify(&error);
        if class == Class::Lost {
            drop(Object::take(client));
        }
        let retry = match class {
            Class::Lost => !committing,
            Class::Contention => true,
            _ => false,
        };
        if retry && self.tries < MAX_TRIES {
            Ok(())
        } else {
            Err(store_error(self.op, error, committing))
        }
    }
}
