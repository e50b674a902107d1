//! Read-modify-write of one workspace file that never loses a concurrent writer's change.

use std::time::Duration;

use wsp_store::{FileWrite, Precondition, StoreError, StoredFile, WorkspaceStore};
use wsp_types::{Owner, WorkspacePath};

/// How a conditional update retries when another writer got there first.
///
/// The pauses use Tokio's timer: the runtime needs its time driver (`enable_time`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Pause after the first conflict; doubles after each further one, with jitter.
    pub initial_backoff: Duration,
    /// Longest pause.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 200 attempts, 1 ms doubling to at most 50 ms.
    fn default() -> Self {
        Self {
            max_attempts: 200,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(50),
        }
    }
}

impl RetryPolicy {
    /// The pause after failed attempt `attempt` (1-based): exponential, capped, with full
    /// jitter so that racing writers spread out. Public so that a caller running its own
    /// conditional loop (over another file API) pauses the same way.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .initial_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20))
            .min(self.max_backoff);
        let mut buf = [0u8; 4];
        if getrandom::fill(&mut buf).is_err() {
            return exp;
        }
        let fraction = f64::from(u32::from_le_bytes(buf)) / f64::from(u32::MAX);
        exp.mul_f64(fraction)
    }
}

/// Options of a write through the memory log or the session index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Who writes, recorded as the version's author.
    pub author: Option<String>,
    /// Retries on conflict.
    pub retry: RetryPolicy,
}

impl WriteOptions {
    /// This configuration with [`WriteOptions::author`] set.
    pub fn with_author(mut self, author: Option<String>) -> Self {
        self.author = author;
        self
    }

    /// This configuration with [`WriteOptions::retry`] set.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// Why an update of the memory log or the session index failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The store refused or failed (`TooLarge` when the file would exceed the store's limit).
    #[error(transparent)]
    Store(StoreError),
    /// Other writers won every attempt.
    #[error("{path} kept changing under {attempts} attempts; try again")]
    Contended {
        /// The file.
        path: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The input cannot be written (a line with a line break, a bad agent id, ...).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The stored file is not what it should be (a session index that is not its JSON).
    #[error("{path} cannot be updated: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The outcome of a successful update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// The stored version.
    pub file: StoredFile,
    /// Attempts it took (1 when nobody raced).
    pub attempts: u32,
}

/// Reads `path`, computes its new content with `change` (given the current content, `None`
/// when there is no live file), and writes it only if the file is still what was read:
/// `If-Match` on the etag read, or `If-None-Match: *` to create. On a conflict it reads again
/// and calls `change` again, so a concurrent writer's change is never overwritten.
pub(crate) async fn update_file<F>(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    path: &WorkspacePath,
    content_type: &'static str,
    options: &WriteOptions,
    mut change: F,
) -> Result<Updated, WriteError>
where
    F: FnMut(Option<&str>) -> Result<String, WriteError>,
{
    let attempts = options.retry.max_attempts.max(1);
    for attempt in 1..=attempts {
        let current = match store.get(owner, path, None).await {
            Ok(file) => Some(file),
            Err(StoreError::NotFound) => None,
            Err(StoreError::Unavailable { .. }) if attempt < attempts => {
                tokio::time::sleep(options.retry.backoff(attempt)).await;
                continue;
            }
            Err(e) => return Err(WriteError::Store(e)),
        };
        if let Some(file) = current.as_ref().filter(|f| f.meta.encoding.is_binary()) {
            return Err(WriteError::Corrupt {
                path: path.to_string(),
                reason: format!(
                    "it holds bytes ({}, written with contentEncoding base64), not text",
                    file.meta.content_type
                ),
            });
        }
        let content = change(current.as_ref().map(|f| f.content.as_str()))?;
        let precondition = match &current {
            Some(file) => Precondition::IfMatch(vec![file.meta.etag.clone()]),
            None => Precondition::IfNoneMatchAny,
        };
        let mut write = FileWrite::text(content, wsp_types::MediaType::from_static(content_type));
        write.author = options.author.clone();
        match store.put(owner, path, write, precondition).await {
            Ok(file) => {
                return Ok(Updated {
                    file,
                    attempts: attempt,
                });
            }
            // Not `Unavailable`: the write may have committed, and writing again could repeat it.
            Err(StoreError::Conflict { .. }) => {
                if attempt < attempts {
                    tokio::time::sleep(options.retry.backoff(attempt)).await;
                }
            }
            Err(e) => return Err(WriteError::Store(e)),
        }
    }
    Err(WriteError::Contended {
        path: path.to_string(),
        attempts,
    })
}
