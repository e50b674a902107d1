//! `Idempotency-Key` records in PostgreSQL: the contract on one store, and a key claimed or
//! completed through one replica seen through another.

use std::sync::Arc;

use wsp_store::Limits;
use wsp_store::idempotency::{Claim, IdempotencyRecords, StoredResponse, check_records};

use crate::support::{database_url, owner, replicas};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_pass_the_battery() {
    let url = database_url();
    let (_schema, stores) = replicas(&url, Limits::default(), 1).await;
    check_records(Arc::new(stores[0].idempotency_records())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_used_on_one_replica_replays_on_another() {
    let url = database_url();
    let (_schema, stores) = replicas(&url, Limits::default(), 2).await;
    let one: Arc<dyn IdempotencyRecords> = Arc::new(stores[0].idempotency_records());
    let two: Arc<dyn IdempotencyRecords> = Arc::new(stores[1].idempotency_records());
    let o = owner("t");
    let response = StoredResponse {
        status: 200,
        headers: vec![("etag".into(), "\"v1\"".into())],
        body: b"first".to_vec(),
    };
    assert_eq!(one.claim(&o, "k", &[1; 32]).await.unwrap(), Claim::Claimed);
    assert_eq!(
        two.claim(&o, "k", &[1; 32]).await.unwrap(),
        Claim::InProgress
    );
    assert_eq!(two.claim(&o, "k", &[2; 32]).await.unwrap(), Claim::Mismatch);
    one.complete(&o, "k", &[1; 32], &response).await.unwrap();
    assert_eq!(
        two.claim(&o, "k", &[1; 32]).await.unwrap(),
        Claim::Replay(response)
    );

    // Concurrent claims through both replicas: exactly one wins.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let records = if i % 2 == 0 { one.clone() } else { two.clone() };
            let o = o.clone();
            tokio::spawn(async move { records.claim(&o, "race", &[3; 32]).await.unwrap() })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Claim::Claimed => claimed += 1,
            Claim::InProgress => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(claimed, 1);
    // An abandon on one replica frees the key for the other.
    one.abandon(&o, "race", &[3; 32]).await.unwrap();
    assert_eq!(
        two.claim(&o, "race", &[4; 32]).await.unwrap(),
        Claim::Claimed
    );
}
