//! Integration tests of wsp-store-sqlite, one binary: the `wsp-store` backend battery, the
//! stored rows under the battery's model scripts, the shared key and approval suites, what the
//! battery cannot see (persistence across reopen, locks, SQLite edge cases) and the modes of the
//! files a store creates.
//!
//! `kill9.rs` is a test binary of its own: it has its own `main` (`harness = false`) and runs
//! itself again as the child it kills.

mod battery;
mod file_modes;
mod model;
mod registries;
mod sqlite;
