//! The PostgreSQL store against a real server: the backend battery on one store and across
//! replicas, replica races (in one process and as processes killed with SIGKILL), migrations,
//! keys, outages and the stored data model.
//!
//! The server comes from `WSP_TEST_POSTGRES_URL`; without it every test fails, unless
//! `WSP_SKIP_POSTGRES=1` says to skip them (see the crate docs). Each test has a schema of its own.

mod support;

mod approvals;
mod battery;
mod idempotency;
mod keys;
mod kill;
mod model;
mod outage;
mod replicas;
