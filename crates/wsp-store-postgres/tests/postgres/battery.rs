//! The `wsp-store` backend battery on one store, in a fresh schema per test.

use crate::support::{TestStore, database_or_skip};

wsp_store::battery_tests!({
    let url = database_or_skip!();
    move |limits| {
        let url = url.clone();
        async move { TestStore::new(&url, limits).await }
    }
});
