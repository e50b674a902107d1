//! Running the catalogue: discovery first, then each selected scenario behind its gate, with a
//! time limit, panic isolation, `--strict` and expected failures applied; cleanup last.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::catalogue::CATALOGUE;
use crate::config::Config;
use crate::outcome::{Outcome, Verdict};
use crate::report::{Counts, Report, SUITE_NAME, SUITE_VERSION, ScenarioReport};
use crate::scenario::{Ctx, Gate, Role, Scenario, Shared};
use crate::transport::{DISCOVERY, Reply, Transport};

/// Runs every scenario of the catalogue selected by `config` against `config.base_url`.
///
/// Never panics and never returns early: a host that is absent, hangs or answers garbage gets a
/// report whose scenarios fail or are blocked with a reason. Must be called inside a tokio
/// runtime (scenarios run as tasks so that a panicking one is reported, not propagated).
pub async fn run(config: &Config) -> Report {
    run_scenarios(config, CATALOGUE).await
}

/// [`run`] over any list of scenarios (the catalogue, or a test's own list).
pub async fn run_scenarios(config: &Config, scenarios: &'static [Scenario]) -> Report {
    let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let run_id = new_run_id();
    let selected: Vec<&'static Scenario> =
        scenarios.iter().filter(|s| config.selects(s.id)).collect();
    let mut notes = Vec::new();
    if selected.is_empty() {
        notes.push(format!(
            "no scenario matches the filters {:?}",
            config.filters
        ));
    }

    let transport = config
        .validate()
        .map_err(|e| e.to_string())
        .and_then(|url| Transport::new(&url, config.request_timeout, &config.ca_certs));
    let transport = match transport {
        Ok(t) => t,
        Err(why) => {
            notes.push(format!("configuration: {why}"));
            let results = selected
                .iter()
                .map(|s| {
                    result(
                        s,
                        Outcome::blocked(format!("configuration: {why}")),
                        Duration::ZERO,
                    )
                })
                .collect();
            return finish(config, date, run_id, notes, results);
        }
    };

    let discovery = transport.call("GET", DISCOVERY).send().await;
    let discovery_doc = parse_discovery(&discovery);
    let shared = Arc::new(Shared {
        config: config.clone(),
        transport,
        discovery,
        discovery_doc,
        run_id: run_id.clone(),
        strays: Mutex::new(Vec::new()),
    });

    let mut results = Vec::new();
    let mut wrote = false;
    let mut reachable = true;
    let mut deleted = 0;
    for scenario in selected {
        let started = Instant::now();
        let outcome = match gate(&shared, scenario.gate) {
            Err(outcome) => outcome,
            Ok(()) => {
                let ctx = Ctx {
                    shared: Arc::clone(&shared),
                    scenario: scenario.id,
                };
                let prefix = ctx.prefix();
                let outcome = execute(scenario, ctx, config.scenario_timeout).await;
                if scenario.gate != Gate::Always && reachable {
                    // Clean up after each scenario so a host with a small maxFiles keeps room.
                    wrote = true;
                    let swept = sweep(&shared, &prefix, false).await;
                    deleted += swept.deleted;
                    notes.extend(swept.problems);
                    if swept.unreachable {
                        reachable = false;
                        notes
                            .push("cleanup: the host stopped answering; no further cleanup".into());
                    }
                }
                outcome
            }
        };
        let outcome = outcome.under_strict(config.strict);
        results.push(result(scenario, outcome, started.elapsed()));
    }

    if wrote && reachable {
        let prefix = format!("conformance/{run_id}/");
        let swept =
            tokio::time::timeout(config.scenario_timeout, sweep(&shared, &prefix, true)).await;
        match swept {
            Ok(swept) => {
                deleted += swept.deleted;
                notes.extend(swept.problems);
            }
            Err(_) => notes.push("cleanup: the final sweep did not finish in time".into()),
        }
    }
    if wrote {
        notes.push(format!(
            "cleanup: deleted {deleted} files under conformance/{run_id}/"
        ));
    }
    finish(config, date, run_id, notes, results)
}

fn parse_discovery(reply: &Result<Reply, Outcome>) -> Result<Value, Outcome> {
    let reply = reply.as_ref().map_err(|o| {
        let mut o = o.clone();
        o.reason = format!("no discovery document: {}", o.reason);
        o
    })?;
    if reply.status != 200 {
        return Err(reply.fail(format!(
            "GET {DISCOVERY} answered {}, not 200",
            reply.status
        )));
    }
    serde_json::from_slice(&reply.body)
        .map_err(|e| reply.fail(format!("GET {DISCOVERY} did not answer JSON: {e}")))
}

/// `Ok` when the scenario applies; otherwise the inapplicable or blocked outcome.
fn gate(shared: &Shared, gate: Gate) -> Result<(), Outcome> {
    if gate == Gate::Always {
        return Ok(());
    }
    let doc = shared.discovery_doc.as_ref().map_err(|failure| {
        Outcome::blocked(format!(
            "gate {} cannot be evaluated without the discovery document ({})",
            gate.describe(),
            failure.reason
        ))
    })?;
    gate.evaluate(doc).map_err(Outcome::inapplicable)
}

async fn execute(scenario: &'static Scenario, ctx: Ctx, limit: Duration) -> Outcome {
    let task = tokio::spawn(async move {
        let ctx = ctx;
        tokio::time::timeout(limit, (scenario.run)(&ctx)).await
    });
    match task.await {
        Ok(Ok(Ok(outcome) | Err(outcome))) => outcome,
        Ok(Err(_)) => Outcome::fail(format!(
            "the scenario did not finish within {} s",
            limit.as_secs_f64()
        )),
        Err(join) => {
            let why = if join.is_panic() {
                let payload = join.into_panic();
                payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into())
            } else {
                "cancelled".into()
            };
            Outcome::fail(format!("runner defect: the scenario panicked: {why}"))
        }
    }
}

fn result(scenario: &Scenario, outcome: Outcome, elapsed: Duration) -> ScenarioReport {
    ScenarioReport {
        id: scenario.id.into(),
        clause: scenario.clause.into(),
        gate: scenario.gate.describe(),
        title: scenario.title.into(),
        verdict: outcome.verdict,
        reason: outcome.reason,
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        evidence: outcome.evidence,
    }
}

fn finish(
    config: &Config,
    date: String,
    run_id: String,
    mut notes: Vec<String>,
    mut results: Vec<ScenarioReport>,
) -> Report {
    let expected = &config.expected_failures;
    for r in &mut results {
        if let Some(why) = expected.reason(&r.id) {
            match r.verdict {
                Verdict::Fail => {
                    r.verdict = Verdict::Xfail;
                    r.reason = if why.is_empty() {
                        format!("expected failure: {}", r.reason)
                    } else {
                        format!("expected failure ({why}): {}", r.reason)
                    };
                }
                Verdict::Pass => notes.push(format!(
                    "{} is listed as an expected failure but passed: remove it from the list",
                    r.id
                )),
                _ => {}
            }
        }
    }
    for id in expected.ids() {
        if !CATALOGUE.iter().any(|s| s.id == id) && !results.iter().any(|r| r.id == id) {
            notes.push(format!("expected failure {id} names no scenario"));
        }
    }
    Report {
        suite: SUITE_NAME.into(),
        suite_version: SUITE_VERSION.into(),
        date,
        target: config.base_url.clone(),
        strict: config.strict,
        run_id,
        counts: Counts::of(&results),
        notes,
        scenarios: results,
    }
}

/// What a cleanup sweep did.
#[derive(Default)]
struct Sweep {
    deleted: usize,
    problems: Vec<String>,
    /// The host did not answer at all: further sweeps would only wait for timeouts.
    unreachable: bool,
}

/// Deletes every file under `prefix` for owners A and B (and, with `strays`, the paths a
/// faulty host accepted outside the run prefix).
async fn sweep(shared: &Arc<Shared>, prefix: &str, strays: bool) -> Sweep {
    let ctx = Ctx {
        shared: Arc::clone(shared),
        scenario: "cleanup",
    };
    let mut sweep = Sweep::default();
    for (role, caller) in [(Role::A, ctx.as_a()), (Role::B, ctx.as_b())] {
        let Ok(caller) = caller else { continue };
        let mut paths = match caller.list(Some(prefix)).send().await {
            Ok(reply) => listed_paths(&reply.body, prefix),
            Err(o) => {
                sweep.unreachable = true;
                sweep.problems.push(format!(
                    "cleanup: cannot list {prefix} as owner {role:?}: {}",
                    o.reason
                ));
                return sweep;
            }
        };
        if strays && let Ok(strays) = shared.strays.lock() {
            paths.extend(
                strays
                    .iter()
                    .filter(|(r, _)| *r == role)
                    .map(|(_, p)| p.clone()),
            );
        }
        for path in paths {
            match caller.delete(&path).send().await {
                Ok(reply) if reply.status == 204 => sweep.deleted += 1,
                Ok(reply) if reply.status == 404 => {}
                Ok(reply) => sweep
                    .problems
                    .push(format!("cleanup: DELETE {path} answered {}", reply.status)),
                Err(o) => {
                    sweep.unreachable = true;
                    sweep
                        .problems
                        .push(format!("cleanup: DELETE {path}: {}", o.reason));
                    return sweep;
                }
            }
        }
    }
    sweep
}

/// The `files[].path` strings of a list answer under `prefix`, read leniently (cleanup must work
/// even when the list shape is wrong).
fn listed_paths(body: &[u8], prefix: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    value
        .get("files")
        .and_then(Value::as_array)
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f.get("path").and_then(Value::as_str))
                .filter(|p| p.starts_with(prefix))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Eight random hex characters.
fn new_run_id() -> String {
    wsp_types::random_hex(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_paths_are_read_leniently() {
        let body = br#"{"files": [{"path": "conformance/x/a"}, {"path": 3}, {"nope": 1}, {"path": "other/b"}]}"#;
        assert_eq!(listed_paths(body, "conformance/x/"), ["conformance/x/a"]);
        assert!(listed_paths(b"<html>", "conformance/").is_empty());
        assert!(listed_paths(br#"{"files": {}}"#, "").is_empty());
    }

    #[test]
    fn run_ids_are_hex_and_vary() {
        let a = new_run_id();
        let b = new_run_id();
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
