//! The key registry in PostgreSQL beyond the shared suite (`registries.rs`): what is stored,
//! and one first key between replicas starting at once.

use wsp_store::StoreError;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store_postgres::PgKeyRegistry;
use wsp_types::{Owner, Scopes};

use crate::support::{TestSchema, admin, database_url};

/// What the shared suite (`registries.rs`) does not check: a second insert of an id is refused
/// as an internal error, and the table holds the secret's hash only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_secrets_hash_is_stored() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let registry = PgKeyRegistry::connect(&url, schema.options())
        .await
        .unwrap();
    let key = ApiKey::generate();
    let record = KeyRecord::new(
        &key,
        Owner::parse("t", "w").unwrap(),
        "alice".into(),
        Scopes::parse("workspace:read,workspace:write").unwrap(),
    );
    registry.insert(record.clone()).await.unwrap();
    assert!(matches!(
        registry.insert(record).await,
        Err(StoreError::Internal { .. })
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
