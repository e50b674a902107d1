//! Pack approvals in PostgreSQL: what one replica approves or revokes, every other sees at once.

use wsp_store::Limits;
use wsp_store::approvals::ApprovalRegistry;
use wsp_store_postgres::PgApprovals;
use wsp_types::Owner;

use crate::support::{TestSchema, database_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_round_trip_across_replicas() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    // One replica's approvals share its store's pool; the other is `wsp agents approve` in
    // another process, connected with the approvals alone.
    let store = schema.store(Limits::default()).await;
    let a = store.approvals();
    let b = PgApprovals::connect(&url, schema.options()).await.unwrap();
    let (x, y) = (
        Owner::parse("t", "x").unwrap(),
        Owner::parse("t", "y").unwrap(),
    );

    assert!(b.approve(&x, "acme.reviewer").await.unwrap());
    assert!(
        !b.approve(&x, "acme.reviewer").await.unwrap(),
        "approved twice"
    );
    assert!(b.approve(&x, "acme.cook").await.unwrap());
    let packs: Vec<String> = a.packs(&x).await.unwrap().into_iter().collect();
    assert_eq!(packs, ["acme.cook", "acme.reviewer"], "seen at once");
    assert!(
        a.packs(&y).await.unwrap().is_empty(),
        "approvals are per owner"
    );

    let listed: Vec<(String, String)> = a
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|ap| (ap.owner.to_string(), ap.pack))
        .collect();
    assert_eq!(
        listed,
        [
            ("t/x".to_owned(), "acme.cook".to_owned()),
            ("t/x".to_owned(), "acme.reviewer".to_owned())
        ]
    );

    assert!(a.revoke(&x, "acme.cook").await.unwrap());
    assert!(!a.revoke(&x, "acme.cook").await.unwrap(), "revoked twice");
    assert!(!a.revoke(&y, "acme.reviewer").await.unwrap(), "not y's");
    let packs: Vec<String> = b.packs(&x).await.unwrap().into_iter().collect();
    assert_eq!(packs, ["acme.reviewer"]);
}
