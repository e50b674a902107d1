//! The runner against hosts that are not there or answer garbage: a clear report, never a panic,
//! and a bounded run time.

use std::time::{Duration, Instant};

use wsp_conformance::{Config, Report, Verdict};

use crate::support::garbage::{self, Behaviour, http};

fn config(url: &str) -> Config {
    let mut config = Config::new(url);
    config.key_a = Some("key-a".into());
    config.key_b = Some("key-b".into());
    config.request_timeout = Duration::from_millis(400);
    config.scenario_timeout = Duration::from_secs(3);
    config
}

fn scenario<'r>(report: &'r Report, id: &str) -> &'r wsp_conformance::ScenarioReport {
    report.scenarios.iter().find(|s| s.id == id).unwrap()
}

/// Without a usable discovery document: the discovery scenarios fail with `reason_part` in
/// WS-DISC-001's reason, and every gated scenario is blocked (not run, not passed).
async fn check_unusable_host(url: &str, reason_part: &str) {
    let started = Instant::now();
    let report = wsp_conformance::run(&config(url)).await;
    if std::env::var_os("WSP_CONFORMANCE_SHOW").is_some() {
        print!("{}", report.summary_text());
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert!(!report.success());
    let first = scenario(&report, "WS-DISC-001");
    assert_eq!(first.verdict, Verdict::Fail, "{}", report.summary_text());
    assert!(
        first.reason.contains(reason_part),
        "{:?} lacks {reason_part:?}",
        first.reason
    );
    assert!(
        !first.evidence.is_empty(),
        "no evidence for {}",
        first.reason
    );
    assert_eq!(report.counts.passed, 0, "{}", report.summary_text());
    for s in report.scenarios.iter().filter(|s| s.gate != "always") {
        assert_eq!(s.verdict, Verdict::Blocked, "{}: {}", s.id, s.reason);
        assert!(s.reason.contains("discovery"), "{}: {}", s.id, s.reason);
    }
    // Every rendering still works.
    let text = report.summary_text();
    assert!(text.lines().last().unwrap().ends_with("blocked"));
    serde_json::from_str::<serde_json::Value>(&report.to_json()).unwrap();
    assert!(report.to_junit().contains("<testsuites"));
}

#[tokio::test]
async fn a_closed_port_is_reported_not_panicked() {
    let url = garbage::closed_port().await;
    check_unusable_host(&url, "connect").await;
}

#[tokio::test]
async fn an_html_answer_is_reported() {
    let host = garbage::start(Behaviour::Reply(http(
        "200 OK",
        "text/html",
        "<html><body>hello</body></html>",
    )))
    .await;
    check_unusable_host(&host.url, "not application/json").await;
}

#[tokio::test]
async fn invalid_json_is_reported() {
    let host = garbage::start(Behaviour::Reply(http(
        "200 OK",
        "application/json",
        "{\"protocolVersion\": ",
    )))
    .await;
    check_unusable_host(&host.url, "did not answer JSON").await;
}

#[tokio::test]
async fn server_errors_are_reported() {
    let host = garbage::start(Behaviour::Reply(http(
        "500 Internal Server Error",
        "text/plain",
        "oops",
    )))
    .await;
    check_unusable_host(&host.url, "got 500").await;
}

#[tokio::test]
async fn a_hanging_host_times_out() {
    let host = garbage::start(Behaviour::Hang).await;
    check_unusable_host(&host.url, "no response within 400 ms").await;
}

#[tokio::test]
async fn a_host_that_closes_the_connection_is_reported() {
    let host = garbage::start(Behaviour::Close).await;
    check_unusable_host(&host.url, "GET").await;
}

#[tokio::test]
async fn a_non_http_answer_is_reported() {
    let host = garbage::start(Behaviour::Reply(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec())).await;
    check_unusable_host(&host.url, "GET").await;
}

/// Discovery advertises the workspace, the file endpoints misbehave: every workspace scenario
/// fails (or is blocked/inapplicable) with a reason; none passes and nothing panics.
async fn check_broken_endpoints(other: Behaviour, filters: &[&str]) -> Report {
    let host = garbage::start(Behaviour::DiscoveryThen(Box::new(other))).await;
    let mut config = config(&host.url);
    config.filters = filters.iter().map(|f| f.to_string()).collect();
    let started = Instant::now();
    let report = wsp_conformance::run(&config).await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert!(!report.success());
    for s in &report.scenarios {
        assert!(!s.reason.is_empty(), "{} has no reason", s.id);
        assert!(!s.reason.contains("panicked"), "{}: {}", s.id, s.reason);
        if s.id.starts_with("WS-PUT") || s.id.starts_with("WS-ETAG") || s.id.starts_with("WS-ATOM")
        {
            assert_eq!(s.verdict, Verdict::Fail, "{}: {}", s.id, s.reason);
            assert!(!s.evidence.is_empty(), "{} failed without evidence", s.id);
        }
    }
    report
}

#[tokio::test]
async fn garbage_file_endpoints_fail_every_workspace_scenario() {
    let report = check_broken_endpoints(
        Behaviour::Reply(http("200 OK", "text/html", "<html>no</html>")),
        &[],
    )
    .await;
    let put = scenario(&report, "WS-PUT-001");
    assert!(put.reason.contains("not JSON"), "{}", put.reason);
    assert_eq!(scenario(&report, "WS-DISC-001").verdict, Verdict::Pass);
}

#[tokio::test]
async fn erroring_file_endpoints_fail_with_the_status() {
    let report = check_broken_endpoints(
        Behaviour::Reply(http(
            "503 Service Unavailable",
            "application/json",
            "{\"error\":\"service_unavailable\",\"message\":\"down\"}",
        )),
        &["WS-PUT", "WS-ETAG", "WS-ATOM", "WS-WCT"],
    )
    .await;
    let put = scenario(&report, "WS-PUT-001");
    assert!(
        put.reason.contains("expected status 200, got 503"),
        "{}",
        put.reason
    );
    assert!(put.reason.contains("service_unavailable"), "{}", put.reason);
}

#[tokio::test]
async fn hanging_file_endpoints_time_out() {
    let report = check_broken_endpoints(Behaviour::Hang, &["WS-PUT-00", "WS-ATOM"]).await;
    let put = scenario(&report, "WS-PUT-001");
    assert!(
        put.reason.contains("no response within 400 ms"),
        "{}",
        put.reason
    );
    assert!(
        report.notes.iter().any(|n| n.contains("stopped answering")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn closed_connections_on_file_endpoints_fail() {
    check_broken_endpoints(Behaviour::Close, &["WS-PUT", "WS-ETAG"]).await;
}
