//! The suite against the real `wsp-server` in process: the correct host passes everything that
//! applies, and the same host over a store with one behaviour wrong fails exactly the scenarios
//! that check that behaviour.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use wsp_conformance::{Config, KnownSecret, Report, Verdict};
use wsp_server::{AppState, KeyAuthenticator, TenantSecrets};
use wsp_store::keys::MemoryKeyRegistry;
use wsp_store::{
    Deleted, FileMeta, FileWrite, Limits, MemoryStore, Precondition, Redactor, Secret, StoreFuture,
    StoredFile, WorkspaceStore,
};
use wsp_types::{Owner, OwnerId, WorkspacePath, WorkspacePrefix};

use crate::support;
use crate::support::ids;

const SECRET: (&str, &str) = ("real-host-secret", "a-secret-value-for-wsr-1");

/// A store that ignores every precondition on writes: a stale `If-Match` is accepted. A write
/// of a daily memory log waits a little first, so that concurrent appends (which read, then
/// write conditionally) always overlap and the lost lines show, as they would under load.
struct IgnoresPreconditions(MemoryStore);

impl WorkspaceStore for IgnoresPreconditions {
    fn limits(&self) -> Limits {
        self.0.limits()
    }
    fn list<'a>(&'a self, o: &'a Owner, p: &'a WorkspacePrefix) -> StoreFuture<'a, Vec<FileMeta>> {
        self.0.list(o, p)
    }
    fn get<'a>(
        &'a self,
        o: &'a Owner,
        p: &'a WorkspacePath,
        v: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        self.0.get(o, p, v)
    }
    fn put<'a>(
        &'a self,
        o: &'a Owner,
        p: &'a WorkspacePath,
        w: FileWrite,
        _: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        let slow = p.as_str().starts_with("memory/");
        Box::pin(async move {
            if slow {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            self.0.put(o, p, w, Precondition::None).await
        })
    }
    fn delete<'a>(
        &'a self,
        o: &'a Owner,
        p: &'a WorkspacePath,
        pre: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        self.0.delete(o, p, pre)
    }
    fn history<'a>(&'a self, o: &'a Owner, p: &'a WorkspacePath) -> StoreFuture<'a, Vec<FileMeta>> {
        self.0.history(o, p)
    }
}

async fn run_against(store: Arc<dyn WorkspaceStore>) -> Report {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let secret = Secret {
        id: SECRET.0.into(),
        value: SECRET.1.into(),
    };
    let secrets = TenantSecrets::new(HashMap::from([(
        OwnerId::parse("tenant-a").unwrap(),
        Redactor::new(vec![secret]).unwrap(),
    )]));
    let state = AppState::builder(store, Arc::new(KeyAuthenticator::new(registry.clone())))
        .secrets(Arc::new(secrets))
        .agents(support::agents::registry("tenant"))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(wsp_server::serve(listener, state, std::future::pending()));
    let mut config = Config::new(url);
    support::add_keys(&registry, &mut config).await;
    support::agents::configure(&registry, &mut config).await;
    config.secret = Some(KnownSecret {
        id: SECRET.0.into(),
        value: SECRET.1.into(),
    });
    config.request_timeout = Duration::from_secs(10);
    let report = wsp_conformance::run(&config).await;
    server.abort();
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_real_host_passes_everything_that_applies() {
    let report = run_against(Arc::new(MemoryStore::new(support::limits()))).await;
    assert_eq!(
        ids(&report, Verdict::Fail),
        BTreeSet::new(),
        "{}",
        report.summary_text()
    );
    assert_eq!(
        ids(&report, Verdict::Blocked),
        BTreeSet::new(),
        "{}",
        report.summary_text()
    );
    assert_eq!(
        ids(&report, Verdict::Inapplicable),
        // The agents are tenant-scoped, so the host-scope scenario does not apply.
        BTreeSet::from(["WS-CAP-004", "WS-AGT-008"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_host_that_accepts_stale_if_match_fails_exactly_the_precondition_scenarios() {
    let report = run_against(Arc::new(IgnoresPreconditions(MemoryStore::new(
        support::limits(),
    ))))
    .await;
    let failed = ids(&report, Verdict::Fail);
    let expected = BTreeSet::from(EXPECTED_PRECONDITION_FAILURES);
    assert_eq!(failed, expected, "{}", report.summary_text());
    for s in report
        .scenarios
        .iter()
        .filter(|s| s.verdict == Verdict::Fail)
    {
        assert!(
            !s.evidence.is_empty(),
            "{} keeps the exchange that showed the fault",
            s.id
        );
    }
}

/// Every scenario that sends a write precondition the store must honour (deletes still honour
/// theirs, so WS-ETAG-007 passes), and the concurrent memory appends, which rely on one.
const EXPECTED_PRECONDITION_FAILURES: [&str; 12] = [
    "WS-ATOM-002",
    "WS-ATOM-004",
    "WS-DEL-005",
    "WS-ERR-001",
    "WS-ETAG-001",
    "WS-ETAG-004",
    "WS-ETAG-005",
    "WS-ETAG-006",
    "WS-ETAG-008",
    "WS-MEM-001",
    "WS-PUT-010",
    "WS-WCT-007",
];
