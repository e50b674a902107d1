//! Integration tests of wsp-server, one binary: the file endpoints, runs and the change feed, the
//! agent inventory and publish, health and readiness, hostile connections, and every error
//! envelope and the discovery document as committed insta snapshots, all over real HTTP.
//!
//! `redaction.rs` is a test binary of its own: it installs a process-wide tracing subscriber
//! and checks that no secret reaches any log line of its process, which the tests here (some of
//! which store the same secret unredacted) would write into.

#[path = "../support/mod.rs"]
mod support;

mod agents;
mod cache;
mod connections;
mod envelopes;
mod feed;
mod files;
mod health;
mod memory;
mod runs;
