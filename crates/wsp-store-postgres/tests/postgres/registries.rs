//! The shared key and approval suites in PostgreSQL: one replica's registry (sharing its
//! store's pool) and another process's (`wsp keys create`, `wsp agents approve`, connected
//! with the registry alone) on one schema.

use std::sync::Arc;

use wsp_store::Limits;
use wsp_store::battery::registries::{
    approval_registry_contract, insert_first_contract, key_registry_contract,
};
use wsp_store::keys::KeyRegistry;
use wsp_store_postgres::{PgApprovals, PgKeyRegistry};

use crate::support::{TestSchema, database_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_keep_the_contract_across_replicas() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let store = schema.store(Limits::default()).await;
    let other = PgKeyRegistry::connect(&url, schema.options())
        .await
        .expect("the registry connects");
    key_registry_contract(&store.key_registry(), &other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_keep_the_contract_across_replicas() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let store = schema.store(Limits::default()).await;
    let other = PgApprovals::connect(&url, schema.options())
        .await
        .expect("the approvals connect");
    approval_registry_contract(&store.approvals(), &other).await;
}

/// Replicas starting at once on an empty database create one first key between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_key_is_inserted_once_across_replicas() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let mut views: Vec<Arc<dyn KeyRegistry>> = Vec::new();
    for _ in 0..2 {
        let registry = PgKeyRegistry::connect(&url, schema.options())
            .await
            .expect("the registry connects");
        views.push(Arc::new(registry));
    }
    insert_first_contract(&views, 8).await;
}
