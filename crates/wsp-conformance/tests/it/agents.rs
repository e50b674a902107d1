//! The agent inventory and publish scenarios against the real `wsp-server` in process: the
//! correct host passes them under either scope, and a host with one behaviour wrong fails
//! exactly the scenarios that check it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use wsp_conformance::{Config, Report, Verdict};
use wsp_server::{AgentRegistry, AppState, KeyAuthenticator, RegisteredAgent};
use wsp_store::keys::MemoryKeyRegistry;
use wsp_store::{MemoryStore, StoreFuture};
use wsp_types::Owner;
use wsp_types::wire::InstallScope;

use crate::support;
use crate::support::agents::{AGENT_A, PRIVATE, configure, registry};
use crate::support::ids;

/// A registry that keeps `tenant` scope but approves every pack for everyone (a leak).
struct ApprovesEverything(Arc<dyn AgentRegistry>);

impl AgentRegistry for ApprovesEverything {
    fn install_scope(&self) -> InstallScope {
        self.0.install_scope()
    }
    fn agents(&self) -> StoreFuture<'_, Vec<RegisteredAgent>> {
        self.0.agents()
    }
    fn agent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<RegisteredAgent>> {
        self.0.agent(id)
    }
    fn approved_packs<'a>(&'a self, _: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        Box::pin(async move {
            Ok(self
                .0
                .agents()
                .await?
                .into_iter()
                .map(|a| a.pack_name)
                .collect())
        })
    }
}

/// A registry that calls one private agent shared.
struct CallsShared(Arc<dyn AgentRegistry>, &'static str);

impl AgentRegistry for CallsShared {
    fn install_scope(&self) -> InstallScope {
        self.0.install_scope()
    }
    fn agents(&self) -> StoreFuture<'_, Vec<RegisteredAgent>> {
        self.0.agents()
    }
    fn agent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<RegisteredAgent>> {
        Box::pin(async move {
            Ok(self.0.agent(id).await?.map(|mut a| {
                a.shared |= a.id == self.1;
                a
            }))
        })
    }
    fn approved_packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        self.0.approved_packs(owner)
    }
}

/// Runs the WS-AGT and WS-PUB scenarios against a host serving `agents`; `tweak` adjusts the
/// runner's configuration.
async fn run(agents: Arc<dyn AgentRegistry>, tweak: impl FnOnce(&mut Config)) -> Report {
    let keys = Arc::new(MemoryKeyRegistry::default());
    let mut config = Config::new("http://127.0.0.1:1");
    support::add_keys(&keys, &mut config).await;
    configure(&keys, &mut config).await;
    let store = Arc::new(MemoryStore::new(support::limits()));
    let state = AppState::builder(store, Arc::new(KeyAuthenticator::new(keys)))
        .agents(agents)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    config.base_url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(wsp_server::serve(listener, state, std::future::pending()));
    config.filters = vec!["WS-AGT".into(), "WS-PUB".into()];
    config.request_timeout = Duration::from_secs(10);
    tweak(&mut config);
    let report = wsp_conformance::run(&config).await;
    server.abort();
    report
}

fn verdicts(report: &Report) -> HashMap<&str, Verdict> {
    report
        .scenarios
        .iter()
        .map(|s| (s.id.as_str(), s.verdict))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_scoped_host_passes_the_two_principal_proof_and_publish() {
    let report = run(registry("tenant"), |_| {}).await;
    assert_eq!(report.scenarios.len(), 15, "{}", report.summary_text());
    assert_eq!(
        ids(&report, Verdict::Inapplicable),
        BTreeSet::from(["WS-AGT-008"]),
        "{}",
        report.summary_text()
    );
    assert_eq!(report.counts.passed, 14, "{}", report.summary_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_scoped_host_gives_everyone_one_list() {
    let report = run(registry("host"), |_| {}).await;
    assert_eq!(
        ids(&report, Verdict::Inapplicable),
        BTreeSet::from(["WS-AGT-004", "WS-AGT-005", "WS-AGT-006"]),
        "{}",
        report.summary_text()
    );
    assert_eq!(report.counts.passed, 12, "{}", report.summary_text());
    assert_eq!(verdicts(&report)["WS-AGT-008"], Verdict::Pass);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_lists_every_agent_to_every_tenant_is_caught() {
    let report = run(Arc::new(ApprovesEverything(registry("tenant"))), |_| {}).await;
    assert_eq!(
        ids(&report, Verdict::Fail),
        BTreeSet::from(["WS-AGT-004", "WS-AGT-005", "WS-AGT-006"]),
        "{}",
        report.summary_text()
    );
    for s in report
        .scenarios
        .iter()
        .filter(|s| s.verdict == Verdict::Fail)
    {
        assert!(!s.evidence.is_empty(), "{} keeps its evidence", s.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_mistakes_private_agents_for_shared_ones_is_caught() {
    // The refused target (--private-agent) becomes a publish target.
    let report = run(Arc::new(CallsShared(registry("tenant"), AGENT_A)), |_| {}).await;
    assert_eq!(
        ids(&report, Verdict::Fail),
        BTreeSet::from(["WS-PUB-003"]),
        "{}",
        report.summary_text()
    );
    // The publishing agent itself counts as shared: it may not publish at all.
    let report = run(Arc::new(CallsShared(registry("tenant"), PRIVATE)), |_| {}).await;
    assert_eq!(
        ids(&report, Verdict::Fail),
        BTreeSet::from(["WS-PUB-001", "WS-PUB-005"]),
        "{}",
        report.summary_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_text_given_as_the_prompt_marker_is_caught() {
    // The persona is served; a host that served its prompt would show it the same way.
    let report = run(registry("tenant"), |c| {
        c.prompt_marker = Some("Code Reviewer".into());
    })
    .await;
    assert_eq!(
        ids(&report, Verdict::Fail),
        BTreeSet::from(["WS-AGT-009"]),
        "{}",
        report.summary_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_inputs_block_instead_of_failing() {
    let report = run(registry("tenant"), |c| {
        c.agents_a.clear();
        c.key_private_agent = None;
        c.shared_agent = None;
    })
    .await;
    assert_eq!(
        ids(&report, Verdict::Blocked),
        BTreeSet::from([
            "WS-AGT-004",
            "WS-AGT-005",
            "WS-AGT-006",
            "WS-PUB-001",
            "WS-PUB-002",
            "WS-PUB-003",
            "WS-PUB-004",
            "WS-PUB-005",
        ]),
        "{}",
        report.summary_text()
    );
    assert!(ids(&report, Verdict::Fail).is_empty());
    // Wrong expectations fail: A's inventory is not what --agent-a says.
    let report = run(registry("tenant"), |c| {
        c.agents_a = vec![AGENT_A.into(), "acme.cook".into()];
    })
    .await;
    assert!(
        ids(&report, Verdict::Fail).contains("WS-AGT-004"),
        "{}",
        report.summary_text()
    );
}
