//! The backend test battery: the contract of [`WorkspaceStore`](crate::WorkspaceStore) as tests.
//!
//! A backend runs the whole battery from its own tests with one macro call; the argument is a
//! factory that builds a fresh, empty store with the given [`Limits`]:
//!
//! ```text
//! wsp_store::battery_tests!(|limits| async move { MyStore::open_temp(limits).await });
//! ```
//!
//! The calling crate needs `tokio` (features `rt-multi-thread`, `macros`) as a dev-dependency.
//!
//! The battery ends with the differential model test ([`behaves_like_the_memory_store`]):
//! generated scripts of operations on the backend and on [`MemoryStore`](crate::MemoryStore),
//! compared step by step and shrunk to a minimal script when they disagree. The key and
//! approval registries have suites of their own in [`registries`].

mod model;
pub mod registries;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use wsp_types::{ETag, LimitKind, Owner, WorkspacePath, WorkspacePrefix};

pub use model::{
    Applied, Op, Pre, behaves_like_the_memory_store, check_scripts, run_script, script,
    script_limits,
};

use crate::{
    FileWrite, Limits, Precondition, QuotaExceeded, SnapshotInfo, SnapshotQuota, SnapshotUsage,
    StoreError, WorkspaceStore,
};

fn names(v: Vec<crate::FileMeta>) -> Vec<(String, u64)> {
    v.into_iter()
        .map(|m| (m.path.into_string(), m.version))
        .collect()
}

/// Expands to one `#[tokio::test]` per battery case, each calling `make(limits)` for a fresh store.
#[macro_export]
macro_rules! battery_tests {
    ($make:expr) => {
        $crate::battery_tests!(@each $make;
            create_read_list_round_trip,
            versions_and_history,
            content_type_and_author_are_kept,
            if_match_fresh_and_stale,
            if_match_lists_and_wildcards,
            failed_precondition_changes_nothing,
            delete_tombstones,
            delete_preconditions,
            recreate_after_delete_starts_a_new_life,
            retention_keeps_the_newest_versions,
            max_file_bytes_counts_utf8_bytes,
            binary_bodies_are_kept_as_written,
            max_files_counts_live_files,
            owners_are_isolated,
            list_prefix_and_byte_order,
            search_finds_the_live_text_of_its_owner_only,
            racing_conditional_writers_have_one_winner_per_version,
            racing_creators_have_one_winner,
            concurrent_readers_see_whole_versions,
            snapshots_see_the_moment_they_were_taken,
            snapshots_outlive_retention_until_released,
            snapshots_belong_to_their_owner,
            an_owners_snapshots_are_listed_newest_first_in_pages,
            open_snapshots_are_listed_for_housekeeping,
            released_snapshots_are_forgotten_after_retention,
            pinned_bytes_follow_a_model,
            snapshot_quotas_refuse_new_snapshots_only,
            racing_snapshots_never_exceed_the_open_cap,
            the_feed_records_every_change_in_order,
            the_feed_is_per_owner_and_gap_free_under_races,
            subscribers_hear_of_commits,
            every_feature_is_offered,
            behaves_like_the_memory_store
        );
    };
    (@each $make:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                $crate::battery::$name(&$make).await;
            }
        )*
    };
}

fn owner(t: &str) -> Owner {
    Owner::parse(t, "w").expect("valid owner")
}

fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).expect("valid path")
}

fn all() -> WorkspacePrefix {
    WorkspacePrefix::all()
}

fn small() -> Limits {
    Limits::default()
        .with_max_file_bytes(64)
        .with_max_files(3)
        .with_max_versions(3)
}

async fn put<S: WorkspaceStore>(s: &S, o: &Owner, p: &str, c: &str) -> crate::StoredFile {
    s.put(o, &path(p), FileWrite::markdown(c), Precondition::None)
        .await
        .expect("put succeeds")
}

/// PUT creates version 1; GET returns it; list shows it without content.
pub async fn create_read_list_round_trip<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let stored = put(&s, &a, "notes/plan.md", "# Plan").await;
    assert_eq!(stored.meta.version, 1);
    assert_eq!(stored.content, "# Plan");
    assert_eq!(stored.meta.size, 6);
    let got = s.get(&a, &path("notes/plan.md"), None).await.unwrap();
    assert_eq!(got, stored);
    let listed = s.list(&a, &all()).await.unwrap();
    assert_eq!(listed, vec![stored.meta.clone()]);
    assert_eq!(
        s.get(&a, &path("notes/other.md"), None).await,
        Err(StoreError::NotFound)
    );
}

/// Each write adds exactly one version; old versions stay readable; history is newest first.
pub async fn versions_and_history<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let mut etags = Vec::new();
    for i in 1..=4u64 {
        let f = put(&s, &a, "MEMORY.md", &format!("v{i}")).await;
        assert_eq!(f.meta.version, i);
        etags.push(f.meta.etag);
    }
    assert_eq!(
        etags.iter().collect::<HashSet<_>>().len(),
        4,
        "etags are distinct"
    );
    for i in 1..=4u64 {
        let f = s.get(&a, &path("MEMORY.md"), Some(i)).await.unwrap();
        assert_eq!(f.content, format!("v{i}"));
        assert_eq!(f.meta.version, i);
        assert_eq!(f.meta.etag, etags[i as usize - 1]);
    }
    assert_eq!(
        s.get(&a, &path("MEMORY.md"), Some(5)).await,
        Err(StoreError::NotFound)
    );
    let h = s.history(&a, &path("MEMORY.md")).await.unwrap();
    assert_eq!(
        h.iter().map(|m| m.version).collect::<Vec<_>>(),
        vec![4, 3, 2, 1]
    );
    assert_eq!(
        s.history(&a, &path("absent.md")).await,
        Err(StoreError::NotFound)
    );
}

/// Media type and author survive the round trip, per version.
pub async fn content_type_and_author_are_kept<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let w =
        FileWrite::text("{}", wsp_types::MediaType::from_static("application/json")).by("alice");
    s.put(&a, &path("x.json"), w, Precondition::None)
        .await
        .unwrap();
    put(&s, &a, "x.json", "# now markdown").await;
    let v1 = s.get(&a, &path("x.json"), Some(1)).await.unwrap();
    assert_eq!(v1.meta.content_type, "application/json");
    assert_eq!(v1.meta.author.as_deref(), Some("alice"));
    let v2 = s.get(&a, &path("x.json"), None).await.unwrap();
    assert_eq!(v2.meta.content_type, "text/markdown");
    assert_eq!(v2.meta.author, None);
}

/// `If-Match` with the live etag wins; with an older one it is a conflict naming the live version.
pub async fn if_match_fresh_and_stale<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let p = path("DIRECTIVES.md");
    let v1 = put(&s, &a, "DIRECTIVES.md", "one").await;
    let v2 = s
        .put(
            &a,
            &p,
            FileWrite::markdown("two"),
            Precondition::IfMatch(vec![v1.meta.etag.clone()]),
        )
        .await
        .unwrap();
    assert_eq!(v2.meta.version, 2);
    let stale = s
        .put(
            &a,
            &p,
            FileWrite::markdown("three"),
            Precondition::IfMatch(vec![v1.meta.etag]),
        )
        .await;
    assert_eq!(stale, Err(StoreError::Conflict { current_version: 2 }));
    let absent = s
        .put(
            &a,
            &path("absent.md"),
            FileWrite::markdown("x"),
            Precondition::IfMatch(vec![v2.meta.etag]),
        )
        .await;
    assert_eq!(absent, Err(StoreError::Conflict { current_version: 0 }));
    let wrong = s
        .put(
            &a,
            &p,
            FileWrite::markdown("x"),
            Precondition::IfMatch(vec![ETag::from_wire("\"nope\"")]),
        )
        .await;
    assert_eq!(wrong, Err(StoreError::Conflict { current_version: 2 }));
}

/// A list of etags matches any of them; `If-Match: *` needs a live file; `If-None-Match: *` none.
pub async fn if_match_lists_and_wildcards<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let p = path("a.md");
    let any = s
        .put(&a, &p, FileWrite::markdown("x"), Precondition::IfMatchAny)
        .await;
    assert_eq!(any, Err(StoreError::Conflict { current_version: 0 }));
    let created = s
        .put(
            &a,
            &p,
            FileWrite::markdown("x"),
            Precondition::IfNoneMatchAny,
        )
        .await
        .unwrap();
    assert_eq!(created.meta.version, 1);
    let again = s
        .put(
            &a,
            &p,
            FileWrite::markdown("y"),
            Precondition::IfNoneMatchAny,
        )
        .await;
    assert_eq!(again, Err(StoreError::Conflict { current_version: 1 }));
    let v2 = s
        .put(&a, &p, FileWrite::markdown("y"), Precondition::IfMatchAny)
        .await
        .unwrap();
    assert_eq!(v2.meta.version, 2);
    let listed = Precondition::IfMatch(vec![ETag::from_wire("\"other\""), v2.meta.etag.clone()]);
    let v3 = s
        .put(&a, &p, FileWrite::markdown("z"), listed)
        .await
        .unwrap();
    assert_eq!(v3.meta.version, 3);
}

/// A refused write leaves content, version, etag and list exactly as they were.
pub async fn failed_precondition_changes_nothing<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(small()).await;
    let a = owner("a");
    let before = put(&s, &a, "a.md", "keep").await;
    let p = path("a.md");
    let _ = s
        .put(
            &a,
            &p,
            FileWrite::markdown("lost"),
            Precondition::IfNoneMatchAny,
        )
        .await;
    let _ = s
        .put(
            &a,
            &p,
            FileWrite::markdown("x".repeat(65)),
            Precondition::None,
        )
        .await;
    let _ = s
        .put(
            &a,
            &p,
            FileWrite::markdown("lost"),
            Precondition::IfMatch(vec![ETag::from_wire("\"x\"")]),
        )
        .await;
    assert_eq!(s.get(&a, &p, None).await.unwrap(), before);
    assert_eq!(s.history(&a, &p).await.unwrap().len(), 1);
    assert_eq!(s.list(&a, &all()).await.unwrap(), vec![before.meta]);
}

/// A delete tombstones: get, versioned get, history and list all stop showing the file.
pub async fn delete_tombstones<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let p = path("gone.md");
    put(&s, &a, "gone.md", "1").await;
    put(&s, &a, "gone.md", "2").await;
    put(&s, &a, "kept.md", "k").await;
    let d = s.delete(&a, &p, Precondition::None).await.unwrap();
    assert_eq!(d.version, 3, "the tombstone is the last version plus one");
    assert_eq!(s.get(&a, &p, None).await, Err(StoreError::NotFound));
    assert_eq!(s.get(&a, &p, Some(1)).await, Err(StoreError::NotFound));
    assert_eq!(s.get(&a, &p, Some(2)).await, Err(StoreError::NotFound));
    assert_eq!(s.history(&a, &p).await, Err(StoreError::NotFound));
    let listed: Vec<_> = s
        .list(&a, &all())
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(listed, vec![path("kept.md")]);
    assert_eq!(
        s.delete(&a, &p, Precondition::None).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.delete(&a, &path("never.md"), Precondition::None).await,
        Err(StoreError::NotFound)
    );
}

/// Deletes honour `If-Match`.
pub async fn delete_preconditions<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let p = path("a.md");
    let v1 = put(&s, &a, "a.md", "1").await;
    let v2 = put(&s, &a, "a.md", "2").await;
    let stale = s
        .delete(&a, &p, Precondition::IfMatch(vec![v1.meta.etag]))
        .await;
    assert_eq!(stale, Err(StoreError::Conflict { current_version: 2 }));
    assert_eq!(s.get(&a, &p, None).await.unwrap().content, "2");
    let d = s
        .delete(&a, &p, Precondition::IfMatch(vec![v2.meta.etag]))
        .await
        .unwrap();
    assert_eq!(d.version, 3);
}

/// A write after a delete starts at version 1 with etags no earlier life ever had.
pub async fn recreate_after_delete_starts_a_new_life<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let p = path("cycle.md");
    let mut seen = HashSet::new();
    let mut last_etag = None;
    for life in 0..5 {
        for v in 1..=2u64 {
            let f = put(&s, &a, "cycle.md", &format!("life {life} v{v}")).await;
            assert_eq!(f.meta.version, v);
            assert!(
                seen.insert(f.meta.etag.clone()),
                "etag repeated across lives"
            );
            last_etag = Some(f.meta.etag);
        }
        s.delete(&a, &p, Precondition::None).await.unwrap();
    }
    let stale = Precondition::IfMatch(vec![last_etag.unwrap()]);
    assert_eq!(
        s.put(&a, &p, FileWrite::markdown("x"), stale).await,
        Err(StoreError::Conflict { current_version: 0 })
    );
    let fresh = put(&s, &a, "cycle.md", "new").await;
    assert_eq!(fresh.meta.version, 1);
    assert!(!seen.contains(&fresh.meta.etag));
    assert_eq!(
        s.get(&a, &p, Some(2)).await,
        Err(StoreError::NotFound),
        "old life not served"
    );
    assert_eq!(s.history(&a, &p).await.unwrap().len(), 1);
}

/// Only the newest `max_versions` versions are retained; the latest is always there.
pub async fn retention_keeps_the_newest_versions<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(small()).await;
    let a = owner("a");
    let p = path("r.md");
    for i in 1..=6 {
        put(&s, &a, "r.md", &format!("v{i}")).await;
    }
    let h = s.history(&a, &p).await.unwrap();
    assert_eq!(
        h.iter().map(|m| m.version).collect::<Vec<_>>(),
        vec![6, 5, 4]
    );
    for gone in 1..=3 {
        assert_eq!(s.get(&a, &p, Some(gone)).await, Err(StoreError::NotFound));
    }
    assert_eq!(s.get(&a, &p, Some(4)).await.unwrap().content, "v4");
    assert_eq!(s.get(&a, &p, None).await.unwrap().content, "v6");
}

/// The size limit counts UTF-8 bytes: exactly the limit is accepted, one more byte is not.
pub async fn max_file_bytes_counts_utf8_bytes<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(small()).await;
    let a = owner("a");
    let p = path("big.md");
    let exact = "ü".repeat(32); // 64 bytes, 32 characters
    assert_eq!(
        s.put(&a, &p, FileWrite::markdown(&exact), Precondition::None)
            .await
            .unwrap()
            .meta
            .size,
        64
    );
    let over = format!("{exact}x");
    assert_eq!(
        s.put(&a, &p, FileWrite::markdown(over), Precondition::None)
            .await,
        Err(StoreError::TooLarge {
            limit: LimitKind::MaxFileBytes,
            max: 64
        })
    );
    assert_eq!(s.get(&a, &p, None).await.unwrap().content, exact);
}

/// A binary body comes back exactly as written (base64, its encoding and media type), in the
/// list and the history too; `max_file_bytes` counts its decoded bytes; base64 that is not the
/// one accepted spelling is refused and stores nothing.
pub async fn binary_bodies_are_kept_as_written<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    use wsp_types::MediaType;
    use wsp_types::wire::ContentEncoding;

    let s = make(small()).await;
    let a = owner("a");
    let p = path("logo.png");
    let png = MediaType::from_static("image/png");
    // 64 bytes (the limit) that are not UTF-8, NUL included; 88 characters of base64.
    let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0x80).collect();
    let stored = s
        .put(
            &a,
            &p,
            FileWrite::bytes(&bytes, png.clone()),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(stored.meta.size, 64);
    assert_eq!(stored.meta.encoding, ContentEncoding::Base64);
    let read = s.get(&a, &p, None).await.unwrap();
    assert_eq!(read.meta.encoding, ContentEncoding::Base64);
    assert_eq!(read.meta.content_type, png);
    assert_eq!(read.meta.size, 64);
    assert_eq!(
        ContentEncoding::Base64.decode(&read.content).unwrap(),
        bytes
    );
    let listed = s.list(&a, &all()).await.unwrap();
    assert_eq!(listed[0].encoding, ContentEncoding::Base64);
    assert_eq!(listed[0].size, 64);

    // One byte over the limit, though the text under it is what the limit would allow.
    let over = FileWrite::bytes(&[0u8; 65], png.clone());
    assert_eq!(
        s.put(&a, &p, over, Precondition::None).await,
        Err(StoreError::TooLarge {
            limit: LimitKind::MaxFileBytes,
            max: 64
        })
    );
    for bad in ["AA=", "AB==", "AA AA===", "%%%%"] {
        let mut w = FileWrite::bytes(b"", png.clone());
        w.content = bad.into();
        assert!(
            matches!(
                s.put(&a, &p, w, Precondition::None).await,
                Err(StoreError::InvalidContent(_))
            ),
            "{bad:?}"
        );
    }
    // Text written over it is text again; the binary version stays in the history as it was.
    put(&s, &a, "logo.png", "now text").await;
    let history = s.history(&a, &p).await.unwrap();
    assert_eq!(history[0].encoding, ContentEncoding::Utf8);
    assert_eq!(history[1].encoding, ContentEncoding::Base64);
    let v1 = s.get(&a, &p, Some(1)).await.unwrap();
    assert_eq!(ContentEncoding::Base64.decode(&v1.content).unwrap(), bytes);
    assert_eq!(history.len(), 2, "refused writes stored nothing");
}

/// `max_files` counts live files per owner: replacing is fine, a new path over the limit is not.
pub async fn max_files_counts_live_files<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(small()).await;
    let a = owner("a");
    for p in ["1.md", "2.md", "3.md"] {
        put(&s, &a, p, "x").await;
    }
    let too_many = s
        .put(
            &a,
            &path("4.md"),
            FileWrite::markdown("x"),
            Precondition::None,
        )
        .await;
    assert_eq!(
        too_many,
        Err(StoreError::TooLarge {
            limit: LimitKind::MaxFiles,
            max: 3
        })
    );
    put(&s, &a, "3.md", "replace is fine").await;
    put(&s, &owner("b"), "4.md", "another owner has its own count").await;
    s.delete(&a, &path("1.md"), Precondition::None)
        .await
        .unwrap();
    put(&s, &a, "4.md", "room again").await;
    assert_eq!(s.list(&a, &all()).await.unwrap().len(), 3);
}

/// Another owner's files are invisible and untouchable, even at the same path.
pub async fn owners_are_isolated<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    let same_tenant_other_ws = Owner::parse("a", "w2").unwrap();
    let p = path("AGENTS.md");
    let fa = put(&s, &a, "AGENTS.md", "A's secret").await;
    for other in [&b, &same_tenant_other_ws] {
        assert_eq!(s.get(other, &p, None).await, Err(StoreError::NotFound));
        assert_eq!(s.get(other, &p, Some(1)).await, Err(StoreError::NotFound));
        assert_eq!(s.history(other, &p).await, Err(StoreError::NotFound));
        assert_eq!(s.list(other, &all()).await.unwrap(), vec![]);
        assert_eq!(
            s.delete(other, &p, Precondition::None).await,
            Err(StoreError::NotFound)
        );
        let guess = Precondition::IfMatch(vec![fa.meta.etag.clone()]);
        assert_eq!(
            s.put(other, &p, FileWrite::markdown("x"), guess).await,
            Err(StoreError::Conflict { current_version: 0 })
        );
    }
    let fb = put(&s, &b, "AGENTS.md", "B's own").await;
    assert_eq!(fb.meta.version, 1);
    assert_eq!(s.get(&a, &p, None).await.unwrap(), fa);
    assert_eq!(s.get(&b, &p, None).await.unwrap().content, "B's own");
}

/// Search finds the lines of the owner's live text files that hold the query's words, best
/// first, and follows every change: a replaced file is found by its new text only, a deleted
/// one not at all, a re-created one again; another owner's text (same tenant or not, same
/// path) never; binary files never; the prefix and the limit hold.
pub async fn search_finds_the_live_text_of_its_owner_only<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    use crate::search::SearchQuery;
    use wsp_types::MediaType;

    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    let same_tenant = Owner::parse("a", "w2").unwrap();
    let found = |o: &Owner, q: &str, prefix: &str, limit: usize| {
        let query = SearchQuery::new(q, WorkspacePrefix::parse(prefix).unwrap(), limit).unwrap();
        let (s, o) = (&s, o.clone());
        async move {
            let results = s.search(&o, &query).await.unwrap();
            let lines: Vec<(String, u64, String)> = results
                .hits
                .iter()
                .map(|h| (h.path.to_string(), h.line, h.snippet.clone()))
                .collect();
            (lines, results.total)
        }
    };
    put(
        &s,
        &a,
        "MEMORY.md",
        "# Memory\n- Friday deploys are off.\n- Coffee at ten.\n",
    )
    .await;
    put(
        &s,
        &a,
        "memory/2026-01-02.md",
        "The friday DEPLOY of billing failed\n",
    )
    .await;
    put(
        &s,
        &a,
        "knowledge/deploy.md",
        "How to deploy: run the tests first.\n",
    )
    .await;
    put(&s, &b, "MEMORY.md", "- Friday deploys are B's secret.\n").await;
    put(&s, &same_tenant, "MEMORY.md", "- friday deploy in w2\n").await;
    let png = MediaType::from_static("image/png");
    s.put(
        &a,
        &path("memory/friday.png"),
        FileWrite::bytes(b"friday deploy \xff\xfe", png),
        Precondition::None,
    )
    .await
    .unwrap();

    let (lines, total) = found(&a, "friday deploy", "", 10).await;
    assert_eq!(total, 3, "{lines:?}");
    // Both words beat one; of two lines with both, the later path first.
    assert_eq!(
        lines,
        vec![
            (
                "memory/2026-01-02.md".into(),
                1,
                "The friday DEPLOY of billing failed".into()
            ),
            ("MEMORY.md".into(), 2, "- Friday deploys are off.".into()),
            (
                "knowledge/deploy.md".into(),
                1,
                "How to deploy: run the tests first.".into()
            ),
        ]
    );
    let (lines, total) = found(&a, "friday deploy", "memory/", 10).await;
    assert_eq!((lines.len(), total), (1, 1), "prefix: {lines:?}");
    let (lines, total) = found(&a, "friday deploy", "", 1).await;
    assert_eq!((lines.len(), total), (1, 3), "limit: {lines:?}");
    assert_eq!(found(&a, "kubernetes", "", 10).await.1, 0);

    // A replaced file is found by its new text only.
    put(
        &s,
        &a,
        "MEMORY.md",
        "# Memory\n- Coffee at ten.\n- Espresso after lunch.\n",
    )
    .await;
    let (lines, _) = found(&a, "friday", "", 10).await;
    assert!(
        lines.iter().all(|(p, _, _)| p != "MEMORY.md"),
        "old text found: {lines:?}"
    );
    assert_eq!(
        found(&a, "espresso", "", 10).await.0,
        vec![("MEMORY.md".into(), 3, "- Espresso after lunch.".into())],
        "the new text is searched"
    );
    // Deleted: gone; re-created: found again, by its new text.
    s.delete(&a, &path("memory/2026-01-02.md"), Precondition::None)
        .await
        .unwrap();
    assert_eq!(
        found(&a, "billing", "", 10).await.1,
        0,
        "a deleted file is found"
    );
    put(&s, &a, "memory/2026-01-02.md", "Billing is back, friday.\n").await;
    let (lines, total) = found(&a, "billing", "", 10).await;
    assert_eq!(total, 1);
    assert_eq!(lines[0].2, "Billing is back, friday.");

    // Each owner sees only its own text, whatever the words.
    let (lines, _) = found(&b, "friday deploy secret w2 billing coffee", "", 10).await;
    assert_eq!(
        lines,
        vec![(
            "MEMORY.md".into(),
            1,
            "- Friday deploys are B's secret.".into()
        )]
    );
    let (lines, _) = found(&same_tenant, "friday secret billing", "", 10).await;
    assert_eq!(
        lines,
        vec![("MEMORY.md".into(), 1, "- friday deploy in w2".into())]
    );
    assert_eq!(found(&owner("nobody"), "friday", "", 10).await.1, 0);
}

/// `prefix` is a plain string prefix and the list is sorted in byte order.
pub async fn list_prefix_and_byte_order<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    for p in [
        "notes/b.md",
        "notes-x.md",
        "notes/a.md",
        "Notes.md",
        "notes.md",
        "n",
        "knowledge/k.md",
    ] {
        put(&s, &a, p, "x").await;
    }
    let names = |v: Vec<crate::FileMeta>| {
        v.into_iter()
            .map(|m| m.path.into_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(s.list(&a, &all()).await.unwrap()),
        [
            "Notes.md",
            "knowledge/k.md",
            "n",
            "notes-x.md",
            "notes.md",
            "notes/a.md",
            "notes/b.md"
        ]
    );
    let pre = |p: &str| WorkspacePrefix::parse(p).unwrap();
    assert_eq!(
        names(s.list(&a, &pre("notes/")).await.unwrap()),
        ["notes/a.md", "notes/b.md"]
    );
    assert_eq!(
        names(s.list(&a, &pre("notes")).await.unwrap()),
        ["notes-x.md", "notes.md", "notes/a.md", "notes/b.md"]
    );
    assert_eq!(
        names(s.list(&a, &pre("zzz")).await.unwrap()),
        Vec::<String>::new()
    );
}

/// Many tasks racing `If-Match` writes on one path: one winner per version, no gaps, none lost.
pub async fn racing_conditional_writers_have_one_winner_per_version<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = Arc::new(make(Limits::default().with_max_versions(1000)).await);
    let a = owner("a");
    let p = path("race.md");
    put(&*s, &a, "race.md", "start").await;
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..8 {
        let (s, a, p) = (s.clone(), a.clone(), p.clone());
        tasks.spawn(async move {
            let mut won = Vec::new();
            for i in 0..25 {
                let live = s.get(&a, &p, None).await.unwrap();
                let w = FileWrite::markdown(format!("task {t} try {i}"));
                match s
                    .put(&a, &p, w, Precondition::IfMatch(vec![live.meta.etag]))
                    .await
                {
                    Ok(f) => won.push((f.meta.version, f.content)),
                    Err(StoreError::Conflict { current_version }) => {
                        assert!(current_version > live.meta.version)
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            won
        });
    }
    let mut wins = Vec::new();
    while let Some(r) = tasks.join_next().await {
        wins.extend(r.unwrap());
    }
    wins.sort();
    let versions: Vec<u64> = wins.iter().map(|w| w.0).collect();
    let expect: Vec<u64> = (2..2 + wins.len() as u64).collect();
    assert_eq!(versions, expect, "exactly one winner per version, gap-free");
    let h = s.history(&a, &p).await.unwrap();
    assert_eq!(h.len(), wins.len() + 1);
    for (version, content) in &wins {
        assert_eq!(
            &s.get(&a, &p, Some(*version)).await.unwrap().content,
            content,
            "nothing lost"
        );
    }
}

/// Many tasks racing `If-None-Match: *` on one new path: exactly one creates it.
pub async fn racing_creators_have_one_winner<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = Arc::new(make(Limits::default()).await);
    let a = owner("a");
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..16 {
        let (s, a) = (s.clone(), a.clone());
        tasks.spawn(async move {
            s.put(
                &a,
                &path("once.md"),
                FileWrite::markdown(format!("{t}")),
                Precondition::IfNoneMatchAny,
            )
            .await
        });
    }
    let mut ok = 0;
    while let Some(r) = tasks.join_next().await {
        match r.unwrap() {
            Ok(f) => {
                ok += 1;
                assert_eq!(f.meta.version, 1);
            }
            Err(e) => assert_eq!(e, StoreError::Conflict { current_version: 1 }),
        }
    }
    assert_eq!(ok, 1);
}

/// Readers racing a writer only ever see complete versions.
pub async fn concurrent_readers_see_whole_versions<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = Arc::new(make(Limits::default()).await);
    let a = owner("a");
    let body = |i: u64| format!("{i:04}:").repeat(4096);
    put(&*s, &a, "big.md", &body(1)).await;
    let writer = {
        let (s, a) = (s.clone(), a.clone());
        tokio::spawn(async move {
            for i in 2..=40 {
                put(&*s, &a, "big.md", &body(i)).await;
            }
        })
    };
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (s, a) = (s.clone(), a.clone());
        readers.spawn(async move {
            for _ in 0..50 {
                let f = s.get(&a, &path("big.md"), None).await.unwrap();
                assert_eq!(
                    f.content,
                    body(f.meta.version),
                    "a reader saw a partial body"
                );
                tokio::task::yield_now().await;
            }
        });
    }
    writer.await.unwrap();
    while let Some(r) = readers.join_next().await {
        r.unwrap();
    }
}

/// A snapshot reads the live files of its moment, whatever happens afterwards.
pub async fn snapshots_see_the_moment_they_were_taken<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let empty = s.snapshot(&a, &"before anything".into()).await.unwrap();
    assert_eq!(empty.seq, 0);
    put(&s, &a, "a.md", "a1").await;
    put(&s, &a, "b.md", "b1").await;
    let snap = s.snapshot(&a, &"run 1".into()).await.unwrap();
    assert_eq!(snap.seq, 2);
    assert_eq!(snap.label, crate::SnapshotLabel::text("run 1"));
    put(&s, &a, "a.md", "a2").await;
    s.delete(&a, &path("b.md"), Precondition::None)
        .await
        .unwrap();
    put(&s, &a, "c.md", "c1").await;
    s.delete(&a, &path("a.md"), Precondition::None)
        .await
        .unwrap();
    put(&s, &a, "a.md", "a new life").await;
    put(&s, &a, "b.md", "b new life").await;
    assert_eq!(
        names(s.list_at(&a, &snap.id, &all()).await.unwrap()),
        [("a.md".into(), 1), ("b.md".into(), 1)]
    );
    assert_eq!(
        s.get_at(&a, &snap.id, &path("a.md")).await.unwrap().content,
        "a1"
    );
    assert_eq!(
        s.get_at(&a, &snap.id, &path("b.md")).await.unwrap().content,
        "b1"
    );
    assert_eq!(
        s.get_at(&a, &snap.id, &path("c.md")).await,
        Err(StoreError::NotFound)
    );
    assert!(s.list_at(&a, &empty.id, &all()).await.unwrap().is_empty());
    // The live view moved on.
    assert_eq!(
        names(s.list(&a, &all()).await.unwrap()),
        [("a.md".into(), 1), ("b.md".into(), 1), ("c.md".into(), 1)]
    );
    assert_eq!(
        s.get(&a, &path("a.md"), None).await.unwrap().content,
        "a new life"
    );
    let next = s.snapshot(&a, &"run 2".into()).await.unwrap();
    assert_eq!(
        s.get_at(&a, &next.id, &path("a.md")).await.unwrap().content,
        "a new life"
    );
    let released = s.release_snapshot(&a, &snap.id, "completed").await.unwrap();
    assert_eq!(
        released.released.as_ref().map(|r| r.1.as_str()),
        Some("completed")
    );
    let again = s.release_snapshot(&a, &snap.id, "cancelled").await.unwrap();
    assert_eq!(again.released, released.released, "the first outcome stays");
    assert_eq!(
        s.list_at(&a, &snap.id, &all()).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.get_at(&a, &snap.id, &path("a.md")).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.snapshot_info(&a, &snap.id).await.unwrap().released,
        released.released
    );
    assert_eq!(
        s.get_at(&a, &next.id, &path("b.md")).await.unwrap().content,
        "b new life"
    );
}

/// Versions a snapshot can see are kept past `max_versions` until it is released; history
/// still shows only the retained versions.
pub async fn snapshots_outlive_retention_until_released<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(small()).await;
    let a = owner("a");
    put(&s, &a, "r.md", "pinned").await;
    let snap = s.snapshot(&a, &"".into()).await.unwrap();
    for i in 2..=9 {
        put(&s, &a, "r.md", &format!("v{i}")).await;
    }
    assert_eq!(
        s.get_at(&a, &snap.id, &path("r.md")).await.unwrap().content,
        "pinned"
    );
    let h = s.history(&a, &path("r.md")).await.unwrap();
    assert_eq!(
        h.iter().map(|m| m.version).collect::<Vec<_>>(),
        vec![9, 8, 7]
    );
    assert_eq!(
        s.get(&a, &path("r.md"), Some(1)).await,
        Err(StoreError::NotFound)
    );
    // Deleted under a snapshot: still visible through it.
    s.delete(&a, &path("r.md"), Precondition::None)
        .await
        .unwrap();
    assert_eq!(
        s.get_at(&a, &snap.id, &path("r.md")).await.unwrap().content,
        "pinned"
    );
    s.release_snapshot(&a, &snap.id, "completed").await.unwrap();
    assert_eq!(
        s.get(&a, &path("r.md"), None).await,
        Err(StoreError::NotFound)
    );
    let fresh = put(&s, &a, "r.md", "again").await;
    assert_eq!(fresh.meta.version, 1);
}

/// An owner's snapshots, open and released, newest first, in pages that stay consistent while
/// snapshots are taken between them; another owner's never appear.
pub async fn an_owners_snapshots_are_listed_newest_first_in_pages<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    use crate::SnapshotCursor;
    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    assert_eq!(s.list_snapshots(&a, None, 10).await, Ok(vec![]));
    let mut taken = Vec::new();
    for i in 0..7 {
        put(&s, &a, "f.md", &format!("{i}")).await;
        taken.push(
            s.snapshot(&a, &format!("run {i}").as_str().into())
                .await
                .unwrap(),
        );
        s.snapshot(&b, &"other".into()).await.unwrap();
    }
    s.release_snapshot(&a, &taken[2].id, "done").await.unwrap();
    let newest_first: Vec<_> = taken.iter().rev().map(|t| t.id.clone()).collect();

    let first = s.list_snapshots(&a, None, 3).await.unwrap();
    let ids = |page: &[crate::SnapshotInfo]| page.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), newest_first[..3]);
    // Taken between pages: newer than any cursor, so the next page is unchanged.
    let late = s.snapshot(&a, &"late".into()).await.unwrap();
    let cursor = SnapshotCursor::after(first.last().unwrap());
    let second = s.list_snapshots(&a, Some(&cursor), 3).await.unwrap();
    assert_eq!(ids(&second), newest_first[3..6]);
    let cursor = SnapshotCursor::after(second.last().unwrap());
    let third = s.list_snapshots(&a, Some(&cursor), 3).await.unwrap();
    assert_eq!(ids(&third), newest_first[6..]);
    let cursor = SnapshotCursor::after(third.last().unwrap());
    assert_eq!(s.list_snapshots(&a, Some(&cursor), 3).await, Ok(vec![]));
    // Released ones are listed with their release; records are whole.
    let all = s.list_snapshots(&a, None, 100).await.unwrap();
    assert_eq!(all.len(), 8);
    assert_eq!(all[0].id, late.id);
    let released = all.iter().find(|i| i.id == taken[2].id).unwrap();
    assert_eq!(
        released.released.as_ref().map(|r| r.1.as_str()),
        Some("done")
    );
    assert_eq!(*released, s.snapshot_info(&a, &taken[2].id).await.unwrap());
    assert_eq!(all.iter().filter(|i| i.released.is_none()).count(), 7);
    // Another owner's never appear, whatever the cursor.
    let theirs = s.list_snapshots(&b, None, 100).await.unwrap();
    assert_eq!(theirs.len(), 7);
    assert!(theirs.iter().all(|t| all.iter().all(|m| m.id != t.id)));
}

/// Another owner's snapshot answers exactly like an unknown one.
pub async fn snapshots_belong_to_their_owner<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    put(&s, &a, "secret.md", "A").await;
    let snap = s.snapshot(&a, &"".into()).await.unwrap();
    assert_eq!(
        s.snapshot_info(&b, &snap.id).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.list_at(&b, &snap.id, &all()).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.get_at(&b, &snap.id, &path("secret.md")).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.release_snapshot(&b, &snap.id, "x").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.snapshot_info(
            &a,
            &crate::SnapshotId::parse("0123456789abcdef0123456789abcdef").unwrap()
        )
        .await,
        Err(StoreError::NotFound)
    );
    assert!(
        s.snapshot_info(&a, &snap.id)
            .await
            .unwrap()
            .released
            .is_none()
    );
}

/// `open_snapshots_before` lists the open snapshots of every owner taken before the cutoff,
/// oldest first, up to the limit, and never a released one; `count_open_snapshots` counts the
/// open ones of every owner.
pub async fn open_snapshots_are_listed_for_housekeeping<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    put(&s, &a, "x.md", "A").await;
    assert_eq!(s.count_open_snapshots().await.unwrap(), 0);
    let first = s.snapshot(&a, &"first".into()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = s.snapshot(&b, &"second".into()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let released = s.snapshot(&a, &"released".into()).await.unwrap();
    s.release_snapshot(&a, &released.id, "completed")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(
        s.count_open_snapshots().await.unwrap(),
        2,
        "released ones not counted"
    );
    let later = chrono::Utc::now() + chrono::Duration::seconds(1);
    // As stored (a backend may keep coarser timestamps than `snapshot` returned).
    let first = s.snapshot_info(&a, &first.id).await.unwrap();
    let second = s.snapshot_info(&b, &second.id).await.unwrap();
    let ids = |v: Vec<(Owner, SnapshotInfo)>| -> Vec<(String, String)> {
        v.into_iter()
            .map(|(o, i)| (o.tenant.as_str().to_owned(), i.label.to_stored()))
            .collect()
    };
    assert_eq!(
        ids(s.open_snapshots_before(later, 10).await.unwrap()),
        [("a".into(), "first".into()), ("b".into(), "second".into())]
    );
    assert_eq!(
        ids(s.open_snapshots_before(later, 1).await.unwrap()),
        [("a".to_owned(), "first".to_owned())]
    );
    assert_eq!(
        ids(s
            .open_snapshots_before(second.created_at, 10)
            .await
            .unwrap()),
        [("a".to_owned(), "first".to_owned())],
        "taken before the cutoff, not at it"
    );
    assert!(
        s.open_snapshots_before(first.created_at, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let (owner_of, info) = s.open_snapshots_before(later, 10).await.unwrap().remove(1);
    assert_eq!((owner_of, info), (b.clone(), second));
    s.release_snapshot(&a, &first.id, "completed")
        .await
        .unwrap();
    assert_eq!(
        ids(s.open_snapshots_before(later, 10).await.unwrap()),
        [("b".to_owned(), "second".to_owned())]
    );
    assert_eq!(s.count_open_snapshots().await.unwrap(), 1);
}

/// One row of a path in [`PinModel`]: a version of `size` bytes, or a tombstone (`None`).
#[derive(Debug, Clone, Copy)]
struct ModelRow {
    seq: u64,
    life: u64,
    version: u64,
    size: Option<u64>,
}

/// The reference for [`SnapshotUsage`]: every row ever stored (nothing is pruned here) and the
/// open snapshots, so the figure follows from the definition, not from any backend's pruning.
#[derive(Debug, Default)]
struct PinModel {
    keep: u64,
    seq: u64,
    lives: u64,
    rows: BTreeMap<String, Vec<ModelRow>>,
    open: BTreeMap<crate::SnapshotId, u64>,
}

impl PinModel {
    fn new(keep: u64) -> Self {
        Self {
            keep,
            ..Self::default()
        }
    }

    fn live(&self, p: &str) -> bool {
        self.rows
            .get(p)
            .and_then(|r| r.last())
            .is_some_and(|r| r.size.is_some())
    }

    fn write(&mut self, p: &str, size: u64) {
        self.seq += 1;
        let last = self.rows.get(p).and_then(|r| r.last()).copied();
        let (life, version) = match last {
            Some(r) if r.size.is_some() => (r.life, r.version + 1),
            _ => {
                self.lives += 1;
                (self.lives, 1)
            }
        };
        self.rows.entry(p.to_owned()).or_default().push(ModelRow {
            seq: self.seq,
            life,
            version,
            size: Some(size),
        });
    }

    fn delete(&mut self, p: &str) {
        self.seq += 1;
        let rows = self.rows.get_mut(p).expect("deleting a live path");
        let last = *rows.last().expect("a live path has rows");
        rows.push(ModelRow {
            seq: self.seq,
            life: last.life,
            version: last.version + 1,
            size: None,
        });
    }

    /// Bytes of versions an open snapshot sees that neither "newest row" nor history keeps.
    fn usage(&self) -> SnapshotUsage {
        let mut pinned = 0;
        for rows in self.rows.values() {
            let live = rows.last().filter(|r| r.size.is_some());
            for (i, r) in rows.iter().enumerate() {
                let (Some(size), Some(next)) = (r.size, rows.get(i + 1)) else {
                    continue;
                };
                let in_history =
                    live.is_some_and(|l| l.life == r.life && r.version + self.keep > l.version);
                let seen = self.open.values().any(|&s| r.seq <= s && s < next.seq);
                if seen && !in_history {
                    pinned += size;
                }
            }
        }
        SnapshotUsage {
            open: self.open.len() as u64,
            pinned_bytes: pinned,
        }
    }
}

/// `snapshot_usage` counts open snapshots and pinned bytes exactly, per owner: a long run of
/// writes, deletes, re-creations, snapshots and releases on two owners, compared after every
/// step with a model that keeps every row and applies the definition.
pub async fn pinned_bytes_follow_a_model<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let keep = 2;
    let s = make(
        Limits::default()
            .with_max_file_bytes(1024)
            .with_max_files(100)
            .with_max_versions(keep),
    )
    .await;
    let owners = [owner("pin-a"), owner("pin-b")];
    for o in &owners {
        assert_eq!(
            s.snapshot_usage(o).await.unwrap(),
            SnapshotUsage::default(),
            "an owner with nothing pins nothing"
        );
    }
    let mut models = [PinModel::new(keep), PinModel::new(keep)];
    let paths = ["a.md", "b.md", "c/d.md"];
    // A fixed pseudo-random sequence (an LCG), the same on every backend.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    for step in 0..160 {
        let who = next(2) as usize;
        let (o, model) = (&owners[who], &mut models[who]);
        let p = paths[next(paths.len() as u64) as usize];
        match next(10) {
            0..=4 => {
                let size = 1 + next(97) * 7;
                put(&s, o, p, &"x".repeat(size as usize)).await;
                model.write(p, size);
            }
            5 if model.live(p) => {
                s.delete(o, &path(p), Precondition::None).await.unwrap();
                model.delete(p);
            }
            5..=7 => {
                let snap = if next(2) == 0 {
                    s.snapshot(o, &"model".into()).await.unwrap()
                } else {
                    s.snapshot_within(o, &"model".into(), SnapshotQuota::UNBOUNDED)
                        .await
                        .unwrap()
                        .expect("no bound")
                };
                assert_eq!(
                    snap.seq, model.seq,
                    "a snapshot pins the owner's last change"
                );
                model.open.insert(snap.id, snap.seq);
            }
            _ => {
                if model.open.is_empty() {
                    continue;
                }
                let pick = next(model.open.len() as u64) as usize;
                let id = model.open.keys().nth(pick).cloned().unwrap();
                s.release_snapshot(o, &id, "completed").await.unwrap();
                model.open.remove(&id);
            }
        }
        for (o, model) in owners.iter().zip(&models) {
            assert_eq!(
                s.snapshot_usage(o).await.unwrap(),
                model.usage(),
                "step {step}, owner {o}"
            );
        }
    }
    assert!(
        models.iter().any(|m| m.usage().pinned_bytes > 0),
        "the sequence pins something"
    );
    // Releasing everything frees everything.
    for (o, model) in owners.iter().zip(&mut models) {
        for id in std::mem::take(&mut model.open).into_keys() {
            s.release_snapshot(o, &id, "completed").await.unwrap();
        }
        assert_eq!(s.snapshot_usage(o).await.unwrap(), SnapshotUsage::default());
    }
}

/// `snapshot_within` refuses a new snapshot when the owner has `max_open` open or pins more
/// than `max_pinned_bytes`, takes nothing when it refuses, never refuses a write, counts per
/// owner, and admits again once snapshots are released.
pub async fn snapshot_quotas_refuse_new_snapshots_only<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(
        Limits::default()
            .with_max_file_bytes(1000)
            .with_max_files(10)
            .with_max_versions(1),
    )
    .await;
    let (a, b) = (owner("quota-a"), owner("quota-b"));
    let hundred = "h".repeat(100);
    let by_bytes = SnapshotQuota {
        max_open: 10,
        max_pinned_bytes: 250,
    };
    let take = |o: &Owner, quota: SnapshotQuota| {
        let (s, o) = (&s, o.clone());
        async move {
            s.snapshot_within(&o, &"run".into(), quota)
                .await
                .expect("the store answers")
        }
    };
    put(&s, &a, "f.md", &hundred).await;
    let s1 = take(&a, by_bytes).await.unwrap();
    put(&s, &a, "f.md", &hundred).await;
    let s2 = take(&a, by_bytes).await.unwrap();
    put(&s, &a, "f.md", &hundred).await;
    // 200 pinned: within the quota.
    let s3 = take(&a, by_bytes).await.unwrap();
    put(&s, &a, "f.md", &hundred).await;
    let usage = SnapshotUsage {
        open: 3,
        pinned_bytes: 300,
    };
    assert_eq!(s.snapshot_usage(&a).await.unwrap(), usage);
    assert_eq!(
        take(&a, by_bytes).await,
        Err(QuotaExceeded::PinnedBytes {
            pinned: 300,
            max: 250
        })
    );
    // Writes still succeed, and the refusal took nothing.
    put(&s, &a, "f.md", &hundred).await;
    put(&s, &a, "g.md", &hundred).await;
    assert_eq!(s.snapshot_usage(&a).await.unwrap(), usage);
    // Another owner is not held back by it.
    put(&s, &b, "f.md", &hundred).await;
    assert!(take(&b, by_bytes).await.is_ok());
    // Releasing a snapshot frees what only it kept, and the next one is admitted.
    s.release_snapshot(&a, &s2.id, "cancelled").await.unwrap();
    assert_eq!(
        s.snapshot_usage(&a).await.unwrap(),
        SnapshotUsage {
            open: 2,
            pinned_bytes: 200
        }
    );
    let s4 = take(&a, by_bytes).await.unwrap();
    assert_eq!(
        s.snapshot_info(&a, &s4.id).await.unwrap().label,
        crate::SnapshotLabel::text("run"),
        "an admitted snapshot is an ordinary one"
    );
    // The open count: with four allowed, the fifth is refused until one is released.
    let by_count = SnapshotQuota {
        max_open: 4,
        max_pinned_bytes: u64::MAX,
    };
    let s5 = take(&a, by_count).await.unwrap();
    assert_eq!(
        take(&a, by_count).await,
        Err(QuotaExceeded::OpenSnapshots { open: 4, max: 4 })
    );
    assert_eq!(s.snapshot_usage(&a).await.unwrap().open, 4);
    // Plain snapshots count as open too; released ones never do.
    s.release_snapshot(&a, &s5.id, "completed").await.unwrap();
    s.snapshot(&a, &"plain".into()).await.unwrap();
    assert_eq!(
        take(&a, by_count).await,
        Err(QuotaExceeded::OpenSnapshots { open: 4, max: 4 })
    );
    for id in [&s1.id, &s3.id] {
        s.release_snapshot(&a, id, "completed").await.unwrap();
    }
    assert!(take(&a, by_count).await.is_ok());
}

/// Many tasks racing `snapshot_within` on one owner: exactly `max_open` snapshots are taken.
pub async fn racing_snapshots_never_exceed_the_open_cap<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = Arc::new(make(Limits::default()).await);
    let a = owner("race");
    put(&*s, &a, "x.md", "x").await;
    let quota = SnapshotQuota {
        max_open: 5,
        max_pinned_bytes: u64::MAX,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (s, a) = (s.clone(), a.clone());
        tasks.spawn(async move { s.snapshot_within(&a, &"race".into(), quota).await });
    }
    let mut taken = 0;
    while let Some(r) = tasks.join_next().await {
        match r.unwrap().expect("the store answers") {
            Ok(_) => taken += 1,
            Err(e) => assert_eq!(e, QuotaExceeded::OpenSnapshots { open: 5, max: 5 }),
        }
    }
    assert_eq!(taken, 5);
    assert_eq!(s.snapshot_usage(&a).await.unwrap().open, 5);
}

/// `forget_released_snapshots` deletes the records of snapshots released before the cutoff,
/// oldest release first, up to the limit, and never an open one.
pub async fn released_snapshots_are_forgotten_after_retention<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    put(&s, &a, "x.md", "A").await;
    let mut released = Vec::new();
    for (o, label) in [(&a, "one"), (&b, "two"), (&a, "three")] {
        let snap = s.snapshot(o, &label.into()).await.unwrap();
        let info = s.release_snapshot(o, &snap.id, "completed").await.unwrap();
        released.push((o.clone(), info));
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let open = s.snapshot(&a, &"open".into()).await.unwrap();
    let known = |o: &Owner, id: &crate::SnapshotId| {
        let (o, id) = (o.clone(), id.clone());
        let s = &s;
        async move { s.snapshot_info(&o, &id).await.is_ok() }
    };
    let later = chrono::Utc::now() + chrono::Duration::seconds(1);
    // Nothing was released before the first release.
    let first_release = released[0].1.released.clone().unwrap().0;
    assert_eq!(
        s.forget_released_snapshots(first_release - chrono::Duration::seconds(1), 10)
            .await
            .unwrap(),
        0
    );
    // The limit takes the oldest release first.
    assert_eq!(s.forget_released_snapshots(later, 1).await.unwrap(), 1);
    assert!(!known(&released[0].0, &released[0].1.id).await);
    assert!(known(&released[1].0, &released[1].1.id).await);
    assert_eq!(s.forget_released_snapshots(later, 10).await.unwrap(), 2);
    for (o, info) in &released {
        assert_eq!(
            s.snapshot_info(o, &info.id).await,
            Err(StoreError::NotFound)
        );
    }
    // The open snapshot stays, and still reads.
    assert!(known(&a, &open.id).await);
    assert_eq!(s.list_at(&a, &open.id, &all()).await.unwrap().len(), 1);
    assert_eq!(s.forget_released_snapshots(later, 10).await.unwrap(), 0);
}

/// Every write and delete appends one event, in commit order, with the wire's version.
pub async fn the_feed_records_every_change_in_order<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let start = s.changes(&a, 0, 100).await.unwrap();
    assert_eq!((start.events.len(), start.head, start.oldest), (0, 0, 1));
    put(&s, &a, "a.md", "1").await;
    put(&s, &a, "a.md", "2").await;
    put(&s, &a, "b.md", "1").await;
    s.delete(&a, &path("a.md"), Precondition::None)
        .await
        .unwrap();
    put(&s, &a, "a.md", "new").await;
    // Refused operations leave no trace in the feed.
    let _ = s
        .put(
            &a,
            &path("b.md"),
            FileWrite::markdown("x"),
            Precondition::IfNoneMatchAny,
        )
        .await;
    let _ = s.delete(&a, &path("zz.md"), Precondition::None).await;
    let page = s.changes(&a, 0, 100).await.unwrap();
    let got: Vec<(u64, &str, u64, bool)> = page
        .events
        .iter()
        .map(|e| (e.seq, e.path.as_str(), e.version, e.deleted))
        .collect();
    assert_eq!(
        got,
        [
            (1, "a.md", 1, false),
            (2, "a.md", 2, false),
            (3, "b.md", 1, false),
            (4, "a.md", 3, true),
            (5, "a.md", 1, false)
        ]
    );
    assert_eq!((page.head, page.oldest), (5, 1));
    let tail = s.changes(&a, 3, 1).await.unwrap();
    assert_eq!(tail.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);
    assert!(s.changes(&a, 5, 10).await.unwrap().events.is_empty());
}

/// Racing writers get gap-free sequence numbers; another owner's feed never shows them.
pub async fn the_feed_is_per_owner_and_gap_free_under_races<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = Arc::new(make(Limits::default()).await);
    let (a, b) = (owner("a"), owner("b"));
    put(&*s, &b, "b.md", "b").await;
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..8 {
        let (s, a) = (s.clone(), a.clone());
        tasks.spawn(async move {
            for i in 0..10 {
                put(&*s, &a, &format!("f{}.md", (t + i) % 5), "x").await;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let page = s.changes(&a, 0, 1000).await.unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=80).collect::<Vec<_>>()
    );
    assert!(page.events.iter().all(|e| e.path.as_str() != "b.md"));
    let b_page = s.changes(&b, 0, 1000).await.unwrap();
    assert_eq!(b_page.events.len(), 1);
    assert_eq!(b_page.head, 1);
}

/// A subscriber hears of a commit after it is readable.
pub async fn subscribers_hear_of_commits<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    let a = owner("a");
    let mut rx = s.subscribe().expect("wsp backends notify subscribers");
    put(&s, &a, "a.md", "1").await;
    let notice = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .expect("a notice arrives")
        .expect("the channel is open");
    assert_eq!(notice.owner, a);
    assert_eq!(notice.seq, 1);
    let page = s.changes(&a, 0, 10).await.unwrap();
    assert_eq!(
        page.head, 1,
        "the change is readable when the notice arrives"
    );
}

/// Every wsp backend implements the whole contract, optional parts included.
pub async fn every_feature_is_offered<S, F, Fut>(make: &F)
where
    S: WorkspaceStore,
    F: Fn(Limits) -> Fut,
    Fut: Future<Output = S>,
{
    let s = make(Limits::default()).await;
    assert_eq!(s.features(), crate::StoreFeatures::ALL);
}
