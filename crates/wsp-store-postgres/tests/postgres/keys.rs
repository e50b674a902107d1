//! The key registry in PostgreSQL: what one replica inserts, every other sees at once.

use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store::{Limits, StoreError};
use wsp_store_postgres::PgKeyRegistry;
use wsp_types::{Owner, Scopes};

use crate::support::{TestSchema, admin, database_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_round_trip_across_replicas() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    // One replica's registry shares its store's pool; the other is a separate process's view
    // (`wsp keys create` connects with the registry alone).
    let store = schema.store(Limits::default()).await;
    let a = store.key_registry();
    let b = PgKeyRegistry::connect(&url, schema.options())
        .await
        .unwrap();

    let key = ApiKey::generate();
    let mut record = KeyRecord::new(
        &key,
        Owner::parse("t", "w").unwrap(),
        "alice".into(),
        Scopes::parse("workspace:read,workspace:write").unwrap(),
    );
    record.agent = Some("acme.reviewer".into());
    a.insert(record.clone()).await.unwrap();

    let found = b.lookup(key.id()).await.unwrap().expect("seen at once");
    assert!(key.verify(&found.secret_hash));
    assert_eq!(found.id, record.id);
    assert_eq!(found.owner, record.owner);
    assert_eq!(found.principal, record.principal);
    assert_eq!(found.scopes, record.scopes);
    assert_eq!(found.agent, record.agent);
    assert_eq!(found.revoked_at, None);
    assert_eq!(
        found.created_at.timestamp_micros(),
        record.created_at.timestamp_micros(),
        "kept to the microsecond"
    );

    let plain = KeyRecord::new(
        &ApiKey::generate(),
        Owner::parse("t", "w2").unwrap(),
        "bob".into(),
        Scopes::NONE,
    );
    b.insert(plain.clone()).await.unwrap();
    let listed = a.list().await.unwrap();
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [record.id.as_str(), plain.id.as_str()],
        "oldest first"
    );
    assert_eq!(listed[1].scopes, Scopes::NONE);

    assert_eq!(a.lookup("000000000000").await.unwrap(), None);
    b.revoke(key.id()).await.unwrap();
    let revoked = a.lookup(key.id()).await.unwrap().unwrap();
    let when = revoked
        .revoked_at
        .expect("revoked through the other replica");
    b.revoke(key.id()).await.unwrap();
    assert_eq!(
        a.lookup(key.id()).await.unwrap().unwrap().revoked_at,
        Some(when),
        "revoking again keeps the first time"
    );
    assert_eq!(a.revoke("000000000000").await, Err(StoreError::NotFound));

    // A second insert of the same id is refused.
    assert!(matches!(
        b.insert(record.clone()).await,
        Err(StoreError::Internal(_))
    ));

    // Only the hash is stored.
    let secret = key.expose();
    let secret = secret.rsplit('_').next().unwrap().to_owned();
    let db = admin(&url).await;
    let leaked: i64 = db
        .query_one(
            &schema.sql(
                "SELECT count(*) FROM {s}.wsp_keys
                 WHERE position(convert_to($1, 'UTF8') IN secret_hash) > 0
                    OR principal = $1 OR id = $1",
            ),
            &[&secret],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(leaked, 0);
    let stored: Vec<u8> = db
        .query_one(
            &schema.sql("SELECT secret_hash FROM {s}.wsp_keys WHERE id = $1"),
            &[&key.id()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, key.secret_hash());
}
