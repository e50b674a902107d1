//! The `wsp-store` backend battery on one store, in a fresh schema per test.

use crate::support::{TestStore, database_url};

wsp_store::battery_tests!({
    let url = database_url();
    move |limits| {
        let url = url.clone();
        async move { TestStore::new(&url, limits).await }
    }
});
