//! The runner against a fake host of the wire: a conforming host passes every scenario that
//! applies to it, and a host with one behaviour wrong fails exactly the scenarios that check it.

use std::collections::BTreeSet;
use std::time::Duration;

use wsp_conformance::{CATALOGUE, Config, KnownSecret, Report, Verdict};

use crate::support::fake_host::{
    self, Faults, KEY_A, KEY_B, KEY_READONLY, SECRET_ID, SECRET_VALUE,
};

/// Scenarios the fake host does not apply to: it has the workspace (so not `WS-CAP-004`) and
/// none of the wsp extensions (runs, the change feed) and no agents.
const NOT_FOR_THE_FAKE: &[&str] = &[
    "WS-CAP-004",
    "WS-RUN-001",
    "WS-RUN-002",
    "WS-RUN-003",
    "WS-RUN-004",
    "WS-RUN-005",
    "WS-EVT-001",
    "WS-EVT-002",
    "WS-EVT-003",
    "WS-EVT-004",
    "WS-VER-005",
    "WS-CTX-001",
    "WS-CTX-002",
    "WS-SRCH-001",
    "WS-SRCH-002",
    "WS-SRCH-003",
    "WS-MEM-001",
    "WS-MEM-002",
    "WS-AGT-001",
    "WS-AGT-002",
    "WS-AGT-003",
    "WS-AGT-004",
    "WS-AGT-005",
    "WS-AGT-006",
    "WS-AGT-007",
    "WS-AGT-008",
    "WS-AGT-009",
    "WS-AGT-010",
    "WS-PUB-001",
    "WS-PUB-002",
    "WS-PUB-003",
    "WS-PUB-004",
    "WS-PUB-005",
];

fn config(url: &str) -> Config {
    let mut config = Config::new(url);
    config.key_a = Some(KEY_A.into());
    config.key_b = Some(KEY_B.into());
    config.key_readonly = Some(KEY_READONLY.into());
    config.secret = Some(KnownSecret {
        id: SECRET_ID.into(),
        value: SECRET_VALUE.into(),
    });
    config.request_timeout = Duration::from_secs(5);
    config.scenario_timeout = Duration::from_secs(60);
    config
}

fn ids(report: &Report, verdict: Verdict) -> BTreeSet<String> {
    report
        .scenarios
        .iter()
        .filter(|s| s.verdict == verdict)
        .map(|s| s.id.clone())
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

async fn run_against(faults: Faults) -> Report {
    let host = fake_host::start(faults).await;
    wsp_conformance::run(&config(&host.url)).await
}

/// Runs the whole suite against a host with `faults` and checks that exactly `failing` fail and
/// every other scenario that applies passes.
async fn check(faults: Faults, failing: &[&str]) {
    let report = run_against(faults).await;
    let failed = ids(&report, Verdict::Fail);
    assert_eq!(failed, set(failing), "{}", report.summary_text());
    let passed = ids(&report, Verdict::Pass);
    let expected_pass: BTreeSet<String> = CATALOGUE
        .iter()
        .map(|s| s.id.to_string())
        .filter(|id| !NOT_FOR_THE_FAKE.contains(&id.as_str()) && !failing.contains(&id.as_str()))
        .collect();
    assert_eq!(passed, expected_pass, "{}", report.summary_text());
    for s in report
        .scenarios
        .iter()
        .filter(|s| s.verdict == Verdict::Fail)
    {
        assert!(!s.evidence.is_empty(), "{} failed without evidence", s.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conforming_host_passes_every_applicable_scenario() {
    let report = run_against(Faults::default()).await;
    if std::env::var_os("WSP_CONFORMANCE_SHOW").is_some() {
        print!("{}", report.summary_text());
    }
    assert!(report.success(), "{}", report.summary_text());
    assert_eq!(
        ids(&report, Verdict::Inapplicable),
        set(NOT_FOR_THE_FAKE),
        "{}",
        report.summary_text()
    );
    assert_eq!(
        report.counts.passed,
        CATALOGUE.len() - NOT_FOR_THE_FAKE.len()
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("cleanup: deleted ")),
        "{:?}",
        report.notes
    );
    assert!(!report.to_json().contains(SECRET_VALUE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_leaves_no_files_behind() {
    let host = fake_host::start(Faults::default()).await;
    let report = wsp_conformance::run(&config(&host.url)).await;
    assert!(report.success(), "{}", report.summary_text());
    let client = reqwest::Client::new();
    for key in [KEY_A, KEY_B] {
        let body: serde_json::Value = client
            .get(format!("{}/v1/host/workspace/files", host.url))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(body["files"], serde_json::json!([]), "owner with key {key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_if_match_accepted_is_caught() {
    let faults = Faults {
        stale_if_match_accepted: true,
        ..Faults::default()
    };
    check(
        faults,
        &[
            "WS-PUT-010",
            "WS-ETAG-001",
            "WS-ETAG-006",
            "WS-ETAG-008",
            "WS-DEL-005",
            "WS-ATOM-002",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_content_is_caught() {
    let faults = Faults {
        list_includes_content: true,
        ..Faults::default()
    };
    check(
        faults,
        &[
            "WS-LIST-001",
            "WS-LIST-002",
            "WS-LIST-003",
            "WS-LIST-004",
            "WS-LIST-005",
            "WS-BIN-001",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_etags_after_delete_are_caught() {
    let faults = Faults {
        etag_repeats_after_delete: true,
        ..Faults::default()
    };
    check(faults, &["WS-DEL-004", "WS-DEL-005"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_owner_reads_are_caught() {
    let faults = Faults {
        cross_owner_read: true,
        ..Faults::default()
    };
    check(
        faults,
        &["WS-WCT-001", "WS-WCT-002", "WS-WCT-005", "WS-WCT-007"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counting_characters_is_caught() {
    let faults = Faults {
        counts_characters: true,
        ..Faults::default()
    };
    check(faults, &["WS-LIM-002"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_cache_control_is_caught() {
    let faults = Faults {
        no_cache_control: true,
        ..Faults::default()
    };
    check(faults, &["WS-DISC-004"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_transport_that_is_not_served_is_caught() {
    let faults = Faults {
        claims_sse: true,
        ..Faults::default()
    };
    check(faults, &["WS-DISC-010"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transports_without_rest_are_caught() {
    let faults = Faults {
        transports_without_rest: true,
        ..Faults::default()
    };
    check(faults, &["WS-DISC-010"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_a_challenge_is_caught() {
    let faults = Faults {
        no_challenge: true,
        ..Faults::default()
    };
    check(faults, &["WS-AUTH-006"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_if_none_match_is_caught() {
    let faults = Faults {
        ignores_if_none_match: true,
        ..Faults::default()
    };
    check(faults, &["WS-DISC-009"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base64_kept_as_text_is_caught() {
    let faults = Faults {
        binary_as_text: true,
        ..Faults::default()
    };
    check(faults, &["WS-BIN-001", "WS-BIN-002", "WS-BIN-003"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_writes_are_caught() {
    let faults = Faults {
        torn_writes: true,
        ..Faults::default()
    };
    check(faults, &["WS-ATOM-001"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_without_the_workspace_is_inapplicable_not_failing() {
    let report = run_against(Faults {
        workspace_unsupported: true,
        ..Faults::default()
    })
    .await;
    assert!(report.success(), "{}", report.summary_text());
    let always: BTreeSet<String> = CATALOGUE
        .iter()
        .filter(|s| {
            s.id.starts_with("WS-DISC") || s.id.starts_with("WS-CAP-00") && s.id != "WS-CAP-003"
        })
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(
        ids(&report, Verdict::Pass),
        always,
        "{}",
        report.summary_text()
    );
    let rest = CATALOGUE.len() - always.len();
    assert_eq!(
        report.counts.inapplicable,
        rest,
        "{}",
        report.summary_text()
    );
}
