//! The PostgreSQL store against a real server: the backend battery on one store and across
//! replicas, replica races (in one process and as processes killed with SIGKILL), migrations,
//! keys, outages, the stored data model, and TLS to the server (`tls`, on clusters of its own).
//!
//! The server is `WSP_TEST_POSTGRES_URL`, or else a throwaway cluster shared by the test
//! binaries of one `cargo test` (see `wsp-pgtest` and the crate docs); the binary says on stderr
//! which one it used. Without either, every test fails with one line saying what to do. Each
//! test has a schema of its own.

mod support;

mod battery;
mod group_commit;
mod idempotency;
mod keys;
mod kill;
mod model;
mod outage;
mod registries;
mod replicas;
mod tls;
