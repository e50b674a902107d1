//! Black-box conformance scenarios for hosts of the OpenWOP `host.workspace` wire (RFC 0059)
//! as decided in wsp's WIRE.md: discovery, the workspace file endpoints, errors, auth, WCT-1
//! isolation, idempotency and atomicity.
//!
//! **Invariant:** black box. This crate talks only HTTP to a base URL; it never links the server
//! (or store) it tests, so it judges any host, ours or anyone's, by the same bytes.
//!
//! Each [`Scenario`] of the [`CATALOGUE`] has a stable id (`WS-ETAG-001`), the clause it checks,
//! and a [`Gate`]: the discovery fields that must be advertised for it to apply. A run ends every
//! scenario with a [`Verdict`] and a reason; failures keep the request and response that showed
//! them (credential redacted). [`Report`] renders a human summary, JSON and JUnit XML.
//!
//! ```no_run
//! # async fn demo() {
//! let mut config = wsp_conformance::Config::new("http://127.0.0.1:8080");
//! config.key_a = Some("key-of-owner-a".into());
//! config.key_b = Some("key-of-owner-b".into());
//! let report = wsp_conformance::run(&config).await;
//! print!("{}", report.summary_text());
//! assert!(report.success());
//! # }
//! ```
//!
//! The `wsp conformance` subcommand mounts [`ConformanceArgs`] and calls [`run_cli`].

mod catalogue;
mod cli;
mod config;
mod exchange;
mod expect;
mod expected;
mod outcome;
mod raw;
mod report;
mod runner;
mod scenario;
mod scenarios;
mod transport;

pub use catalogue::CATALOGUE;
pub use cli::{ArgsError, ConformanceArgs, catalogue_text, run_cli, write_reports};
pub use config::{Config, ConfigError, KnownSecret};
pub use exchange::{EVIDENCE_BODY_LIMIT, Exchange, REDACTED, RecordedRequest, RecordedResponse};
pub use expected::{ExpectedFailures, ExpectedFailuresError};
pub use outcome::{Outcome, Verdict};
pub use report::{Counts, Report, SUITE_NAME, SUITE_VERSION, ScenarioReport};
pub use runner::{run, run_scenarios};
pub use scenario::{Ctx, Gate, Scenario, ScenarioFn, ScenarioResult};
