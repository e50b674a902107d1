//! The contracts of [`KeyRegistry`] and [`ApprovalRegistry`] as tests, shared by every backend.
//!
//! Each suite takes two views of one registry: the same registry twice, or two registries over
//! the same storage as two processes would open it (a server and `wsp keys create`). What one
//! view writes, the other must see at once.

use std::sync::Arc;

use chrono::{Duration, SubsecRound};
use wsp_types::{Owner, Scopes};

use crate::StoreError;
use crate::approvals::ApprovalRegistry;
use crate::keys::{ApiKey, KeyRecord, KeyRegistry};

/// An id no key has (key ids are 12 hex digits; this one is never generated twice).
const UNKNOWN_ID: &str = "000000000000";

fn owner(tenant: &str, workspace: &str) -> Owner {
    Owner::parse(tenant, workspace).expect("a valid owner")
}

/// Key records round-trip through the other view; the list is oldest first; revoking is seen at
/// once and keeps the first revocation's time; an unknown id is absent and cannot be revoked; a
/// second insert of an id is refused.
pub async fn key_registry_contract(a: &dyn KeyRegistry, b: &dyn KeyRegistry) {
    let key = ApiKey::generate();
    let mut first = KeyRecord::new(
        &key,
        owner("t", "w"),
        "alice".into(),
        Scopes::parse("workspace:read,workspace:write").expect("valid scopes"),
    );
    first.agent = Some("acme.reviewer".into());
    // Backends keep times to the microsecond.
    first.created_at = first.created_at.trunc_subsecs(6);
    a.insert(first.clone()).await.expect("a key is stored");

    let found = b
        .lookup(key.id())
        .await
        .expect("lookup")
        .expect("seen at once");
    assert_eq!(found, first, "every field is kept");
    assert!(key.verify(&found.secret_hash), "the secret verifies");
    assert!(
        !ApiKey::generate().verify(&found.secret_hash),
        "another secret does not"
    );

    let mut second = KeyRecord::new(
        &ApiKey::generate(),
        owner("t", "w2"),
        "bob".into(),
        Scopes::NONE,
    );
    second.created_at = first.created_at + Duration::seconds(1);
    b.insert(second.clone())
        .await
        .expect("a second key is stored");
    let listed = a.list().await.expect("list");
    assert_eq!(listed, [first.clone(), second.clone()], "oldest first");

    assert_eq!(a.lookup(UNKNOWN_ID).await, Ok(None));
    assert_eq!(a.revoke(UNKNOWN_ID).await, Err(StoreError::NotFound));

    b.revoke(key.id()).await.expect("revoke");
    let revoked = a.lookup(key.id()).await.expect("lookup").expect("kept");
    let when = revoked.revoked_at.expect("revoked through the other view");
    assert_eq!(
        (revoked.id.as_str(), revoked.secret_hash),
        (first.id.as_str(), first.secret_hash),
        "a revoked key stays listed for its lookups to fail"
    );
    a.revoke(key.id()).await.expect("revoking again succeeds");
    let again = b.lookup(key.id()).await.expect("lookup").expect("kept");
    assert_eq!(again.revoked_at, Some(when), "the first revocation's time");
    assert_eq!(
        b.lookup(&second.id)
            .await
            .expect("lookup")
            .map(|r| r.revoked_at),
        Some(None),
        "revoking one key leaves the others"
    );

    assert!(
        b.insert(first.clone()).await.is_err(),
        "a second insert of one id is refused"
    );
    assert_eq!(a.list().await.expect("list").len(), 2);
}

/// Approvals are per owner, idempotent in both directions, listed sorted by tenant, workspace
/// and pack, and seen through the other view at once.
pub async fn approval_registry_contract(a: &dyn ApprovalRegistry, b: &dyn ApprovalRegistry) {
    let (x, y, other) = (owner("t", "x"), owner("t", "y"), owner("s", "x"));
    assert!(b.approve(&x, "acme.reviewer").await.expect("approve"));
    assert!(
        !b.approve(&x, "acme.reviewer").await.expect("approve"),
        "approved twice"
    );
    assert!(b.approve(&x, "acme.cook").await.expect("approve"));
    assert!(a.approve(&other, "acme.cook").await.expect("approve"));
    let packs: Vec<String> = a.packs(&x).await.expect("packs").into_iter().collect();
    assert_eq!(packs, ["acme.cook", "acme.reviewer"], "seen at once");
    assert!(
        a.packs(&y).await.expect("packs").is_empty(),
        "approvals are per owner"
    );

    let listed: Vec<(String, String)> = b
        .list()
        .await
        .expect("list")
        .into_iter()
        .map(|ap| (ap.owner.to_string(), ap.pack))
        .collect();
    let pair = |o: &str, p: &str| (o.to_owned(), p.to_owned());
    assert_eq!(
        listed,
        [
            pair("s/x", "acme.cook"),
            pair("t/x", "acme.cook"),
            pair("t/x", "acme.reviewer"),
        ]
    );

    assert!(a.revoke(&x, "acme.cook").await.expect("revoke"));
    assert!(
        !a.revoke(&x, "acme.cook").await.expect("revoke"),
        "revoked twice"
    );
    assert!(
        !a.revoke(&y, "acme.reviewer").await.expect("revoke"),
        "not y's"
    );
    let packs: Vec<String> = b.packs(&x).await.expect("packs").into_iter().collect();
    assert_eq!(packs, ["acme.reviewer"]);
    let packs: Vec<String> = b.packs(&other).await.expect("packs").into_iter().collect();
    assert_eq!(packs, ["acme.cook"], "another tenant's approval stays");
    assert!(
        b.approve(&x, "acme.cook").await.expect("approve"),
        "approved anew"
    );
}

/// Checks [`KeyRegistry::insert_first`] on an empty registry seen through `views` (one
/// registry, or several over the same storage, as separate processes would open it): of `n`
/// concurrent calls, spread over the views, each from its own task, exactly one stores its
/// record, and every view then lists that record alone. A later call stores nothing. Panics with
/// what went wrong.
pub async fn insert_first_contract(views: &[Arc<dyn KeyRegistry>], n: usize) {
    let owner = owner("t", "w");
    let record = |principal: String| {
        KeyRecord::new(&ApiKey::generate(), owner.clone(), principal, Scopes::all())
    };
    // Every call waits for the others, and each first reads the registry (which opens the
    // connections of a pooled backend), so the inserts really meet.
    let start = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let registry = views[i % views.len()].clone();
            let record = record(format!("first-{i}"));
            let start = start.clone();
            tokio::spawn(async move {
                registry.list().await?;
                start.wait().await;
                registry.insert_first(record).await
            })
        })
        .collect();
    let mut stored = 0;
    for task in tasks {
        if task.await.expect("no panic").expect("insert_first") {
            stored += 1;
        }
    }
    for view in views {
        let all = view.list().await.expect("list");
        assert_eq!(
            (stored, all.len()),
            (1, 1),
            "{stored} of {n} concurrent first inserts stored a record; a view lists {}",
            all.len()
        );
        let late = record("late".into());
        assert!(!view.insert_first(late).await.expect("insert_first"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::MemoryApprovals;
    use crate::keys::MemoryKeyRegistry;

    #[tokio::test]
    async fn the_memory_key_registry_keeps_the_contract() {
        let registry = MemoryKeyRegistry::default();
        key_registry_contract(&registry, &registry).await;
    }

    #[tokio::test]
    async fn the_memory_approvals_keep_the_contract() {
        let registry = MemoryApprovals::default();
        approval_registry_contract(&registry, &registry).await;
    }
}
