//! Hosts for the runner's own tests: a fake host of the wire (optionally faulty), raw TCP
//! listeners that answer garbage, and what the tests against the real `wsp-server` share (keys,
//! limits, reading a report).

#![allow(dead_code)]

pub mod agents;
pub mod fake_host;
pub mod garbage;

use std::collections::BTreeSet;

use wsp_conformance::{Config, Report, Verdict};
use wsp_store::Limits;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_types::{Owner, Scope, Scopes};

/// Registers the runner's three keys in `registry` and sets them in `config`: `key_a`
/// (`tenant-a`, every scope), `key_b` (`tenant-b`, every scope) and `key_readonly` (`tenant-a`,
/// workspace read).
pub async fn add_keys(registry: &MemoryKeyRegistry, config: &mut Config) {
    let read: Scopes = [Scope::WorkspaceRead].into_iter().collect();
    config.key_a = Some(key(registry, "tenant-a", Scopes::all()).await);
    config.key_b = Some(key(registry, "tenant-b", Scopes::all()).await);
    config.key_readonly = Some(key(registry, "tenant-a", read).await);
}

async fn key(registry: &MemoryKeyRegistry, tenant: &str, scopes: Scopes) -> String {
    let k = ApiKey::generate();
    let owner = Owner::parse(tenant, "default").unwrap();
    registry
        .insert(KeyRecord::new(&k, owner, "conformance".into(), scopes))
        .await
        .unwrap();
    k.expose()
}

/// The limits of the in-process hosts' stores.
pub fn limits() -> Limits {
    Limits::default()
        .with_max_file_bytes(64 * 1024)
        .with_max_files(64)
        .with_max_versions(8)
}

/// The ids of the scenarios of `report` with `verdict`.
pub fn ids(report: &Report, verdict: Verdict) -> BTreeSet<&str> {
    report
        .scenarios
        .iter()
        .filter(|s| s.verdict == verdict)
        .map(|s| s.id.as_str())
        .collect()
}
