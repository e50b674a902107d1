//! The runner's own rules: panics and hangs are contained, `--strict`, expected failures,
//! missing keys, filters, and the CLI's reports and exit codes.

use std::process::ExitCode;
use std::time::Duration;

use wsp_conformance::{
    Config, ConformanceArgs, ExpectedFailures, Gate, Outcome, Report, Scenario, Verdict, run_cli,
    run_scenarios,
};

use crate::support;
use crate::support::fake_host::{self, Faults, KEY_A, KEY_B};

static ODD_SCENARIOS: &[Scenario] = &[
    Scenario {
        id: "T-PANIC-001",
        clause: "test",
        gate: Gate::Always,
        title: "panics",
        run: |_| Box::pin(async { panic!("boom in a scenario") }),
    },
    Scenario {
        id: "T-SLOW-001",
        clause: "test",
        gate: Gate::Always,
        title: "never ends",
        run: |_| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(Outcome::pass("woke up"))
            })
        },
    },
    Scenario {
        id: "T-UNOBS-001",
        clause: "test",
        gate: Gate::Always,
        title: "cannot be observed",
        run: |_| Box::pin(async { Ok(Outcome::unobservable("limit too large to exercise")) }),
    },
    Scenario {
        id: "T-FAIL-001",
        clause: "test",
        gate: Gate::Always,
        title: "fails",
        run: |_| Box::pin(async { Err(Outcome::fail("wrong on purpose")) }),
    },
    Scenario {
        id: "T-PASS-001",
        clause: "test",
        gate: Gate::Always,
        title: "passes",
        run: |_| Box::pin(async { Ok(Outcome::pass("fine")) }),
    },
    Scenario {
        id: "T-GATED-001",
        clause: "test",
        gate: Gate::Advertised(&["workspace.supported"]),
        title: "needs discovery",
        run: |_| Box::pin(async { Ok(Outcome::pass("ran")) }),
    },
];

fn verdict(report: &Report, id: &str) -> (Verdict, String) {
    let s = report.scenarios.iter().find(|s| s.id == id).unwrap();
    (s.verdict, s.reason.clone())
}

async fn odd_run(strict: bool, expected: &str) -> Report {
    let url = support::garbage::closed_port().await;
    let mut config = Config::new(url);
    config.strict = strict;
    config.scenario_timeout = Duration::from_millis(300);
    config.request_timeout = Duration::from_millis(300);
    config.expected_failures = ExpectedFailures::parse(expected).unwrap();
    run_scenarios(&config, ODD_SCENARIOS).await
}

#[tokio::test]
async fn panics_and_hangs_are_contained() {
    let report = odd_run(false, "").await;
    let (v, why) = verdict(&report, "T-PANIC-001");
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("panicked: boom in a scenario"), "{why}");
    let (v, why) = verdict(&report, "T-SLOW-001");
    assert_eq!(v, Verdict::Fail);
    assert!(why.contains("did not finish within 0.3 s"), "{why}");
    assert_eq!(verdict(&report, "T-PASS-001").0, Verdict::Pass);
    let (v, why) = verdict(&report, "T-GATED-001");
    assert_eq!(v, Verdict::Blocked);
    assert!(why.contains("discovery document"), "{why}");
}

#[tokio::test]
async fn strict_fails_what_cannot_be_observed() {
    let relaxed = odd_run(false, "").await;
    assert_eq!(verdict(&relaxed, "T-UNOBS-001").0, Verdict::Inapplicable);
    let strict = odd_run(true, "").await;
    let (v, why) = verdict(&strict, "T-UNOBS-001");
    assert_eq!(v, Verdict::Fail);
    assert!(why.starts_with("strict: "), "{why}");
    assert!(strict.strict);
}

#[tokio::test]
async fn expected_failures_become_xfail() {
    let list = "T-PANIC-001\nT-SLOW-001 known\nT-FAIL-001 on purpose\nT-PASS-001 fixed since\nT-NOPE-001\n";
    let report = odd_run(false, list).await;
    let (v, why) = verdict(&report, "T-FAIL-001");
    assert_eq!(v, Verdict::Xfail);
    assert_eq!(why, "expected failure (on purpose): wrong on purpose");
    assert_eq!(verdict(&report, "T-PASS-001").0, Verdict::Pass);
    assert!(report.success(), "{}", report.summary_text());
    assert_eq!(report.counts.xfail, 3);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("T-PASS-001 is listed")),
        "{:?}",
        report.notes
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("T-NOPE-001 names no scenario")),
        "{:?}",
        report.notes
    );
    assert!(
        report
            .summary_text()
            .contains("3 expected failures (xfail)")
    );
}

#[tokio::test]
async fn without_keys_workspace_scenarios_are_blocked() {
    let host = fake_host::start(Faults::default()).await;
    let mut config = Config::new(host.url.clone());
    let report = wsp_conformance::run(&config).await;
    assert!(report.success(), "{}", report.summary_text());
    // Scenarios gated on the wsp extensions or on agents are inapplicable to the fake host
    // before any key is needed.
    let needs_keys = |s: &&wsp_conformance::ScenarioReport| {
        s.gate.starts_with("workspace.supported")
            && !s.gate.contains("wsp.")
            && !s.gate.contains("agents.")
            && !s.id.starts_with("WS-CAP")
            // Only looks at refusals, so it needs no key.
            && s.id != "WS-AUTH-006"
    };
    for s in report.scenarios.iter().filter(needs_keys) {
        assert_eq!(s.verdict, Verdict::Blocked, "{}: {}", s.id, s.reason);
        assert!(s.reason.starts_with("needs "), "{}: {}", s.id, s.reason);
    }
    assert!(report.counts.passed >= 8, "{}", report.summary_text());

    config.key_a = Some(KEY_A.into());
    config.filters = vec!["WS-WCT".into(), "WS-AUTH-004".into(), "WS-WSR".into()];
    let report = wsp_conformance::run(&config).await;
    assert!(
        report
            .scenarios
            .iter()
            .all(|s| s.verdict == Verdict::Blocked),
        "{}",
        report.summary_text()
    );
    assert!(verdict(&report, "WS-WCT-001").1.contains("owner B"));
    assert!(verdict(&report, "WS-AUTH-004").1.contains("read-only key"));
    assert!(verdict(&report, "WS-WSR-001").1.contains("--secret"));
}

#[tokio::test]
async fn filters_select_by_id_prefix() {
    let host = fake_host::start(Faults::default()).await;
    let mut config = Config::new(host.url.clone());
    config.key_a = Some(KEY_A.into());
    config.filters = vec!["WS-ETAG-00".into(), "WS-DISC-001".into()];
    let report = wsp_conformance::run(&config).await;
    let ids: Vec<&str> = report.scenarios.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), 9, "{ids:?}");
    assert!(
        ids.iter()
            .all(|id| id.starts_with("WS-ETAG-00") || *id == "WS-DISC-001")
    );
    assert!(report.success(), "{}", report.summary_text());

    config.filters = vec!["NOTHING".into()];
    let report = wsp_conformance::run(&config).await;
    assert!(report.scenarios.is_empty());
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("no scenario matches"))
    );
}

fn args(url: &str, dir: &std::path::Path) -> ConformanceArgs {
    ConformanceArgs {
        url: Some(url.into()),
        key_a: Some(KEY_A.into()),
        key_b: Some(KEY_B.into()),
        report_json: Some(dir.join("out/report.json")),
        junit: Some(dir.join("out/junit.xml")),
        filter: vec!["WS-DISC".into(), "WS-PUT-00".into()],
        ..ConformanceArgs::default()
    }
}

#[tokio::test]
async fn the_cli_writes_reports_and_sets_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = fake_host::start(Faults::default()).await;
    assert_eq!(
        run_cli(args(&good.url, dir.path())).await,
        ExitCode::SUCCESS
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    assert_eq!(json["target"], good.url.as_str());
    assert_eq!(json["suite"], "wsp-conformance");
    assert!(json["date"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["counts"]["failed"], 0);
    assert_eq!(json["scenarios"].as_array().unwrap().len(), 19);
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("tests=\"19\" failures=\"0\""), "{junit}");

    let broken = fake_host::start(Faults {
        no_cache_control: true,
        ..Faults::default()
    })
    .await;
    assert_eq!(
        run_cli(args(&broken.url, dir.path())).await,
        ExitCode::FAILURE
    );
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("failures=\"1\""), "{junit}");
    assert!(
        junit.contains("<failure message=\"no Cache-Control header\""),
        "{junit}"
    );

    let xf = dir.path().join("xf");
    std::fs::write(&xf, "WS-DISC-004 this host sends no Cache-Control\n").unwrap();
    let with_list = ConformanceArgs {
        expected_failures: Some(xf),
        ..args(&broken.url, dir.path())
    };
    assert_eq!(run_cli(with_list).await, ExitCode::SUCCESS);

    let bad = ConformanceArgs {
        url: Some("not a url".into()),
        ..ConformanceArgs::default()
    };
    assert_eq!(run_cli(bad).await, ExitCode::from(2));
    let unwritable = ConformanceArgs {
        report_json: Some("/proc/wsp-conformance/report.json".into()),
        ..args(&good.url, dir.path())
    };
    assert_eq!(run_cli(unwritable).await, ExitCode::from(2));
}
