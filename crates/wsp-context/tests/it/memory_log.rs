//! The daily memory log: concurrent appenders never lose a line.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::NaiveDate;
use wsp_context::{WriteError, WriteOptions, append_memory_line, memory_log_path};
use wsp_store::{FileWrite, Limits, MemoryStore, Precondition, StoreError, WorkspaceStore};

use crate::support::{YieldingStore, owner, put_all};

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 7).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appenders_never_lose_a_line() {
    let store: Arc<dyn WorkspaceStore> = Arc::new(YieldingStore::default());
    let (writers, lines) = (24, 20);
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut max_attempts = 0;
                for l in 0..lines {
                    let line = format!("writer {w:02} fact {l:02}");
                    let done = append_memory_line(
                        store.as_ref(),
                        &owner(),
                        day(),
                        &line,
                        &WriteOptions::default(),
                    )
                    .await
                    .unwrap();
                    max_attempts = max_attempts.max(done.attempts);
                }
                max_attempts
            })
        })
        .collect();
    let mut contended = false;
    for t in tasks {
        contended |= t.await.unwrap() > 1;
    }
    let file = store
        .get(&owner(), &memory_log_path(day()), None)
        .await
        .unwrap();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for line in file.content.lines() {
        *seen.entry(line).or_default() += 1;
    }
    assert_eq!(seen.len(), writers * lines);
    for w in 0..writers {
        for l in 0..lines {
            let line = format!("writer {w:02} fact {l:02}");
            assert_eq!(seen.get(line.as_str()), Some(&1), "{line}");
        }
    }
    assert!(file.content.ends_with('\n'));
    assert_eq!(file.meta.version, (writers * lines) as u64);
    // The writers raced: some append needed more than one attempt.
    assert!(
        contended,
        "no append ever conflicted; the test did not race"
    );
}

#[tokio::test]
async fn appends_keep_earlier_lines_and_end_every_line() {
    let store = MemoryStore::default();
    put_all(
        &store,
        &[("memory/2025-03-07.md", "written by hand, no newline")],
    )
    .await;
    let done = append_memory_line(&store, &owner(), day(), "next", &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(done.file.content, "written by hand, no newline\nnext\n");
    assert_eq!(done.file.meta.path.as_str(), "memory/2025-03-07.md");
    assert_eq!(done.attempts, 1);
}

#[tokio::test]
async fn refusals() {
    let store = MemoryStore::new(Limits::default().with_max_file_bytes(32));
    let options = WriteOptions::default();
    for bad in ["two\nlines", "carriage\rreturn"] {
        assert!(matches!(
            append_memory_line(&store, &owner(), day(), bad, &options).await,
            Err(WriteError::Invalid(_))
        ));
    }
    append_memory_line(&store, &owner(), day(), "0123456789", &options)
        .await
        .unwrap();
    let err = append_memory_line(
        &store,
        &owner(),
        day(),
        "0123456789abcdefghijklmnop",
        &options,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, WriteError::Store(StoreError::TooLarge { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_binary_log_is_left_alone() {
    let store = MemoryStore::default();
    let log = memory_log_path(day());
    let bytes = [0u8, 0xFF, b'\n'];
    store
        .put(
            &owner(),
            &log,
            FileWrite::bytes(
                &bytes,
                wsp_types::MediaType::parse("application/octet-stream").unwrap(),
            ),
            Precondition::None,
        )
        .await
        .unwrap();
    let err = append_memory_line(&store, &owner(), day(), "a line", &WriteOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WriteError::Corrupt { reason, .. } if reason.contains("not text")),
        "{err:?}"
    );
    let kept = store.get(&owner(), &log, None).await.unwrap();
    assert_eq!(kept.meta.version, 1);
    assert_eq!(
        &*kept.meta.encoding.decode(&kept.content).unwrap(),
        &bytes[..]
    );
}
