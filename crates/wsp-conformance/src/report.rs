//! The result of a run, and its three renderings: a human summary, JSON and JUnit XML.

use std::fmt::Write as _;

use serde::Serialize;

use crate::exchange::Exchange;
use crate::outcome::Verdict;

/// The name the suite reports under.
pub const SUITE_NAME: &str = "wsp-conformance";

/// The suite version (the crate version): reports from different versions are not comparable.
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Always [`SUITE_NAME`].
    pub suite: String,
    /// [`SUITE_VERSION`].
    pub suite_version: String,
    /// When the run started (RFC 3339, UTC).
    pub date: String,
    /// The base URL tested.
    pub target: String,
    /// Whether `--strict` was on.
    pub strict: bool,
    /// The random id of this run (its files live under `conformance/<run-id>/`).
    pub run_id: String,
    /// Totals per verdict.
    pub counts: Counts,
    /// Remarks about the run as a whole (cleanup, stale expected failures, configuration).
    pub notes: Vec<String>,
    /// One entry per scenario, in catalogue order.
    pub scenarios: Vec<ScenarioReport>,
}

/// The result of one scenario.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioReport {
    /// Stable scenario id.
    pub id: String,
    /// The clause checked.
    pub clause: String,
    /// The gate, as [`crate::Gate::describe`] renders it.
    pub gate: String,
    /// What is checked.
    pub title: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// Wall time spent in the scenario.
    pub duration_ms: u64,
    /// The exchanges that showed a failure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Exchange>,
}

/// How many scenarios ended with each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// [`Verdict::Pass`].
    pub passed: usize,
    /// [`Verdict::Fail`].
    pub failed: usize,
    /// [`Verdict::Xfail`].
    pub xfail: usize,
    /// [`Verdict::Inapplicable`].
    pub inapplicable: usize,
    /// [`Verdict::Blocked`].
    pub blocked: usize,
}

impl Counts {
    /// Counts the verdicts of `scenarios`.
    pub fn of(scenarios: &[ScenarioReport]) -> Self {
        let mut counts = Counts::default();
        for s in scenarios {
            match s.verdict {
                Verdict::Pass => counts.passed += 1,
                Verdict::Fail => counts.failed += 1,
                Verdict::Xfail => counts.xfail += 1,
                Verdict::Inapplicable => counts.inapplicable += 1,
                Verdict::Blocked => counts.blocked += 1,
            }
        }
        counts
    }

    /// All scenarios counted.
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.xfail + self.inapplicable + self.blocked
    }
}

impl Report {
    /// `true` when no scenario failed (expected failures do not count).
    pub fn success(&self) -> bool {
        self.counts.failed == 0
    }

    /// The human summary: one line per scenario (failures followed by their evidence), the
    /// notes, then `N passed, N failed, N inapplicable, N blocked`.
    pub fn summary_text(&self) -> String {
        let mut out = format!(
            "{SUITE_NAME} {} against {} (run {}, strict: {})\n",
            self.suite_version,
            self.target,
            self.run_id,
            if self.strict { "on" } else { "off" }
        );
        for s in &self.scenarios {
            let _ = writeln!(
                out,
                "{:<12} {:<13} {}: {}",
                s.verdict.as_str().to_ascii_uppercase(),
                s.id,
                s.title,
                s.reason
            );
            if matches!(s.verdict, Verdict::Fail | Verdict::Xfail) {
                for exchange in &s.evidence {
                    for line in exchange.brief(300).lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let c = self.counts;
        if c.xfail > 0 {
            let _ = writeln!(out, "{} expected failures (xfail)", c.xfail);
        }
        let _ = writeln!(
            out,
            "{} passed, {} failed, {} inapplicable, {} blocked",
            c.passed, c.failed, c.inapplicable, c.blocked
        );
        out
    }

    /// The JSON report (pretty-printed).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The JUnit XML report: one `testcase` per scenario; failures carry their evidence,
    /// inapplicable, blocked and xfail scenarios are `skipped` with the verdict in the message.
    pub fn to_junit(&self) -> String {
        let c = self.counts;
        let skipped = c.inapplicable + c.blocked + c.xfail;
        let seconds = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
        let total_ms: u64 = self.scenarios.iter().map(|s| s.duration_ms).sum();
        let timestamp = self
            .date
            .trim_end_matches('Z')
            .split('.')
            .next()
            .unwrap_or_default();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"{SUITE_NAME}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\">",
            c.total(),
            c.failed,
            seconds(total_ms)
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{SUITE_NAME}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{skipped}\" timestamp=\"{}\" time=\"{}\">",
            c.total(),
            c.failed,
            xml(timestamp),
            seconds(total_ms)
        );
        out.push_str("    <properties>\n");
        for (name, value) in [
            ("target", self.target.as_str()),
            ("suiteVersion", self.suite_version.as_str()),
            ("runId", self.run_id.as_str()),
            ("strict", if self.strict { "true" } else { "false" }),
        ] {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                xml(value)
            );
        }
        out.push_str("    </properties>\n");
        for s in &self.scenarios {
            let family = s.id.rsplit_once('-').map_or(s.id.as_str(), |(f, _)| f);
            let _ = write!(
                out,
                "    <testcase classname=\"{SUITE_NAME}.{}\" name=\"{} {}\" time=\"{}\"",
                xml(family),
                xml(&s.id),
                xml(&s.title),
                seconds(s.duration_ms)
            );
            match s.verdict {
                Verdict::Pass => out.push_str("/>\n"),
                Verdict::Fail => {
                    let evidence: Vec<String> = s.evidence.iter().map(|e| e.brief(2000)).collect();
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                        xml(&s.reason),
                        xml(&s.clause),
                        xml(&evidence.join("\n\n"))
                    );
                }
                other => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}: {}\"/>\n    </testcase>",
                        other.as_str(),
                        xml(&s.reason)
                    );
                }
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(
                out,
                "    <system-out>{}</system-out>",
                xml(&self.notes.join("\n"))
            );
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// Escapes text for XML attributes and content; characters XML 1.0 forbids become U+FFFD.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push_str(&format!("&#{};", c as u32)),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{RecordedRequest, RecordedResponse};

    fn scenario(id: &str, verdict: Verdict, reason: &str) -> ScenarioReport {
        ScenarioReport {
            id: id.into(),
            clause: "RFC 0059 §C".into(),
            gate: "workspace.supported".into(),
            title: format!("title of {id}"),
            verdict,
            reason: reason.into(),
            duration_ms: 1500,
            evidence: if verdict == Verdict::Fail {
                vec![Exchange {
                    request: RecordedRequest::new(
                        "PUT",
                        "http://h/v1/host/workspace/files/a.md",
                        &[("Authorization".into(), "Bearer secret-key".into())],
                        Some(b"{\"content\":\"<x>\"}"),
                    ),
                    response: Some(RecordedResponse::new(200, &[], b"{\"ok\":true}")),
                    transport_error: None,
                }]
            } else {
                Vec::new()
            },
        }
    }

    fn report() -> Report {
        let scenarios = vec![
            scenario("WS-PUT-001", Verdict::Pass, "created at version 1"),
            scenario("WS-ETAG-001", Verdict::Fail, "expected status 409, got 200"),
            scenario(
                "WS-VER-001",
                Verdict::Inapplicable,
                "the host does not advertise workspace.versioned",
            ),
            scenario("WS-WCT-001", Verdict::Blocked, "needs owner B"),
            scenario("WS-LIM-001", Verdict::Xfail, "known & tracked"),
        ];
        Report {
            suite: SUITE_NAME.into(),
            suite_version: SUITE_VERSION.into(),
            date: "2026-11-22T10:00:00.123Z".into(),
            target: "http://h".into(),
            strict: false,
            run_id: "abcd".into(),
            counts: Counts::of(&scenarios),
            notes: vec!["cleanup: deleted 3 files".into()],
            scenarios,
        }
    }

    #[test]
    fn counts_and_success() {
        let r = report();
        assert_eq!(
            r.counts,
            Counts {
                passed: 1,
                failed: 1,
                xfail: 1,
                inapplicable: 1,
                blocked: 1
            }
        );
        assert_eq!(r.counts.total(), 5);
        assert!(!r.success());
    }

    #[test]
    fn summary_has_one_line_per_scenario_evidence_and_totals() {
        let text = report().summary_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("wsp-conformance "));
        assert_eq!(
            lines[1],
            "PASS         WS-PUT-001    title of WS-PUT-001: created at version 1"
        );
        assert!(lines[2].starts_with("FAIL         WS-ETAG-001"));
        assert_eq!(lines[3], "    PUT http://h/v1/host/workspace/files/a.md");
        assert!(text.contains("INAPPLICABLE WS-VER-001"));
        assert!(text.contains("BLOCKED      WS-WCT-001"));
        assert!(text.contains("XFAIL        WS-LIM-001"));
        assert!(!text.contains("secret-key"));
        assert_eq!(
            lines[lines.len() - 1],
            "1 passed, 1 failed, 1 inapplicable, 1 blocked"
        );
        assert!(text.contains("note: cleanup: deleted 3 files"));
        assert!(text.contains("1 expected failures (xfail)"));
    }

    #[test]
    fn json_carries_suite_target_verdicts_and_evidence() {
        let json: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(json["suite"], "wsp-conformance");
        assert_eq!(json["suiteVersion"], SUITE_VERSION);
        assert_eq!(json["target"], "http://h");
        assert_eq!(json["counts"]["failed"], 1);
        assert_eq!(json["scenarios"][1]["verdict"], "fail");
        assert_eq!(json["scenarios"][1]["durationMs"], 1500);
        let evidence = &json["scenarios"][1]["evidence"][0];
        assert_eq!(evidence["request"]["headers"][0][1], "Bearer [redacted]");
        assert_eq!(evidence["response"]["status"], 200);
        assert!(json["scenarios"][0].get("evidence").is_none());
        assert!(!report().to_json().contains("secret-key"));
    }

    #[test]
    fn junit_is_escaped_and_counts_match() {
        let xml_text = report().to_junit();
        assert!(xml_text.contains("tests=\"5\" failures=\"1\" errors=\"0\" skipped=\"3\""));
        assert!(xml_text.contains("timestamp=\"2026-11-22T10:00:00\""));
        assert!(xml_text.contains("classname=\"wsp-conformance.WS-ETAG\" name=\"WS-ETAG-001 title of WS-ETAG-001\" time=\"1.500\""));
        assert!(
            xml_text.contains(
                "<failure message=\"expected status 409, got 200\" type=\"RFC 0059 §C\">"
            )
        );
        assert!(xml_text.contains("&lt;x&gt;"));
        assert!(xml_text.contains("<skipped message=\"xfail: known &amp; tracked\"/>"));
        assert!(xml_text.contains("<skipped message=\"blocked: needs owner B\"/>"));
        assert_eq!(xml_text.matches("<testcase ").count(), 5);
        assert_eq!(xml_text.matches("</testcase>").count(), 4);
        assert!(!xml_text.contains("secret-key"));
    }

    #[test]
    fn xml_escaping() {
        assert_eq!(
            xml("a<b>&\"c'\n\u{1}"),
            "a&lt;b&gt;&amp;&quot;c&apos;&#10;\u{FFFD}"
        );
    }
}
